"""synthcity plugin ``dpswflow_r``: DPSWflow-r (fresh directions and a fresh private batch per release)."""

from __future__ import annotations

import dataclasses
from typing import Any, List, Mapping

from synthcity.plugins.core.distribution import CategoricalDistribution, Distribution, FloatDistribution, IntegerDistribution

from synthcity_dpswf.models import DPSWFlowR
from synthcity_dpswf.plugins.base import SlicedFlowPlugin
from synthcity_dpswf.plugins.options import BatchOptions
from synthcity_dpswf.privacy import Adjacency


class DPSWFlowRPlugin(SlicedFlowPlugin):
    """DPSWflow-r as a synthcity plugin.

    Args:
        batch_size, sample_rate, passes: the per-step releases' batches (``options.BatchOptions``): b records each
            under replace-one (``None``: ``models.state.default_batch_size(n)``), Poisson samples at rate q under
            add/remove (``None``: 0.1), K = ceil(passes * n / b) releases (ceil(passes / q) under add/remove).
        **kwargs: the ``SlicedFlowPlugin`` arguments (epsilon, delta, domain, flow settings, ...).

    Example:
        >>> import synthcity_dpswf
        >>> from synthcity.plugins import Plugins
        >>> plugin = Plugins().get("dpswflow_r", epsilon=3.0)
        >>> plugin.fit(dataframe)
        >>> plugin.generate(100).dataframe()
    """

    generator_class = DPSWFlowR
    small_batches = True

    def __init__(
        self, batch_size: int | None = None, sample_rate: float | None = None, passes: float = 10.0, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self.batch_options = BatchOptions(batch_size, sample_rate, passes, neighbouring=self.neighbouring)

    @staticmethod
    def name() -> str:
        return "dpswflow_r"

    @staticmethod
    def hyperparameter_space(**kwargs: Any) -> List[Distribution]:
        return [
            CategoricalDistribution(name="batch_size", choices=[100, 250, 1000, 3000]),
            CategoricalDistribution(name="passes", choices=[1.0, 2.0, 5.0, 10.0, 35.0]),
            IntegerDistribution(name="n_steps", low=200, high=2000, step=200),
            FloatDistribution(name="step_size", low=0.1, high=3.0),
            CategoricalDistribution(name="n_bins", choices=[16, 32, 64]),
            CategoricalDistribution(name="n_directions", choices=[30, 70, 150]),
            CategoricalDistribution(name="flow_batch_size", choices=[1000, 2000, 4000]),
        ]

    def check_adjacency(self, neighbouring: Adjacency) -> None:
        super().check_adjacency(neighbouring)
        dataclasses.replace(self.batch_options, neighbouring=neighbouring)  # a batch size or a Poisson rate, not both

    def generator_arguments(self, release: str, flow_defaults: Mapping[str, int]) -> dict[str, Any]:
        return {**super().generator_arguments(release, flow_defaults), **dataclasses.asdict(self.batch_options)}


plugin = DPSWFlowRPlugin

"""synthcity plugin ``dpswflow_r``: DPSWflow-r (fresh directions and a fresh private batch per release)."""

from __future__ import annotations

import dataclasses
from typing import Any, List, Mapping

from synthcity.plugins.core.distribution import CategoricalDistribution, Distribution, FloatDistribution, IntegerDistribution

from synthcity_dpswf.models import DPSWFlowR
from synthcity_dpswf.plugins.base import SlicedFlowPlugin
from synthcity_dpswf.plugins.options import BatchOptions
from synthcity_dpswf.privacy import MECHANISMS, Adjacency


class DPSWFlowRPlugin(SlicedFlowPlugin):
    """DPSWflow-r as a synthcity plugin.

    Args:
        batch_size, sample_rate, passes: the per-step releases' batches (``options.BatchOptions``): Poisson samples
            at rate q (under replace-one ``None`` is ``models.state.default_batch_size(n) / n`` for histograms and
            marginals, privacy.md, "Poisson batches under replace-one"; under add/remove 0.1), or, with
            ``batch_size``, b records each (replace-one only); K = ceil(passes * n / b) releases (ceil(passes / q) for
            a given q).
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
        release = self.flow_options.release
        if sample_rate is not None and self.neighbouring.n_is_public and release is not None \
                and MECHANISMS[release].replace_one_contribution_norm is None:
            raise ValueError(f"Poisson batches under replace-one are proven for sums whose every record contributes one "
                             f"norm ('projected_histogram', 'marginal'), not for release={release!r}: give batch_size.")

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

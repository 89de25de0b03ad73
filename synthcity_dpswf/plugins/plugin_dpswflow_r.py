"""synthcity plugin ``dpswflow_r``: DPSWflow-r (fresh directions and a fresh private batch per release)."""

from __future__ import annotations

from typing import Any, List, Mapping

from synthcity.plugins.core.distribution import CategoricalDistribution, Distribution, FloatDistribution, IntegerDistribution

from synthcity_dpswf.models import DPSWFlowR, ReleaseSchedule
from synthcity_dpswf.plugins.base import SlicedFlowPlugin


class DPSWFlowRPlugin(SlicedFlowPlugin):
    """DPSWflow-r as a synthcity plugin.

    Args:
        batch_size: b, records per release (uniform subsets of exactly b, independent across releases);
            ``None`` (default): ``models.schedule.default_batch_size(n)``; a given b is capped at n / 2 on
            small tables (the report states the b used).
        sample_rate: q, the Poisson rate of each release under ``neighbouring="add_remove"`` (``None``: 0.1,
            ``models.schedule.DEFAULT_SAMPLE_RATE``); replace-one takes ``batch_size`` instead.
        passes: K = ceil(passes * n / b) releases (ceil(passes / q) under add/remove); the default 10 with the default b (n / 10 from 10,000 rows,
            all rows below 1,000: ``models.schedule.default_batch_size``) makes K = 100 on large data (the
            per-step histogram form run on MNIST, docs/flows.md; 35 passes at b = 250 is the paper's preset)
            and K = 10 on small tables.
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
        ReleaseSchedule(True, batch_size, sample_rate, passes)  # checks batch_size, sample_rate and passes
        super().__init__(**kwargs)
        if batch_size is not None and not self.neighbouring.n_is_public:
            raise ValueError("under add/remove batches are Poisson samples: give sample_rate, not batch_size.")
        if sample_rate is not None and self.neighbouring.n_is_public:
            raise ValueError("sample_rate is the Poisson rate of add/remove releases; under replace-one give batch_size "
                             "(or pass neighbouring='add_remove').")
        self.batch_size = batch_size
        self.sample_rate = sample_rate
        self.passes = passes

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

    def generator_arguments(self, release: str, flow_defaults: Mapping[str, int]) -> dict[str, Any]:
        return {
            **super().generator_arguments(release, flow_defaults), "batch_size": self.batch_size,
            "sample_rate": self.sample_rate, "passes": self.passes,
        }


plugin = DPSWFlowRPlugin

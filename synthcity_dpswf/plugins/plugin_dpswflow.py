"""synthcity plugin ``dpswflow``: DPSWflow (one private release of all records, then a free flow)."""

from __future__ import annotations

from typing import Any, List

from synthcity.plugins.core.distribution import CategoricalDistribution, Distribution, FloatDistribution, IntegerDistribution

from synthcity_dpswf.models import DPSWFlow
from synthcity_dpswf.plugins.base import SlicedFlowPlugin


class DPSWFlowPlugin(SlicedFlowPlugin):
    """DPSWflow as a synthcity plugin: a single Gaussian release of all encoded records (by default the
    histograms of their projections on 500 directions), accounted by the exact analytic Gaussian mechanism;
    generation is post-processing.

    Args:
        **kwargs: the ``SlicedFlowPlugin`` arguments (epsilon, delta, domain, flow settings, ...).
    """

    generator_class = DPSWFlow

    @staticmethod
    def name() -> str:
        return "dpswflow"

    @staticmethod
    def hyperparameter_space(**kwargs: Any) -> List[Distribution]:
        return [
            IntegerDistribution(name="n_steps", low=200, high=2000, step=200),
            FloatDistribution(name="step_size", low=0.1, high=3.0),
            CategoricalDistribution(name="n_bins", choices=[16, 32, 64]),
            CategoricalDistribution(name="n_directions", choices=[30, 70, 150]),
            CategoricalDistribution(name="flow_batch_size", choices=[1000, 2000, 4000]),
        ]


plugin = DPSWFlowPlugin

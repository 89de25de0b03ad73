"""synthcity plugin ``dpswflow``: DPSWflow on tables (one private release of all records, then a free flow)."""

from __future__ import annotations

from typing import Any, List

from synthcity.plugins.core.distribution import Distribution

from synthcity_dpswf.models import DPSWFlow
from synthcity_dpswf.plugins.base import flow_space
from synthcity_dpswf.plugins.table_plugin import TablePlugin


class DPSWFlowPlugin(TablePlugin):
    """DPSWflow as a synthcity plugin on tables: a single Gaussian release of all encoded records (by default the noisy one- and two-way tables of the level-coded rows),
    accounted by the exact analytic Gaussian mechanism; generation is post-processing.

    Args:
        **kwargs: the ``TablePlugin`` arguments (epsilon, delta, domain, flow settings, ...).
    """

    generator_class = DPSWFlow

    @staticmethod
    def name() -> str:
        return "dpswflow"

    @staticmethod
    def hyperparameter_space(**kwargs: Any) -> List[Distribution]:
        return flow_space()


plugin = DPSWFlowPlugin

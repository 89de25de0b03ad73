"""synthcity plugin ``dpswflow_r``: DPSWflow-r on tables (fresh directions and a fresh private batch per release)."""

from __future__ import annotations

from typing import Any, List

from synthcity.plugins.core.distribution import Distribution

from synthcity_dpswf.models import DPSWFlowR
from synthcity_dpswf.plugins.base import flow_space
from synthcity_dpswf.plugins.per_step import PerStepReleases, batch_space
from synthcity_dpswf.plugins.table_plugin import TablePlugin


class DPSWFlowRPlugin(PerStepReleases, TablePlugin):
    """DPSWflow-r as a synthcity plugin on tables: fresh directions and a fresh private batch per release.

    Args:
        **kwargs: the ``PerStepReleases`` arguments (batches) and the ``TablePlugin`` ones (epsilon, delta, domain,
            flow settings, ...).
    """

    generator_class = DPSWFlowR

    @staticmethod
    def name() -> str:
        return "dpswflow_r"

    @staticmethod
    def hyperparameter_space(**kwargs: Any) -> List[Distribution]:
        return batch_space() + flow_space()


plugin = DPSWFlowRPlugin

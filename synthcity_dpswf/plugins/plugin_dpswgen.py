"""synthcity plugin ``dpswgen``: DPSWgen on tables (a generator network trained on the private sliced loss)."""

from __future__ import annotations

from typing import Any, List

from synthcity.plugins.core.distribution import Distribution

from synthcity_dpswf.models import DPSWGen
from synthcity_dpswf.plugins.base import flow_space
from synthcity_dpswf.plugins.per_step import NetworkTraining, batch_space, network_space
from synthcity_dpswf.plugins.table_plugin import TablePlugin


class DPSWGenPlugin(NetworkTraining, TablePlugin):
    """DPSWgen as a synthcity plugin on tables: the releases of DPSWflow-r, then the paper's generator network
    trained with Adam on them (``n_steps`` training steps). The paper's baseline, kept for comparison: ``dpswflow`` is
    the one to pick (docs/guide.md, "Which plugin").

    Args:
        **kwargs: the ``NetworkTraining`` arguments (the network, the batches) and the ``TablePlugin`` ones (epsilon,
            delta, domain, flow settings, ...).
    """

    generator_class = DPSWGen

    @staticmethod
    def name() -> str:
        return "dpswgen"

    @staticmethod
    def hyperparameter_space(**kwargs: Any) -> List[Distribution]:
        return batch_space() + flow_space() + network_space()


plugin = DPSWGenPlugin

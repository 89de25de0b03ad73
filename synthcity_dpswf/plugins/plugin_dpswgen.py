"""synthcity plugin ``dpswgen``: DPSWgen (a generator network trained on the private sliced loss)."""

from __future__ import annotations

import dataclasses
from typing import Any, List, Mapping

from synthcity.plugins.core.distribution import CategoricalDistribution, Distribution, FloatDistribution

from synthcity_dpswf.models import DPSWGen
from synthcity_dpswf.plugins.options import NetworkOptions
from synthcity_dpswf.plugins.plugin_dpswflow_r import DPSWFlowRPlugin


class DPSWGenPlugin(DPSWFlowRPlugin):
    """DPSWgen as a synthcity plugin: the releases of DPSWflow-r, then the paper's generator network trained
    with Adam on them (``n_steps`` training steps). The paper's baseline, kept for comparison: the weakest of the
    three plugins, on tables by far; ``dpswflow`` is the one to pick for data (docs/guide.md, "Which plugin").

    Args:
        noise_dim, generator_batch, learning_rate: the network (``options.NetworkOptions``): its Gaussian input's
            size, generated records per training step, Adam's learning rate.
        **kwargs: the ``DPSWFlowRPlugin`` arguments.
    """

    generator_class = DPSWGen

    def __init__(self, noise_dim: int = 16, generator_batch: int = 500, learning_rate: float = 3e-4, **kwargs: Any) -> None:
        network = NetworkOptions(noise_dim, generator_batch, learning_rate)
        super().__init__(**kwargs)
        self.network_options = network

    @staticmethod
    def name() -> str:
        return "dpswgen"

    @staticmethod
    def hyperparameter_space(**kwargs: Any) -> List[Distribution]:
        return DPSWFlowRPlugin.hyperparameter_space() + [
            CategoricalDistribution(name="noise_dim", choices=[8, 16, 32]),
            FloatDistribution(name="learning_rate", low=1e-4, high=1e-3),
        ]

    def generator_arguments(self, release: str, flow_defaults: Mapping[str, int]) -> dict[str, Any]:
        return {**super().generator_arguments(release, flow_defaults), **dataclasses.asdict(self.network_options)}


plugin = DPSWGenPlugin

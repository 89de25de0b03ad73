"""synthcity plugin ``image_dpswgen``: DPSWgen on images (a generator network trained on the private sliced loss)."""

from __future__ import annotations

from typing import Any, List

from synthcity.plugins.core.distribution import Distribution

from synthcity_dpswf.models import DPSWGen
from synthcity_dpswf.plugins.base import flow_space
from synthcity_dpswf.plugins.per_step import NetworkTraining, batch_space, network_space
from synthcity_dpswf.plugins.image_plugin import ImagePlugin


class ImageDPSWGenPlugin(NetworkTraining, ImagePlugin):
    """DPSWgen as a synthcity plugin on images: the releases of DPSWflow-r, then the paper's generator network
    trained with Adam on them (``n_steps`` training steps). The paper's baseline, kept for comparison: ``image_dpswflow`` is
    the one to pick (docs/guide.md, "Which plugin").

    Args:
        **kwargs: the ``NetworkTraining`` arguments (the network, the batches) and the ``ImagePlugin`` ones (epsilon,
            delta, image_codec, flow settings, ...).
    """

    generator_class = DPSWGen

    @staticmethod
    def name() -> str:
        return "image_dpswgen"

    @staticmethod
    def hyperparameter_space(**kwargs: Any) -> List[Distribution]:
        return batch_space() + flow_space() + network_space()


plugin = ImageDPSWGenPlugin

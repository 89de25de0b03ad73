"""synthcity plugin ``image_dpswflow_r``: DPSWflow-r on images (fresh directions and a fresh private batch per release)."""

from __future__ import annotations

from typing import Any, List

from synthcity.plugins.core.distribution import Distribution

from synthcity_dpswf.models import DPSWFlowR
from synthcity_dpswf.plugins.base import flow_space
from synthcity_dpswf.plugins.per_step import PerStepReleases, batch_space
from synthcity_dpswf.plugins.image_plugin import ImagePlugin


class ImageDPSWFlowRPlugin(PerStepReleases, ImagePlugin):
    """DPSWflow-r as a synthcity plugin on images: fresh directions and a fresh private batch per release.

    Args:
        **kwargs: the ``PerStepReleases`` arguments (batches) and the ``ImagePlugin`` ones (epsilon, delta, image_codec,
            flow settings, ...).
    """

    generator_class = DPSWFlowR

    @staticmethod
    def name() -> str:
        return "image_dpswflow_r"

    @staticmethod
    def hyperparameter_space(**kwargs: Any) -> List[Distribution]:
        return batch_space() + flow_space()


plugin = ImageDPSWFlowRPlugin

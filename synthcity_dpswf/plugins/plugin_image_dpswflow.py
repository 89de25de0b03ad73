"""synthcity plugin ``image_dpswflow``: DPSWflow on images (one private release of all records, then a free flow)."""

from __future__ import annotations

from typing import Any, List

from synthcity.plugins.core.distribution import Distribution

from synthcity_dpswf.models import DPSWFlow
from synthcity_dpswf.plugins.base import flow_space
from synthcity_dpswf.plugins.image_plugin import ImagePlugin


class ImageDPSWFlowPlugin(ImagePlugin):
    """DPSWflow as a synthcity plugin on images: a single Gaussian release of all encoded records (by default the class-conditional histograms of their projections on
    the codec's measured directions),
    accounted by the exact analytic Gaussian mechanism; generation is post-processing.

    Args:
        **kwargs: the ``ImagePlugin`` arguments (epsilon, delta, image_codec, flow settings, ...).
    """

    generator_class = DPSWFlow

    @staticmethod
    def name() -> str:
        return "image_dpswflow"

    @staticmethod
    def hyperparameter_space(**kwargs: Any) -> List[Distribution]:
        return flow_space()


plugin = ImageDPSWFlowPlugin

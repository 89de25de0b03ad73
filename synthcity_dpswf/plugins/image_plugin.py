"""The image plugins' base: ``image_dpswflow``, ``image_dpswflow_r`` and ``image_dpswgen`` fit a synthcity
``ImageDataLoader`` through ``plugins.image_path.ImagePath``, listed by ``Plugins(categories=["images"])`` as
synthcity's own image generators are."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Mapping

from synthcity_dpswf.adapters.image_latent import AutoencoderCodec
from synthcity_dpswf.plugins.base import SlicedFlowPlugin
from synthcity_dpswf.plugins.image_path import ImagePath
from synthcity_dpswf.plugins.options import DEFAULT_IMAGE_CODEC, TABLE_ARGUMENTS, ImageOptions
from synthcity_dpswf.plugins.paths import DataPath, FitInputs
from synthcity_dpswf.privacy import Adjacency


class ImagePlugin(SlicedFlowPlugin):
    """A plugin on labelled images (an ``ImageDataLoader``; one channel for the linear codecs), every image passed to
    ``fit`` private.

    Args:
        image_codec, codec_options: the codec between images and records and its own settings
            (``options.ImageOptions``): by default ``"private-pca"``, learned from the private images and paid from
            the budget; ``"public-autoencoder"`` with ``codec_options={"images": <public images>}``; an
            ``AutoencoderCodec`` trained on public images or its checkpoint's path.
        n_classes, labelling, feature_weight: the labels (integers in 0..n_classes - 1) and how they are generated.
        **kwargs: the ``SlicedFlowPlugin`` arguments (epsilon, delta, neighbouring, the release and the flow,
            synthcity's).

    Fitting shows progress bars (the codec's training, the flow) where the output is a terminal; ``generate(count,
    cond=labels)`` generates one image of each given label.
    """

    modality = "images"
    foreign = {name: "it is an argument of the table plugins (dpswflow, dpswflow_r, dpswgen)" for name in TABLE_ARGUMENTS}
    cond_hint = "fit on the labelled images; generate(count, cond=labels) then draws one image of each given label."

    def __init__(
        self,
        image_codec: str | AutoencoderCodec | Path = DEFAULT_IMAGE_CODEC,
        codec_options: Mapping[str, Any] | None = None,
        n_classes: int = 10,
        labelling: str = "conditional",
        feature_weight: float = 0.7,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.image_options = ImageOptions(image_codec, codec_options, n_classes, labelling, feature_weight,
                                          self.random_state, self.neighbouring)

    def check_adjacency(self, neighbouring: Adjacency) -> None:
        super().check_adjacency(neighbouring)
        dataclasses.replace(self.image_options, neighbouring=neighbouring)  # the codec's options under it

    @staticmethod
    def type() -> str:
        return "images"

    def data_path(self) -> DataPath:
        return ImagePath()

    def fit_inputs(self) -> FitInputs:
        image = dataclasses.replace(self.image_options, neighbouring=self.neighbouring)  # as the budget's, if set later
        return dataclasses.replace(super().fit_inputs(), image=image)

    def codec_name(self) -> str | None:
        return self.image_options.registry_name

    def fit_data(self, X: Any) -> None:
        """Fit on an ``ImageDataLoader`` of labelled images, then flow the reservoir small generations draw from
        (``ImagePath.fill``: post-processing of the releases, kept with the model)."""
        self._fit_in_memory(X, named_target=False)
        assert isinstance(self.path_, ImagePath) and self.generator_ is not None
        self.path_.fill(self.generator_, seed=self.random_state)

    def generator_arguments(self, release: str, flow_defaults: Mapping[str, int]) -> dict[str, Any]:
        image = self.image_options
        return {**super().generator_arguments(release, flow_defaults), "labelling": image.labelling,
                "feature_weight": image.feature_weight, "progress": True}

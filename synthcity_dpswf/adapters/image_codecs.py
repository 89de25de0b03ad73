"""Image codecs for the image pipeline: one-channel ``(n, 1, H, W)`` images in [0, 1] <-> unit-sphere records.

``ImageCodec`` is what the pipeline (``experiments.images``) needs of a codec; ``ImageLatentAdapter`` (an
autoencoder trained on public images) satisfies it, and so do the two linear codecs here that need no public image:
``FixedDCTCodec`` (trained on nothing) and ``PrivatePCAImageCodec`` (learned from the private images and paid for;
privacy.md, "A private image codec").
"""

from __future__ import annotations

from typing import Protocol

import torch

from synthcity_dpswf.adapters.dct import DCTImageCodec
from synthcity_dpswf.adapters.image_latent import check_images
from synthcity_dpswf.adapters.private_pca import PrivatePCACodec
from synthcity_dpswf.privacy import PrivacyPart, secret_generator
from synthcity_dpswf.privacy.neighbouring import Neighbouring


class ImageCodec(Protocol):
    """``(n, C, H, W)`` images in [0, 1] <-> unit-sphere records, with the public data it assumes in words."""

    public_description: str
    training_seconds: float

    def encode(self, images: torch.Tensor) -> torch.Tensor:
        """Unit-norm records ``(n, d)`` of the images, on CPU."""

    def decode(self, latents: torch.Tensor) -> torch.Tensor:
        """Images in [0, 1] from records (generated ones need not be unit-norm), on CPU."""


def check_one_channel(images: torch.Tensor, codec: str) -> None:
    """Raise ``ValueError`` unless ``images`` are ``(n, 1, H, W)`` in [0, 1]: the linear codecs work per pixel."""
    check_images(images)
    if images.shape[1] != 1:
        raise ValueError(f"the {codec} codec takes one-channel images (n, 1, H, W), got {images.shape[1]} channels.")


class FixedDCTCodec:
    """A ``DCTImageCodec`` (or a replacement of the same interface) on one-channel ``(n, 1, H, W)`` images.

    A fixed map that uses no statistic of any image, so a run through it needs no public data; decoding puts each
    image on [0, 1] (``adapters.pixel_range``), post-processing of the generated records.
    """

    training_seconds = 0.0

    def __init__(self, codec: DCTImageCodec, n_frequencies: int) -> None:
        self.codec = codec
        self.public_description = (
            f"the {codec.dim} lowest 2-D DCT frequencies (u + v < {n_frequencies}, mean dropped) of each image, "
            "on the unit sphere; trained on no image"
        )

    def encode(self, images: torch.Tensor) -> torch.Tensor:
        """Unit-norm DCT features ``(n, dim)`` (a constant image: the fixed record e_1)."""
        check_one_channel(images, "DCT")
        return self.codec.encode(images[:, 0])

    def decode(self, latents: torch.Tensor) -> torch.Tensor:
        """Images ``(n, 1, H, W)`` in [0, 1] from features (inverse DCT, then ``adapters.pixel_range``)."""
        return self.codec.decode(latents.cpu()).unsqueeze(1)


class PrivatePCAImageCodec:
    """``PrivatePCACodec`` fitted on the private one-channel ``(n, 1, H, W)`` images at ``(epsilon, delta)``: a
    release, listed in the run's report as ``privacy_part`` (noise multiplier ``noise_multiplier``), then a fixed
    map like the DCT codec."""

    training_seconds = 0.0

    def __init__(self, images: torch.Tensor, n_components: int, epsilon: float, delta: float,
                 neighbouring: Neighbouring) -> None:
        check_one_channel(images, "private PCA")
        self.codec = PrivatePCACodec.fit(images[:, 0], n_components, epsilon, delta, secret_generator(), neighbouring)
        release = self.codec.release
        if release is None:
            raise RuntimeError("PrivatePCACodec.fit returned a codec without its release; it must keep it.")
        self.noise_multiplier = release.noise_multiplier
        self.public_description = (
            f"the top {n_components} eigenvectors of the private images' second moment, released at epsilon = "
            f"{epsilon:.4g}, delta = {delta:.3g}; no public image"
        )
        self.privacy_part = PrivacyPart(
            "private codec", epsilon, delta,
            f"Gaussian second moment of the unit-norm private images (z = {release.noise_multiplier:.3g}, "
            f"Delta = {release.sensitivity:.3g}; privacy.md, \"A private image codec\")",
            release.other_adjacency(),
        )

    def encode(self, images: torch.Tensor) -> torch.Tensor:
        """Unit-norm codes ``(n, K)`` of one-channel images."""
        check_one_channel(images, "private PCA")
        return self.codec.encode(images[:, 0])

    def decode(self, latents: torch.Tensor) -> torch.Tensor:
        """Images ``(n, 1, H, W)`` in [0, 1] from codes (back-projection, then ``adapters.pixel_range``)."""
        return self.codec.decode(latents.cpu()).unsqueeze(1)

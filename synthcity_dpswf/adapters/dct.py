r"""A fixed, data-independent compression of small images: their lowest 2-D DCT frequencies, on the sphere.

For an image :math:`x \in \mathbb{R}^{h \times w}` with orthonormal 2-D DCT-II coefficients
:math:`c_{uv}`, keep the frequencies with :math:`u + v < K` (without the constant term :math:`c_{00}`, the
mean intensity, which would spend the record's norm on what every image shares) and normalise:
:math:`f = c_{\text{kept}} / \|c_{\text{kept}}\|`. Decoding inverts the DCT with the dropped frequencies at
zero and maps each image back to the pixel range (``adapters.pixel_range``; post-processing of generated records).
"""

from __future__ import annotations

import math

import torch

from synthcity_dpswf.adapters.pixel_range import DEFAULT_PIXEL_SCALING, PixelScaling, check_pixel_scaling, to_pixel_range
from synthcity_dpswf.math.checks import check_positive_int


def dct_matrix(size: int, dtype: torch.dtype = torch.float64) -> torch.Tensor:
    r"""Orthonormal DCT-II matrix :math:`D_{ki} = s_k \cos(\pi (2i + 1) k / 2N)`, :math:`s_0 = \sqrt{1/N}`,
    :math:`s_k = \sqrt{2/N}`; :math:`D D^\top = I`."""
    k = torch.arange(size, dtype=dtype).unsqueeze(1)
    i = torch.arange(size, dtype=dtype).unsqueeze(0)
    matrix = torch.cos(math.pi * (2 * i + 1) * k / (2 * size)) * math.sqrt(2 / size)
    matrix[0] /= math.sqrt(2)
    return matrix


class DCTTransform:
    """Images ``(n, h, w)`` <-> unit-norm low-frequency DCT features: the transform of the ``"dct"`` codec
    (``adapters.image_codecs.FixedDCTCodec``, which applies it to one-channel images; an extension replaces that
    codec by registering an image codec entry under ``"dct"``: ``extensions``).

    Args:
        height, width: image size.
        n_frequencies: K, keep frequencies with u + v < K.
        max_value: the public pixel range [0, max_value] used when decoding.
        pixel_scaling: how a decoded array is put back on that range (``adapters.pixel_range``).
    """

    def __init__(self, height: int, width: int, n_frequencies: int, max_value: float = 1.0,
                 pixel_scaling: PixelScaling = DEFAULT_PIXEL_SCALING) -> None:
        for name, value in (("height", height), ("width", width), ("n_frequencies", n_frequencies)):
            check_positive_int(name, value)
        check_pixel_scaling(pixel_scaling)
        self.height, self.width, self.max_value = height, width, float(max_value)
        self.pixel_scaling: PixelScaling = pixel_scaling
        self.rows, self.columns = dct_matrix(height), dct_matrix(width)
        keep = torch.add(*torch.meshgrid(torch.arange(height), torch.arange(width), indexing="ij")) < n_frequencies
        keep[0, 0] = False
        if not bool(keep.any()):
            raise ValueError("n_frequencies keeps no frequency besides the mean; use n_frequencies >= 2.")
        self.keep = keep

    @property
    def dim(self) -> int:
        """Number of features per image."""
        return int(self.keep.sum())

    def encode(self, images: torch.Tensor) -> torch.Tensor:
        """Unit-norm features ``(n, dim)`` of ``images`` ``(n, h, w)``.

        A constant image has no kept frequency, so no direction: it is encoded as the fixed public record
        :math:`e_1` (its first feature), one image at a time, so that no image makes the whole encoding fail
        (a condition one private record could change; docs/privacy.md, "The domain of valid datasets").
        """
        if images.ndim != 3 or images.shape[1:] != (self.height, self.width):
            raise ValueError(f"images must have shape (n, {self.height}, {self.width}), got {tuple(images.shape)}.")
        coefficients = (self.rows @ images.to(torch.float64) @ self.columns.T)[:, self.keep]
        norms = coefficients.norm(dim=1, keepdim=True)
        scale = images.to(torch.float64).abs().amax(dim=(1, 2)).unsqueeze(1)
        flat = (norms <= 1e-9 * (1 + scale)).squeeze(1)
        features = coefficients / torch.where(flat.unsqueeze(1), torch.ones_like(norms), norms)
        features[flat] = 0.0
        features[flat, 0] = 1.0
        return features.float()

    def decode(self, features: torch.Tensor) -> torch.Tensor:
        """Images ``(n, h, w)`` in [0, max_value] from features (inverse DCT, then ``pixel_scaling``)."""
        coefficients = torch.zeros(features.shape[0], self.height, self.width, dtype=torch.float64)
        coefficients[:, self.keep] = features.detach().cpu().to(torch.float64)
        return to_pixel_range(self.rows.T @ coefficients @ self.columns, self.max_value, self.pixel_scaling)

r"""A linear image codec learned from the private images and paid for: the top eigenvectors of their noisy second
moment (privacy.md, "A private image codec").

Each image :math:`x` (``h x w`` pixels, flattened) becomes :math:`u = x / \|x\|` (the fixed :math:`e_1` when
:math:`x = 0`); the release is :math:`\tilde S = \sum_i u_i u_i^\top + E` (``privacy.second_moment``); the basis
:math:`V \in \mathbb{R}^{d \times K}` holds the top-K eigenvectors of :math:`\tilde S`. A code is
:math:`f = V^\top u / \|V^\top u\|` (on the unit sphere, :math:`e_1` when :math:`V^\top u = 0`); decoding is
:math:`V f` put back on the pixel range per image (``adapters.pixel_range``), as the DCT codec does. Everything after the release is
post-processing, and the codec stores only :math:`V`.
"""

from __future__ import annotations

import torch

from synthcity_dpswf.adapters.pixel_range import DEFAULT_PIXEL_SCALING, PixelScaling, check_pixel_scaling, to_pixel_range
from synthcity_dpswf.math.checks import check_positive_int
from synthcity_dpswf.privacy.neighbouring import Adjacency
from synthcity_dpswf.privacy.second_moment import SecondMomentRelease, release_second_moment


def unit_rows(images: torch.Tensor) -> torch.Tensor:
    """Images ``(n, h, w)`` as unit vectors ``(n, h w)``; an all-zero image is the fixed public vector e_1 (a
    per-record map: no image makes the whole encoding fail)."""
    flat = images.reshape(images.shape[0], -1).to(torch.float64)
    norms = flat.norm(dim=1, keepdim=True)
    empty = (norms <= 1e-12).squeeze(1)
    rows = flat / torch.where(empty.unsqueeze(1), torch.ones_like(norms), norms)
    rows[empty] = 0.0
    rows[empty, 0] = 1.0
    return rows


class PrivatePCABasis:
    """Images ``(n, h, w)`` <-> unit-norm codes on the top ``n_components`` eigenvectors of a released second moment:
    the basis of the ``"private-pca"`` codec (``adapters.image_codecs.PrivatePCAImageCodec``, which releases it from
    one-channel images and is the report's part).

    Build it with ``PrivatePCABasis.fit`` (the release, paid at ``(epsilon, delta)``) or from a ``basis`` already
    released (``(h w, K)`` orthonormal columns). ``pixel_scaling`` says how a decoded array is put back on
    ``[0, max_value]`` (``adapters.pixel_range``).
    """

    def __init__(self, height: int, width: int, basis: torch.Tensor, release: SecondMomentRelease | None = None,
                 max_value: float = 1.0, pixel_scaling: PixelScaling = DEFAULT_PIXEL_SCALING) -> None:
        check_positive_int("height", height)
        check_positive_int("width", width)
        check_pixel_scaling(pixel_scaling)
        self.pixel_scaling: PixelScaling = pixel_scaling
        if basis.ndim != 2 or basis.shape[0] != height * width or basis.shape[1] == 0:
            raise ValueError(f"basis must be ({height * width}, K) for {height} x {width} images, got {tuple(basis.shape)}.")
        self.height, self.width, self.max_value = height, width, float(max_value)
        self.basis = basis.to(torch.float64)
        self.release = release

    @classmethod
    def fit(cls, images: torch.Tensor, n_components: int, epsilon: float, delta: float, secret: torch.Generator,
            neighbouring: Adjacency | str = Adjacency.REPLACE_ONE, max_value: float = 1.0,
            pixel_scaling: PixelScaling = DEFAULT_PIXEL_SCALING) -> "PrivatePCABasis":
        """Release the second moment of the private ``images`` ``(n, h, w)`` at (epsilon, delta) and keep the top
        ``n_components`` eigenvectors of the noisy matrix (post-processing)."""
        check_positive_int("n_components", n_components)
        if images.ndim != 3:
            raise ValueError(f"images must have shape (n, h, w), got {tuple(images.shape)}.")
        height, width = images.shape[1], images.shape[2]
        if n_components > height * width:
            raise ValueError(f"n_components = {n_components} exceeds the {height * width} pixels of an image.")
        release = release_second_moment(unit_rows(images), epsilon, delta, secret, neighbouring)
        _, vectors = torch.linalg.eigh(release.matrix)  # ascending eigenvalues
        basis = vectors[:, -n_components:].flip(1)
        return cls(height, width, basis, release, max_value, pixel_scaling)

    @property
    def dim(self) -> int:
        """K, features per image."""
        return int(self.basis.shape[1])

    def encode(self, images: torch.Tensor) -> torch.Tensor:
        """Unit-norm codes ``(n, K)`` of ``images`` ``(n, h, w)`` (e_1 for an image the basis does not see)."""
        if images.ndim != 3 or images.shape[1:] != (self.height, self.width):
            raise ValueError(f"images must have shape (n, {self.height}, {self.width}), got {tuple(images.shape)}.")
        codes = unit_rows(images) @ self.basis
        norms = codes.norm(dim=1, keepdim=True)
        blind = (norms <= 1e-12).squeeze(1)
        codes = codes / torch.where(blind.unsqueeze(1), torch.ones_like(norms), norms)
        codes[blind] = 0.0
        codes[blind, 0] = 1.0
        return codes.float()

    def decode(self, codes: torch.Tensor) -> torch.Tensor:
        """Images ``(n, h, w)`` in [0, max_value]: ``V f``, then ``pixel_scaling``."""
        flat = codes.detach().cpu().to(torch.float64) @ self.basis.T
        return to_pixel_range(flat.reshape(-1, self.height, self.width), self.max_value, self.pixel_scaling)

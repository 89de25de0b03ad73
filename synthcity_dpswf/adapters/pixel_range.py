r"""How a linear image codec maps a decoded array back to the pixel range :math:`[0, m]` (post-processing).

A linear codec (the fixed DCT codec, the private PCA codec) keeps the direction of an image, not its scale or
offset, so its decoded array :math:`y` must be put back on the public pixel range. Two rules, each per image:

- ``"min_max"``: :math:`x = m (y - \min y) / (\max y - \min y)`. The most negative ringing of :math:`y` becomes
  black, so a background that was 0 comes back grey.
- ``"clip"``: :math:`x = m\, y_+ / \max y_+` with :math:`y_+ = \max(y, 0)`. Whatever the codec decodes at or
  below 0 (ringing around the strokes, a zero-mean DCT background) becomes black, and the brightest pixel
  :math:`m`; an image with no positive pixel decodes to black.

``"clip"`` is the default of both codecs, chosen on the validation splits of MNIST and FashionMNIST
(``benchmarks/studies/codec_decoding.py``): of the six codecs there (PCA-30 exact and released, DCT-12, on each dataset)
it gave the higher mean CAS (MLP and CNN) and the lower FID every time, though on FashionMNIST the CNN alone preferred
``"min_max"`` (``benchmarks/results/codec_decoding.md``).
"""

from __future__ import annotations

from typing import Literal, get_args

import torch

PixelScaling = Literal["clip", "min_max"]
PIXEL_SCALINGS: tuple[str, ...] = get_args(PixelScaling)
DEFAULT_PIXEL_SCALING: PixelScaling = "clip"
"""The linear codecs' default (the module's docstring says where it was chosen)."""


def check_pixel_scaling(scaling: str) -> None:
    """Raise a ``ValueError`` naming the choices unless ``scaling`` is one of ``PIXEL_SCALINGS``."""
    if scaling not in PIXEL_SCALINGS:
        raise ValueError(f"pixel_scaling must be one of {list(PIXEL_SCALINGS)}, got {scaling!r}.")


def to_pixel_range(decoded: torch.Tensor, max_value: float, scaling: PixelScaling = DEFAULT_PIXEL_SCALING) -> torch.Tensor:
    """Arrays ``(n, h, w)`` decoded by a linear codec, as images in ``[0, max_value]`` by ``scaling`` (the rules in
    the module's docstring), in float32."""
    check_pixel_scaling(scaling)
    if scaling == "min_max":
        low = decoded.amin(dim=(1, 2), keepdim=True)
        high = decoded.amax(dim=(1, 2), keepdim=True)
        return ((decoded - low) / (high - low).clamp(min=1e-12) * max_value).float()
    positive = decoded.clamp(min=0.0)
    high = positive.amax(dim=(1, 2), keepdim=True)
    return (positive / high.clamp(min=1e-12) * max_value).float()

"""The one codec protocol: what maps user data to records in the unit ball and back, and says what it assumes public.

Every codec of the package satisfies it: the table codecs (``TabularCodec``, ``MarginalTableCodec``), the image
codecs (``image_codecs.ImageCodec``, which narrows the data to image tensors: ``AutoencoderCodec``, ``FixedDCTCodec``,
``PrivatePCAImageCodec``) and ``LabelledCodec``'s pairs. What a codec paid, when it releases a statistic of the private
data, is its registry entry's (``image_codecs.ImageCodecEntry.paid``) and its own ``privacy_part``.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import torch


@runtime_checkable
class Codec(Protocol):
    """User data <-> records, with what it assumes public in the privacy report's words."""

    @property
    def public_description(self) -> str:
        """What the codec assumes public, in the privacy report's words."""

    def encode(self, data: Any) -> torch.Tensor:
        """Records of the data (a table's rows, images), one per item."""

    def decode(self, records: torch.Tensor) -> Any:
        """The data of records (generated ones included): post-processing."""

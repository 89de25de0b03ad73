"""The kinds of data a plugin fits, one ``DataPath`` each: tables (``plugins.table_path``) and images
(``plugins.image_path``).

``SlicedFlowPlugin.fit`` picks one per loader (``plugins.base.path_for``, the one line that tests a loader's
kind of data). A path turns a loader into what the generator is fitted on (``prepare``: encoded records, labels,
the flow's share of the budget, the codec, the marginal layout, the public schema and info, and the part of the
budget it paid itself) and turns samples back into the loader's kind of data (``generate``). The rest of the plugin
base is the synthcity glue around them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import torch
from synthcity.plugins.core.dataloader import DataLoader
from synthcity.plugins.core.schema import Schema

from synthcity_dpswf.adapters import MarginalTableCodec, TabularEncoder
from synthcity_dpswf.adapters.image_codecs import ImageCodec
from synthcity_dpswf.models import SlicedGenerator
from synthcity_dpswf.plugins.loaders import LoaderPath
from synthcity_dpswf.privacy import MarginalLayout, PrivacyPart

if TYPE_CHECKING:
    from synthcity_dpswf.plugins.base import SlicedFlowPlugin

Codec = TabularEncoder | MarginalTableCodec | ImageCodec
"""What maps the loader's data to records and back: a table's encoder or codec, or an image codec (an autoencoder,
or one of the registry's: ``extensions.image_codecs``)."""


@dataclass(frozen=True)
class PreparedData:
    """A loader made ready for the generator (``DataPath.prepare``): only ``records`` and ``labels`` are private;
    the rest is public or released. ``epsilon`` and ``delta`` are the generator's releases' budget: with ``prior`` (the
    multiplier of ``paid``'s Gaussian mechanism, accounted with the releases: privacy.md, "One budget") the whole's,
    less its threshold's delta; ``released_rows`` is the domain's
    estimate of n (``None`` without a DP domain)."""

    records: torch.Tensor
    labels: torch.Tensor | None
    epsilon: float
    delta: float
    codec: Codec
    layout: MarginalLayout | None
    schema: Schema
    info: dict[str, Any]
    paid: PrivacyPart | None = None
    released_rows: float | None = None
    prior: float | None = None
    one_way: dict[int, tuple[Any, Any]] = field(default_factory=dict)
    """The DP domain's measurements of columns' one-way tables on the codec's levels (``MarginalTableCodec.
    one_way_measurements``), for the marginal release's post-processing; they count ``released_rows`` records."""
    flow_defaults: dict[str, int] = field(default_factory=dict)
    """Release and flow settings measured for this codec and generator (``ImageCodecEntry.flow_defaults``), used
    where the plugin's own are left at ``None``."""


class DataPath(Protocol):
    """How one kind of data goes through a plugin."""

    default_release: str
    """The release kind a plugin uses for this data when its ``release`` is ``None`` (``SlicedFlowPlugin.release_kind``)."""

    def prepare(self, plugin: "SlicedFlowPlugin", X: DataLoader, loader: LoaderPath) -> PreparedData:
        """Check ``X``, pay for what must be released before the generator (if anything) and encode it."""
        ...

    def generate(self, plugin: "SlicedFlowPlugin", generator: SlicedGenerator, codec: Codec, count: int,
                 syn_schema: Schema) -> DataLoader:
        """``count`` generated items as a loader of the kind that was fitted (post-processing of the releases)."""
        ...

    def public_line(self, codec: Codec) -> str:
        """The report's line on what this path assumed public."""
        ...


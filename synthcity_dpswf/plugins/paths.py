"""The kinds of data a plugin fits, one ``DataPath`` each: tables (``plugins.table_path``) and images
(``plugins.image_path``).

``SlicedFlowPlugin.fit`` picks one per loader (``plugins.base.path_for``, the one line that tests a loader's
kind of data). A path reads of the plugin only what ``FittingPlugin`` lists (its budget, its argument
groups of ``plugins.options`` and synthcity's generation glue), so the paths sit below the plugin base and never import it; the generator comes to ``prepare`` as a
value (``models.base.GeneratorSpec``, resolved once by the plugin), whose plan the path calibrates the noise to. A path turns a loader into what the generator is fitted on (``prepare``: encoded records, labels,
the flow's share of the budget, the codec, the marginal layout, the public schema and info, and the part of the
budget it paid itself) and turns samples back into the loader's kind of data (``generate``). The rest of the plugin
base is the synthcity glue around them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Protocol

import torch
from synthcity.plugins.core.dataloader import DataLoader
from synthcity.plugins.core.schema import Schema

from synthcity_dpswf.adapters.codec import Codec
from synthcity_dpswf.models import SlicedGenerator
from synthcity_dpswf.models.settings import ReleasePlan
from synthcity_dpswf.models.base import GeneratorSpec
from synthcity_dpswf.plugins.loaders import LoaderPath
from synthcity_dpswf.plugins.options import FlowOptions, ImageOptions, TableOptions
from synthcity_dpswf.privacy import MarginalLayout, PrivacyPart
from synthcity_dpswf.privacy.budget import Budget
from synthcity_dpswf.privacy.selection import PairSelection


@dataclass(frozen=True)
class PreparedData:
    """A loader made ready for the generator (``DataPath.prepare``): only ``records`` and ``labels`` are private;
    the rest is public or released. ``budget`` is the plugin's ``Budget`` for this data, with what ``paid`` spent
    (a DP domain, a private codec: its Gaussian mechanism the releases' accountant's prior, its threshold's delta
    taken: privacy.md, "One budget"); ``noise_multiplier`` is the releases' noise, calibrated once to what is left
    (``Budget.noise_multiplier``); ``released_rows`` is the domain's estimate of n (``None`` without a DP domain)."""

    records: torch.Tensor | None
    """The encoded private records (``None`` for a partitioned table: its release is summed from the partitions)."""
    labels: torch.Tensor | None
    budget: Budget
    noise_multiplier: float
    plan: ReleasePlan
    """The releases' accountant and number the noise is calibrated to (``GeneratorSpec.plan``), released by."""
    n_public: int | None
    """The number of private records where it is public (replace-one), ``None`` under add/remove."""
    codec: Codec
    layout: MarginalLayout | None
    schema: Schema
    info: dict[str, Any]
    paid: PrivacyPart | None = None
    released_rows: float | None = None
    one_way: dict[int, tuple[Any, Any]] = field(default_factory=dict)
    """The DP domain's measurements of columns' one-way tables on the codec's levels (``MarginalTableCodec.
    one_way_measurements``), for the marginal release's post-processing; they count ``released_rows`` records."""
    partitioned: Any = None
    """A partitioned table's ``adapters.partitioned.DaskCounts``, from which the generator's release is summed
    (privacy.md, "Tables on Dask"); ``None`` in memory."""
    selection: PairSelection | None = None
    """The paid pair selection's release (``privacy.selection``), joined to the marginal release after it."""
    selection_part: PrivacyPart | None = None
    """Its part of the budget, in the releases' accounting (``None``: no selection was paid for)."""


class FittingPlugin(Protocol):
    """What a ``DataPath`` reads of the plugin it prepares data for and generates through (``plugins.base.
    SlicedFlowPlugin`` is one): its budget and argument groups (``plugins.options``), and synthcity's generation glue."""

    budget: Budget
    random_state: int
    flow_options: FlowOptions
    table_options: TableOptions
    image_options: ImageOptions
    # synthcity's generation settings and state
    sampling_patience: int
    strict: bool
    data_info: dict[str, Any]

    def training_schema(self) -> Schema: ...

    def _safe_generate_images(self, sampler: Callable[[int], Any], count: int, syn_schema: Schema) -> DataLoader: ...


def draw_seed() -> int:
    """A seed for one generation draw, from torch's global generator (seeded by synthcity's ``random_state``)."""
    return int(torch.randint(0, 2**31 - 1, (1,)))


class DataPath(Protocol):
    """How one kind of data goes through a plugin."""

    default_release: str
    """The release kind a plugin uses for this data when its ``release`` is ``None``."""

    def flow_defaults(self, image_codec: str | None, generator: str, release: str) -> dict[str, int]:
        """Release and flow settings measured for this data's codec and ``generator``'s ``release`` (public), used
        where the plugin's own are ``None`` (``SlicedFlowPlugin.generator_spec``)."""
        ...

    def prepare(self, plugin: FittingPlugin, X: DataLoader, loader: LoaderPath, spec: GeneratorSpec) -> PreparedData:
        """Check ``X``, pay for what must be released before the generator (if anything), calibrate the releases'
        noise to ``spec``'s plan (computed once, here) and encode it."""
        ...

    def generate(self, plugin: FittingPlugin, generator: SlicedGenerator, codec: Codec, count: int,
                 syn_schema: Schema, cond: Any = None) -> DataLoader:
        """``count`` generated items as a loader of the kind that was fitted (post-processing of the releases);
        ``cond``: the named target's value of every item, where the path supports it."""
        ...

    def public_line(self, codec: Codec) -> str:
        """The report's line on what this path assumed public."""
        ...

    def generate_parquet(self, generator: SlicedGenerator, codec: Codec, folder: Path, count: int, chunk_size: int,
                         seed: int) -> int:
        """``count`` generated items written to a Parquet dataset, chunk by chunk on Dask (tables only)."""
        ...


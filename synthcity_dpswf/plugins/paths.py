"""The ways into a plugin: the kinds of data it fits, one ``DataPath`` each (tables, ``plugins.table_path``; images,
``plugins.image_path``), and the synthcity loaders it accepts, one ``LoaderPath`` per loader class, with the part of
their ``info()`` it keeps (privacy.md, "synthcity loaders").

Each plugin fits one kind of data, its modality (``TablePlugin``, ``ImagePlugin``), and refuses the other's loaders
(``check_data_kind``, the one place that tests a loader's kind of data). A path reads nothing of the plugin: the plugin
hands it values (``FitInputs`` to prepare, ``GenerationContext`` to generate) and gets values back (``PreparedData``,
a loader), so the paths sit below the plugin base, never import it and never call it;
the generator comes to ``prepare`` as a value (``models.base.GeneratorSpec``, resolved once by the plugin), whose plan
the path calibrates the noise to. A path turns a loader into what the generator is fitted on (``prepare``: encoded
records, labels, the flow's share of the budget, the codec, the marginal layout, the public schema and info, and the
part of the budget it paid itself) and turns samples back into the loader's kind of data (``generate``). The rest of
the plugin base is the synthcity glue around them.

synthcity rebuilds every output loader from ``plugin.data_info`` (``create_from_info``) and saves it with the plugin,
so whatever it holds is published. A loader's own ``info()`` is computed by synthcity from the private data: the
plugins keep only the public part of it, per loader type (``loader_path``), and refuse the loader types the contract
does not cover (``REFUSED``) before any private computation.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Protocol, Sequence

import numpy as np
import torch
from synthcity.plugins.core.dataloader import DataLoader
from synthcity.plugins.core.schema import Schema

from synthcity_dpswf.adapters import TabularDomain
from synthcity_dpswf.adapters.table_domain import PublicRules
from synthcity_dpswf.adapters.codec import Codec
from synthcity_dpswf.models import SlicedGenerator
from synthcity_dpswf.models.base import GeneratorSpec
from synthcity_dpswf.models.state import ReleasePlan
from synthcity_dpswf.plugins.options import FlowOptions, ImageOptions, TableOptions
from synthcity_dpswf.privacy import MarginalLayout, PrivacyPart
from synthcity_dpswf.privacy.budget import Budget


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
    selection_part: PrivacyPart | None = None
    """Its part of the budget, in the releases' accounting (``None``: no selection was paid for)."""
    n_classes: int | None = None
    """The public number of classes of ``labels`` (``None``: no labels)."""


@dataclass(frozen=True)
class FitInputs:
    """What a ``DataPath`` prepares data with: the plugin's budget, seed and release kind as given, and its modality's
    argument group (``plugins.options``); values handed down by the plugin, which the path never reads otherwise."""

    budget: Budget
    random_state: int
    release: str | None
    """The release kind as given (``None``: the path's default)."""
    table: TableOptions | None = None
    image: ImageOptions | None = None


@dataclass(frozen=True)
class GenerationContext:
    """What a ``DataPath`` generates with besides the generator and codec: the fit's public schema, synthcity's
    loader info and generation settings, and the marginal layout (tables)."""

    schema: Schema
    data_info: dict[str, Any]
    sampling_patience: int
    strict: bool
    layout: MarginalLayout | None = None


MODALITY_OF_DATA = {"images": "images"}
"""A loader's ``data_type`` -> the modality of the plugins that fit it (any other: tables)."""


def check_data_kind(loader: DataLoader, modality: str, plugin_name: str) -> None:
    """Refuse a loader of the other modality, in one line that names the plugin for it (``image_<name>`` for images,
    ``<name>`` for tables), before anything is read."""
    given = MODALITY_OF_DATA.get(getattr(loader, "data_type", None), "tables")
    if given == modality:
        return
    other = f"image_{plugin_name}" if given == "images" else plugin_name.removeprefix("image_")
    raise ValueError(f"{plugin_name} fits {modality}, and a {type(loader).__name__} holds {given}: use "
                     f"Plugins().get({other!r}).")


def draw_seed() -> int:
    """A seed for one generation draw, from torch's global generator (seeded by synthcity's ``random_state``)."""
    return int(torch.randint(0, 2**31 - 1, (1,)))


class DataPath(Protocol):
    """How one kind of data goes through a plugin."""

    default_release: str
    """The release kind a plugin uses for this data when its ``release`` is ``None``."""

    def flow_defaults(self, codec: str | None, generator: str, release: str) -> dict[str, int]:
        """Release and flow settings measured for this data's codec and ``generator``'s ``release`` (public), used
        where the plugin's own are ``None`` (``SlicedFlowPlugin.generator_spec``)."""
        ...

    def prepare(self, inputs: FitInputs, X: DataLoader, loader: LoaderPath, spec: GeneratorSpec) -> PreparedData:
        """Check ``X``, pay for what must be released before the generator (if anything), calibrate the releases'
        noise to ``spec``'s plan (computed once, here) and encode it."""
        ...

    def generate(self, context: GenerationContext, generator: SlicedGenerator, codec: Codec, count: int,
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


REFUSED: dict[str, str] = {
    "time_series": (
        "a TimeSeriesDataLoader has one row per time step, so a plugin would protect one time step, not one person "
        "(a person with k steps is k records: the guarantee per person is up to k times weaker than printed), and its "
        "info() holds the longest sequence length. Put one person per row (a public, fixed number of steps as "
        "columns) in a GenericDataLoader"
    ),
    "time_series_survival": (
        "a TimeSeriesSurvivalDataLoader has one row per time step, so a plugin would protect one time step, not one "
        "person, and its info() holds the longest sequence length and time horizons computed from the private times. "
        "Put one person per row (a public, fixed number of steps as columns, with the time and event columns) in a "
        "SurvivalAnalysisDataLoader"
    ),
}
"""Loader types refused, with what the message says (privacy.md, "synthcity loaders")."""


class LoaderPath(Protocol):
    """What the plugins do with one accepted loader type."""

    target: str | None
    """The named target column a table's release is conditioned on, ``None``: none."""

    def public_rules(self, loader: DataLoader) -> PublicRules:
        """What the loader's contract says of the table's columns (a public value: ``recipes.tables.settle_table``
        applies it)."""
        ...

    def public_info(self, loader: DataLoader, domain: TabularDomain | None) -> dict[str, Any]:
        """The part of ``loader.info()`` that is public or derived from the (public or released) domain."""
        ...


@dataclasses.dataclass(frozen=True)
class PublicInfoPath:
    """Loaders whose ``info()`` holds only public facts (n, column roles, image shape, settings): kept as it is."""

    target: str | None = None
    """The named target column a table's release is conditioned on (``options.TableOptions.named_target``)."""

    def public_rules(self, loader: DataLoader) -> PublicRules:
        return PublicRules()

    def public_info(self, loader: DataLoader, domain: TabularDomain | None) -> dict[str, Any]:
        return dict(loader.info())


@dataclasses.dataclass(frozen=True)
class SurvivalPath:
    """``SurvivalAnalysisDataLoader``: the time and event columns are ordinary columns of the domain; the time
    horizons are the declared ``time_horizons`` or three points inside the domain's time range, never the loader's
    (synthcity computes those from the private times' minimum and maximum)."""

    time_horizons: Sequence[float] | None = None
    target: str | None = None
    """As ``PublicInfoPath.target``."""

    def public_rules(self, loader: DataLoader) -> PublicRules:
        """Times are present and positive by the loader's contract (synthcity refuses a T that is not > 0), a public
        fact: ``adapters.table_domain.PublicRules`` starts the time column's range at the partition's smallest positive
        edge where a released bound is lower and drops a released missing level, refuses a declared range that is not
        positive (or declared missing) before any release, and ends the fit where the DP domain could not place the
        time column."""
        time: str = loader.time_to_event_column  # type: ignore[attr-defined]
        return PublicRules(time, "the survival loader's time to event",
                           "synthcity's SurvivalAnalysisDataLoader refuses times that are not > 0, missing ones too")

    def public_info(self, loader: DataLoader, domain: TabularDomain | None) -> dict[str, Any]:
        info = dict(loader.info())
        if self.time_horizons is not None:
            info["time_horizons"] = [float(horizon) for horizon in self.time_horizons]
        else:
            assert domain is not None
            column = self.public_rules(loader).numeric_column(domain)
            info["time_horizons"] = np.linspace(column.low, column.high, num=5)[1:-1].tolist()
        return info


def loader_path(loader: DataLoader, plugin_name: str, time_horizons: Sequence[float] | None = None,
                target: str | None = None) -> LoaderPath:
    """The path of an accepted loader (conditioned on the named ``target`` column); a refused or unknown loader type
    raises a ``ValueError`` that names it and says what to do, before any private computation."""
    data_type = loader.data_type
    if data_type in REFUSED:
        raise ValueError(f"{plugin_name} does not accept a {type(loader).__name__}: {REFUSED[data_type]}.")
    if data_type == "survival_analysis":
        return SurvivalPath(time_horizons, target)
    if data_type in ("generic", "images"):
        return PublicInfoPath(target)
    raise ValueError(
        f"{plugin_name} does not accept a {type(loader).__name__} (data_type {data_type!r}): the privacy contract covers "
        "GenericDataLoader, SurvivalAnalysisDataLoader and ImageDataLoader only."
    )

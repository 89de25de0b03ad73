"""Which synthcity loaders the plugins accept, and the ``info()`` they keep (privacy.md, "synthcity loaders").

synthcity rebuilds every output loader from ``plugin.data_info`` (``create_from_info``) and saves it with the plugin,
so whatever it holds is published. A loader's own ``info()`` is computed by synthcity from the private data: the
plugins keep only the public part of it, per loader type (``loader_path``), and refuse the loader types the contract does
not cover (``REFUSED``) before any private computation.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Protocol, Sequence

import numpy as np
from synthcity.plugins.core.dataloader import DataLoader

from synthcity_dpswf.adapters import CategoricalColumn, NumericColumn, TabularDomain

SMALLEST_POSITIVE_FLOAT = 2.0**-16
"""The smallest positive value of the DP domain's float partition (``privacy.domain.columns.log_bin_edges``): where a
survival time column's released lower bound is not positive, its range starts here."""

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

    def public_domain(self, loader: DataLoader, domain: TabularDomain, declared: set[str]) -> TabularDomain:
        """The domain the table is encoded with, after the loader's public rules (``declared``: the columns a public
        domain gives)."""
        ...

    def public_info(self, loader: DataLoader, domain: TabularDomain | None) -> dict[str, Any]:
        """The part of ``loader.info()`` that is public or derived from the (public or released) domain."""
        ...


@dataclasses.dataclass(frozen=True)
class PublicInfoPath:
    """Loaders whose ``info()`` holds only public facts (n, column roles, image shape, settings): kept as it is."""

    target: str | None = None
    """The named target column a table's release is conditioned on (``options.TableOptions.named_target``)."""

    def public_domain(self, loader: DataLoader, domain: TabularDomain, declared: set[str]) -> TabularDomain:
        return domain

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

    def public_domain(self, loader: DataLoader, domain: TabularDomain, declared: set[str]) -> TabularDomain:
        """Times are positive by the loader's contract (synthcity refuses T <= 0): the time column's range starts at
        the partition's smallest positive edge when a released bound is lower; a declared range that is not positive
        is an error, raised before any release."""
        name = loader.time_to_event_column  # type: ignore[attr-defined]
        if name not in domain.names and name in declared:
            raise ValueError(f"the declared domain has no column {name!r}.")
        if name not in domain.names:  # a partial declared domain without it: the released one is checked later
            return domain
        column = time_column(domain, name)
        if column.low > 0:
            return domain
        if name in declared:
            raise ValueError(
                f"the domain declares column {name!r} (the survival loader's time to event) from {column.low:g}, but "
                "times are positive (synthcity refuses T <= 0); declare a positive lower bound."
            )
        low = 1.0 if column.integer else SMALLEST_POSITIVE_FLOAT
        high = max(column.high, low + 1.0 if column.integer else 2 * low)
        positive = dataclasses.replace(column, low=low, high=high)
        columns = tuple(positive if other.name == name else other for other in domain.columns)
        return dataclasses.replace(domain, columns=columns)

    def public_info(self, loader: DataLoader, domain: TabularDomain | None) -> dict[str, Any]:
        info = dict(loader.info())
        if self.time_horizons is not None:
            info["time_horizons"] = [float(horizon) for horizon in self.time_horizons]
        else:
            assert domain is not None
            column = time_column(domain, loader.time_to_event_column)  # type: ignore[attr-defined]
            info["time_horizons"] = np.linspace(column.low, column.high, num=5)[1:-1].tolist()
        return info


def time_column(domain: TabularDomain, name: str) -> NumericColumn:
    """The survival time column of ``domain``, which must be numeric."""
    for column in domain.columns:
        if column.name == name:
            if isinstance(column, CategoricalColumn):
                raise ValueError(
                    f"the domain makes column {name!r} (the survival loader's time to event) categorical; times need a "
                    "numeric range: declare it numeric in a public domain (domain=...)."
                )
            return column
    raise ValueError(f"the domain has no column {name!r} (the survival loader's time to event); add it to the domain.")


def check_time_horizons(time_horizons: Sequence[float] | None) -> None:
    """Declared time horizons must be finite numbers."""
    if time_horizons is None:
        return
    values = list(time_horizons)
    if not values or not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in values):
        raise ValueError(f"time_horizons must be a non-empty list of finite numbers (declared public), got {time_horizons!r}.")


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

"""A table's domain: its columns, in order, each numeric (bounds, integer or not) or categorical (its categories).

Where the domain comes from decides the guarantee: ``TabularDomain.from_dict`` / ``from_levels`` / ``parse`` read a
public description; ``TabularDomain.from_release`` uses a ``privacy.domain.DomainRelease`` (paid budget), and
``merged`` completes a declared domain by a released one (privacy.md, "The DP domain"). Never build a domain from the
private table itself.
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Union

import numpy as np
import pandas as pd

from synthcity_dpswf.adapters.table_columns import (
    CategoricalColumn,
    Column,
    NumericColumn,
    category_values,
    output_categories,
)
from synthcity_dpswf.privacy.counts import is_missing
from synthcity_dpswf.privacy.domain import DomainRelease

DomainSpec = Union["TabularDomain", dict, str, Path, None]
"""What a user may pass as a table's domain (``TabularDomain.parse``); ``None``: none declared."""
UNPLACED = "not placed (no released evidence of its values at this budget: output as missing entries)"
"""What ``TabularDomain.summary`` says of a column the DP domain could not place."""


@dataclass(frozen=True)
class TabularDomain:
    """The columns of a table, in order, with their public (or privately released) ranges."""

    columns: tuple[Column, ...]
    source: str = "public domain description"

    @property
    def names(self) -> list[str]:
        return [column.name for column in self.columns]

    def summary(self) -> pd.DataFrame:
        """One row per column: its kind, range or categories, the dtype its synthetic column gets, whether it may be
        missing, and whether it was placed (a column the DP domain could not place is output as missing entries
        only). A function of the (public or released) domain: post-processing."""
        rows = []
        for column in self.columns:
            if isinstance(column, NumericColumn):
                kind = "integer" if column.integer else "float"
                values = f"[{column.low:.6g}, {column.high:.6g}]" if column.placed else UNPLACED
                dtype = ("Int64" if column.missing or not column.placed else "int64") if column.integer else "float64"
            else:
                kind, categories = "categorical", output_categories(column)
                values = ", ".join(map(str, categories[:8])) + (f", ... ({len(categories)})" if len(categories) > 8 else "")
                values = values if column.placed else UNPLACED
                dtype = str(category_values(column, np.arange(len(categories) + column.missing)).dtype)
            rows.append({"column": column.name, "kind": kind, "values": values, "dtype": dtype,
                         "missing": column.missing, "placed": column.placed})
        return pd.DataFrame(rows, columns=["column", "kind", "values", "dtype", "missing", "placed"])

    def public_description(self) -> str:
        """What a codec of this domain assumes public, in the privacy report's words."""
        return (f"the column names; the domain (kinds, ranges, categories, hence dtypes): {self.source}; per column: "
                f"{self.describe()}")

    def describe(self) -> str:
        """``summary`` in one line per column (the privacy report's domain lines)."""
        return "; ".join(
            f"{row.column}: {row.kind} {row.values} ({row.dtype}{', may be missing' if row.missing else ''})"
            for row in self.summary().itertuples()
        )

    @classmethod
    def from_dict(cls, description: dict[str, Any]) -> "TabularDomain":
        """From ``{name: {"type": "numeric", "low": .., "high": .., "integer": bool}}`` or
        ``{name: {"type": "categorical", "categories": [..]}}`` entries, in column order; or the one-line form
        ``{"age": (17, 90), "sex": ["F", "M"]}``: a tuple of two numbers is a numeric range (integer when both are
        ints), a list the categories; ``None`` as a range's third entry or among the categories says that the column
        may be missing (``{"age": (17, 90, None), "sex": ["F", "M", None]}``); a pandas ``CategoricalDtype`` declares
        the categories and the synthetic column's dtype (order included)."""
        columns: list[Column] = []
        for name, spec in description.items():
            if isinstance(spec, tuple):
                bounds, missing = (spec[:2], True) if len(spec) == 3 and spec[2] is None else (spec, False)
                if len(bounds) != 2 or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in bounds):
                    raise ValueError(
                        f"column {name!r}: a tuple declares a numeric range (low, high), or (low, high, None) when the "
                        f"column may be missing, got {spec!r}."
                    )
                integer = all(isinstance(v, int) for v in bounds)
                columns.append(NumericColumn(name, float(bounds[0]), float(bounds[1]), integer, missing=missing))
                continue
            if isinstance(spec, pd.CategoricalDtype):
                columns.append(CategoricalColumn(name, tuple(spec.categories), False, dtype=spec))
                continue
            if isinstance(spec, list):
                present = tuple(category for category in spec if not is_missing(category))
                columns.append(CategoricalColumn(name, present, len(present) < len(spec)))
                continue
            if not isinstance(spec, dict):
                raise ValueError(
                    f"column {name!r}: declare (low, high), a list of categories or a dict with 'type', got {spec!r}."
                )
            kind, missing = spec.get("type"), bool(spec.get("missing", False))
            if kind == "numeric":
                low, high, integer = float(spec["low"]), float(spec["high"]), bool(spec.get("integer", False))
                columns.append(NumericColumn(name, low, high, integer, missing=missing))
            elif kind == "categorical":
                columns.append(CategoricalColumn(name, tuple(spec["categories"]), missing))
            else:
                raise ValueError(f"column {name!r}: type must be 'numeric' or 'categorical', got {kind!r}.")
        return cls(tuple(columns))

    @classmethod
    def parse(cls, domain: "DomainSpec", max_one_hot: int = 20) -> "TabularDomain":
        """A ``TabularDomain`` from what a user passes: a domain object, a description dict (``from_dict``; the
        one-line form ``{"age": (17, 90), "sex": ["F", "M"]}`` too) or a JSON file of either form, or
        private-pgm's ``{name: n_levels}`` (``from_levels``, with ``max_one_hot``)."""
        if isinstance(domain, TabularDomain):
            return domain
        if isinstance(domain, (str, Path)):
            domain = json.loads(Path(domain).read_text())
        if not isinstance(domain, dict):
            raise ValueError(f"domain must be a TabularDomain, a dict or a JSON path, got {type(domain).__name__}.")
        if all(isinstance(value, int) for value in domain.values()):
            return cls.from_levels(domain, max_one_hot)
        return cls.from_dict(domain)

    @classmethod
    def from_levels(cls, levels: dict[str, int] | str | Path, max_one_hot: int = 20) -> "TabularDomain":
        """From a private-pgm style domain ``{name: number of levels}`` (integer codes 0..k-1; a dict or a JSON
        file). Columns with at most ``max_one_hot`` levels are categorical, wider ones ordinal integers."""
        if not isinstance(levels, dict):
            levels = json.loads(Path(levels).read_text())
        columns: list[Column] = []
        for name, count in levels.items():
            if count <= max_one_hot:
                columns.append(CategoricalColumn(name, tuple(range(int(count)))))
            else:
                columns.append(NumericColumn(name, 0.0, float(count - 1), integer=True))
        return cls(tuple(columns))

    def merged(self, released: "TabularDomain", order: list[str]) -> "TabularDomain":
        """This (declared) domain completed by a released one, in ``order``: the released columns fill the names this
        one lacks, and a released value histogram joins a declared numeric column (its bounds stay the declared
        ones). The source names both."""
        by_name = {column.name: column for column in released.columns}
        columns: list[Column] = []
        for name in order:
            declared = next((column for column in self.columns if column.name == name), None)
            if declared is None:
                columns.append(by_name[name])
            elif isinstance(declared, NumericColumn) and isinstance(by_name.get(name), NumericColumn):
                released_column = by_name[name]
                assert isinstance(released_column, NumericColumn)
                columns.append(dataclasses.replace(declared, histogram=released_column.histogram, atoms=released_column.atoms))
            else:
                columns.append(declared)
        added = [name for name in order if name not in self.names]
        what = f"for {added}" if added else "for the value histograms of its numeric columns"
        return TabularDomain(tuple(columns), f"{self.source} for {self.names}; {released.source} {what}")

    @classmethod
    def from_release(cls, release: DomainRelease) -> "TabularDomain":
        """From a differentially private ``DomainRelease`` (budget paid): its columns in order, with the kinds,
        bounds and categories it released, and the columns it released only a value histogram for (declared ones:
        ``release_domain(..., declared=)``)."""
        columns: list[Column] = []
        for name, (low, high, integer) in release.declared.items():
            columns.append(NumericColumn(name, low, high, integer, release.histograms.get(name),
                                         atoms=release.atoms.get(name, ())))
        for name, kind in release.kinds.items():
            missing, placed = release.missing.get(name, False), release.placed.get(name, True)
            if kind == "categorical":
                columns.append(CategoricalColumn(name, release.categories[name], missing, placed))
                continue
            low, high = release.bounds[name]
            if kind == "integer":  # integers in the bins [low, high) lie in [ceil(low), ceil(high) - 1]
                low, high = math.ceil(low), math.ceil(high) - 1
            high = high if high > low else low + 1
            columns.append(NumericColumn(name, low, high, kind == "integer", release.histograms.get(name), missing, placed,
                                         release.atoms.get(name, ())))
        source = f"differentially private domain (epsilon = {release.epsilon:.4g}, delta = {release.delta:.3g})"
        return cls(tuple(columns), source)

"""A table's domain: its columns, in order, each numeric (bounds, integer or not) or categorical (its categories), and
the per-entry maps between a column's values and a codec's numbers.

Where the domain comes from decides the guarantee: ``TabularDomain.from_dict`` / ``from_levels`` / ``parse`` read a
public description; ``TabularDomain.from_release`` uses a ``privacy.domain.DomainRelease`` (paid budget), and
``merged`` completes a declared domain by a released one (privacy.md, "The DP domain"). Never build a domain from the
private table itself.

A column is a ``NumericColumn`` (bounds, integer or not, and what a DP domain released of it: value histogram, atoms,
missing level, placement) or a ``CategoricalColumn`` (its categories). The maps act on each entry alone and are fixed
by the column: positions inside a column's levels (``to_position``, ``from_position``), an entry's number or category
index, with the stated default for one the domain does not describe (``numeric_values``, ``category_index``), and the
decoded output with the domain's dtypes (``numeric_output``, ``category_values``), a float column's released atoms and
zeros restored (``onto_atoms``, ``snapped_to_zero``; privacy.md, "The DP domain"). Post-processing of public or
released facts: no budget.
"""

from __future__ import annotations

import dataclasses
import json
import math
import numbers
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Union

import numpy as np
import pandas as pd

from synthcity_dpswf.math.histograms import quantile_edges
from synthcity_dpswf.privacy.counts import (
    StringCodes, TableRefusal, all_strings, category_key, cell_index, factorized, is_missing, missing_mask,
    number_mask, string_codes,
)
from synthcity_dpswf.privacy.domain import OTHER_CATEGORY, DomainRelease
from synthcity_dpswf.privacy.domain.columns import LOG2_MIN


@dataclass(frozen=True)
class NumericColumn:
    """A numeric column with public (or released) bounds; ``integer`` columns are rounded when decoded.
    ``histogram``: a released value histogram (edges, noisy counts; ``privacy.domain``, stage 3) at whose quantiles
    the codecs place their levels; ``None``: levels of equal width over [low, high]."""

    name: str
    low: float
    high: float
    integer: bool = False
    histogram: tuple[tuple[float, ...], tuple[float, ...]] | None = None
    missing: bool = False
    """Whether the column may hold missing entries (a level of their own: privacy.md, "Missing values")."""
    placed: bool = True
    """False for a column the DP domain could not place above its noise (``DomainRelease.placed``): its range is a
    stated default nobody declared or released, so it is decoded as missing entries only (``numeric_output``)."""
    atoms: tuple[tuple[float, float], ...] = ()
    """A float column's released atoms (``DomainRelease.atoms``: value, noisy count), restored when decoding
    (``onto_atoms``)."""
    values: tuple[float, ...] = ()
    """A coded column's values, in increasing order (declared ``"values"``, or the DP domain's ``DomainRelease.coded``):
    its levels are these values, one each (``value_edges``), a number is encoded at the nearest of them and the output
    holds them only; empty: not coded."""
    decimals: int | None = None
    """The decimals a float column's output is rounded to (declared ``"decimals"``, or the DP domain's precision
    partition, ``DomainRelease.decimals``; ``in_precision``); None: not rounded."""
    single: bool = False
    """Whether the rounded output is the single-precision image of its decimals (3.200000047683716 for 3.2: a table
    stored in float32), as the DP domain's precision partition found."""

    def __post_init__(self) -> None:
        if not (math.isfinite(self.low) and math.isfinite(self.high)) or self.low >= self.high:
            raise ValueError(f"column {self.name!r}: bounds must be finite with low < high, got {self.low}, {self.high}.")
        if self.histogram is not None and len(self.histogram[0]) != len(self.histogram[1]) + 1:
            raise ValueError(f"column {self.name!r}: a histogram needs one more edge than counts.")
        values = np.asarray(self.values, dtype=float)
        if len(values) and (not np.all(np.isfinite(values)) or np.any(np.diff(values) <= 0)):
            raise ValueError(f"column {self.name!r}: coded values must be finite, distinct and in increasing order.")
        if self.decimals is not None and (isinstance(self.decimals, bool) or not isinstance(self.decimals, int)
                                          or not 0 <= self.decimals <= 15):
            raise ValueError(f"column {self.name!r}: decimals must be an integer from 0 to 15, got {self.decimals!r}.")

    def value_edges(self) -> np.ndarray:
        """A coded column's level edges: the midpoints between its consecutive values, and as far beyond its first and
        last value as the nearest midpoint (half a unit for a single value), so that ``to_position`` puts a number in
        the level of the nearest value."""
        values = np.asarray(self.values, dtype=float)
        if len(values) == 1:
            return np.array([values[0] - 0.5, values[0] + 0.5])
        middles = (values[1:] + values[:-1]) / 2
        return np.concatenate([[2 * values[0] - middles[0]], middles, [2 * values[-1] - middles[-1]]])

    @property
    def span(self) -> tuple[float, float]:
        """The interval the column's levels split: [low, high + 1) for integers (each integer a unit cell), else
        [low, high]."""
        if self.integer:
            return float(math.ceil(self.low)), float(math.floor(self.high) + 1)
        return self.low, self.high

    def level_edges(self, n_levels: int) -> np.ndarray:
        """Edges of at most ``n_levels`` levels over ``span``: a coded column's ``value_edges`` (one level per value,
        however many), one per integer when an integer range holds at most ``n_levels`` of them, else the released
        histogram's quantiles (``math.histograms.quantile_edges``), else equal widths. Post-processing of public or
        released facts."""
        if self.values:
            return self.value_edges()
        low, high = self.span
        if self.integer and high - low <= n_levels:
            return np.arange(low, high + 1.0)
        if self.histogram is not None:
            edges, counts = np.asarray(self.histogram[0]), np.asarray(self.histogram[1])
            clipped = np.clip(edges, low, high)
            inner = quantile_edges(clipped, counts, n_levels, self.integer)[1:-1]
            return np.unique(np.concatenate([[low], inner[(inner > low) & (inner < high)], [high]]))
        return np.linspace(low, high, n_levels + 1)


@dataclass(frozen=True)
class CategoricalColumn:
    """A categorical column with its public list of categories (one-hot encoded)."""

    name: str
    categories: tuple[Any, ...]
    missing: bool = False
    """Whether the column may hold missing entries (one more one-hot slot, one more level)."""
    placed: bool = True
    """False for a column none of whose categories the DP domain could publish: decoded as missing entries only."""
    dtype: pd.CategoricalDtype | None = None
    """A declared pandas ``CategoricalDtype`` (``from_dict``): the synthetic column is a Categorical of that dtype,
    its categories and order kept (a public fact: the user declared it)."""

    def __post_init__(self) -> None:
        if len(self.categories) == 0:
            raise ValueError(f"column {self.name!r}: a categorical column needs at least one category.")


Column = Union[NumericColumn, CategoricalColumn]
CHECK_COMMAND = "synthcity_dpswf.check_table(frame, domain) (or `dpswf check data.csv --schema schema.json`)"
"""What an error of the codecs names for the user to find, on their own machine, the entries a domain does not fit."""


def to_position(values: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Continuous level positions in [0, K) of ``values`` (clipped into the edges' range): the level's index plus the
    fraction of its width below the value (a per-record map)."""
    clipped = np.clip(values, edges[0], edges[-1])
    level = cell_index(clipped, edges)
    fraction = (clipped - edges[level]) / (edges[level + 1] - edges[level])
    return level + np.clip(fraction, 0.0, 1.0 - 1e-12)


def from_position(positions: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Values from continuous level positions (the inverse of ``to_position``): uniform inside each level."""
    n_levels = len(edges) - 1
    level = np.clip(np.floor(positions), 0, n_levels - 1).astype(int)
    fraction = np.clip(positions - level, 0.0, 1.0)
    return edges[level] + fraction * (edges[level + 1] - edges[level])


def numeric_values(values: pd.Series, column: NumericColumn, unknown: str) -> np.ndarray:
    """The numbers of a numeric column, NaN for its missing entries when it has a missing level; another missing or a
    non-numeric entry is an error (``unknown="error"``) or the column's lower bound (``"first"``)."""
    mask = number_mask(values)
    if pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values):
        numbers = values.to_numpy(dtype=float, na_value=np.nan)
    else:
        numbers = np.array([float(v) if ok else np.nan for v, ok in zip(values.to_numpy(dtype=object), mask)], dtype=float)
    bad = ~mask & ~missing_mask(values) if column.missing else ~mask
    if bad.any():
        if unknown == "error":
            raise TableRefusal(
                f"column {column.name!r} has missing or non-numeric values, outside its domain; declare it "
                '"missing": true, clean them, or describe the column as categorical. To list them, run '
                f"{CHECK_COMMAND} on your table, on your machine."
            )
        numbers[bad] = column.low
    if column.values and unknown == "error" and not bool(np.all(on_values(numbers[~np.isnan(numbers)], column.values))):
        raise TableRefusal(
            f"column {column.name!r} holds numbers outside its declared values; add them to \"values\" or map them "
            f"before fitting. To list them, run {CHECK_COMMAND} on your table, on your machine."
        )
    return numbers


def on_values(numbers: np.ndarray, values: tuple[float, ...]) -> np.ndarray:
    """Which ``numbers`` equal one of a coded column's declared ``values``: exactly, within 1e-9 relative, or as the
    same single-precision number (a table stored in float32 holds 3.200000047683716 for a declared 3.2)."""
    declared = np.asarray(values, dtype=float)
    close = np.isclose(numbers[:, None], declared[None, :], rtol=1e-9, atol=0.0).any(axis=1)
    with np.errstate(all="ignore"):
        single = np.isin(numbers.astype(np.float32), declared.astype(np.float32))
    return close | single


def category_index(values: pd.Series, column: CategoricalColumn, unknown: str,
                   factorize: Callable[[pd.Series], StringCodes | None] = string_codes) -> np.ndarray:
    """Each entry's position in the column's categories, matched by ``category_key`` (1 and True are different
    categories), ``len(categories)`` (the missing slot) for a missing entry of a column with a missing level; an entry
    outside them is an error (``unknown="error"``) or the stated default (``"first"``: the column's
    ``OTHER_CATEGORY`` where it has one, else -1). ``factorize``: the column's ``string_codes`` (or the same, computed
    once for a table: ``privacy.counts.FrameCounts.strings``)."""
    lookup = {category_key(category): index for index, category in enumerate(column.categories)}
    fallback = lookup.get(category_key(OTHER_CATEGORY), -1)  # a released domain's bin of unpublished categories
    missing_slot = len(column.categories) if column.missing else fallback
    if isinstance(values.array, pd.arrays.ArrowStringArray):  # Arrow's strings: looked up in C, no factorization
        index = arrow_string_index(values.array, lookup, fallback)
        index[missing_mask(values)] = missing_slot
        return refused_outside(index, column, unknown)
    strings = factorize(values)
    if strings is not None and len(strings.codes) != len(values):
        raise ValueError(f"column {column.name!r}: the factorized strings given are not this column's ({len(strings.codes)} "
                         f"codes for {len(values)} entries); pass the table's own FrameCounts.strings.")
    if strings is None and (all_strings(values) or values.dtype.kind in "biuf"):
        codes, distinct = factorized(values) if all_strings(values) else pd.factorize(values, use_na_sentinel=True)
        strings = StringCodes(codes, pd.Index(distinct, dtype=object))
    if strings is not None:
        # one kind of entry, so distinct values are distinct keys: each distinct value is looked up once; a missing
        # entry is code -1 (``is_missing``'s)
        positions = np.array([lookup.get(category_key(value), fallback) for value in strings.strings], dtype=np.int64)
        index = np.append(positions, missing_slot)[strings.codes]
    else:
        index = np.array([lookup.get(category_key(value), fallback) for value in values.to_numpy(dtype=object)],
                         dtype=np.int64)
        if column.missing:
            index[missing_mask(values)] = len(column.categories)
    return refused_outside(index, column, unknown)


def arrow_string_index(values: pd.arrays.ArrowStringArray, lookup: dict[tuple[str, object], int],
                       fallback: int) -> np.ndarray:
    """Each string's position by ``lookup`` (``category_key``'s keys: a string matches a string category only),
    ``fallback`` for one outside it and for a missing entry (the caller places those): Arrow's ``index_in`` against
    the string categories, each entry hashed once."""
    import pyarrow as pa  # installed wherever a column holds Arrow's strings
    import pyarrow.compute as pc

    strings = {key[1]: position for key, position in lookup.items() if key[0] == "str"}
    found = pc.index_in(values.__arrow_array__(), value_set=pa.array(list(strings), type=pa.string()))
    positions = np.array(list(strings.values()) + [fallback], dtype=np.int64)
    return positions[np.asarray(pc.fill_null(found, -1).to_numpy(), dtype=np.intp)]


def refused_outside(index: np.ndarray, column: CategoricalColumn, unknown: str) -> np.ndarray:
    """``index`` (``category_index``'s), or a refusal naming ``column`` where an entry lies outside its categories
    and ``unknown`` is ``"error"``."""
    if unknown == "error" and bool((index < 0).any()):
        raise TableRefusal(
            f"column {column.name!r} holds values outside the domain's categories (or missing entries it does not "
            'declare: "missing": true); add them to the domain or map them before fitting. To list them, run '
            f"{CHECK_COMMAND} on your table, on your machine."
        )
    return index


def output_categories(column: CategoricalColumn) -> tuple[Any, ...]:
    """The categories as the synthetic column holds them: the domain's own, except that a mix of strings and other
    values (numbers published beside ``OTHER_CATEGORY``, or a declared mix) becomes strings throughout, because
    synthcity's encoders (and sklearn's) need one type per column. Post-processing of public or released values."""
    if len({isinstance(category, str) for category in column.categories}) > 1:
        return tuple(str(category) for category in column.categories)
    return column.categories


def category_values(column: CategoricalColumn, index: np.ndarray) -> pd.Series:
    """The ``output_categories`` at positions ``index`` (the missing slot ``len(categories)`` gives NaN), with the
    type pandas infers from them; missing entries only where the column is not ``placed``."""
    choices = np.asarray(list(output_categories(column)) + [np.nan], dtype=object)
    if not column.placed:  # missing throughout, in an object column: a categorical column stays one
        return pd.Series(np.full(len(index), np.nan, dtype=object), dtype=object)
    if column.dtype is not None:
        return pd.Series(pd.Categorical(choices[index], dtype=column.dtype))
    return pd.Series(choices[index]).infer_objects()


def snapped_to_zero(column: NumericColumn, numbers: np.ndarray) -> np.ndarray:
    r"""Decoded floats with the value histogram's atom at zero restored: where the released histogram has a bin
    between 0 and :math:`\pm 2^{-16}` (``privacy.domain.columns.histogram_edges`` of a range with a bound at zero, the finest
    magnitude it resolves), a value decoded inside that bin is 0. Such a bin holds the exact zeros of a zero-inflated
    column (amounts, counts of events); decoded uniformly inside it they would read as tiny positive numbers, and a
    rule such as ``x > 0`` would see no zero at all. Post-processing of the released edges."""
    if column.integer or column.histogram is None:
        return numbers
    edges = np.asarray(column.histogram[0])
    finest = 2.0**LOG2_MIN
    zero_bin = bool((edges == 0.0).any()) and bool(np.isclose(np.abs(edges), finest, rtol=1e-9).any())
    if not zero_bin:
        return numbers
    return np.where(np.abs(numbers) < finest, 0.0, numbers)


def onto_atoms(column: NumericColumn, positions: np.ndarray, edges: np.ndarray, numbers: np.ndarray) -> np.ndarray:
    r"""Decoded floats with the column's released atoms restored (privacy.md, "The DP domain", stage 4): a value whose
    level :math:`[e_l, e_{l+1})` (its continuous position ``positions``' floor, ``edges`` the codec's level edges)
    holds atoms :math:`a_1 < \dots < a_k` of noisy counts :math:`c_i` (negative ones as 0) goes to the atom whose share
    :math:`c_i / \sum c` of the level holds its fraction inside the level; other values are kept. Fine levels are
    narrower than a coded column's spacing where its records crowd, so a level holding an atom holds little else: the
    coded value comes back as itself, not spread over its level. A coded column's levels are its values already.
    Post-processing of released counts and public edges."""
    if column.integer or column.values or not column.atoms:
        return numbers
    values = np.array([value for value, _ in column.atoms])
    weights = np.maximum(np.array([count for _, count in column.atoms]), 0.0)
    atom_levels = np.clip(np.searchsorted(edges, values, side="right") - 1, 0, len(edges) - 2)
    levels = np.clip(np.floor(positions), 0, len(edges) - 2).astype(int)
    fractions = np.clip(positions - levels, 0.0, 1.0)
    restored = numbers.copy()
    for level in np.unique(atom_levels):
        inside, rows = atom_levels == level, levels == level
        total = float(weights[inside].sum())
        if total <= 0 or not rows.any():
            continue
        bounds = np.cumsum(weights[inside]) / total
        which = np.minimum(np.searchsorted(bounds, fractions[rows], side="right"), int(inside.sum()) - 1)
        restored[rows] = values[inside][which]
    return restored


def in_precision(column: NumericColumn, numbers: np.ndarray) -> np.ndarray:
    """A decoded float column in its declared or released precision: each value rounded to the column's ``decimals``
    (through single precision where ``single``: float32's 3.2 is 3.200000047683716 in float64), a step inwards where
    that leaves its range (whose released ends need not be round), except the values on its atoms, which are exact
    already (an atom 0.125 stays 0.125 at two decimals); a coded column's values and a column without ``decimals``
    are untouched. Post-processing."""
    if column.decimals is None or column.integer or column.values:
        return numbers
    inside, step = np.clip(numbers, column.low, column.high), 10.0 ** -column.decimals
    rounded = np.round(inside, column.decimals)
    rounded = np.round(np.where(rounded > column.high, rounded - step, np.where(rounded < column.low, rounded + step,
                                                                                  rounded)), column.decimals)
    if column.single:
        with np.errstate(all="ignore"):
            rounded = rounded.astype(np.float32).astype(np.float64)
    exact = np.isin(numbers, [value for value, _ in column.atoms])
    kept = (rounded >= column.low) & (rounded <= column.high)  # a range narrower than a step keeps the number
    return np.where(exact, numbers, np.where(kept, rounded, inside))


def numeric_output(column: NumericColumn, numbers: np.ndarray, missing: np.ndarray) -> pd.Series | np.ndarray:
    """A decoded numeric column with the domain's dtype: int64 or float64, Int64 (pandas' nullable integers) or
    float64 with NaN where the column has missing entries; a float column's values in its histogram's zero bin are 0
    (``snapped_to_zero``) and the others in its precision (``in_precision``); a column the DP domain could not place is
    missing throughout (Int64 or float64)."""
    numbers = in_precision(column, snapped_to_zero(column, numbers))
    if not column.placed:  # a stated default range: no value of it is output
        missing = np.ones(len(numbers), dtype=bool)
    if column.integer:
        rounded = np.round(numbers)
        if column.missing or not column.placed:
            nullable = pd.Series(pd.array(np.where(missing, 0, rounded).astype(np.int64), dtype="Int64"))
            return nullable.where(~missing, pd.NA)
        return rounded.astype(np.int64)
    return np.where(missing, np.nan, numbers).astype(np.float64)


def coded_summary(column: NumericColumn) -> str:
    """A coded column's values as ``summary`` shows them: the first eight, and how many there are."""
    shown = [f"{int(value)}" if column.integer else f"{value:.6g}" for value in column.values[:8]]
    return "values " + ", ".join(shown) + (f", ... ({len(column.values)})" if len(column.values) > 8 else "")


def coded_column(name: str, spec: dict[str, Any], missing: bool) -> NumericColumn:
    """A declared coded column (``{"type": "numeric", "values": [..]}``): its values in increasing order, integer when
    all are ints (bools refused), its bounds their least and greatest (a single value v: [v, v + 1])."""
    values = list(spec["values"]) if isinstance(spec["values"], (list, tuple, np.ndarray)) else spec["values"]
    if not isinstance(values, list) or not values or not all(
            isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_)) and math.isfinite(value)
            for value in values):
        raise ValueError(f"column {name!r}: \"values\" must be a non-empty list of finite numbers (numpy's too), got "
                         f"{spec['values']!r}.")
    if "low" in spec or "high" in spec:
        raise ValueError(f"column {name!r}: declare \"values\" or \"low\" and \"high\", not both (the values fix the "
                         "range).")
    integer = all(isinstance(value, numbers.Integral) for value in values)
    ordered = tuple(sorted({float(value) for value in values}))
    high = ordered[-1] if len(ordered) > 1 else ordered[0] + 1
    return NumericColumn(name, ordered[0], high, integer, missing=missing, values=ordered,
                         decimals=declared_decimals(name, spec, integer))


def declared_decimals(name: str, spec: dict[str, Any], integer: bool) -> int | None:
    """A numeric entry's ``"decimals"`` (None when absent); an integer column has none to declare."""
    decimals = spec.get("decimals")
    if decimals is not None and integer:
        raise ValueError(f"column {name!r}: an integer column has no decimals; drop \"decimals\" or declare it float.")
    return decimals


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
                values = coded_summary(column) if column.values else f"[{column.low:.6g}, {column.high:.6g}]"
                if column.decimals is not None and not column.integer and not column.values:
                    values += f" ({column.decimals} decimal{'' if column.decimals == 1 else 's'})"
                values = values if column.placed else UNPLACED
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
        """From ``{name: {"type": "numeric", "low": .., "high": .., "integer": bool}}``, ``{name: {"type": "numeric",
        "values": [..]}}`` (a coded column: its values, integer when all are ints; ``"low"`` and ``"high"`` then follow
        from them) or ``{name: {"type": "categorical", "categories": [..]}}`` entries, in column order, numeric ones
        with an optional ``"decimals": p`` (a float column's output rounded to p decimals); or the one-line form
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
            if kind == "numeric" and "values" in spec:
                columns.append(coded_column(name, spec, missing))
            elif kind == "numeric":
                low, high, integer = float(spec["low"]), float(spec["high"]), bool(spec.get("integer", False))
                columns.append(NumericColumn(name, low, high, integer, missing=missing, decimals=declared_decimals(name, spec, integer)))
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
        ones), with its atoms, its coded values (where the column declares none) and its output's decimals (where it
        declares none). The source names both."""
        by_name = {column.name: column for column in released.columns}
        columns: list[Column] = []
        for name in order:
            declared = next((column for column in self.columns if column.name == name), None)
            if declared is None:
                columns.append(by_name[name])
            elif isinstance(declared, NumericColumn) and isinstance(by_name.get(name), NumericColumn):
                released_column = by_name[name]
                assert isinstance(released_column, NumericColumn)
                precision = ({} if declared.decimals is not None else
                             {"decimals": released_column.decimals, "single": released_column.single})
                columns.append(dataclasses.replace(declared, histogram=released_column.histogram,
                                                   atoms=released_column.atoms,
                                                   values=declared.values or released_column.values, **precision))
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
            decimals, single = release.decimals.get(name, (None, False))
            columns.append(NumericColumn(name, low, high, integer, release.histograms.get(name),
                                         atoms=release.atoms.get(name, ()), values=release.coded.get(name, ()),
                                         decimals=decimals, single=single))
        for name, kind in release.kinds.items():
            missing, placed = release.missing.get(name, False), release.placed.get(name, True)
            if kind == "categorical":
                columns.append(CategoricalColumn(name, release.categories[name], missing, placed))
                continue
            low, high = release.bounds[name]
            if kind == "integer":  # integers in the bins [low, high) lie in [ceil(low), ceil(high) - 1]
                low, high = math.ceil(low), math.ceil(high) - 1
            high = high if high > low else low + 1
            decimals, single = release.decimals.get(name, (None, False))
            columns.append(NumericColumn(name, low, high, kind == "integer", release.histograms.get(name), missing, placed,
                                         release.atoms.get(name, ()), release.coded.get(name, ()), decimals, single))
        source = f"differentially private domain (epsilon = {release.epsilon:.4g}, delta = {release.delta:.3g})"
        return cls(tuple(columns), source)


SMALLEST_POSITIVE_FLOAT = 2.0**LOG2_MIN
"""The smallest positive value of the DP domain's float partition (``privacy.domain.columns.log_bin_edges``): where a
positive column's released lower bound is not positive, its range starts here."""


@dataclass(frozen=True)
class PublicRules:
    """What a data source's contract says of a table's columns, a public value handed to ``recipes.tables.settle_table``
    (privacy.md, "synthcity loaders"): ``positive``, a column whose values are all present and positive (a survival
    table's time to event), described in messages as ``role``, positive because of ``reason``. No rule: the domain as
    it is."""

    positive: str | None = None
    role: str = "a positive column"
    reason: str = "the data source refuses values that are not > 0"

    def apply(self, domain: TabularDomain, declared: set[str]) -> TabularDomain:
        """``domain`` (the declared one before any release, the final one after) under the rules, ``declared`` the
        columns a public domain gives. The positive column's range starts at the partition's smallest positive edge (1
        for an integer column, ``SMALLEST_POSITIVE_FLOAT`` for a float one: public constants, never the data's
        minimum) where a released bound is lower, and it has no missing level (a released one is noise: the data
        source refuses missing values); a declared range that is not positive, or declared missing, is an error raised
        before any release; a released positive column the DP domain could not place (no released evidence of its
        values: every generated value would be missing) is an error that asks for its public range. Post-processing
        of the public or released domain: it reads no record."""
        name = self.positive
        if name is None:
            return domain
        if name not in domain.names and name in declared:
            raise ValueError(f"the declared domain has no column {name!r}.")
        if name not in domain.names:  # a partial declared domain without it: the released one is checked later
            return domain
        column = self.numeric_column(domain)
        if not column.placed:
            raise ValueError(
                f"the DP domain could not place column {name!r} ({self.role}) at this budget: no released evidence of "
                f"its values, so every generated value would be missing ({self.reason}). Declare its public range, "
                f"e.g. domain={{{name!r}: {{'type': 'numeric', 'low': 1, 'high': 1000}}}} with bounds known without "
                "the data (and 'integer': True for whole numbers), or fit with a larger epsilon or more rows."
            )
        if column.missing and name in declared:
            raise ValueError(f"the domain declares column {name!r} ({self.role}) missing, but its values are all present "
                             f"({self.reason}); declare it without \"missing\".")
        if column.low > 0 and not column.missing:
            return domain
        if column.low <= 0 and name in declared:
            raise ValueError(
                f"the domain declares column {name!r} ({self.role}) from {column.low:g}, but its values are positive "
                f"({self.reason}); declare a positive lower bound."
            )
        positive = dataclasses.replace(column, missing=False)
        if column.low <= 0:
            low = 1.0 if column.integer else SMALLEST_POSITIVE_FLOAT
            high = max(column.high, low + 1.0 if column.integer else 2 * low)
            positive = dataclasses.replace(positive, low=low, high=high)
        columns = tuple(positive if other.name == name else other for other in domain.columns)
        return dataclasses.replace(domain, columns=columns)

    def numeric_column(self, domain: TabularDomain) -> NumericColumn:
        """The positive column of ``domain``, which must be numeric."""
        for column in domain.columns:
            if column.name == self.positive:
                if isinstance(column, CategoricalColumn):
                    raise ValueError(
                        f"the domain makes column {self.positive!r} ({self.role}) categorical; its values need a numeric "
                        "range: declare it numeric in a public domain (domain=...)."
                    )
                return column
        raise ValueError(f"the domain has no column {self.positive!r} ({self.role}); add it to the domain.")

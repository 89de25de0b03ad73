r"""Tables <-> records, from a domain description that is public or paid for (``adapters.table_domain``).

``TabularCodec`` maps a row to a record in the unit ball,

.. math:: y = \frac{1}{\sqrt{m + c}} \big(u_1, \dots, u_m, e^{(1)}, \dots, e^{(c)}\big), \qquad
          u_i = 2 \frac{\mathrm{clip}(x_i) - \mathrm{low}_i}{\mathrm{high}_i - \mathrm{low}_i} - 1 \in [-1, 1],

with :math:`e^{(j)}` the one-hot vector of the j-th categorical column (one more slot for a missing entry where
the column has a missing level; the ``OTHER_CATEGORY`` slot, or zero, for a category outside the domain) and, for
a numeric column with a missing level, the block :math:`(u_i, m_i)`: (0, 1) for a missing entry, :math:`(u_i, 0)`
otherwise, so that :math:`\|y\| \le 1` for every row: the map is fixed by the domain, acts on each row alone,
and needs no budget. Decoding clips, rounds integer columns, takes the argmax of each one-hot block and
restores the column order, with dtypes from the domain (never from the private table). ``MarginalTableCodec`` maps
a row to level codes for the marginal release instead. ``check_table`` lists, for the user on their own machine, what
of a table does not fit a domain.

The codecs' resolution (``table_resolution``, ``needs_histogram``): how many levels a column gets, from the table's
size and the noise of the release that measures it (public or released numbers only; privacy.md, "Aggregate releases:
marginals").
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import torch

from synthcity_dpswf.adapters.table_domain import (
    CategoricalColumn,
    DomainSpec,
    NumericColumn,
    TabularDomain,
    category_index,
    category_values,
    from_position,
    numeric_output,
    numeric_values,
    on_values,
    onto_atoms,
    to_position,
)
from synthcity_dpswf.math.histograms import equal_mass_starts, project_onto_simplex
from synthcity_dpswf.privacy.counts import (
    StringCodes, TableRefusal, category_key, cell_index, missing_mask, number_mask, string_codes,
)
from synthcity_dpswf.privacy.domain import DomainRelease

ENCODER_LEVELS = 100
"""Levels of the rank map ``TabularCodec`` applies to a column with a released histogram (u = its rank in [-1, 1])."""


class TabularCodec:
    """Encode rows of a table into unit-ball records and decode records back (module docstring).

    ``unknown`` says what to do with a value the domain does not describe (a category outside a categorical
    column's list, a missing or non-numeric entry of a numeric column): ``"error"`` for a public domain (the
    table lies outside it, which ``fit`` reports before any release), ``"first"`` for a released domain, which
    drops rare categories and decides kinds by noisy counts: the category gets the zero one-hot block, the number
    the column's lower bound (a per-record map, never an error that one record could cause).
    """

    def __init__(self, domain: TabularDomain, unknown: str = "error") -> None:
        if unknown not in ("error", "first"):
            raise ValueError(f"unknown must be 'error' or 'first', got {unknown!r}.")
        self.domain = domain
        self.unknown = unknown
        self.numeric = [c for c in domain.columns if isinstance(c, NumericColumn)]
        self.categorical = [c for c in domain.columns if isinstance(c, CategoricalColumn)]
        self.scale = 1.0 / math.sqrt(len(self.numeric) + len(self.categorical))

    @property
    def public_description(self) -> str:
        """What this codec assumes public: the column names and the domain (``TabularDomain.public_description``)."""
        return self.domain.public_description()

    @property
    def dim(self) -> int:
        """Record dimension: one per numeric column (two with a missing level), one per category (and one for a
        categorical column's missing level)."""
        return sum(1 + c.missing for c in self.numeric) + sum(len(c.categories) + c.missing for c in self.categorical)

    def encode(self, frame: pd.DataFrame, factorized: Callable[[str], StringCodes | None] | None = None) -> torch.Tensor:
        """Records ``(n, dim)`` with norm <= 1 for the rows of ``frame`` (which must hold the domain's columns). A
        numeric column with a missing level is the block (u, m): (0, 1) for a missing entry, (u, 0) otherwise.
        ``factorized``: a column's ``string_codes`` by name where already computed
        (``privacy.counts.FrameCounts.strings``)."""
        check_columns(self.domain, frame)
        blocks = []
        for column in self.numeric:
            values = numeric_values(frame[column.name], column, self.unknown)
            missing = np.isnan(values)
            if column.values:  # a coded column: u is its nearest value's place among its values
                edges = column.value_edges()
                unit = (np.floor(to_position(values, edges)) + 0.5) / (len(edges) - 1)
            elif column.histogram is None:
                unit = (np.clip(values, column.low, column.high) - column.low) / (column.high - column.low)
            else:  # the released quantiles: u is the value's (estimated) rank
                edges = column.level_edges(ENCODER_LEVELS)
                unit = to_position(values, edges) / (len(edges) - 1)
            coordinate = np.where(missing, 0.0, 2 * unit - 1)
            blocks.append(np.stack([coordinate, missing.astype(float)], axis=1) if column.missing else coordinate[:, None])
        for column in self.categorical:
            factorize = string_codes if factorized is None else lambda _, name=column.name: factorized(name)
            index = category_index(frame[column.name], column, self.unknown, factorize)
            one_hot = np.zeros((len(frame), len(column.categories) + column.missing))
            rows = np.flatnonzero(index >= 0)
            one_hot[rows, index[rows]] = 1.0
            blocks.append(one_hot)
        return torch.tensor(np.hstack(blocks) * self.scale, dtype=torch.float32)

    def decode(self, records: torch.Tensor) -> pd.DataFrame:
        """A table from records: clipped, rounded (integer columns), argmax categories (the missing slot included),
        missing where a numeric column's m exceeds 1/2, the domain's column order and dtypes
        (``numeric_output``, the categories' own type), never the private table's."""
        values = records.detach().cpu().double().numpy() / self.scale
        decoded: dict[str, Any] = {}
        position = 0
        for column in self.numeric:
            unit = np.clip((values[:, position] + 1) / 2, 0.0, 1.0)
            if column.values:  # the value of the level u falls in
                number = coded_output(column, unit * len(column.values))
            elif column.histogram is None:
                number = column.low + unit * (column.high - column.low)
            else:
                edges = column.level_edges(ENCODER_LEVELS)
                number = np.clip(from_position(unit * (len(edges) - 1), edges), column.low, column.high)
            missing = values[:, position + 1] > 0.5 if column.missing else np.zeros(len(values), dtype=bool)
            decoded[column.name] = numeric_output(column, number, missing)
            position += 1 + column.missing
        for column in self.categorical:
            width = len(column.categories) + column.missing
            decoded[column.name] = category_values(column, values[:, position : position + width].argmax(axis=1))
            position += width
        return pd.DataFrame({name: decoded[name] for name in self.domain.names})


class MarginalTableCodec:
    r"""Rows <-> level codes for the marginal release (``privacy.mechanisms.marginal``), fixed by the domain.

    Column j gets :math:`K_j` fine levels: a categorical column its categories; a numeric column the levels of
    ``NumericColumn.level_edges(fine_bins)``: one per integer when an integer range holds at most ``fine_bins`` of
    them, else ``fine_bins`` levels at the quantiles of the column's released histogram (equal estimated mass), or of
    equal width over the range when the domain has no histogram. Values outside a numeric range are clipped to it
    (a per-row map). Categories outside a categorical column's list, and missing or non-numeric entries of a numeric
    column, are an error with ``unknown="error"`` (a public domain: the table is outside it), and a stated default
    with ``unknown="first"`` (a released domain, which drops rare categories and decides kinds by noisy counts):
    the column's ``OTHER_CATEGORY`` where the release gave it one, else its first level.

    Decoding reads continuous level positions (``MarginalParticleSpace.to_records``): the floor is the level, the
    fraction places a number inside its bin. Output dtypes come from the domain, never from the private table:
    int64 for integer columns, float64 for float columns, the categories' own type for categorical ones.
    """

    def __init__(self, domain: TabularDomain, fine_bins: int = 100, unknown: str = "error") -> None:
        if isinstance(fine_bins, bool) or not isinstance(fine_bins, int) or fine_bins < 1:
            raise ValueError(f"fine_bins must be an integer >= 1, got {fine_bins!r}.")
        if unknown not in ("error", "first"):
            raise ValueError(f"unknown must be 'error' or 'first', got {unknown!r}.")
        self.domain = domain
        self.fine_bins = fine_bins
        self.unknown = unknown
        self.edges: dict[str, np.ndarray] = {
            column.name: column.level_edges(fine_bins) for column in domain.columns if isinstance(column, NumericColumn)
        }
        self.missing: tuple[bool, ...] = tuple(column.missing for column in domain.columns)
        """Which columns have a missing level: their last one (``MarginalLayout``'s ``missing``)."""
        self.levels: tuple[int, ...] = tuple(
            (len(column.categories) if isinstance(column, CategoricalColumn) else len(self.edges[column.name]) - 1)
            + column.missing
            for column in domain.columns
        )

    @property
    def public_description(self) -> str:
        """What this codec assumes public: the column names and the domain (``TabularDomain.public_description``)."""
        return self.domain.public_description()

    def equal_mass_runs(self, coarse_bins: int) -> dict[int, tuple[int, ...]]:
        """The coarse levels of the integer columns with one fine level per integer, more of them than ``coarse_bins``
        and a released value histogram (the DP domain's, stage 3): runs of about equal mass made of whole bins of the
        histogram (``math.histograms.equal_mass_starts`` over its bins: at most ``coarse_bins`` runs, a missing level
        alone in the last), ``{column position: first fine level of each run}``; likewise a coded column of more values
        than ``coarse_bins`` with a released histogram, each value's level a unit (its mass the histogram's over the
        level: ``level_masses``). Equal-length runs of such a column
        put a count's zeros with its small values (randhie's declared visits 0-77: 0 to 4 in one level), and with them
        the dependence of having any on the other columns. A run never splits a bin: the histogram says nothing of how
        a bin's mass lies among its integers (spread evenly, Adult's 40 hours a week would be three runs of one hour).
        Post-processing of the domain release (privacy.md, "Coarse levels at released quantiles")."""
        runs: dict[int, tuple[int, ...]] = {}
        for position, column in enumerate(self.domain.columns):
            if not isinstance(column, NumericColumn) or column.histogram is None:
                continue
            n_runs = coarse_bins - column.missing
            if column.values and len(column.values) > n_runs >= 1:  # a coded column: each value's level is a unit
                masses = level_masses(column.histogram, self.edges[column.name])
                starts = tuple(int(group) for group in equal_mass_starts(torch.tensor(masses), n_runs))
                runs[position] = starts + ((len(column.values),) if column.missing else ())
                continue
            if not column.integer or column.values:
                continue
            integers = self.edges[column.name][:-1]
            if len(integers) != column.span[1] - column.span[0] or len(integers) <= n_runs or n_runs < 1:
                continue
            edges = np.asarray(column.histogram[0], dtype=float)
            bins = cell_index(integers, edges)  # each integer's bin, as the DP domain counted it
            first = np.flatnonzero(np.diff(bins, prepend=bins[0] - 1))  # the first integer of each bin
            masses = np.add.reduceat(integer_masses(column.histogram, integers), first)
            starts = tuple(int(first[group]) for group in equal_mass_starts(torch.tensor(masses), n_runs))
            runs[position] = starts + ((len(integers),) if column.missing else ())
        return runs

    def one_way_measurements(self, release: DomainRelease) -> dict[int, tuple[np.ndarray, np.ndarray]]:
        """The DP domain's measurements of columns' one-way marginals on this codec's fine levels (``DomainRelease.
        one_way``): ``{column position: (noisy counts (K_j,), noise stds (K_j,))}`` for every column whose levels are
        exactly the measured ones (its released categories, or one level per integer), in the codec's level order.
        Post-processing of the domain release (privacy.md, "One budget")."""
        measurements: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        for position, column in enumerate(self.domain.columns):
            measured = release.one_way_measurement(column.name)
            if measured is None:
                continue
            levels, counts, stds = measured
            if isinstance(column, CategoricalColumn):
                expected: list[object] = list(column.categories)
            elif column.values:  # a coded column's levels: its values (ints in an integer column)
                expected = [int(value) if column.integer else value for value in column.values]
            elif column.integer and len(self.edges[column.name]) - 1 == column.span[1] - column.span[0]:
                expected = [int(value) for value in self.edges[column.name][:-1]]
            else:
                continue
            if column.missing:
                expected.append(None)
            if len(levels) == len(expected) and all(
                (a is None and b is None) or (a is not None and b is not None and type(a) is type(b) and a == b)
                for a, b in zip(levels, expected)
            ):
                measurements[position] = (counts, stds)
        return measurements

    def encode(self, frame: pd.DataFrame, factorized: Callable[[str], StringCodes | None] | None = None) -> torch.Tensor:
        """Level codes ``(n, d)`` (float32 holding integers) of the rows of ``frame``; ``factorized``: a column's
        ``string_codes`` by name where already computed (``privacy.counts.FrameCounts.strings``)."""
        check_columns(self.domain, frame)
        codes = np.zeros((len(frame), len(self.domain.columns)), dtype=np.float32)  # exact: codes are small integers
        for position, column in enumerate(self.domain.columns):
            codes[:, position] = self.column_codes(position, frame[column.name], self.unknown, factorized)
        return torch.from_numpy(codes)

    def check(self, frame: pd.DataFrame, factorized: Callable[[str], StringCodes | None] | None = None) -> None:
        """Raise where ``encode`` would (a row outside the domain, ``unknown="error"``), without making the codes."""
        check_columns(self.domain, frame)
        for column in self.domain.columns:
            if isinstance(column, CategoricalColumn):
                factorize = string_codes if factorized is None else lambda _, name=column.name: factorized(name)
                category_index(frame[column.name], column, self.unknown, factorize)
            else:
                numeric_values(frame[column.name], column, self.unknown)

    def column_codes(self, position: int, values: pd.Series, unknown: str,
                     factorized: Callable[[str], StringCodes | None] | None = None) -> np.ndarray:
        """The level codes of one column's ``values`` (column ``position`` of the domain); ``unknown`` as the codec's
        (``"error"``: a category outside the domain raises); ``factorized`` as ``encode``'s."""
        column = self.domain.columns[position]
        if isinstance(column, CategoricalColumn):
            factorize = string_codes if factorized is None else lambda _, name=column.name: factorized(name)
            return np.maximum(category_index(values, column, unknown, factorize), 0)
        numbers = numeric_values(values, column, unknown)
        missing = np.isnan(numbers)
        # The level, floor(to_position(...)): the cell of the number clipped into the column's range
        level = cell_index(np.clip(np.where(missing, column.low, numbers), column.low, column.high), self.edges[column.name])
        return np.where(missing, self.levels[position] - 1, level)  # the missing level is the last

    def decode(self, positions: torch.Tensor) -> pd.DataFrame:
        """A table from continuous level positions ``(n, d)`` (floor = level), with the domain's dtypes."""
        values = positions.detach().cpu().double().numpy()
        decoded: dict[str, Any] = {}
        for position, (column, n_levels) in enumerate(zip(self.domain.columns, self.levels)):
            level = np.clip(np.floor(values[:, position]), 0, n_levels - 1)
            if isinstance(column, CategoricalColumn):
                decoded[column.name] = category_values(column, level.astype(int))
                continue
            missing = level == n_levels - 1 if column.missing else np.zeros(len(values), dtype=bool)
            places = np.where(missing, 0.0, values[:, position])
            if column.values:  # a coded column's level is its value, exactly
                decoded[column.name] = numeric_output(column, coded_output(column, places), missing)
                continue
            number = onto_atoms(column, places, self.edges[column.name], from_position(places, self.edges[column.name]))
            if column.integer:
                low, high = column.span
                number = np.clip(np.floor(number), low, high - 1)
            decoded[column.name] = numeric_output(column, np.clip(number, *column.span), missing)
        return pd.DataFrame({name: decoded[name] for name in self.domain.names})


def coded_output(column: NumericColumn, positions: np.ndarray) -> np.ndarray:
    """A coded column's values at continuous level ``positions`` (floor = level, one level per value): exactly its
    values, never a number between them. Post-processing."""
    levels = np.clip(np.floor(positions), 0, len(column.values) - 1).astype(int)
    return np.asarray(column.values, dtype=float)[levels]


def integer_masses(histogram: tuple[tuple[float, ...], tuple[float, ...]], integers: np.ndarray) -> np.ndarray:
    r"""Each integer's estimated share of a released value histogram ``(edges, noisy counts)``: ``level_masses`` over
    :math:`[v - 1/2, v + 1/2)` for each integer v of ``integers``. Post-processing."""
    return level_masses(histogram, np.append(integers, integers[-1] + 1) - 0.5)


def level_masses(histogram: tuple[tuple[float, ...], tuple[float, ...]], levels: np.ndarray) -> np.ndarray:
    """Each level's estimated share of a released value histogram ``(edges, noisy counts)``, the levels between
    consecutive ``levels`` edges: the counts projected onto the simplex (as the flows read counts), spread uniformly
    inside their bins, integrated over each level. Post-processing."""
    edges, counts = np.asarray(histogram[0], dtype=float), np.asarray(histogram[1], dtype=float)
    total = max(float(counts.clip(min=0).sum()), 1.0)
    shares = project_onto_simplex(torch.tensor(counts / total, dtype=torch.float64)[None])[0].numpy()
    cumulative = np.concatenate([[0.0], np.cumsum(shares)])
    return np.diff(np.interp(levels, edges, cumulative))


def check_columns(domain: TabularDomain, frame: pd.DataFrame) -> None:
    """Refuse a table that lacks some of the domain's columns (its column names are public)."""
    missing = [name for name in domain.names if name not in frame.columns]
    if missing:
        raise TableRefusal(f"the table lacks the domain's columns {missing}; pass a domain for this table.")


CHECK_COLUMNS = ["column", "problem", "rows", "at fit", "examples"]
"""The columns of ``check_table``'s report."""


def check_table(frame: pd.DataFrame, domain: DomainSpec, max_one_hot: int = 20) -> pd.DataFrame:
    """What of ``frame`` does not fit ``domain`` (a ``TabularDomain``, a description dict or a JSON path, as the
    plugins' ``domain=``): one row per column and problem, with ``CHECK_COLUMNS``: the column, the problem (a column
    the table lacks, categories not declared, missing entries where the column does not declare them, non-numeric
    entries of a numeric column, values below or above a numeric range, a column the domain leaves out), the number
    of rows concerned, what ``fit`` does with them ("refused": ``fit`` raises before any release; "clipped to the
    range"; "DP domain": the column's domain is released from the budget) and up to five of the values, the most
    frequent first. An empty report: the table fits the domain.

    Meant to run on your own table, on your own machine, outside any release: it is not differentially private and
    prints values of the table, which no error or warning of the plugins does (docs/privacy.md). Not to be confused with
    ``privacy.counts.check_table``, the check ``fit`` runs, which never shows a value."""
    parsed = TabularDomain.parse(domain, max_one_hot)
    found: list[dict[str, Any]] = []

    def add(column: str, problem: str, entries: pd.Series, at_fit: str) -> None:
        if len(entries):
            counts = entries.astype(object).map(repr).value_counts()
            shown = ", ".join(f"{value} ({count})" for value, count in counts.head(5).items())
            found.append({"column": column, "problem": problem, "rows": len(entries), "at fit": at_fit,
                          "examples": shown + (f", ... ({len(counts)} distinct)" if len(counts) > 5 else "")})

    for column in parsed.columns:
        if column.name not in frame.columns:
            found.append({"column": column.name, "problem": "not in the table", "rows": len(frame), "at fit": "refused",
                          "examples": ""})
            continue
        values = frame[column.name]
        missing = missing_mask(values)
        if not column.missing:
            add(column.name, 'missing entries, not declared ("missing": true)', values[missing], "refused")
        if isinstance(column, CategoricalColumn):
            declared = {category_key(category) for category in column.categories}
            outside = np.array([category_key(value) not in declared for value in values.to_numpy(dtype=object)], dtype=bool)
            add(column.name, "categories not declared", values[outside & ~missing], "refused")
            continue
        numbers = number_mask(values)
        add(column.name, "non-numeric entries in a numeric column", values[~numbers & ~missing], "refused")
        as_float = pd.to_numeric(values.where(numbers), errors="coerce")
        if column.values:
            present = as_float.to_numpy(dtype=float, na_value=np.nan)
            outside = numbers & ~np.isnan(present)
            outside[outside] = ~on_values(present[outside], column.values)
            add(column.name, "numbers not among the declared values", values[outside], "refused")
            continue
        add(column.name, f"values below the range's low {column.low:g}", values[numbers & (as_float < column.low).to_numpy()],
            "clipped to the range")
        add(column.name, f"values above the range's high {column.high:g}",
            values[numbers & (as_float > column.high).to_numpy()], "clipped to the range")
    for name in frame.columns:
        if name not in parsed.names:
            found.append({"column": name, "problem": "not in the domain", "rows": len(frame), "at fit": "DP domain",
                          "examples": ""})
    return pd.DataFrame(found, columns=CHECK_COLUMNS)


def needs_histogram(column: object, bins: int) -> bool:
    """Whether a declared column's levels need its released value histogram: a float column (fine levels at its
    quantiles), or an integer range of more than ``bins`` integers: fine levels at its quantiles where ``bins`` is the
    fine levels' most, coarse levels at them where it is the coarse levels' most (a named target's:
    ``MarginalTableCodec.equal_mass_runs``). Narrower integer ranges get one level per integer, a coded column one per
    declared value, categories their own."""
    if not isinstance(column, NumericColumn) or column.histogram is not None or column.values:
        return False
    return not column.integer or math.floor(column.high) - math.ceil(column.low) + 1 > bins


CELL_SIGNAL = 1.0
"""A measured cell's expected count should reach this many noise standard deviations (``table_resolution``). Chosen
on data we do not report: synthcity's XGB performance of DPSWflow at epsilon = 3 on iris and wine (means of 6 fits)
and the 2-way TV of a synthetic 4,000 x 20 stand-in of a user's table at epsilon = 1: of 0.1, 0.25, 0.5, 1 and 2
stds, 1 was the best on wine, near the best on iris and among the best on the stand-in (a smaller signal keeps levels
whose counts are noise, a larger one fewer levels than the data need)."""
FINE_LEVELS = (8, 100)
COARSE_LEVELS = (2, 16)
SMALL_TABLE_COARSE = 8


def table_resolution(n_records: float | None, count_noise: float) -> tuple[int, int]:
    """Fine and coarse levels per column for the marginal release, from the expected table size n (public, or
    released under add/remove) and the noise std of a measured count (``count_noise``, sensitivity included): a
    fine one-way cell of n / K records and a two-way cell of n / K^2 should hold ``CELL_SIGNAL`` noise stds, within
    ``FINE_LEVELS`` and ``COARSE_LEVELS``; below 1,000 rows at most ``SMALL_TABLE_COARSE`` coarse levels (chosen on
    iris and wine, synthcity's XGB performance of DPSWflow at epsilon = 3 over 4, 8 and 16 levels: 8 the best on wine
    and as good as 4 on iris, 16 worse on both). Unknown n (add/remove with every column declared): the most.

    On Adult (48,842 rows, 15 columns, epsilon = 1) the rule keeps 100 fine and 16 coarse levels, the settings chosen
    on raw Adult's training split; on 4,000 rows of 20 columns at epsilon = 0.5 it measures 2-way tables of 5 x 5
    cells, each holding about 160 records against noise of about 150.
    """
    if n_records is None:
        return FINE_LEVELS[1], COARSE_LEVELS[1]
    ratio = n_records / (CELL_SIGNAL * count_noise)
    fine = int(min(max(math.floor(ratio), FINE_LEVELS[0]), FINE_LEVELS[1]))
    coarse = int(min(max(math.floor(math.sqrt(ratio)), COARSE_LEVELS[0]), COARSE_LEVELS[1]))
    if n_records < 1000:
        coarse = min(coarse, SMALL_TABLE_COARSE)
    return fine, coarse

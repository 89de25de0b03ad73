"""A private table's entries as the privacy layer reads them: which tables the guarantee covers (the domain of valid
datasets, privacy.md: ``check_table``, checked before any private computation, ``TableRefusal``) and what the DP
domain counts of a valid one, stage by stage (privacy.md, "The DP domain"; "Tables on Dask"). Both rest on the same
per-entry tests (``is_finite_number``, ``is_missing``, ``all_strings``).

A refusal names the column, the reason and at most the column's dtype and the Python types of its entries outside
the domain, never an entry's value. The counts are exact integers, each a sum over records of a per-record
contribution, computed here and nowhere else, so that a table in one frame (``FrameCounts``) and a table in
partitions (``plugins.partitioned``, whose partitions each use ``FrameCounts`` and whose sums are these counts) give
the same sufficient statistics. Noise is added by the caller (``privacy.domain``), once, to the totals.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    import torch

    from synthcity_dpswf.privacy.mechanisms import ReleaseMechanism


def is_finite_number(value: object) -> bool:
    """Whether one entry is a finite number (an int or float, numpy's included, not a bool)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:  # an int beyond float range
        return False


def is_missing(value: object) -> bool:
    """Whether one entry is missing: None, NaN, pandas' NA or NaT (privacy.md, "Missing values")."""
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):  # a list or an array is not one missing entry
        return False


def missing_mask(values: pd.Series) -> np.ndarray:
    """Which entries are missing (``is_missing``, entry by entry; pandas' own test is the same per entry)."""
    return np.asarray(values.isna(), dtype=bool)


def all_strings(values: pd.Series) -> bool:
    """Whether every entry that is not missing is a string: a pandas string dtype (Dask's default for text, Arrow
    backed), or an object column that pandas' type inference (in C: no per-entry Python) finds all strings."""
    if isinstance(values.dtype, pd.StringDtype):
        return True
    return values.dtype == object and pd.api.types.infer_dtype(values, skipna=True) == "string"


def is_numbers(values: pd.Series) -> bool:
    """Whether a column's dtype holds numbers only (``number_mask``'s numeric path: not bools, not categories)."""
    return (pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values)
            and not isinstance(values.dtype, pd.CategoricalDtype))


def number_mask(values: pd.Series) -> np.ndarray:
    """Which entries are finite numbers (``is_finite_number``): a per-record test (numeric dtypes and columns of
    strings take a vectorised path with the same result)."""
    if all_strings(values):
        return np.zeros(len(values), dtype=bool)
    if pd.api.types.is_bool_dtype(values) or isinstance(values.dtype, pd.CategoricalDtype):
        return np.array([is_finite_number(value) for value in values.to_numpy(dtype=object)], dtype=bool)
    if is_numbers(values):
        return np.isfinite(values.to_numpy(dtype=float, na_value=np.nan))
    return np.array([is_finite_number(value) for value in values], dtype=bool)


class TableRefusal(ValueError):
    """A table refused before any release (outside the domain of valid datasets, or outside a domain's columns,
    categories or ranges): its message names the column and the reason, never an entry's value, so that it may be
    shown wherever it is raised (a Dask worker's log, the command line)."""


def is_valid_entry(value: object) -> bool:
    """An entry inside the domain of valid datasets (privacy.md): a string, a bool, a finite number or missing."""
    return isinstance(value, (str, bool, np.bool_)) or is_finite_number(value) or is_missing(value)


def check_table(frame: pd.DataFrame, min_rows: int = 2) -> None:
    """Reject a table outside the domain of valid datasets (privacy.md) before any private computation: fewer than
    ``min_rows`` rows (0 for one partition of a partitioned table, whose size is the total's), no columns or
    duplicated names, a column of a type no domain describes, infinite values, entries that are not strings, bools,
    finite numbers or missing. The message names the column and the reason, never a value."""
    if frame.shape[1] == 0:
        raise TableRefusal("the table has no columns; pass a table with at least one column.")
    if len(frame) < min_rows:
        raise TableRefusal(f"the table has {len(frame)} row(s); differential privacy over fewer than 2 rows is meaningless.")
    duplicated = sorted({str(name) for name in frame.columns[frame.columns.duplicated()]})
    if duplicated:
        raise TableRefusal(f"the table has duplicated column names {duplicated}; rename them.")
    for column in frame.columns:
        values = frame[column]
        kind = values.dtype.kind
        if kind in "mMcV":  # datetimes, timedeltas, complex, raw bytes
            raise TableRefusal(
                f"column {column!r} has dtype {values.dtype}, which no domain describes; convert it to numbers (a "
                "datetime to a decimal year: `s.dt.year + (s.dt.dayofyear - 1) / 365.25`) or to categories."
            )
        if kind in "iuf" and bool(np.isinf(values.to_numpy(dtype=float, na_value=np.nan)).any()):
            raise TableRefusal(f"column {column!r} has infinite values; clip or drop them before fitting.")
        if (kind == "O" and not all_strings(values)) or isinstance(values.dtype, pd.CategoricalDtype):
            odd = {type(value).__name__ for value in values.to_numpy(dtype=object) if not is_valid_entry(value)}
            if odd:
                raise TableRefusal(
                    f"column {column!r} holds entries of type {sorted(odd)}; a record's entries must be strings, bools "
                    "or finite numbers: convert or drop them before fitting."
                )


def category_key(value: object) -> tuple[str, object]:
    """The key a category is counted and looked up by: its kind and canonical value, so that 1, 1.0, True and
    numpy's 1 (equal under Python's ``==`` and hash) are told apart by kind (bool vs number) and merged only where
    they are the same number, whichever record comes first; a string and numpy's ``str_`` of it are one key (the
    column's fast path for strings, ``FrameCounts.value_counts``, counts them as one, and which path runs may not
    re-key the others: one record would move every count)."""
    if isinstance(value, (bool, np.bool_)):
        return ("bool", bool(value))
    if isinstance(value, str):  # numpy's str_ too: one key per string, as pandas' value_counts has it
        return ("str", str(value))
    if is_finite_number(value):
        number = float(value)
        return ("number", int(number) if number.is_integer() else number)
    return (type(value).__name__, value)


ATOM_DIGITS = 4
"""A float column's numbers with at most this many significant decimal digits are counted by exact value (the DP
domain's stage 4, its atoms: privacy.md, "The DP domain"): coded floats such as 17.5, 22, 0.31 or 3.95 are, a
measured float such as 0.123456789 is not. A per-record test of the value alone."""
def atom_mask(numbers: np.ndarray, digits: int = ATOM_DIGITS) -> np.ndarray:
    """Which finite ``numbers`` are counted by exact value (stage 4), a test of each value alone: a number with at most
    ``digits`` significant digits (it equals itself rounded to that many; 0 does), or the single-precision image of
    such a number (3.200000047683716, the float32 3.2 a table stored in float32 and read back as float64 holds)."""
    numbers = np.asarray(numbers, dtype=float)
    with np.errstate(all="ignore"):
        magnitude = np.abs(numbers)
        exponent = np.floor(np.log10(np.where(magnitude > 0, magnitude, 1.0)))
        places = digits - 1 - exponent  # decimal places kept (negative: tens, hundreds, ...)
        scale = 10.0 ** np.abs(places)
        rounded = np.where(places >= 0, np.round(numbers * scale) / scale, np.round(numbers / scale) * scale)
        short = (rounded == numbers) | (numbers == 0)
        return short | (rounded.astype(np.float32).astype(np.float64) == numbers)


MAX_DECIMALS = 10
"""The precision partition (the DP domain's stage 4, privacy.md) tells apart numbers of 0 to this many decimals; a
number with more is in its last cell. Ten: a ratio printed to seven significant digits (0.0001090909) still has a
cell of its own, so its column is rounded where it ends rather than left at 17 digits."""
DECIMAL_CELLS = 2 * MAX_DECIMALS + 2
"""The precision partition's cells: d = 0..``MAX_DECIMALS`` decimals exactly (cells 0..10), the single-precision
image of a number of d = 1..``MAX_DECIMALS`` decimals (cells 11..20: 3.200000047683716 is float32's 3.2), more
decimals (cell 21)."""


def decimal_cells(numbers: np.ndarray) -> np.ndarray:
    """Each finite number's cell of the precision partition (``DECIMAL_CELLS``), a test of the value alone: the fewest
    d <= ``MAX_DECIMALS`` with round(x, d) within two units in the last place of x (cell d: 0.30000000000000004, the
    sum 0.1 + 0.2, has one decimal); else the fewest d with float32(round(x, d)) == x (cell ``MAX_DECIMALS`` + d); else
    the last cell."""
    numbers = np.asarray(numbers, dtype=float)
    cells = np.full(len(numbers), DECIMAL_CELLS - 1, dtype=np.int64)
    with np.errstate(all="ignore"):
        for places in range(MAX_DECIMALS, 0, -1):  # the fewest decimals win: written last
            cells[np.round(numbers, places).astype(np.float32).astype(np.float64) == numbers] = MAX_DECIMALS + places
        for places in range(MAX_DECIMALS, -1, -1):
            near = np.abs(np.round(numbers, places) - numbers) <= 2 * np.spacing(np.abs(numbers))
            cells[near] = places  # a decimal is never counted as an image
    return cells


def numbers_of(values: pd.Series) -> np.ndarray:
    """A column's finite numbers as floats (its other entries left out)."""
    if is_numbers(values):
        numbers = values.to_numpy(dtype=float, na_value=np.nan)  # number_mask's numeric path, read once
        return numbers[np.isfinite(numbers)]
    return values[number_mask(values)].to_numpy(dtype=float, na_value=np.nan)


GRID_SLOTS = 2**16
"""``cell_index``'s lookup grid: up to this many uniform slots over the span of the numbers, a quarter as many as the
numbers (a table of 512 KiB at most), ..."""
GRID_PER_CELL = 4
"""... and at least this many per cell of the edges inside that span."""
SEARCHED_ROWS = 4096
"""Below this many numbers ``cell_index`` searches each one (the grid costs more than it saves)."""


def searched_cells(numbers: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """``cell_index`` by a binary search per number."""
    return np.clip(np.searchsorted(edges, numbers, side="right") - 1, 0, len(edges) - 2)


def cell_index(numbers: np.ndarray, edges: np.ndarray) -> np.ndarray:
    r"""The cell ``[edges[i], edges[i + 1])`` of each number (``edges`` non-decreasing), values beyond the ends in the
    end cells: the i with :math:`e_i \le x < e_{i+1}`, where i = 0 also takes :math:`x < e_0` and the last cell
    :math:`x \ge e_{K}` (and NaN). A binary search per number costs about 12 ns; instead, numbers that each equal the
    smallest plus a whole step, over fewer steps than a quarter of the numbers (integers, mostly), get their cell from
    a table of those points' cells (searched), and other numbers by one division and one lookup in a grid of uniform
    slots over their own span (``GRID_SLOTS``, ``GRID_PER_CELL``; each slot's guess the cell of its left end), a guess
    that fails its cell's own test (a slot spanning several cells) being searched (``searched_cells``), as is a span
    beyond float range or too narrow to split: the result is the search's, number by number."""
    numbers, edges = np.asarray(numbers, dtype=float), np.asarray(edges, dtype=float)
    if len(numbers) < SEARCHED_ROWS:
        return searched_cells(numbers, edges)
    low, high = float(numbers.min()), float(numbers.max())
    if not (math.isfinite(low) and math.isfinite(high)):  # a NaN or an infinity: searched
        return searched_cells(numbers, edges)
    if high - low < len(numbers) / 4:
        steps = (numbers - low).astype(np.intp)
        if np.array_equal(low + steps, numbers):  # each number is low + a step: its cell is that step's in the table
            return searched_cells(low + np.arange(steps.max() + 1, dtype=float), edges)[steps]
    slots = max(min(GRID_SLOTS, len(numbers) // 4), GRID_PER_CELL * (int(((edges > low) & (edges < high)).sum()) + 1))
    width = (high - low) / slots
    if not (math.isfinite(width) and width > 0):  # a span beyond float range, or too narrow to split: searched
        return searched_cells(numbers, edges)
    last = len(edges) - 2
    guesses = searched_cells(low + width * np.arange(slots), edges)
    cells = guesses[np.minimum((numbers - low) / width, slots - 1).astype(np.intp)]
    right = (edges[cells] <= numbers) | (cells == 0)
    right &= (numbers < edges[cells + 1]) | (cells == last)
    wrong = ~right
    if wrong.any():
        cells[wrong] = searched_cells(numbers[wrong], edges)
    return cells


@dataclass(frozen=True)
class ValueCounts:
    """A column's stage-2 counts: per category key (a categorical column; in first-seen order within a frame, totals
    merged by key across partitions) or per bin (a numeric column), and its missing entries."""

    categories: Mapping[tuple[str, object], int] | None
    bins: np.ndarray | None
    missing: int


class TableCounts(Protocol):
    """The exact counts the DP domain releases, of one table however it is stored: each method one pass over the
    records, all columns at once."""

    @property
    def columns(self) -> list[str]:
        """The column names, in order (public)."""

    def type_counts(self, columns: list[str]) -> dict[str, np.ndarray]:
        """Stage 1, per column: (integer-valued finite numbers, other finite numbers, anything else, missing)."""

    def value_counts(self, plan: Mapping[str, np.ndarray | None]) -> dict[str, ValueCounts]:
        """Stage 2, per column of ``plan``: its categories (``None``) or its numbers in the cells of the given edges."""

    def histogram_counts(self, plan: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Stage 3, per column of ``plan``: its numbers clipped into the edges' range, counted in their cells."""

    def atom_counts(self, plan: Mapping[str, tuple[float, float]]) -> dict[str, dict[float, int]]:
        """Stage 4, per column of ``plan``: its numbers inside the range ``(low, high)`` that ``atom_mask`` counts,
        counted by exact value (keys in increasing order)."""

    def decimal_counts(self, columns: list[str]) -> dict[str, np.ndarray]:
        """Stage 4's precision partition, per column: its numbers counted by ``decimal_cells``."""

    def count_ahead(self, stage: str, plan: Mapping[str, object]) -> None:
        """Announce that a later call of ``stage`` (a method above) will likely ask for ``plan``'s entries (its
        columns, for ``type_counts`` and ``decimal_counts``, with None entries): a table read in passes may count
        them in its next pass (``adapters.partitioned.DaskCounts``), a frame counts when asked. Never changes a
        count: what a stage asks for is counted the same whichever pass counts it."""


@dataclass(frozen=True)
class StringCodes:
    """An object column whose entries are strings or missing, factorized: each entry's position among ``strings``
    (its distinct strings, in first-seen order), -1 for a missing entry."""

    codes: np.ndarray
    strings: pd.Index

    def counts(self) -> np.ndarray:
        """How many entries hold each of ``strings``."""
        return np.bincount(self.codes[self.codes >= 0], minlength=len(self.strings))

    @property
    def missing(self) -> int:
        return int((self.codes < 0).sum())


def string_codes(values: pd.Series) -> StringCodes | None:
    """An object column's ``StringCodes`` where every entry that is not missing is a string (``all_strings``, with
    a column of missing entries only counted as one), else ``None``: one pass of pandas' hash table (in C), whose
    missing entries are ``is_missing``'s, and a test of the distinct values alone (a string never equals another
    kind of value, so the distinct values are strings exactly when the entries are)."""
    if values.dtype != object:
        return None
    codes, distinct = factorized(values)
    if not all(isinstance(value, str) for value in distinct):
        return None
    return StringCodes(codes, pd.Index(distinct, dtype=object))


def factorized(values: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """A column's entries by Python equality, as ``pd.factorize`` gives them: each entry's position among the distinct
    values (first seen first), -1 for a missing entry. A missing entry is appended for the call: pandas hashes an array
    of strings alone as C strings, which end at a NUL character ('a\\x00b' would be counted as 'a', and one missing
    entry anywhere would part them again: a count that one record moves by many)."""
    codes, distinct = pd.factorize(np.append(values.to_numpy(dtype=object), None), use_na_sentinel=True)
    return codes[:-1], np.asarray(distinct, dtype=object)


class LevelCodec(Protocol):
    """What encoding a table's rows needs of a codec (``adapters.tabular``'s)."""

    def encode(self, frame: pd.DataFrame, factorized: Callable[[str], StringCodes | None] | None = None) -> torch.Tensor:
        """The codes ``(n, d)`` of ``frame``'s rows (``factorized``: a column's ``string_codes`` by name)."""


class DomainCheck(Protocol):
    """What checking a table against a declared domain needs of a codec (``adapters.tabular.MarginalTableCodec``)."""

    def check(self, frame: pd.DataFrame, factorized: Callable[[str], StringCodes | None] | None = None) -> None:
        """Raise where encoding would (a row outside the codec's domain), without making the codes."""


class FrameCounts:
    """``TableCounts`` of one pandas frame (in memory, or one partition of a partitioned table), of its ``columns``
    (default: all), and the level codes of its rows for the marginal release. An object column of strings is
    factorized once for every stage and for its level codes (``string_codes``), so that each count of it is a count
    of codes."""

    def __init__(self, frame: pd.DataFrame, columns: list[str] | None = None,
                 strings: dict[str, StringCodes | None] | None = None) -> None:
        self.frame = frame
        self._columns = list(frame.columns) if columns is None else list(columns)
        self._strings: dict[str, StringCodes | None] = {} if strings is None else strings

    @property
    def columns(self) -> list[str]:
        return list(self._columns)

    def select(self, columns: list[str]) -> FrameCounts:
        """The counts of some columns (no copy), sharing the factorized strings."""
        return FrameCounts(self.frame, columns, self._strings)

    def encode(self, codec: LevelCodec) -> torch.Tensor:
        """``codec``'s level codes of every row (its columns of strings factorized once with the counts')."""
        return codec.encode(self.frame, self.strings)

    def check_encodes(self, codec: DomainCheck) -> None:
        """Raise unless every row lies in ``codec``'s domain (a codec whose ``unknown`` is ``"error"``)."""
        codec.check(self.frame, self.strings)

    def marginal_statistic(self, codec: LevelCodec, mechanism: ReleaseMechanism) -> torch.Tensor:
        """The marginal release's exact statistic of every row: its level codes counted by ``mechanism.statistic``."""
        return mechanism.statistic(mechanism.prepare(self.encode(codec), "ball"), None)

    def strings(self, column: str) -> StringCodes | None:
        """Column ``column``'s ``string_codes``, computed at its first use."""
        if column not in self._strings:
            self._strings[column] = string_codes(self.frame[column])
        return self._strings[column]

    def type_counts(self, columns: list[str]) -> dict[str, np.ndarray]:
        counts = {}
        for column in columns:
            strings = self.strings(column)
            if strings is not None:  # no number: every entry a string or missing
                missing = strings.missing
                counts[column] = np.array([0, 0, len(strings.codes) - missing, missing], dtype=np.int64)
                continue
            values = self.frame[column]
            is_missing_entry = missing_mask(values)
            if is_numbers(values):  # number_mask's numeric path, with the numbers read once
                numbers = values.to_numpy(dtype=float, na_value=np.nan)
                is_number = np.isfinite(numbers)
                with np.errstate(invalid="ignore"):
                    integer = int((is_number & (numbers == np.round(numbers))).sum())
                n_numbers = int(is_number.sum())
            else:
                is_number = number_mask(values)
                numbers = values[is_number].to_numpy(dtype=float, na_value=np.nan)
                integer, n_numbers = int((numbers == np.round(numbers)).sum()), len(numbers)
            other = int((~is_number & ~is_missing_entry).sum())
            counts[column] = np.array([integer, n_numbers - integer, other, int(is_missing_entry.sum())], dtype=np.int64)
        return counts

    def value_counts(self, plan: Mapping[str, np.ndarray | None]) -> dict[str, ValueCounts]:
        counts = {}
        for column, edges in plan.items():
            values, strings = self.frame[column], self.strings(column)
            if strings is not None:  # strings are their own keys, in the order of pandas' value_counts
                keys = pd.Series(strings.counts(), index=strings.strings).sort_values(ascending=False)
                counts[column] = ValueCounts({("str", key): int(count) for key, count in keys.items()}, None,
                                             strings.missing) if edges is None else ValueCounts(
                    None, np.zeros(len(edges) - 1, dtype=np.int64), strings.missing)
                continue
            missing = int(missing_mask(values).sum())
            if edges is None and all_strings(values):  # strings are their own keys: pandas counts them in C
                keys = values.value_counts(dropna=True)  # the order of values.dropna().value_counts()
                counts[column] = ValueCounts({("str", key): int(count) for key, count in keys.items()}, None, missing)
            elif edges is None:
                present = [value for value in values.to_numpy(dtype=object) if not is_missing(value)]
                keys = pd.Series([category_key(value) for value in present], dtype=object).value_counts()
                counts[column] = ValueCounts({key: int(count) for key, count in keys.items()}, None, missing)
            else:
                index = cell_index(numbers_of(values), edges)
                counts[column] = ValueCounts(None, np.bincount(index, minlength=len(edges) - 1).astype(np.int64), missing)
        return counts

    def histogram_counts(self, plan: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        counts = {}
        for column, edges in plan.items():
            numbers = np.clip(numbers_of(self.frame[column]), edges[0], edges[-1])
            counts[column] = np.bincount(cell_index(numbers, edges), minlength=len(edges) - 1).astype(np.int64)
        return counts

    def atom_counts(self, plan: Mapping[str, tuple[float, float]]) -> dict[str, dict[float, int]]:
        counts = {}
        for column, (low, high) in plan.items():
            numbers = numbers_of(self.frame[column])
            inside = numbers[(numbers >= low) & (numbers <= high)]
            values, found = np.unique(inside[atom_mask(inside)] + 0.0, return_counts=True)  # + 0.0: -0.0 is 0.0
            counts[column] = {float(value): int(count) for value, count in zip(values, found)}
        return counts

    def count_ahead(self, stage: str, plan: Mapping[str, object]) -> None:
        """Nothing: a frame counts when asked (``TableCounts.count_ahead``)."""

    def decimal_counts(self, columns: list[str]) -> dict[str, np.ndarray]:
        return {column: np.bincount(decimal_cells(numbers_of(self.frame[column])), minlength=DECIMAL_CELLS).astype(np.int64)
                for column in columns}

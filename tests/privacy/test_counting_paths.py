"""The fast paths of the exact counts (issue 66) give what the per-entry definitions give, entry by entry: a number's
cell (``cell_index`` against a binary search), an object column of strings factorized once (``string_codes``) against
``all_strings`` / ``missing_mask`` / pandas' ``value_counts``, and the coarse levels of the marginal release by one
lookup against ``coarse_index``. Any difference would move a count, and so a release, by a record."""

from __future__ import annotations

import decimal

import numpy as np
import pandas as pd
import pytest
import torch

from synthcity_dpswf.adapters.table_domain import CategoricalColumn, category_index
from synthcity_dpswf.privacy import MarginalLayout
from synthcity_dpswf.privacy.counts import (
    SEARCHED_ROWS, FrameCounts, cell_index, category_key, is_finite_number, is_missing, missing_mask, number_mask,
    searched_cells, string_codes,
)
from synthcity_dpswf.privacy.domain import OTHER_CATEGORY
from synthcity_dpswf.privacy.domain.columns import histogram_edges, stage_two_edges

RNG = np.random.default_rng(66)
N = 4 * SEARCHED_ROWS
EDGES = {
    "unit integers": np.arange(17, 92, dtype=float),
    "stage 2, integer": stage_two_edges("integer"),
    "stage 2, float": stage_two_edges("float"),
    "stage 3 with overflow cells": np.concatenate([[-np.inf], histogram_edges(0.0, 2e5, False), [np.inf]]),
    "repeated edges": np.array([-3.0, -1.0, -1.0, 0.0, 0.5, 0.5, 0.5, 2.0, 3.0]),
    "two edges": np.array([0.0, 1.0]),
    "an edge off the integers' grid": np.array([0.0, 1.84, 3.0]),
}
NUMBERS = {
    "on the edges": RNG.choice(np.concatenate([EDGES["unit integers"], EDGES["repeated edges"]]), N),
    "spread": RNG.normal(0.0, 50.0, N),
    "heavy tailed": RNG.standard_cauchy(N) * 1e4,
    "zeros and tiny": np.where(RNG.random(N) < 0.5, 0.0, RNG.normal(0, 2.0**-16, N)),
    "beyond and not a number": np.concatenate([RNG.normal(0, 1, N), [np.nan, np.inf, -np.inf, 1e308, -1e308]]),
    "integers in a narrow span": RNG.integers(-40, 120, N).astype(float),  # the table of the span's integers
    "integers and one half": np.append(RNG.integers(-40, 120, N).astype(float), 0.5),
    "one number": np.full(N, 3.0),
    # a second reader's cases: numbers a whole step from the smallest only after rounding, spans that overflow or
    # that no slot width can split
    "just below an integer, beside integers": np.append(-1.0000000000000002, np.full(N - 1, 2.0)),
    "a fraction, beside it plus one": np.append(np.full(N // 2, 0.84), np.full(N // 2, 1.84)),
    "a span beyond float range": np.tile([-1e308, 1e308], N // 2),
    "a span too narrow to split": np.tile([0.0, 5e-324], N // 2),
}


@pytest.mark.parametrize("edges", EDGES.values(), ids=EDGES.keys())
@pytest.mark.parametrize("numbers", NUMBERS.values(), ids=NUMBERS.keys())
def test_a_number_s_cell_is_the_binary_search_s(edges: np.ndarray, numbers: np.ndarray) -> None:
    assert np.array_equal(cell_index(numbers, edges), searched_cells(numbers, edges))
    assert np.array_equal(cell_index(numbers[:10], edges), searched_cells(numbers[:10], edges))  # below the grid's size


STRING_COLUMNS = {
    "strings": pd.Series(RNG.choice(["a", "b", "c", "d"], N), dtype=object),
    "strings and every missing kind": pd.Series(
        ["a", None, np.nan, pd.NA, pd.NaT, float("nan"), decimal.Decimal("NaN"), np.str_("a"), "b"] * 500, dtype=object),
    "missing only": pd.Series([None, np.nan] * 10, dtype=object),
    "ties in the counts": pd.Series([f"v{i % 37}" for i in RNG.permutation(37 * 40)], dtype=object),
    "a NUL inside a string": pd.Series(["a"] * 3 + ["a\x00b"] * 100, dtype=object),  # not 'a' (pandas' C strings)
}
MIXED_COLUMNS = {
    "a number among strings": pd.Series(["a", "b", 1] * 10, dtype=object),
    "a bool among strings": pd.Series(["a", True, None] * 10, dtype=object),
}


@pytest.mark.parametrize("values", STRING_COLUMNS.values(), ids=STRING_COLUMNS.keys())
def test_a_column_of_strings_counts_as_its_entries_do(values: pd.Series) -> None:
    strings = string_codes(values)
    assert strings is not None
    assert np.array_equal(strings.codes < 0, missing_mask(values))
    assert all(isinstance(value, str) for value in values[~missing_mask(values)])
    counts = FrameCounts(values.to_frame("x"))
    is_number, missing = number_mask(values), missing_mask(values)
    expected = [0, 0, int((~is_number & ~missing).sum()), int(missing.sum())]
    assert list(counts.type_counts(["x"])["x"]) == expected
    found = counts.value_counts({"x": None})["x"]
    reference = values.dropna().value_counts()  # the keys in pandas' order: the noise is drawn in this order
    assert list((found.categories or {}).items()) == [(("str", key), int(count)) for key, count in reference.items()]
    assert found.missing == int(missing.sum())
    column = CategoricalColumn("x", ("a", "b", "v3"), missing=True)
    lookup = {category_key(category): index for index, category in enumerate(column.categories)}
    slow = np.array([3 if is_missing else lookup.get(category_key(value), -1)
                     for value, is_missing in zip(values, missing)])
    assert np.array_equal(category_index(values, column, "first"), slow)


@pytest.mark.parametrize("values", MIXED_COLUMNS.values(), ids=MIXED_COLUMNS.keys())
def test_a_column_mixing_kinds_is_counted_entry_by_entry(values: pd.Series) -> None:
    assert string_codes(values) is None  # 1 and True are keys of their own kind: no factorization merges them
    counts = FrameCounts(values.to_frame("x")).type_counts(["x"])["x"]
    assert counts[2] == int((~number_mask(values) & ~missing_mask(values)).sum())


@pytest.mark.parametrize(("missing", "runs"), [((False, False), None), ((True, False), None),
                                               ((False, True), {0: (0, 3, 9, 20)})])
def test_the_coarse_lookup_is_coarse_index_level_by_level(missing: tuple[bool, bool],
                                                          runs: dict[int, tuple[int, ...]] | None) -> None:
    layout = MarginalLayout.build((40, 30), coarse_bins=8, missing=missing, runs=runs)
    for column, levels in enumerate(layout.levels):
        fine = torch.arange(levels)
        assert torch.equal(layout.coarse_lookup(column), layout.coarse(fine, column))


TYPED_COLUMNS = {
    "Arrow strings with ties": pd.Series([f"v{i % 37}" if i % 11 else None for i in RNG.permutation(37 * 40)],
                                         dtype="string[pyarrow]"),
    "Python strings": pd.Series(["b", "a", None, "b", "c"] * 30, dtype="string"),
    "Python strings, a NUL inside one": pd.Series(["b"] * 3 + ["b\x00a"] * 100, dtype="string"),
    "integers": pd.Series(RNG.integers(-5, 5, 300)),
    "nullable integers": pd.Series([1, None, 3] * 100, dtype="Int64"),
    "floats, integer-valued, missing, infinite": pd.Series([1.0, 2.5, np.nan, 3.0, np.inf, -0.0, 1e300] * 50),
    "nullable floats": pd.Series([1.5, None, 2.0] * 100, dtype="Float64"),
}


@pytest.mark.parametrize("values", TYPED_COLUMNS.values(), ids=TYPED_COLUMNS.keys())
def test_a_typed_column_counts_as_its_entries_do(values: pd.Series) -> None:
    """The dtype's vectorised paths (stage 1 of a numeric column, stage 2 of a pandas string column) against the
    per-entry definitions and pandas' ``dropna().value_counts()`` order."""
    entries = values.to_numpy(dtype=object)
    missing = np.array([is_missing(value) for value in entries])
    numbers = [float(value) for value in entries if is_finite_number(value)]
    integer = sum(number == round(number) for number in numbers)
    expected = [integer, len(numbers) - integer, int((~missing).sum()) - len(numbers), int(missing.sum())]
    counts = FrameCounts(values.to_frame("x"))
    assert list(counts.type_counts(["x"])["x"]) == expected
    if isinstance(values.dtype, pd.StringDtype):
        found = counts.value_counts({"x": None})["x"]
        reference = values.dropna().value_counts()
        assert list((found.categories or {}).items()) == [(("str", key), int(count)) for key, count in reference.items()]
        for column in (CategoricalColumn("x", ("a", "v3", "b", 3, "b\x00a", OTHER_CATEGORY), missing=True),
                       CategoricalColumn("x", ("v1", "v2", "b"), missing=False)):  # codes: the per-entry lookup's
            lookup = {category_key(category): index for index, category in enumerate(column.categories)}
            fallback = lookup.get(category_key(OTHER_CATEGORY), -1)
            slow = np.array([(len(column.categories) if column.missing else fallback) if absent
                             else lookup.get(category_key(value), fallback) for value, absent in zip(entries, missing)])
            assert np.array_equal(category_index(values, column, "first"), slow)


def test_factorized_strings_of_another_column_are_refused() -> None:
    """A codec handed a table's factorized strings (``FrameCounts.strings``) checks that they are this column's."""
    column = CategoricalColumn("x", ("a", "b"), missing=False)
    other = string_codes(pd.Series(["a", "b", "a"], dtype=object))
    with pytest.raises(ValueError, match="not this column's"):
        category_index(pd.Series(["a", "b"], dtype=object), column, "first", lambda _: other)

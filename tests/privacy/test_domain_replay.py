r"""Issue 64, part 6: the DP domain's rules read only released numbers. Its release on a table D and on a neighbour
D' given the same released counts is the same, field for field (privacy.md, "The DP domain").

The construction. ``release_domain_at`` touches the private table at two seams only: the exact counts it asks of
its ``TableCounts`` (``type_counts``, ``value_counts``, ``histogram_counts``, ``atom_counts``: one per stage) and the
noise it adds to them (``release.noisy_counts``: the domain's one source of randomness; nothing else in
``privacy.domain`` draws any, and the replay checks it). ``Seam`` sits at both: it answers the release with the
table's exact counts, noting each stage's cells column by column in the order of the stage's plan (the four type
cells; a category key or a bin index per cell, then the missing cell; a histogram cell's index; an atom's value), and
replaces ``noisy_counts``, each call taking the next column's cells (checked: as many, with the same exact counts).

1. On D, each call draws its noise as the release does, and the seam records, per (call, key), the exact count and
   the released noisy value.
2. On D' (replace-one: one record replaced by a very different one; add/remove: one added or removed), each call must
   be for the same stage and column at the same noise std and weight, with the same cells where the partition is
   fixed (types, bins, histogram cells: functions of the released kinds and ranges; ``Diverged`` otherwise), and it
   returns, key by key, the very value released on D. Its noise z'(key) = noisy_D(key) - count'(key) is a possible
   draw (Gaussian noise has full support), so this is a run of the release on D'. A keyed partition (categories,
   atoms) may differ by one key on each side (privacy.md's proof of the key threshold). A key of D' only (the new
   record's category or value) is one that M~ counts on D with count 0: it is released at 0, below its threshold (tau
   > 0), as M~(D) releases it but with probability eta. A key of D only is not drawn on D'; the case stands only if D
   did not publish it (released at most its threshold), which the test asserts: otherwise D and D' differ by the
   threshold's delta event, not by a rule.

A release whose rules read only released counts and public facts (column names, the declared schema, n under
replace-one) then returns for D' exactly what it returned for D. The released values are the same floats by
construction (replayed, never recomputed), so the comparison is exact and portable, and it is exhaustive: every field
of ``DomainRelease``, recursively, types included (1, 1.0 and True are three categories). A rule that reads a private
number instead is caught where that number differs between D and D' and changes what the rule gives: at once where
the rule publishes it (an estimate), at the edge of a decision where it decides (one record moves a count by one).

The cases cover numeric, categorical and mixed-kind columns, missing entries, coded floats (atoms), coded integers
(one stage-3 cell per integer, a range widened by its overflow cell, coded columns), the precision partition (decimals
and float32 images), a partial declared schema whose declared columns get histograms only (and atoms, and a precision
partition; a declared range of 11 integers, one stage-3 cell each, closed at its top, coded, under both adjacencies),
both adjacencies, tables of 40 rows where kinds, ranges and placements stand in the noise, and eight built at the edge
of a decision, where one record flips it if the rule reads exact counts. Eight mutants there, one per decision, show
the test can fail: the placement decision reading stage 1's exact type counts (an independent review's, which survived
every other domain test), the range trim reading the exact value histogram, the range reading the exact stage-2 bins,
the range's extension reading the exact counts beyond it, the output's decimals reading the exact precision partition,
the published values chosen by their cells' exact counts, the coded decision reading its values' exact counts, and
its denominator read exactly (the column's count of numbers where n is private); the last four from a privacy
review, which the other cases did not catch.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import random
from collections import deque
from collections.abc import Callable, Hashable, Mapping
from functools import lru_cache
from typing import Any

import numpy as np
import pandas as pd
import pytest
import torch
from scipy.stats import norm

from synthcity_dpswf.privacy.counts import FrameCounts, ValueCounts
from synthcity_dpswf.privacy.domain import DomainCalibration, DomainRelease, release_domain_at
from synthcity_dpswf.privacy.domain import release as release_module
from synthcity_dpswf.privacy.domain.calibration import (
    ATOM_NOISE_RATIO,
    DECIMAL_NOISE_RATIO,
    HISTOGRAM_NOISE_RATIO,
    stage_noise,
)
from synthcity_dpswf.privacy.domain.columns import (
    CODED_SHARE,
    CODED_TAIL,
    DECIMAL_LEVEL,
    EXTEND_LEVEL,
    EXTEND_SHARE,
    TRIM_LEVEL,
    TRIM_SHARE,
    coded_values,
    numeric_bounds,
    output_decimals,
    placement,
    published_values,
    stage_two_edges,
    trimmed_span,
    widened,
)
from synthcity_dpswf.privacy.neighbouring import Adjacency

TYPE_CELLS = ("integer", "non-integer", "other", "missing")
"""The keys of a column's stage-1 cells, in ``TableCounts.type_counts``' order."""
MISSING_CELL = ("(missing cell)",)
"""The key of stage 2's last cell, a column's missing entries (no category key is a 1-tuple)."""
KEYED_STAGES = ("categories", "atoms")
"""The stages whose cells are private keys (a categorical column's categories, a float column's atoms); the others'
cells (``"types"``, a numeric column's stage-2 ``"bins"``, ``"histogram"``) are fixed by the released kinds and
ranges."""


class Diverged(AssertionError):
    """A replayed release asked for other draws than its neighbour's given the same released counts: another stage,
    column, noise std or weight, other cells of a fixed partition, or more or fewer calls."""


@dataclasses.dataclass(frozen=True)
class Draw:
    """One ``noisy_counts`` call: the stage and column it released, its cells' keys and exact counts, its noise std
    and weight, and the noisy values it returned (on the count scale)."""

    stage: str
    column: str
    keys: tuple[Hashable, ...]
    counts: tuple[float, ...]
    noise_std: float
    weight: float
    released: tuple[float, ...]


class Seam:
    """Both seams of one release: the ``TableCounts`` it reads (a frame's exact counts, each stage's cells noted in
    plan order) and its ``noisy_counts``: drawn and recorded (``played`` None) or replayed from ``played``, the
    draws of the release of a neighbour (module docstring)."""

    def __init__(self, frame: pd.DataFrame, played: list[Draw] | None = None) -> None:
        self.exact = FrameCounts(frame)
        self.played = played
        self.pending: deque[tuple[str, str, tuple[Hashable, ...], tuple[float, ...]]] = deque()
        self.draws: list[Draw] = []
        self.draw = release_module.noisy_counts

    @property
    def columns(self) -> list[str]:
        return self.exact.columns

    def type_counts(self, columns: list[str]) -> dict[str, np.ndarray]:
        counts = self.exact.type_counts(columns)
        self.pending.extend(("types", column, TYPE_CELLS, tuple(map(float, counts[column]))) for column in columns)
        return counts

    def value_counts(self, plan: Mapping[str, np.ndarray | None]) -> dict[str, ValueCounts]:
        counts = self.exact.value_counts(plan)
        for column in plan:
            found = counts[column]
            cells = dict(found.categories) if found.bins is None else dict(enumerate(found.bins.tolist()))
            cells[MISSING_CELL] = found.missing
            stage = "categories" if found.bins is None else "bins"
            self.pending.append((stage, column, tuple(cells), tuple(map(float, cells.values()))))
        return counts

    def histogram_counts(self, plan: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        counts = self.exact.histogram_counts(plan)
        self.pending.extend(("histogram", column, tuple(range(len(counts[column]))), tuple(map(float, counts[column])))
                            for column in plan)
        return counts

    def atom_counts(self, plan: Mapping[str, tuple[float, float]]) -> dict[str, dict[float, int]]:
        counts = self.exact.atom_counts(plan)
        self.pending.extend(("atoms", column, tuple(counts[column]), tuple(map(float, counts[column].values())))
                            for column in plan)
        return counts

    def decimal_counts(self, columns: list[str]) -> dict[str, np.ndarray]:
        counts = self.exact.decimal_counts(columns)
        self.pending.extend(("decimals", column, tuple(range(len(counts[column]))), tuple(map(float, counts[column])))
                            for column in columns)
        return counts

    def count_ahead(self, stage: str, plan: Mapping[str, object]) -> None:
        self.exact.count_ahead(stage, plan)  # nothing: a frame counts when asked, so the seam notes each stage then

    def noisy_counts(self, counts: np.ndarray, noise_std: float, secret: torch.Generator,
                     weight: float = 1.0) -> np.ndarray:
        """``release.noisy_counts`` at the seam: the next column's cells, drawn (D) or replayed (D')."""
        assert self.pending, "noise drawn for cells no stage asked the table for"
        stage, column, keys, exact = self.pending.popleft()
        assert tuple(map(float, counts)) == exact, (stage, column)  # the call is for those cells, in that order
        if self.played is None:
            released = self.draw(counts, noise_std, secret, weight)
        else:
            released = self.replayed(stage, column, keys, noise_std, weight)
        self.draws.append(Draw(stage, column, keys, exact, noise_std, weight, tuple(map(float, released))))
        return released

    def replayed(self, stage: str, column: str, keys: tuple[Hashable, ...], noise_std: float,
                 weight: float) -> np.ndarray:
        """What the release of the neighbour released for these cells, key by key (a key it did not count: 0)."""
        assert self.played is not None
        call = len(self.draws)
        if call == len(self.played):
            raise Diverged(f"call {call}: {stage} of {column!r}, more draws than on the neighbour")
        played = self.played[call]
        if (played.stage, played.column, played.noise_std, played.weight) != (stage, column, noise_std, weight):
            raise Diverged(f"call {call}: {stage} of {column!r} at std {noise_std}, weight {weight} against "
                           f"{played.stage} of {played.column!r} at std {played.noise_std}, weight {played.weight}")
        if stage not in KEYED_STAGES and played.keys != keys:  # a partition fixed by released kinds and ranges
            raise Diverged(f"call {call}: {stage} of {column!r} in {len(keys)} cells against {len(played.keys)}")
        released = dict(zip(played.keys, played.released))
        return np.array([released.get(key, 0.0) for key in keys], dtype=np.float64)


def release(frame: pd.DataFrame, case: Case, played: list[Draw] | None = None,
            mutant: Callable[[Seam], dict[str, object]] | None = None) -> tuple[DomainRelease, Seam]:
    """The DP domain of ``frame`` under ``case``'s budget, adjacency and declared columns, its noise drawn from the
    case's seed (``played`` None) or replayed from ``played``; ``mutant`` gives attributes of ``release`` to replace."""
    seam = Seam(frame, played)
    patches = {"noisy_counts": seam.noisy_counts, **(mutant(seam) if mutant else {})}
    calibration = DomainCalibration.alone(case.epsilon, case.delta)
    secret = torch.Generator().manual_seed(case.seed)
    before = (secret.get_state(), torch.get_rng_state(), np.random.get_state()[1].copy(), random.getstate())
    with pytest.MonkeyPatch.context() as patcher:
        for name, value in patches.items():
            patcher.setattr(release_module, name, value)
        domain = release_domain_at(seam, calibration, secret, case.neighbouring,  # type: ignore[arg-type]
                                   dict(case.declared))
    assert not seam.pending, "cells asked of the table that no noise was drawn for"
    if played is not None:  # all the randomness is noisy_counts': the replay draws none, and nothing else did
        after = (secret.get_state(), torch.get_rng_state(), np.random.get_state()[1], random.getstate())
        assert torch.equal(before[0], after[0]) and torch.equal(before[1], after[1])
        assert np.array_equal(before[2], after[2]) and before[3] == after[3]
        if len(seam.draws) < len(played):
            raise Diverged(f"{len(seam.draws)} draws against {len(played)} on the neighbour")
    return domain, seam


def differences(first: Any, second: Any, path: str = "release") -> list[str]:
    """Where two released objects differ: dataclasses field by field, dicts in order and key by key, sequences entry by
    entry, leaves by type and value (NaN equal to NaN)."""
    if type(first) is not type(second):
        return [f"{path}: {type(first).__name__} {first!r} against {type(second).__name__} {second!r}"]
    if dataclasses.is_dataclass(first):
        return [found for field in dataclasses.fields(first) for found in
                differences(getattr(first, field.name), getattr(second, field.name), f"{path}.{field.name}")]
    if isinstance(first, dict):
        if list(first) != list(second):
            return [f"{path}: keys {list(first)} against {list(second)}"]
        return [found for key in first for found in differences(first[key], second[key], f"{path}[{key!r}]")]
    if isinstance(first, (tuple, list)):
        if len(first) != len(second):
            return [f"{path}: {len(first)} entries against {len(second)}"]
        return [found for index, (a, b) in enumerate(zip(first, second))
                for found in differences(a, b, f"{path}[{index}]")]
    if isinstance(first, float) and math.isnan(first) and math.isnan(second):
        return []
    return [] if first == second else [f"{path}: {first!r} against {second!r}"]


def keyed_out(domain: DomainRelease, seam: Seam, neighbour: Seam) -> list[str]:
    """The keys of D that the release of D' did not count and that D published (its released value above the
    threshold): the threshold's delta event, where D and D' may legitimately differ (module docstring)."""
    published = []
    for drawn, again in zip(seam.draws, neighbour.draws):
        if drawn.stage in KEYED_STAGES:
            level = domain.threshold * (ATOM_NOISE_RATIO if drawn.stage == "atoms" else 1.0)
            published += [f"{drawn.stage} {drawn.column} {key!r}" for key, value in zip(drawn.keys, drawn.released)
                          if key not in again.keys and value > level]
    return published


def replaced(frame: pd.DataFrame, row: int, **entries: object) -> pd.DataFrame:
    """``frame`` with record ``row``'s ``entries`` replaced (its columns given as object dtype: entries, not dtypes,
    are what the release reads)."""
    out = frame.copy()
    for column, entry in entries.items():
        values = out[column].astype(object)
        values.iloc[row] = entry
        out[column] = values
    return out


def added(frame: pd.DataFrame, **entries: object) -> pd.DataFrame:
    """``frame`` with one more record (its ``entries``; missing in the other columns)."""
    record = pd.DataFrame({column: [entries.get(column)] for column in frame.columns}, dtype=object)
    return pd.concat([frame.astype(object), record], ignore_index=True)


def removed(frame: pd.DataFrame, row: int) -> pd.DataFrame:
    """``frame`` without record ``row``."""
    return frame.drop(index=frame.index[row]).reset_index(drop=True)


@dataclasses.dataclass(frozen=True)
class Case:
    """A table, its neighbour, and the release's budget, adjacency, declared columns and noise seed."""

    name: str
    table: Callable[[], pd.DataFrame]
    neighbour: Callable[[pd.DataFrame], pd.DataFrame]
    epsilon: float = 1.0
    delta: float = 1e-5
    neighbouring: Adjacency = Adjacency.REPLACE_ONE
    declared: tuple[tuple[str, tuple[float, float, bool]], ...] = ()
    seed: int = 0


def numeric_table(n: int = 300) -> pd.DataFrame:
    """An integer column, a skewed float column and a centred one."""
    rng = np.random.default_rng(1)
    return pd.DataFrame({"age": rng.integers(18, 90, n), "income": rng.lognormal(10.0, 1.0, n),
                         "score": rng.normal(0.0, 1.0, n)})


def categorical_table(n: int = 300) -> pd.DataFrame:
    """A string column with a rare category, a bool column, and a pandas Categorical whose dtype lists a category no
    record holds."""
    rng = np.random.default_rng(2)
    size = pd.Categorical(rng.choice(["S", "M", "L"], n), categories=["S", "M", "L", "XXL"])
    return pd.DataFrame({"colour": rng.choice(["red", "green", "blue", "violet"], n, p=[0.5, 0.3, 0.17, 0.03]),
                         "member": rng.random(n) < 0.3, "size": size})


def mixed_table(n: int = 400) -> pd.DataFrame:
    """A numeric column with a clear share of strings, and a string column with a clear share of numbers."""
    rng = np.random.default_rng(3)
    numbers = np.where(rng.random(n) < 0.7, rng.integers(0, 50, n).astype(object), "n/a")
    codes = np.where(rng.random(n) < 0.75, rng.choice(["a", "b", "c"], n).astype(object), rng.integers(1, 4, n))
    return pd.DataFrame({"count": numbers, "code": codes}, dtype=object)


def missing_table(n: int = 300) -> pd.DataFrame:
    """Missing entries in a float column (NaN), a nullable integer column (pandas' NA) and a string column (None)."""
    rng = np.random.default_rng(4)
    level = np.where(rng.random(n) < 0.25, np.nan, rng.gamma(2.0, 10.0, n))
    visits = pd.array(np.where(rng.random(n) < 0.1, -1, rng.integers(0, 12, n)), dtype="Int64")
    visits[visits == -1] = pd.NA
    habit = np.where(rng.random(n) < 0.2, None, rng.choice(["smoker", "non-smoker"], n)).astype(object)
    return pd.DataFrame({"level": level, "visits": visits, "habit": habit})


def coded_table(n: int = 400) -> pd.DataFrame:
    """Coded floats, whose frequent values are atoms: half-year ages and weights to a tenth, one record at an age
    no other record has."""
    rng = np.random.default_rng(5)
    ages = 17.5 + 0.5 * rng.integers(0, 6, n)
    ages[0] = 23.75
    return pd.DataFrame({"age": ages, "weight": np.round(rng.normal(70.0, 2.0, n), 1),
                         "group": rng.choice(list("xy"), n)})


def rare_table(n: int = 1000) -> pd.DataFrame:
    """A column whose rare categories, none published alone, hold a fifth of its rows (its ``OTHER_CATEGORY``), one
    of them held by one record."""
    rng = np.random.default_rng(10)
    rare = [f"town {index}" for index in range(50)]
    cities = rng.choice(["north", "south", *rare], n, p=[0.4, 0.4, *[0.2 / 50] * 50])
    cities[0] = "hamlet"
    return pd.DataFrame({"city": cities, "age": rng.integers(20, 70, n)})


def declared_table(n: int = 300) -> pd.DataFrame:
    """Two columns a partial public schema declares by bounds (a float and a wide integer range: histograms only)
    beside two typed ones."""
    rng = np.random.default_rng(6)
    return pd.DataFrame({"hours": rng.uniform(0.0, 60.0, n), "year": rng.integers(1950, 2020, n),
                         "sector": rng.choice(["public", "private", "none"], n), "rate": rng.exponential(3.0, n)})


def small_table(n: int = 40) -> pd.DataFrame:
    """40 records, where the kinds, ranges and placements stand in the noise."""
    rng = np.random.default_rng(7)
    return pd.DataFrame({"year": rng.integers(2007, 2010, n), "bill": np.round(rng.normal(40.0, 3.0, n), 1),
                         "species": rng.choice(["Adelie", "Gentoo"], n)})


def coded_integers_table(n: int = 2000) -> pd.DataFrame:
    """Coded integers: a history code 1..6 with a quarter of its rows above 2 (beyond a stage-2 range of [1, 2]: its
    overflow cell widens it), speeds coded as 25, 33, 50, 66 and 100 (one stage-3 cell each), prices to the cent (a precision
    partition) and rates stored in float32 (its images' cells), beside a yes/no column."""
    rng = np.random.default_rng(12)
    return pd.DataFrame({
        "history": rng.choice([1, 2, 3, 4, 5, 6], n, p=[0.57, 0.19, 0.05, 0.03, 0.08, 0.08]),
        "speed": rng.choice([25, 33, 50, 66, 100], n, p=[0.1, 0.35, 0.2, 0.3, 0.05]),
        "price": np.round(rng.lognormal(3.0, 0.5, n), 2),
        "rate": rng.choice([3.2, 3.1, 10.6, 2.0], n).astype(np.float32).astype(np.float64),
        "denied": rng.choice(["yes", "no"], n, p=[0.2, 0.8]),
    })


def even_table(n: int = 600) -> pd.DataFrame:
    """The placement mutant's edge: a column of as many numbers as strings. Placement reads stage 1's counts of
    numbers and of other entries; exact, one record turning a string into a number flips their order."""
    rng = np.random.default_rng(8)
    entries = np.concatenate([rng.integers(0, 2, n // 2).astype(object), np.full(n // 2, "none", dtype=object)])
    return pd.DataFrame({"value": entries, "label": rng.choice(["p", "q"], n)}, dtype=object)


EDGE_EPSILON, EDGE_DELTA, EDGE_ROWS = 2.0, 1e-5, 2000
"""The budget and the number of records of the cases built at a decision's edge (the range, trim, decimals and coded
mutants')."""


def one_float_column_std() -> float:
    """s_c of a release of one float column (typed, with atoms and a precision partition) at the edge cases' budget: a
    public function of the budget and the kinds (``stage_noise``)."""
    z = DomainCalibration.alone(EDGE_EPSILON, EDGE_DELTA).noise_multiplier
    return stage_noise(z, 1, 0, 1, 0, Adjacency.REPLACE_ONE, n_atoms=1, n_precision=1)[1]


def tail_table() -> pd.DataFrame:
    """The trim mutant's edge: a float column in [32, 64) whose top histogram cell holds as many records as an end
    cell may hold and still be trimmed, counted exactly (``trimmed_span``: min(z s, f n - s), s the noise std of the
    end cell, into which its overflow cell is folded: sqrt(2) times the histogram's); one record more there keeps it."""
    std = math.sqrt(2.0) * HISTOGRAM_NOISE_RATIO * one_float_column_std()
    values = np.random.default_rng(9).uniform(40.0, 50.0, EDGE_ROWS)
    values[: math.floor(min(TRIM_LEVEL * std, TRIM_SHARE * EDGE_ROWS - std))] = 63.0
    return pd.DataFrame({"x": values})


def outlier_table() -> pd.DataFrame:
    """The range mutant's edge: a float column in [32, 64) with a group of outliers in [512, 1024) as large as a bin
    may hold and not stand out alone, counted exactly (``numeric_bounds``: s Phi^{-1}(1 - 0.001 / B), s the bins'
    noise std, r s_c with r = 1 without categorical columns); one record more there widens the range to 1024."""
    bins = len(stage_two_edges("float")) - 1
    level = one_float_column_std() * float(norm.isf(0.001 / bins))
    values = np.random.default_rng(11).uniform(40.0, 50.0, EDGE_ROWS)
    values[: math.floor(level)] = 1000.0
    return pd.DataFrame({"x": values})


GAP_EPSILON = 0.5
"""The extension mutant's budget: noise enough that the overflow's edge, EXTEND_LEVEL stds, is above EXTEND_SHARE of
the rows and below what a stage-2 bin needs to stand out alone."""


def gap_table() -> pd.DataFrame:
    """The extension mutant's edge: a float column in [32, 64) (beside a categorical column, so that the stage-2 bins'
    noise is r s_c = the histogram's) with a group of records in [128, 256), an empty bin apart, as large as the
    overflow cell above the range may hold and not widen it, counted exactly (``extension``: max(z s_q, f n), s_q the
    histogram's noise std); one record more there widens it."""
    z = DomainCalibration.alone(GAP_EPSILON, EDGE_DELTA).noise_multiplier
    histogram_std = HISTOGRAM_NOISE_RATIO * stage_noise(z, 2, 1, 1, 0, Adjacency.REPLACE_ONE, n_atoms=1,
                                                        n_precision=1)[1]
    rng = np.random.default_rng(13)
    values = rng.uniform(40.0, 50.0, EDGE_ROWS)
    values[: math.floor(max(EXTEND_LEVEL * histogram_std, EXTEND_SHARE * EDGE_ROWS))] = 200.0
    return pd.DataFrame({"x": values, "label": rng.choice(["p", "q"], EDGE_ROWS)})


def precision_table() -> pd.DataFrame:
    """The decimals mutant's edge: a float column in [40, 50) to the cent (its values of 0 and 1 decimal too) with as
    many values of 3 decimals (x.125) as the precision partition's cell may hold and not count, counted exactly
    (``output_decimals``: ``DECIMAL_LEVEL`` s_p, s_p = r_p s_c its noise std); one record more there rounds the column
    to 3 decimals, not 2. No value of 3 decimals has 4 significant digits: no atom."""
    std = DECIMAL_NOISE_RATIO * one_float_column_std()
    values = np.round(np.random.default_rng(15).uniform(40.0, 50.0, EDGE_ROWS), 2)
    thousandths = math.floor(DECIMAL_LEVEL * std)
    values[:thousandths] = np.floor(values[:thousandths]) + 0.125
    return pd.DataFrame({"x": values})


def one_integer_column_std() -> float:
    """s_c of a release of one integer column (typed; no atoms nor precision partition, which float columns have) at
    the edge cases' budget: a public function of the budget and the kinds (``stage_noise``)."""
    z = DomainCalibration.alone(EDGE_EPSILON, EDGE_DELTA).noise_multiplier
    return stage_noise(z, 1, 0, 1, 0, Adjacency.REPLACE_ONE)[1]


def unit_table() -> pd.DataFrame:
    """The published-value mutant's edge: an integer column of 1s and 3s (its range [1, 3]: three unit cells, one
    stage-3 cell per integer) whose 2s, in the middle cell (noise std r_q s_c: no overflow folded into it), are as many
    as that cell may hold and not be published, counted exactly (``published_values``: Phi^{-1}(1 - CODED_TAIL / 3)
    stds). The 2s are below ``CODED_SHARE`` of the rows: read exactly, the column would be coded as 1 and 3 (its 2s
    coming back as their nearest value), and one record more there as 1, 2 and 3."""
    std = HISTOGRAM_NOISE_RATIO * one_integer_column_std()
    values = np.random.default_rng(16).choice([1, 3], EDGE_ROWS)
    values[: math.floor(float(norm.isf(CODED_TAIL / 3)) * std)] = 2
    return pd.DataFrame({"x": values})


CODED_ATOMS = (17.5, 22.0)
"""The published values of the coded mutants' float columns: atoms (a coded age), each held by nearly half the rows."""


def share_table() -> pd.DataFrame:
    """The coded mutant's edge: a float column of the atoms 17.5 and 22 but for ``CODED_SHARE`` of its rows exactly,
    measured values between them (many decimals: no atom). Under replace-one the coded rule's denominator is n, public:
    the rows its published values leave, counted exactly, are ``CODED_SHARE`` of n, at most that share, so the column is
    coded (``coded_values``); one record moved from an atom to a measured value, and they are more."""
    rng = np.random.default_rng(17)
    values = rng.choice(CODED_ATOMS, EDGE_ROWS)
    measured = math.floor(CODED_SHARE * EDGE_ROWS)
    values[:measured] = rng.uniform(*CODED_ATOMS, measured)
    return pd.DataFrame({"x": values})


def denominator_frame(atom_rows: int, measured: int) -> pd.DataFrame:
    """A float column of ``atom_rows`` records of each of ``CODED_ATOMS`` and ``measured`` values between them (many
    decimals: no atom), in a seeded order."""
    rng = np.random.default_rng(18)
    values = np.concatenate([np.repeat(CODED_ATOMS, atom_rows), rng.uniform(*CODED_ATOMS, measured)])
    return pd.DataFrame({"x": rng.permutation(values)})


def denominator_atoms(frame: pd.DataFrame) -> tuple[tuple[float, float], ...]:
    """The atoms (value, noisy count) of ``frame``'s release at ``denominator_table``'s case: the edge budget,
    add/remove, seed 0."""
    return release_domain_at(frame, DomainCalibration.alone(EDGE_EPSILON, EDGE_DELTA), torch.Generator().manual_seed(0),
                             Adjacency.ADD_REMOVE).atoms["x"]


@lru_cache(maxsize=None)
def denominator_edge() -> tuple[int, int, tuple[tuple[float, float], ...]]:
    """``denominator_table``'s records of each atom (950) and of measured values (N - 1,900), and its atoms' released
    counts S: N is the most numbers S covers but for ``CODED_SHARE`` of them (N - S <= ``CODED_SHARE`` N,
    ``coded_values``). S is read from the release of a draft of the table (100 measured values): the atoms' exact
    counts plus noise drawn at the same place of the same sequence whatever the number of measured values (the same
    cells in every stage; ``denominator_table`` checks that the table's release gives the draft's)."""
    atom_rows = 950
    published = denominator_atoms(denominator_frame(atom_rows, 100))
    assert [value for value, _ in published] == list(CODED_ATOMS)
    values = [(value, count, 1.0) for value, count in published]
    most = math.floor(sum(count for _, count in published) / (1 - CODED_SHARE)) + 1
    numbers = next(rows for rows in range(most, 0, -1) if coded_values(values, rows))
    assert not coded_values(values, numbers + 1)  # at the edge: one number more and the column is not coded
    return atom_rows, numbers - len(CODED_ATOMS) * atom_rows, published


def denominator_table() -> pd.DataFrame:
    """The denominator mutant's edge: under add/remove n is private and the coded rule's denominator is the column's
    noisy stage-1 count of numbers. A float column of the atoms 17.5 and 22 with as many measured values between them
    (no atom) as a rule reading its exact count of numbers N would code: N - S <= ``CODED_SHARE`` N, S the atoms'
    released counts (``denominator_edge``); one measured value added and that rule would not."""
    atom_rows, measured, published = denominator_edge()
    frame = denominator_frame(atom_rows, measured)
    assert denominator_atoms(frame) == published, "the atoms' noise is not where the draft read it"
    return frame


def rating_table(n: int = 1000) -> pd.DataFrame:
    """A rating a partial schema declares as the integers 0 to 10 (one stage-3 cell per integer, the last closed at
    10: ``histogram_edges``), answered 1 to 5 (coded by its cells that stand out), beside a typed integer and a
    category."""
    rng = np.random.default_rng(14)
    return pd.DataFrame({"rating": rng.choice([1, 2, 3, 4, 5], n, p=[0.1, 0.2, 0.35, 0.25, 0.1]),
                         "visits": rng.integers(0, 8, n), "group": rng.choice(["a", "b"], n)})


RATING = (("rating", (0.0, 10.0, True)),)
"""The rating's declared range: 11 integers, at most ``UNIT_INTEGERS``."""


CASES = [
    Case("numeric, huge numbers", numeric_table,
         lambda frame: replaced(frame, 0, age=10**15, income=1e300, score=-1e12)),
    Case("numeric, a string and a missing entry", numeric_table,
         lambda frame: replaced(frame, 5, age="unknown", score=None), seed=5),
    Case("categorical, new categories", categorical_table,
         lambda frame: replaced(frame, 3, colour="ultraviolet", member="maybe", size="XXL"), epsilon=2.0),
    Case("categorical, a rare category's record made common", categorical_table,
         lambda frame: replaced(frame, int(np.flatnonzero(frame["colour"] == "violet")[0]), colour="red"), seed=1),
    Case("mixed kinds, a number becomes a string", mixed_table, lambda frame: replaced(frame, 0, count="n/a", code=7.5),
         epsilon=3.0),
    Case("missing entries", missing_table, lambda frame: replaced(frame, 1, level=None, visits=pd.NA, habit=None)),
    Case("missing entries filled", missing_table,
         lambda frame: replaced(frame, int(np.flatnonzero(frame["level"].isna())[0]), level=1e6, habit="vaper"),
         seed=2),
    Case("atoms, a new value and a unique one removed", coded_table,
         lambda frame: replaced(frame, 0, age=25.25, weight=1234.5), epsilon=2.0),
    Case("rare categories, one for another", rare_table,
         lambda frame: replaced(frame, 0, city="town 50"), seed=4),
    Case("declared columns with histograms", declared_table,
         lambda frame: replaced(frame, 0, hours=59.75, year=2019, sector="retired", rate=1e9),
         declared=(("hours", (0.0, 60.0, False)), ("year", (1900.0, 2030.0, True)))),
    Case("40 rows", small_table, lambda frame: replaced(frame, 0, year=-(10**9), bill="?", species="Chinstrap")),
    Case("40 rows at epsilon 8", small_table, lambda frame: replaced(frame, 2, year=2025, bill=None), epsilon=8.0,
         seed=3),
    Case("add/remove, a record added", numeric_table,
         lambda frame: added(frame, age=10**12, income="n/a", score=None), neighbouring=Adjacency.ADD_REMOVE),
    Case("add/remove, a record removed", categorical_table, lambda frame: removed(frame, 7),
         neighbouring=Adjacency.ADD_REMOVE, epsilon=2.0),
    Case("add/remove, 40 rows", small_table, lambda frame: added(frame, species="Emperor"),
         neighbouring=Adjacency.ADD_REMOVE, epsilon=4.0),
    Case("as many numbers as strings", even_table, lambda frame: replaced(frame, len(frame) - 1, value=3)),
    Case("a tail at the trim's edge", tail_table, lambda frame: replaced(frame, len(frame) - 1, x=63.5),
         epsilon=EDGE_EPSILON, delta=EDGE_DELTA),
    Case("outliers at the range's edge", outlier_table, lambda frame: replaced(frame, len(frame) - 1, x=1000.0),
         epsilon=EDGE_EPSILON, delta=EDGE_DELTA),
    Case("a group beyond the range at the extension's edge", gap_table,
         lambda frame: replaced(frame, len(frame) - 1, x=200.0), epsilon=GAP_EPSILON, delta=EDGE_DELTA),
    Case("coded integers, a new speed and a longer price", coded_integers_table,
         lambda frame: replaced(frame, 0, history=60, speed=34, price=12.345678, rate=3.3)),
    Case("coded integers declared by bounds", coded_integers_table,
         lambda frame: replaced(frame, 1, speed=199, price=0.5, rate=1e6), epsilon=2.0,
         declared=(("speed", (0.0, 200.0, True)), ("price", (0.0, 500.0, False)))),
    Case("a declared range of a few integers, the top one held", rating_table,
         lambda frame: replaced(frame, 0, rating=10, visits=40, group="c"), declared=RATING),
    Case("add/remove, a declared range of a few integers", rating_table,
         lambda frame: added(frame, rating=0, visits=3), neighbouring=Adjacency.ADD_REMOVE, declared=RATING),
    Case("decimals at the precision's edge", precision_table, lambda frame: replaced(frame, len(frame) - 1, x=45.125),
         epsilon=EDGE_EPSILON, delta=EDGE_DELTA),
    Case("a unit cell at the published values' edge", unit_table, lambda frame: replaced(frame, len(frame) - 1, x=2),
         epsilon=EDGE_EPSILON, delta=EDGE_DELTA),
    Case("a coded column at the coded share's edge", share_table,
         lambda frame: replaced(frame, len(frame) - 1, x=20.123456789), epsilon=EDGE_EPSILON, delta=EDGE_DELTA),
    Case("add/remove, a coded column at the denominator's edge", denominator_table,
         lambda frame: added(frame, x=20.123456789), neighbouring=Adjacency.ADD_REMOVE, epsilon=EDGE_EPSILON,
         delta=EDGE_DELTA),
]
BY_NAME = {case.name: case for case in CASES}


def replay(case: Case, mutant: Callable[[Seam], dict[str, object]] | None = None
           ) -> tuple[DomainRelease, DomainRelease, Seam, Seam]:
    """The release of ``case``'s table, and of its neighbour on the same released counts (both under ``mutant``)."""
    table = case.table()
    first, seam = release(table, case, mutant=mutant)
    second, neighbour = release(case.neighbour(table), case, seam.draws, mutant)
    return first, second, seam, neighbour


@lru_cache(maxsize=None)
def replayed(name: str) -> tuple[DomainRelease, DomainRelease, Seam, Seam]:
    """``replay`` of the case ``name``, once per session."""
    return replay(BY_NAME[name])


@pytest.mark.parametrize("name", list(BY_NAME))
def test_a_neighbour_on_the_same_released_counts_gets_the_same_domain(name: str) -> None:
    """The case's neighbour, its noise replayed from the table's release (module docstring), gets the same release in
    every field: a real neighbour (some exact count differs), whose table published no key the neighbour lacks."""
    first, second, seam, neighbour = replayed(name)
    assert any(drawn.counts != again.counts or drawn.keys != again.keys
               for drawn, again in zip(seam.draws, neighbour.draws))  # the exact counts differ: a real neighbour
    assert not keyed_out(first, seam, neighbour), "D published a key D' does not hold: no case for this test"
    assert differences(first, second) == []


def test_the_cases_reach_every_rule_the_release_has() -> None:
    """The cases are not vacuous: together they give every field of the release a value, both placements, both
    locations, a coded declared column, and keys only one of D and D' holds (categories and atoms)."""
    releases = [replayed(name)[0] for name in BY_NAME]
    for field in dataclasses.fields(DomainRelease):
        if isinstance(getattr(releases[0], field.name), dict):
            assert any(getattr(domain, field.name) for domain in releases), field.name
    assert {value for domain in releases for value in domain.placed.values()} == {True, False}
    assert {value for domain in releases for value in domain.located.values()} == {True, False}
    assert {kind for domain in releases for kind in domain.kinds.values()} == {"integer", "float", "categorical"}
    assert any(set(domain.coded) & set(domain.declared) for domain in releases)  # a declared range's values, coded
    one_sided: set[tuple[str, bool]] = set()  # (stage, whether the key is D's): keys of one table only
    for name in BY_NAME:
        _, _, seam, neighbour = replayed(name)
        for drawn, again in zip(seam.draws, neighbour.draws):
            one_sided |= {(drawn.stage, key in drawn.keys) for key in set(again.keys) ^ set(drawn.keys)}
    assert {("categories", False), ("categories", True), ("atoms", False), ("atoms", True)} <= one_sided


def exact_placement(seam: Seam) -> dict[str, object]:
    """The review's mutant: ``placement`` fed the column's exact counts of numbers and other entries (the private input
    of stage 1) instead of their noisy values. It is called just after the column's stage-2 draw."""

    def mutant(kind: str, located: bool, number_count: float, other_count: float, *rest: float) -> bool:
        column = seam.draws[-1].column
        integer, non_integer, other, _ = next(drawn.counts for drawn in seam.draws
                                              if drawn.stage == "types" and drawn.column == column)
        return placement(kind, located, integer + non_integer, other, *rest)  # type: ignore[arg-type]

    return {"placement": mutant}


def exact_trim(seam: Seam) -> dict[str, object]:
    """A range rule reading the exact value histogram: ``trimmed_span`` fed the column's exact histogram counts (its
    stage-3 draw's, just made: the range's cells, each overflow cell folded into its end cell as ``widened`` folds an
    overflow that widens nothing) instead of the noisy ones."""

    def mutant(counts: np.ndarray, noise_std: np.ndarray, trimmable: np.ndarray) -> tuple[int, int]:
        drawn = seam.draws[-1]
        assert drawn.stage == "histogram" and len(drawn.counts) == len(counts) + 2, "the range was widened"
        exact = np.array(drawn.counts[1:-1])
        exact[0], exact[-1] = exact[0] + drawn.counts[0], exact[-1] + drawn.counts[-1]
        return trimmed_span(exact, noise_std, trimmable)

    return {"trimmed_span": mutant}


def exact_range(seam: Seam) -> dict[str, object]:
    """A range rule reading the exact stage-2 bins: ``numeric_bounds`` fed the column's exact bin counts (its stage-2
    draw's, just made, less the missing cell) instead of the noisy ones."""

    def mutant(counts: np.ndarray, lower: np.ndarray, upper: np.ndarray,
               noise_std: float) -> tuple[tuple[float, float], bool]:
        drawn = seam.draws[-1]
        assert drawn.stage == "bins" and len(drawn.counts) == len(counts) + 1
        return numeric_bounds(np.array(drawn.counts[:-1]), lower, upper, noise_std)

    return {"numeric_bounds": mutant}


def exact_overflow(seam: Seam) -> dict[str, object]:
    """A range rule reading the exact overflow: ``widened`` fed the column's exact counts beyond its stage-2 range (its
    stage-3 draw's first and last cells, just made) instead of the noisy ones."""

    def mutant(edges: np.ndarray, counts: np.ndarray, below: float, above: float, *rest: Any) -> tuple[np.ndarray, ...]:
        drawn = seam.draws[-1]
        assert drawn.stage == "histogram" and len(drawn.counts) == len(counts) + 2
        return widened(edges, counts, drawn.counts[0], drawn.counts[-1], *rest)

    return {"widened": mutant}


def exact_decimals(seam: Seam) -> dict[str, object]:
    """A precision rule reading the exact precision partition: ``output_decimals`` fed the column's exact counts of
    numbers by decimals (its stage-4 draw's, just made) instead of the noisy ones."""

    def mutant(counts: np.ndarray, noise_std: float) -> tuple[int, bool] | None:
        drawn = seam.draws[-1]
        assert drawn.stage == "decimals" and len(drawn.counts) == len(counts)
        return output_decimals(np.array(drawn.counts), noise_std)

    return {"output_decimals": mutant}


def coded_columns(seam: Seam) -> Callable[[], str]:
    """The column of each successive call to a rule the release calls once per numeric column in stage 3's order (the
    coded rule's loop: typed numeric columns, then declared ones), read from the draws, all made by then."""
    calls = itertools.count()
    return lambda: [drawn.column for drawn in seam.draws if drawn.stage == "histogram"][next(calls)]


def exact_count(seam: Seam, column: str, value: float, noisy: float) -> float:
    """The exact count behind a value ``column`` published at the count ``noisy``: its atom's (stage 4, by its key), or
    the unit cell's whose released count it is: a stage-3 cell, an end cell with its overflow cell folded in
    (``widened``), or a stage-2 unit bin appended by the widening but for the outermost (the overflow less the bins
    taken: not traced, as the edge cases need none)."""
    for drawn in seam.draws:
        if drawn.column != column:
            continue
        if drawn.stage == "atoms" and value in drawn.keys:
            return drawn.counts[drawn.keys.index(value)]
        if drawn.stage in ("histogram", "bins"):
            if noisy in drawn.released:
                return drawn.counts[drawn.released.index(noisy)]
            if drawn.stage == "histogram" and len(drawn.released) > 3:
                for end, beside in ((0, 1), (-1, -2)):
                    if drawn.released[beside] + drawn.released[end] == noisy:
                        return drawn.counts[beside] + drawn.counts[end]
    raise AssertionError(f"{value} of {column!r}: an end widened over stage-2 bins (its count mixes two stages)")


def exact_published(seam: Seam) -> dict[str, object]:
    """A coded rule deciding which values a column publishes by their exact counts: ``published_values`` choosing the
    unit cells that stand out by each cell's exact count (``exact_count``) instead of its noisy one, at the same level;
    it returns the chosen values with their noisy counts, so that only the decision reads the private numbers."""
    column_of = coded_columns(seam)

    def mutant(atoms: tuple[tuple[float, float], ...], atom_std: float,
               units: list[tuple[int, float, float]]) -> list[tuple[float, float, float]]:
        column = column_of()
        chosen = {value for value, _, _ in published_values(
            (), atom_std, [(value, exact_count(seam, column, value, count), std) for value, count, std in units])}
        return sorted(published_values(atoms, atom_std, [])
                      + [(float(value), count, std) for value, count, std in units if value in chosen])

    return {"published_values": mutant}


def exact_coded(seam: Seam) -> dict[str, object]:
    """A coded rule reading its values' exact counts: ``coded_values`` deciding whether the column is coded from each
    published value's exact count (``exact_count``) instead of its noisy one; it returns the values as given (their
    noisy counts)."""
    column_of = coded_columns(seam)

    def mutant(values: list[tuple[float, float, float]], numbers: float) -> tuple[tuple[float, float, float], ...]:
        column = column_of()
        exact = [(value, exact_count(seam, column, value, count), std) for value, count, std in values]
        return tuple(values) if coded_values(exact, numbers) else ()

    return {"coded_values": mutant}


def exact_denominator(seam: Seam) -> dict[str, object]:
    """The coded rule's denominator read exactly: ``coded_values`` given the column's exact count of numbers (its
    stage-3 draw's counts, in which each number is in one cell: a typed column's overflow cells cover the line beyond
    its range, a declared column's numbers are clipped into it) instead of n where public, else the noisy stage-1
    count (``totals`` in ``release_domain_at``)."""
    column_of = coded_columns(seam)

    def mutant(values: list[tuple[float, float, float]], numbers: float) -> tuple[tuple[float, float, float], ...]:
        column = column_of()
        drawn = next(drawn for drawn in seam.draws if drawn.stage == "histogram" and drawn.column == column)
        return coded_values(values, sum(drawn.counts))

    return {"coded_values": mutant}


def detected(case: Case, mutant: Callable[[Seam], dict[str, object]]) -> list[str]:
    """What tells ``case``'s table and its neighbour apart under ``mutant`` on the same released counts: the fields of
    the release that differ, or the draw at which the neighbour's release asked for other cells (``Diverged``)."""
    try:
        first, second, _, _ = replay(case, mutant)
    except Diverged as diverged:
        return [f"diverged at {diverged}"]
    return differences(first, second)


@pytest.mark.parametrize(("mutant", "name", "sign"), [
    (exact_placement, "as many numbers as strings", "release.placed['value']"),
    (exact_trim, "a tail at the trim's edge", "release.bounds['x']"),
    (exact_range, "outliers at the range's edge", "diverged at call 2: histogram of 'x'"),  # its cells follow the range
    (exact_overflow, "a group beyond the range at the extension's edge", "release.bounds['x']"),
    (exact_decimals, "decimals at the precision's edge", "release.decimals['x']"),
    (exact_published, "a unit cell at the published values' edge", "release.coded['x']"),
    (exact_coded, "a coded column at the coded share's edge", "release.coded"),
    (exact_denominator, "add/remove, a coded column at the denominator's edge", "release.coded"),
])
def test_the_replay_catches_rules_that_read_exact_counts(mutant: Callable[[Seam], dict[str, object]], name: str,
                                                          sign: str) -> None:
    """Each mutant changes what the neighbour's release does on the same released counts, where its rule decides, on
    the case built at its decision's edge (unmutated, the same case passes: the test above)."""
    found = detected(BY_NAME[name], mutant)
    assert any(difference.startswith(sign) for difference in found), found

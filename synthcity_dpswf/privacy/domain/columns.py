r"""The DP domain's columns (privacy.md, "The DP domain"): the fixed partitions each kind of column is counted in, and
what is read back of a column from its released counts. The partitions are public functions of the kind and the
range, fixed before any count; everything else here is post-processing of released counts. The noise is
``calibration``'s, the draws ``release``'s.

**Kinds** (stage 1, read back): a typed column's kind from its noisy type counts (``decide_kind``), and whether it
gets a missing level from its two noisy missing counts (``missing_level``; stages 1 and 2). The margins are priors in
noise stds, so that noise alone rarely changes a column's kind or gives it a level it does not need.

**Bins** (stages 2 and 3): a numeric column's stage-2 bins (signed octaves for a float column, unit bins around zero
for an integer one: ``stage_two_edges``) and the value-histogram cells inside a released or declared range
(``histogram_edges``).

**A numeric column**: its bounds, their trimming by the value histogram, and whether it is placed. The bins are a
fixed set given the kind, all released, so a numeric column's bounds are post-processing (``numeric_bounds``): the
*anchor* is the window of ``WINDOW`` consecutive bins with the largest noisy sum (the records of a column sit in a few
neighbouring bins, so a window gathers their counts while its noise grows only as :math:`\sqrt{W}`); a bin is kept
when its noisy count exceeds :math:`s\,\Phi^{-1}(1 - 0.001 / B)` anywhere (an empty bin passes with probability
0.1% / B), or when it is in the *densest run*: the contiguous bins whose counts minus ``RUN_PENALTY`` s have the
largest sum (``densest_run``), kept when the anchor's fullest bin exceeds :math:`s\,\Phi^{-1}(1 - 0.01 / W)`, s being
the bins' noise std (weak bins between strong ones stay; an empty neighbour joins with probability 0.6%, stretching a
range by one bin). Isolated bins inside the anchor at the same level are not kept: on a small integer target they
widened the range by a class no record has (docs/flows.md). A run of k bins that touches no kept bin is kept too when
its counts sum to more than :math:`s\sqrt{k}\,\Phi^{-1}(1 - 0.001 / (B (B + 1)))` (``significant_runs``: a
spread-out mode, as the positive amounts of a zero-inflated column, each of whose octaves is below the single-bin
level; each of the B (B + 1) / 2 runs of pure noise passes with probability 0.1% / (B (B + 1)), so an empty column
gains a run in at most 0.05% of releases). If no bin is kept, the anchor's central bins are (``located`` is then
False: the release could not place the column at this budget, and the caller says so).

Numeric bounds are the edges of the lowest and highest kept bins (within a factor of 2 of the data's extent between
:math:`2^{-16}` and :math:`2^{48}` in magnitude, which is enough to scale it; values beyond fall in the end bins; for
an integer column, the integers inside them, widened before stage 3 to [k, k + 1] when only k is, or to [k - 1, k]
where k - 1's noisy bin exceeds k + 1's by ``ROUGH_LEVEL`` stds of their difference: ``two_integers``, so that stage
3 counts both values: a function of stage 2's output, as every stage-3 range).

After stage 3 a numeric column's range is trimmed at each end by its value histogram (``trimmed_span``): the longest
end-run of cells each of whose runs from that end (first k cells) sums to at most min(``TRIM_LEVEL`` s_q sqrt(k),
``TRIM_SHARE`` of the histogram's total) is dropped (s_q = r_q s_c; unit bins of an integer column never are), so a
range ends where its numbers do, not on the octave's edge nor on a bin noise added beside it; atoms outside the
trimmed range are not published. A numeric column is placed only when its range holds its numbers
(``holds_the_numbers``: ``HELD_SHARE`` of its stage-1 count of numbers exceeds the noisy sum of the range's stage-2
bins by at most ``ROUGH_LEVEL`` stds).

**A categorical column**: its stated default categories, and the estimate of its rows in categories below the key
threshold (``calibration``). The rows of a categorical column in categories below the threshold are estimated from
released counts (its rows with an entry, from its own type counts and from the other columns' type totals less its
estimated missing entries, combined by inverse variance, minus its published categories' counts:
``unpublished_estimate``); where the estimate exceeds ``OTHER_LEVEL`` of its noise standard deviations the column
gets one more category, ``OTHER_CATEGORY``, to which the encoders map every unpublished value (``DomainRelease.lost``).
A column left with its published categories only keeps that estimate (``DomainRelease.unpublished``), which the
plugins' warning prints for a column left with one.
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
from scipy.stats import norm

Kind = Literal["integer", "float", "categorical"]
"""A typed column's kind, decided from its stage-1 counts (``decide_kind``)."""

KIND_MARGIN = 1.5
"""A typed column is categorical only when its noisy "anything else" count exceeds the sum of its two numeric counts
by this many noise stds of that difference (``decide_kind``): a prior for numbers, so that noise does not type a float
column categorical (without it, noise did on tables of many float columns: docs/privacy.md, "The DP domain", has the
rates), while a string column with about as many rows as one category needs to be published
(``DomainRelease.needed_rows``) or more is still categorical."""
FLOAT_MARGIN = 4.0
"""A numeric column is a float column when its noisy count of non-integer numbers exceeds its integer count, or this
many noise stds (``decide_kind``): a clear share of non-integer numbers (rainfall, mostly exact zeros) keeps a float
column float; an integer column becomes float with probability 0.003% (at 3 stds, 0.13%: often enough for an
integer target to change dtype family now and then in a suite of runs)."""
MIXED_MARGIN = 5.0
"""A column whose noisy counts of numbers and of other entries both exceed this many of their noise stds mixes
kinds (``DomainRelease.mixed``): the entries of the kind it was not given are mapped to a stated default, and the
plugins say so. At 3 stds a column without other entries is named in 0.13% of releases, often enough for a suite of
runs to warn about a column of numbers only; at 5, 3e-7."""
MISSING_THRESHOLD = 4.0
"""A typed column gets a missing level when its estimated missing entries (two noisy counts, ``missing_level``)
exceed this many of their noise stds: a column without missing entries gets the level with probability 0.003% (a
level it does not need lets the flow emit missing entries where the real column has none; at 3 stds, 0.13% per
column, often enough for a label column to come back with missing entries, which synthcity's evaluators refuse); the
estimates of the others are kept, unwarned (``DomainRelease.hidden_missing``)."""


def decide_kind(integer_count: float, float_count: float, other_count: float, count_std: float) -> Kind:
    """A typed column's kind from its noisy type counts (each of noise std ``count_std``; post-processing):
    categorical when the "anything else" count exceeds the numeric ones by ``KIND_MARGIN`` stds of the difference,
    else float when the non-integer count exceeds the integer count or ``FLOAT_MARGIN`` stds, else integer."""
    if other_count - (integer_count + float_count) > KIND_MARGIN * math.sqrt(3.0) * count_std:
        return "categorical"
    if float_count > integer_count or float_count > FLOAT_MARGIN * count_std:
        return "float"
    return "integer"


def missing_level(first: float, first_std: float, second: float, second_std: float) -> tuple[bool, float]:
    """Whether a column gets a missing level, and the estimated missing entries: the inverse-variance mean of its two
    noisy missing counts (stage 1's type cell and stage 2's missing cell), above ``MISSING_THRESHOLD`` of its noise
    stds (post-processing)."""
    weights = np.array([1 / first_std**2, 1 / second_std**2])
    estimate = float(np.dot(weights, [first, second]) / weights.sum())
    return estimate > MISSING_THRESHOLD / math.sqrt(weights.sum()), estimate


LOG2_MIN = -16
"""The finest octave of the stage-2 bins: magnitudes below 2^-16 fall in the bin around zero."""
LOG2_MAX = 48
"""The coarsest octave: magnitudes beyond 2^48 fall in the end bins."""
SUB_BINS = 8
"""Sub-bins per stage-2 bin in a value histogram (stage 3): a float column's octave in eighths (9% wide)."""


def log_bin_edges() -> np.ndarray:
    """The bins of a float column: -2^48 .. -2^-16, 2^-16 .. 2^48 (signed octaves; the middle bin holds zero)."""
    magnitudes = 2.0 ** np.arange(LOG2_MIN, LOG2_MAX + 1)
    return np.concatenate([-magnitudes[::-1], magnitudes])


def integer_bin_edges() -> np.ndarray:
    """The bins of an integer column: -2^48 .. -32, then -16.5, -15.5, .., 16.5 (one bin per integer of -16..16),
    then 32 .. 2^48."""
    magnitudes = 2.0 ** np.arange(5, LOG2_MAX + 1)
    return np.concatenate([-magnitudes[::-1], np.arange(-16.5, 17.0), magnitudes])


def stage_two_edges(kind: Kind) -> np.ndarray:
    """The stage-2 bins of a numeric column of ``kind`` (``integer_bin_edges`` or ``log_bin_edges``)."""
    return integer_bin_edges() if kind == "integer" else log_bin_edges()


def histogram_edges(low: float, high: float, integer: bool) -> np.ndarray:
    """The edges of a value histogram over [low, high] (stage 3): the kind's stage-2 bins inside the range, each split
    into ``SUB_BINS`` sub-bins, geometric where the bin lies on one side of zero, linear where it touches zero; an
    integer column's unit bins stay whole. A float range that holds zero (across it, or from it as a declared
    ``(0, 60)``) has the octaves within 1/64 of its largest magnitude merged into one bin beside zero, split
    linearly, and keeps zero's atom, the bins between 0 and +-2^-16 (``adapters.table_domain.snapped_to_zero``: the
    exact zeros of an amount). A public function of the (released or declared) range. Without the merge, a declared
    range from zero would keep every octave down to 2^-16, most of its cells below 1, where no value of a count, a
    duration or an amount lies: cells of pure noise (docs/flows.md)."""
    edges = integer_bin_edges() if integer else log_bin_edges()
    inner = edges[(edges > low) & (edges < high)]
    finest = 2.0**LOG2_MIN
    atom = not integer and low <= 0 <= high and max(abs(low), abs(high)) > finest
    if atom:
        inner = inner[np.abs(inner) >= max(abs(low), abs(high)) / 64]
        inner = np.concatenate([inner, [edge for edge in (-finest, 0.0, finest) if low < edge < high]])
    outer = np.unique(np.concatenate([[low], inner, [high]]))
    pieces = [outer[:1]]
    for start, stop in zip(outer[:-1], outer[1:]):
        nearest = min(abs(start), abs(stop))
        if (integer and stop - start <= 1.0 + 1e-9) or (atom and nearest == 0 and max(abs(start), abs(stop)) <= finest):
            pieces.append(np.array([stop]))  # a unit bin, or zero's atom: whole
        elif (start > 0 or stop < 0) and nearest > finest * (1 + 1e-9):
            sign, a, b = (1.0, start, stop) if start > 0 else (-1.0, -start, -stop)
            pieces.append(sign * np.geomspace(a, b, SUB_BINS + 1)[1:])
        else:
            pieces.append(np.linspace(start, stop, SUB_BINS + 1)[1:])
    return np.unique(np.concatenate(pieces))


WINDOW = 8
"""Bins per anchor window in ``numeric_bounds``."""
RUN_PENALTY = 2.5
"""What each bin of a numeric column's range must pay, in noise stds (``densest_run``): an empty bin joins the run
only with noise above this many stds beside it (0.6% per side), so that noise seldom gives an integer target a class
no record has (the rates at this penalty and a lower one: docs/flows.md)."""
TRIM_LEVEL = 2.5
"""A released range's ends lose the runs of value-histogram cells that do not stand this many noise stds out of the
noise (``trimmed_span``) ..."""
TRIM_SHARE = 0.05
"""... and hold an estimated share of the column's numbers at most this (``trimmed_span``)."""
HELD_SHARE = 0.4
"""A numeric column's released range must be consistent with holding this share of its numbers (``holds_the_numbers``):
a range that holds fewer is a window of noise or of a minority of its values, not its range. Chosen between windows of
noise and a column spread over octaves of a small table (``benchmarks/held_share.py``,
``benchmarks/results/held_share.md``; docs/flows.md)."""
ROUGH_LEVEL = 2.0
"""... within this many noise stds of the difference (``holds_the_numbers``): a range that holds that share
fails with probability 2.3%, one that holds them all (the usual case) almost never."""


def numeric_bounds(
    counts: np.ndarray, lower: np.ndarray, upper: np.ndarray, noise_std: float
) -> tuple[tuple[float, float], bool]:
    """Bounds of one numeric column from the noisy counts of bins ``[lower[i], upper[i])`` in increasing order
    (module docstring), and whether any bin stood out of the noise. Post-processing of the released counts."""
    n_bins = len(counts)
    width = min(WINDOW, n_bins)
    window_sums = np.convolve(counts, np.ones(width), mode="valid")
    start = int(np.argmax(window_sums))
    strong = counts > noise_std * float(norm.isf(0.001 / n_bins))
    # The densest run of bins (each paying ``RUN_PENALTY`` stds), kept when the anchor's fullest bin stands out: a
    # column's bins are neighbours, and a false neighbour stretches the range by one bin only.
    peak = start + int(np.argmax(counts[start : start + width]))
    low, high = densest_run(counts - RUN_PENALTY * noise_std)
    run = np.zeros(n_bins, dtype=bool)
    run[low : high + 1] = counts[peak] > noise_std * float(norm.isf(0.01 / width))
    for first, last in significant_runs(counts, noise_std, strong | run):
        run[first : last + 1] = True
    kept = np.flatnonzero(strong | run)
    located = len(kept) > 0
    if not located:
        kept = np.arange(start + width // 2 - 1, start + width // 2 + 1)
    return (float(lower[kept[0]]), float(upper[kept[-1]])), located


def densest_run(gains: np.ndarray) -> tuple[int, int]:
    """The first and last index of the contiguous run of largest sum (Kadane's algorithm): bins whose count exceeds
    the penalty add to a run, the others cost it, so a run keeps weak bins between strong ones and stops where the
    bins beyond cost more than they add."""
    best, best_run, total, start = -np.inf, (0, 0), 0.0, 0
    for index, gain in enumerate(gains):
        if total <= 0:
            total, start = 0.0, index
        total += float(gain)
        if total > best:
            best, best_run = total, (start, index)
    return best_run


def significant_runs(counts: np.ndarray, noise_std: float, kept: np.ndarray) -> list[tuple[int, int]]:
    """The first and last index of each run of bins outside ``kept`` that stands out of the noise as a whole: the run
    of k bins whose counts' sum has the largest z = sum / (s sqrt(k)) among the runs that touch no kept bin, while z
    exceeds Phi^{-1}(1 - 0.001 / (B (B + 1))) (module docstring), then the next among the bins left. Without such runs a
    zero-inflated column whose positive amounts spread over many octaves, each within the noise, keeps its zeros only
    and every positive amount is clipped to zero (docs/flows.md). Post-processing of the released counts."""
    n_bins = len(counts)
    level = float(norm.isf(0.001 / max(n_bins * (n_bins + 1), 1)))
    taken = kept.copy()
    runs: list[tuple[int, int]] = []
    while True:
        best, best_run = level, None
        for first in np.flatnonzero(~taken):
            stop = first + int(np.argmax(np.append(taken[first:], True)))  # the first taken bin after ``first``
            sums = np.cumsum(counts[first:stop])
            z = sums / (noise_std * np.sqrt(np.arange(1, stop - first + 1)))
            last = int(np.argmax(z))
            if z[last] > best:
                best, best_run = float(z[last]), (int(first), int(first + last))
        if best_run is None:
            return runs
        runs.append(best_run)
        taken[best_run[0] : best_run[1] + 1] = True


def two_integers(
    bounds: tuple[float, float], counts: np.ndarray, edges: np.ndarray, noise_std: float
) -> tuple[float, float]:
    """An integer column's stage-2 ``bounds`` widened to two integers where they hold one, k (a unit bin): to k + 1,
    or to k - 1 where that neighbour's noisy count (``counts`` over the bins of ``edges``, noise std ``noise_std``)
    exceeds k + 1's by ``ROUGH_LEVEL`` stds of their difference (a unit bin each; else the other one). The codecs
    widen a one-integer range to [k, k + 1] anyway (a range needs two ends); widened before stage 3, the value
    histogram counts both integers apart, so the output's second value is measured rather than fed by the numbers
    that stage 3 clipped into k (a rare value, its bin within the noise, otherwise leaves a binary column constant:
    docs/privacy.md, "The DP domain"). Post-processing of released counts."""
    low, high = bounds
    if high - low != 1.0 or not -16.5 <= low < 16.5:
        return bounds
    index = int(np.searchsorted(edges, low))
    below = counts[index - 1] if low > -16.5 else -math.inf
    above = counts[index + 1] if high < 16.5 else -math.inf
    if below - above > ROUGH_LEVEL * math.sqrt(2.0) * noise_std:
        return low - 1.0, high
    return low, high + 1.0


def split_bins(edges: np.ndarray, integer: bool) -> np.ndarray:
    """Which cells of a value histogram (``histogram_edges``) may be trimmed: all but an integer column's unit bins
    (one integer each, measured alone by stage 2, and the cells of its one-way measurement)."""
    widths = np.diff(np.ceil(edges)) if integer else np.full(len(edges) - 1, np.inf)
    return ~(integer & (widths <= 1) & (np.abs(edges[:-1]) < 17) & (np.abs(edges[1:]) < 17))


def trimmed_span(counts: np.ndarray, noise_std: float, trimmable: np.ndarray) -> tuple[int, int]:
    r"""The first and last cell of a value histogram (noisy ``counts``, each of noise std ``noise_std``) that a released
    range keeps: from each end, the longest run of ``trimmable`` cells each of whose runs from that end (its first k
    cells) sums to at most :math:`\min(z s \sqrt{k}, f \sum c - s \sqrt{k})` is dropped: an end-run that does not
    stand ``TRIM_LEVEL`` = z stds out of its noise and holds ``TRIM_SHARE`` = f of the column's numbers at most, one
    noise std above its estimate (so a histogram too noisy to tell, a few hundred rows, is not trimmed)
    (the histogram counts them all: stage 3 clips those outside the range into its end cells, so an end that cuts
    into the data stands out there and stays). A stage-2 range ends on whole octaves, so it may reach twice a column's
    largest value, and a bin that noise adds beside it (0.6% per side) doubles that again (the cases before and after:
    ``benchmarks/results/domain_plausibility.md``). The share bounds what a thin tail, each of its cells within the
    noise, can lose (its values are placed at the new end, as values beyond a range are). Post-processing of the
    released counts."""
    counts = np.asarray(counts, dtype=float)
    scale = noise_std * np.sqrt(np.arange(1, len(counts) + 1))
    allowed = np.minimum(TRIM_LEVEL * scale, TRIM_SHARE * float(counts.sum()) - scale)
    ends = []
    for ordered, movable in ((counts, trimmable), (counts[::-1], trimmable[::-1])):
        quiet = np.cumsum(ordered) <= allowed
        ends.append(min(int(np.cumprod(quiet & movable).sum()), len(ordered) - 1))  # the end-run that may go
    first, last = ends[0], len(counts) - 1 - ends[1]
    return (first, last) if first <= last else (0, len(counts) - 1)


def holds_the_numbers(range_mass: float, range_std: float, number_count: float, count_std: float) -> bool:
    """Whether a numeric range's noisy mass (the sum of its stage-2 bins, noise std ``range_std``) is consistent with
    its holding ``HELD_SHARE`` of the column's numbers (stage 1's noisy integer and float counts, each of noise std
    ``count_std``): that share of the count exceeds the mass by at most ``ROUGH_LEVEL`` stds of their difference. A
    window of pure noise holds none of a column's numbers, as when a column's numbers spread over unit bins each within
    the noise (docs/privacy.md, "The DP domain"). Post-processing of released counts."""
    number_std = math.sqrt(2.0) * count_std
    spread = math.sqrt((HELD_SHARE * number_std) ** 2 + range_std**2)
    return HELD_SHARE * number_count - range_mass <= ROUGH_LEVEL * spread


def placement(
    kind: Kind, located: bool, number_count: float, other_count: float, count_std: float, range_mass: float,
    range_std: float,
) -> bool:
    """Whether a typed column's output may hold values (post-processing of released counts). A categorical column: when
    some category was published. A numeric one: when its noisy count of numbers exceeds its count of other entries
    (stage 1: a column typed numeric only by ``KIND_MARGIN``, its "anything else" count ahead, is of no clear kind),
    its range holds its numbers (``holds_the_numbers``: ``range_mass``, the noisy sum of the range's stage-2 bins of
    noise std ``range_std``, read against its count of numbers), and either its bins stood out of the noise
    (``numeric_bounds``) or, failing that, its count of numbers exceeds one of its noise stds (sqrt(2)
    ``count_std``): its range is then the densest window of its noisy bins. A column with no released evidence of its
    values would otherwise get a window of pure noise, anywhere between -2^48 and 2^48 (docs/privacy.md, "The DP
    domain"): such a column is output as missing entries only. (``release_domain`` also places no numeric column of a
    table too small for any bin to stand out: its rows, all in one bin, below the run's threshold.)"""
    if kind == "categorical":
        return located
    if number_count <= other_count or not holds_the_numbers(range_mass, range_std, number_count, count_std):
        return False
    return located or number_count > math.sqrt(2.0) * count_std


NO_CATEGORY = "(no category released)"
"""The category of a categorical column none of whose categories passed the threshold."""
OTHER_CATEGORY = "(other categories)"
"""The extra category of a categorical column whose unpublished categories hold a released share of its rows."""
OTHER_LEVEL = 3.0
"""A categorical column gets ``OTHER_CATEGORY`` when its estimated rows in unpublished categories
(``unpublished_estimate``) exceed this many of the estimate's noise stds: a column whose categories were all
published gets it in 0.13% of releases. Set on the validation tables (fair, the stand-in; docs/privacy.md, "The DP
domain"): at 2 stds fully published columns got a level no row has."""


def category_value(key: tuple[str, object]) -> object:
    """The published category of a key (``category_key``): a bool, an int or float, or the entry itself."""
    return key[1]


def unpublished_estimate(
    present: float, other_totals: list[float], missing: float, count_std: float, category_std: float,
    published: np.ndarray,
) -> tuple[float, float]:
    """A categorical column's estimated rows in unpublished categories, and its noise std: its rows with an entry,
    estimated twice from independent noisy counts and combined by inverse variance (its own type counts' sum
    ``present``, variance 3 ``count_std``^2; the other typed columns' mean total ``other_totals`` (each counts every row
    once: variance 4 ``count_std``^2 / C') less its estimated missing entries ``missing`` (``missing_level``'s), less
    its published categories' counts (``category_std`` each). With many columns the second is the sharper (docs/privacy.md,
    "The DP domain", has a measured case). Post-processing of released counts."""
    missing_variance = 1 / (1 / count_std**2 + 1 / category_std**2)
    estimates, variances = [present], [3 * count_std**2]
    if other_totals:
        estimates.append(float(np.mean(other_totals)) - missing)
        variances.append(4 * count_std**2 / len(other_totals) + missing_variance)
    weights = 1 / np.array(variances)
    rows = float(np.dot(weights, estimates) / weights.sum())
    return rows - float(np.sum(published)), math.sqrt(1 / weights.sum() + len(published) * category_std**2)

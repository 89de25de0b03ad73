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
widened the range by a class no record has. A run of k bins that touches no kept bin is kept too when
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

After stage 3 a typed column's range is widened beyond an end whose overflow cell (its numbers beyond the stage-2
range, counted by stage 3) stands out, over the stage-2 bins that best account for it (``extension``, ``widened``),
and trimmed at each end by its value histogram (``trimmed_span``): the longest end-run of cells each of whose runs
from that end (first k cells) sums to at most min(``TRIM_LEVEL`` s_k, ``TRIM_SHARE`` of the histogram's total), s_k
the noise std of their sum, is dropped (unit bins of an integer column from -16 to 16 never are), so a range keeps its
numbers and ends where they do, not on the octave's edge nor on a bin noise added beside it; atoms are counted inside
the final range. A numeric column is placed only when its range holds its numbers
(``holds_the_numbers``: ``HELD_SHARE`` of its stage-1 count of numbers exceeds the noisy sum of the range's stage-2
bins by at most ``ROUGH_LEVEL`` stds).

**Coded numbers and precision**: a numeric column's published values (a float column's atoms, an integer column's
integers whose stage-3 cells stand out: ``published_values``) code it when they hold nearly all its numbers
(``coded_values``), and a float column's output is rounded to what its precision counts show (``output_decimals``).

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

from synthcity_dpswf.privacy.counts import MAX_DECIMALS

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


UNIT_INTEGERS = 128
"""An integer range of at most this many integers gets one stage-3 cell per integer (``histogram_edges``): its coded
values (speeds of 25, 33, 50, 66 and 100 in [17, 128)) are counted one by one, without a key, and read back as its
published values where they stand out (``published_values``). A wider range keeps the stage-2 bins' sub-bins: one cell
per integer there would spread the noise of hundreds of cells over the quantiles its levels are placed at."""


def integers_per_cell(edges: np.ndarray, closed: bool = False) -> np.ndarray:
    """How many integers each cell of ``edges`` holds: ceil(b) - ceil(a) for [a, b), and for the last cell of a
    ``closed`` histogram (a declared range's, ``histogram_edges``), [a, b], floor(b) - ceil(a) + 1."""
    edges = np.asarray(edges, dtype=float)
    counts = np.diff(np.ceil(edges))
    if closed and len(counts):
        counts[-1] = np.floor(edges[-1]) - np.ceil(edges[-2]) + 1
    return counts


def histogram_edges(low: float, high: float, integer: bool, closed: bool = False) -> np.ndarray:
    """The edges of a value histogram over [low, high] (stage 3): an integer range of at most ``UNIT_INTEGERS``
    integers, one cell per integer (inner edges at the half-integers; the integers of [low, high), or of [low, high]
    where ``closed``: a declared range); else the kind's stage-2 bins inside the range, each split into ``SUB_BINS``
    sub-bins, geometric where the bin lies on one side of zero, linear where it touches zero; an integer column's unit
    bins stay whole. A float range that holds zero (across it, or from it as a declared
    ``(0, 60)``) has the octaves within 1/64 of its largest magnitude merged into one bin beside zero, split
    linearly, and keeps zero's atom, the bins between 0 and +-2^-16 (``adapters.table_domain.snapped_to_zero``: the
    exact zeros of an amount). A public function of the (released or declared) range. Without the merge, a declared
    range from zero would keep every octave down to 2^-16, most of its cells below 1, where no value of a count, a
    duration or an amount lies: cells of pure noise."""
    first, stop = math.ceil(low) + 0.5, high - (0.0 if closed else 0.5)  # the inner half-integer edges: [first, stop)
    if integer and math.ceil(stop - first) + 1 <= UNIT_INTEGERS:  # at most UNIT_INTEGERS integers
        halves = np.arange(first, stop, 1.0)
        return np.unique(np.concatenate([[low], halves[halves > low], [high]]))
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
no record has (a penalty of 2 adds such a class about four times as often)."""
TRIM_LEVEL = 2.5
"""A released range's ends lose the runs of value-histogram cells that do not stand this many noise stds out of the
noise (``trimmed_span``) ..."""
TRIM_SHARE = 0.05
"""... and hold an estimated share of the column's numbers at most this (``trimmed_span``) ..."""
TRIM_ALONE = 0.001
"""... and hold no cell whose count stands Phi^{-1}(1 - TRIM_ALONE / B) of its noise stds out by itself, B the
histogram's cells (``trimmed_span``): an empty cell does in 0.1% of releases."""
HELD_SHARE = 0.4
"""A numeric column's released range must be consistent with holding this share of its numbers (``holds_the_numbers``):
a range that holds fewer is a window of noise or of a minority of its values, not its range. Chosen between windows of
noise and a column spread over octaves of a small table (``benchmarks/studies/held_share.py``,
``benchmarks/results/held_share.md``)."""
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
    and every positive amount is clipped to zero. Post-processing of the released counts."""
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
    from -16 to 16 (one integer each, measured alone by stage 2, and the cells of its one-way measurement); the
    cells of one integer beyond them are stage 3's only, and trimmed as any other."""
    widths = np.diff(np.ceil(edges)) if integer else np.full(len(edges) - 1, np.inf)
    return ~(integer & (widths <= 1) & (np.abs(edges[:-1]) < 17) & (np.abs(edges[1:]) < 17))


def trimmed_span(counts: np.ndarray, noise_std: float | np.ndarray, trimmable: np.ndarray) -> tuple[int, int]:
    r"""The first and last cell of a value histogram (noisy ``counts``, of noise std ``noise_std``: one for every cell,
    or one per cell) that a released range keeps: from each end, the longest run of ``trimmable`` cells each of whose
    runs from that end (its first k cells) sums to at most :math:`\min(z s_k, f \sum c - s_k)` is dropped, s_k the
    noise std of those k cells' sum (:math:`s\sqrt{k}` for equal stds): an end-run that does not stand
    ``TRIM_LEVEL`` = z stds out of its noise and holds ``TRIM_SHARE`` = f of the column's numbers at most, one noise
    std above its estimate (so a histogram too noisy to tell, a few hundred rows, is not trimmed) (the histogram counts
    them all: a typed column's numbers beyond its range are in its end cells, ``widened``, so an end that cuts into the
    data stands out there and stays). A stage-2 range ends on whole octaves, so it may reach twice a column's largest
    value, and a bin that noise adds beside it (0.6% per side) doubles that again (the cases before and after:
    ``benchmarks/results/domain_plausibility.md``). The share bounds what a thin tail, each of its cells within the
    noise, can lose (its values are placed at the new end, as values beyond a range are). A cell whose count stands
    ``TRIM_ALONE``'s Phi^{-1}(1 - 0.001 / B) stds out by itself (B cells) ends the run: after a long run of empty cells
    of one integer (a range of 17..127 whose ages end at 90), the run's sum is too noisy to show it. Post-processing of
    the released counts."""
    counts = np.asarray(counts, dtype=float)
    variances = np.broadcast_to(np.asarray(noise_std, dtype=float) ** 2, counts.shape)
    alone = float(norm.isf(TRIM_ALONE / len(counts)))  # a cell standing out by itself ends the run
    ends = []
    for ordered, movable, spread in ((counts, trimmable, variances), (counts[::-1], trimmable[::-1], variances[::-1])):
        scale = np.sqrt(np.cumsum(spread))
        allowed = np.minimum(TRIM_LEVEL * scale, TRIM_SHARE * float(counts.sum()) - scale)
        quiet = (np.cumsum(ordered) <= allowed) & (ordered <= alone * np.sqrt(spread))
        ends.append(min(int(np.cumprod(quiet & movable).sum()), len(ordered) - 1))  # the end-run that may go
    first, last = ends[0], len(counts) - 1 - ends[1]
    return (first, last) if first <= last else (0, len(counts) - 1)


EXTEND_LEVEL = 2.5
"""A typed column's released range is extended beyond an end whose overflow cell (stage 3 counts the numbers beyond
each end of the stage-2 range in a cell of their own) stands this many noise stds out of the noise (``extension``:
an empty overflow passes with probability 0.6%; at 2 stds, 2.3%, too often for a float column, whose extension runs
over empty octaves towards zero) ..."""
EXTEND_SHARE = 0.02
"""... and holds more than this share of the column's numbers by the histogram's noisy total: an overflow of a few
percent is left in the end cell, where the codecs clip it, rather than a range widened for it (privacy.md, "The DP
domain")."""
EXTEND_PENALTY = 2.0
"""What each stage-2 bin appended beyond an end pays in ``extension``'s criterion (-2 log-likelihood) for its mass, a
parameter of the model: Akaike's 2 (Akaike 1974). An empty bin left out would have lowered the criterion by 1/2 on
average (its positive excess squared), so each empty bin appended costs 3/2 net and a run of them is seldom taken."""
UNIT_EXTEND_PENALTY = 0.75
"""The same for a unit bin of an integer column (one integer): an empty one appended is one empty level, which the
coded rule drops (``coded_values``), where an empty octave doubles a float column's range; below 1/2 an empty unit bin
would cost nothing net (1/2 on average) and a range could wander over empty integers."""


def extension(overflow: float, overflow_std: float, beyond: np.ndarray, bins_std: float, total: float,
              penalties: np.ndarray) -> int:
    r"""How many stage-2 bins a typed column's range takes beyond one end. None unless the end's noisy ``overflow`` o
    (noise std ``overflow_std`` :math:`s_o`) exceeds ``EXTEND_LEVEL`` stds and ``EXTEND_SHARE`` of the column's noisy
    ``total``; else the k >= 1 that fits best the model "the numbers beyond the end are those of its next k bins": the
    bins ``beyond`` it (noisy counts :math:`b_i`, nearest first, noise std ``bins_std`` s' each) up to bin k hold the
    overflow and those after hold nothing, so k minimises

    .. math:: \frac{(o - \sum_{i \le k} b_i)^2}{s_o^2 + k s'^2} + \sum_{i > k} \frac{\max(b_i, 0)^2}{s'^2}
              + \sum_{i \le k} \lambda_i,

    the first term -2 log-likelihood of the overflow's count and the first k bins' at their best masses (which share
    what the overflow and the bins' sum disagree on), the second that of the bins left out being empty (a bin left out
    whose count is negative is as likely empty as not: only a positive excess argues for it), :math:`\lambda_i` the
    ``penalties`` (``EXTEND_PENALTY``, ``UNIT_EXTEND_PENALTY``), one per bin's mass. The overflow's count and the bins'
    counts are read together: a column whose numbers spread thinly over many bins beyond (a count of 0 to 46 over
    1,319 rows, each integer within the noise; amounts over twelve octaves beyond a zero), none of which would pass
    alone, is followed to where the overflow is accounted for. Post-processing of released counts (stages 2 and 3)."""
    beyond = np.asarray(beyond, dtype=float)
    if len(beyond) == 0 or overflow <= max(EXTEND_LEVEL * overflow_std, EXTEND_SHARE * total):
        return 0
    k = np.arange(1, len(beyond) + 1)
    fit = (overflow - np.cumsum(beyond)) ** 2 / (overflow_std**2 + k * bins_std**2)
    excess = np.maximum(beyond, 0.0) ** 2
    rest = (float(np.sum(excess)) - np.cumsum(excess)) / bins_std**2
    return int(np.argmin(fit + rest + np.cumsum(penalties))) + 1


def widened(
    edges: np.ndarray, counts: np.ndarray, below: float, above: float, histogram_std: float, bins: np.ndarray,
    bin_counts: np.ndarray, bins_std: float, extend: bool = True, integer: bool = False,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A typed column's value histogram with its two overflow cells read (stage 3: the cells ``edges`` inside the
    stage-2 range, noisy ``counts``; the numbers ``below`` and ``above`` it, all of noise std ``histogram_std``): at each
    end, the stage-2 bins ``extension`` takes (``bins``' cells, noisy ``bin_counts`` of std ``bins_std``; none unless
    ``extend``: a range the release could not locate is a stated default, not widened) are appended whole, and what
    they leave of the overflow (the overflow less their counts: numbers beyond the new end) is added to the outermost
    cell, where the codecs clip those numbers. An ``integer`` column's unit bins take ``UNIT_EXTEND_PENALTY``, every other
    bin (a float column's, however narrow) ``EXTEND_PENALTY``. Returns the edges, the counts and each cell's noise std:
    an outermost cell that took k >= 1 bins holds the overflow less the k - 1 bins before it (variance
    :math:`s_o^2 + (k - 1) s'^2`), an end that took none its own cell plus the overflow (:math:`2 s_o^2`).
    Post-processing of released counts."""
    edges, counts = np.asarray(edges, dtype=float), np.asarray(counts, dtype=float).copy()
    stds = np.full(len(counts), histogram_std)
    total = float(counts.sum() + below + above)
    lower = np.flatnonzero(bins[1:] <= edges[0])[::-1] if extend else np.array([], dtype=int)  # nearest first
    upper = np.flatnonzero(bins[:-1] >= edges[-1]) if extend else np.array([], dtype=int)
    penalties = np.where(integer & (np.diff(bins) <= 1.0), UNIT_EXTEND_PENALTY, EXTEND_PENALTY)  # an integer's unit bin
    taken = [lower[: extension(below, histogram_std, bin_counts[lower], bins_std, total, penalties[lower])],
             upper[: extension(above, histogram_std, bin_counts[upper], bins_std, total, penalties[upper])]]
    remainders = [below - float(bin_counts[taken[0]].sum()), above - float(bin_counts[taken[1]].sum())]
    low_run, high_run = taken[0][::-1], taken[1]  # in increasing order of value
    edges = np.concatenate([bins[low_run], edges, bins[high_run + 1]])
    counts = np.concatenate([bin_counts[low_run], counts, bin_counts[high_run]])
    stds = np.concatenate([np.full(len(low_run), bins_std), stds, np.full(len(high_run), bins_std)])
    for end, remainder, run in ((0, remainders[0], taken[0]), (-1, remainders[1], taken[1])):
        counts[end] += remainder  # the outermost bin plus the overflow less every bin taken
        stds[end] = math.sqrt(histogram_std**2 + (len(run) - 1) * bins_std**2) if len(run) else math.sqrt(2.0) * histogram_std
    return edges, counts, stds


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


CODED_TAIL = 0.2
"""An integer of a column's unit cells (one stage-3 cell per integer, ``histogram_edges``) is one of its published
values when its noisy count exceeds Phi^{-1}(1 - CODED_TAIL / k) noise stds, k the column's unit cells
(``published_values``): an empty range of any size gains a value with probability at most 20%, a value whose noisy
count is combined with the marginal release's own measurement of it, about 0, by inverse variance (docs/privacy.md,
"One budget", 7), so that it takes a few rows of the output; a smaller tail misses values held by a few percent of
the rows and leaves their column uncoded."""
CODED_SHARE = 0.05
"""A numeric column is *coded* when its published values (its atoms and the integers of its unit cells that stand out)
hold all of its numbers but at most this share, by the released counts (``coded_values``): its output then holds
those values only. Set on the validation tables, where 0.1 gave a 2-way TV within the fits' noise of 0.05's."""


def published_values(
    atoms: tuple[tuple[float, float], ...], atom_std: float, units: list[tuple[int, float, float]],
) -> list[tuple[float, float, float]]:
    """A numeric column's values whose counts the release published, ``(value, noisy count, noise std)`` in increasing
    order: a float column's ``atoms`` (stage 4, each above its threshold, noise std ``atom_std``), an integer column's
    integers among its unit cells ``units`` (``(integer, noisy count, std)`` of its value histogram's cells of one
    integer inside its range) whose counts exceed Phi^{-1}(1 - ``CODED_TAIL`` / k) stds, k the number of those cells.
    Post-processing of released counts: the unit cells are a fixed partition of the released range, no key."""
    level = float(norm.isf(CODED_TAIL / max(len(units), 1)))
    found = [(float(value), float(count), atom_std) for value, count in atoms]
    found += [(float(value), float(count), std) for value, count, std in units if count > level * std]
    return sorted(found)


def coded_values(values: list[tuple[float, float, float]], numbers: float) -> tuple[tuple[float, float, float], ...]:
    """``values`` (``published_values``) when there are two or more and they hold all of the column's estimated
    ``numbers`` but at most ``CODED_SHARE`` of them (the column is coded: its levels are these values), else none. A
    rule on released counts only: the rows of unpublished values are then mapped to the nearest published value, one
    record at a time, and their share is at most ``CODED_SHARE`` by the estimate. One published value does not code a
    column: a binary column whose rarer value is within the noise keeps both values measured (``two_integers``) rather
    than coming back constant."""
    if len(values) < 2 or numbers - sum(count for _, count, _ in values) > CODED_SHARE * numbers:
        return ()
    return tuple(values)


DECIMAL_LEVEL = 3.5
"""A cell of the precision partition holds values when its noisy count exceeds this many noise stds
(``output_decimals``): an empty cell passes with probability 0.023%, one of the 21 in 0.49% of releases. A cell held by
fewer rows than that is rounded away (a tenth of 4-decimal incomes, at two decimals) rather than the output given
more decimals than the data have."""
MORE_LEVEL = 3.0
"""The cell of numbers with more decimals than the partition tells apart blocks rounding when its noisy count exceeds
this many noise stds (``output_decimals``): a column with a clear share of such numbers keeps its full precision."""


def output_decimals(counts: np.ndarray, noise_std: float) -> tuple[int, bool] | None:
    """The decimals a float column's output is rounded to, and whether to single precision, from its noisy precision
    counts (``privacy.counts.decimal_cells``' cells, noise std ``noise_std``): none when its cell of more decimals
    exceeds ``MORE_LEVEL`` stds or no cell exceeds ``DECIMAL_LEVEL`` stds; else the most decimals of a cell above
    ``DECIMAL_LEVEL`` stds, to single precision when the cells of float32 images (3.200000047683716) hold more than
    the cells of exact decimals with one or more decimals, by ``DECIMAL_LEVEL`` stds of the difference of their noisy
    sums (a float64 column's images cells hold nothing but noise). Numbers in cells below the level (within the noise)
    lose their extra decimals. Post-processing of released counts."""
    counts = np.asarray(counts, dtype=float)
    if counts[-1] > MORE_LEVEL * noise_std:
        return None
    held = np.flatnonzero(counts[:-1] > DECIMAL_LEVEL * noise_std)
    if len(held) == 0:
        return None
    places = np.where(held > MAX_DECIMALS, held - MAX_DECIMALS, held)
    images, exact = counts[MAX_DECIMALS + 1 : -1].sum(), counts[1 : MAX_DECIMALS + 1].sum()
    single = images - exact > DECIMAL_LEVEL * math.sqrt(2 * MAX_DECIMALS) * noise_std
    return int(places.max()), bool(single)


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

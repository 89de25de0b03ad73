r"""A numeric column of the DP domain, read from its released counts (privacy.md, "The DP domain"): its bounds, their
trimming by the value histogram, and whether it is placed. All post-processing of released counts.

The bins are a fixed set given the kind (``bins``), all released, so a numeric column's bounds are post-processing
(``numeric_bounds``): the *anchor* is the window of ``WINDOW`` consecutive bins with the largest noisy sum (the
records of a column sit in a few neighbouring bins, so a window gathers their counts while its noise grows only as
:math:`\sqrt{W}`); a bin is kept when its noisy count exceeds :math:`s\,\Phi^{-1}(1 - 0.001 / B)` anywhere (an empty
bin passes with probability 0.1% / B), or when it is in the *densest run*: the contiguous bins whose counts minus
``RUN_PENALTY`` s have the largest sum (``densest_run``), kept when the anchor's fullest bin exceeds
:math:`s\,\Phi^{-1}(1 - 0.01 / W)`, s being the bins' noise std (weak bins between strong ones stay; an empty
neighbour joins with probability 0.6%, stretching a range by one bin). Isolated bins inside the anchor at the same
level are not kept: on a small integer target they widened the range by a class no record has (docs/flows.md). A run
of k bins that touches no kept bin is kept too when its counts sum to more than
:math:`s\sqrt{k}\,\Phi^{-1}(1 - 0.001 / (B (B + 1)))` (``significant_runs``: a spread-out mode, as the positive
amounts of a zero-inflated column, each of whose octaves is below the single-bin level; each of the B (B + 1) / 2 runs
of pure noise passes with probability 0.1% / (B (B + 1)), so an empty column gains a run in at most 0.05% of
releases). If no bin is kept, the anchor's central bins are (``located`` is then False: the release could not place
the column at this budget, and the caller says so).

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
"""

from __future__ import annotations

import math

import numpy as np
from scipy.stats import norm

from synthcity_dpswf.privacy.domain.kinds import Kind

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

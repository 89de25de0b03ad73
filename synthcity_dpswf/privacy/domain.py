r"""A differentially private domain: each column's kind, numeric bounds, value histogram and category sets, for
when none is public (or for the columns a partial public domain leaves out).

Fitting an encoding on private records (min/max, category lists, even pandas dtypes, which one record with 1.5 in
an integer column or one string in a numeric column changes) leaks them. When the user has no public domain
description, this release decides every column from noisy counts, with a stated share of the budget, in four
Gaussian stages:

1. *Type counts*: per column, the numbers of integer-valued finite numbers, other finite numbers, missing entries
   (``is_missing``) and anything else (a string, a bool, ...), scaled by w = ``TYPE_WEIGHT`` before noise of std s
   (the kind decision needs them only within a margin of about n, so they take a small part of the sensitivity).
   The column is categorical when its noisy "anything else" count exceeds the sum of the two numeric ones by a
   margin (``KIND_MARGIN``: a prior for numbers), else float when its non-integer count exceeds the integer-valued
   one or stands clearly out of the noise (``FLOAT_MARGIN``), else integer (post-processing, ``decide_kind``).
2. *Value counts*, in the partition of the kind just released, with the column's missing entries in one more cell:
   a categorical column's entries per observed value (a category), noise std :math:`s_c`; an integer column's numbers in fixed bins with one bin per integer from
   -16 to 16, then [16.5, 32) and signed octaves up to :math:`2^{48}` (``integer_bin_edges``), a float column's in
   signed octaves :math:`\pm[2^k, 2^{k+1})` and a bin around zero (``log_bin_edges``), other entries not counted,
   noise std :math:`r s_c` (``RANGE_NOISE_RATIO`` r: a column's records crowd into a few bins, which stand out of
   more noise than a category must).
   A column gets a missing level when the inverse-variance mean of its two missing counts (stage 1's cell, stage 2's)
   exceeds ``MISSING_THRESHOLD`` of its noise stds (post-processing; missing entries are counted in no other cell).
3. *Value histograms* of every numeric column (and of the numeric columns a public domain declares with bounds
   only, ``declared``): its numbers, clipped into the range of stage 2 (or the declared one), counted in the stage-2
   bins inside the range, each split into ``SUB_BINS`` geometric sub-bins (linear where a bin touches zero, none
   for the unit integer bins), noise std :math:`r_q s_c` (``HISTOGRAM_NOISE_RATIO``). The codecs place their fine
   levels at its quantiles (post-processing): resolution where the data are, not uniform over a skewed range.
4. *Atoms* of every float column (typed or declared; only when the threshold below has a delta): its numbers inside
   its range with at most ``privacy.counts.ATOM_DIGITS`` significant digits, counted by exact value, noise std
   :math:`r_a s_c` (``ATOM_NOISE_RATIO``), published above :math:`r_a \tau` (below): a coded float's frequent values,
   which decoding restores (``adapters.tabular.onto_atoms``).

Replacing one record moves at most one count by -1 and one by +1 in each partition of each column (adding one
adds one count: add/remove, m = 1 instead of m = 2 below). With C columns in stage 1, of which C_cat categorical
and C_num numeric after it, C_dec declared numeric columns and C_atom float columns given atoms, the stages are
Gaussian mechanisms with :math:`\mu_1^2 = m C w^2 / s^2` and, given stage 1's output (which fixes the kinds),
:math:`\mu_{23}^2 = m (C_{cat} + C_{num} / r^2 + (C_{num} + C_{dec}) / r_q^2 + C_{atom} / r_a^2) / s_c^2`. The noise is set so that
:math:`\mu_1^2 = \frac{w^2}{1 + w^2}\mu^2` and :math:`\mu_{23}^2 = \frac{1}{1 + w^2}\mu^2` whatever the kinds, with
:math:`\mu = 1/z` and z the ``DomainBudget``'s: alone, from the analytic Gaussian mechanism at
:math:`(\varepsilon, \delta/2)`; in a plugin, :math:`z/\sqrt{s}` of one table budget shared with the releases
(``privacy.budget.TableBudget``; privacy.md, "One budget"). Gaussian mechanisms composed adaptively, each with its
:math:`\mu_i` fixed given the earlier outputs, are one :math:`\sqrt{\sum \mu_i^2}`-GDP mechanism (Dong, Roth & Su
2022, Corollary 3.3), so the release alone is :math:`(\varepsilon, \delta/2)`-DP. (Without stages 3 and 4 and with r = 1, this is the single-noise design :math:`\Delta = \sqrt{mC(1 + w^2)}` of
earlier versions.) The grouping: given stage 1's output, stages 2 to 4 together are one :math:`\mu_{23}`-GDP
mechanism whatever that output (stages 3 and 4 adapt to stage 2's ranges, and Gaussian DP composes adaptively), and
that composes with stage 1. Then:

- the observed categories and atoms are private keys (categories counted by ``category_key``, so that 1, 1.0 and
  True are told apart by kind, not merged in the order the records come). A category is published only when its
  noisy count exceeds :math:`\tau = s_c\,\Phi^{-1}(1 - \eta)`, an atom above :math:`r_a \tau`,
  :math:`\eta = \delta / (2 C_{key}(1 + e^\varepsilon))` with :math:`C_{key} = C_{cat} + C_{atom}` (in general
  :math:`\delta_T / (C_{key}(1 + e^{\varepsilon_T}))`, ``DomainBudget``). Proof: let
  :math:`\tilde M` count every key observed in D *or* D' (zero where unobserved) and threshold them all;
  :math:`\tilde M(D)` and :math:`\tilde M(D')` are the Gaussian release above followed by post-processing,
  so :math:`(\varepsilon, \delta/2)`-indistinguishable. With shared noise, the real release M(D) equals
  :math:`\tilde M(D)` unless one of the at most C_key keys unobserved in D (one per keyed column, the kinds being
  fixed by stage 1's output and the ranges by stage 2's: a neighbour adds at most one new key to a column) passes its
  threshold with count 0, probability at most :math:`C_{key}\eta`; the same for D'. Hence
  :math:`P[M(D) \in S] \le e^\varepsilon (P[M(D') \in S] + C_{key}\eta) + \delta/2 + C_{key}\eta \le
  e^\varepsilon P[M(D') \in S] + \delta`. A category needs about :math:`\tau + 1.645 s_c` records to be published
  with probability 95% (``DomainRelease.needed_rows``);
- the rows of a categorical column in categories below the threshold are estimated from released counts (its rows
  with an entry, from its own type counts and from the other columns' type totals less its estimated missing
  entries, combined by inverse variance, minus its published categories' counts: ``unpublished_estimate``,
  post-processing); where the estimate exceeds ``OTHER_LEVEL`` of its noise standard deviations the column gets one
  more category, ``OTHER_CATEGORY``, to which the encoders map every unpublished value (``DomainRelease.lost``);
- the bins are a fixed set given the kind, all released, so a numeric column's bounds are post-processing
  (``numeric_bounds``): the *anchor* is the window of ``WINDOW`` consecutive bins with the largest noisy sum
  (the records of a column sit in a few neighbouring bins, so a window gathers their counts while its noise
  grows only as :math:`\sqrt{W}`); a bin is kept when its noisy count exceeds :math:`s\,\Phi^{-1}(1 - 0.001 /
  B)` anywhere (an empty bin passes with probability 0.1% / B), or when it is in the *densest run*: the contiguous
  bins whose counts minus ``RUN_PENALTY`` s have the largest sum (``densest_run``), kept when the anchor's fullest
  bin exceeds :math:`s\,\Phi^{-1}(1 - 0.01 / W)`, s being the bins' noise std (weak bins between strong ones stay;
  an empty neighbour joins with probability 0.6%, stretching a range by one bin). Isolated
  bins inside the anchor at the same level are not kept: on iris' integer target (n = 150, epsilon = 0.9) they
  widened the range in 1.4% of releases (an extra class, which synthcity's classifier evaluation scores 0).
  A run of k bins that touches no kept bin is kept too when its counts sum to more than
  :math:`s\sqrt{k}\,\Phi^{-1}(1 - 0.001 / (B (B + 1)))` (``significant_runs``: a spread-out mode, as the positive
  amounts of a zero-inflated column, each of whose octaves is below the single-bin level; each of the B (B + 1) / 2
  runs of pure noise passes with probability 0.1% / (B (B + 1)), so an empty column gains a run in at most 0.05% of
  releases).
  If no bin is kept, the anchor's central bins are (``located`` is then False: the release could not place the
  column at this budget, and the caller says so).

After stage 3 a numeric column's range is trimmed at each end by its value histogram (``trimmed_span``): the longest
end-run of cells each of whose runs from that end (first k cells) sums to at most min(``TRIM_LEVEL`` s_q sqrt(k),
``TRIM_SHARE`` of the histogram's total) is dropped (s_q = r_q s_c; unit bins of an integer column never are), so a
range ends where its numbers do, not on the octave's edge nor on a bin noise added beside it; atoms outside the trimmed
range are not published. A numeric column is placed only when its range holds its numbers (``holds_the_numbers``:
40% of its stage-1 count of numbers exceeds the noisy sum of the range's stage-2 bins by at most ``ROUGH_LEVEL`` stds).
A categorical column left with its published categories only keeps the estimate of its rows in unpublished
categories (``unpublished_estimate``, ``DomainRelease.unpublished``), which the plugins' warning prints for a column
left with one. All of these read released counts only (post-processing; issue 44).

Numeric bounds are the edges of the lowest and highest kept bins (within a factor of 2 of the data's extent
between :math:`2^{-16}` and :math:`2^{48}` in magnitude, which is enough to scale it; values beyond fall in the
end bins; for an integer column, the integers inside them, widened before stage 3 to [k, k + 1] when only k is, or
to [k - 1, k] where k - 1's noisy bin exceeds k + 1's by ``ROUGH_LEVEL`` stds of their difference: ``two_integers``,
so that stage 3 counts both values: a function of stage 2's output, as every stage-3 range); categories are the
kept ones.
Where no category of a categorical column passes, it gets the single placeholder category ``NO_CATEGORY`` (a
stated default, never an error: an error would be an output that one record can change). Whether a column is
*placed* (``placement``, ``DomainRelease.placed``) is read from the released counts too: a column without released
evidence of its values is output as missing entries only, never at a placeholder or a range of pure noise. Output
dtypes follow the kinds (int64, float64, the categories' own type). Values of a column that do not fit its released kind (a
string in a numeric column, a rare category) are mapped to a stated default by the encoders, one record at a
time.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import pandas as pd
import torch
from scipy.stats import norm

from synthcity_dpswf.privacy.analytic_gaussian import analytic_gaussian_epsilon, analytic_gaussian_noise_multiplier
from synthcity_dpswf.privacy.counts import FrameCounts, TableCounts
from synthcity_dpswf.privacy.neighbouring import Adjacency
from synthcity_dpswf.privacy.report import OtherAdjacency

LOG2_MIN = -16
LOG2_MAX = 48
WINDOW = 8
"""Bins per anchor window in ``numeric_bounds``."""
RUN_PENALTY = 2.5
"""What each bin of a numeric column's range must pay, in noise stds (``densest_run``): an empty bin joins the run
only with noise above 2.5 stds beside it (0.6% per side: on iris' integer target at epsilon 1.5 an extra class in
1.2% of releases at 2.5, 4.7% at 2)."""
TYPE_WEIGHT = 0.5
"""Scale of the type counts in the released vector: their noise is s / 0.5 = 2s, and the decision between
kinds has a margin of n / 2 on a column of one kind, while the sensitivity grows only by sqrt(2.5 / 2) = 1.12."""
NO_CATEGORY = "(no category released)"
"""The category of a categorical column none of whose categories passed the threshold."""
OTHER_CATEGORY = "(other categories)"
"""The extra category of a categorical column whose unpublished categories hold a released share of its rows."""
RANGE_NOISE_RATIO = 2.0
"""r: the numeric bins' noise std relative to the category counts' (stage 2; module docstring) when the released kinds
include a categorical column (``range_ratio``; 1 otherwise: nothing to favour)."""
HISTOGRAM_NOISE_RATIO = 2.0
"""r_q: the value histograms' noise std relative to the category counts' (stage 3)."""
ATOM_NOISE_RATIO = 2.0
"""r_a, the atom counts' noise relative to the category counts' (stage 4): an atom worth restoring (a coded value of a
float column) holds a large share of its column's rows, so it may stand out of more noise, and the other stages' noise
pays less for it (s_c grows by sqrt(1 + C_atom / (r_a^2 S)), S the stages' other terms). Chosen on the validation
tables at epsilon = 1 (``benchmarks/atom_ratio.py``; docs/flows.md, fact 86): on fair (coded floats) r_a = 1 / 2 / 4
gave 2-way TV 0.090 / 0.115 / 0.119 with no schema and 0.068 / 0.068 / 0.092 declared (0.136 and 0.185 without
atoms); on the stand-in (15 columns to the cent, no frequent value) r_a = 1 published its 10% category in 74% of
releases (target 95%), 2 in 98%, 4 in 100%."""
SUB_BINS = 8
"""Sub-bins per stage-2 bin in a value histogram (stage 3): a float column's octave in eighths (9% wide)."""
MISSING_THRESHOLD = 4.0
"""A typed column gets a missing level when its estimated missing entries (two noisy counts, ``missing_level``)
exceed this many of their noise stds: a column without missing entries gets the level with probability 0.003% (a
level it does not need lets the flow emit missing entries where the real column has none; at 3 stds, 0.13% per
column, iris' target came back with a missing label and synthcity's XGB evaluator raised in a full CI run); the
estimates of the others are kept, unwarned (``DomainRelease.hidden_missing``)."""
KIND_MARGIN = 1.5
"""A typed column is categorical only when its noisy "anything else" count exceeds the sum of its two numeric counts
by this many noise stds of that difference (``decide_kind``): a prior for numbers, so that noise does not type a float
column categorical (breast_cancer, 569 rows, 31 columns, epsilon 1: 0.9% of columns without it, about one fit in four;
none of 9,300 with it), while a string column with about as many rows as one category needs to be published
(``DomainRelease.needed_rows``) or more is still categorical."""
FLOAT_MARGIN = 4.0
"""A numeric column is a float column when its noisy count of non-integer numbers exceeds its integer count, or this
many noise stds (``decide_kind``): a clear share of non-integer numbers (rainfall, mostly exact zeros) keeps a float
column float; an integer column becomes float with probability 0.003% (at 3 stds, 0.13%: iris' integer target came
back float in a full test run, a change of dtype family the issue's target rules out)."""
MIXED_MARGIN = 5.0
"""A column whose noisy counts of numbers and of other entries both exceed this many of their noise stds mixes
kinds (``DomainRelease.mixed``): the entries of the kind it was not given are mapped to a stated default, and the
plugins say so. At 3 stds a column without other entries was named in 0.13% of releases (diabetes at epsilon 0.5:
bp, all numbers, warned as 33% not numbers in one test run of 100 releases of 11 columns); at 5, 3e-7."""
TRIM_LEVEL = 2.5
"""A released range's ends lose the runs of value-histogram cells that do not stand this many noise stds out of the
noise (``trimmed_span``) ..."""
TRIM_SHARE = 0.05
"""... and hold an estimated share of the column's numbers at most this (``trimmed_span``)."""
HELD_SHARE = 0.4
"""A numeric column's released range must be consistent with holding this share of its numbers (``holds_the_numbers``):
a range that holds fewer is a window of noise or of a minority of its values, not its range. Chosen between windows of
noise and a column spread over octaves of a small table (docs/flows.md, fact 92)."""
ROUGH_LEVEL = 2.0
"""... within this many noise stds of the difference (``holds_the_numbers``): a range that holds that share
fails with probability 2.3%, one that holds them all (the usual case) almost never."""
OTHER_LEVEL = 3.0
"""A categorical column gets ``OTHER_CATEGORY`` when its estimated rows in unpublished categories
(``unpublished_estimate``) exceed this many of the estimate's noise stds: a column whose categories were all
published gets it in 0.13% of releases. Set on the validation tables: at 2 stds the stand-in's fully published
columns got a level no row has in 2 of 40 releases, at 3 in none (fair, the stand-in: 40 seeded releases each)."""
SURVIVAL_QUANTILE = 1.645
"""A category with tau + 1.645 s_c records is published with probability 95% (``DomainRelease.needed_rows``)."""

Kind = Literal["integer", "float", "categorical"]


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


@dataclass(frozen=True)
class DomainBudget:
    r"""How a DP domain is calibrated (privacy.md, "The DP domain" and "One budget").

    Its four Gaussian stages together are one :math:`\mu_D`-GDP mechanism with :math:`\mu_D = 1 /` ``noise_multiplier``;
    its key threshold (categories and atoms) uses :math:`\eta = \delta_T / (C_{key}(1 + e^{\varepsilon_T}))` with
    :math:`\varepsilon_T` = ``threshold_epsilon``, the epsilon of the whole guarantee the threshold's proof
    couples (the domain's own, or the run's total when the domain is accounted with the releases), and
    :math:`\delta_T` = ``threshold_delta`` (0 publishes no key: no category and no atom, for a domain of declared
    integer columns' histograms only). ``gaussian_delta`` is the delta at which the Gaussian stages' own epsilon is stated."""

    noise_multiplier: float
    gaussian_delta: float
    threshold_epsilon: float
    threshold_delta: float

    def __post_init__(self) -> None:
        if not self.noise_multiplier > 0 or not math.isfinite(self.noise_multiplier):
            raise ValueError(f"noise_multiplier must be positive and finite, got {self.noise_multiplier!r}.")
        if not 0 < self.gaussian_delta < 1 or not 0 <= self.threshold_delta < 1:
            raise ValueError(f"the deltas must lie in (0, 1), got {self.gaussian_delta!r} and {self.threshold_delta!r}.")
        if not self.threshold_epsilon > 0:
            raise ValueError(f"threshold_epsilon must be > 0, got {self.threshold_epsilon!r}.")

    @classmethod
    def alone(cls, epsilon: float, delta: float) -> "DomainBudget":
        """A domain that is (epsilon, delta)-DP on its own: z from the analytic Gaussian at (epsilon, delta / 2), the
        threshold at (epsilon, delta / 2)."""
        return cls(analytic_gaussian_noise_multiplier(epsilon, delta / 2), delta / 2, epsilon, delta / 2)

    @property
    def epsilon(self) -> float:
        """The Gaussian stages' own epsilon at ``gaussian_delta`` (the domain alone)."""
        return analytic_gaussian_epsilon(self.noise_multiplier, self.gaussian_delta)

    @property
    def delta(self) -> float:
        """The domain's own delta: the Gaussian stages' and the threshold's."""
        return self.gaussian_delta + self.threshold_delta

    def threshold_delta_at(self, epsilon: float) -> float:
        r"""The threshold's delta in a guarantee of epsilon ``epsilon`` instead of :math:`\varepsilon_T` (the other
        adjacency): :math:`C_{cat}\eta(1 + e^{\varepsilon}) = \delta_T (1 + e^{\varepsilon}) / (1 + e^{\varepsilon_T})`."""
        return self.threshold_delta * float(np.exp(np.logaddexp(0.0, epsilon) - np.logaddexp(0.0, self.threshold_epsilon)))


@dataclass(frozen=True)
class DomainRelease:
    """What the release made public: each column's kind, bounds per numeric column, kept categories per
    categorical column, and the parameters of the mechanism."""

    kinds: dict[str, Kind]
    bounds: dict[str, tuple[float, float]]
    categories: dict[str, tuple[object, ...]]
    located: dict[str, bool]
    budget: DomainBudget
    noise_std: float
    """s, the type counts' noise std (on the released scale)."""
    threshold: float
    neighbouring: Adjacency = Adjacency.REPLACE_ONE
    category_std: float = 0.0
    """s_c, the category counts' noise std (the numeric bins' is r s_c, the histograms' r_q s_c)."""
    histograms: dict[str, tuple[tuple[float, ...], tuple[float, ...]]] = field(default_factory=dict)
    """Per numeric column (released or declared): the edges and noisy counts of its value histogram (stage 3)."""
    lost: dict[str, float] = field(default_factory=dict)
    """Per categorical column given ``OTHER_CATEGORY``: the estimated rows in its unpublished categories."""
    unpublished: dict[str, tuple[float, float]] = field(default_factory=dict)
    """Per categorical column with published categories and no ``OTHER_CATEGORY``: the estimated rows in its unpublished
    categories and that estimate's noise std (``unpublished_estimate``: its rows with an entry, from its own type counts
    and the other typed columns' totals by inverse variance, less its published categories' counts; post-processing),
    for the warning that names a column the release left with one category."""
    declared: dict[str, tuple[float, float, bool]] = field(default_factory=dict)
    """The declared numeric columns (public bounds) this release gave a value histogram only."""
    missing: dict[str, bool] = field(default_factory=dict)
    """Per typed column: whether it gets a missing level (``missing_level``)."""
    hidden_missing: dict[str, float] = field(default_factory=dict)
    """Per typed column without a missing level whose estimate of missing entries is positive: that estimate, a noisy
    one (no warning names it: a column without missing entries stands one std out of the noise in 16% of releases)."""
    released_rows: float | None = None
    """n estimated from the released type counts (the mean over columns of their totals; None when no column was
    typed): post-processing, for settings that follow the table's size when n is private (add/remove)."""
    one_way: dict[str, tuple[tuple[object, float, float], ...]] = field(default_factory=dict)
    """Per typed column whose levels the release measured one by one: ``(level, noisy count, its noise std)`` per
    level, in the column's level order: a categorical column's published categories (stage 2's counts) and
    ``OTHER_CATEGORY`` (the estimate of ``lost``; without it the first category's std is infinite: the encoders map
    the unpublished values there, which its count leaves out), an integer column's integers where its value histogram's bins
    hold one integer each (stage 3), then ``None`` for the missing level where it has one (``missing_level``'s
    estimate; its std is ``missing_std``, filled in by ``one_way_measurement``). Measurements of one-way marginals,
    which the marginal release's post-processing reuses (privacy.md, "One budget")."""

    @property
    def epsilon(self) -> float:
        """The domain's own epsilon (``DomainBudget.epsilon``)."""
        return self.budget.epsilon

    @property
    def delta(self) -> float:
        """The domain's own delta (``DomainBudget.delta``)."""
        return self.budget.delta

    @property
    def noise_multiplier(self) -> float:
        """z of the Gaussian stages together (``DomainBudget.noise_multiplier``)."""
        return self.budget.noise_multiplier
    placed: dict[str, bool] = field(default_factory=dict)
    """Per typed column: whether its output may hold values (``placement``); a column not placed is output as missing
    entries only, never at a range nobody released."""
    mixed: dict[str, float] = field(default_factory=dict)
    """Per typed column whose noisy counts show both numbers and other entries clearly (``MIXED_MARGIN``): the
    estimated share of its entries that do not fit the kind it was given (a noisy estimate; post-processing)."""
    atoms: dict[str, tuple[tuple[float, float], ...]] = field(default_factory=dict)
    """Per float column (typed or declared) with published atoms (stage 4): ``(value, noisy count)`` in increasing
    order of value, each count above the atom threshold ``ATOM_NOISE_RATIO * threshold``."""
    atom_columns: tuple[str, ...] = ()
    """The float columns whose values stage 4 counted (empty when it did not run: no threshold delta)."""

    @property
    def atom_needed_rows(self) -> float:
        """About how many records an atom needs to be published with probability 95%: r_a (tau + 1.645 s_c)."""
        return ATOM_NOISE_RATIO * self.needed_rows

    @property
    def count_std(self) -> float:
        """The noise std of one type count on the count scale (s / w)."""
        return self.noise_std / TYPE_WEIGHT

    @property
    def placement_rows(self) -> float:
        """About how many records a numeric column needs, all in one of its bins, to be placed with probability 95%:
        the fullest bin must exceed s' Phi^{-1}(1 - 0.01 / W) (``numeric_bounds``), s' the bins' noise std. A column
        spread over k bins needs about k times as many."""
        n_categorical = sum(kind == "categorical" for kind in self.kinds.values())
        bins_std = range_ratio(n_categorical) * self.category_std
        return bins_std * (float(norm.isf(0.01 / WINDOW)) + SURVIVAL_QUANTILE)

    def missing_std(self, column: str) -> float:
        """The noise std of ``column``'s estimated missing entries (``missing_level``'s inverse-variance mean)."""
        n_categorical = sum(kind == "categorical" for kind in self.kinds.values())
        second = self.category_std if self.kinds[column] == "categorical" else range_ratio(n_categorical) * self.category_std
        return 1 / math.sqrt((TYPE_WEIGHT / self.noise_std) ** 2 + 1 / second**2)

    def one_way_measurement(self, column: str) -> tuple[tuple[object, ...], np.ndarray, np.ndarray] | None:
        """``(levels, noisy counts, noise stds)`` of ``column``'s one-way marginal as released (``one_way``), or None
        where the release did not measure its levels one by one. Post-processing."""
        if column not in self.one_way:
            return None
        levels, counts, stds = zip(*self.one_way[column])
        stds = tuple(self.missing_std(column) if level is None else std for level, std in zip(levels, stds))
        return levels, np.array(counts, dtype=float), np.array(stds, dtype=float)

    @property
    def needed_rows(self) -> float:
        """About how many records a category needs to be published with probability 95%: tau + 1.645 s_c."""
        return self.threshold + SURVIVAL_QUANTILE * self.category_std

    def other_adjacency(self) -> OtherAdjacency:
        r"""This release alone under the other adjacency: its counts (Gaussian, :math:`\Delta_{RO} = \sqrt{2}\Delta_{AR}`
        exactly) at the multiplier ``Adjacency.other_multiplier(z)`` and the Gaussian stages' delta, plus the
        threshold's part, whose proof holds with :math:`e^{\varepsilon'}` in place of :math:`e^{\varepsilon}`
        (``DomainBudget.threshold_delta_at``; privacy.md, "Both adjacencies in the report")."""
        multiplier = self.neighbouring.other_multiplier(self.noise_multiplier)
        epsilon = analytic_gaussian_epsilon(multiplier, self.budget.gaussian_delta)
        delta = self.budget.gaussian_delta + self.budget.threshold_delta_at(epsilon)
        return OtherAdjacency(self.neighbouring.other.label, epsilon, delta, "the same counts")


def category_value(key: tuple[str, object]) -> object:
    """The published category of a key (``category_key``): a bool, an int or float, or the entry itself."""
    return key[1]


def noisy_counts(counts: np.ndarray, noise_std: float, secret: torch.Generator, weight: float = 1.0) -> np.ndarray:
    """The domain's one source of noise: ``weight * counts + N(0, s^2)`` per entry (the released vector), read back
    on the count scale (divided by ``weight``)."""
    noise = torch.randn(len(counts), generator=secret, dtype=torch.float64).numpy()
    return (weight * counts + noise_std * noise) / weight


def decide_kind(integer_count: float, float_count: float, other_count: float, count_std: float) -> Kind:
    """A typed column's kind from its noisy type counts (each of noise std ``count_std``; post-processing):
    categorical when the "anything else" count exceeds the numeric ones by ``KIND_MARGIN`` stds of the difference,
    else float when the non-integer count exceeds the integer count or ``FLOAT_MARGIN`` stds, else integer."""
    if other_count - (integer_count + float_count) > KIND_MARGIN * math.sqrt(3.0) * count_std:
        return "categorical"
    if float_count > integer_count or float_count > FLOAT_MARGIN * count_std:
        return "float"
    return "integer"


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
    values would otherwise get a window of pure noise, anywhere between -2^48 and 2^48 (the issue's 531,035 and
    -1.4e11 for a year; ncbirths' prenatal visits, 0 to 30, came out [-5, -4] at epsilon 1, issue 44): such a column
    is output as missing entries only. (``release_domain`` also places no numeric column of a table too small for any
    bin to stand out: its rows, all in one bin, below the run's threshold.)"""
    if kind == "categorical":
        return located
    if number_count <= other_count or not holds_the_numbers(range_mass, range_std, number_count, count_std):
        return False
    return located or number_count > math.sqrt(2.0) * count_std


def holds_the_numbers(range_mass: float, range_std: float, number_count: float, count_std: float) -> bool:
    """Whether a numeric range's noisy mass (the sum of its stage-2 bins, noise std ``range_std``) is consistent with
    its holding ``HELD_SHARE`` of the column's numbers (stage 1's noisy integer and float counts, each of noise std
    ``count_std``): that share of the count exceeds the mass by at most ``ROUGH_LEVEL`` stds of their difference. A
    window of pure noise holds none of a column's numbers: ncbirths' visits (991 numbers over 0 to 30, in unit bins
    of about 70 rows, each within the noise) got ranges such as [11, 12] and [-5, -4] holding an estimated 139 and 0
    of them. Post-processing of released counts."""
    number_std = math.sqrt(2.0) * count_std
    spread = math.sqrt((HELD_SHARE * number_std) ** 2 + range_std**2)
    return HELD_SHARE * number_count - range_mass <= ROUGH_LEVEL * spread


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
    largest value, and a bin that noise adds beside it (0.6% per side) doubles that again: flchain's ages (50 to 101)
    came out [32, 127] and its sample years (1995 to 2003) [512, 2047], ncbirths' weeks (20 to 45) [32, 63] (issue
    44). The share bounds what a thin tail, each of its cells within the noise, can lose (its values are placed at the
    new end, as values beyond a range are). Post-processing of the released counts."""
    counts = np.asarray(counts, dtype=float)
    scale = noise_std * np.sqrt(np.arange(1, len(counts) + 1))
    allowed = np.minimum(TRIM_LEVEL * scale, TRIM_SHARE * float(counts.sum()) - scale)
    ends = []
    for ordered, movable in ((counts, trimmable), (counts[::-1], trimmable[::-1])):
        quiet = np.cumsum(ordered) <= allowed
        ends.append(min(int(np.cumprod(quiet & movable).sum()), len(ordered) - 1))  # the end-run that may go
    first, last = ends[0], len(counts) - 1 - ends[1]
    return (first, last) if first <= last else (0, len(counts) - 1)


def two_integers(
    bounds: tuple[float, float], counts: np.ndarray, edges: np.ndarray, noise_std: float
) -> tuple[float, float]:
    """An integer column's stage-2 ``bounds`` widened to two integers where they hold one, k (a unit bin): to k + 1,
    or to k - 1 where that neighbour's noisy count (``counts`` over the bins of ``edges``, noise std ``noise_std``)
    exceeds k + 1's by ``ROUGH_LEVEL`` stds of their difference (a unit bin each; else the other one). The codecs
    widen a one-integer range to [k, k + 1] anyway (a range needs two ends); widened before stage 3, the value
    histogram counts both integers apart, so the output's second value is measured rather than fed by the numbers
    that stage 3 clipped into k (flchain's ``mgus``, 115 ones in 7,874 rows, a bin within the noise at epsilon 1,
    got the range [0, 0] in most releases, issue 44). Post-processing of released counts."""
    low, high = bounds
    if high - low != 1.0 or not -16.5 <= low < 16.5:
        return bounds
    index = int(np.searchsorted(edges, low))
    below = counts[index - 1] if low > -16.5 else -math.inf
    above = counts[index + 1] if high < 16.5 else -math.inf
    if below - above > ROUGH_LEVEL * math.sqrt(2.0) * noise_std:
        return low - 1.0, high
    return low, high + 1.0


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


def range_ratio(n_categorical: int) -> float:
    """r, the numeric bins' noise relative to the category counts': ``RANGE_NOISE_RATIO`` when there are categories
    to favour, else 1 (a function of the released kinds)."""
    return RANGE_NOISE_RATIO if n_categorical > 0 else 1.0


def stage_noise(
    z: float, n_typed: int, n_categorical: int, n_numeric: int, n_declared: int, neighbouring: Adjacency | str,
    n_atoms: int = 0,
) -> tuple[float, float]:
    r"""The noise stds ``(s, s_c)`` of stage 1 (type counts of ``n_typed`` columns, weight w) and of stages 2 to 4
    (category counts s_c, numeric bins r s_c, histograms r_q s_c, the atoms of ``n_atoms`` float columns r_a s_c) for
    multiplier z (module docstring): :math:`s = z\sqrt{m C (1 + w^2)}`,
    :math:`s_c = z\sqrt{m (1 + w^2)(C_{cat} + C_{num}/r^2 + (C_{num} + C_{dec})/r_q^2 + C_{atom}/r_a^2)}`
    with m = 2 (replace-one) or 1 (add/remove); stage 1's share of the budget is 0 when no column is typed."""
    moved = 2 if Adjacency.of(neighbouring).n_is_public else 1  # units moved per partition by one neighbour
    ratio = range_ratio(n_categorical)
    later = (n_categorical + n_numeric / ratio**2 + (n_numeric + n_declared) / HISTOGRAM_NOISE_RATIO**2
             + n_atoms / ATOM_NOISE_RATIO**2)
    share = 1 + TYPE_WEIGHT**2 if n_typed > 0 else 1.0  # mu_23^2 = mu^2 / (1 + w^2) when stage 1 runs
    return z * math.sqrt(moved * n_typed * (1 + TYPE_WEIGHT**2)), z * math.sqrt(moved * share * max(later, 1e-12))


def missing_level(first: float, first_std: float, second: float, second_std: float) -> tuple[bool, float]:
    """Whether a column gets a missing level, and the estimated missing entries: the inverse-variance mean of its two
    noisy missing counts (stage 1's type cell and stage 2's missing cell), above ``MISSING_THRESHOLD`` of its noise
    stds (post-processing)."""
    weights = np.array([1 / first_std**2, 1 / second_std**2])
    estimate = float(np.dot(weights, [first, second]) / weights.sum())
    return estimate > MISSING_THRESHOLD / math.sqrt(weights.sum()), estimate


def category_threshold(category_std: float, threshold_epsilon: float, threshold_delta: float, n_keyed: int) -> float:
    r"""tau = s_c Phi^{-1}(1 - eta), eta = delta_T / (C_key (1 + e^epsilon_T)), C_key = C_cat + C_atom the partitions
    counted by private keys (categories, atoms: privacy.md's proof; a domain alone at (epsilon, delta) has
    epsilon_T = epsilon and delta_T = delta / 2). An atom's threshold is r_a tau (its counts' noise is r_a s_c)."""
    tail = threshold_delta / (max(n_keyed, 1) * (1 + math.exp(min(threshold_epsilon, 700.0))))
    return category_std * float(norm.isf(tail))


def rows_needed(
    budget: DomainBudget, n_categorical: int, n_numeric: int, n_declared: int, neighbouring: Adjacency | str,
    n_atoms: int = 0,
) -> float:
    """About how many records a category needs to be published with probability 95% by a domain release of this
    budget with these column counts (tau + 1.645 s_c): a function of public numbers, for choosing a budget share
    before any release."""
    _, category_std = stage_noise(
        budget.noise_multiplier, n_categorical + n_numeric, n_categorical, n_numeric, n_declared, neighbouring, n_atoms
    )
    threshold = category_threshold(category_std, budget.threshold_epsilon, budget.threshold_delta, n_categorical + n_atoms)
    return threshold + SURVIVAL_QUANTILE * category_std


def publishes_keys(n_typed: int, declared: dict[str, tuple[float, float, bool]]) -> bool:
    """Whether a DP domain of ``n_typed`` typed columns and these ``declared`` numeric ones may publish private keys,
    so that its threshold needs a delta: categories (some column is typed, so may be categorical) or atoms (some column
    may be float: typed, or declared with a float range)."""
    return n_typed > 0 or any(not integer for _, _, integer in declared.values())


def release_domain(
    frame: pd.DataFrame,
    epsilon: float,
    delta: float,
    secret: torch.Generator,
    neighbouring: Adjacency | str = Adjacency.REPLACE_ONE,
    declared: dict[str, tuple[float, float, bool]] | None = None,
) -> DomainRelease:
    """Release every column's kind, numeric bounds, value histogram and category set of ``frame`` with
    (epsilon, delta)-DP on its own under ``neighbouring``: ``release_domain_at`` with ``DomainBudget.alone``."""
    return release_domain_at(frame, DomainBudget.alone(epsilon, delta), secret, neighbouring, declared)


def release_domain_at(
    table: pd.DataFrame | TableCounts,
    budget: DomainBudget,
    secret: torch.Generator,
    neighbouring: Adjacency | str = Adjacency.REPLACE_ONE,
    declared: dict[str, tuple[float, float, bool]] | None = None,
) -> DomainRelease:
    """Release every column's kind, numeric bounds, value histogram and category set of ``table`` (a frame, or the
    ``TableCounts`` of a table stored otherwise: the releases read nothing but those counts, ``privacy.counts``) under
    ``neighbouring``, calibrated by ``budget`` (module docstring). ``declared``: numeric columns of the table whose
    bounds ``(low, high, integer)`` a public domain gives; they get only their value histogram (stage 3).

    Never raises on the data: a column that the noise hides gets the stated defaults (module docstring) and
    ``located[column] = False`` (read from the released counts: saying so is post-processing).
    """
    counts = FrameCounts(table) if isinstance(table, pd.DataFrame) else table
    declared = dict(declared or {})
    typed = [column for column in counts.columns if column not in declared]
    if not typed and not declared:
        raise ValueError("release_domain needs at least one column.")
    neighbouring = Adjacency.of(neighbouring)
    z = budget.noise_multiplier
    noise_std, _ = stage_noise(z, len(typed), 0, 0, len(declared), neighbouring)

    kinds: dict[str, Kind] = {}
    type_totals: dict[str, float] = {}
    missing_counts: dict[str, float] = {}
    present_totals: dict[str, float] = {}
    missing: dict[str, bool] = {}
    mixed: dict[str, float] = {}
    number_counts: dict[str, float] = {}
    other_counts: dict[str, float] = {}
    placed: dict[str, bool] = {}
    exact_types = counts.type_counts(typed)
    for column in typed:  # stage 1: the kinds (and whether the column has missing entries)
        type_counts = exact_types[column].astype(float)
        integer_count, float_count, other_count, missing_count = noisy_counts(type_counts, noise_std, secret, TYPE_WEIGHT)
        type_totals[column] = integer_count + float_count + other_count + missing_count  # every row counted once
        present_totals[column] = integer_count + float_count + other_count  # every row that is not missing
        missing_counts[column] = missing_count
        kinds[column] = decide_kind(integer_count, float_count, other_count, noise_std / TYPE_WEIGHT)
        number_count, clear = integer_count + float_count, MIXED_MARGIN * noise_std / TYPE_WEIGHT
        number_counts[column], other_counts[column] = number_count, other_count
        if other_count > clear and number_count > clear * math.sqrt(2.0):  # both kinds stand out of the noise
            odd = number_count if kinds[column] == "categorical" else other_count
            mixed[column] = float(odd / max(number_count + other_count, 1.0))
    # The kinds fix stages 2 to 4: their noise is set so that their total mu does not depend on them.
    n_categorical = sum(kind == "categorical" for kind in kinds.values())
    float_columns = [column for column in typed if kinds[column] == "float"]
    float_columns += [column for column, (_, _, integer) in declared.items() if not integer]
    n_atoms = len(float_columns) if budget.threshold_delta > 0 else 0  # atoms are keyed: they need the threshold
    _, category_std = stage_noise(
        z, len(typed), n_categorical, len(typed) - n_categorical, len(declared), neighbouring, n_atoms
    )
    bins_std, histogram_std = range_ratio(n_categorical) * category_std, HISTOGRAM_NOISE_RATIO * category_std
    threshold = category_threshold(category_std, budget.threshold_epsilon, budget.threshold_delta, n_categorical + n_atoms)

    bounds: dict[str, tuple[float, float]] = {}
    categories: dict[str, tuple[object, ...]] = {}
    located: dict[str, bool] = {}
    lost: dict[str, float] = {}
    unpublished_rows: dict[str, tuple[float, float]] = {}
    hidden_missing: dict[str, float] = {}
    one_way: dict[str, tuple[tuple[object, float, float], ...]] = {}
    missing_estimates: dict[str, float] = {}
    plan = {column: None if kinds[column] == "categorical" else stage_two_edges(kinds[column]) for column in typed}
    exact_values = counts.value_counts(plan)
    for column in typed:  # stage 2: categories, or the numeric bins; each with the column's missing cell last
        n_missing = float(exact_values[column].missing)
        if kinds[column] == "categorical":
            observed = dict(exact_values[column].categories or {})
            keys = list(observed)
            released = noisy_counts(np.append(np.array(list(observed.values()), dtype=float), n_missing), category_std, secret)
            missing[column], estimate = missing_level(missing_counts[column], noise_std / TYPE_WEIGHT, released[-1], category_std)
            released = released[:-1]
            passed = released > threshold
            kept = [category_value(key) for key, published in zip(keys, passed) if published]
            located[column] = len(kept) > 0
            # Only categories above the threshold may be published (an observed category is private): where none
            # passed, the column gets a placeholder, a function of the (empty) released set. The order is a total
            # one on the published values, never the order of their counts.
            published = sorted(zip(kept, released[passed]), key=lambda pair: (str(pair[0]), type(pair[0]).__name__))
            ordered = [value for value, _ in published] if kept else [NO_CATEGORY]
            unpublished, spread = unpublished_estimate(
                present_totals[column], [type_totals[other] for other in typed if other != column], estimate,
                noise_std / TYPE_WEIGHT, category_std, released[passed],
            )
            measured = [(value, float(count), category_std) for value, count in published]
            if kept and unpublished > OTHER_LEVEL * spread:
                ordered.append(OTHER_CATEGORY)
                lost[column] = unpublished
                measured.append((OTHER_CATEGORY, unpublished, spread))
            elif kept:  # the encoders map unpublished categories to the first level, which this count leaves out
                measured[0] = (measured[0][0], measured[0][1], math.inf)
                unpublished_rows[column] = (unpublished, spread)
            categories[column] = tuple(ordered)
            if kept:
                one_way[column] = tuple(measured)
            mass = (0.0, 0.0)  # a categorical column's placement reads its categories only
        else:
            edges = plan[column]
            assert edges is not None and exact_values[column].bins is not None
            released = noisy_counts(np.append(exact_values[column].bins.astype(float), n_missing), bins_std, secret)
            missing[column], estimate = missing_level(missing_counts[column], noise_std / TYPE_WEIGHT, released[-1], bins_std)
            bounds[column], located[column] = numeric_bounds(released[:-1], edges[:-1], edges[1:], bins_std)
            if kinds[column] == "integer":  # a range of one integer keeps a neighbour, counted apart by stage 3
                bounds[column] = two_integers(bounds[column], released[:-1], edges, bins_std)
            inside = (edges[:-1] >= bounds[column][0]) & (edges[1:] <= bounds[column][1])  # the range's bins
            mass = (float(released[:-1][inside].sum()), bins_std * math.sqrt(float(inside.sum())))
        missing_estimates[column] = estimate
        placed[column] = placement(
            kinds[column], located[column], number_counts[column], other_counts[column], noise_std / TYPE_WEIGHT, *mass
        )
        if not missing[column] and estimate > 0:
            hidden_missing[column] = estimate
    histograms: dict[str, tuple[tuple[float, ...], tuple[float, ...]]] = {}
    ranges = {**{column: (*bounds[column], kinds[column] == "integer") for column in bounds}, **declared}
    cells = {column: histogram_edges(low, high, integer) for column, (low, high, integer) in ranges.items()}
    exact_histograms = counts.histogram_counts(cells)  # numbers only: missing entries are counted in no histogram
    for column, (low, high, integer) in ranges.items():  # stage 3: the value histograms inside the ranges
        edges = cells[column]
        noisy = noisy_counts(exact_histograms[column].astype(float), histogram_std, secret)
        histograms[column] = (tuple(float(edge) for edge in edges), tuple(float(count) for count in noisy))
        if column in bounds and located[column]:  # a released range's ends, trimmed to what its sub-bins show
            first, last = trimmed_span(noisy, histogram_std, split_bins(edges, integer))
            bounds[column] = (float(edges[first]), float(edges[last + 1]))
        if integer and column in kinds and np.all(np.diff(np.ceil(edges)) == 1):  # unit bins: one integer each
            one_way[column] = tuple((int(math.ceil(left)), float(count), histogram_std) for left, count in zip(edges, noisy))
    atoms: dict[str, tuple[tuple[float, float], ...]] = {}
    if n_atoms:  # stage 4: a float column's frequent exact values inside its range, published above r_a tau
        exact_atoms = counts.atom_counts({column: ranges[column][:2] for column in float_columns})
        for column in float_columns:
            observed = exact_atoms[column]  # keys in increasing order: the noise's order is a public one
            noisy = noisy_counts(np.array(list(observed.values()), dtype=float), ATOM_NOISE_RATIO * category_std, secret)
            low, high = bounds.get(column, ranges[column][:2])  # inside the (trimmed) range only
            published = tuple((value, float(count)) for value, count in zip(observed, noisy)
                              if count > ATOM_NOISE_RATIO * threshold and low <= value <= high)
            if published:
                atoms[column] = published
    for column in one_way:  # a column's missing level is measured too: stage 1's and stage 2's counts, combined
        if missing[column]:
            one_way[column] += ((None, missing_estimates[column], 0.0),)
    rows = max(float(np.mean(list(type_totals.values()))), 0.0) if type_totals else None
    # A table whose rows, all in one bin, would not reach the run's threshold has no numeric column that stands out
    # of the noise but by noise: none is placed (n where it is public, replace-one; else its released estimate).
    table_rows = float(exact_types[typed[0]].sum()) if neighbouring.n_is_public and typed else (rows or 0.0)
    if table_rows < bins_std * float(norm.isf(0.01 / WINDOW)):
        placed.update({column: False for column in placed if kinds[column] != "categorical"})
    return DomainRelease(
        kinds, bounds, categories, located, budget, noise_std, threshold, neighbouring,
        category_std=category_std, histograms=histograms, lost=lost, unpublished=unpublished_rows, declared=declared, missing=missing,
        hidden_missing=hidden_missing, released_rows=rows, one_way=one_way, placed=placed, mixed=mixed, atoms=atoms,
        atom_columns=tuple(float_columns) if n_atoms else (),
    )


def histogram_edges(low: float, high: float, integer: bool) -> np.ndarray:
    """The edges of a value histogram over [low, high] (stage 3): the kind's stage-2 bins inside the range, each split
    into ``SUB_BINS`` sub-bins, geometric where the bin lies on one side of zero, linear where it touches zero; an
    integer column's unit bins stay whole. A float range that holds zero (across it, or from it as a declared
    ``(0, 60)``) has the octaves within 1/64 of its largest magnitude merged into one bin beside zero, split
    linearly, and keeps zero's atom, the bins between 0 and +-2^-16 (``adapters.tabular.snapped_to_zero``: the
    exact zeros of an amount). A public function of the (released or declared) range. A declared range from zero
    once kept every octave down to 2^-16: 136 of its 176 cells below 1, where no value of a count, a duration or an
    amount lies, each of them pure noise (docs/flows.md, fact 80)."""
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
    exceeds Phi^{-1}(1 - 0.001 / (B (B + 1))) (module docstring), then the next among the bins left. Fair's ``affairs`` (68%
    zeros, the rest spread over ten octaves at about 3 stds each) kept its zeros only, and every positive amount was
    clipped to zero, until such runs were read too (docs/flows.md, fact 80). Post-processing of the released
    counts."""
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
    # The run of neighbours of the anchor's fullest bin whose counts exceed three noise standard deviations: a
    # column's bins are neighbours, and a false neighbour (0.13% per side) stretches the range by one bin only.
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

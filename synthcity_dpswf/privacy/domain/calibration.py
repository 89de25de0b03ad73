r"""The DP domain's noise: its four Gaussian stages calibrated as one Gaussian-DP mechanism, and the threshold that
publishes private keys (privacy.md, "The DP domain").

Replacing one record moves at most one count by -1 and one by +1 in each partition of each column (adding one
adds one count: add/remove, m = 1 instead of m = 2 below). With C columns in stage 1, of which C_cat categorical
and C_num numeric after it, C_dec declared numeric columns, C_atom float columns given atoms (the typed float columns
and the declared ones, when the threshold has a delta) and C_prec float columns given a precision partition (the same
columns whatever the delta, less the declared ones whose decimals the schema states), the stages are Gaussian
mechanisms with :math:`\mu_1^2 = m C w^2 / s^2` and, given stage 1's output (which fixes the kinds),
:math:`\mu_{23}^2 = m (C_{cat} + C_{num} / r^2 + (C_{num} + C_{dec}) / r_q^2 + C_{atom} / r_a^2 + C_{prec} / r_p^2)
/ s_c^2`. The noise
is set so that :math:`\mu_1^2 = \frac{w^2}{1 + w^2}\mu^2` and :math:`\mu_{23}^2 = \frac{1}{1 + w^2}\mu^2` whatever
the kinds, with :math:`\mu = 1/z` and z the ``DomainCalibration``'s: alone, from the analytic Gaussian mechanism at
:math:`(\varepsilon, \delta/2)`; in a plugin, :math:`z/\sqrt{s}` of the run's budget shared with the releases
(``privacy.budget.Budget.domain_part``; privacy.md, "One budget"). Gaussian mechanisms composed adaptively, each with
its :math:`\mu_i` fixed given the earlier outputs, are one :math:`\sqrt{\sum \mu_i^2}`-GDP mechanism (Dong, Roth & Su
2022, Corollary 3.3), so the release alone is :math:`(\varepsilon, \delta/2)`-DP. (Without stages 3 and 4 and with
r = 1, this is the single-noise design :math:`\Delta = \sqrt{mC(1 + w^2)}` of earlier versions.) The grouping: given
stage 1's output, stages 2 to 4 together are one :math:`\mu_{23}`-GDP mechanism whatever that output (stages 3 and 4
adapt to stage 2's ranges, and Gaussian DP composes adaptively), and that composes with stage 1.

The observed categories and atoms are private keys (categories counted by ``category_key``, so that 1, 1.0 and True
are told apart by kind, not merged in the order the records come). A category is published only when its noisy
count exceeds :math:`\tau = s_c\,\Phi^{-1}(1 - \eta)`, an atom above :math:`r_a \tau`,
:math:`\eta = \delta / (2 C_{key}(1 + e^\varepsilon))` with :math:`C_{key} = C_{cat} + C_{atom}` (in general
:math:`\delta_T / (C_{key}(1 + e^{\varepsilon_T}))`, ``DomainCalibration``). Proof: let :math:`\tilde M` count every key
observed in D *or* D' (zero where unobserved) and threshold them all; :math:`\tilde M(D)` and :math:`\tilde M(D')`
are the Gaussian release above followed by post-processing, so :math:`(\varepsilon, \delta/2)`-indistinguishable.
With shared noise, the real release M(D) equals :math:`\tilde M(D)` unless one of the at most C_key keys unobserved
in D (one per keyed column, the kinds being fixed by stage 1's output and the ranges by stage 2's: a neighbour adds
at most one new key to a column) passes its threshold with count 0, probability at most :math:`C_{key}\eta`; the
same for D'. Hence :math:`P[M(D) \in S] \le e^\varepsilon (P[M(D') \in S] + C_{key}\eta) + \delta/2 + C_{key}\eta
\le e^\varepsilon P[M(D') \in S] + \delta`. A category needs about :math:`\tau + 1.645 s_c` records to be published
with probability 95% (``DomainRelease.needed_rows``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.stats import norm

from synthcity_dpswf.privacy.gaussian import analytic_gaussian_epsilon, analytic_gaussian_noise_multiplier
from synthcity_dpswf.privacy.neighbouring import Adjacency

TYPE_WEIGHT = 0.5
"""Scale of the type counts in the released vector: their noise is s / 0.5 = 2s, and the decision between
kinds has a margin of n / 2 on a column of one kind, while the sensitivity grows only by sqrt(2.5 / 2) = 1.12."""
RANGE_NOISE_RATIO = 2.0
"""r: the numeric bins' noise std relative to the category counts' (stage 2; ``privacy.domain``) when the released kinds
include a categorical column (``range_ratio``; 1 otherwise: nothing to favour)."""
HISTOGRAM_NOISE_RATIO = 2.0
"""r_q: the value histograms' noise std relative to the category counts' (stage 3)."""
ATOM_NOISE_RATIO = 2.0
"""r_a, the atom counts' noise relative to the category counts' (stage 4): an atom worth restoring (a coded value of a
float column) holds a large share of its column's rows, so it may stand out of more noise, and the other stages' noise
pays less for it (s_c grows by sqrt(1 + C_atom / (r_a^2 S)), S the stages' other terms). Chosen on the validation
tables only (``benchmarks/studies/atom_ratio.py``, ``benchmarks/results/atom_ratio.md``, and again with coded columns:
``benchmarks/studies/coded_numbers.py``, ``benchmarks/results/coded_numbers_*.md``): a smaller ratio costs the
categories of a table without frequent values their survival, a larger one the atoms of coded floats."""
DECIMAL_NOISE_RATIO = 2.0
"""r_p, the precision partition's noise relative to the category counts' (stage 4: a float column's numbers counted by
their number of decimals, ``privacy.counts.decimal_cells``): the output's rounding reads only cells that hold a clear
share of the column (``columns.output_decimals``), so they may stand out of more noise; each float column adds
1 / r_p^2 to the stages' sum, as a value histogram does."""
SURVIVAL_QUANTILE = 1.645
"""A category with tau + 1.645 s_c records is published with probability 95% (``DomainRelease.needed_rows``)."""


@dataclass(frozen=True)
class DomainCalibration:
    r"""How a DP domain is calibrated (privacy.md, "The DP domain" and "One budget"): a value, not a budget, made by
    the run's ``privacy.budget.Budget.domain_part`` (or ``alone``, for a domain released on its own).

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
    share: float | None = None
    """s, the share of the run's mu^2 its Gaussian stages take (``privacy.budget.Budget.domain_part``); ``None``: a
    domain released on its own (``alone``)."""

    def __post_init__(self) -> None:
        if not self.noise_multiplier > 0 or not math.isfinite(self.noise_multiplier):
            raise ValueError(f"noise_multiplier must be positive and finite, got {self.noise_multiplier!r}.")
        if not 0 < self.gaussian_delta < 1 or not 0 <= self.threshold_delta < 1:
            raise ValueError(f"the deltas must lie in (0, 1), got {self.gaussian_delta!r} and {self.threshold_delta!r}.")
        if not self.threshold_epsilon > 0:
            raise ValueError(f"threshold_epsilon must be > 0, got {self.threshold_epsilon!r}.")

    @classmethod
    def alone(cls, epsilon: float, delta: float) -> "DomainCalibration":
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


def range_ratio(n_categorical: int) -> float:
    """r, the numeric bins' noise relative to the category counts': ``RANGE_NOISE_RATIO`` when there are categories
    to favour, else 1 (a function of the released kinds)."""
    return RANGE_NOISE_RATIO if n_categorical > 0 else 1.0


def stage_noise(
    z: float, n_typed: int, n_categorical: int, n_numeric: int, n_declared: int, neighbouring: Adjacency | str,
    n_atoms: int = 0, n_precision: int = 0,
) -> tuple[float, float]:
    r"""The noise stds ``(s, s_c)`` of stage 1 (type counts of ``n_typed`` columns, weight w) and of stages 2 to 4
    (category counts s_c, numeric bins r s_c, histograms r_q s_c, the atoms of ``n_atoms`` float columns r_a s_c,
    the precision partitions of ``n_precision`` float columns r_p s_c) for multiplier z (module docstring):
    :math:`s = z\sqrt{m C (1 + w^2)}`,
    :math:`s_c = z\sqrt{m (1 + w^2)(C_{cat} + C_{num}/r^2 + (C_{num} + C_{dec})/r_q^2 + C_{atom}/r_a^2
    + C_{prec}/r_p^2)}` with m = 2 (replace-one) or 1 (add/remove); stage 1's share of the budget is 0 when no column
    is typed."""
    moved = 2 if Adjacency.of(neighbouring).n_is_public else 1  # units moved per partition by one neighbour
    ratio = range_ratio(n_categorical)
    later = (n_categorical + n_numeric / ratio**2 + (n_numeric + n_declared) / HISTOGRAM_NOISE_RATIO**2
             + n_atoms / ATOM_NOISE_RATIO**2 + n_precision / DECIMAL_NOISE_RATIO**2)
    share = 1 + TYPE_WEIGHT**2 if n_typed > 0 else 1.0  # mu_23^2 = mu^2 / (1 + w^2) when stage 1 runs
    return z * math.sqrt(moved * n_typed * (1 + TYPE_WEIGHT**2)), z * math.sqrt(moved * share * max(later, 1e-12))


def category_threshold(category_std: float, threshold_epsilon: float, threshold_delta: float, n_keyed: int) -> float:
    r"""tau = s_c Phi^{-1}(1 - eta), eta = delta_T / (C_key (1 + e^epsilon_T)), C_key = C_cat + C_atom the partitions
    counted by private keys (categories, atoms: privacy.md's proof; a domain alone at (epsilon, delta) has
    epsilon_T = epsilon and delta_T = delta / 2). An atom's threshold is r_a tau (its counts' noise is r_a s_c)."""
    tail = threshold_delta / (max(n_keyed, 1) * (1 + math.exp(min(threshold_epsilon, 700.0))))
    return category_std * float(norm.isf(tail))


def rows_needed(
    calibration: DomainCalibration, n_categorical: int, n_numeric: int, n_declared: int, neighbouring: Adjacency | str,
    n_atoms: int = 0, n_precision: int = 0,
) -> float:
    """About how many records a category needs to be published with probability 95% by a domain release of this
    calibration with these column counts (tau + 1.645 s_c): a function of public numbers, for choosing a budget share
    before any release."""
    _, category_std = stage_noise(
        calibration.noise_multiplier, n_categorical + n_numeric, n_categorical, n_numeric, n_declared, neighbouring,
        n_atoms, n_precision,
    )
    threshold = category_threshold(category_std, calibration.threshold_epsilon, calibration.threshold_delta,
                                   n_categorical + n_atoms)
    return threshold + SURVIVAL_QUANTILE * category_std


def publishes_keys(n_typed: int, declared: dict[str, tuple[float, float, bool]]) -> bool:
    """Whether a DP domain of ``n_typed`` typed columns and these ``declared`` numeric ones may publish private keys,
    so that its threshold needs a delta: categories (some column is typed, so may be categorical) or atoms (some column
    may be float: typed, or declared with a float range)."""
    return n_typed > 0 or any(not integer for _, _, integer in declared.values())

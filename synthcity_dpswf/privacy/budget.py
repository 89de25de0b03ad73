"""A run's budget, the one budget class: (epsilon, delta) as the user gives it, checked once (``Budget``); the parts
spent before the generator's releases (a DP domain's, ``Budget.domain_part``; a pair selection's,
``Budget.share_of_rest``; a private codec's, ``Budget.share``), each recorded by ``Budget.spend``; the one calibration
of the releases' noise (a table's, with its pair selection's part, in one call: ``Budget.release_terms``); and how
its split is set from public numbers (the default delta, the share a DP domain takes: privacy.md, "The DP domain" and
"One budget")."""

from __future__ import annotations

import dataclasses
import math
import numbers
import warnings
from dataclasses import dataclass

from synthcity_dpswf.privacy.accountant import ReleaseAccountant
from synthcity_dpswf.privacy.domain.calibration import ATOM_NOISE_RATIO, DomainCalibration, rows_needed
from synthcity_dpswf.privacy.gaussian import (
    Prior,
    PriorLike,
    SampledGaussian,
    analytic_gaussian_epsilon,
    analytic_gaussian_noise_multiplier,
    composed_multiplier,
)
from synthcity_dpswf.privacy.neighbouring import Adjacency
from synthcity_dpswf.notices import DPSWFWarning


def check_privacy_target(epsilon: float, delta: float | None, n_records: int | None) -> None:
    """Validate (epsilon, delta) for n records: epsilon a number > 0 (inf allowed), delta a number in (0, 1), warn if
    delta >= 1/n (``n_records=None``, n private under add/remove or not known yet: no comparison with n).
    ``delta=None`` (a default chosen from n later) checks epsilon alone. ``Budget`` calls it where the user gives the
    budget; the generators' ``fit(records, epsilon, delta)`` for their direct callers."""
    if isinstance(epsilon, bool) or not isinstance(epsilon, numbers.Real):
        raise ValueError(f"epsilon must be a number (float('inf') for no privacy), got {epsilon!r} "
                         f"({type(epsilon).__name__}).")
    if math.isnan(epsilon) or epsilon <= 0:
        raise ValueError(f"epsilon must be > 0 (float('inf') for no privacy), got {epsilon!r}.")
    if delta is None:
        return
    check_delta(delta, n_records if math.isfinite(epsilon) else None)


def check_delta(delta: float, n_records: int | None) -> None:
    """Validate delta, a number in (0, 1), for n records; warn if delta >= 1/n (never when n is private, ``None``: a
    warning whose condition one record can change would be a release)."""
    if isinstance(delta, bool) or not isinstance(delta, numbers.Real):
        raise ValueError(f"delta must be a number in (0, 1), got {delta!r} ({type(delta).__name__}); a common choice "
                         "is below 1/n.")
    if not 0 < delta < 1:
        raise ValueError(f"delta must lie in (0, 1), got {delta!r}; a common choice is below 1/n.")
    if n_records is not None and delta >= 1 / n_records:
        warnings.warn(
            f"delta={delta:g} >= 1/n = {1 / n_records:.3g}: a mechanism that publishes a random record would meet "
            "it; choose delta well below 1/n.",
            DPSWFWarning,
            stacklevel=3,
        )


def default_delta(n_records: int | None) -> float:
    """The delta used when none is given: min(1e-5, n^-1.1), well below the 1/n that a mechanism publishing one
    random record would meet (1e-5 up to about 35,000 rows, then n^-1.1: 6.9e-6 for Adult's 48,842); 1e-5 when n is
    private (``None``, add/remove)."""
    return 1e-5 if n_records is None else min(1e-5, n_records**-1.1)


THRESHOLD_DELTA_SHARE = 0.25
r"""The share of delta a DP domain's key threshold (categories, a float column's atoms) takes,
:math:`\delta_T = \delta / 4`, when it may publish a key (the rest, :math:`\delta_G`, goes to the Gaussian mechanisms
together: ``Budget.domain_part``). Publishing a category costs :math:`\Phi^{-1}(1 - \eta)` noise stds and calibrating
the Gaussians :math:`z(\varepsilon, \delta_G)`; both change little between delta / 10 and delta / 2, so the split is a
stated round number, not a tuned one."""


@dataclass(frozen=True)
class Budget:
    r"""A run's budget, (epsilon, delta) under ``neighbouring``, checked once, here, where the user gives it (a
    plugin's constructor), then handed down: what the run may spend in all.

    ``delta=None`` is chosen from n when the data comes (``for_records``: ``default_delta``). Parts spent before the
    generator's releases are recorded by ``spend``: one-shot Gaussian mechanisms of the same records (a DP domain, a
    private image codec), each by its multiplier :math:`z_i`, and a category threshold's delta :math:`\delta_T`. What
    is left for the releases is (epsilon, ``release_delta`` = :math:`\delta - \sum \delta_T`) with the spent
    Gaussians as their accountant's ``prior``, :math:`z_0 = (\sum_i z_i^{-2})^{-1/2}` (privacy.md, "One budget"):
    ``noise_multiplier`` calibrates a schedule's noise to it, once."""

    epsilon: float
    delta: float | None = None
    neighbouring: Adjacency = Adjacency.REPLACE_ONE
    """Which neighbours epsilon is stated for (a string is read by ``Adjacency.of``)."""
    priors: tuple[float, ...] = ()
    """The multipliers of the one-shot Gaussian mechanisms spent before the releases."""
    threshold_delta: float = 0.0
    """The delta spent by thresholds before the releases (outside the Gaussian accounting)."""
    schedules: tuple[SampledGaussian, ...] = ()
    """Sampled Gaussian schedules spent before the releases (a DP-SGD codec's training: ``spend_schedule``)."""

    def __post_init__(self) -> None:
        check_privacy_target(self.epsilon, self.delta, None)  # delta against 1/n waits for the data
        object.__setattr__(self, "neighbouring", Adjacency.of(self.neighbouring))

    def for_records(self, n_public: int | None) -> "Budget":
        """This budget for data of ``n_public`` records (``None``: n private, add/remove): delta chosen from n where
        it was left ``None`` (``default_delta``); a given delta >= 1/n is warned about here, once (never when n is
        private, nor at epsilon = inf)."""
        if self.delta is not None:
            if math.isfinite(self.epsilon):
                check_delta(self.delta, n_public)
            return self
        return dataclasses.replace(self, delta=default_delta(n_public))

    @property
    def resolved_delta(self) -> float:
        if self.delta is None:
            raise ValueError("delta is chosen from n: call for_records(n) first.")
        return self.delta

    @property
    def release_delta(self) -> float:
        """The delta the releases are calibrated at: delta less the thresholds' deltas spent."""
        return self.resolved_delta - self.threshold_delta

    @property
    def prior(self) -> PriorLike:
        """What was spent, the releases' accountant's prior: the multiplier of the spent one-shot Gaussian mechanisms
        composed (``None``: nothing spent), or a ``Prior`` with it and the spent sampled schedules."""
        if len(self.priors) < 2:  # one part: its multiplier itself, not 1 / sqrt(1 / z^2) rounded
            gaussian = self.priors[0] if self.priors else None
        else:
            gaussian = composed_multiplier(*self.priors)
        return Prior(gaussian, self.schedules) if self.schedules else gaussian

    def share(self, share: float, threshold_delta: float = 0.0) -> float:
        r"""The multiplier of a one-shot Gaussian mechanism taking ``share`` s of :math:`\mu^2` of this budget after a
        threshold's ``threshold_delta``: :math:`z / \sqrt{s}`, z the analytic Gaussian multiplier at (epsilon,
        ``release_delta`` - ``threshold_delta``): the releases then get the rest exactly (``spend`` it)."""
        if not 0 < share < 1:
            raise ValueError(f"a share of the budget must lie in (0, 1), got {share!r}.")
        if math.isinf(self.epsilon):
            raise ValueError("with epsilon = inf there is no noise to share: declare what would be released, or give "
                             "a finite epsilon.")
        return analytic_gaussian_noise_multiplier(self.epsilon, self.release_delta - threshold_delta) / math.sqrt(share)

    def rest_multiplier(self) -> float:
        r"""The multiplier of one Gaussian mechanism taking all the :math:`\mu^2` this budget leaves after its spent
        Gaussians, :math:`(\mu^2 - \sum_i z_i^{-2})^{-1/2}`, :math:`\mu = 1 / z` with z the analytic Gaussian multiplier
        at (epsilon, ``release_delta``): what one release of all records would get."""
        if math.isinf(self.epsilon):
            raise ValueError("with epsilon = inf there is no noise to share.")
        if self.schedules:
            raise ValueError("a sampled schedule was spent: what is left is not one Gaussian mechanism; calibrate the "
                             "releases with noise_multiplier (the accountant composes the whole history).")
        total = analytic_gaussian_noise_multiplier(self.epsilon, self.release_delta)
        left = 1.0 / total**2 - sum(1.0 / z**2 for z in self.priors)
        if left <= 0:
            raise ValueError(f"the spent mechanisms (z = {self.priors}) leave nothing of the budget (z = {total:.4g}).")
        return 1.0 / math.sqrt(left)

    def share_of_rest(self, share: float) -> float:
        r"""The multiplier of a one-shot Gaussian mechanism taking ``share`` q of the :math:`\mu^2` this budget leaves
        after its spent Gaussians (``rest_multiplier``): :math:`\mu_A^2 = q(\mu^2 - \sum_i z_i^{-2})` (privacy.md,
        "Paid pair selection"); ``spend`` it, and the releases get the rest."""
        if not 0 < share < 1:
            raise ValueError(f"a share of the budget must lie in (0, 1), got {share!r}.")
        return self.rest_multiplier() / math.sqrt(share)

    def domain_part(self, share: float, keyed: bool = True) -> DomainCalibration:
        r"""The DP domain's part of this budget, accounted with the releases as one mechanism (privacy.md, "One
        budget"): its key threshold takes :math:`\delta_T` = ``THRESHOLD_DELTA_SHARE`` of ``release_delta`` when the
        domain may publish private keys (``keyed``: categories, which it may when it releases columns' kinds, or a
        float column's atoms), else 0; its Gaussian stages take ``share`` s of :math:`\mu^2 = 1 / z^2`, :math:`z =
        z_{AG}(\varepsilon, \delta_G)` with :math:`\delta_G` = ``release_delta`` - :math:`\delta_T`, so
        :math:`z_D = z / \sqrt{s}` (``share``); the threshold is proved for the whole run, at this epsilon. ``spend``
        the part's ``noise_multiplier`` and ``threshold_delta``: the releases are then calibrated to (epsilon,
        :math:`\delta_G`) with :math:`z_D` as their accountant's prior, one release of all records at
        :math:`z / \sqrt{1 - s}` exactly, per-step releases at what their schedule's accountant leaves."""
        threshold_delta = THRESHOLD_DELTA_SHARE * self.release_delta if keyed else 0.0
        return DomainCalibration(self.share(share, threshold_delta), self.release_delta - threshold_delta, self.epsilon,
                                 threshold_delta, share)

    def share_guarantee(self, share: float) -> tuple[float, float]:
        """The (epsilon, delta) a one-shot Gaussian mechanism at ``share`` of this budget states as its own guarantee
        (a private codec's request and its report part): the analytic Gaussian epsilon of ``share(share)`` at
        ``release_delta``."""
        return analytic_gaussian_epsilon(self.share(share), self.release_delta), self.release_delta

    def spend(self, multiplier: float | None, threshold_delta: float = 0.0) -> "Budget":
        """This budget after a one-shot Gaussian mechanism of multiplier ``multiplier`` (``None``: none) and a
        threshold's ``threshold_delta`` were spent."""
        if threshold_delta < 0 or threshold_delta >= self.release_delta:
            raise ValueError(f"a threshold's delta must lie in [0, {self.release_delta:g}), got {threshold_delta!r}.")
        priors = self.priors if multiplier is None else (*self.priors, float(multiplier))
        return dataclasses.replace(self, priors=priors, threshold_delta=self.threshold_delta + threshold_delta)

    def spend_schedule(self, schedule: SampledGaussian) -> "Budget":
        """This budget after a sampled Gaussian schedule of the same records (a DP-SGD codec's training) was spent: one
        more entry of the releases' accountant's history (``prior``; privacy.md, "A private image codec trained by
        DP-SGD")."""
        return dataclasses.replace(self, schedules=(*self.schedules, schedule))

    def release_terms(
        self, accountant: ReleaseAccountant, steps: int, selection_share: float | None = None
    ) -> "ReleaseTerms":
        """What this budget gives a table's releases, computed once, here (privacy.md, "One budget" and "Paid pair
        selection"): a paid pair selection's multiplier at ``selection_share`` of what is left (``share_of_rest``;
        ``None``: no selection) spent, then the ``steps`` releases of ``accountant`` (planned before anything was
        spent) given the spent parts as their prior and calibrated to the rest (``noise_multiplier``)."""
        selection = None if selection_share is None else self.share_of_rest(selection_share)
        budget = self if selection is None else self.spend(selection)
        plan = accountant.with_prior(budget.prior), steps
        return ReleaseTerms(budget, plan, budget.noise_multiplier(*plan), selection)

    def noise_multiplier(self, accountant: ReleaseAccountant, steps: int) -> float:
        """The releases' noise multiplier z: ``steps`` releases of ``accountant``'s sampling calibrated to what is
        left (epsilon, ``release_delta``, with ``prior``); 0 when epsilon is inf (no noise, not private). The one
        calibration of a run."""
        if accountant.prior != self.prior:
            raise ValueError(f"the accountant's prior ({accountant.prior}) is not this budget's ({self.prior}).")
        if math.isinf(self.epsilon):
            return 0.0
        return accountant.calibrate(float(self.epsilon), self.release_delta, steps)


@dataclass(frozen=True)
class ReleaseTerms:
    """A table's releases as its budget settles them (``Budget.release_terms``): plain values, all the table recipe
    reads of its budget once it has handed the budget down."""

    budget: Budget
    """What is left for the releases: the run's budget with every part spent before them."""
    plan: tuple[ReleaseAccountant, int]
    """The releases' accountant, with the spent parts as its prior, and their number K."""
    noise_multiplier: float
    """z, the releases' noise multiplier calibrated to ``budget`` (0 at epsilon = inf)."""
    selection_multiplier: float | None = None
    """z_A, the paid pair selection's multiplier (``None``: no selection)."""

    @property
    def count_noise(self) -> float:
        r"""The noise std, per unit of sensitivity, of a count pooled over the K releases and read on the scale of all
        n records: z for one release of everything, :math:`z / (\sqrt{K} q)` for K releases of q n records each (their
        counts summed and divided by K q). A planning figure of public numbers."""
        accountant, steps = self.plan
        return self.noise_multiplier / (math.sqrt(steps) * accountant.sample_rate)


HISTOGRAM_SHARE = 0.05
"""The domain's share of mu^2 when a public domain declares every column and some numeric ones need their quantiles
(``needs_histogram``): only value histograms are released."""

SMALL_TABLE_SHARE = 0.4
"""The domain's share below 1,000 rows (``default_domain_share``), where the rule's category of 10% of the rows holds
fewer than 100 records: chosen on iris at epsilon = 3 and the default delta as the share at which its integer target
gets exactly its three levels in nearly every release, as half of epsilon did under the basic split of earlier
versions; smaller shares lose a level far more often (``benchmarks/studies/dp_domain.py``,
``benchmarks/results/dp_domain_iris.md``)."""

ADD_REMOVE_SHARE = 0.2
"""The domain's share when n is private (add/remove), where the rule below cannot run (it reads n): the largest share
the rule chose on the validation tables when it was set, before it counted atoms
(``benchmarks/studies/domain_share.py``)."""

SHARES = (0.05, 0.1, 0.15, 0.2, 0.3)
"""The shares ``default_domain_share`` tries, smallest first: the range over which the rule's choice was compared with
fixed shares on the validation tables (fair's training split and the stand-in), ending where neither table's 2-way TV
improved with a larger share (``benchmarks/studies/domain_share.py``, ``benchmarks/results/domain_share.md``)."""


def default_domain_share(
    n_records: int | None, n_undeclared: int, n_histograms: int, epsilon: float, delta: float, neighbouring: Adjacency
) -> float:
    """The share of mu^2 a DP domain gets of the run's budget (``Budget.domain_part``) when none is given, from public
    numbers only.

    - Only value histograms of declared columns: ``HISTOGRAM_SHARE``.
    - n private (add/remove): ``ADD_REMOVE_SHARE``.
    - Below 1,000 rows: ``SMALL_TABLE_SHARE``.
    - Else the smallest of ``SHARES`` at which a category and a float column's atom each holding 10% of the rows are
      published with probability 95% (``privacy.domain.rows_needed``; an atom needs ``ATOM_NOISE_RATIO`` times a
      category's rows) when half the undeclared columns are categorical and the other half float (their kinds are
      private until released; each float column with its atoms and precision partition: stage 4 of privacy.md,
      "The DP domain"); the largest if none is. The atoms are asked for because where coded floats are most
      of a table (fair), the share that publishes its categories leaves its frequent float values unpublished and
      its no-schema 2-way TV worse than the larger share that publishes both (``benchmarks/studies/domain_share.py``,
      ``benchmarks/results/domain_share.md``).
    """
    if n_undeclared == 0:
        return HISTOGRAM_SHARE
    if n_records is None:
        return ADD_REMOVE_SHARE
    if n_records < 1000:
        return SMALL_TABLE_SHARE
    categorical = math.ceil(n_undeclared / 2)
    numeric = n_undeclared - categorical
    budget = Budget(epsilon, delta, neighbouring)
    for share in SHARES:
        domain = budget.domain_part(share)
        needed = rows_needed(domain, categorical, numeric, n_histograms, neighbouring, n_atoms=numeric,
                             n_precision=numeric)
        if ATOM_NOISE_RATIO * needed <= 0.1 * n_records:
            return share
    return SHARES[-1]

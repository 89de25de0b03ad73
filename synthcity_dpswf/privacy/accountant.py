r"""Accounting for K Gaussian releases on uniform batches of b out of n records or on Poisson samples (privacy.md,
"Sampling and composition").

- One release of all n records (q = 1, K = 1, DPSWflow): the exact analytic Gaussian mechanism
  (``gaussian.analytic_gaussian_epsilon``), tighter than the RDP conversion; both are computed and the tighter is
  reported.
- K releases on batches of exactly b drawn uniformly without replacement, independently per step
  (DPSWflow-r, DPSWgen): under replace-one, the subsampled Gaussian is dominated by the same pair as the
  Poisson-subsampled Gaussian under add/remove (Balle, Barthe & Gaboardi 2018; Zhu, Dong & Wang 2022), so
  Opacus' RDPAccountant with history ``[(z, q = b/n, K)]`` gives a valid epsilon.
- Opacus' GaussianAccountant ("gdp", a central-limit approximation) and PRVAccountant ("prv", one direction of
  the pair only) are not offered: privacy.md, "Accountants", shows the first reporting less than a realised pair
  of neighbours and the second resting on an unproven assumption (``WITHDRAWN_ACCOUNTANTS``).
- Cross-check: dp-accounting's RDP accountant with ``REPLACE_ONE`` and ``SampledWithoutReplacementDpEvent``
  (Wang, Balle & Kasiviswanathan 2019: the general bound of their Theorem 9, each term replaced by the smaller
  one of their Theorem 27 for the subsampled Gaussian mechanism), a looser bound for exactly this scheme. It
  assumes only that the base mechanism is a Gaussian mechanism of replace-one sensitivity Delta and noise z Delta
  (privacy.md, "Sampling and composition"), not Opacus' pair, so it is the reported accountant
  (``REPLACE_ONE_RDP``) of fixed-size batches for release kinds for which privacy.md does not prove that pair (sums of
  per-record contributions, e.g. histograms).
- K releases on Poisson batches under replace-one (every record independently with probability q, n public), of a
  sum kind whose every record contributes a vector of one norm C: dominated by the antipodal pair (1 - q) N(0) + q N(C)
  against (1 - q) N(0) + q N(-C) (privacy.md, "Poisson batches under replace-one"), accounted by dp-accounting's
  privacy loss distribution of exactly that pair (``REPLACE_ONE_PLD``).
- A one-shot Gaussian mechanism released before the schedule on the same records (a DP domain: ``prior``, its
  multiplier z_0) joins every accounting as one more entry, (z_0, q = 1, one step): its RDP curve is exactly
  :math:`\alpha / (2 z_0^2)`, the Gaussian mechanism's (privacy.md, "One budget"); a single release with a prior is
  accounted in Gaussian DP, at the composed multiplier :math:`(z^{-2} + z_0^{-2})^{-1/2}`.
- A sampled schedule released before (a DP-SGD codec's training: ``gaussian.SampledGaussian`` in a ``Prior``) joins
  the history as its own entry (z_c, q_c, K_c) (Opacus) or its own sampled event (dp-accounting); under replace-one
  its fixed-size batches of per-record sums are accounted by the replace-one bound only (privacy.md, "A private image
  codec trained by DP-SGD"), so Opacus' pair refuses such a prior, and its Poisson batches by the antipodal pair only
  (its own privacy loss distribution, composed with the releases' in ``REPLACE_ONE_PLD``), which then accounts releases
  on Poisson batches or of all records (q = 1, where the pair at radius 1/2 is exactly the Gaussian mechanism).
"""

from __future__ import annotations

import functools
import math
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Callable

import dp_accounting
from dp_accounting.pld import privacy_loss_distribution
from opacus.accountants import IAccountant, RDPAccountant, create_accountant
from opacus.accountants.utils import get_noise_multiplier

from synthcity_dpswf.math.checks import check_positive, check_positive_int
from synthcity_dpswf.privacy.gaussian import (
    Prior,
    PriorLike,
    SampledGaussian,
    analytic_gaussian_epsilon,
    analytic_gaussian_noise_multiplier,
    composed_multiplier,
    remaining_multiplier,
    smallest_satisfying,
)
from synthcity_dpswf.privacy.neighbouring import Adjacency

RDP_ORDERS: list[float] = sorted(
    set(RDPAccountant.DEFAULT_ALPHAS) | {64, 72, 80, 96, 112, 128, 160, 192, 256, 320, 384, 512, 768, 1024}
)
"""RDP orders: Opacus' default grid (up to 63) extended to 1024, which tightens epsilon for large noise
multipliers and few steps, where the optimal order exceeds 63."""

REPLACE_ONE_ORDERS: list[float] = [order for order in RDP_ORDERS if order <= 128]
"""Orders of the replace-one accountant when it calibrates and reports: dp-accounting's bound costs more per order
the higher the order, so the orders above 128 would take most of a calibration's time; fewer orders can only raise
epsilon, so the result stays a valid bound, and orders above 128 matter only for epsilons far below 1."""

REPLACE_ONE_PLD = "replace_one_pld"
"""dp-accounting's privacy loss distribution of the antipodal pair for Poisson batches under replace-one (privacy.md,
"Poisson batches under replace-one"): valid for sums whose every record contributes a vector of the same norm C, or
of norm at most C (lifted: clipped gradients, "A private image codec trained by DP-SGD"), and for releases of all
records (the pair at q = 1 and radius 1/2: the Gaussian mechanism)."""

PLD_DISCRETIZATION = 1e-4
"""The privacy-loss grid of ``REPLACE_ONE_PLD`` (dp-accounting's pessimistic rounding: any grid gives an upper bound,
a finer one a tighter bound and a longer accounting; 1e-4 keeps an accounting of a hundred steps quick)."""

REPLACE_ONE_RDP = "replace_one_rdp"
"""dp-accounting's replace-one RDP bound for sampling without replacement (Wang, Balle & Kasiviswanathan 2019,
Theorem 9 with the per-term minimum of their Theorem 27): valid when the base mechanism is a Gaussian mechanism
(a deterministic statistic of replace-one sensitivity Delta plus N(0, (z Delta)^2) noise), whatever the geometry
of the per-record contributions."""


@dataclass(frozen=True)
class Sampling:
    """How each release's batch is drawn: exactly ``batch_size`` of the public ``n_records`` (replace-one), or every
    record independently with probability ``sample_rate`` (Poisson: ``batch_size`` None), under add/remove (n private,
    ``n_records`` None) or under replace-one (``n_records`` public, ``contribution_norm`` the antipodal pair's radius:
    the norm C every record's contribution has, over the replace-one sensitivity Delta that the multiplier z is in)."""

    sample_rate: float
    n_records: int | None = None
    batch_size: int | None = None
    contribution_norm: float | None = None

    @property
    def poisson(self) -> bool:
        """Whether every record is drawn independently (Poisson), under either adjacency."""
        return self.batch_size is None

    @property
    def neighbouring(self) -> Adjacency:
        """The adjacency the sampling is accounted under: replace-one where n is public."""
        return Adjacency.ADD_REMOVE if self.n_records is None else Adjacency.REPLACE_ONE


class AccountingMethod(ABC):
    """One accountant of the registry (``ACCOUNTANTS``): the epsilon of ``steps`` Gaussian releases of multiplier z on
    a ``Sampling``'s batches (with a ``prior``, one-shot Gaussians on all records and sampled schedules, for a method
    that ``takes_prior``),
    and the smallest z that meets a target."""

    description: str
    """What the report's "accountant" line says."""
    poisson_proven: bool = False
    """Whether privacy.md proves the method for Poisson sampling under add/remove ("Add/remove neighbours")."""
    fixed_size_proven: bool = True
    """Whether privacy.md proves the method for fixed-size batches of a public n under replace-one."""
    all_records_proven: bool = True
    """Whether privacy.md proves the method for releases of all n records (b = n: every release the Gaussian
    mechanism)."""
    replace_one_poisson_proven: bool = False
    """Whether privacy.md proves the method for Poisson sampling under replace-one ("Poisson batches under
    replace-one")."""
    takes_prior: bool = True
    """Whether a prior release can join the method's history (privacy.md, "One budget")."""
    cacheable: bool = True
    """Whether calibrations may be cached (an extension may be registered anew under its name: never)."""

    @abstractmethod
    def epsilon(self, sampling: Sampling, noise_multiplier: float, delta: float, steps: int, prior: PriorLike) -> float:
        """Epsilon of the history ``[(z, q, steps)]`` (and the prior's entries) at ``delta``."""

    def calibrate(self, sampling: Sampling, epsilon: float, delta: float, steps: int, prior: PriorLike) -> float:
        """The smallest z (to 0.1%) whose epsilon is at most the target (bisection)."""
        return smallest_satisfying(lambda z: z > 0 and self.epsilon(sampling, z, delta, steps, prior) <= epsilon, 1e-3)


class OpacusRDP(AccountingMethod):
    """Opacus' RDPAccountant over ``RDP_ORDERS``: the sampled-Gaussian pair (privacy.md, "Sampling and composition"
    for fixed-size batches under replace-one; "Add/remove neighbours" for Poisson sampling)."""

    description = "Opacus RDPAccountant (orders up to 1024)"
    poisson_proven = True

    def epsilon(self, sampling: Sampling, noise_multiplier: float, delta: float, steps: int, prior: PriorLike) -> float:
        return _opacus_epsilon("rdp", sampling.sample_rate, float(noise_multiplier), float(delta), steps, prior)

    def calibrate(self, sampling: Sampling, epsilon: float, delta: float, steps: int, prior: PriorLike) -> float:
        """Opacus' own binary search (conservative: the result's epsilon is at most the target); with a prior, the
        bisection, since Opacus' search knows no history but its own."""
        if prior is not None:
            return super().calibrate(sampling, epsilon, delta, steps, prior)
        return float(get_noise_multiplier(
            target_epsilon=epsilon, target_delta=delta, sample_rate=sampling.sample_rate, steps=steps, accountant="rdp",
            epsilon_tolerance=0.01, alphas=RDP_ORDERS,
        ))


class ReplaceOneRDP(AccountingMethod):
    """dp-accounting's replace-one RDP bound for batches sampled without replacement (``REPLACE_ONE_RDP``):
    fixed-size batches of a public n only."""

    description = ("dp-accounting RDP, replace-one, sampling without replacement (Wang, Balle & Kasiviswanathan "
                   "2019, Theorems 9 and 27: a Gaussian base mechanism)")

    def epsilon(self, sampling: Sampling, noise_multiplier: float, delta: float, steps: int, prior: PriorLike) -> float:
        return self.bound(sampling, noise_multiplier, delta, steps, prior, REPLACE_ONE_ORDERS)

    @staticmethod
    def bound(sampling: Sampling, noise_multiplier: float, delta: float, steps: int, prior: PriorLike,
              orders: list[float]) -> float:
        if sampling.n_records is None or sampling.batch_size is None:
            raise ValueError("the replace-one bound needs fixed-size batches of a public n; Poisson sampling has none.")
        return replace_one_rdp_epsilon(sampling.n_records, sampling.batch_size, float(noise_multiplier), float(delta),
                                       steps, tuple(orders), prior)

    def calibrate(self, sampling: Sampling, epsilon: float, delta: float, steps: int, prior: PriorLike) -> float:
        """The smallest z (to 0.2%) whose replace-one RDP epsilon is at most the target, bracketed from Opacus' z with
        the prior's one-shot part alone (the replace-one bound is the looser one, and a sampled prior only adds, so its
        z is larger): each evaluation of dp-accounting's bound takes about a second, and the bracket keeps the search
        to a handful of them."""
        holds = lambda z: z > 0 and self.epsilon(sampling, z, delta, steps, prior) <= epsilon  # noqa: E731
        entries = Prior.of(prior)
        one_shot = None if entries is None else entries.without_schedules()
        low = _calibrated(sampling, "rdp", epsilon, delta, steps, one_shot) * 0.99
        if holds(low):
            return super().calibrate(sampling, epsilon, delta, steps, prior)
        high = low * 1.25
        while not holds(high):
            low, high = high, high * 1.25
        while high - low > 2e-3 * high:
            middle = (low + high) / 2
            low, high = (low, middle) if holds(middle) else (middle, high)
        return high


class ReplaceOnePoissonPLD(AccountingMethod):
    """dp-accounting's privacy loss distribution of the antipodal pair (``REPLACE_ONE_PLD``): Poisson batches of a
    public n under replace-one, for sums whose every record contributes a vector of one norm (privacy.md, "Poisson
    batches under replace-one"), and releases of all records (the Gaussian: the pair at q = 1, radius 1/2); a one-shot
    prior joins as the Gaussian pair N(0, z_0^2) against N(1, z_0^2), and a DP-SGD codec's Poisson schedule as its own
    pair composed its number of steps."""

    description = ("dp-accounting PLD, replace-one: the antipodal pair (1 - q) N(0) + q N(C) against "
                   "(1 - q) N(0) + q N(-C) (Poisson batches; q = 1 for all records), pessimistic rounding")
    fixed_size_proven = False
    all_records_proven = True
    replace_one_poisson_proven = True

    def epsilon(self, sampling: Sampling, noise_multiplier: float, delta: float, steps: int, prior: PriorLike) -> float:
        """Epsilon of the composition: the releases' pair (Poisson batches at the kind's radius, or all records: the
        Gaussian mechanism, the pair at q = 1 and radius 1/2), each sampled prior schedule's own pair, and the one-shot
        prior's Gaussian."""
        if sampling.n_records is None or not (sampling.poisson and sampling.contribution_norm is not None
                                              or sampling.batch_size == sampling.n_records):
            raise ValueError("the antipodal pair accounts Poisson batches of a public n with a contribution norm, or "
                             f"releases of all records; got {sampling}.")
        rate, norm = (sampling.sample_rate, sampling.contribution_norm) if sampling.poisson else (1.0, 0.5)
        entries = Prior.of(prior)
        if entries is not None and not all(schedule.replace_one_poisson for schedule in entries.schedules):
            raise ValueError(f"the {REPLACE_ONE_PLD!r} accountant composes one-shot priors and Poisson schedules under "
                             f"replace-one only, got {prior}.")
        return replace_one_poisson_epsilon(
            rate, float(noise_multiplier), float(norm), float(delta), steps,  # type: ignore[arg-type]
            None if entries is None else entries.gaussian, () if entries is None else entries.schedules)


class ExtensionAccountant(AccountingMethod):
    """An Opacus-style accountant an extension registered (``history`` of (z, q, steps), ``get_epsilon(delta)``):
    fixed-size batches only, no prior, never cached."""

    takes_prior = False
    cacheable = False

    def __init__(self, factory: Callable[[], IAccountant], description: str) -> None:
        self.factory, self.description = factory, description

    def epsilon(self, sampling: Sampling, noise_multiplier: float, delta: float, steps: int, prior: PriorLike) -> float:
        accountant = self.factory()
        accountant.history = [(noise_multiplier, sampling.sample_rate, steps)]
        return float(accountant.get_epsilon(delta=delta))


ACCOUNTANTS: dict[str, AccountingMethod] = {
    "rdp": OpacusRDP(), REPLACE_ONE_RDP: ReplaceOneRDP(), REPLACE_ONE_PLD: ReplaceOnePoissonPLD(),
}
"""Accountants selectable by name (the report shows each one's ``description``). Extensions add to it with
``register_accountant`` (``synthcity_dpswf.extensions`` does so for entry points)."""

WITHDRAWN_ACCOUNTANTS: dict[str, str] = {
    "gdp": "Opacus' GaussianAccountant is a central-limit approximation, not a bound: calibrated to epsilon = 10 "
    "at n = 2000, b = 250, K = 280 it reports 9.99 where a realised pair of neighbours has 10.5",
    "prv": "Opacus' PRVAccountant composes one direction of the subsampled Gaussian pair only (the mixture "
    "against N(0, 1)), and nothing proves that direction the worse one",
}
"""Opacus accountants that are refused, with the reason (privacy.md, "Accountants"); their names cannot be
registered either."""


def register_accountant(name: str, factory: Callable[[], IAccountant], description: str) -> None:
    """Make an Opacus-style accountant (``history`` list of (z, q, steps), ``get_epsilon(delta)``) selectable
    by ``name``. It must account the subsampled Gaussian validly for the sampling of privacy.md."""
    if name in WITHDRAWN_ACCOUNTANTS:
        raise ValueError(
            f"accountant {name!r} is withdrawn ({WITHDRAWN_ACCOUNTANTS[name]}); register yours under another name."
        )
    if name in ACCOUNTANTS and not isinstance(ACCOUNTANTS[name], ExtensionAccountant):
        raise ValueError(f"accountant {name!r} is built in; register yours under another name.")
    ACCOUNTANTS[name] = ExtensionAccountant(factory, description)


def check_accountant(name: str) -> None:
    """Raise unless ``name`` is selectable; a withdrawn accountant is refused with its reason (privacy.md,
    "Accountants")."""
    if name in WITHDRAWN_ACCOUNTANTS:
        raise ValueError(
            f"accountant {name!r} is not offered: {WITHDRAWN_ACCOUNTANTS[name]}; use 'rdp' (or {REPLACE_ONE_RDP!r})."
        )
    if name not in ACCOUNTANTS:
        raise ValueError(f"accountant must be one of {sorted(ACCOUNTANTS)}, got {name!r}.")


def _check_epsilon_delta(epsilon: float, delta: float) -> None:
    check_positive("epsilon", epsilon)
    if not 0 < delta < 1:
        raise ValueError(f"delta must lie in (0, 1), got {delta!r}.")


@dataclass(frozen=True)
class Accounting:
    """The result of accounting one schedule of releases: the epsilon, and which method produced it."""

    epsilon: float
    method: str


class ReleaseAccountant:
    """Accounts ``steps`` Gaussian releases with multiplier z, each on a uniform batch of ``batch_size`` of
    ``n_records`` records (``batch_size == n_records`` and one step: a single release), under replace-one; or, built
    with ``ReleaseAccountant.poisson``, on Poisson samples of rate q: under add/remove (n private) or, given n and the
    contribution norm, under replace-one.

    Args:
        n_records: n, the (public) number of private records; ``None`` under add/remove.
        batch_size: b, records per release; ``None`` for Poisson samples (``sample_rate``).
        accountant: a name of ``ACCOUNTANTS``: ``"rdp"`` (default, Opacus' RDP), ``"replace_one_rdp"``,
            ``"replace_one_pld"`` (Poisson batches under replace-one, or releases of all records) or an extension's;
            ``"gdp"`` and ``"prv"``
            are refused (``WITHDRAWN_ACCOUNTANTS``).
        prior: the multiplier z_0 of a one-shot Gaussian mechanism on all the records released before the schedule
            (a DP domain, a private codec), or a ``gaussian.Prior`` with sampled schedules too (a DP-SGD codec),
            accounted with it (module docstring); ``None``: none. Extensions' accountants take none.
        sample_rate: q of Poisson samples (with ``batch_size`` None).
        contribution_norm: Poisson samples under replace-one: C / Delta, the norm every record's contribution has
            over the replace-one sensitivity (``ReleaseMechanism.replace_one_contribution_norm``).
    """

    def __init__(self, n_records: int | None, batch_size: int | None, accountant: str = "rdp",
                 prior: PriorLike = None, *, sample_rate: float | None = None,
                 contribution_norm: float | None = None) -> None:
        check_accountant(accountant)
        method = ACCOUNTANTS[accountant]
        if n_records is not None:
            check_positive_int("n_records", n_records)
        if n_records is None or sample_rate is not None:  # Poisson sampling at ``sample_rate``
            if isinstance(sample_rate, bool) or not isinstance(sample_rate, (int, float)) or not 0 < sample_rate <= 1:
                raise ValueError(f"sample_rate must lie in (0, 1] (Poisson sampling), got {sample_rate!r}.")
            if batch_size is not None:
                raise ValueError("Poisson sampling has no batch_size; give n_records and batch_size, or sample_rate.")
            if n_records is None and not method.poisson_proven:
                raise ValueError(
                    f"accountant {accountant!r} is not proven for Poisson sampling under add/remove (privacy.md, "
                    "\"Add/remove neighbours\"); use 'rdp'."
                )
            if n_records is not None and not method.replace_one_poisson_proven:
                raise ValueError(
                    f"accountant {accountant!r} is not proven for Poisson sampling under replace-one (privacy.md, "
                    f"\"Poisson batches under replace-one\"); use {REPLACE_ONE_PLD!r}."
                )
            if (n_records is None) != (contribution_norm is None):
                raise ValueError("Poisson sampling under replace-one (n_records given) needs contribution_norm, and "
                                 "only it takes one.")
            if contribution_norm is not None:
                check_positive("contribution_norm", contribution_norm)
            sampling = Sampling(float(sample_rate), n_records, None,
                                None if contribution_norm is None else float(contribution_norm))
        else:
            check_positive_int("batch_size", batch_size)
            assert batch_size is not None
            if batch_size > n_records:
                raise ValueError(f"batch_size={batch_size} exceeds the {n_records} records; lower it.")
            if not method.fixed_size_proven and not (batch_size == n_records and method.all_records_proven):
                raise ValueError(f"accountant {accountant!r} accounts Poisson batches and releases of all records only; "
                                 f"give sample_rate, or use 'rdp' or {REPLACE_ONE_RDP!r} for batches of a fixed size.")
            sampling = Sampling(batch_size / n_records, n_records, batch_size)
        self.sampling, self.accountant, self.method = sampling, accountant, method
        self.n_records, self.batch_size = sampling.n_records, sampling.batch_size
        self.neighbouring = sampling.neighbouring
        self.prior = _checked_prior(prior, self.method, accountant, sampling)
        self.prior_entries: Prior | None = Prior.of(self.prior)
        """The prior as history entries (``prior`` keeps the form it was given in, for comparisons)."""

    @classmethod
    def poisson(cls, sample_rate: float, accountant: str = "rdp", prior: PriorLike = None, *,
                n_records: int | None = None, contribution_norm: float | None = None) -> "ReleaseAccountant":
        """Releases on Poisson samples of rate q (every record independently): under add/remove neighbours (n private
        and never given; only an accountant with ``poisson_proven``, Opacus' sampled-Gaussian RDP: privacy.md,
        "Add/remove neighbours"), or under replace-one with the public ``n_records`` and the kind's
        ``contribution_norm`` (only ``REPLACE_ONE_PLD``: "Poisson batches under replace-one")."""
        return cls(n_records, None, accountant, prior, sample_rate=sample_rate, contribution_norm=contribution_norm)

    @classmethod
    def of_sampling(cls, sampling: Sampling, accountant: str, prior: PriorLike = None) -> "ReleaseAccountant":
        """The accountant of ``sampling``'s releases."""
        if sampling.poisson:
            return cls.poisson(sampling.sample_rate, accountant, prior, n_records=sampling.n_records,
                               contribution_norm=sampling.contribution_norm)
        return cls(sampling.n_records, sampling.batch_size, accountant, prior)

    @property
    def sample_rate(self) -> float:
        """q: b / n for fixed-size batches, the Poisson rate for Poisson batches."""
        return self.sampling.sample_rate

    def with_prior(self, prior: PriorLike) -> "ReleaseAccountant":
        """The same releases (method, sampling, adjacency) with ``prior`` spent before them, as in the constructor: a
        schedule planned before the run's budget was spent (``privacy.budget.Budget.release_terms``). A prior that
        would change the method (a replace-one DP-SGD codec's schedule: ``models.state.ReleaseSchedule.accountant``)
        is refused by the constructor's checks."""
        return ReleaseAccountant.of_sampling(self.sampling, self.accountant, prior)

    def _single_release(self, steps: int) -> bool:
        return steps == 1 and self.sample_rate == 1

    def composed_epsilon(self, noise_multiplier: float, delta: float, steps: int) -> float:
        """Epsilon of the ``steps`` releases (and the prior) from the chosen accountant."""
        check_positive("noise_multiplier", noise_multiplier)
        check_positive_int("steps", steps)
        return self.method.epsilon(self.sampling, float(noise_multiplier), float(delta), steps, self.prior)

    def epsilon(self, noise_multiplier: float, delta: float, steps: int) -> Accounting:
        """The epsilon to report: for a single release the tighter of the analytic Gaussian and the composed
        figure, otherwise the composed figure. ``noise_multiplier = inf`` (no release noise: impossible) is not
        accepted; a flow without noise is reported as not private by the report, not here."""
        composed = Accounting(self.composed_epsilon(noise_multiplier, delta, steps), self.method.description)
        if not self._single_release(steps) or not (self.prior_entries is None or self.prior_entries.one_shot):
            return composed
        if self.prior_entries is None:
            analytic = Accounting(
                analytic_gaussian_epsilon(noise_multiplier, delta), "analytic Gaussian mechanism (Balle & Wang 2018)"
            )
        else:
            analytic = Accounting(
                analytic_gaussian_epsilon(composed_multiplier(noise_multiplier, self.prior_entries.gaussian), delta),  # type: ignore[arg-type]
                "Gaussian DP composition with the prior release, exact (analytic Gaussian mechanism at the composed z)",
            )
        return analytic if analytic.epsilon <= composed.epsilon else composed

    def calibrate(self, epsilon: float, delta: float, steps: int) -> float:
        """The noise multiplier z for a target (epsilon, delta) over ``steps`` releases: a single release exactly with
        the analytic Gaussian mechanism (with a prior: the remaining multiplier in Gaussian DP); otherwise the
        accountant's own calibration (its epsilon at most the target)."""
        _check_epsilon_delta(epsilon, delta)
        check_positive_int("steps", steps)
        if not self.method.cacheable:
            return self._calibrate(float(epsilon), float(delta), steps)
        return _calibrated(self.sampling, self.accountant, float(epsilon), float(delta), steps, self.prior)

    def _calibrate(self, epsilon: float, delta: float, steps: int) -> float:
        if self._single_release(steps) and (self.prior_entries is None or self.prior_entries.one_shot):
            z = analytic_gaussian_noise_multiplier(epsilon, delta)
            return z if self.prior_entries is None else remaining_multiplier(z, self.prior_entries.gaussian)  # type: ignore[arg-type]
        self._check_prior_leaves_budget(epsilon, delta, steps)
        return self.method.calibrate(self.sampling, epsilon, delta, steps, self.prior)

    def _check_prior_leaves_budget(self, epsilon: float, delta: float, steps: int) -> None:
        """Raise when the prior alone spends the budget under this accountant: the releases at a huge multiplier
        (contributing nothing measurable) still exceed epsilon."""
        if self.prior is not None and self.composed_epsilon(1e6, delta, steps) > epsilon:
            raise ValueError(f"the prior release ({self.prior}) spends the whole budget under the {self.accountant!r} "
                             "accountant; give it a smaller share.")

    def conservative_epsilon(
        self, noise_multiplier: float, delta: float, steps: int, orders: list[float] | None = None
    ) -> float:
        """dp-accounting's RDP bound for exactly this scheme: replace-one, batches of b sampled without
        replacement (Wang, Balle & Kasiviswanathan 2019), composed ``steps`` times; never below the Opacus
        figure, which a test checks."""
        check_positive("noise_multiplier", noise_multiplier)
        check_positive_int("steps", steps)
        return ReplaceOneRDP.bound(self.sampling, noise_multiplier, delta, steps, self.prior, orders or RDP_ORDERS)


def _checked_prior(prior: PriorLike, method: AccountingMethod, name: str, sampling: Sampling) -> PriorLike:
    """``prior`` checked: a positive float (kept a float) or a ``Prior`` whose schedules the accountant can compose:
    Poisson under add/remove for add/remove releases; under replace-one, Poisson schedules by the antipodal pair
    (``REPLACE_ONE_PLD``) only, fixed-size ones by the replace-one bound only (privacy.md, "A private image codec trained
    by DP-SGD"). A method that does not ``take_prior`` (an extension's: its history is its own) is refused one."""
    if prior is None:
        return None
    if not method.takes_prior:
        raise ValueError(f"accountant {name!r} is an extension's: a prior release cannot join its history; use 'rdp'.")
    if not isinstance(prior, Prior):
        check_positive("prior", prior)
        return float(prior)
    for schedule in prior.schedules:
        if (schedule.n_records is None) != (sampling.n_records is None):
            raise ValueError("a prior schedule must be accounted under the releases' adjacency (n public under "
                             f"replace-one only), got {schedule}.")
        if schedule.replace_one_poisson != isinstance(method, ReplaceOnePoissonPLD):
            raise ValueError(
                f"a prior schedule on Poisson batches under replace-one is accounted by the {REPLACE_ONE_PLD!r} "
                "accountant only, which composes no schedule of fixed-size batches: the releases after such a "
                "codec take Poisson batches (sample_rate, or the default batches of histograms and marginals) or one "
                "release of all records, and after a codec trained on fixed-size batches, batches of a fixed size "
                f"(batch_size); got {schedule} with {method.description!r}.")
        if not schedule.poisson and isinstance(method, OpacusRDP):
            raise ValueError(f"a prior schedule of fixed-size batches under replace-one is accounted by "
                             f"{REPLACE_ONE_RDP!r}, not by Opacus' pair (privacy.md, \"A private image codec trained by "
                             "DP-SGD\").")
    return prior


@functools.lru_cache(maxsize=4096)
def _opacus_epsilon(
    accountant: str, sample_rate: float, noise_multiplier: float, delta: float, steps: int, prior: PriorLike = None
) -> float:
    """Epsilon of Opacus' built-in ``accountant`` with history ``[(z, q, steps)]`` and the prior's entries (``(z_0, 1,
    1)`` for a one-shot Gaussian mechanism of all records) (RDP over ``RDP_ORDERS``), a pure function of its arguments,
    cached: a fit reports it, and audits fit the same schedule hundreds of times."""
    opacus = create_accountant(mechanism=accountant)
    entries = Prior.of(prior)
    opacus.history = [(noise_multiplier, sample_rate, steps)] + ([] if entries is None else entries.opacus_history())
    return float(opacus.get_epsilon(delta=delta, alphas=RDP_ORDERS))


@functools.lru_cache(maxsize=1024)
def _calibrated(
    sampling: Sampling, accountant: str, epsilon: float, delta: float, steps: int, prior: PriorLike = None
) -> float:
    """``ReleaseAccountant.calibrate`` of a cacheable accountant, a pure function of its arguments, cached: audits and
    benchmarks fit the same schedule many times, and one calibration runs dozens of accountings."""
    return ReleaseAccountant.of_sampling(sampling, accountant, prior)._calibrate(epsilon, delta, steps)


@functools.lru_cache(maxsize=4096)
def replace_one_rdp_epsilon(
    n_records: int, batch_size: int, noise_multiplier: float, delta: float, steps: int, orders: tuple[float, ...],
    prior: PriorLike = None,
) -> float:
    """dp-accounting's replace-one RDP epsilon of ``steps`` Gaussian releases (multiplier z) of batches of b of n
    sampled without replacement (one release of all n when b = n), composed with a one-shot Gaussian mechanism of
    all records at ``prior`` when given. A pure function, cached: each call costs about a second, and calibrations
    repeat them."""
    gaussian = dp_accounting.GaussianDpEvent(noise_multiplier)
    if batch_size < n_records:
        gaussian = dp_accounting.SampledWithoutReplacementDpEvent(n_records, batch_size, gaussian)
    event = dp_accounting.SelfComposedDpEvent(gaussian, steps)
    entries = Prior.of(prior)
    if entries is not None:
        event = dp_accounting.ComposedDpEvent([event, *entries.dp_events()])
    accountant = dp_accounting.rdp.RdpAccountant(list(orders), neighboring_relation=dp_accounting.NeighboringRelation.REPLACE_ONE)
    accountant.compose(event)
    epsilon = float(accountant.get_epsilon(delta))
    return epsilon if math.isfinite(epsilon) else math.inf


@functools.lru_cache(maxsize=4096)
def replace_one_poisson_epsilon(
    sample_rate: float, noise_multiplier: float, contribution_norm: float, delta: float, steps: int,
    prior: float | None = None, schedules: tuple[SampledGaussian, ...] = (),
) -> float:
    r"""Epsilon of ``steps`` releases on Poisson batches under replace-one (privacy.md, "Poisson batches under
    replace-one"): the K-fold composition of the antipodal pair :math:`(1 - q) N(0, z^2) + q N(c, z^2)` against
    :math:`(1 - q) N(0, z^2) + q N(-c, z^2)`, c = ``contribution_norm`` (C / Delta, in the units of the multiplier z),
    composed with a one-shot Gaussian mechanism at multiplier ``prior`` (its pair N(0, z_0^2) against N(1, z_0^2)) and
    with each of ``schedules`` (Poisson schedules under replace-one, a DP-SGD codec's: their own pairs, composed their
    number of steps), read from dp-accounting's privacy loss distribution with pessimistic rounding at ``delta``. A pure
    function, cached: calibrations repeat it."""
    releases = antipodal_pair(sample_rate, noise_multiplier, contribution_norm).self_compose(steps)
    for schedule in schedules:
        if not schedule.replace_one_poisson:
            raise ValueError(f"the antipodal pair composes Poisson schedules under replace-one only, got {schedule}.")
        releases = releases.compose(antipodal_pair(schedule.sample_rate, schedule.noise_multiplier,
                                                   schedule.contribution_norm).self_compose(schedule.steps))  # type: ignore[arg-type]
    if prior is not None:
        releases = releases.compose(privacy_loss_distribution.from_gaussian_mechanism(
            prior, value_discretization_interval=PLD_DISCRETIZATION))
    epsilon = float(releases.get_epsilon_for_delta(delta))
    return epsilon if math.isfinite(epsilon) else math.inf


def antipodal_pair(sample_rate: float, noise_multiplier: float, contribution_norm: float
                   ) -> "privacy_loss_distribution.PrivacyLossDistribution":
    r"""dp-accounting's privacy loss distribution of one step's antipodal pair, :math:`(1 - q) N(0, z^2) + q N(c, z^2)`
    against :math:`(1 - q) N(0, z^2) + q N(-c, z^2)` (its ``REPLACE_ONE`` Gaussian), pessimistic on the grid
    ``PLD_DISCRETIZATION``."""
    return privacy_loss_distribution.from_gaussian_mechanism(
        noise_multiplier, sensitivity=contribution_norm, sampling_prob=sample_rate,
        neighboring_relation=dp_accounting.NeighboringRelation.REPLACE_ONE,
        value_discretization_interval=PLD_DISCRETIZATION,
    )

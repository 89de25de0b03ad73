r"""Gaussian mechanisms: the exact privacy profile of one release, their composition in Gaussian DP, and the
mechanisms released before a schedule on the same records, as entries of its accounting.

**One release** (the analytic Gaussian mechanism of Balle & Wang (2018), Theorem 8). A Gaussian mechanism with
sensitivity :math:`\Delta` and noise standard deviation :math:`s`, noise multiplier :math:`z = s / \Delta`, is
:math:`(\varepsilon, \delta)`-DP if and only if

.. math:: \delta \ge \Phi\Big(\frac{1}{2z} - \varepsilon z\Big) - e^{\varepsilon}\, \Phi\Big(-\frac{1}{2z} - \varepsilon z\Big).

This is the tight privacy profile of one Gaussian release (no composition, no subsampling): the one-shot
release of DPSWflow is accounted with it, which is tighter than any RDP conversion.

**Several, composed** (privacy.md, "A private image codec"). A Gaussian mechanism whose noise is :math:`z` times its
exact L2 sensitivity is :math:`\mu`-GDP with :math:`\mu = 1/z`; mechanisms composed adaptively, each with its
:math:`\mu_i` fixed in advance, are :math:`\sqrt{\sum_i \mu_i^2}`-GDP (Dong, Roth & Su 2022, Corollary 3.3), and
:math:`\mu`-GDP is :math:`(\varepsilon, \delta)`-DP exactly where the analytic Gaussian mechanism at :math:`z = 1/\mu`
is. So a budget :math:`(\varepsilon, \delta)` split as :math:`\mu_1^2 = s\mu^2`, :math:`\mu_2^2 = (1 - s)\mu^2` costs
nothing: the two releases together are :math:`(\varepsilon, \delta)`-DP, where basic composition of
:math:`(s\varepsilon, s\delta)` and :math:`((1 - s)\varepsilon, (1 - s)\delta)` would add noise to both.
``privacy.budget.Budget.share`` gives the first release's multiplier :math:`z / \sqrt{s}`; the releases after it are
calibrated with it as their prior (``composed_multiplier``, ``remaining_multiplier``).

**Before a schedule.** One-shot mechanisms and sampled Gaussian schedules (``SampledGaussian``, a DP-SGD training:
privacy.md, "A private image codec trained by DP-SGD") released before a schedule join its accountant's history as a
``Prior``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Union

import dp_accounting
from scipy.special import log_ndtr

from synthcity_dpswf.math.checks import check_positive


def _check_delta(delta: float) -> None:
    if not 0 < delta < 1:
        raise ValueError(f"delta must lie in (0, 1), got {delta!r}.")


def analytic_gaussian_delta(noise_multiplier: float, epsilon: float) -> float:
    r"""The smallest :math:`\delta` for which the Gaussian mechanism with multiplier ``z`` is (epsilon, delta)-DP."""
    check_positive("noise_multiplier", noise_multiplier)
    if epsilon < 0:
        raise ValueError(f"epsilon must be >= 0, got {epsilon!r}.")
    z = noise_multiplier
    first = math.exp(float(log_ndtr(1 / (2 * z) - epsilon * z)))
    second = math.exp(epsilon + float(log_ndtr(-1 / (2 * z) - epsilon * z)))
    return max(first - second, 0.0)


def smallest_satisfying(holds: Callable[[float], bool], tolerance: float) -> float:
    """The smallest x >= 0 (to a relative ``tolerance``) for which the monotone predicate ``holds`` is true
    (false below some threshold, true above it): doubling from 1, then bisection. The result always
    satisfies the predicate, so a privacy parameter found this way errs on the safe side."""
    if holds(0.0):
        return 0.0
    low, high = 0.0, 1.0
    while not holds(high):
        low, high = high, 2 * high
        if high > 1e12:
            raise ValueError("no value up to 1e12 satisfies the condition; check the privacy parameters.")
    while high - low > tolerance * max(1.0, high):
        middle = (low + high) / 2
        if holds(middle):
            high = middle
        else:
            low = middle
    return high


def analytic_gaussian_epsilon(noise_multiplier: float, delta: float, tolerance: float = 1e-10) -> float:
    r"""The smallest :math:`\varepsilon` for which multiplier ``z`` gives (epsilon, delta)-DP (the map
    :math:`\varepsilon \mapsto \delta(\varepsilon)` decreases), rounded up."""
    check_positive("noise_multiplier", noise_multiplier)
    _check_delta(delta)
    return smallest_satisfying(lambda epsilon: analytic_gaussian_delta(noise_multiplier, epsilon) <= delta, tolerance)


def analytic_gaussian_noise_multiplier(epsilon: float, delta: float, tolerance: float = 1e-10) -> float:
    r"""The smallest multiplier ``z`` for which one Gaussian release is (epsilon, delta)-DP (the map
    :math:`z \mapsto \delta_z(\varepsilon)` decreases), rounded up: the result is always valid."""
    check_positive("epsilon", epsilon)
    _check_delta(delta)
    return smallest_satisfying(
        lambda z: z > 0 and analytic_gaussian_delta(z, epsilon) <= delta, tolerance
    )


def composed_multiplier(*multipliers: float) -> float:
    r"""The multiplier of the composition: :math:`z = 1 / \sqrt{\sum_i 1 / z_i^2}`."""
    if not multipliers or any(not z > 0 for z in multipliers):
        raise ValueError(f"multipliers must be positive, got {multipliers!r}.")
    return 1.0 / math.sqrt(sum(1.0 / z**2 for z in multipliers))


def remaining_multiplier(total: float, prior: float) -> float:
    r"""The multiplier z of a Gaussian mechanism that, composed with one at ``prior`` :math:`z_0`, gives ``total``:
    :math:`z^{-2} = z_{total}^{-2} - z_0^{-2}` (``composed_multiplier``'s inverse); refused when the prior alone
    spends the budget."""
    left = 1.0 / total**2 - 1.0 / prior**2
    if left <= 0:
        raise ValueError(f"the prior release (z = {prior:.4g}) spends the whole budget (z = {total:.4g}); give it a "
                         "smaller share.")
    return 1.0 / math.sqrt(left)


@dataclass(frozen=True)
class SampledGaussian:
    r"""One entry of an accountant's history: ``steps`` Gaussian mechanisms at multiplier z (noise z times the exact
    sensitivity of each), each on a batch drawn afresh from the records, in one of three samplings:

    - exactly ``batch_size`` of the public ``n_records`` without replacement (replace-one);
    - every record with probability ``sample_rate`` under add/remove (Poisson; ``n_records``, ``batch_size`` and
      ``contribution_norm`` are ``None``);
    - every record with probability ``sample_rate`` under replace-one (``n_records`` public, ``batch_size`` ``None``),
      of a sum whose every record contributes at most the norm C, ``contribution_norm`` = C / Delta_RO (the antipodal
      pair's radius in the multiplier's units: 1/2 for clipped gradients; privacy.md, "Poisson batches under
      replace-one"); only ``accountant.REPLACE_ONE_PLD`` accounts it.

    A DP-SGD training is one (privacy.md, "A private image codec trained by DP-SGD")."""

    noise_multiplier: float
    sample_rate: float
    steps: int
    n_records: int | None = None
    batch_size: int | None = None
    contribution_norm: float | None = None

    def __post_init__(self) -> None:
        if not self.noise_multiplier > 0 or not 0 < self.sample_rate <= 1 or self.steps < 1:
            raise ValueError(f"a sampled Gaussian needs z > 0, 0 < q <= 1 and steps >= 1, got {self!r}.")
        if self.n_records is None and (self.batch_size is not None or self.contribution_norm is not None):
            raise ValueError("batch_size (fixed-size batches) and contribution_norm (Poisson under replace-one) need "
                             f"the public n_records, got {self!r}.")
        if self.n_records is not None and (self.batch_size is None) == (self.contribution_norm is None):
            raise ValueError("under replace-one give batch_size (fixed-size batches) or contribution_norm (Poisson "
                             f"batches), exactly one, got {self!r}.")
        if self.batch_size is not None and abs(self.sample_rate - self.batch_size / self.n_records) > 1e-12:  # type: ignore[operator]
            raise ValueError(f"fixed-size batches have q = b / n = {self.batch_size}/{self.n_records}, got {self.sample_rate}.")
        if self.contribution_norm is not None and not self.contribution_norm > 0:
            raise ValueError(f"contribution_norm must be positive, got {self.contribution_norm!r}.")

    @property
    def poisson(self) -> bool:
        """Whether every record is drawn independently (under either adjacency)."""
        return self.batch_size is None

    @property
    def replace_one_poisson(self) -> bool:
        """Whether the batches are Poisson under replace-one (accounted by the antipodal pair only)."""
        return self.contribution_norm is not None

    def opacus_entry(self) -> tuple[float, float, int]:
        """The entry of Opacus' ``history``: (z, q, steps)."""
        self._check_not_replace_one_poisson("Opacus' history")
        return (self.noise_multiplier, self.sample_rate, self.steps)

    def _check_not_replace_one_poisson(self, where: str) -> None:
        if self.replace_one_poisson:
            raise ValueError(f"Poisson batches under replace-one are accounted by the antipodal pair (the "
                             f"'replace_one_pld' accountant) only, not as an entry of {where}: got {self!r}.")

    def dp_event(self) -> "dp_accounting.DpEvent":
        """The entry as dp-accounting's event: the Gaussian, sampled without replacement (fixed-size batches) or by
        Poisson, composed ``steps`` times."""
        self._check_not_replace_one_poisson("an RDP history")
        event: dp_accounting.DpEvent = dp_accounting.GaussianDpEvent(self.noise_multiplier)
        if self.poisson and self.sample_rate < 1:
            event = dp_accounting.PoissonSampledDpEvent(self.sample_rate, event)
        elif not self.poisson and self.batch_size < self.n_records:  # type: ignore[operator]
            event = dp_accounting.SampledWithoutReplacementDpEvent(self.n_records, self.batch_size, event)
        return dp_accounting.SelfComposedDpEvent(event, self.steps)


@dataclass(frozen=True)
class Prior:
    r"""What was released of the same records before a schedule, as entries of its accountant's history: one-shot
    Gaussian mechanisms of all records composed into one multiplier ``gaussian`` (exact in Gaussian DP; ``None``: none)
    and sampled schedules (``schedules``: a DP-SGD codec's training). A bare float prior is ``Prior(gaussian=z)``."""

    gaussian: float | None = None
    schedules: tuple[SampledGaussian, ...] = ()

    @classmethod
    def of(cls, prior: "float | Prior | None") -> "Prior | None":
        """``prior`` as a ``Prior`` (a float: one one-shot Gaussian mechanism at that multiplier)."""
        if prior is None or isinstance(prior, Prior):
            return prior
        if not prior > 0:
            raise ValueError(f"a prior multiplier must be positive, got {prior!r}.")
        return cls(float(prior))

    @property
    def one_shot(self) -> bool:
        """Whether every entry is a one-shot Gaussian mechanism (then Gaussian DP composes it exactly)."""
        return not self.schedules

    def opacus_history(self) -> list[tuple[float, float, int]]:
        """The entries of Opacus' ``history``: each schedule's (z, q, steps), and (z_0, 1, 1) for the one-shot part."""
        return [schedule.opacus_entry() for schedule in self.schedules] + (
            [] if self.gaussian is None else [(self.gaussian, 1.0, 1)])

    def dp_events(self) -> list["dp_accounting.DpEvent"]:
        """The entries as dp-accounting's events."""
        return [schedule.dp_event() for schedule in self.schedules] + (
            [] if self.gaussian is None else [dp_accounting.GaussianDpEvent(self.gaussian)])

    def without_schedules(self) -> "Prior | None":
        """The one-shot part alone (a lower bracket for calibrations: removing entries can only lower epsilon)."""
        return None if self.gaussian is None else Prior(self.gaussian)


PriorLike = Union[float, Prior, None]
"""What accountants and budgets take as a prior: a one-shot multiplier, a ``Prior``, or ``None``."""

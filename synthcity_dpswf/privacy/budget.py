"""How a run's budget is set from public numbers: the default delta, the share a DP domain takes, and one table
budget for the domain and the generator's releases together (privacy.md, "The DP domain" and "One budget")."""

from __future__ import annotations

import math
from dataclasses import dataclass

from synthcity_dpswf.privacy.analytic_gaussian import analytic_gaussian_noise_multiplier
from synthcity_dpswf.privacy.domain import DomainBudget, rows_needed
from synthcity_dpswf.privacy.neighbouring import Neighbouring


def default_delta(n_records: int | None) -> float:
    """The delta used when none is given: min(1e-5, n^-1.1), well below the 1/n that a mechanism publishing one
    random record would meet (1e-5 up to about 35,000 rows, then n^-1.1: 6.9e-6 for Adult's 48,842); 1e-5 when n is
    private (``None``, add/remove)."""
    return 1e-5 if n_records is None else min(1e-5, n_records**-1.1)


THRESHOLD_DELTA_SHARE = 0.25
r"""The share of delta a DP domain's category threshold takes, :math:`\delta_T = \delta / 4`, when it releases
columns' kinds (the rest, :math:`\delta_G`, goes to the Gaussian mechanisms together). Publishing a category costs
:math:`\Phi^{-1}(1 - \eta)` noise stds and calibrating the Gaussians :math:`z(\varepsilon, \delta_G)`; both move
by a few percent between delta / 10 and delta / 2, so the split is a stated round number, not a tuned one."""


@dataclass(frozen=True)
class TableBudget:
    r"""One budget (epsilon, delta) for a table's DP domain and the generator's releases, accounted as one mechanism
    (privacy.md, "One budget"): :math:`\delta = \delta_G + \delta_T` (``threshold_delta``, 0 when the domain
    releases no kinds), :math:`z = z_{AG}(\varepsilon, \delta_G)` for the whole, and the domain's Gaussian stages
    get the share ``domain_share`` of :math:`\mu^2 = 1 / z^2`: :math:`z_D = z / \sqrt{s}`. The releases are then
    calibrated to (epsilon, :math:`\delta_G`) with :math:`z_D` as their accountant's prior: one release of all
    records gets :math:`z / \sqrt{1 - s}` exactly, per-step releases what RDP leaves."""

    epsilon: float
    delta: float
    domain_share: float
    typed: bool = True
    """Whether the domain releases columns' kinds (then categories may be published, and the threshold takes its
    delta)."""

    def __post_init__(self) -> None:
        if not 0 < self.domain_share < 1:
            raise ValueError(f"the domain's share must lie in (0, 1), got {self.domain_share!r}.")

    @property
    def threshold_delta(self) -> float:
        return THRESHOLD_DELTA_SHARE * self.delta if self.typed else 0.0

    @property
    def gaussian_delta(self) -> float:
        """The delta of the Gaussian mechanisms together, at which the releases are calibrated."""
        return self.delta - self.threshold_delta

    @property
    def noise_multiplier(self) -> float:
        """z of the whole, one Gaussian mechanism at (epsilon, delta_G)."""
        return analytic_gaussian_noise_multiplier(self.epsilon, self.gaussian_delta)

    def domain(self) -> DomainBudget:
        """The DP domain's calibration: its Gaussian stages at z / sqrt(s), its threshold proved for the whole."""
        multiplier = self.noise_multiplier / math.sqrt(self.domain_share)
        return DomainBudget(multiplier, self.gaussian_delta, self.epsilon, self.threshold_delta)


HISTOGRAM_SHARE = 0.05
"""The domain's share of mu^2 when a public domain declares every column and some numeric ones need their quantiles
(``needs_histogram``): only value histograms are released."""

SMALL_TABLE_SHARE = 0.4
"""The domain's share below 1,000 rows (``default_domain_share``): on iris at epsilon = 3 and the default delta, its
integer target got exactly its three levels in 28.8%, 84.3%, 97.1% and 98.6% of 1,000 releases at 0.1, 0.2, 0.3 and
0.4 (``benchmarks/dp_domain.py``; the split of earlier versions needed 0.5 of epsilon for 99%)."""

ADD_REMOVE_SHARE = 0.2
"""The domain's share when n is private (add/remove): the largest share the rule below chose on the validation tables
(docs/flows.md, fact 76)."""

SHARES = (0.05, 0.1, 0.15, 0.2, 0.3)
"""The shares ``default_domain_share`` tries, smallest first (the rule chose 0.05 on fair and 0.2 on the stand-in,
within one std of the best fixed share on each: ``benchmarks/domain_share.py``)."""


def default_domain_share(
    n_records: int | None, n_undeclared: int, n_histograms: int, epsilon: float, delta: float, neighbouring: Neighbouring
) -> float:
    """The share of mu^2 a DP domain gets in a ``TableBudget`` when none is given, from public numbers only.

    - Only value histograms of declared columns: ``HISTOGRAM_SHARE``.
    - n private (add/remove): ``ADD_REMOVE_SHARE``.
    - Below 1,000 rows: ``SMALL_TABLE_SHARE``.
    - Else the smallest of ``SHARES`` at which a category holding 10% of the rows is published with probability 95%
      (``privacy.domain.rows_needed``) when half the undeclared columns are categorical (their kinds are private
      until released); the largest if none is.
    """
    if n_undeclared == 0:
        return HISTOGRAM_SHARE
    if n_records is None:
        return ADD_REMOVE_SHARE
    if n_records < 1000:
        return SMALL_TABLE_SHARE
    categorical = math.ceil(n_undeclared / 2)
    for share in SHARES:
        domain = TableBudget(epsilon, delta, share).domain()
        if rows_needed(domain, categorical, n_undeclared - categorical, n_histograms, neighbouring) <= 0.1 * n_records:
            return share
    return SHARES[-1]

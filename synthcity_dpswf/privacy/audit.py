r"""An empirical privacy audit: a lower bound on epsilon from membership guesses (Jagielski et al. 2020).

Run a mechanism many times on neighbouring datasets D (with a canary record) and D' (the canary replaced),
reduce each output to a score (e.g. the likelihood ratio of the release), and guess "D" when the score is
above a threshold. Any (epsilon, delta)-DP mechanism forces, for the false positive and false negative rates,

.. math:: \varepsilon \ge \max\Big(\log\frac{1 - \delta - \mathrm{FPR}}{\mathrm{FNR}},\ \log\frac{1 - \delta - \mathrm{FNR}}{\mathrm{FPR}}\Big).

The rates are replaced by Clopper-Pearson upper bounds, and the threshold (among 199 quantiles of the
scores, scored by the same bounds) is chosen on the first half of the runs and evaluated on the second, so
the bound holds with the stated confidence. A lower bound above the
reported epsilon proves the implementation wrong: ``audit_scores`` then raises ``PrivacyAuditError``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.stats import beta, chi2, t

from synthcity_dpswf.privacy.analytic_gaussian import analytic_gaussian_epsilon


class PrivacyAuditError(AssertionError):
    """The audit's lower bound exceeds the claimed epsilon: the claimed guarantee is false."""


def clopper_pearson_upper(successes: int, trials: int, confidence: float = 0.95) -> float:
    """Upper end of the two-sided Clopper-Pearson interval for a binomial proportion."""
    if successes >= trials:
        return 1.0
    return float(beta.ppf(1 - (1 - confidence) / 2, successes + 1, trials - successes))


@dataclass(frozen=True)
class AuditResult:
    """The audit's epsilon lower bound, the threshold and the rates it was computed from."""

    epsilon_lower_bound: float
    threshold: float
    false_positive_upper: float
    false_negative_upper: float
    trials: int


def _lower_bound(fpr: float, fnr: float, delta: float) -> float:
    bounds = [0.0]
    for numerator, denominator in ((1 - delta - fpr, fnr), (1 - delta - fnr, fpr)):
        if numerator > 0 and denominator > 0:
            bounds.append(math.log(numerator / denominator))
    return max(bounds)


def _checked_runs(scores_in: np.ndarray, scores_out: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    scores_in, scores_out = np.asarray(scores_in, dtype=float), np.asarray(scores_out, dtype=float)
    if min(len(scores_in), len(scores_out)) < 20:
        raise ValueError("an audit needs at least 20 runs on each side; run the mechanism more often.")
    return scores_in, scores_out


def audit_scores(
    scores_in: np.ndarray,
    scores_out: np.ndarray,
    delta: float,
    claimed_epsilon: float | None = None,
    confidence: float = 0.95,
) -> AuditResult:
    """Epsilon lower bound from scores of runs with (``scores_in``) and without (``scores_out``) the canary.

    Larger scores must mean "canary present". If ``claimed_epsilon`` is given and the lower bound exceeds
    it, raise ``PrivacyAuditError``.
    """
    scores_in, scores_out = _checked_runs(scores_in, scores_out)
    half_in, half_out = len(scores_in) // 2, len(scores_out) // 2
    choose_in, test_in = scores_in[:half_in], scores_in[half_in:]
    choose_out, test_out = scores_out[:half_out], scores_out[half_out:]
    candidates = np.unique(np.quantile(np.concatenate([choose_in, choose_out]), np.linspace(0.005, 0.995, 199)))

    def chosen_bound(threshold: float) -> float:
        fpr = clopper_pearson_upper(int(np.sum(choose_out > threshold)), len(choose_out), confidence)
        fnr = clopper_pearson_upper(int(np.sum(choose_in <= threshold)), len(choose_in), confidence)
        return _lower_bound(fpr, fnr, delta)

    best = max(candidates, key=chosen_bound)
    fpr = clopper_pearson_upper(int(np.sum(test_out > best)), len(test_out), confidence)
    fnr = clopper_pearson_upper(int(np.sum(test_in <= best)), len(test_in), confidence)
    result = AuditResult(_lower_bound(fpr, fnr, delta), float(best), fpr, fnr, len(scores_in) + len(scores_out))
    if claimed_epsilon is not None and result.epsilon_lower_bound > claimed_epsilon:
        raise PrivacyAuditError(
            f"PRIVACY AUDIT FAILED: the releases prove epsilon >= {result.epsilon_lower_bound:.3f} "
            f"(at {confidence:.0%} confidence) but {claimed_epsilon:.3f} is claimed."
        )
    return result


@dataclass(frozen=True)
class GaussianAuditResult:
    r"""The Gaussian audit's bounds: the separation :math:`\mu` of the two score distributions (estimate and
    lower confidence bound) and the epsilon lower bound it implies."""

    epsilon_lower_bound: float
    mu_lower_bound: float
    mu_estimate: float
    trials: int


def audit_gaussian_scores(
    scores_in: np.ndarray,
    scores_out: np.ndarray,
    delta: float,
    claimed_epsilon: float | None = None,
    confidence: float = 0.95,
) -> GaussianAuditResult:
    r"""Epsilon lower bound for a release whose score is Gaussian with one variance on both sides.

    For a single Gaussian release on fixed neighbouring datasets D, D' and a linear score
    :math:`\langle R, v\rangle` (the optimal one for :math:`v = S(D) - S(D')`), the scores are
    :math:`\mathcal{N}(m_D, \sigma^2)` and :math:`\mathcal{N}(m_{D'}, \sigma^2)`: the release is exactly
    :math:`\mu`-GDP between D and D' with :math:`\mu = (m_D - m_{D'}) / \sigma`, and its privacy profile is
    that of the Gaussian mechanism with multiplier :math:`1/\mu` (Dong, Roth & Su 2022). The mean gap gets a
    one-sided Student lower bound and :math:`\sigma` a chi-square upper bound, each at half the error level,
    so :math:`\mu_{low}` and the epsilon of ``analytic_gaussian_epsilon(1 / mu_low, delta)`` hold with
    ``confidence``. Far more powerful than ``audit_scores`` for this family: it catches a release with half
    its claimed noise (or twice its claimed sensitivity) with a few hundred runs. Valid only when the scores
    are Gaussian (one-shot releases, no subsampling); use ``audit_scores`` otherwise.
    """
    scores_in, scores_out = _checked_runs(scores_in, scores_out)
    n_in, n_out = len(scores_in), len(scores_out)
    freedom = n_in + n_out - 2
    pooled = math.sqrt((np.sum((scores_in - scores_in.mean()) ** 2) + np.sum((scores_out - scores_out.mean()) ** 2)) / freedom)
    if pooled == 0:
        raise ValueError("the scores do not vary: the release carries no noise, or the score ignores it.")
    error = (1 - confidence) / 2
    gap = scores_in.mean() - scores_out.mean()
    gap_low = gap - float(t.ppf(1 - error, freedom)) * pooled * math.sqrt(1 / n_in + 1 / n_out)
    sigma_high = pooled * math.sqrt(freedom / float(chi2.ppf(error, freedom)))
    mu_low = max(gap_low, 0.0) / sigma_high
    # Capping mu keeps the bound valid (epsilon grows with mu); the solver rounds up, so step down by its tolerance.
    epsilon = max(analytic_gaussian_epsilon(1 / min(mu_low, 1e4), delta) - 1e-9, 0.0) if mu_low > 0 else 0.0
    result = GaussianAuditResult(epsilon, mu_low, gap / pooled, n_in + n_out)
    if claimed_epsilon is not None and epsilon > claimed_epsilon:
        raise PrivacyAuditError(
            f"PRIVACY AUDIT FAILED: the releases prove epsilon >= {epsilon:.3f} (mu >= {mu_low:.3f}, at "
            f"{confidence:.0%} confidence) but {claimed_epsilon:.3f} is claimed."
        )
    return result

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
from scipy.stats import beta


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
    scores_in, scores_out = np.asarray(scores_in, dtype=float), np.asarray(scores_out, dtype=float)
    if min(len(scores_in), len(scores_out)) < 20:
        raise ValueError("an audit needs at least 20 runs on each side; run the mechanism more often.")
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

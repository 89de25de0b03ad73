r"""An empirical privacy audit: a lower bound on epsilon from membership guesses (Jagielski et al. 2020).

Run a mechanism many times on neighbouring datasets D (with a canary record) and D' (the canary replaced),
reduce each output to a score (e.g. the likelihood ratio of the release), and guess "D" when the score is
above a threshold. Any (epsilon, delta)-DP mechanism forces, for the false positive and false negative rates,

.. math:: \varepsilon \ge \max\Big(\log\frac{1 - \delta - \mathrm{FPR}}{\mathrm{FNR}},\ \log\frac{1 - \delta - \mathrm{FNR}}{\mathrm{FPR}}\Big).

The rates are replaced by Clopper-Pearson upper bounds, and the threshold (among 199 quantiles of the
scores, scored by the same bounds) is chosen on the first half of the runs and evaluated on the second, so
the bound holds with the stated confidence. A lower bound above the
reported epsilon proves the implementation wrong: ``audit_scores`` then raises ``PrivacyAuditError``.

That audit holds for any output distribution but is weak for Gaussian releases (it needs thousands of runs to
tell an epsilon of 2 from one of 4). The parametric audits below use the Gaussian form of the releases and
catch a factor-2 error in the noise or the sensitivity with overwhelming probability:

- ``audit_gaussian_scores``: black-box, from likelihood-ratio scores of runs with and without the canary;
- ``audit_gaussian_parts``: the same for a release made of independent Gaussian parts, combined in Gaussian DP;
- ``audit_noise``: white-box, from the realised noise of one release (release minus exact statistic) and the
  sensitivity that a canary pair attains;
- ``audit_sampled_schedule``: per-step releases on sampled batches, from per-step scores and the canary's
  batch membership: the base release of one step, and the steps whose membership is predictable.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.stats import beta, chi2, t

from synthcity_dpswf.privacy.gaussian import analytic_gaussian_epsilon


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


def gaussian_epsilon_lower_bound(mu_low: float, delta: float) -> float:
    r"""The epsilon at ``delta`` of a release that is :math:`\mu`-GDP between the audited pair, for the lower
    confidence bound ``mu_low``: ``analytic_gaussian_epsilon(1 / mu_low, delta)`` (Dong, Roth & Su 2022), 0 when
    ``mu_low <= 0``. Capping :math:`\mu` at 1e4 keeps the bound valid (epsilon grows with :math:`\mu`); the
    solver rounds up, so the result steps down by its tolerance."""
    if mu_low <= 0:
        return 0.0
    return max(analytic_gaussian_epsilon(1 / min(mu_low, 1e4), delta) - 1e-9, 0.0)


def _check_claim(result: GaussianAuditResult, claimed_epsilon: float | None, confidence: float, what: str) -> None:
    if claimed_epsilon is not None and result.epsilon_lower_bound > claimed_epsilon:
        raise PrivacyAuditError(
            f"PRIVACY AUDIT FAILED ({what}): the releases prove epsilon >= {result.epsilon_lower_bound:.3f} "
            f"(mu >= {result.mu_lower_bound:.3f}, at {confidence:.1%} confidence) but {claimed_epsilon:.3f} is claimed."
        )


def audit_gaussian_scores(
    scores_in: np.ndarray,
    scores_out: np.ndarray,
    delta: float,
    claimed_epsilon: float | None = None,
    confidence: float = 0.95,
) -> GaussianAuditResult:
    r"""Epsilon lower bound for a release whose score is Gaussian with one variance on both sides.

    For a single Gaussian release on fixed neighbouring datasets D, D' and a linear score
    :math:`\langle R, v\rangle` (the likelihood ratio's, optimal, for :math:`v = S(D) - S(D')`), the scores are
    :math:`\mathcal{N}(m_D, \sigma^2)` and :math:`\mathcal{N}(m_{D'}, \sigma^2)`: the release is exactly
    :math:`\mu`-GDP between D and D' with :math:`\mu = (m_D - m_{D'}) / \sigma`, and its privacy profile is
    that of the Gaussian mechanism with multiplier :math:`1/\mu` (Dong, Roth & Su 2022). The mean gap gets a
    one-sided Student lower bound and :math:`\sigma` a chi-square upper bound, each at half the error level,
    so :math:`\mu_{low}` and ``gaussian_epsilon_lower_bound(mu_low, delta)`` hold with ``confidence``. A
    release with half its claimed noise (or twice its claimed sensitivity) has twice the claimed
    :math:`\mu = 1/z`: a few hundred runs per side catch it. Valid only when the scores are Gaussian (one-shot
    releases, or per-step releases whose batch membership is known: ``audit_sampled_schedule``); use
    ``audit_scores`` otherwise. Scores that do not vary but differ between the sides come from a release
    without noise (epsilon infinite): ``PrivacyAuditError``.
    """
    scores_in, scores_out = _checked_runs(scores_in, scores_out)
    n_in, n_out = len(scores_in), len(scores_out)
    freedom = n_in + n_out - 2
    pooled = math.sqrt((np.sum((scores_in - scores_in.mean()) ** 2) + np.sum((scores_out - scores_out.mean()) ** 2)) / freedom)
    gap = float(scores_in.mean() - scores_out.mean())
    if pooled == 0:
        if gap == 0:
            raise ValueError("the scores neither vary nor separate: the score ignores the canary.")
        raise PrivacyAuditError(
            "PRIVACY AUDIT FAILED: the scores do not vary but separate the datasets: the release carries no noise "
            "(epsilon = inf)."
        )
    error = (1 - confidence) / 2
    gap_low = gap - float(t.ppf(1 - error, freedom)) * pooled * math.sqrt(1 / n_in + 1 / n_out)
    sigma_high = pooled * math.sqrt(freedom / float(chi2.ppf(error, freedom)))
    mu_low = max(gap_low, 0.0) / sigma_high
    result = GaussianAuditResult(gaussian_epsilon_lower_bound(mu_low, delta), mu_low, gap / pooled, n_in + n_out)
    _check_claim(result, claimed_epsilon, confidence, "Gaussian scores")
    return result


def audit_gaussian_parts(
    parts: list[tuple[np.ndarray, np.ndarray]],
    delta: float,
    claimed_epsilon: float | None = None,
    confidence: float = 0.95,
) -> GaussianAuditResult:
    r"""Epsilon lower bound for one neighbouring pair and a release made of independent Gaussian parts (e.g. the
    DP domain's type counts and value counts, each with its own noise), from each part's likelihood-ratio scores
    ``(scores_in, scores_out)``.

    Independent Gaussian releases that are :math:`\mu_i`-GDP between D and D' are together exactly
    :math:`\sqrt{\sum_i \mu_i^2}`-GDP between them (Dong, Roth & Su 2022, Corollary 3.3), so the parts' lower
    confidence bounds (``audit_gaussian_scores``, each at ``1 - (1 - confidence) / k`` for k parts: Bonferroni)
    combine into :math:`\mu_{low} = \sqrt{\sum_i \mu_{i,low}^2}` with ``confidence``. A part released with more
    weight than claimed (e.g. counts at weight 1 where the sensitivity assumed 1/2) raises its :math:`\mu_i`, which
    a single score with the claimed weights would dilute.
    """
    if not parts:
        raise ValueError("an audit of parts needs at least one part.")
    part_confidence = 1 - (1 - confidence) / len(parts)
    results = [audit_gaussian_scores(scores_in, scores_out, delta, None, part_confidence) for scores_in, scores_out in parts]
    return _composed(results, delta, claimed_epsilon, confidence, "Gaussian parts")


def _composed(
    results: list[GaussianAuditResult], delta: float, claimed_epsilon: float | None, confidence: float, what: str
) -> GaussianAuditResult:
    """Independent parts' bounds (each at its share of the error level) composed in Gaussian DP, then checked."""
    mu_low = math.sqrt(sum(result.mu_lower_bound**2 for result in results))
    mu_estimate = math.sqrt(sum(result.mu_estimate**2 for result in results))
    result = GaussianAuditResult(
        gaussian_epsilon_lower_bound(mu_low, delta), mu_low, mu_estimate, sum(result.trials for result in results)
    )
    _check_claim(result, claimed_epsilon, confidence, what)
    return result


def audit_noise(
    noise: np.ndarray,
    sensitivity: float,
    delta: float,
    claimed_epsilon: float | None = None,
    confidence: float = 0.95,
) -> GaussianAuditResult:
    r"""White-box epsilon lower bound from the realised noise of Gaussian releases (release minus the exact
    statistic, which the auditor computes from its own data) and a sensitivity :math:`\Delta` that a canary
    pair attains (measured, not the implementation's claim).

    The entries :math:`e_1..e_P` of ``noise`` are i.i.d. :math:`\mathcal{N}(0, s^2)` with known mean 0, so
    :math:`\sum e_i^2 / s^2 \sim \chi^2_P` and :math:`s_{high} = \sqrt{\sum e_i^2 / \chi^2_{P}(1 - c)}`
    bounds s with confidence c. A release of that pair is then :math:`\mu`-GDP with
    :math:`\mu \ge \mu_{low} = \Delta / s_{high}`, and ``gaussian_epsilon_lower_bound(mu_low, delta)``
    follows. The bound relative error is about :math:`3.3 / \sqrt{2P}` at 99.9%: a few hundred entries catch
    half the noise. Assumes noise independent of the data (what ``audit_gaussian_scores`` checks black-box).
    """
    noise = np.asarray(noise, dtype=float).reshape(-1)
    if len(noise) < 20:
        raise ValueError("a noise audit needs at least 20 noise entries.")
    if sensitivity <= 0:
        raise ValueError("the canary pair must differ (sensitivity > 0).")
    squares = float(np.sum(noise**2))
    if squares == 0:
        raise PrivacyAuditError("PRIVACY AUDIT FAILED: the release carries no noise (epsilon = inf).")
    sigma_high = math.sqrt(squares / float(chi2.ppf(1 - confidence, len(noise))))
    mu_low = sensitivity / sigma_high
    result = GaussianAuditResult(
        gaussian_epsilon_lower_bound(mu_low, delta), mu_low, sensitivity / math.sqrt(squares / len(noise)), len(noise)
    )
    _check_claim(result, claimed_epsilon, confidence, "release noise")
    return result


@dataclass(frozen=True)
class ScheduleAuditResult:
    """The audit of per-step releases on sampled batches: the base release of one step (a step with the canary
    against one without), and the composed release of the steps whose membership is predictable."""

    step: GaussianAuditResult | None
    """None when fewer than 20 steps held the canary (a position the sampler never picks is not released)."""
    predictable_steps: int
    schedule_epsilon_lower_bound: float


def audit_sampled_schedule(
    scores_in: np.ndarray,
    scores_out: np.ndarray,
    included: np.ndarray,
    delta: float,
    claimed_epsilon: float | None = None,
    claimed_step_epsilon: float | None = None,
    confidence: float = 0.95,
) -> ScheduleAuditResult:
    r"""Epsilon lower bounds for K per-step releases on sampled batches, from per-step likelihood-ratio scores.

    ``scores_in`` ``(R, K)``: step k of run r on D (the canary at one position), ``scores_out`` ``(R', K)``: on D'
    (the replacement there), where a step's score is Gaussian with one variance and shifted by
    :math:`\mu_k \sigma` exactly when the canary is in the step's batch; ``included`` ``(R, K)``: whether it was
    (read from the sampler by the auditor). Two bounds:

    1. *The base release.* Scores of the steps that held the canary against all steps of D':
       ``audit_gaussian_scores``, compared with ``claimed_step_epsilon`` (the Gaussian mechanism that the
       accountant composes, :math:`\varepsilon_{AG}(z)` without amplification). Catches wrong noise or sensitivity.
    2. *Predictable membership.* Amplification by subsampling needs batches the adversary cannot predict. A
       step that held the canary in every run is predictable (a secret uniform sampler makes that happen with
       probability :math:`q^R` per step); on the set P of such steps the releases compose without amplification.
       Their scores (fresh independent noise per step, one variance) pooled through ``audit_gaussian_scores``
       bound the mean per-step separation from below by :math:`\mu_{low}`, and the |P| Gaussian releases are
       :math:`\sqrt{\sum_k \mu_k^2} \ge \sqrt{|P|}\,\mu_{low}`-GDP: a lower bound on the epsilon of the whole
       schedule, compared with ``claimed_epsilon``. 0 when no step is predictable. Catches batches drawn with a
       fixed or public seed. Assumes one noise std for all steps (kinds whose sensitivity does not depend on the
       directions: records, histograms, marginals).

    Each bound holds with ``confidence`` (and the second up to the :math:`K q^R` chance above); either above
    its claim raises ``PrivacyAuditError``.
    """
    scores_in, scores_out = np.asarray(scores_in, dtype=float), np.asarray(scores_out, dtype=float)
    included = np.asarray(included, dtype=bool)
    if scores_in.ndim != 2 or scores_in.shape != included.shape or scores_out.ndim != 2 or scores_out.shape[1] != scores_in.shape[1]:
        raise ValueError("scores_in and included must be (runs, steps), scores_out (runs, steps) with the same steps.")
    step = None
    if included.sum() >= 20:
        step = audit_gaussian_scores(scores_in[included], scores_out.reshape(-1), delta, claimed_step_epsilon, confidence)
    predictable = np.flatnonzero(included.all(axis=0))
    schedule_bound = 0.0
    if len(predictable) > 0:
        per_step = audit_gaussian_scores(
            scores_in[:, predictable].reshape(-1), scores_out[:, predictable].reshape(-1), delta, None, confidence
        )
        mu_low = math.sqrt(len(predictable)) * per_step.mu_lower_bound
        schedule_bound = gaussian_epsilon_lower_bound(mu_low, delta)
        if claimed_epsilon is not None and schedule_bound > claimed_epsilon:
            raise PrivacyAuditError(
                f"PRIVACY AUDIT FAILED (predictable batches): the canary was in the batch of steps "
                f"{predictable.tolist()} in all {len(scores_in)} runs, and these releases alone prove epsilon >= "
                f"{schedule_bound:.3f} (mu >= {mu_low:.3f}, at {confidence:.1%} confidence) but "
                f"{claimed_epsilon:.3f} is claimed: the batches are not secret."
            )
    return ScheduleAuditResult(step, len(predictable), schedule_bound)


def audit_exclusive_event(hits: int, runs: int, delta: float, confidence: float = 0.95) -> float:
    r"""Check an event that cannot happen on D' (e.g. publishing a category that only the canary of D holds):
    :math:`P_D(E) \le e^\varepsilon P_{D'}(E) + \delta = \delta` for every epsilon. Returns the
    Clopper-Pearson lower bound on :math:`P_D(E)` from ``hits`` in ``runs`` runs on D (one-sided at
    ``confidence``); above ``delta`` no epsilon holds and ``PrivacyAuditError`` is raised."""
    if not 0 <= hits <= runs or runs < 20:
        raise ValueError("need 0 <= hits <= runs and at least 20 runs.")
    lower = 0.0 if hits == 0 else float(beta.ppf(1 - confidence, hits, runs - hits + 1))
    if lower > delta:
        raise PrivacyAuditError(
            f"PRIVACY AUDIT FAILED (exclusive event): it happens with probability >= {lower:.4f} on D (at "
            f"{confidence:.1%} confidence) and never on D', above delta = {delta:.3g}: no epsilon holds."
        )
    return lower

r"""The exact (analytic) Gaussian mechanism of Balle & Wang (2018), Theorem 8.

A Gaussian mechanism with sensitivity :math:`\Delta` and noise standard deviation :math:`s`, noise multiplier
:math:`z = s / \Delta`, is :math:`(\varepsilon, \delta)`-DP if and only if

.. math:: \delta \ge \Phi\Big(\frac{1}{2z} - \varepsilon z\Big) - e^{\varepsilon}\, \Phi\Big(-\frac{1}{2z} - \varepsilon z\Big).

This is the tight privacy profile of one Gaussian release (no composition, no subsampling): the one-shot
release of DPSWflow is accounted with it, which is tighter than any RDP conversion.
"""

from __future__ import annotations

import math

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


def analytic_gaussian_epsilon(noise_multiplier: float, delta: float, tolerance: float = 1e-10) -> float:
    r"""The smallest :math:`\varepsilon` for which multiplier ``z`` gives (epsilon, delta)-DP, by bisection on the
    decreasing map :math:`\varepsilon \mapsto \delta(\varepsilon)`; rounded up so that the result is never below
    the exact value by more than ``tolerance``."""
    check_positive("noise_multiplier", noise_multiplier)
    _check_delta(delta)
    if analytic_gaussian_delta(noise_multiplier, 0.0) <= delta:
        return 0.0
    low, high = 0.0, 1.0
    while analytic_gaussian_delta(noise_multiplier, high) > delta:
        low, high = high, 2 * high
    while high - low > tolerance * max(1.0, high):
        middle = (low + high) / 2
        if analytic_gaussian_delta(noise_multiplier, middle) > delta:
            low = middle
        else:
            high = middle
    return high


def analytic_gaussian_noise_multiplier(epsilon: float, delta: float, tolerance: float = 1e-10) -> float:
    r"""The smallest multiplier ``z`` for which one Gaussian release is (epsilon, delta)-DP (bisection on the
    decreasing map :math:`z \mapsto \delta_z(\varepsilon)`, rounded up: the result is always valid)."""
    check_positive("epsilon", epsilon)
    _check_delta(delta)
    low, high = 0.0, 1.0
    while analytic_gaussian_delta(high, epsilon) > delta:
        low, high = high, 2 * high
    while high - low > tolerance * high:
        middle = (low + high) / 2
        if analytic_gaussian_delta(middle, epsilon) > delta:
            low = middle
        else:
            high = middle
    return high

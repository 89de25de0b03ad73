r"""The exact (analytic) Gaussian mechanism of Balle & Wang (2018), Theorem 8.

A Gaussian mechanism with sensitivity :math:`\Delta` and noise standard deviation :math:`s`, noise multiplier
:math:`z = s / \Delta`, is :math:`(\varepsilon, \delta)`-DP if and only if

.. math:: \delta \ge \Phi\Big(\frac{1}{2z} - \varepsilon z\Big) - e^{\varepsilon}\, \Phi\Big(-\frac{1}{2z} - \varepsilon z\Big).

This is the tight privacy profile of one Gaussian release (no composition, no subsampling): the one-shot
release of DPSWflow is accounted with it, which is tighter than any RDP conversion.
"""

from __future__ import annotations

import math
from typing import Callable

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

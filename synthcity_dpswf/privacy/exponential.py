r"""The exponential mechanism and its bound in Gaussian DP (privacy.md, "Paid pair selection").

**The mechanism** (McSherry & Talwar 2007). Given scores :math:`u_y(D)` of the outcomes y, each of sensitivity
:math:`\Delta_u` (:math:`|u_y(D) - u_y(D')| \le \Delta_u` for neighbours), it releases one outcome with probability

.. math:: P_D(y) = \frac{\exp(\varepsilon\, u_y(D) / (2\Delta_u))}{\sum_{y'} \exp(\varepsilon\, u_{y'}(D) / (2\Delta_u))},

drawn here by the Gumbel-max trick: the argmax of :math:`\varepsilon u_y / (2\Delta_u) + G_y`, G i.i.d. standard
Gumbel.

**Its Gaussian DP bound.** The mechanism is :math:`\varepsilon`-bounded-range (Durfee & Rogers 2019): the privacy
loss :math:`L(y) = \ln P_D(y) / P_{D'}(y)` lies in an interval :math:`[t - \varepsilon, t]`, :math:`t \in [0,
\varepsilon]`, so the pair :math:`(P_D, P_{D'})` is a post-processing of the binary pair :math:`B_t` whose two outcomes
have privacy losses t and :math:`t - \varepsilon`. Each :math:`B_t` is :math:`\mu`-GDP at
:math:`\mu = c\,\varepsilon`, ``BOUNDED_RANGE_GDP`` = c = 0.63: its privacy profile

.. math:: H_{e^{\varepsilon'}}(B_t) = \frac{e^{\varepsilon} - e^{t}}{e^{\varepsilon} - 1}\,(1 - e^{\varepsilon' - t})_+

is below the Gaussian's, :math:`\delta_\mu(\varepsilon') = \Phi(-\varepsilon'/\mu + \mu/2) - e^{\varepsilon'}
\Phi(-\varepsilon'/\mu - \mu/2)`, for every :math:`\varepsilon' \ge 0` (the family is closed under exchanging the two
distributions, so the negative half follows). ``bounded_range_mu`` checks this on a grid with bounds that hold over
each whole cell, for the :math:`\varepsilon` of every use, and refuses one where it fails. As :math:`\varepsilon \to 0`
the smallest such constant is :math:`\sqrt{\pi / 8} = 0.6267`, at :math:`t = \varepsilon / 2`.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import torch
from scipy.special import log_ndtr

from synthcity_dpswf.math.checks import check_positive

BOUNDED_RANGE_GDP = 0.63
r"""c: an :math:`\varepsilon`-bounded-range mechanism is :math:`c\,\varepsilon`-GDP (module docstring)."""

PROFILE_GRID = 1000
"""Cells per axis of ``bounded_range_mu``'s check over :math:`(t, \\varepsilon') \\in [0, \\varepsilon]^2`."""


def gaussian_profile(mu: float, epsilons: np.ndarray) -> np.ndarray:
    r""":math:`\delta_\mu(\varepsilon')`, the privacy profile of :math:`\mu`-GDP at each :math:`\varepsilon' \ge 0`: the
    analytic Gaussian mechanism's (``gaussian.analytic_gaussian_delta`` at z = 1 / mu), vectorised, in log space."""
    return np.exp(log_ndtr(-epsilons / mu + mu / 2)) - np.exp(epsilons + log_ndtr(-epsilons / mu - mu / 2))


def profile_dominated(epsilon: float, mu: float, cells: int = PROFILE_GRID) -> bool:
    r"""Whether every binary pair :math:`B_t`, :math:`t \in [0, \varepsilon]`, has its privacy profile below
    :math:`\delta_\mu` at every :math:`\varepsilon' \in [0, \varepsilon]` (beyond, :math:`B_t`'s is 0), checked over
    ``cells`` x ``cells`` cells of :math:`(t, \varepsilon')` with an upper bound of :math:`B_t`'s profile and a lower
    bound of :math:`\delta_\mu` that hold over each whole cell: :math:`(e^\varepsilon - e^t) / (e^\varepsilon - 1)`
    decreases in t, :math:`1 - e^{\varepsilon' - t}` increases in t and decreases in :math:`\varepsilon'`, and
    :math:`\delta_\mu` decreases in :math:`\varepsilon'`."""
    grid = np.linspace(0.0, epsilon, cells + 1)
    mass = (np.exp(epsilon) - np.exp(grid[:-1])) / np.expm1(epsilon)  # at each cell's smallest t
    gap = np.clip(-np.expm1(grid[None, :-1] - grid[1:, None]), 0.0, None)  # smallest eps', largest t of the cell
    return bool((mass[:, None] * gap <= gaussian_profile(mu, grid[1:])[None, :]).all())


@functools.lru_cache(maxsize=256)
def bounded_range_mu(epsilon: float) -> float:
    r"""The :math:`\mu` of Gaussian DP of an ``epsilon``-bounded-range mechanism (one round of
    ``exponential_mechanism``): :math:`c\,\varepsilon` with c = ``BOUNDED_RANGE_GDP``, after checking the bound
    (``profile_dominated``); raises where the check fails."""
    check_positive("epsilon", epsilon)
    mu = BOUNDED_RANGE_GDP * float(epsilon)
    if not profile_dominated(float(epsilon), mu):
        raise ValueError(f"the bounded-range bound {BOUNDED_RANGE_GDP} epsilon is not verified at epsilon = {epsilon!r}; "
                         "run the exponential mechanism at another epsilon (a plugin: another epsilon, or "
                         "pair_selection=\"public\").")
    return mu


def bounded_range_epsilon(mu: float) -> float:
    r"""The :math:`\varepsilon` of a bounded-range round that is ``mu``-GDP: :math:`\mu / c` (checked by
    ``bounded_range_mu``)."""
    check_positive("mu", mu)
    epsilon = float(mu) / BOUNDED_RANGE_GDP
    bounded_range_mu(epsilon)
    return epsilon


def selection_probabilities(scores: torch.Tensor, epsilon: float, sensitivity: float) -> torch.Tensor:
    r""":math:`P_D(y)` of the module docstring for ``scores`` ``(outcomes,)``, float64."""
    check_positive("epsilon", epsilon)
    check_positive("sensitivity", sensitivity)
    return torch.softmax(scores.to(torch.float64) * (epsilon / (2.0 * sensitivity)), dim=0)


def exponential_mechanism(scores: torch.Tensor, epsilon: float, sensitivity: float, secret: torch.Generator) -> int:
    r"""One draw of the exponential mechanism on ``scores`` ``(outcomes,)`` (each of sensitivity ``sensitivity``) at
    ``epsilon``: the argmax of :math:`\varepsilon u_y / (2\Delta_u) + G_y`, G i.i.d. standard Gumbel from ``secret``
    (the release's generator), which draws y with probability ``selection_probabilities``. The only place this
    mechanism's randomness is drawn."""
    check_positive("epsilon", epsilon)
    check_positive("sensitivity", sensitivity)
    if scores.ndim != 1 or scores.numel() == 0:
        raise ValueError(f"scores must be a non-empty vector, got shape {tuple(scores.shape)}.")
    uniform = torch.rand(scores.numel(), generator=secret, dtype=torch.float64).clamp(min=1e-300)
    gumbel = -torch.log(-torch.log(uniform).clamp(max=-1e-300))
    return int(torch.argmax(scores.to(torch.float64) * (epsilon / (2.0 * sensitivity)) + gumbel))


def exponential_rounds_epsilon(mu: float, rounds: int) -> float:
    r"""The :math:`\varepsilon_r` of each of ``rounds`` exponential-mechanism rounds that compose, adaptively, to
    ``mu``-GDP: :math:`\mu_r = \mu / \sqrt{T}` (Dong, Roth & Su 2022, Corollary 3.3), :math:`\varepsilon_r = \mu_r / c`."""
    if rounds < 1:
        raise ValueError(f"rounds must be >= 1, got {rounds!r}.")
    return bounded_range_epsilon(mu / math.sqrt(rounds))

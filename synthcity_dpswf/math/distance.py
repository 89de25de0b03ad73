r"""The sliced Wasserstein distance, the package's own metric.

.. math:: \mathcal{SW}_2(\mu, \nu) = \Big( \int_{\mathbb{S}^{d-1}} \mathcal{W}_2^2(P^\theta_\#\mu, P^\theta_\#\nu)\, d\theta \Big)^{1/2}

(eq. (sw) of the paper), estimated by Monte Carlo over ``n_directions`` uniform directions, with each 1-D
:math:`\mathcal{W}_2^2` computed exactly between the two empirical measures.
"""

from __future__ import annotations

import torch

from synthcity_dpswf.math.checks import check_matrix, check_positive_int
from synthcity_dpswf.math.sliced import project, random_directions


def wasserstein_1d_squared(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    r"""Exact :math:`\mathcal{W}_2^2` between the uniform empirical measures of each row of ``x`` (``(L, n)``)
    and ``y`` (``(L, m)``), shape ``(L,)``.

    :math:`\mathcal{W}_2^2 = \int_0^1 |F_x^{-1}(u) - F_y^{-1}(u)|^2 du` with step quantile functions. Equal
    sizes: the mean squared difference of the sorted rows (sorted matching is optimal in 1-D). Otherwise the
    integral is exact over the merged breakpoints :math:`\{i/n\} \cup \{k/m\}`.
    """
    x_sorted, y_sorted = torch.sort(x, dim=1).values, torch.sort(y, dim=1).values
    n, m = x.shape[1], y.shape[1]
    if n == m:
        return ((x_sorted - y_sorted) ** 2).mean(dim=1)
    breaks = torch.cat([torch.arange(1, n + 1, dtype=torch.float64) / n, torch.arange(1, m + 1, dtype=torch.float64) / m])
    breaks = torch.unique(breaks.clamp(max=1.0))
    widths = torch.diff(breaks, prepend=breaks.new_zeros(1))
    middles = breaks - widths / 2
    x_index = (middles * n).floor().long().clamp(max=n - 1).to(x.device)
    y_index = (middles * m).floor().long().clamp(max=m - 1).to(y.device)
    squared = (x_sorted[:, x_index] - y_sorted[:, y_index]) ** 2
    return squared @ widths.to(squared)


def sliced_wasserstein(
    x: torch.Tensor,
    y: torch.Tensor,
    n_directions: int = 500,
    seed: int = 0,
) -> float:
    r"""Monte Carlo :math:`\mathcal{SW}_2(x, y)` between the samples ``x`` (``(n, d)``) and ``y`` (``(m, d)``).

    Directions are drawn uniformly on the sphere from ``seed``, so two calls with the same seed compare
    distributions along the same directions. Returns a Python float.
    """
    check_matrix("x", x)
    check_matrix("y", y, x.shape[1])
    check_positive_int("n_directions", n_directions)
    generator = torch.Generator().manual_seed(seed)
    directions = random_directions(x.shape[1], n_directions, generator, dtype=x.dtype, device=x.device)
    squared = wasserstein_1d_squared(project(x, directions), project(y.to(x), directions))
    return float(squared.mean().sqrt())

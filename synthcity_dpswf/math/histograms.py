r"""Histograms of projections on a fixed grid, and the quantile functions read from (noisy) counts.

A histogram release (``privacy.mechanisms.projected_histogram``) counts projections :math:`p = \langle y,
\theta\rangle \in [-r, r]` in ``G`` equal bins with edges :math:`e_g = -r + 2r g / G`, ``g = 0..G``.
Turning noisy counts into a quantile function is post-processing, in two steps:

1. counts :math:`c \in \mathbb{R}^G` to bin probabilities :math:`p \in \Delta_G` (``bin_probabilities``);
2. :math:`p` to the quantile function of the distribution that spreads each bin's mass uniformly over the
   bin (``histogram_quantiles``): its CDF is piecewise linear through :math:`F(e_g) = \sum_{g' < g} p_{g'}`.
"""

from __future__ import annotations

from typing import Literal, get_args

import numpy as np
import torch

from synthcity_dpswf.math.checks import check_positive, check_positive_int

CountEstimator = Literal["simplex", "clip"]


def bin_edges(n_bins: int, radius: float, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """The ``G + 1`` equal-width bin edges over :math:`[-r, r]`."""
    check_positive_int("n_bins", n_bins)
    check_positive("radius", radius)
    return torch.linspace(-radius, radius, n_bins + 1, dtype=dtype)


def bin_index(projections: torch.Tensor, n_bins: int, radius: float) -> torch.Tensor:
    r"""The bin of each projection, :math:`g = \lfloor (p + r) G / 2r \rfloor` clamped to ``0..G-1`` (the upper
    edge r belongs to the last bin). Same shape as ``projections``, dtype long."""
    check_positive_int("n_bins", n_bins)
    check_positive("radius", radius)
    position = (projections.to(torch.float64) + radius) * (n_bins / (2 * radius))
    return position.floor().clamp(0, n_bins - 1).long()


def project_onto_simplex(values: torch.Tensor) -> torch.Tensor:
    r"""Euclidean projection of each row onto the probability simplex :math:`\{p \ge 0, \sum_g p_g = 1\}`:
    :math:`p_g = \max(v_g - \tau, 0)` with the unique :math:`\tau` that makes the row sum to one (Duchi et al.
    2008, sort-based, O(G log G) per row)."""
    sorted_values = torch.sort(values, dim=-1, descending=True).values
    cumulative = sorted_values.cumsum(dim=-1) - 1.0
    ranks = torch.arange(1, values.shape[-1] + 1, dtype=values.dtype, device=values.device)
    support = (sorted_values - cumulative / ranks) > 0
    # The support is a prefix of the sorted row; its length rho is the last index where the test holds.
    rho = support.to(values.dtype).cumsum(dim=-1).amax(dim=-1, keepdim=True).clamp(min=1).long()
    tau = cumulative.gather(-1, rho - 1) / rho.to(values.dtype)
    return (values - tau).clamp(min=0.0)


def bin_probabilities(counts: torch.Tensor, totals: torch.Tensor, estimator: CountEstimator = "simplex") -> torch.Tensor:
    r"""Bin probabilities ``(..., G)`` from noisy ``counts`` ``(..., G)`` and a total per row ``(...)``.

    - ``"simplex"`` (default): :math:`p = \Pi_{\Delta}(c / T)`, the Euclidean projection onto the simplex,
      i.e. subtract one constant from every count and clip at zero. Empty bins stay empty: noise alone
      rarely lifts a count above the constant. Measured better (docs/flows.md, "Histogram post-processing").
    - ``"clip"``: :math:`p = \max(c, 0) / \sum_g \max(c_g, 0)`; every empty bin keeps the positive half of
      its noise, which spreads mass over the whole range.

    ``totals`` (the number of records behind each row, or an estimate of it) only scales the counts for the
    simplex projection; a row whose total is not positive, or whose clipped counts are all zero, becomes
    uniform (no information).
    """
    if estimator not in get_args(CountEstimator):
        raise ValueError(f"estimator must be one of {get_args(CountEstimator)}, got {estimator!r}.")
    counts = counts.to(torch.float64)
    totals = totals.to(torch.float64).unsqueeze(-1).expand(*counts.shape[:-1], 1)
    uniform = torch.full_like(counts, 1.0 / counts.shape[-1])
    if estimator == "clip":
        clipped = counts.clamp(min=0.0)
        mass = clipped.sum(dim=-1, keepdim=True)
        return torch.where(mass > 0, clipped / mass.clamp(min=1e-300), uniform)
    scaled = counts / totals.clamp(min=1e-300)
    return torch.where(totals > 0, project_onto_simplex(scaled), uniform)


def histogram_quantiles(probabilities: torch.Tensor, edges: torch.Tensor, levels: torch.Tensor) -> torch.Tensor:
    r"""Quantile functions ``(L, len(levels))`` of the piecewise-uniform distributions with bin probabilities
    ``(L, G)`` on ``edges`` (``(G + 1,)``): with :math:`F_g = \sum_{g' < g} p_{g'}`, for :math:`F_g \le u <
    F_{g+1}`,

    .. math:: F^{-1}(u) = e_g + \frac{u - F_g}{F_{g+1} - F_g} (e_{g+1} - e_g),

    :math:`F^{-1}(0)` is the lower end of the support and :math:`F^{-1}(1)` its upper end.
    """
    n_bins = probabilities.shape[-1]
    if edges.shape != (n_bins + 1,):
        raise ValueError(f"edges must have shape ({n_bins + 1},) for {n_bins} bins, got {tuple(edges.shape)}.")
    probabilities = probabilities.to(torch.float64)
    cdf = torch.cat([torch.zeros_like(probabilities[:, :1]), probabilities.cumsum(dim=1)], dim=1)
    cdf = cdf / cdf[:, -1:].clamp(min=1e-300)
    # Level 0 is read as the smallest positive level, so that leading empty bins are skipped.
    targets = levels.to(torch.float64).clamp(1e-12, 1.0).expand(cdf.shape[0], -1).contiguous()
    # The bin holding level u ends at the first edge with F >= u; that bin has positive mass.
    upper = torch.searchsorted(cdf, targets).clamp(1, n_bins)
    lower = upper - 1
    f_low, f_high = cdf.gather(1, lower), cdf.gather(1, upper)
    width = f_high - f_low
    fraction = torch.where(width > 0, (targets - f_low) / width.clamp(min=1e-300), torch.ones_like(width))
    edges64 = edges.to(torch.float64)
    quantiles = edges64[lower] + fraction.clamp(0.0, 1.0) * (edges64[upper] - edges64[lower])
    return quantiles.to(levels.dtype if levels.is_floating_point() else torch.float32)


def quantile_edges(edges: np.ndarray, counts: np.ndarray, n_levels: int, integer: bool = False) -> np.ndarray:
    r"""The edges of ``n_levels`` levels of (estimated) equal mass from a noisy histogram (``counts`` over the bins of
    ``edges``): the counts projected onto the simplex (``project_onto_simplex``, as the flows read counts), the
    piecewise-linear CDF inverted at :math:`i / K`, the outer edges kept. Integer columns round inner edges up (each
    level then holds whole integers). Repeated edges are merged, so fewer levels come back where the mass is in
    few bins. Post-processing: it reads only released counts and public edges."""
    edges = np.asarray(edges, dtype=float)
    counts = np.asarray(counts, dtype=float)
    if edges.ndim != 1 or len(edges) != len(counts) + 1 or len(counts) == 0:
        raise ValueError("edges must hold one more value than counts (the bins' boundaries).")
    total = max(float(counts.clip(min=0).sum()), 1.0)
    probabilities = project_onto_simplex(torch.tensor(counts / total, dtype=torch.float64)[None])[0].numpy()
    cumulative = np.concatenate([[0.0], np.cumsum(probabilities)])
    cumulative[-1] = 1.0
    targets = np.linspace(0.0, 1.0, n_levels + 1)[1:-1]
    inner = np.interp(targets, cumulative, edges)
    if integer:
        inner = np.ceil(inner)
    chosen = np.concatenate([[edges[0]], inner, [edges[-1]]])
    chosen = np.clip(chosen, edges[0], edges[-1])
    return np.unique(chosen)


def allocate(count: int, weights: torch.Tensor) -> torch.Tensor:
    """Split ``count`` into integer parts proportional to ``weights`` (largest remainders), ``(C,)`` long."""
    exact = weights.to(torch.float64) / weights.sum() * count
    parts = exact.floor().long()
    remainder = count - int(parts.sum())
    parts[torch.argsort(exact - parts, descending=True)[:remainder]] += 1
    return parts

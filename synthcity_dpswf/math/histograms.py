r"""Noisy counts read as distributions (post-processing; nothing here knows about privacy): histograms of projections
on a fixed grid and the quantile functions read from them, and the marginal tables of discrete columns, one- and
two-way histograms of level codes, with their coarsening and mutually consistent estimates.

**Histograms of projections.** A histogram release (``privacy.mechanisms.projected_histogram``) counts projections
:math:`p = \langle y, \theta\rangle \in [-r, r]` in ``G`` equal bins with edges :math:`e_g = -r + 2r g / G`,
``g = 0..G``. Turning noisy counts into a quantile function is post-processing, in two steps:

1. counts :math:`c \in \mathbb{R}^G` to bin probabilities :math:`p \in \Delta_G` (``bin_probabilities``);
2. :math:`p` to the quantile function of the distribution that spreads each bin's mass uniformly over the
   bin (``histogram_quantiles``): its CDF is piecewise linear through :math:`F(e_g) = \sum_{g' < g} p_{g'}`.

**Marginal tables.** Column j has :math:`K_j` *fine* levels (its cells: categories, integers, or bins of a numeric
range) and :math:`\bar K_j \le K_j` *coarse* levels, runs of consecutive fine ones: fine level :math:`a` lies in
coarse level :math:`\lfloor a \bar K_j / K_j \rfloor` (``coarse_index``; runs of equal length), or, where a released
estimate of the fine levels' masses is known, in the run its mass falls in (``equal_mass_starts``: runs of about
equal mass).

Particles live in the unit cube: coordinate :math:`x_j \in [0, 1]` falls in coarse level
:math:`\lfloor x_j \bar K_j \rfloor`, and a two-way table over coarse levels is read as the piecewise-uniform
density with mass :math:`p_{ab}` on the rectangle :math:`[a/\bar K_i, (a+1)/\bar K_i) \times [b/\bar K_j,
(b+1)/\bar K_j)` (``table_quantiles``: its quantile functions along a direction of its plane).
"""

from __future__ import annotations

import math
from typing import Literal, get_args

import numpy as np
import torch

from synthcity_dpswf.math.checks import check_positive, check_positive_int
from synthcity_dpswf.math.sliced import interpolate_sorted

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
      rarely lifts a count above the constant, so the flow is not pulled towards ranges no record holds.
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


RAKING_ITERATIONS = 20
"""Iterations of iterative proportional fitting in ``rake`` (the margins match to ~1e-6 on Adult's tables)."""


def coarse_index(
    fine: torch.Tensor, n_fine: int, n_coarse: int, missing: bool = False, starts: tuple[int, ...] | None = None
) -> torch.Tensor:
    r"""The coarse level :math:`\lfloor a \bar K / K \rfloor` of each fine level ``a`` (long tensor). With
    ``missing``, the last fine level (the missing entries) is alone in the last coarse level and the others split the
    remaining :math:`\bar K - 1` as above. With ``starts`` (the first fine level of each of the ``n_coarse`` runs,
    ``check_starts``), the run that holds ``a``: the number of starts at or below ``a``, less one."""
    check_positive_int("n_fine", n_fine)
    check_positive_int("n_coarse", n_coarse)
    if n_coarse > n_fine:
        raise ValueError(f"n_coarse={n_coarse} exceeds n_fine={n_fine}; a coarse level groups fine ones.")
    if starts is not None:
        check_starts(starts, n_fine, n_coarse, missing)
        return torch.searchsorted(torch.tensor(starts, dtype=torch.long), fine.long(), right=True) - 1
    if not missing:
        return torch.div(fine.long() * n_coarse, n_fine, rounding_mode="floor")
    if n_fine < 2 or n_coarse < 2:
        raise ValueError("a column with a missing level needs at least 2 fine and 2 coarse levels.")
    present = torch.div(fine.long().clamp(max=n_fine - 2) * (n_coarse - 1), n_fine - 1, rounding_mode="floor")
    return torch.where(fine.long() == n_fine - 1, torch.full_like(present, n_coarse - 1), present)


def check_starts(starts: tuple[int, ...], n_fine: int, n_coarse: int, missing: bool = False) -> None:
    """Raise unless ``starts`` are the first fine levels of ``n_coarse`` runs covering ``0 .. n_fine - 1``: one per
    run, the first 0, strictly increasing, below ``n_fine``; with ``missing``, the last run the missing level alone."""
    if len(starts) != n_coarse or starts[0] != 0 or any(b <= a for a, b in zip(starts, starts[1:])) or starts[-1] >= n_fine:
        raise ValueError(f"starts {starts!r} must be {n_coarse} strictly increasing fine levels from 0, below {n_fine}.")
    if missing and starts[-1] != n_fine - 1:
        raise ValueError(f"starts {starts!r}: the missing level {n_fine - 1} must be alone in the last run.")


def equal_mass_starts(masses: torch.Tensor, n_runs: int) -> tuple[int, ...]:
    r"""Runs of consecutive fine levels of about equal mass, at most ``n_runs`` of them: fine level :math:`a`, of
    estimated mass :math:`p_a` (``masses``, any scale, negatives read as 0), goes to run
    :math:`\lfloor R (F_{a-1} + p_a / 2) \rfloor` with :math:`F` the cumulative share and R = ``n_runs``, the runs that
    receive a level numbered in order. A level of mass at least :math:`2 / R` is alone in its run (its midpoint is
    at least :math:`1 / R` from its neighbours'), so an atom (a count's zeros) keeps its own coarse level. Returns
    the first fine level of each run. Post-processing: it reads released masses only."""
    check_positive_int("n_runs", n_runs)
    weights = masses.to(torch.float64).clamp(min=0.0)
    total = float(weights.sum())
    if total <= 0.0:  # no mass estimated: runs of equal length
        weights = torch.ones_like(weights)
        total = float(weights.sum())
    share = weights / total
    midpoints = share.cumsum(0) - share / 2
    runs = (midpoints * n_runs).floor().clamp(max=n_runs - 1).long()
    first = torch.ones_like(runs, dtype=torch.bool)
    first[1:] = runs[1:] != runs[:-1]
    return tuple(int(level) for level in torch.nonzero(first).flatten())


def coarsen(fine_counts: torch.Tensor, n_coarse: int, missing: bool = False, starts: tuple[int, ...] | None = None) -> torch.Tensor:
    """Sum fine counts ``(..., K)`` into their coarse levels ``(..., K_coarse)`` (``coarse_index``)."""
    n_fine = fine_counts.shape[-1]
    index = coarse_index(torch.arange(n_fine), n_fine, n_coarse, missing, starts).to(fine_counts.device)
    out = torch.zeros(*fine_counts.shape[:-1], n_coarse, dtype=fine_counts.dtype, device=fine_counts.device)
    return out.index_add_(-1, index, fine_counts)


def to_probabilities(counts: torch.Tensor, total: float) -> torch.Tensor:
    r"""Noisy counts of a table (any shape) to probabilities: :math:`\Pi_\Delta(c / n)`, the Euclidean projection
    of the flattened table onto the simplex (subtract one constant, clip at zero: clipping alone would put the
    positive half of the noise on every empty cell, mass that the flow would then reproduce)."""
    if total <= 0:
        raise ValueError(f"total must be > 0, got {total!r}.")
    flat = counts.to(torch.float64).reshape(1, -1) / total
    return project_onto_simplex(flat).reshape(counts.shape)


def consensus_margin(estimates: list[torch.Tensor], variances: list[float], total: float) -> torch.Tensor:
    r"""One coarse margin from several unbiased noisy count vectors of it: the inverse-variance weighted mean
    :math:`\hat c = \sum_k c_k / v_k \,/\, \sum_k 1 / v_k` (the least-squares combination of independent
    estimates), then projected to probabilities (``to_probabilities``)."""
    if not estimates or len(estimates) != len(variances):
        raise ValueError("consensus_margin needs one variance per estimate, and at least one estimate.")
    weights = torch.tensor([1.0 / max(v, 1e-300) for v in variances], dtype=torch.float64)
    stacked = torch.stack([e.to(torch.float64) for e in estimates])
    combined = (weights[:, None] * stacked).sum(dim=0) / weights.sum()
    return to_probabilities(combined, total)


def independence_distance(table: torch.Tensor) -> float:
    r"""How far an exact two-way count table C ``(K_i, K_j)`` stands from the product of its own margins, in records:
    :math:`u = \sum_{ab} |C_{ab} - r_a c_b / n| = \sum_{ab} |n C_{ab} - r_a c_b| / n` with row sums r, column sums c
    and :math:`n = \sum C` (0 for an empty table, and for one record): 0 for independent columns, at most 2n. The
    numerator is summed exactly in 64-bit integers (tables below 2^31 records) and divided once, so u is within
    :math:`n\, 2^{-51}` of its exact value. Changing one record changes u by at most 6, adding or removing one by less
    than 4 (privacy.md, "Paid pair selection")."""
    counts = table.to(torch.int64)
    if not torch.equal(counts.to(table.dtype), table) or bool((counts < 0).any()):
        raise ValueError("the table must hold non-negative integer counts.")
    total = int(counts.sum())
    if total == 0:
        return 0.0
    if total >= 2**31:
        raise ValueError(f"a table of {total} records exceeds the exact integer sums (below 2^31 records): fit a sample "
                         "of fewer rows, or pair_selection=\"public\", which scores no table.")
    numerator = (total * counts - torch.outer(counts.sum(dim=1), counts.sum(dim=0))).abs().sum()
    return int(numerator) / total


def rake(table: torch.Tensor, rows: torch.Tensor, columns: torch.Tensor, iterations: int = RAKING_ITERATIONS) -> torch.Tensor:
    r"""Iterative proportional fitting of a non-negative table ``(K_i, K_j)`` to row and column margins (each
    summing to one): alternately :math:`p_{ab} \leftarrow p_{ab}\, r_a / \sum_{b'} p_{ab'}` and the same for
    columns. It keeps zeros at zero; a row (column) with no mass but a positive target margin is first given a
    uniform share of it, so that the margins can be met."""
    table = table.to(torch.float64).clamp(min=0.0)
    rows, columns = rows.to(torch.float64), columns.to(torch.float64)
    table = torch.where((table.sum(dim=1, keepdim=True) <= 0) & (rows[:, None] > 0), rows[:, None] * columns[None, :], table)
    table = torch.where((table.sum(dim=0, keepdim=True) <= 0) & (columns[None, :] > 0), rows[:, None] * columns[None, :], table)
    for _ in range(iterations):
        table = table * (rows / table.sum(dim=1).clamp(min=1e-300))[:, None]
        table = table * (columns / table.sum(dim=0).clamp(min=1e-300))[None, :]
    return table / table.sum().clamp(min=1e-300)


def pair_directions(n_angles: int) -> torch.Tensor:
    r"""``n_angles`` unit directions of a plane, :math:`(\cos\phi_a, \sin\phi_a)` with :math:`\phi_a = \pi a / A`,
    ``(2, A)``: a half circle (a direction and its opposite give the same transport), axes included."""
    check_positive_int("n_angles", n_angles)
    angles = torch.arange(n_angles, dtype=torch.float64) * (math.pi / n_angles)
    return torch.stack([torch.cos(angles), torch.sin(angles)])


def table_quantiles(
    table: torch.Tensor, directions: torch.Tensor, levels: torch.Tensor, n_points: int, generator: torch.Generator
) -> torch.Tensor:
    r"""Quantile functions ``(A, len(levels))`` of :math:`\langle \theta_a, X\rangle` for X drawn from the
    piecewise-uniform density of a two-way ``table`` of probabilities over the unit square (module docstring),
    for the plane directions ``(2, A)``.

    Read from ``n_points`` stratified draws: cells at the levels :math:`(k + 1/2) / m` of the table's cumulative
    distribution (every cell gets its share up to one point), uniform positions inside the cell from
    ``generator`` (public); the quantile function of each projection is then ``interpolate_sorted``.
    """
    check_positive_int("n_points", n_points)
    rows, columns = table.shape
    flat = table.to(torch.float64).reshape(-1)
    cumulative = flat.cumsum(0)
    cumulative = cumulative / cumulative[-1].clamp(min=1e-300)
    strata = (torch.arange(n_points, dtype=torch.float64) + 0.5) / n_points
    cells = torch.searchsorted(cumulative, strata).clamp(max=flat.numel() - 1)
    jitter = torch.rand(n_points, 2, generator=generator, dtype=torch.float64)
    points = torch.stack([(cells // columns + jitter[:, 0]) / rows, (cells % columns + jitter[:, 1]) / columns], dim=1)
    projections = (points @ directions.to(torch.float64)).T  # (A, m)
    return interpolate_sorted(torch.sort(projections, dim=1).values, levels.to(torch.float64)).to(levels.dtype)


def fine_positions(
    coarse_position: torch.Tensor, fine_probabilities: torch.Tensor, n_coarse: int, missing: bool = False,
    starts: tuple[int, ...] | None = None,
) -> torch.Tensor:
    r"""Map coordinates in [0, 1] (one column) to continuous fine positions in :math:`[0, K)`.

    The coordinate falls in coarse level :math:`\bar a = \lfloor x \bar K \rfloor` at relative position
    :math:`u = x \bar K - \bar a`; the fine level is the one where u falls in the cumulative distribution of the
    fine ``fine_probabilities`` restricted to :math:`\bar a` (uniform when that level holds no fine mass), and the
    fraction of u inside that level's interval is kept as the position inside the fine level. The map is
    monotone in x: the flow's ordering survives the refinement. ``starts``: the runs' first fine levels
    (``coarse_index``).
    """
    n_fine = fine_probabilities.shape[0]
    probabilities = fine_probabilities.to(torch.float64).clamp(min=0.0)
    groups = coarse_index(torch.arange(n_fine), n_fine, n_coarse, missing, starts)
    mass = torch.zeros(n_coarse, dtype=torch.float64).index_add_(0, groups, probabilities)
    width = torch.bincount(groups, minlength=n_coarse).to(torch.float64)
    within = torch.where(mass[groups] > 0, probabilities / mass[groups].clamp(min=1e-300), 1.0 / width[groups])
    # Cumulative share inside each coarse level: start[a] and end[a] of fine level a, within its coarse level.
    end = within.cumsum(0)
    first = torch.searchsorted(groups, torch.arange(n_coarse))  # first fine level of each coarse level
    offset = torch.cat([torch.zeros(1, dtype=torch.float64), end])[first]
    end = end - offset[groups]
    start = end - within
    scaled = coarse_position.to(torch.float64).clamp(0.0, 1.0) * n_coarse
    level = scaled.floor().clamp(max=n_coarse - 1)
    u = (scaled - level).clamp(0.0, 1.0)
    coarse = level.long()
    # Fine level: the first one of the coarse level whose end exceeds u (so empty levels are never chosen).
    keys = coarse.to(torch.float64) * 2.0 + u.clamp(max=1.0 - 1e-12)
    fine_keys = groups.to(torch.float64) * 2.0 + end.clamp(max=1.0)
    fine = torch.searchsorted(fine_keys, keys, right=True).clamp(max=n_fine - 1)
    fine = torch.maximum(torch.minimum(fine, first[coarse] + width[coarse].long() - 1), first[coarse])
    span = (end[fine] - start[fine]).clamp(min=1e-300)
    fraction = ((u - start[fine]) / span).clamp(0.0, 1.0 - 1e-9)
    return fine.to(torch.float64) + fraction

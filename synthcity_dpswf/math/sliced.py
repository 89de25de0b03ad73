r"""Sliced primitives: directions, projections, 1-D quantile functions and CDFs, and the sliced drift.

Notation follows the paper (Sec. 3.2). Particles :math:`X \in \mathbb{R}^{n \times d}`, directions
:math:`\Theta = [\theta_1, \dots, \theta_L] \in \mathbb{R}^{d \times L}` with unit columns. Projections are
stored direction-major, shape ``(L, n)``, so that every 1-D problem is a contiguous row.

Quantile functions live on a fixed grid of ``G`` levels :math:`u_g = g / (G - 1)`, ``g = 0..G-1``
(``quantile_levels``). For a sorted sample :math:`s_0 \le \dots \le s_{m-1}` the quantile at level ``u`` is the
linear interpolation at position :math:`u (m - 1)`, the same convention as ``numpy.quantile(method="linear")``;
the CDF is its inverse, so that the k-th order statistic sits at level :math:`k / (m - 1)`.

The drift of eqs. (update drift) and (update psi), with the two CDFs in the right order:

.. math::
    \hat v(x) = -\frac{1}{L} \sum_{j=1}^{L} \psi_j'(\langle x, \theta_j\rangle + \xi)\, \theta_j, \qquad
    \psi_j'(z) = z - F^{-1}_{\nu_j}\big(F_{\mu_j}(z)\big),

where :math:`\mu_j = P^{\theta_j}_\# \hat\mu * \mathcal{N}(0, \sigma^2)` are the smoothed projected particles,
:math:`\nu_j` the smoothed projected target and :math:`\xi \sim \mathcal{N}(0, \sigma^2)`: the gradient of the
smoothed sliced distance at a particle is the expected displacement of its smoothed projection, and one
draw of :math:`\xi` per particle and direction is the unbiased estimate of it.
"""

from __future__ import annotations

from typing import Literal, get_args

import torch

from synthcity_dpswf.math.checks import check_directions, check_matrix, check_non_negative, check_positive_int

ParticleCDF = Literal["histogram", "sort", "grid"]

CHUNK_ELEMENTS = {"cpu": 2**18, "cuda": 2**24}
"""Default number of projections ``sliced_drift`` holds at once, per device type. On CPU a chunk that stays in
cache makes the dozen elementwise passes of a step faster (benchmarks/studies/speed.py); on CUDA larger
chunks amortise kernel launches. Other devices use the CUDA value."""


def random_directions(
    dim: int,
    n_directions: int,
    generator: torch.Generator,
    *,
    orthonormal: bool = False,
    dtype: torch.dtype = torch.float32,
    device: torch.device | str = "cpu",
) -> torch.Tensor:
    r"""Draw ``n_directions`` unit vectors in :math:`\mathbb{R}^{dim}`, returned as the columns of a ``(dim, L)`` matrix.

    Default: i.i.d. uniform on the sphere :math:`\mathbb{S}^{d-1}` (normalised standard Gaussians). With
    ``orthonormal=True``, stacked blocks of ``dim`` orthonormal directions (each block a Haar-random rotation,
    QR of a Gaussian matrix with the sign fix), so that each block covers the space evenly; each column is
    still uniform on the sphere. The draw happens on CPU from ``generator`` (a CPU ``torch.Generator``) and is
    then moved, so the same seed gives the same directions on every device.
    """
    check_positive_int("dim", dim)
    check_positive_int("n_directions", n_directions)
    if orthonormal:
        n_blocks = -(-n_directions // dim)
        gaussian = torch.randn(n_blocks, dim, dim, generator=generator, dtype=torch.float64)
        q, r = torch.linalg.qr(gaussian)
        q = q * torch.sign(torch.diagonal(r, dim1=-2, dim2=-1)).unsqueeze(-2)
        directions = q.permute(1, 0, 2).reshape(dim, n_blocks * dim)[:, :n_directions]
    else:
        gaussian = torch.randn(dim, n_directions, generator=generator, dtype=torch.float64)
        directions = gaussian / gaussian.norm(dim=0, keepdim=True)
    return directions.to(dtype=dtype, device=device).contiguous()


def project(x: torch.Tensor, directions: torch.Tensor) -> torch.Tensor:
    r"""Projections :math:`\langle x_i, \theta_j \rangle`, shape ``(L, n)`` (direction-major): :math:`(X\Theta)^\top`."""
    return (directions.T @ x.T).contiguous()


def quantile_levels(n_levels: int, dtype: torch.dtype = torch.float32, device: torch.device | str = "cpu") -> torch.Tensor:
    """The fixed grid of levels :math:`u_g = g / (G - 1)`, ``g = 0..G-1`` (G >= 2)."""
    if isinstance(n_levels, bool) or not isinstance(n_levels, int) or n_levels < 2:
        raise ValueError(f"n_levels must be an integer >= 2, got {n_levels!r}.")
    return torch.linspace(0.0, 1.0, n_levels, dtype=dtype, device=device)


def interpolate_sorted(sorted_rows: torch.Tensor, levels: torch.Tensor) -> torch.Tensor:
    r"""Quantile functions of sorted rows, evaluated at ``levels``.

    ``sorted_rows`` is ``(L, m)`` sorted along its last axis; ``levels`` is ``(G,)`` (the same levels for every
    row) or ``(L, k)`` (per row). Returns :math:`Q_j(u) = s_{j,\lfloor p \rfloor} + (p - \lfloor p \rfloor)
    (s_{j,\lfloor p \rfloor + 1} - s_{j,\lfloor p \rfloor})` with :math:`p = u (m - 1)`, levels clamped to [0, 1].
    A row of length 1 is the constant function.
    """
    m = sorted_rows.shape[-1]
    position = levels.clamp(0.0, 1.0) * (m - 1)
    lower = position.floor().clamp(max=max(m - 2, 0)).long()
    fraction = (position - lower).to(sorted_rows.dtype)
    upper = (lower + 1).clamp(max=m - 1)
    if levels.ndim == 1:
        left, right = sorted_rows[:, lower], sorted_rows[:, upper]
    else:
        left, right = sorted_rows.gather(1, lower), sorted_rows.gather(1, upper)
    return left + fraction * (right - left)


def empirical_quantiles(samples: torch.Tensor, levels: torch.Tensor) -> torch.Tensor:
    r"""Quantile functions :math:`F_j^{-1}(u_g)` of each row of ``samples`` (``(L, m)``) on ``levels`` (``(G,)``).

    Computed by sorting each row and interpolating linearly (``interpolate_sorted``); unlike
    ``torch.quantile`` this has no size limit and costs one sort.
    """
    if samples.ndim != 2 or samples.shape[1] == 0:
        raise ValueError(f"samples must be (n_directions, n_samples) with n_samples >= 1, got {tuple(samples.shape)}.")
    return interpolate_sorted(torch.sort(samples, dim=1).values, levels)


def interpolate_cdf(quantiles: torch.Tensor, levels: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
    r"""Evaluate the CDFs whose quantile functions are tabulated as ``quantiles`` (``(L, G)``, rows sorted) at
    ``levels`` (``(G,)``) at the points ``values`` (``(L, k)``), by ``searchsorted`` and linear interpolation:

    .. math:: F_j(z) = u_g + \frac{z - q_{j,g}}{q_{j,g+1} - q_{j,g}} (u_{g+1} - u_g), \quad q_{j,g} \le z < q_{j,g+1},

    with :math:`F_j = 0` below :math:`q_{j,0}` and 1 above :math:`q_{j,G-1}`. Flat segments (ties) take their left level.
    """
    n_levels = quantiles.shape[1]
    right = torch.searchsorted(quantiles, values.contiguous(), right=True).clamp(1, n_levels - 1)
    left = right - 1
    q_left, q_right = quantiles.gather(1, left), quantiles.gather(1, right)
    width = q_right - q_left
    fraction = torch.where(width > 0, (values - q_left) / torch.where(width > 0, width, 1.0), 0.0)
    cdf = levels[left] + fraction.clamp(0.0, 1.0) * (levels[right] - levels[left])
    return torch.where(values < quantiles[:, :1], 0.0, torch.where(values >= quantiles[:, -1:], 1.0, cdf))


def rank_levels(projections: torch.Tensor) -> torch.Tensor:
    r"""Exact empirical CDF of each row at its own points: :math:`F_j(p_{j,i}) = \mathrm{rank}_j(i) / (n - 1)`.

    One ``argsort`` per row; ties are broken by the sort. Shape ``(L, n)`` in and out.
    """
    n = projections.shape[1]
    order = torch.argsort(projections, dim=1)
    ranks = torch.arange(n, dtype=projections.dtype, device=projections.device) / max(n - 1, 1)
    return torch.empty_like(projections).scatter_(1, order, ranks.expand_as(projections))


def uniform_bins(projections: torch.Tensor, n_bins: int) -> tuple[torch.Tensor, torch.Tensor]:
    r"""Each point's bin k (long) and fraction :math:`t \in [0, 1]` of the way through it, on a uniform grid of
    ``n_bins`` bins over each row's :math:`[\min_j, \max_j]` (a constant row falls in bin 0)."""
    low = projections.amin(dim=1, keepdim=True)
    high = projections.amax(dim=1, keepdim=True)
    width = torch.where(high > low, (high - low) / n_bins, torch.ones_like(high))
    position = (projections - low) / width
    bins = position.floor().clamp_(0, n_bins - 1)
    within = (position - bins).clamp_(0.0, 1.0)
    return bins.long(), within


def histogram_cdf(projections: torch.Tensor, n_bins: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    r"""Empirical CDF of each row on a uniform grid of ``n_bins`` bins over :math:`[\min_j, \max_j]` (no sort).

    Returns ``(bins, within, edge_levels)``: each point's bin index k and fraction :math:`t \in [0, 1]` of the
    way through it (both ``(L, n)``), and the CDF at the ``n_bins + 1`` bin edges,
    :math:`F_j(e_k) = \frac{1}{n} \sum_{k' < k} c_{j,k'}` with :math:`c_{j,k}` the count of bin k (``(L, B + 1)``).
    Spreading each bin's mass uniformly, the CDF at a point is the linear interpolation
    :math:`F_j(p) = F_j(e_k) + t (F_j(e_{k+1}) - F_j(e_k))` (``interpolate_in_bins``); its error against the
    exact ``rank_levels`` is at most the mass of one bin, its cost O(nL) against O(nL log n) for a sort.
    """
    n_directions, n = projections.shape
    bins, within = uniform_bins(projections, n_bins)
    counts = torch.zeros(n_directions, n_bins + 1, dtype=projections.dtype, device=projections.device)
    counts[:, 1:].scatter_add_(1, bins, torch.ones_like(projections))
    return bins, within, counts.cumsum(dim=1) / n


def interpolate_in_bins(edge_values: torch.Tensor, bins: torch.Tensor, within: torch.Tensor) -> torch.Tensor:
    r"""Linear interpolation of a function tabulated at bin edges (``(L, B + 1)``) at points given by their bin
    and fraction (``histogram_cdf``): :math:`g(p) = g(e_k) + t\, (g(e_{k+1}) - g(e_k))`."""
    left = edge_values[:, :-1].gather(1, bins)
    return left + within * (edge_values[:, 1:].gather(1, bins) - left)


def sliced_drift(
    particles: torch.Tensor,
    directions: torch.Tensor,
    target_quantiles: torch.Tensor,
    smoothing: float = 0.0,
    generator: torch.Generator | None = None,
    *,
    particle_cdf: ParticleCDF = "histogram",
    n_bins: int = 1000,
    chunk_size: int | None = None,
) -> torch.Tensor:
    r"""The drift :math:`\hat v(x_i)` of eqs. (update drift)-(update psi) at every particle, shape ``(n, d)``.

    ``target_quantiles`` (``(L, G)``) tabulates :math:`F^{-1}_{\nu_j}` on ``quantile_levels(G)``; it must already
    carry the target's smoothing (noise of standard deviation ``smoothing`` on each projection). The particles'
    projections get their own :math:`\mathcal{N}(0, \text{smoothing}^2)` noise drawn from ``generator`` (which
    must live on the particles' device), their CDF :math:`F_{\mu_j}` is evaluated at those smoothed points by
    ``histogram_cdf`` (default, O(nL)), exactly by ``rank_levels`` (``particle_cdf="sort"``), or from the
    particles' own quantiles on the ``n_bins``-point level grid by ``interpolate_cdf`` (``"grid"``, the
    reference code's way, with one sort), and

    .. math:: \hat v(x_i) = -\frac{1}{L} \sum_j \big(p_{j,i} - T_j(p_{j,i})\big)\, \theta_j
              = -\frac{1}{L} \Psi^\top \Theta^\top, \qquad T_j = F^{-1}_{\nu_j} \circ F_{\mu_j}.

    With the histogram, the transport map :math:`T_j` is evaluated at the ``n_bins + 1`` bin edges (at most n
    bins for n particles) and interpolated linearly inside each bin, so the per-point work is one gather pair.

    The sum is one matrix product; directions are processed ``chunk_size`` at a time so that memory stays
    O(n * chunk_size) whatever L (default: ``CHUNK_ELEMENTS`` projections per chunk).
    """
    check_matrix("particles", particles)
    check_directions(directions, particles.shape[1])
    n_directions = directions.shape[1]
    if target_quantiles.ndim != 2 or target_quantiles.shape[0] != n_directions or target_quantiles.shape[1] < 2:
        raise ValueError(
            f"target_quantiles must be (n_directions={n_directions}, n_levels >= 2), got {tuple(target_quantiles.shape)}."
        )
    check_non_negative("smoothing", smoothing)
    check_positive_int("n_bins", n_bins)
    if chunk_size is None:
        budget = CHUNK_ELEMENTS.get(particles.device.type, CHUNK_ELEMENTS["cuda"])
        chunk_size = max(1, budget // particles.shape[0])
    check_positive_int("chunk_size", chunk_size)
    if particle_cdf not in get_args(ParticleCDF):
        raise ValueError(f"particle_cdf must be one of {get_args(ParticleCDF)}, got {particle_cdf!r}.")
    directions = directions.to(particles)
    target_quantiles = target_quantiles.to(particles)
    drift = torch.zeros_like(particles)
    for start in range(0, n_directions, chunk_size):
        block = slice(start, start + chunk_size)
        theta = directions[:, block]
        projections = project(particles, theta)
        if smoothing > 0:
            noise = torch.randn(projections.shape, generator=generator, dtype=projections.dtype, device=projections.device)
            projections.add_(noise, alpha=smoothing)
        if particle_cdf == "sort":
            transported = interpolate_sorted(target_quantiles[block], rank_levels(projections))
        elif particle_cdf == "grid":
            grid = quantile_levels(max(n_bins, 2), projections.dtype, projections.device)
            levels = interpolate_cdf(empirical_quantiles(projections, grid), grid, projections)
            transported = interpolate_sorted(target_quantiles[block], levels)
        else:
            # More bins than particles resolve nothing more than the particles' own ranks: cap them at n.
            bins, within, edge_levels = histogram_cdf(projections, min(n_bins, max(projections.shape[1], 2)))
            transported = interpolate_in_bins(interpolate_sorted(target_quantiles[block], edge_levels), bins, within)
        displacement = projections - transported
        drift.sub_((theta @ displacement).T)
    return drift / n_directions


def grouped_sliced_drift(
    particles: torch.Tensor,
    group_sizes: torch.Tensor,
    directions: torch.Tensor,
    target_quantiles: torch.Tensor,
    n_bins: int = 1000,
) -> torch.Tensor:
    r"""The drift of eq. (update drift) for particles split into C groups, each flowing to its own target.

    The particles are stored group after group (``group_sizes``, ``(C,)``, summing to n); group c's target
    is tabulated as ``target_quantiles[c]`` (``(C, L, G)`` on ``quantile_levels(G)``), all groups sharing the
    directions ``(d, L)``. For particle i of group c and direction j,

    .. math:: \hat v(x_i) = -\frac{1}{L}\sum_j \big(p_{j,i} - F^{-1}_{\nu_{c,j}}(F_{\mu_{c,j}}(p_{j,i}))\big)\theta_j,

    with :math:`F_{\mu_{c,j}}` group c's CDF from the histogram of its projections on ``n_bins`` bins over the
    range of all projections (as ``histogram_cdf``, one count table of C x ``n_bins`` cells per direction) and
    the transport map evaluated at the bin edges and interpolated inside each bin (as ``sliced_drift``). All
    groups are done at once, O(nL + CL n_bins) per step whatever C. No smoothing (the targets of histogram
    releases carry their noise in the counts).
    """
    check_matrix("particles", particles)
    check_directions(directions, particles.shape[1])
    check_positive_int("n_bins", n_bins)
    n_groups, n_directions, n_levels = target_quantiles.shape
    if n_directions != directions.shape[1] or n_levels < 2:
        raise ValueError(f"target_quantiles must be (groups, n_directions={directions.shape[1]}, n_levels >= 2).")
    if group_sizes.shape != (n_groups,) or int(group_sizes.sum()) != particles.shape[0]:
        raise ValueError(f"group_sizes must hold {n_groups} sizes summing to the {particles.shape[0]} particles.")
    device, dtype = particles.device, particles.dtype
    group = torch.repeat_interleave(torch.arange(n_groups, device=device), group_sizes.to(device))  # (n,)
    theta = directions.to(particles)
    projections = project(particles, theta)  # (L, n)
    bins, within = uniform_bins(projections, n_bins)
    cells = group.unsqueeze(0) * n_bins + bins  # (L, n): the particle's (group, bin) cell
    counts = torch.zeros(n_directions, n_groups * n_bins, dtype=dtype, device=device)
    counts.scatter_add_(1, cells, torch.ones_like(projections))
    cumulative = counts.view(n_directions, n_groups, n_bins).cumsum(dim=2)
    edge_levels = torch.cat([torch.zeros_like(cumulative[:, :, :1]), cumulative], dim=2)
    edge_levels = edge_levels / group_sizes.to(device, dtype).clamp(min=1).view(1, n_groups, 1)  # (L, C, B + 1)
    # Each group's transport map at its bin edges: its target quantile function at its CDF there.
    table = target_quantiles.to(particles).reshape(n_groups * n_directions, n_levels)
    rows_levels = edge_levels.permute(1, 0, 2).reshape(n_groups * n_directions, n_bins + 1)
    edge_maps = interpolate_sorted(table, rows_levels).view(n_groups, n_directions, n_bins + 1)
    edge_maps = edge_maps.permute(1, 0, 2).reshape(n_directions, n_groups * (n_bins + 1))
    edge_index = group.unsqueeze(0) * (n_bins + 1) + bins
    left = edge_maps.gather(1, edge_index)
    transported = left + within * (edge_maps.gather(1, edge_index + 1) - left)
    return -((theta @ (projections - transported)).T) / n_directions

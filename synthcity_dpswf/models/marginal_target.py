r"""What generation reads from a pool of marginal releases: consistent table estimates, the flow target over
them, and the unit-cube particle space with its map back to level codes. All post-processing of the pool.

Estimates (``marginal_estimates``), from the releases summed over rounds:

1. the number of counted records, :math:`\hat n`, the mean over columns of each one-way table's total (of the
   releases alone);
2. every fine one-way table, combined cell by cell with another release's measurement of it where the pool holds
   one (a DP domain's: ``ReleasePool.one_way``; both rescaled to :math:`\hat n` records and weighted by the inverse
   of their noise variance, ``combine_measurements``), to probabilities (``math.histograms.to_probabilities``:
   projection onto the simplex);
3. every column's coarse margin from all the released tables that contain it, weighted by the inverse of their
   noise variance (the fine one-way table summed over a coarse level: width x s^2; a two-way table's margin:
   :math:`\bar K_k s^2`), projected onto the simplex (``consensus_margin``);
4. every two-way table projected onto the simplex, then raked to the two consensus margins (``rake``): the
   tables are non-negative, sum to one and agree on every shared margin.

The flow (``MarginalReleaseTarget``) moves particles :math:`x \in [0, 1]^d` along directions in the plane of
each released pair, towards the quantiles of that pair's table (``math.histograms.table_quantiles``), one step
covering many pairs at once.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from synthcity_dpswf.math import TargetSlice, quantile_levels
from synthcity_dpswf.math.checks import check_positive_int
from synthcity_dpswf.math.histograms import (
    coarsen,
    consensus_margin,
    fine_positions,
    histogram_quantiles,
    pair_directions,
    rake,
    table_quantiles,
    to_probabilities,
)
from synthcity_dpswf.models.state import ReleasePool
from synthcity_dpswf.privacy import MarginalLayout

ANGLES_PER_PAIR = 16
"""Directions per released pair (a half circle, axes included)."""

POINTS_PER_TABLE = 8192
"""Stratified points per table behind its quantile functions (quantile error of order 1 / 8192 in level)."""

TABLE_SEED = 0
"""Public seed of the points drawn inside the cells (numerical integration, the same for every run)."""


@dataclass(frozen=True)
class MarginalEstimates:
    """Consistent probabilities read from a pool of marginal releases (module docstring).

    Attributes:
        layout: the public tables.
        fine: fine one-way probabilities per column, ``(K_j,)``.
        coarse: consensus coarse margins per column, ``(K̄_j,)``.
        pairs: raked two-way probabilities per pair, ``(K̄_j, K̄_k)``.
        n_counted: estimated number of records counted over all releases.
    """

    layout: MarginalLayout
    fine: list[torch.Tensor]
    coarse: list[torch.Tensor]
    pairs: dict[tuple[int, int], torch.Tensor]
    n_counted: float


def marginal_estimates(pool: ReleasePool) -> MarginalEstimates:
    """The module docstring's four steps, on ``pool``'s releases summed over rounds (computed once per pool)."""
    if pool.kind != "marginal" or pool.options.layout is None:
        raise ValueError("marginal estimates are read from a pool of 'marginal' releases.")
    if "marginal_estimates" not in pool.cache:
        pool.cache["marginal_estimates"] = _estimate(pool)
    return pool.cache["marginal_estimates"]


def _estimate(pool: ReleasePool) -> MarginalEstimates:
    assert pool.options.layout is not None
    layout = pool.options.layout
    counts = pool.releases.to(torch.float64).sum(dim=0)
    variance = float((pool.noise_std.to(torch.float64) ** 2).sum())  # per count, summed over rounds
    n_counted = float(torch.stack([table.sum() for table in layout.split(counts)[0]]).mean())
    if n_counted <= 0:  # only noise can make it so: no information, uniform tables
        n_counted = 1.0
    one_way, two_way = layout.split(counts)
    cell_variances = [torch.full_like(table, variance) for table in one_way]
    for column, (counts, stds, counted) in pool.one_way.items():
        one_way[column], cell_variances[column] = combine_measurements(one_way[column], variance, counts, stds**2, n_counted / counted)
    fine = [to_probabilities(table, n_counted) for table in one_way]
    coarse = []
    for column, table in enumerate(one_way):
        n_coarse = layout.coarse_levels[column]
        runs = layout.has_missing(column), layout.starts(column)
        estimates = [coarsen(table, n_coarse, *runs)]
        # a coarse cell sums its fine cells' noise: the largest such sum bounds every cell's variance
        variances = [float(coarsen(cell_variances[column], n_coarse, *runs).max())]
        for (j, k), pair_table in two_way.items():
            if column == j:
                estimates.append(pair_table.sum(dim=1))
                variances.append(variance * layout.coarse_levels[k])
            elif column == k:
                estimates.append(pair_table.sum(dim=0))
                variances.append(variance * layout.coarse_levels[j])
        coarse.append(consensus_margin(estimates, variances, n_counted))
    pairs = {(j, k): rake(to_probabilities(table, n_counted), coarse[j], coarse[k]) for (j, k), table in two_way.items()}
    return MarginalEstimates(layout, fine, coarse, pairs, n_counted)


def combine_measurements(
    counts: torch.Tensor, variance: float, measured: torch.Tensor, measured_variances: torch.Tensor, scale: float
) -> tuple[torch.Tensor, torch.Tensor]:
    r"""Noisy counts ``counts`` (a fine one-way table, or a whole release vector; noise variance ``variance`` per cell)
    combined with another release's measurement of them (``measured``, variances ``measured_variances``, counting ``1 / scale`` times as many records):
    per cell :math:`\hat c = (c / v + \lambda m / (\lambda^2 w)) / (1 / v + 1 / (\lambda^2 w))` with
    :math:`\lambda` = ``scale``, the least-squares combination of two independent unbiased estimates, and its
    variance :math:`(1 / v + 1 / (\lambda^2 w))^{-1}`. Returns ``(combined counts, their variances)``."""
    rescaled = scale**2 * measured_variances.to(torch.float64)
    weight, other = 1.0 / variance, 1.0 / rescaled.clamp(min=1e-300)
    combined = (counts.to(torch.float64) * weight + scale * measured.to(torch.float64) * other) / (weight + other)
    return combined.to(counts.dtype), (1.0 / (weight + other)).to(counts.dtype)


class MarginalReleaseTarget:
    r"""Flow target over marginal releases: for every released pair, ``ANGLES_PER_PAIR`` directions of its plane
    with the quantile functions of its table along them (and the axis of every column in no pair, with its
    coarse margin), computed once per pool; each step takes ``n_directions`` of them at random (from ``seed``).

    A direction touches two coordinates only, so the drift is averaged per coordinate: the slice's
    ``coordinate_scale`` is :math:`L / \sum_l \theta_{li}^2`, which makes a step of size 1 move a coordinate by
    the transport it is asked for (a translation along coordinate i is recovered exactly).
    """

    def __init__(
        self,
        pool: ReleasePool,
        n_directions: int = 70,
        n_levels: int = 1000,
        seed: int = 0,
        device: torch.device | str = "cpu",
    ) -> None:
        check_positive_int("n_directions", n_directions)
        key = ("marginal_slices", n_levels)
        if key not in pool.cache:
            pool.cache[key] = self._slices(pool, n_levels)
        directions, quantiles = pool.cache[key]
        self.device = torch.device(device)
        self.directions = directions.to(self.device, torch.float32)  # (d, S)
        self.quantiles = quantiles.to(self.device, torch.float32)  # (S, n_levels)
        self.n_directions = min(n_directions, self.directions.shape[1])
        self._dim = directions.shape[0]
        self._generator = torch.Generator().manual_seed(seed)

    @staticmethod
    def _slices(pool: ReleasePool, n_levels: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Every slice's direction ``(d, S)`` and quantile function ``(S, n_levels)``, computed once per pool (the
        points inside the cells are drawn from the fixed public seed ``TABLE_SEED``)."""
        estimates = marginal_estimates(pool)
        layout = estimates.layout
        levels = quantile_levels(n_levels, torch.float32)
        generator = torch.Generator().manual_seed(TABLE_SEED)
        plane = pair_directions(ANGLES_PER_PAIR)
        directions, quantiles = [], []
        for (j, k), table in estimates.pairs.items():
            block = torch.zeros(layout.n_columns, ANGLES_PER_PAIR, dtype=torch.float64)
            block[j], block[k] = plane[0], plane[1]
            directions.append(block)
            quantiles.append(table_quantiles(table, plane, levels, POINTS_PER_TABLE, generator))
        covered = {column for pair in estimates.pairs for column in pair}
        for column in range(layout.n_columns):
            if column not in covered:
                axis = torch.zeros(layout.n_columns, 1, dtype=torch.float64)
                axis[column] = 1.0
                directions.append(axis)
                edges = torch.linspace(0.0, 1.0, layout.coarse_levels[column] + 1, dtype=torch.float64)
                quantiles.append(histogram_quantiles(estimates.coarse[column][None, :], edges, levels))
        return torch.cat(directions, dim=1), torch.cat(quantiles)

    @property
    def dim(self) -> int:
        return self._dim

    def target_slice(self, step: int) -> TargetSlice:
        return drawn_slice(self.directions, self.quantiles, self.n_directions, self._generator, self.device)


def drawn_slice(directions: torch.Tensor, quantiles: torch.Tensor, n_directions: int, generator: torch.Generator,
                device: torch.device) -> TargetSlice:
    r"""``n_directions`` of the slices ``directions`` ``(d, S)`` drawn at random (``generator``), with their quantile
    functions (``quantiles``: ``(S, G)``, or ``(C, S, G)`` for C groups) and the per-coordinate drift scale
    :math:`L / \sum_l \theta_{li}^2` (``MarginalReleaseTarget``; 0 for a coordinate no drawn direction touches)."""
    chosen = torch.randperm(directions.shape[1], generator=generator)[:n_directions].to(device)
    drawn = directions[:, chosen]
    weight = (drawn**2).sum(dim=1)
    scale = torch.where(weight > 0, n_directions / weight.clamp(min=1e-12), torch.zeros_like(weight))
    return TargetSlice(drawn, quantiles.index_select(-2, chosen), 0.0, coordinate_scale=scale)


class MarginalParticleSpace:
    """Particles of the marginal kind: the unit cube, started from the product of the consensus coarse margins
    (each coordinate independent, piecewise uniform), mapped back to fine level positions by
    ``math.histograms.fine_positions`` with the fine one-way tables."""

    resamples = True

    def __init__(self, pool: ReleasePool, device: torch.device | str = "cpu") -> None:
        self.estimates = marginal_estimates(pool)
        self.device = torch.device(device)

    def initial_particles(self, count: int, generator: torch.Generator) -> torch.Tensor:
        layout = self.estimates.layout
        columns = []
        for column, margin in enumerate(self.estimates.coarse):
            edges = torch.linspace(0.0, 1.0, layout.coarse_levels[column] + 1, dtype=torch.float64)
            uniform = torch.rand(count, generator=generator, dtype=torch.float64)
            columns.append(histogram_quantiles(margin[None, :], edges, uniform)[0])
        return torch.stack(columns, dim=1).to(self.device, torch.float32)

    def initial_groups(self, sizes: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
        """One group's start for all: ``initial_particles`` of their sum."""
        return self.initial_particles(int(sizes.sum()), generator)

    def resample(self, particles: torch.Tensor, count: int, generator: torch.Generator) -> torch.Tensor:
        r"""``count`` particles, each a flowed particle drawn uniformly at random with its position inside its coarse
        cell drawn anew, uniformly: the coarse joint structure is the flowed particles', and ``to_records`` then draws
        each fine level from the released fine one-way table given its coarse level (the tables measure nothing finer
        jointly). Post-processing of the flow's output."""
        layout = self.estimates.layout
        chosen = particles.detach().cpu()[torch.randint(len(particles), (count,), generator=generator)].to(torch.float64)
        levels = torch.tensor(layout.coarse_levels, dtype=torch.float64)
        cells = (chosen.clamp(0.0, 1.0) * levels).floor().clamp(max=levels - 1)
        inside = torch.rand(cells.shape, generator=generator, dtype=torch.float64)
        return ((cells + inside) / levels).to(self.device, torch.float32)

    def to_records(self, particles: torch.Tensor) -> torch.Tensor:
        """Continuous fine positions ``(n, d)`` in :math:`[0, K_j)`: the floor of each is the level code."""
        layout = self.estimates.layout
        x = particles.detach().cpu()
        positions = [
            fine_positions(x[:, column], self.estimates.fine[column], layout.coarse_levels[column],
                           layout.has_missing(column), layout.starts(column))
            for column in range(layout.n_columns)
        ]
        return torch.stack(positions, dim=1).to(torch.float32)

r"""What generation reads from marginal releases counted per class of a named target (``MarginalLayout.condition``;
privacy.md, "Tables conditioned on a named target"). All post-processing of the pool.

Class c's block is a marginal release of the records of class c alone, so it is read as one
(``models.marginal_target.marginal_estimates`` on the block: ``class_pools``), with one constraint known in advance:
the target column t of a class-c record lies in the fine levels of coarse level c (``MarginalLayout.class_levels``).
Its fine table is set to zero outside them and renormalised, and its coarse margin is the point mass on c
(``held_to_class``).

The flow (``ConditionalMarginalTarget``) moves C groups of particles at once (``math.flow.run_flow``'s
``group_sizes``), group c towards class c's tables along the same directions (the layout, hence the pair planes, is
the same for every class); the groups' sizes are proportional to the released class totals (``target_class_weights``).
"""

from __future__ import annotations

import dataclasses
import itertools

import torch

from synthcity_dpswf.math import TargetSlice
from synthcity_dpswf.math.checks import check_positive_int
from synthcity_dpswf.math.histograms import allocate
from synthcity_dpswf.models.marginal_target import (
    MarginalEstimates,
    MarginalParticleSpace,
    MarginalReleaseTarget,
    combine_measurements,
    drawn_slice,
    marginal_estimates,
)
from synthcity_dpswf.models.state import ReleasePool
from synthcity_dpswf.privacy import MarginalLayout
from synthcity_dpswf.privacy.mechanisms import MarginalRelease


def conditioned_layout(pool: ReleasePool) -> MarginalLayout:
    """The layout of a pool of marginal releases counted per class of a named target (an error otherwise)."""
    layout = pool.options.layout
    if pool.kind != MarginalRelease.name or layout is None or layout.condition is None:
        raise ValueError("class pools are read from marginal releases counted per class of a named target.")
    return layout


def class_pools(pool: ReleasePool) -> list[ReleasePool]:
    """One pool of unconditioned marginal releases per class: the releases' block of that
    class, with a DP domain's one-way counts joined (``one_way_corrections``) and its estimates held to the class
    (``held_to_class``); computed once per pool."""
    if "class_pools" not in pool.cache:
        layout = conditioned_layout(pool)
        block_layout = layout.unconditioned()
        options = dataclasses.replace(pool.options, layout=block_layout)
        releases = layout.blocks(pool.releases).to(torch.float64).clone()  # (K, C, cells)
        releases[0] += one_way_corrections(layout, releases, pool)
        pools = []
        for label in range(layout.classes):
            block_pool = ReleasePool(MarginalRelease.name, options, releases[:, label], pool.noise_std, None, pool.dim)
            block_pool.cache["marginal_estimates"] = held_to_class(marginal_estimates(block_pool), layout, label)
            pools.append(block_pool)
        pool.cache["class_pools"] = pools
    return pool.cache["class_pools"]


def one_way_corrections(layout: MarginalLayout, releases: torch.Tensor, pool: ReleasePool) -> torch.Tensor:
    r"""What joining a DP domain's one-way counts (``pool.one_way``: counts of every class together) adds to each class's
    one-way tables ``(C, cells)``. For column j (not the target), the classes' tables summed over the releases,
    :math:`x_c` (variance v per cell), sum to :math:`S = \sum_c x_c` (variance Cv); the domain's counts measure the same
    total, and ``combine_measurements`` gives its least-squares estimate T from both; the least-squares estimates of
    the parts given T are :math:`x_c + (T - S) / C` (equal variances). The target's own table is left alone: its
    classes hold disjoint levels."""
    block_layout = layout.unconditioned()
    summed = releases.sum(dim=0)  # (C, cells)
    corrections = torch.zeros_like(summed)
    if not pool.one_way:
        return corrections
    variance = float((pool.noise_std.to(torch.float64) ** 2).sum())
    counted = max(sum(class_total(block_layout, block) for block in summed), 1.0)
    starts = [0, *itertools.accumulate(layout.levels)]
    for column, (counts, stds, measured_records) in pool.one_way.items():
        if column == layout.condition:
            continue
        cells = slice(starts[column], starts[column + 1])
        total = summed[:, cells].sum(dim=0)
        combined, _ = combine_measurements(total, layout.classes * variance, counts, stds**2, counted / measured_records)
        corrections[:, cells] = (combined - total) / layout.classes
    return corrections


def class_total(layout: MarginalLayout, block: torch.Tensor) -> float:
    """The records one block counts, estimated as the mean of its one-way tables' totals."""
    one_way, _ = layout.split(block.to(torch.float64))
    return float(torch.stack([table.sum() for table in one_way]).mean())


def held_to_class(estimates: MarginalEstimates, layout: MarginalLayout, label: int) -> MarginalEstimates:
    """``estimates`` of class ``label``'s block with the target column held to the class: its fine table zero outside
    the class's fine levels and renormalised (uniform over them where nothing is left), its coarse margin the point
    mass on ``label``."""
    assert layout.condition is not None
    target = layout.condition
    allowed = layout.class_levels(label).to(estimates.fine[target].dtype)
    fine = estimates.fine[target] * allowed
    fine = fine / fine.sum() if float(fine.sum()) > 0 else allowed / allowed.sum()
    coarse = torch.zeros_like(estimates.coarse[target])
    coarse[label] = 1.0
    fines, coarses = list(estimates.fine), list(estimates.coarse)
    fines[target], coarses[target] = fine, coarse
    return dataclasses.replace(estimates, fine=fines, coarse=coarses)


def target_class_weights(pool: ReleasePool) -> torch.Tensor:
    """The classes' shares ``(C,)`` from the released counts: each block's estimated total summed over the releases,
    clipped at zero and normalised; uniform when no class has a positive estimate."""
    layout = conditioned_layout(pool)
    block_layout = layout.unconditioned()
    blocks = layout.blocks(pool.releases.to(torch.float64).sum(dim=0))
    totals = torch.tensor([class_total(block_layout, block) for block in blocks], dtype=torch.float64).clamp(min=0.0)
    if float(totals.sum()) <= 0:
        return torch.full_like(totals, 1.0 / len(totals))
    return totals / totals.sum()


class ConditionalMarginalTarget:
    """Flow target of C particle groups: group c towards class c's tables (``MarginalReleaseTarget`` of its class
    pool), the same ``n_directions`` directions for every group at each step (slices with ``(C, L, G)`` quantiles for
    ``run_flow(..., group_sizes=...)``), drift scaled per coordinate as ``MarginalReleaseTarget`` does."""

    def __init__(
        self, pool: ReleasePool, n_directions: int = 70, n_levels: int = 1000, seed: int = 0,
        device: torch.device | str = "cpu",
    ) -> None:
        check_positive_int("n_directions", n_directions)
        targets = [MarginalReleaseTarget(block, n_directions, n_levels, seed, device) for block in class_pools(pool)]
        self.directions = targets[0].directions  # (d, S): the layout's, the same for every class
        self.quantiles = torch.stack([target.quantiles for target in targets])  # (C, S, n_levels)
        self.n_directions = targets[0].n_directions
        self.device = torch.device(device)
        self._dim = pool.dim
        self._generator = torch.Generator().manual_seed(seed)

    @property
    def dim(self) -> int:
        return self._dim

    def target_slice(self, step: int) -> TargetSlice:
        return drawn_slice(self.directions, self.quantiles, self.n_directions, self._generator, self.device)


class ConditionalParticleSpace:
    """Particles of a conditioned marginal release: C groups stored one after another, group c started from class
    c's margins and mapped back to levels through class c's fine tables (``MarginalParticleSpace`` of its class
    pool); a particle's class is its coarse cell of the target column, which its class's target never leaves."""

    resamples = True

    def __init__(self, pool: ReleasePool, device: torch.device | str = "cpu") -> None:
        self.layout = conditioned_layout(pool)
        self.spaces = [MarginalParticleSpace(block, device) for block in class_pools(pool)]
        self.weights = target_class_weights(pool)

    def initial_groups(self, sizes: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
        """``sizes[c]`` starting particles of each class c, class after class."""
        return torch.cat([space.initial_particles(int(size), generator) for space, size in zip(self.spaces, sizes)])

    def initial_particles(self, count: int, generator: torch.Generator) -> torch.Tensor:
        """``count`` starting particles, split over the classes by the released shares (largest remainders)."""
        return self.initial_groups(allocate(count, self.weights), generator)

    def resample(self, particles: torch.Tensor, count: int, generator: torch.Generator) -> torch.Tensor:
        """``MarginalParticleSpace.resample``: a drawn particle keeps its coarse cells, its target class among them."""
        return self.spaces[0].resample(particles, count, generator)

    def to_records(self, particles: torch.Tensor) -> torch.Tensor:
        """Fine positions of every particle through its own class's fine tables."""
        assert self.layout.condition is not None
        classes = self.layout.classes
        cells = (particles[:, self.layout.condition].detach().cpu().clamp(0.0, 1.0) * classes).floor().clamp(max=classes - 1)
        records = torch.empty(particles.shape, dtype=torch.float32)
        for label, space in enumerate(self.spaces):
            rows = cells == label
            if bool(rows.any()):
                records[rows] = space.to_records(particles[rows.to(particles.device)])
        return records

"""What generation knows of each release kind beyond its privacy (which is the mechanism's, in ``privacy.mechanisms``):
the flow target it reads from a pool of the kind's releases (one builder per kind), the space its particles live in
(the Euclidean ball here; the unit cube of a marginal release in ``models.marginal_target``), and its defaults. One
entry per kind, keyed by the mechanism's name (``KINDS``), so that no generator or plugin tests a kind's name.

Every target reads only the pool (released payloads, public directions, public parameters): generation is
post-processing and costs no budget.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Literal, Protocol

import torch

from synthcity_dpswf.math import EmpiricalTarget, TargetSlice, TargetSource, quantile_levels, smoothed_quantiles
from synthcity_dpswf.math.checks import check_non_negative, check_positive_int
from synthcity_dpswf.math.histograms import CountEstimator, bin_edges, bin_probabilities, histogram_quantiles
from synthcity_dpswf.models.conditional_target import (
    ConditionalMarginalTarget,
    ConditionalParticleSpace,
    target_class_weights,
)
from synthcity_dpswf.models.marginal_target import MarginalParticleSpace, MarginalReleaseTarget
from synthcity_dpswf.models.state import FlowSettings, ReleasePool
from synthcity_dpswf.privacy import MECHANISMS

Order = Literal["random", "sequential"]


class ProjectedReleaseTarget:
    r"""Flow target over projected releases :math:`R_k = Y_{B_k} \Theta_k + Z_k`.

    Step k uses one release (in order with ``order="sequential"``, the paper's way; uniformly at random with
    ``"random"``), a random subset of ``n_directions`` of its columns (the paper's :math:`M_\theta` among
    :math:`N_\theta`, redrawn every step), optionally a batch of its rows, and tops its noise up to
    ``smoothing`` (``None``: each release's own noise).
    """

    def __init__(
        self,
        pool: ReleasePool,
        n_directions: int | None = None,
        smoothing: float | None = None,
        n_levels: int = 1000,
        batch_size: int | None = None,
        order: Order = "random",
        seed: int = 0,
        device: torch.device | str = "cpu",
    ) -> None:
        if pool.kind != "projected" or pool.directions is None:
            raise ValueError("ProjectedReleaseTarget needs a pool of projected releases.")
        available = pool.directions.shape[2]
        self.n_directions = available if n_directions is None else n_directions
        check_positive_int("n_directions", self.n_directions)
        if self.n_directions > available:
            raise ValueError(f"n_directions={self.n_directions} exceeds the {available} released directions; lower it.")
        largest = float(pool.noise_std.max())
        if smoothing is not None:
            check_non_negative("smoothing", smoothing)
            if smoothing < largest:
                raise ValueError(
                    f"smoothing={smoothing:.6g} is below the release noise ({largest:.6g}); raise it or pass None."
                )
        if batch_size is not None:
            check_positive_int("batch_size", batch_size)
        if order not in ("random", "sequential"):
            raise ValueError(f"order must be 'random' or 'sequential', got {order!r}.")
        self.pool = pool
        self.smoothing = smoothing
        self.batch_size = batch_size
        self.order = order
        self.device = torch.device(device)
        self.levels = quantile_levels(n_levels, pool.releases.dtype, self.device)
        self._generator = torch.Generator().manual_seed(seed)

    @property
    def dim(self) -> int:
        return self.pool.dim

    def target_slice(self, step: int) -> TargetSlice:
        assert self.pool.directions is not None
        k = step % self.pool.n_releases
        if self.order == "random":
            k = int(torch.randint(self.pool.n_releases, (1,), generator=self._generator))
        columns = torch.randperm(self.pool.directions.shape[2], generator=self._generator)[: self.n_directions]
        rows = self.pool.releases[k][:, columns]
        if self.batch_size is not None and self.batch_size < rows.shape[0]:
            rows = rows[torch.randperm(rows.shape[0], generator=self._generator)[: self.batch_size]]
        release_noise = float(self.pool.noise_std[k])
        total = release_noise if self.smoothing is None else self.smoothing
        added = math.sqrt(max(total**2 - release_noise**2, 0.0))
        # The released projections are (b, M): quantiles of each column, i.e. "samples" with identity directions.
        identity = torch.eye(self.n_directions, dtype=rows.dtype)
        quantiles = smoothed_quantiles(rows, identity, added, self.levels.cpu(), self._generator)
        directions = self.pool.directions[k][:, columns]
        return TargetSlice(directions.to(self.device), quantiles.to(self.device), total)


def class_totals(pool: ReleasePool) -> torch.Tensor:
    r"""Estimated records per class, summed over the releases, ``(C,)``: for release k and class c, the mean
    over its L directions of the row sums :math:`\sum_g C[c, l, g]` (each row counts every record of the class
    once, plus noise of variance :math:`G s^2`)."""
    if pool.kind != "projected_histogram":
        raise ValueError("class totals are read from projected-histogram releases only.")
    return pool.releases.to(torch.float64).sum(dim=-1).mean(dim=-1).sum(dim=0)


def class_weights(pool: ReleasePool) -> torch.Tensor:
    """Class proportions ``(C,)`` from the released counts (post-processing): the estimated totals clipped at
    zero and normalised; uniform when no class has a positive estimate."""
    totals = class_totals(pool).clamp(min=0.0)
    if float(totals.sum()) <= 0:
        return torch.full_like(totals, 1.0 / len(totals))
    return totals / totals.sum()


class HistogramReleaseTarget:
    r"""Flow target over projected-histogram releases: the quantile functions of every released direction
    (all releases pooled), from the noisy counts by ``bin_probabilities`` (``estimator``) and
    ``histogram_quantiles``, computed once; each step takes ``n_directions`` of them at random. No smoothing:
    the noise is in the counts, not in the positions.

    Args:
        pool: a pool of ``projected_histogram`` releases.
        class_index: which class's counts (0 for releases without labels); ``None``: every class at once,
            slices with ``(C, L, G)`` quantiles for ``run_flow(..., group_sizes=...)``.
        n_directions: directions per step (at most the number released).
        n_levels: points of the quantile grid.
        estimator: ``"simplex"`` or ``"clip"`` (``math.histograms.bin_probabilities``).
        seed: seeds the choice of directions per step (public).
        device: where the slices are returned.
    """

    def __init__(
        self,
        pool: ReleasePool,
        class_index: int | None = 0,
        n_directions: int = 70,
        n_levels: int = 1000,
        estimator: CountEstimator = "simplex",
        seed: int = 0,
        device: torch.device | str = "cpu",
    ) -> None:
        if pool.kind != "projected_histogram" or pool.directions is None:
            raise ValueError("HistogramReleaseTarget needs a pool of projected-histogram releases.")
        k, n_classes, n_released, n_bins = pool.releases.shape
        if class_index is not None and not 0 <= class_index < n_classes:
            raise ValueError(f"class_index must lie in 0..{n_classes - 1}, got {class_index!r}.")
        check_positive_int("n_directions", n_directions)
        self.n_directions = min(n_directions, k * n_released)
        classes = range(n_classes) if class_index is None else [class_index]
        levels = quantile_levels(n_levels, torch.float32)
        edges = bin_edges(n_bins, pool.options.radius, torch.float64)
        self.device = torch.device(device)
        tables = []
        for label in classes:
            counts = pool.releases[:, label].to(torch.float64)  # (K, L, G)
            totals = counts.sum(dim=-1).mean(dim=-1, keepdim=True).expand(k, n_released)  # (K, L)
            probabilities = bin_probabilities(counts.reshape(-1, n_bins), totals.reshape(-1), estimator)
            tables.append(histogram_quantiles(probabilities, edges, levels))  # (K L, n_levels)
        self.grouped = class_index is None
        self.quantiles = torch.stack(tables).to(self.device)  # (classes, K L, n_levels)
        self.directions = pool.directions.permute(1, 0, 2).reshape(pool.dim, -1).to(self.device)  # (d, K L)
        self._dim = pool.dim
        self._generator = torch.Generator().manual_seed(seed)

    @property
    def dim(self) -> int:
        return self._dim

    def target_slice(self, step: int) -> TargetSlice:
        chosen = torch.randperm(self.quantiles.shape[1], generator=self._generator)[: self.n_directions].to(self.device)
        quantiles = self.quantiles[:, chosen]
        return TargetSlice(self.directions[:, chosen], quantiles if self.grouped else quantiles[0], 0.0)


TargetBuilder = Callable[[ReleasePool, FlowSettings, int, int, torch.device, "int | None"], TargetSource]
"""``(pool, settings, n_levels, seed, device, class_index) -> TargetSource``; ``class_index=None`` asks for
every class at once (class-conditional kinds only)."""


def _order(pool: ReleasePool, settings: FlowSettings) -> Order:
    if settings.reuse == "once" and pool.n_releases == 1:
        raise ValueError("reuse='once' needs per-step releases; this model made a single release.")
    return "sequential" if settings.reuse == "once" else "random"


def record_target(pool: ReleasePool, settings: FlowSettings, n_levels: int, seed: int, device: torch.device, class_index: int | None) -> TargetSource:
    """Noisy records as target samples, smoothed to the release noise (or ``settings.smoothing``)."""
    order = _order(pool, settings)
    release_noise = float(pool.noise_std.max())
    rows = pool.releases.reshape(-1, pool.dim).to(device)
    batch_size = pool.releases.shape[1] if order == "sequential" else settings.flow_batch_size
    if batch_size is not None:
        batch_size = min(batch_size, rows.shape[0])
    smoothing = release_noise if settings.smoothing is None else settings.smoothing
    return EmpiricalTarget(
        rows, settings.n_directions, smoothing, n_levels, batch_size, seed, sample_noise=release_noise, batch_order=order
    )


def projected_target(pool: ReleasePool, settings: FlowSettings, n_levels: int, seed: int, device: torch.device, class_index: int | None) -> TargetSource:
    """Noisy projections: per step one release and a subset of its directions (``ProjectedReleaseTarget``)."""
    assert pool.directions is not None
    order = _order(pool, settings)
    return ProjectedReleaseTarget(
        pool, min(settings.n_directions, pool.directions.shape[2]), settings.smoothing, n_levels,
        settings.flow_batch_size if order == "random" else None, order, seed, device,
    )


def histogram_target(pool: ReleasePool, settings: FlowSettings, n_levels: int, seed: int, device: torch.device, class_index: int | None) -> TargetSource:
    """Noisy counts: the released directions' quantile functions (``HistogramReleaseTarget``)."""
    _order(pool, settings)  # a single release cannot be used once per step
    if settings.reuse == "once":
        raise ValueError("reuse='once' is the paper's way for record and projected releases; histogram releases are pooled.")
    if settings.smoothing:
        raise ValueError("histogram releases carry their noise in the counts: leave smoothing at None (or 0).")
    return HistogramReleaseTarget(pool, class_index, settings.n_directions, n_levels, settings.count_estimator, seed, device)


def marginal_target(pool: ReleasePool, settings: FlowSettings, n_levels: int, seed: int, device: torch.device, class_index: int | None) -> TargetSource:
    """Noisy tables: directions in the released pairs' planes and their tables' quantiles (``MarginalReleaseTarget``)."""
    if settings.reuse == "once":
        raise ValueError("reuse='once' is the paper's way for record and projected releases; marginal releases are pooled.")
    if settings.smoothing:
        raise ValueError("marginal releases carry their noise in the counts: leave smoothing at None (or 0).")
    layout = pool.options.layout
    if layout is not None and layout.condition is not None:
        if class_index is not None:
            raise ValueError("tables counted per class of a named target flow every class at once (class_index=None).")
        return ConditionalMarginalTarget(pool, settings.n_directions, n_levels, seed, device)
    if class_index not in (0, None):
        raise ValueError("marginal releases have no classes: the label is one more column of the table.")
    return MarginalReleaseTarget(pool, settings.n_directions, n_levels, seed, device)


class ParticleSpace(Protocol):
    """Where a kind's particles start and how they become records of the fitted space."""

    resamples: bool
    """Whether ``resample`` can draw more particles from flowed ones (``FlowSettings.flow_particles``)."""

    def initial_particles(self, count: int, generator: torch.Generator) -> torch.Tensor:
        """``count`` starting particles (from the public ``generator``)."""
        ...

    def initial_groups(self, sizes: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
        """Starting particles of groups of ``sizes`` ``(C,)``, stored group after group (a space whose start does not
        depend on the group: ``initial_particles`` of their sum)."""
        ...

    def to_records(self, particles: torch.Tensor) -> torch.Tensor:
        """Records in the space ``fit`` was given, from final particles."""
        ...

    def resample(self, particles: torch.Tensor, count: int, generator: torch.Generator) -> torch.Tensor:
        """``count`` particles drawn from flowed ``particles`` (post-processing; only where ``resamples``)."""
        ...


class EuclideanParticleSpace:
    """Particles of the record and projected kinds: N(0, r^2 / d I) to start (norm about r); they are records."""

    def __init__(self, dim: int, radius: float, device: torch.device | str = "cpu") -> None:
        self.dim, self.radius, self.device = dim, radius, torch.device(device)

    def initial_particles(self, count: int, generator: torch.Generator) -> torch.Tensor:
        return (torch.randn(count, self.dim, generator=generator) * (self.radius / math.sqrt(self.dim))).to(self.device)

    def initial_groups(self, sizes: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
        return self.initial_particles(int(sizes.sum()), generator)

    def to_records(self, particles: torch.Tensor) -> torch.Tensor:
        return particles

    resamples = False  # a Euclidean flow's particles carry every released detail: each row is flowed

    def resample(self, particles: torch.Tensor, count: int, generator: torch.Generator) -> torch.Tensor:
        raise NotImplementedError("Euclidean particles are not resampled; flow every row (flow_particles=None).")


def euclidean_space(pool: ReleasePool, radius: float, device: torch.device) -> ParticleSpace:
    """The records' own space: the ball of radius r (``EuclideanParticleSpace``)."""
    return EuclideanParticleSpace(pool.dim, radius, device)


def cube_space(pool: ReleasePool, radius: float, device: torch.device) -> ParticleSpace:
    """The unit cube of level coordinates (``MarginalParticleSpace``; one group per class of a named target:
    ``ConditionalParticleSpace``)."""
    if conditioned(pool):
        return ConditionalParticleSpace(pool, device)
    return MarginalParticleSpace(pool, device)


def conditioned(pool: ReleasePool) -> bool:
    """Whether ``pool``'s tables are counted per class of a named target (``MarginalLayout.condition``)."""
    return pool.options.layout is not None and pool.options.layout.condition is not None


def no_groups(pool: ReleasePool) -> torch.Tensor | None:
    """Kinds whose particles flow as one group."""
    return None


def target_groups(pool: ReleasePool) -> torch.Tensor | None:
    """The released shares of a named target's classes, whose particles flow in groups; ``None`` without one."""
    return target_class_weights(pool) if conditioned(pool) else None


@dataclass(frozen=True)
class KindSpec:
    """A release kind as generation sees it.

    Attributes:
        target: builds the flow target from a pool of the kind's releases.
        particle_space: ``(pool, radius, device) -> ParticleSpace``, where particles start and how they become records.
        one_shot_directions: released directions of one release of everything (DPSWflow), when ``n_release_directions``
            is not given (1 for kinds without directions).
        per_step_directions: the same for each of K per-step releases (DPSWflow-r, DPSWgen).
        steps: flow steps the plugins run when ``n_steps`` is not given.
        flow_particles: rows flowed per generation call in the plugins (``FlowSettings.flow_particles``); ``None``:
            every row.
        rows_per_particle: beyond ``flow_particles`` x this many rows, one flowed particle per this many rows
            (``FlowSettings.rows_per_particle``); ``None``: at most ``flow_particles``.
        step_particles: beyond this many flowed particles, fewer directions a step (``FlowSettings.step_particles``);
            ``None``: never.
        groups: ``pool -> shares (C,)`` where the pool's particles flow in C groups of those shares without labels
            (a named target's classes: ``Sampling.sample``), ``None`` where they flow as one.
    """

    target: TargetBuilder
    particle_space: Callable[[ReleasePool, float, torch.device], ParticleSpace]
    one_shot_directions: int = 1
    per_step_directions: int = 1
    steps: int = 1500
    flow_particles: int | None = None
    rows_per_particle: int | None = None
    step_particles: int | None = None
    groups: Callable[[ReleasePool], torch.Tensor | None] = no_groups


KINDS: dict[str, KindSpec] = {
    # The paper's N_theta = 70 directions per projected release.
    "record": KindSpec(record_target, euclidean_space),
    "projected": KindSpec(projected_target, euclidean_space, 70, 70),
    # L = 500 for one histogram release, M = 50 for each of 100 per-step ones, 1,500 steps: chosen by CAS on a
    # validation split of MNIST (benchmarks/results/archive/histogram_settings_mnist.md).
    "projected_histogram": KindSpec(histogram_target, euclidean_space, 500, 50),
    # 300 steps: fewer raised the 2-way TV on Adult at epsilon 1, more slow generation, a flow per call; 10,000
    # flowed rows per call, or one per 10 rows beyond 100,000, a flow of more than 10,000 taking fewer directions a
    # step (the work of a step at 10,000): benchmarks/results/flow_particles*.md.
    "marginal": KindSpec(marginal_target, cube_space, steps=300, flow_particles=10_000, rows_per_particle=10,
                         step_particles=10_000, groups=target_groups),
}
"""Every registered release kind (``privacy.MECHANISMS``) as generation sees it."""


def kind_spec(name: str) -> KindSpec:
    """The ``KindSpec`` of release kind ``name``; a kind with a mechanism but no entry here cannot be generated from."""
    if name not in KINDS:
        known = "" if name in MECHANISMS else f" (and no release kind {name!r} is registered)"
        raise ValueError(f"no generation is registered for release kind {name!r}{known}; add it to models.kinds.KINDS.")
    return KINDS[name]


def build_target(
    pool: ReleasePool, settings: FlowSettings, n_levels: int, seed: int, device: torch.device, class_index: int | None = 0
) -> TargetSource:
    """The flow target of ``pool``'s kind."""
    return kind_spec(pool.kind).target(pool, settings, n_levels, seed, torch.device(device), class_index)


def flow_groups(pool: ReleasePool) -> torch.Tensor | None:
    """The shares of the groups ``pool``'s particles flow in without labels (``KindSpec.groups``)."""
    return kind_spec(pool.kind).groups(pool)


def particle_space(pool: ReleasePool, radius: float, device: torch.device | str = "cpu") -> ParticleSpace:
    """The particle space of ``pool``'s kind."""
    return kind_spec(pool.kind).particle_space(pool, radius, torch.device(device))

"""What the generators and plugins know of each release kind beyond its privacy (which is the mechanism's, in
``privacy.mechanisms``): how generation reads its pool, where its particles live, and its defaults. One entry per kind,
keyed by the mechanism's name (``KINDS``), so that no generator or plugin tests a kind's name.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch

from synthcity_dpswf.math import TargetSource
from synthcity_dpswf.models.conditional_target import ConditionalParticleSpace, class_weights
from synthcity_dpswf.models.marginal_target import MarginalParticleSpace
from synthcity_dpswf.models.settings import FlowSettings
from synthcity_dpswf.models.state import ReleasePool
from synthcity_dpswf.models.targets import (
    EuclideanParticleSpace,
    ParticleSpace,
    TargetBuilder,
    histogram_target,
    marginal_target,
    projected_target,
    record_target,
)
from synthcity_dpswf.privacy import MECHANISMS


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
    return class_weights(pool) if conditioned(pool) else None


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
        groups: ``pool -> shares (C,)`` where the pool's particles flow in C groups of those shares without labels
            (a named target's classes: ``Sampling.sample``), ``None`` where they flow as one.
    """

    target: TargetBuilder
    particle_space: Callable[[ReleasePool, float, torch.device], ParticleSpace]
    one_shot_directions: int = 1
    per_step_directions: int = 1
    steps: int = 1500
    flow_particles: int | None = None
    groups: Callable[[ReleasePool], torch.Tensor | None] = no_groups


KINDS: dict[str, KindSpec] = {
    # The paper's N_theta = 70 directions per projected release.
    "record": KindSpec(record_target, euclidean_space),
    "projected": KindSpec(projected_target, euclidean_space, 70, 70),
    # L = 500 for one histogram release, M = 50 for each of 100 per-step ones, 1,500 steps: chosen on a validation
    # split of MNIST (docs/flows.md, "Aggregate releases" and "Per-step histogram releases").
    "projected_histogram": KindSpec(histogram_target, euclidean_space, 500, 50),
    # 300 steps and 10,000 flowed rows per call: docs/flows.md, "Tables" and "Tables as users bring them".
    "marginal": KindSpec(marginal_target, cube_space, steps=300, flow_particles=10_000, groups=target_groups),
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

"""The privacy report of a fitted generator's releases: what was released, what was public, and the epsilon of the
releases under the adjacency they were calibrated for and under the other one (privacy.md, "Sampling and
composition" and "Both adjacencies in the report")."""

from __future__ import annotations

import math

import torch

from synthcity_dpswf.models.pool import ReleasePool
from synthcity_dpswf.models.state import GeneratorState
from synthcity_dpswf.privacy import (
    OtherAdjacency,
    PrivacyReport,
    ReleaseAccountant,
    analytic_gaussian_epsilon,
)
from synthcity_dpswf.privacy.gaussian import composed_multiplier
from synthcity_dpswf.privacy.neighbouring import group_of_two


def release_report(
    model: GeneratorState,
    pool: ReleasePool,
    delta: float,
    accountant: ReleaseAccountant,
    noise_multiplier: float,
    steps: int,
) -> PrivacyReport:
    """The privacy report of ``model``'s ``pool``, made with multiplier ``noise_multiplier`` (0 when epsilon is inf)."""
    mechanism, neighbouring = model.mechanism, model.neighbouring
    n, b, q = accountant.n_records, accountant.batch_size, accountant.sample_rate
    size = "" if n is None else f"n = {n} records, "  # n is private under add/remove: never printed
    if q == 1 and steps == 1:
        sampling = f"none: one release of all {'' if n is None else f'n = {n} '}records (q = 1, one step)"
    elif n is None:
        sampling = (
            f"Poisson: every record independently with probability q = {q:.6g}, independently across the {steps} "
            "steps (batch sizes vary and are not released)"
        )
    else:
        sampling = f"uniform subsets of exactly b = {b} of n = {n} records, independent across the {steps} steps"
    thetas = [None] if pool.directions is None else list(pool.directions)
    sensitivity = max(mechanism.sensitivity_for(theta, neighbouring) for theta in thetas)
    if mechanism.takes_level_codes:
        public = [
            f"{size}d = {pool.dim} columns",
            "the tables (levels, coarse levels and pairs of the MarginalLayout), fixed before these releases (from "
            "public numbers, or from an earlier release accounted below: a DP domain, a paid pair selection)",
        ]
    else:
        public = [
            f"{size}d = {pool.dim}, the directions (seed {model.seed})",
            f"the record bound: {model.boundary} of radius {model.radius:g}",
        ]
    if model.labels_ is not None:
        how = "one release per class" if model.labels_ == "conditional" else "the label joined into each record"
        public.append(f"the class list (C = {model.n_classes_}); labels released with the records: {how}")
    common = dict(
        delta=delta, mechanism=mechanism.describe(neighbouring), sampling=sampling, sample_rate=accountant.sample_rate,
        steps=steps, sensitivity=sensitivity, radius=None if mechanism.takes_level_codes else model.radius,
        stored=pool.describe(), public=tuple(public), neighbouring=neighbouring.label,
    )
    if noise_multiplier == 0:
        return PrivacyReport(
            epsilon=math.inf, noise_multiplier=0.0, noise_std=0.0, accountant="none",
            conservative_epsilon=None, **common,  # type: ignore[arg-type]
        )
    accounting = accountant.epsilon(noise_multiplier, delta, steps)
    conservative = None if n is None else accountant.conservative_epsilon(noise_multiplier, delta, steps)
    return PrivacyReport(
        epsilon=accounting.epsilon, noise_multiplier=noise_multiplier, noise_std=float(pool.noise_std.max()),
        accountant=accounting.method, conservative_epsilon=conservative,
        other=other_adjacency(model, accountant, noise_multiplier, delta, steps, thetas[0]),
        **common,  # type: ignore[arg-type]
    )


def other_adjacency(
    model: GeneratorState, accountant: ReleaseAccountant, noise_multiplier: float, delta: float, steps: int,
    theta: torch.Tensor | None,
) -> OtherAdjacency:
    """``model``'s releases under the adjacency they were not calibrated for (privacy.md, "Both adjacencies in the
    report"): exact for a one-shot release of a sum kind (Delta_RO = sqrt(2) Delta_AR), group privacy for Poisson
    per-step releases, not derived otherwise."""
    neighbouring = model.neighbouring
    name = neighbouring.other.label
    if model.mechanism.add_remove_sensitivity(theta) is None:
        return OtherAdjacency(name, None, None, f"the {model.release!r} release publishes one row per record")
    prior = accountant.prior_entries
    one_shot = accountant.sample_rate == 1 and steps == 1 and (prior is None or prior.one_shot)
    if one_shot:
        composed = noise_multiplier if prior is None else composed_multiplier(noise_multiplier, prior.gaussian)  # type: ignore[arg-type]
        z = neighbouring.other_multiplier(composed)
        epsilon = analytic_gaussian_epsilon(z, delta)
        if neighbouring.n_is_public:
            return OtherAdjacency(name, epsilon, delta, "the same release (Delta / sqrt(2)); this run publishes n")
        return OtherAdjacency(name, epsilon, delta, "the same release (Delta x sqrt(2))")
    if neighbouring.n_is_public:
        return OtherAdjacency(name, None, None, "batches of a fixed size assume n public")
    epsilon, inner = group_of_two(lambda at: accountant.epsilon(noise_multiplier, at, steps).epsilon, delta)
    return OtherAdjacency(name, epsilon, delta, f"group privacy of 2 (add/remove at delta' = {inner:.3g})")

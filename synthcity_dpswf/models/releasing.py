"""The release step: ``fit`` (or ``fit_total``) bounds the records, makes the releases of the generator's schedule and
keeps only them and their report.

These are the models layer's only contact with private records: ``release_batches`` turns bounded records into a
``ReleasePool`` through a release kind of ``synthcity_dpswf.privacy.mechanisms`` (the per-step releases of DPSWflow-r
and DPSWgen, or the one release of DPSWflow: ``batch_size = n``, one step), ``release_total`` the exact statistic of
all records summed elsewhere (a partitioned table's partitions: privacy.md, "Tables on Dask"), and they return
nothing else derived from them. The noise is calibrated from the public schedule (privacy.md, "Sampling and
composition").

The report of the releases (``release_report``): what was released, what was public, and the epsilon of the releases
under the adjacency they were calibrated for and under the other one (``other_adjacency``; privacy.md, "Sampling and
composition" and "Both adjacencies in the report").
"""

from __future__ import annotations

import math
from typing import Any, Mapping, TypeVar

import torch

from synthcity_dpswf.math import LabelledCodec
from synthcity_dpswf.math.checks import check_matrix, check_positive, check_positive_int
from synthcity_dpswf.models.state import GeneratorState, ReleasePlan, ReleasePool, ReleaseSchedule
from synthcity_dpswf.privacy import (
    Adjacency,
    OtherAdjacency,
    PrivacyReport,
    ReleaseAccountant,
    REPLACE_ONE_PLD,
    ReleaseMechanism,
    analytic_gaussian_epsilon,
    bound_records,
    poisson_batch,
    sample_batch,
    secret_generator,
)
from synthcity_dpswf.privacy.budget import check_delta, check_privacy_target
from synthcity_dpswf.privacy.gaussian import Prior, PriorLike, SampledGaussian, composed_multiplier
from synthcity_dpswf.privacy.neighbouring import group_of_two

Fitted = TypeVar("Fitted", bound="Releasing")


def check_noise_target(epsilon: float | None, delta: float, noise_multiplier: float | None,
                       n_records: int | None) -> None:
    """Validate what a fit's noise is set from: exactly one of a target epsilon (with delta: ``check_privacy_target``,
    which warns when delta >= 1/n) and a noise multiplier z >= 0 already calibrated (``privacy.budget.Budget.
    noise_multiplier``, whose ``for_records`` warned about the user's delta; 0: no noise), with delta in (0, 1)."""
    if (epsilon is None) == (noise_multiplier is None):
        raise ValueError("give exactly one of epsilon (to calibrate the noise) and noise_multiplier (to set it).")
    if epsilon is not None:
        check_privacy_target(epsilon, delta, n_records)
        return
    if noise_multiplier != 0:
        check_positive("noise_multiplier", noise_multiplier)
    check_delta(delta, None)


def calibrated(accountant: ReleaseAccountant, steps: int, epsilon: float | None, delta: float,
               noise_multiplier: float | None) -> float:
    """The fit's noise multiplier: the one given, or ``steps`` releases of ``accountant`` calibrated to (epsilon,
    delta), 0 for epsilon = inf (``check_noise_target`` says which is given)."""
    if noise_multiplier is not None:
        return float(noise_multiplier)
    assert epsilon is not None
    return 0.0 if math.isinf(epsilon) else accountant.calibrate(float(epsilon), float(delta), steps)


def release_batches(
    records: torch.Tensor,
    *,
    mechanism: ReleaseMechanism,
    steps: int,
    noise_multiplier: float,
    directions_generator: torch.Generator,
    secret: torch.Generator,
    batch_size: int | None = None,
    sample_rate: float | None = None,
    labels: torch.Tensor | None = None,
    n_classes: int = 1,
    neighbouring: Adjacency | str = Adjacency.REPLACE_ONE,
) -> ReleasePool:
    r"""``steps`` releases, each of a batch drawn independently of the other steps: a uniformly random subset of
    exactly ``batch_size`` records (``sample_batch``, replace-one) or a Poisson sample of rate ``sample_rate``
    (``poisson_batch``, add/remove or replace-one), with fresh public directions :math:`\Theta_k` from ``directions_generator`` for
    kinds that project, and noise :math:`s_k = z \Delta_k` (the sensitivity under ``neighbouring``), so that every
    step is a Gaussian mechanism with the same multiplier z. Batches and noise come from ``secret``. ``labels``
    (class-conditional kinds) are the private class of every record, in the public range ``0..n_classes-1``.
    """
    if (batch_size is None) == (sample_rate is None):
        raise ValueError("give exactly one of batch_size (fixed-size batches) and sample_rate (Poisson sampling).")
    n, dim = records.shape
    payloads, noise_std, directions = [], [], []
    for _ in range(steps):
        index = sample_batch(n, batch_size, secret) if batch_size is not None else poisson_batch(n, sample_rate, secret)  # type: ignore[arg-type]
        theta = mechanism.draw_directions(dim, directions_generator, records.dtype)
        release = mechanism.release(
            records[index], theta, noise_multiplier, secret, None if labels is None else labels[index], n_classes,
            neighbouring,
        )
        payloads.append(release.values)
        noise_std.append(release.noise_std)
        if theta is not None:
            directions.append(theta)
    return ReleasePool(
        kind=mechanism.name,
        options=mechanism.options,
        releases=torch.stack(payloads),
        noise_std=torch.tensor(noise_std, dtype=torch.float64),
        directions=torch.stack(directions) if directions else None,
        dim=dim,
        n_classes=n_classes if labels is not None else None,
    )


def release_total(
    statistic: torch.Tensor,
    *,
    mechanism: ReleaseMechanism,
    noise_multiplier: float,
    secret: torch.Generator,
    dim: int,
    neighbouring: Adjacency | str = Adjacency.REPLACE_ONE,
) -> ReleasePool:
    """One release of all records (q = 1, one step) from their exact ``statistic``, summed outside this process
    (partition by partition), with the noise of ``mechanism.noised`` added once, here: the pool ``release_batches``
    makes of the same records at ``batch_size = n``, one step, for a kind whose statistic is a sum of per-record
    contributions and that draws no directions."""
    if not mechanism.sums_contributions or mechanism.uses_directions:
        raise ValueError(f"a summed statistic is released only by kinds that sum per-record contributions and draw no "
                         f"directions ('marginal'); got {mechanism.name!r}.")
    release = mechanism.noised(statistic.to(torch.float64), None, noise_multiplier, secret, neighbouring)
    return ReleasePool(
        kind=mechanism.name, options=mechanism.options, releases=release.values.unsqueeze(0),
        noise_std=torch.tensor([release.noise_std], dtype=torch.float64), directions=None, dim=dim, n_classes=None,
    )


def plan_key(plan: ReleasePlan) -> tuple[Any, ...]:
    """What a release plan fixes: the accountant's method, its sampling (n, public or ``None``, batch size, rate, the
    contribution norm of Poisson batches under replace-one), prior and adjacency, and the number of releases."""
    accountant, steps = plan
    return (accountant.accountant, accountant.sampling, accountant.prior, accountant.neighbouring, steps)


class Releasing(GeneratorState):
    """A sliced generator's release step (``SlicedGenerator`` is one): the fit, its schedule, and the measurements of
    other releases joined to its pool."""

    def fit(
        self: Fitted,
        records: torch.Tensor,
        epsilon: float | None,
        delta: float,
        *,
        labels: torch.Tensor | None = None,
        n_classes: int | None = None,
        noise_multiplier: float | None = None,
        prior: PriorLike = None,
        plan: ReleasePlan | None = None,
    ) -> Fitted:
        """Bound ``records`` (``(n, d)``), make the releases of its ``schedule``, keep only them and their
        report.

        The noise is calibrated to (epsilon, delta); or, with ``epsilon=None``, set by ``noise_multiplier``
        z (noise std s = z Delta; 0: no noise, reported as not private), as the plugins do with the one calibration
        of their ``privacy.budget.Budget``, and the report gives the epsilon it achieves at ``delta`` (as Opacus'
        ``make_private`` does beside ``make_private_with_epsilon``). ``prior``: the multiplier of a one-shot Gaussian
        mechanism of the same records released before (a DP domain), accounted with the releases as one more entry
        of the accountant (``ReleaseAccountant``'s ``prior``; privacy.md, "One budget"): (epsilon, delta) is then
        the whole's. ``plan``: the schedule's accountant and number of releases the caller calibrated
        ``noise_multiplier`` to (``models.base.GeneratorSpec.plan``), released by as given (``checked_plan``).

        ``labels`` (``(n,)`` integers in ``0..n_classes-1``, with the public ``n_classes``) makes one record of
        each (record, label) pair: released per class or joined into the record (``labelling``); sample
        with ``sample_labelled`` then.
        """
        check_matrix("records", records)
        public_n = self.neighbouring.public_size(records.shape[0])  # n is private under add/remove
        check_noise_target(epsilon, delta, noise_multiplier, public_n)
        as_float = records.detach().to("cpu", torch.float32)
        if records.dtype != torch.float32:  # values beyond float32's range are outside the domain
            check_matrix("records (as float32)", as_float)
        if labels is not None and self.mechanism.takes_level_codes:
            raise ValueError(f"the {self.release!r} release takes a label as one more column of the table; drop labels=.")
        bounded = self.mechanism.prepare(as_float, self.boundary)
        release_labels = self._prepare_labels(labels, n_classes, bounded.shape[0])
        if self.labels_ == "joint":
            bounded = bound_records(self.codec.encode(bounded, release_labels), self.radius, "ball")
            release_labels = None
        accountant, steps = self.checked_plan(plan, self.neighbouring.public_size(bounded.shape[0]), prior)
        if accountant.sampling.poisson:
            sampling: dict[str, Any] = {"sample_rate": accountant.sample_rate}
        else:
            sampling = {"batch_size": accountant.batch_size}
        noise_multiplier = calibrated(accountant, steps, epsilon, delta, noise_multiplier)
        self.pool_ = release_batches(
            bounded, mechanism=self.mechanism, steps=steps, noise_multiplier=noise_multiplier,
            directions_generator=torch.Generator().manual_seed(self.seed), secret=secret_generator(self.release_seed),
            labels=release_labels, n_classes=self.n_classes_ if release_labels is not None else 1,
            neighbouring=self.neighbouring, **sampling,
        )
        del bounded, release_labels
        self.report_ = release_report(self, self.pool_, float(delta), accountant, noise_multiplier, steps)
        self._after_release()
        return self

    def fit_total(
        self: Fitted,
        statistic: torch.Tensor,
        n_columns: int,
        epsilon: float | None,
        delta: float,
        *,
        n_records: int | None = None,
        noise_multiplier: float | None = None,
        prior: PriorLike = None,
        plan: ReleasePlan | None = None,
    ) -> Fitted:
        """Fit from the exact statistic of all records, summed outside this process (a partitioned table's
        partitions, each counted by ``mechanism.statistic`` of its bounded records): one release with the noise added
        once, here (privacy.md, "Tables on Dask"). For one-release generators (DPSWflow) of kinds that sum per-record
        contributions without directions (the marginal release). ``n_records``: n, public under replace-one (the
        partitions' row counts summed), ``None`` under add/remove (never read). ``noise_multiplier`` (with
        ``epsilon=None``), ``prior`` and ``plan`` as in ``fit``."""
        if self.per_step:
            raise ValueError(f"{type(self).__name__} releases fresh batches at every step, drawn from all records; a "
                             "table summed partition by partition is fitted by DPSWflow (privacy.md, \"Tables on Dask\").")
        public_n = n_records if self.neighbouring.n_is_public else None
        if self.neighbouring.n_is_public and n_records is None:
            raise ValueError("under replace-one n is public and the schedule reads it: pass n_records.")
        check_noise_target(epsilon, delta, noise_multiplier, public_n)
        self.labels_, self.n_classes_ = None, None
        accountant, steps = self.checked_plan(plan, public_n, prior)
        noise_multiplier = calibrated(accountant, steps, epsilon, delta, noise_multiplier)
        self.pool_ = release_total(
            statistic, mechanism=self.mechanism, noise_multiplier=noise_multiplier,
            secret=secret_generator(self.release_seed), dim=n_columns, neighbouring=self.neighbouring,
        )
        self.report_ = release_report(self, self.pool_, float(delta), accountant, noise_multiplier, steps)
        self._after_release()
        return self

    def _prepare_labels(self, labels: torch.Tensor | None, n_classes: int | None, n_records: int) -> torch.Tensor | None:
        """Validate the labels against the public class count and choose how they are released."""
        if labels is None:
            if n_classes is not None:
                raise ValueError("n_classes was given without labels; pass labels=... as well (or neither).")
            self.labels_, self.n_classes_ = None, None
            return None
        if n_classes is None:
            raise ValueError("labels need the public number of classes: pass n_classes (never read it from the data).")
        check_positive_int("n_classes", n_classes)
        if not isinstance(labels, torch.Tensor) or labels.shape != (n_records,) or labels.is_floating_point():
            raise ValueError(f"labels must be an integer tensor of shape ({n_records},), one per record.")
        if bool((labels < 0).any()) or bool((labels >= n_classes).any()):
            raise ValueError(f"labels must lie in 0..{n_classes - 1}; pass the n_classes that covers them.")
        self.n_classes_ = n_classes
        self.codec = LabelledCodec(n_classes, self.feature_weight)
        conditional = self.labelling == "conditional" and self.mechanism.class_conditional
        self.labels_ = "conditional" if conditional else "joint"
        return labels.detach().cpu().long()

    @classmethod
    def schedule_of(cls, arguments: Mapping[str, Any]) -> ReleaseSchedule:
        """The release schedule of this class's generator built with ``arguments`` (its constructor's): public numbers
        only, asked before a generator is built (the plugins calibrate the noise from it, then lay out the tables).
        One release of all records; the per-step generators override it."""
        return ReleaseSchedule()

    @property
    def schedule(self) -> ReleaseSchedule:
        """This generator's release schedule (``schedule_of`` its parameters)."""
        return self.schedule_of(self.get_parameters())

    def plan(self, n_records: int | None, prior: PriorLike = None) -> tuple[ReleaseAccountant, int]:
        """The accountant of this generator's schedule and its number of releases (``ReleaseSchedule.accountant``):
        under replace-one Poisson or fixed-size batches of the public n, under add/remove Poisson batches (n never
        read, ``None``); ``prior`` as in ``fit``."""
        return self.schedule.accountant(n_records, self.neighbouring, self.accountant, self.release, prior)

    def checked_plan(self, plan: ReleasePlan | None, n_public: int | None, prior: PriorLike) -> ReleasePlan:
        """This generator's own plan for ``n_public`` records and ``prior`` (``plan``), the one its releases follow; a
        ``plan`` the caller calibrated the noise to (``models.base.GeneratorSpec.plan``) is refused unless it is that
        plan (accountant, n, batch size, rate, prior, adjacency and number of releases): a plan is never trusted, as
        the report's epsilon is computed from it."""
        own = self.plan(n_public, prior)
        if plan is not None and plan_key(plan) != plan_key(own):
            raise ValueError(f"the release plan {plan_key(plan)} is not this generator's {plan_key(own)} for these "
                             "records: nothing was released.")
        return own

    def released_size(self) -> float:
        """n estimated from the releases alone (post-processing): the records counted over the K releases divided by
        K q. What the plugins give synthcity as the row count when n is private (add/remove)."""
        pool = self._pool()
        counted = self.mechanism.counted_records(pool.releases)
        if counted is None:
            raise ValueError(f"the {self.release!r} release counts no records; its size is n, public under replace-one.")
        return max(float(counted.sum()) / (pool.n_releases * self.privacy_report.sample_rate), 0.0)

    def add_one_way(self, measurements: dict[int, tuple[Any, Any]], counted: float) -> None:
        """Another release's noisy counts of some columns' fine one-way tables (``{column: (counts, noise stds)}``,
        counting ``counted`` records: a DP domain's, ``adapters.MarginalTableCodec.one_way_measurements``), combined
        with the marginal release's own tables by inverse variance when generating (``models.marginal_target``).
        Post-processing of both releases: nothing is released and no budget is spent."""
        pool = self._pool()
        if not self.mechanism.takes_level_codes or pool.options.layout is None:
            raise ValueError(f"one-way measurements join a marginal release; this generator's is {self.release!r}.")
        levels = pool.options.layout.levels
        for column, (counts, stds) in measurements.items():
            if not 0 <= column < len(levels) or len(counts) != levels[column] or len(stds) != levels[column]:
                raise ValueError(f"a measurement of column {column} needs one count and one std per fine level.")
        if not counted > 0:
            raise ValueError(f"counted must be > 0, got {counted!r}.")
        pool.one_way = {
            column: (torch.as_tensor(counts, dtype=torch.float64), torch.as_tensor(stds, dtype=torch.float64), float(counted))
            for column, (counts, stds) in measurements.items()
        }
        pool.cache.clear()

    def _after_release(self) -> None:
        """Post-processing done once after the releases (DPSWGen trains its network here)."""


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
    elif accountant.sampling.poisson:
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
    conservative = None if accountant.sampling.poisson or accountant.accountant == REPLACE_ONE_PLD else \
        accountant.conservative_epsilon(noise_multiplier, delta, steps)
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
    per-step releases under add/remove, Opacus' Poisson pair at z sqrt(2) for Poisson per-step releases under
    replace-one (with a DP-SGD codec's Poisson schedule at 2 z_c: ``as_add_remove``), not derived otherwise."""
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
            return OtherAdjacency(name, epsilon, delta, "the same release (Delta / sqrt(2)), a bound for the counts "
                                                        "alone: this run states n in its report, so n is not protected")
        return OtherAdjacency(name, epsilon, delta, "the same release (Delta x sqrt(2))")
    if neighbouring.n_is_public and not accountant.sampling.poisson:
        if prior is not None and not prior.one_shot and accountant.batch_size == accountant.n_records:
            return OtherAdjacency(name, None, None, "releases of all records after a sampled codec's schedule")
        return OtherAdjacency(name, None, None, "batches of a fixed size assume n public")
    if neighbouring.n_is_public:  # Poisson batches: the same releases are the add/remove Poisson schedule at z x sqrt(2)
        other_prior: PriorLike = None
        if prior is not None:
            gaussian = None if prior.gaussian is None else neighbouring.other_multiplier(prior.gaussian)
            schedules = tuple(as_add_remove(schedule) for schedule in prior.schedules)
            other_prior = Prior(gaussian, schedules) if schedules else gaussian
        add_remove = ReleaseAccountant.poisson(accountant.sample_rate, "rdp", other_prior)
        epsilon = add_remove.epsilon(neighbouring.other_multiplier(noise_multiplier), delta, steps).epsilon
        return OtherAdjacency(name, epsilon, delta, "the same releases, Opacus' Poisson pair at z x sqrt(2), a bound for "
                                                    "the releases alone: this run states n in its report and its rate q "
                                                    "is a function of n, so n is not protected")
    epsilon, inner = group_of_two(lambda at: accountant.epsilon(noise_multiplier, at, steps).epsilon, delta)
    return OtherAdjacency(name, epsilon, delta, f"group privacy of 2 (add/remove at delta' = {inner:.3g})")


def as_add_remove(schedule: SampledGaussian) -> SampledGaussian:
    """A Poisson schedule under replace-one (a DP-SGD codec's) as the same releases under add/remove: one record's
    contribution has norm at most C = c Delta_RO (c its ``contribution_norm``), the add/remove sensitivity, so the noise
    z Delta_RO is the multiplier z / c of it (2 z for clipped gradients), Opacus' Poisson pair (privacy.md, "Both
    adjacencies in the report")."""
    if not schedule.replace_one_poisson:
        raise ValueError(f"only a Poisson schedule under replace-one has an add/remove reading here, got {schedule}.")
    return SampledGaussian(schedule.noise_multiplier / schedule.contribution_norm, schedule.sample_rate, schedule.steps)  # type: ignore[operator]

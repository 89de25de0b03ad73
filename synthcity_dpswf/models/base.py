"""What the three generators share: validation, bounding, the release pool, the report, sampling, saving.

``fit(records, epsilon, delta)`` bounds the records, makes the releases (the subclass's schedule, the release
kind of ``privacy.mechanisms``) and keeps only them; ``sample(count)`` (or ``sample_labelled`` for records fitted
with labels) is post-processing of the pool, at no budget, with generation-time settings that can be changed
per call; ``sample_chunks(count, chunk_size)`` streams any number of rows in independent chunks (``models.chunks``).
"""

from __future__ import annotations

import dataclasses
import math
from abc import ABC
from pathlib import Path
from typing import Any, ClassVar, Iterator, Literal, Mapping

import torch

from synthcity_dpswf.math import LabelledCodec, TargetSource, run_flow
from synthcity_dpswf.math.checks import check_matrix, check_positive, check_positive_int
from synthcity_dpswf.models.chunks import ChunkSpec, SampleChunk, chunk_plan
from synthcity_dpswf.models.pool import ReleasePool
from synthcity_dpswf.models.releasing import release_batches, release_total
from synthcity_dpswf.models.schedule import ReleaseSchedule
from synthcity_dpswf.models.settings import FlowSettings
from synthcity_dpswf.models.kinds import build_target, kind_spec, particle_space
from synthcity_dpswf.models.targets import class_weights
from synthcity_dpswf.privacy import (
    ACCOUNTANTS,
    MECHANISMS,
    Adjacency,
    MarginalLayout,
    OtherAdjacency,
    PrivacyReport,
    ReleaseAccountant,
    ReleaseOptions,
    analytic_gaussian_epsilon,
    bound_records,
    create_mechanism,
    secret_generator,
)
from synthcity_dpswf.privacy.neighbouring import group_of_two
from synthcity_dpswf.privacy.accountant import check_accountant
from synthcity_dpswf.privacy.budget import check_delta, check_privacy_target
from synthcity_dpswf.privacy.composition import PriorLike, composed_multiplier
from synthcity_dpswf.privacy.releases import Boundary

Labelling = Literal["conditional", "joint"]


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


class SlicedGenerator(ABC):
    """Base class of DPSWFlow, DPSWFlowR and DPSWGen.

    Args:
        release: the release kind (``privacy.MECHANISMS``): ``"projected_histogram"`` (default: noisy counts of
            the projections in fixed bins), ``"record"`` (noisy records), ``"projected"`` (the paper's) or
            ``"marginal"`` (noisy one- and two-way tables of level-coded records; needs ``marginals``).
        radius: r, records are mapped onto the ball (or sphere) of this radius before any release.
        boundary: ``"ball"`` (project records with norm > r onto the ball) or ``"sphere"`` (normalise all).
        n_release_directions: directions per release (projected kinds); ``None`` takes the generator's
            kind's default (``models.kinds.KINDS``: one-shot or per-step).
        n_bins: G, bins over [-r, r] per direction (histogram releases); 16 measured best on a validation
            split of MNIST at epsilon = 10 and 1 (docs/flows.md); few records per class want fewer.
        marginals: the public tables of ``release="marginal"`` (``privacy.MarginalLayout``: levels per column,
            coarse levels, pairs); records are then level codes (``adapters.MarginalTableCodec``) and samples
            continuous level positions whose floor is the code.
        labelling: with labels passed to ``fit``: ``"conditional"`` (one release per class, for kinds that
            support it: exact labels) or ``"joint"`` (the label joined into each record by ``LabelledCodec``;
            always used by kinds without class-conditional releases).
        feature_weight: the features' weight in a joint record (``LabelledCodec``).
        accountant: ``"rdp"`` (Opacus' RDP), ``"replace_one_rdp"`` or an extension's name, composes the releases;
            ``"gdp"`` and ``"prv"`` are refused (privacy.md, "Accountants").
        neighbouring: ``"replace_one"`` (default: n public, batches of a fixed size) or ``"add_remove"`` (n private,
            Poisson-sampled batches, Opacus' sampled-Gaussian RDP; only for kinds whose release is a sum of per-record
            contributions: privacy.md, "Add/remove neighbours").
        n_levels: points of the quantile grid of the flow targets.
        settings: generation-time ``FlowSettings``.
        seed: public seed of the directions and of generation (never of the release noise).
        release_seed: seed of the batches and noise of the releases; ``None`` (default) draws it from OS
            entropy and keeps it nowhere. Pass one only in tests: it makes the noise removable.
        device: where the flow runs (``"cpu"``, ``"cuda"``); releases are made and stored on CPU.
        progress: show progress bars.
    """

    name: ClassVar[str]
    per_step: ClassVar[bool] = False
    """Whether the generator makes per-step releases (then the kind's ``per_step_directions`` default applies,
    else its ``one_shot_directions``: ``models.kinds.KindSpec``)."""

    def __init__(
        self,
        *,
        release: str = "projected_histogram",
        radius: float = 1.0,
        boundary: Boundary = "ball",
        n_release_directions: int | None = None,
        n_bins: int = 16,
        marginals: MarginalLayout | None = None,
        labelling: Labelling = "conditional",
        feature_weight: float = 0.7,
        accountant: str = "rdp",
        neighbouring: Adjacency | str = Adjacency.REPLACE_ONE,
        n_levels: int = 1000,
        settings: FlowSettings | None = None,
        seed: int = 0,
        release_seed: int | None = None,
        device: str | torch.device = "cpu",
        progress: bool = False,
    ) -> None:
        if release not in MECHANISMS:
            raise ValueError(f"release must be one of {sorted(MECHANISMS)}, got {release!r}.")
        if boundary not in ("ball", "sphere"):
            raise ValueError(f"boundary must be 'ball' or 'sphere', got {boundary!r}.")
        if n_release_directions is not None:
            check_positive_int("n_release_directions", n_release_directions)
        if labelling not in ("conditional", "joint"):
            raise ValueError(f"labelling must be 'conditional' or 'joint', got {labelling!r}.")
        check_accountant(accountant)
        if isinstance(n_levels, bool) or not isinstance(n_levels, int) or n_levels < 2:
            raise ValueError(f"n_levels must be an integer >= 2, got {n_levels!r}.")
        if MECHANISMS[release].takes_level_codes != (marginals is not None):
            raise ValueError(f"release={release!r}: a kind on level codes needs marginals=MarginalLayout(...) (the public "
                             "tables), and only such a kind takes them.")
        spec = kind_spec(release)
        directions = n_release_directions or (spec.per_step_directions if self.per_step else spec.one_shot_directions)
        self.mechanism = create_mechanism(release, ReleaseOptions(float(radius), directions, n_bins, marginals))
        neighbouring = self.mechanism.check_neighbouring(neighbouring)
        if not neighbouring.n_is_public and not ACCOUNTANTS[accountant].poisson_proven:
            raise ValueError(f"accountant {accountant!r} is not proven for add/remove with Poisson sampling; use 'rdp'.")
        self.codec = LabelledCodec(2, feature_weight)  # validates feature_weight; rebuilt for the class count at fit
        self.release = release
        self.radius = float(radius)
        self.boundary = boundary
        self.n_release_directions = n_release_directions
        self.n_bins = n_bins
        self.marginals = marginals
        self.labelling = labelling
        self.feature_weight = feature_weight
        self.accountant = accountant
        self.neighbouring = neighbouring
        self.n_levels = n_levels
        self.settings = settings if settings is not None else FlowSettings()
        self.seed = seed
        self.release_seed = release_seed
        self.device = torch.device(device)
        self.progress = progress
        self.pool_: ReleasePool | None = None
        self.report_: PrivacyReport | None = None
        self.labels_: Labelling | None = None
        self.n_classes_: int | None = None

    # ----------------------------------------------------------------------------------------- fitting
    def fit(
        self,
        records: torch.Tensor,
        epsilon: float | None,
        delta: float,
        *,
        labels: torch.Tensor | None = None,
        n_classes: int | None = None,
        noise_multiplier: float | None = None,
        prior: PriorLike = None,
    ) -> "SlicedGenerator":
        """Bound ``records`` (``(n, d)``), make the releases of its ``schedule``, keep only them and their
        report.

        The noise is calibrated to (epsilon, delta); or, with ``epsilon=None``, set by ``noise_multiplier``
        z (noise std s = z Delta; 0: no noise, reported as not private), as the plugins do with the one calibration
        of their ``privacy.budget.Budget``, and the report gives the epsilon it achieves at ``delta`` (as Opacus'
        ``make_private`` does beside ``make_private_with_epsilon``). ``prior``: the multiplier of a one-shot Gaussian
        mechanism of the same records released before (a DP domain), accounted with the releases as one more entry
        of the accountant (``ReleaseAccountant``'s ``prior``; privacy.md, "One budget"): (epsilon, delta) is then
        the whole's.

        ``labels`` (``(n,)`` integers in ``0..n_classes-1``, with the public ``n_classes``) makes one record of
        each (record, label) pair: released per class or joined into the record (``labelling``); sample
        with ``sample_labelled`` then.
        """
        check_matrix("records", records)
        public_n = self.neighbouring.public_size(records.shape[0])  # n is private under add/remove
        check_noise_target(epsilon, delta, noise_multiplier, public_n)
        as_float = records.detach().to("cpu", torch.float32)
        check_matrix("records (as float32)", as_float)  # values beyond float32's range are outside the domain
        if labels is not None and self.mechanism.takes_level_codes:
            raise ValueError(f"the {self.release!r} release takes a label as one more column of the table; drop labels=.")
        bounded = self.mechanism.prepare(as_float, self.boundary)
        release_labels = self._prepare_labels(labels, n_classes, bounded.shape[0])
        if self.labels_ == "joint":
            bounded = bound_records(self.codec.encode(bounded, release_labels), self.radius, "ball")
            release_labels = None
        accountant, steps = self.plan(bounded.shape[0], prior)
        if self.neighbouring.n_is_public:
            sampling: dict[str, Any] = {"batch_size": accountant.batch_size}
        else:
            sampling = {"sample_rate": accountant.sample_rate}
        noise_multiplier = calibrated(accountant, steps, epsilon, delta, noise_multiplier)
        self.pool_ = release_batches(
            bounded, mechanism=self.mechanism, steps=steps, noise_multiplier=noise_multiplier,
            directions_generator=torch.Generator().manual_seed(self.seed), secret=secret_generator(self.release_seed),
            labels=release_labels, n_classes=self.n_classes_ if release_labels is not None else 1,
            neighbouring=self.neighbouring, **sampling,
        )
        del bounded, release_labels
        self.report_ = self._report(self.pool_, float(delta), accountant, noise_multiplier, steps)
        self._after_release()
        return self

    def fit_total(
        self,
        statistic: torch.Tensor,
        n_columns: int,
        epsilon: float | None,
        delta: float,
        *,
        n_records: int | None = None,
        noise_multiplier: float | None = None,
        prior: PriorLike = None,
    ) -> "SlicedGenerator":
        """Fit from the exact statistic of all records, summed outside this process (a partitioned table's
        partitions, each counted by ``mechanism.statistic`` of its bounded records): one release with the noise added
        once, here (privacy.md, "Tables on Dask"). For one-release generators (DPSWflow) of kinds that sum per-record
        contributions without directions (the marginal release). ``n_records``: n, public under replace-one (the
        partitions' row counts summed), ``None`` under add/remove (never read). ``noise_multiplier`` (with
        ``epsilon=None``) and ``prior`` as in ``fit``."""
        if self.per_step:
            raise ValueError(f"{type(self).__name__} releases fresh batches at every step, drawn from all records; a "
                             "table summed partition by partition is fitted by DPSWflow (privacy.md, \"Tables on Dask\").")
        public_n = n_records if self.neighbouring.n_is_public else None
        if self.neighbouring.n_is_public and n_records is None:
            raise ValueError("under replace-one n is public and the schedule reads it: pass n_records.")
        check_noise_target(epsilon, delta, noise_multiplier, public_n)
        self.labels_, self.n_classes_ = None, None
        accountant, steps = self.plan(public_n, prior)
        noise_multiplier = calibrated(accountant, steps, epsilon, delta, noise_multiplier)
        self.pool_ = release_total(
            statistic, mechanism=self.mechanism, noise_multiplier=noise_multiplier,
            secret=secret_generator(self.release_seed), dim=n_columns, neighbouring=self.neighbouring,
        )
        self.report_ = self._report(self.pool_, float(delta), accountant, noise_multiplier, steps)
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
        fixed-size batches of the public n under replace-one, Poisson batches (n never read, ``None``) under
        add/remove; ``prior`` as in ``fit``."""
        return self.schedule.accountant(n_records, self.neighbouring, self.accountant, self.release, prior)

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

    def add_selection(self, measured: Any, noise_std: float, counted: float | None) -> None:
        """A paid pair selection's noisy counts of the marginal release's own tables (``measured``, one per cell in the
        layout's order, noise std ``noise_std`` each, counting ``counted`` records; ``None``: n private, estimated from
        their one-way totals), combined with the release's by inverse variance when generating
        (``models.marginal_target``; privacy.md, "Paid pair selection"). Post-processing: nothing is released."""
        pool = self._pool()
        layout = pool.options.layout
        if not self.mechanism.takes_level_codes or layout is None:
            raise ValueError(f"a pair selection joins a marginal release; this generator's is {self.release!r}.")
        values = torch.as_tensor(measured, dtype=torch.float64)
        if values.shape != (sum(layout.sizes),):
            raise ValueError(f"the selection's measurement needs one count per cell of the layout ({sum(layout.sizes)}), "
                             f"got shape {tuple(values.shape)}.")
        if counted is None:  # the marginal release's own estimate: the mean of the one-way tables' totals
            counted = float(self.mechanism.counted_records(values))
        if not noise_std > 0:
            raise ValueError(f"noise_std must be > 0, got {noise_std!r}.")
        pool.selection = (values, float(noise_std), max(float(counted), 1.0))
        pool.cache.clear()

    def _after_release(self) -> None:
        """Post-processing done once after the releases (DPSWGen trains its network here)."""

    def _report(
        self,
        pool: ReleasePool,
        delta: float,
        accountant: ReleaseAccountant,
        noise_multiplier: float,
        steps: int,
    ) -> PrivacyReport:
        """The privacy report of a pool made with multiplier ``noise_multiplier`` (0 when epsilon is inf)."""
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
        sensitivity = max(self.mechanism.sensitivity_for(theta, self.neighbouring) for theta in thetas)
        if self.mechanism.takes_level_codes:
            public = [
                f"{size}d = {pool.dim} columns",
                "the tables (levels, coarse levels and pairs of the MarginalLayout), fixed before these releases (from "
                "public numbers, or from an earlier release accounted below: a DP domain, a paid pair selection)",
            ]
        else:
            public = [
                f"{size}d = {pool.dim}, the directions (seed {self.seed})",
                f"the record bound: {self.boundary} of radius {self.radius:g}",
            ]
        if self.labels_ is not None:
            how = "one release per class" if self.labels_ == "conditional" else "the label joined into each record"
            public.append(f"the class list (C = {self.n_classes_}); labels released with the records: {how}")
        common = dict(
            delta=delta, mechanism=self.mechanism.describe(self.neighbouring), sampling=sampling, sample_rate=accountant.sample_rate,
            steps=steps, sensitivity=sensitivity, radius=None if self.mechanism.takes_level_codes else self.radius,
            stored=pool.describe(), public=tuple(public), neighbouring=self.neighbouring.label,
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
            other=self._other_adjacency(accountant, noise_multiplier, delta, steps, thetas[0]),
            **common,  # type: ignore[arg-type]
        )

    def _other_adjacency(
        self, accountant: ReleaseAccountant, noise_multiplier: float, delta: float, steps: int, theta: torch.Tensor | None
    ) -> OtherAdjacency:
        """The same releases under the adjacency they were not calibrated for (privacy.md, "Both adjacencies in the
        report"): exact for a one-shot release of a sum kind (Delta_RO = sqrt(2) Delta_AR), group privacy for Poisson
        per-step releases, not derived otherwise."""
        name = self.neighbouring.other.label
        if self.mechanism.add_remove_sensitivity(theta) is None:
            return OtherAdjacency(name, None, None, f"the {self.release!r} release publishes one row per record")
        prior = accountant.prior_entries
        one_shot = accountant.sample_rate == 1 and steps == 1 and (prior is None or prior.one_shot)
        if one_shot:
            composed = noise_multiplier if prior is None else composed_multiplier(noise_multiplier, prior.gaussian)  # type: ignore[arg-type]
            z = self.neighbouring.other_multiplier(composed)
            epsilon = analytic_gaussian_epsilon(z, delta)
            if self.neighbouring.n_is_public:
                return OtherAdjacency(name, epsilon, delta, "the same release (Delta / sqrt(2)); this run publishes n")
            return OtherAdjacency(name, epsilon, delta, "the same release (Delta x sqrt(2))")
        if self.neighbouring.n_is_public:
            return OtherAdjacency(name, None, None, "batches of a fixed size assume n public")
        epsilon, inner = group_of_two(lambda at: accountant.epsilon(noise_multiplier, at, steps).epsilon, delta)
        return OtherAdjacency(name, epsilon, delta, f"group privacy of 2 (add/remove at delta' = {inner:.3g})")

    # ---------------------------------------------------------------------------------------- sampling
    @property
    def privacy_report(self) -> PrivacyReport:
        """The privacy report of the fitted model."""
        if self.report_ is None:
            raise RuntimeError(f"{type(self).__name__} is not fitted; call fit(records, epsilon, delta) first.")
        return self.report_

    def _pool(self) -> ReleasePool:
        if self.pool_ is None:
            raise RuntimeError(f"{type(self).__name__} is not fitted; call fit(records, epsilon, delta) first.")
        return self.pool_

    @property
    def dim(self) -> int:
        """d, the dimension of the records the flow generates (with a joint label: features and label block)."""
        return self._pool().dim

    def flow_target(self, settings: FlowSettings, seed: int, class_index: int = 0) -> TargetSource:
        """The flow target that generation reads from the pool (of class ``class_index`` for class-conditional
        releases), per ``settings``."""
        return build_target(self._pool(), settings, self.n_levels, seed, self.device, class_index)

    def _steps(self, settings: FlowSettings) -> int:
        return self._pool().n_releases if settings.reuse == "once" else settings.n_steps

    def initial_particles(self, count: int, generator: torch.Generator) -> torch.Tensor:
        """Starting particles of the kind's space (``models.targets.particle_space``): N(0, r^2 / d I) for the
        projected kinds, the product of the released one-way margins for marginal releases."""
        return particle_space(self._pool(), self.radius, self.device).initial_particles(count, generator)

    def sample(
        self,
        count: int,
        *,
        init: torch.Tensor | None = None,
        seed: int | None = None,
        **overrides: Any,
    ) -> torch.Tensor:
        """``count`` synthetic records, by running the flow over the pool (post-processing, no budget).

        ``init`` gives starting particles (``(count, d)``, e.g. public records); ``overrides`` replace fields
        of ``FlowSettings`` for this call only; ``seed`` (default: the model's) seeds the run. A model fitted
        with labels samples with ``sample_labelled``.
        """
        check_positive_int("count", count)
        self._pool()
        if self.labels_ is not None:
            raise ValueError(f"{type(self).__name__} was fitted with labels; sample (records, labels) with sample_labelled.")
        if init is not None:
            self._check_init(init, count)
        settings = dataclasses.replace(self.settings, **overrides)
        run_seed = self.seed if seed is None else seed
        space = particle_space(self._pool(), self.radius, self.device)
        flowed = count
        if init is None and settings.flow_particles is not None and space.resamples:
            flowed = min(count, settings.flow_particles)
        particles = self._sample_class(flowed, 0, init, settings, run_seed)
        if flowed < count:  # more rows drawn from the flowed particles (``ParticleSpace.resample``)
            particles = space.resample(particles, count, torch.Generator().manual_seed(run_seed + 4))
        return space.to_records(particles)

    def sample_labelled(
        self,
        count: int,
        *,
        init: tuple[torch.Tensor, torch.Tensor] | None = None,
        seed: int | None = None,
        **overrides: Any,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``count`` synthetic (record, label) pairs of a model fitted with labels (post-processing).

        Class-conditional releases: the classes' shares come from the released counts
        (``models.targets.class_weights``, largest remainders), and each class's particles flow to its own
        target (all classes in one flow), so every label is exact. Joint records: one flow, the label decoded from the record's label
        block. ``init`` = (records, labels) of starting particles fixes the labels (``count`` of them).
        """
        check_positive_int("count", count)
        self._pool()
        if self.labels_ is None:
            raise ValueError(f"{type(self).__name__} was fitted without labels; use sample(count).")
        settings = dataclasses.replace(self.settings, **overrides)
        run_seed = self.seed if seed is None else seed
        if self.labels_ == "joint":
            start = None
            if init is not None:
                start = bound_records(self.codec.encode(bound_records(init[0].float(), self.radius, self.boundary), init[1]), self.radius)
                self._check_init(start, count)
            return self.codec.decode(self._sample_class(count, 0, start, settings, run_seed).cpu())
        assert self.n_classes_ is not None
        if init is not None:
            self._check_init(init[0], count)
            labels = init[1].long().cpu()
            order = torch.argsort(labels, stable=True)  # the particles are flowed class after class
            start, labels = init[0][order].float(), labels[order]
            sizes = torch.bincount(labels, minlength=self.n_classes_)
        else:
            start, sizes = None, allocate(count, class_weights(self._pool()))
            labels = torch.repeat_interleave(torch.arange(self.n_classes_), sizes)
        records = self._sample_classes(sizes, start, settings, run_seed)
        shuffle = torch.randperm(count, generator=torch.Generator().manual_seed(run_seed))
        return records[shuffle.to(self.device)], labels[shuffle]

    def sample_chunks(
        self,
        count: int,
        chunk_size: int,
        *,
        seed: int | None = None,
        rank: int = 0,
        world_size: int = 1,
        **overrides: Any,
    ) -> Iterator[SampleChunk]:
        """``count`` synthetic records in chunks of at most ``chunk_size``, one chunk alive at a time
        (post-processing, no budget): memory is bounded by the chunk size, not by ``count``.

        Chunk i is ``sample`` (or ``sample_labelled`` for a model fitted with labels, then with its labels) of
        its size with run seed ``models.chunks.chunk_seed(seed, i)``: an independent flow of its own particles
        to the same stored target, the same in whichever process makes it. Process ``rank`` of ``world_size``
        gets chunks rank, rank + world_size, ... (``models.chunks.chunk_plan``), so the processes of a sharded
        run together make exactly the chunks of one. ``seed`` defaults to the model's; ``overrides`` replace
        fields of ``FlowSettings``. Records are on the model's device (move each chunk off it to keep GPU
        memory bounded too). Arguments are checked here, before the first chunk is asked for.
        """
        self._pool()
        plan = chunk_plan(count, chunk_size, self.seed if seed is None else seed, rank, world_size)
        dataclasses.replace(self.settings, **overrides)  # checks the overrides now, not at the first chunk
        return self._generate_chunks(plan, overrides)

    def _generate_chunks(self, plan: list[ChunkSpec], overrides: dict[str, Any]) -> Iterator[SampleChunk]:
        """The chunks of ``plan``, each made only when asked for (no local keeps the last one alive meanwhile)."""
        for spec in plan:
            if self.labels_ is None:
                yield SampleChunk(spec.index, spec.start, self.sample(spec.size, seed=spec.seed, **overrides), None)
            else:
                yield SampleChunk(spec.index, spec.start, *self.sample_labelled(spec.size, seed=spec.seed, **overrides))

    def _sample_classes(
        self, sizes: torch.Tensor, init: torch.Tensor | None, settings: FlowSettings, seed: int
    ) -> torch.Tensor:
        """``sizes[c]`` records of each class c, class after class: all classes flow at once, each to its own
        target (``run_flow`` with ``group_sizes``; DPSWGen runs its network instead)."""
        count = int(sizes.sum())
        generator = torch.Generator().manual_seed(seed + 1)
        particles = self.initial_particles(count, generator) if init is None else init.to(self.device, torch.float32)
        target = build_target(self._pool(), settings, self.n_levels, seed + 3, self.device, class_index=None)
        return run_flow(
            particles, target, self._steps(settings), settings.step_size, settings.entropy,
            torch.Generator(device=self.device).manual_seed(seed + 2), progress=self.progress, group_sizes=sizes,
        )

    def _check_init(self, init: torch.Tensor, count: int) -> None:
        check_matrix("init", init, self.dim)
        if init.shape[0] != count:
            raise ValueError(f"init has {init.shape[0]} rows but count={count}; pass one row per sample.")

    def _sample_class(
        self, count: int, class_index: int, init: torch.Tensor | None, settings: FlowSettings, seed: int
    ) -> torch.Tensor:
        """Flow ``count`` particles (from ``init`` or Gaussian) to the target of ``class_index`` (DPSWGen runs its
        network instead)."""
        generator = torch.Generator().manual_seed(seed + 1)
        particles = self.initial_particles(count, generator) if init is None else init.to(self.device, torch.float32)
        flow_generator = torch.Generator(device=self.device).manual_seed(seed + 2)
        return run_flow(
            particles, self.flow_target(settings, seed + 3, class_index), self._steps(settings), settings.step_size,
            settings.entropy, flow_generator, particle_cdf=settings.particle_cdf, progress=self.progress,
        )

    # ------------------------------------------------------------------------------------------ saving
    def state_dict(self) -> dict[str, Any]:
        """Everything a fitted model keeps: public parameters, the pool of releases, the report."""
        return {
            "class": type(self).__name__,
            "parameters": self.get_parameters(),
            "pool": self._pool().state_dict(),
            "report": self.privacy_report,
            "labels": self.labels_,
            "n_classes": self.n_classes_,
        }

    def get_parameters(self) -> dict[str, Any]:
        """The constructor arguments (public), for saving and for ``repr``."""
        return {
            "release": self.release, "radius": self.radius, "boundary": self.boundary,
            "n_release_directions": self.n_release_directions, "n_bins": self.n_bins, "marginals": self.marginals,
            "labelling": self.labelling,
            "feature_weight": self.feature_weight, "accountant": self.accountant, "neighbouring": self.neighbouring,
            "n_levels": self.n_levels,
            "settings": dataclasses.asdict(self.settings), "seed": self.seed, "device": str(self.device),
            "progress": self.progress,
        }

    def save(self, path: str | Path) -> None:
        """Write ``state_dict()`` with ``torch.save``."""
        torch.save(self.state_dict(), path)

    @classmethod
    def from_state_dict(cls, state: dict[str, Any]) -> "SlicedGenerator":
        """Rebuild a fitted model from ``state_dict()``."""
        if state.get("class") != cls.__name__:
            raise ValueError(f"this state belongs to {state.get('class')!r}, not {cls.__name__}; use that class.")
        parameters = dict(state["parameters"])
        parameters["settings"] = FlowSettings(**parameters["settings"])
        model = cls(**parameters)
        model.pool_ = ReleasePool.from_state_dict(state["pool"])
        model.report_ = state["report"]
        model.labels_, model.n_classes_ = state["labels"], state["n_classes"]
        if model.n_classes_ is not None:
            model.codec = LabelledCodec(model.n_classes_, model.feature_weight)
        model._load_extra(state)
        return model

    def _load_extra(self, state: dict[str, Any]) -> None:
        """Restore what a subclass adds to the state (DPSWGen: its network)."""

    @classmethod
    def load(cls, path: str | Path) -> "SlicedGenerator":
        """Read a model written by ``save``."""
        return cls.from_state_dict(torch.load(path, weights_only=False))

    def __repr__(self) -> str:
        fitted = "fitted" if self.pool_ is not None else "not fitted"
        return f"{type(self).__name__}({fitted}, release={self.release!r}, settings={self.settings})"


def allocate(count: int, weights: torch.Tensor) -> torch.Tensor:
    """Split ``count`` into integer parts proportional to ``weights`` (largest remainders), ``(C,)`` long."""
    exact = weights.to(torch.float64) / weights.sum() * count
    parts = exact.floor().long()
    remainder = count - int(parts.sum())
    parts[torch.argsort(exact - parts, descending=True)[:remainder]] += 1
    return parts

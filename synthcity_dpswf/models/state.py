"""What a sliced generator holds: its public settings, its other public parameters and, once fitted, its pool of
releases and their report. ``SlicedGenerator`` (``models.base``) sets these in its constructor (``GeneratorState``);
its three jobs read them, each in its module: releasing (``models.releasing``), sampling (``models.sampling``) and
persistence (``models.persistence``).

The settings are of two kinds. ``ReleaseSchedule``, fixed at ``fit``: which records each release reads, from public
numbers only (privacy.md, "Sampling and composition"): one release of all records (DPSWflow), or K per-step batches
(DPSWflow-r, DPSWgen), Poisson samples of rate q (add/remove; replace-one for histograms and marginals) or of a fixed
size b (replace-one); and the accountant of that schedule. A value that exists before any generator is built, so a run's noise is calibrated once,
from it (``privacy.budget.Budget.noise_multiplier``), before the tables it decides are laid out. ``FlowSettings``,
free to change after ``fit``: how generation runs the flow; each run is post-processing of the releases.

The pool (``ReleasePool``) holds only released (noisy) payloads, their public directions and noise levels, and the
public parameters of their kind: everything built from it is post-processing and costs no budget. Nothing here is
derived from private records but the pool and the report, which hold only releases (privacy.md, "What a fitted model
stores").
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, get_args

import torch

from synthcity_dpswf.math import LabelledCodec
from synthcity_dpswf.math.checks import check_non_negative, check_positive, check_positive_int
from synthcity_dpswf.math.histograms import CountEstimator
from synthcity_dpswf.math.sliced import ParticleCDF
from synthcity_dpswf.privacy import (
    MECHANISMS,
    REPLACE_ONE_PLD,
    REPLACE_ONE_RDP,
    Adjacency,
    MarginalLayout,
    PrivacyReport,
    ReleaseAccountant,
    ReleaseMechanism,
    ReleaseOptions,
)
from synthcity_dpswf.privacy.gaussian import Prior, PriorLike
from synthcity_dpswf.privacy.mechanisms.base import Boundary

ReleasePlan = tuple[ReleaseAccountant, int]
"""A schedule's accountant and its number of releases K (``ReleaseSchedule.accountant``): what a fit calibrates its
noise to and releases by."""

DEFAULT_PASSES = 10.0
"""Passes over the data of the per-step releases: K = ceil(passes n / b), or ceil(passes / q) under add/remove."""

MIN_DEFAULT_BATCH = 1000
"""The smallest default batch (or all records when fewer): a release's counts must stand out of noise that does
not shrink with the batch."""

DEFAULT_SAMPLE_RATE = 0.1
"""The Poisson rate of add/remove releases when none is given: the rate of the replace-one default on large data
(b = n / 10, ``default_batch_size``), a constant because n is private there."""


def default_batch_size(n_records: int) -> int:
    """b = max(ceil(n / 10), min(n, 1,000)): q = 0.1 on large data (the rate the per-step histogram form was
    run with on a validation split of MNIST), every record in each release below 1,000 (a tenth of a small table,
    iris' 150 rows, is a batch whose marginal counts are noise: synthcity's iris check failed in most fits)."""
    return max(math.ceil(n_records / 10), min(n_records, MIN_DEFAULT_BATCH))


def release_steps(n_records: int, batch_size: int, passes: float) -> int:
    """K = ceil(passes * n / b): the number of per-step releases for ``passes`` passes over the data."""
    return max(1, math.ceil(passes * n_records / batch_size))


@dataclass(frozen=True)
class ReleaseSchedule:
    """The releases' sampling: ``per_step=False``, one release of all records (q = 1, K = 1); else K releases, each of a
    batch drawn afresh, K = ``release_steps`` or enough for ``passes`` passes:
    - under add/remove, Poisson samples at ``sample_rate`` (``None``: ``DEFAULT_SAMPLE_RATE``);
    - under replace-one, for the sum kinds of privacy.md's "Poisson batches under replace-one" (histograms, marginals),
      Poisson samples at ``sample_rate`` (``None``: q = ``default_batch_size(n) / n``, the rate of the fixed-size
      default), or, where ``batch_size`` is given, batches of exactly that many records;
    - under replace-one otherwise, batches of ``batch_size`` records (``None``: ``default_batch_size(n)``): other
      kinds, a default q of 1 (n up to 1,000: every record in every release, exact without the antipodal pair's
      slack), and schedules after a sampled prior of fixed-size batches (a DP-SGD codec's trained with
      ``replace_one_sampling="fixed"``, accounted by the replace-one RDP bound). After a sampled prior of Poisson
      batches (the DP-SGD codec's default) the releases take Poisson batches or all records in each release: a
      fixed-size batch of fewer records is refused (the antipodal pair composes no such batch).
    Poisson batches are the replace-one default for the sum kinds since their accounting (the antipodal pair) takes
    0.63 to 0.69 of the fixed-size batches' noise at equal epsilon for every q below 1
    (``benchmarks/results/replace_one_accounting.md``)."""

    per_step: bool = False
    batch_size: int | None = None
    sample_rate: float | None = None
    passes: float = DEFAULT_PASSES
    release_steps: int | None = None

    def __post_init__(self) -> None:
        if self.batch_size is not None:
            check_positive_int("batch_size", self.batch_size)
        if self.sample_rate is not None and (isinstance(self.sample_rate, bool) or not isinstance(self.sample_rate, (int, float))
                                             or not 0 < self.sample_rate <= 1):
            raise ValueError(f"sample_rate must lie in (0, 1], got {self.sample_rate!r}.")
        if isinstance(self.passes, bool) or not isinstance(self.passes, (int, float)) or not math.isfinite(self.passes) \
                or self.passes <= 0:
            raise ValueError(f"passes must be a finite number > 0, got {self.passes!r}.")
        if self.release_steps is not None:
            check_positive_int("release_steps", self.release_steps)
        if self.batch_size is not None and self.sample_rate is not None:
            raise ValueError("give batch_size (batches of a fixed size) or sample_rate (Poisson batches), not both.")

    def batches(self, n_records: int) -> tuple[int, int]:
        """``(b, K)``: records per release and number of releases for ``n_records`` (public) records, replace-one."""
        if not self.per_step:
            return n_records, 1
        batch_size = default_batch_size(n_records) if self.batch_size is None else self.batch_size
        if batch_size > n_records:
            raise ValueError(f"batch_size={batch_size} exceeds the {n_records} records; lower it.")
        return batch_size, self.release_steps or release_steps(n_records, batch_size, self.passes)

    def check_release(self, release: str, neighbouring: Adjacency | str) -> None:
        """Refuse Poisson batches of ``release`` under replace-one where privacy.md proves none: the antipodal pair
        covers sums whose every record contributes one norm (``MechanismKind.replace_one_contribution_norm``;
        "Poisson batches under replace-one"). The one place this rule is checked: the plugins and ``DPSWFlowR`` ask it
        where they are built, ``accountant`` before any plan."""
        if Adjacency.of(neighbouring).n_is_public and self.per_step and self.sample_rate is not None \
                and MECHANISMS[release].replace_one_contribution_norm is None:
            proven = sorted(name for name, kind in MECHANISMS.items() if kind.replace_one_contribution_norm)
            raise ValueError(f"Poisson batches under replace-one are proven for sums whose every record contributes one "
                             f"norm ({proven}), not for {release!r}: give batch_size instead.")

    def poisson(self) -> tuple[float, int]:
        """``(q, K)``: the Poisson rate and number of releases of Poisson batches (never a function of n)."""
        if not self.per_step:
            return 1.0, 1
        sample_rate = DEFAULT_SAMPLE_RATE if self.sample_rate is None else self.sample_rate
        return sample_rate, self.release_steps or max(1, math.ceil(self.passes / sample_rate))

    def accountant(self, n_public: int | None, neighbouring: Adjacency | str, accountant: str, release: str,
                   prior: PriorLike = None) -> ReleasePlan:
        """The accountant of this schedule of ``release`` releases and their number (the class docstring says which
        batches), ``prior`` as in ``ReleaseAccountant``. Under add/remove: Poisson batches (n never read), ``accountant``.
        Under replace-one, the schedule overrides ``accountant`` where privacy.md proves another (stated in the report):
        Poisson batches by the antipodal pair (``REPLACE_ONE_PLD``: "Poisson batches under replace-one"); fixed-size
        per-step batches of a kind whose Opacus pair privacy.md does not prove (histograms, marginal tables) by the
        replace-one RDP bound, and so every schedule after a replace-one DP-SGD codec trained on fixed-size batches
        ("A private image codec trained by DP-SGD"); releases of all records after one trained on Poisson batches by
        the antipodal pair, where they are the Gaussian mechanism."""
        self.check_release(release, neighbouring)
        if Adjacency.of(neighbouring).n_is_public:
            if n_public is None:
                raise ValueError("replace-one schedules are functions of the public n; pass n_records.")
            norm = MECHANISMS[release].replace_one_contribution_norm
            schedules = prior.schedules if isinstance(prior, Prior) else ()
            fixed_prior = any(not schedule.poisson for schedule in schedules)
            poisson_prior = any(schedule.replace_one_poisson for schedule in schedules)
            rate = self.sample_rate or default_batch_size(n_public) / n_public
            by_default = self.batch_size is None and self.sample_rate is None and rate < 1 and not fixed_prior
            if self.per_step and norm is not None and (self.sample_rate is not None or by_default):
                sample_rate, steps = dataclasses.replace(self, sample_rate=rate).poisson()
                if by_default:  # K as the fixed-size default counts it: ceil(passes n / b)
                    steps = self.release_steps or release_steps(n_public, default_batch_size(n_public), self.passes)
                return ReleaseAccountant.poisson(sample_rate, REPLACE_ONE_PLD, prior, n_records=n_public,
                                                 contribution_norm=norm), steps
            batch_size, steps = self.batches(n_public)
            if poisson_prior:
                if batch_size < n_public:
                    raise ValueError(
                        f"the {release!r} release on batches of {batch_size} of the {n_public} records cannot be "
                        "composed with a DP-SGD codec trained on Poisson batches under replace-one (its antipodal pair "
                        "composes Poisson batches and releases of all records only): release histograms or marginals "
                        "without batch_size (Poisson batches), or all records in each release (batch_size=n), or train "
                        "the codec with PrivateAutoencoderSettings(replace_one_sampling='fixed') (ImageRunConfig's "
                        "private_autoencoder, or a runner grid's dpsgd; the plugins and the CLI train it on Poisson "
                        "batches).")
                return ReleaseAccountant(n_public, batch_size, REPLACE_ONE_PLD, prior), steps
            per_step = steps > 1 or batch_size < n_public
            if (per_step and not MECHANISMS[release].opacus_pair_proven) or fixed_prior:
                accountant = REPLACE_ONE_RDP
            return ReleaseAccountant(n_public, batch_size, accountant, prior), steps
        sample_rate, steps = self.poisson()
        return ReleaseAccountant.poisson(sample_rate, accountant, prior), steps


Reuse = Literal["pooled", "once"]


@dataclass(frozen=True)
class FlowSettings:
    """Generation-time settings: public, free to change after ``fit`` (each run is post-processing).

    Defaults chosen by CAS for the default release (projected histograms) on a validation split of the MNIST
    training set and on the digits (``benchmarks/results/archive/histogram_settings_{mnist,digits}.md``): h = 1,
    1,500 steps, 70 of the released directions per step. Noisy-record releases carry their noise as smoothing, which
    flattens the transport map: h = 3 with 2,000-3,000 steps did far better than h = 1 there, on MNIST and on the
    digits (on MNIST: ``benchmarks/results/images_mnist.md``): pass them with such releases.

    Attributes:
        n_steps: flow steps (with ``reuse="once"``: ignored, one step per release).
        step_size: h of the Euler-Maruyama step.
        entropy: lambda, the entropic term (Wiener noise sqrt(2 lambda h)).
        smoothing: total smoothing sigma of target and particles for record and projected releases; ``None``
            uses the release noise, a larger value adds noise to the released data to match. Never below the
            release noise. Histogram releases carry their noise in the counts: ``None`` or 0 only.
        flow_batch_size: released rows per flow step for record and projected releases (capped at the pool size;
            ``None``: all rows).
        n_directions: directions per flow step (released directions subsampled per step for projected kinds; of a flow
            of at most ``step_particles`` particles where that is set).
        reuse: ``"pooled"`` (every step draws from all releases) or ``"once"`` (step k uses release k only, in
            order: the paper's way; per-step record and projected releases only).
        particle_cdf: ``"histogram"`` (O(nL)), ``"sort"`` (exact ranks) or ``"grid"`` (quantile grid and
            ``searchsorted``) for the particles' CDF.
        count_estimator: how noisy counts become bin probabilities (``math.histograms.bin_probabilities``):
            ``"simplex"`` (Euclidean projection, default: it keeps empty bins empty, where clipping leaves them
            the positive half of their noise) or ``"clip"``.
        flow_particles: particles flowed per ``sample`` call when the kind's particle space can draw more rows from
            them (``ParticleSpace.resample``: the marginal kind redraws a flowed particle's position inside its coarse
            cell, i.e. its fine levels from the released one-way tables); ``None`` flows every row.
        rows_per_particle: with ``flow_particles``, a generation of more than ``flow_particles`` x this many rows flows
            one particle per this many rows instead (``flowed``); ``None``: at most ``flow_particles`` whatever the
            count.
        step_particles: a flow of more particles than this takes fewer directions a step (``for_particles``), so
            that a step's work, particles x directions, stays that of ``step_particles`` particles at ``n_directions``;
            ``None``: ``n_directions`` whatever the particles.
    """

    n_steps: int = 1500
    step_size: float = 1.0
    entropy: float = 0.0
    smoothing: float | None = None
    flow_batch_size: int | None = 4000
    n_directions: int = 70
    reuse: Reuse = "pooled"
    particle_cdf: ParticleCDF = "histogram"
    count_estimator: CountEstimator = "simplex"
    flow_particles: int | None = None
    rows_per_particle: int | None = None
    step_particles: int | None = None

    def __post_init__(self) -> None:
        check_positive_int("n_steps", self.n_steps)
        check_positive("step_size", self.step_size)
        check_non_negative("entropy", self.entropy)
        if self.smoothing is not None:
            check_non_negative("smoothing", self.smoothing)
        if self.flow_batch_size is not None:
            check_positive_int("flow_batch_size", self.flow_batch_size)
        check_positive_int("n_directions", self.n_directions)
        if self.reuse not in get_args(Reuse):
            raise ValueError(f"reuse must be one of {get_args(Reuse)}, got {self.reuse!r}.")
        if self.particle_cdf not in get_args(ParticleCDF):
            raise ValueError(f"particle_cdf must be one of {get_args(ParticleCDF)}, got {self.particle_cdf!r}.")
        if self.flow_particles is not None:
            check_positive_int("flow_particles", self.flow_particles)
        if self.step_particles is not None:
            check_positive_int("step_particles", self.step_particles)
        if self.rows_per_particle is not None:
            check_positive_int("rows_per_particle", self.rows_per_particle)
        if self.count_estimator not in get_args(CountEstimator):
            raise ValueError(f"count_estimator must be one of {get_args(CountEstimator)}, got {self.count_estimator!r}.")

    def flowed(self, count: int) -> int:
        r"""The particles a generation of ``count`` rows flows: every row without ``flow_particles`` (F), else
        :math:`\min(n, \max(F, \lceil n / R \rceil))` with R = ``rows_per_particle`` (:math:`\min(n, F)` without it)."""
        if self.flow_particles is None:
            return count
        most = self.flow_particles if self.rows_per_particle is None else max(self.flow_particles, -(-count // self.rows_per_particle))
        return min(count, most)

    def for_particles(self, particles: int) -> "FlowSettings":
        r"""These settings for a flow of ``particles`` particles: beyond ``step_particles`` (P) of them, the directions
        a step are :math:`\max(1, \lfloor L P / n \rfloor)` for ``n_directions`` L and n particles, so that a step
        projects about L P particles in all, whatever n."""
        if self.step_particles is None or particles <= self.step_particles:
            return self
        return dataclasses.replace(self, n_directions=max(1, self.n_directions * self.step_particles // particles))


@dataclass
class ReleasePool:
    """K releases of one kind.

    Attributes:
        kind: the release kind's name (``privacy.MECHANISMS``).
        options: its public parameters (radius, directions per release, bins).
        releases: the released payloads, stacked: ``(K, b, d)`` noisy records, ``(K, b, L)`` noisy projections,
            or ``(K, C, L, G)`` noisy counts.
        noise_std: the noise standard deviation s of each release, ``(K,)``.
        directions: the public directions of each release, ``(K, d, L)`` (``None`` for record releases).
        dim: d, the dimension of the records.
        n_classes: C for class-conditional releases (``None`` otherwise).
        one_way: for marginal releases, another release's measurements of some columns' one-way tables (a DP
            domain's: ``SlicedGenerator.add_one_way``): ``{column: (noisy counts (K_j,), their noise stds (K_j,),
            the records they count)}``, combined with the pool's own tables by ``models.marginal_target``.
        cache: post-processing computed once from the releases: the marginal estimates and the quantile grids of
            their slices (``models.marginal_target``). Left out of ``state_dict`` (``SlicedGenerator.save``), but pickled
            with the model by a plugin's ``save()`` (synthcity serialises the whole plugin): it holds only
            functions of the releases, public like them, no private record.
    """

    kind: str
    options: ReleaseOptions
    releases: torch.Tensor
    noise_std: torch.Tensor
    directions: torch.Tensor | None
    dim: int
    n_classes: int | None = None
    one_way: dict[int, tuple[torch.Tensor, torch.Tensor, float]] = field(default_factory=dict)
    cache: dict[Any, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def n_releases(self) -> int:
        return self.releases.shape[0]

    def describe(self) -> str:
        """The stored size, for the privacy report."""
        n_bytes = self.releases.numel() * self.releases.element_size()
        if self.directions is not None:
            n_bytes += self.directions.numel() * self.directions.element_size()
        shape = " x ".join(str(size) for size in self.releases.shape[1:])
        return f"{self.n_releases} release(s) of {shape} {MECHANISMS[self.kind].stored_as}, {n_bytes / 2**20:.2f} MiB"

    def state_dict(self) -> dict[str, object]:
        return {
            "kind": self.kind, "options": dataclasses.asdict(self.options), "releases": self.releases,
            "noise_std": self.noise_std, "directions": self.directions, "dim": self.dim, "n_classes": self.n_classes,
            "one_way": self.one_way,
        }

    @classmethod
    def from_state_dict(cls, state: dict[str, object]) -> "ReleasePool":
        if state.get("selection") is not None:
            raise ValueError("this generator was saved by an earlier version whose pair selection released measured "
                             "tables, joined to the release at generation; this version does not read them: refit it.")
        return cls(
            kind=state["kind"],  # type: ignore[arg-type]
            options=ReleaseOptions.from_dict(state["options"]),  # type: ignore[arg-type]
            releases=state["releases"],  # type: ignore[arg-type]
            noise_std=state["noise_std"],  # type: ignore[arg-type]
            directions=state.get("directions"),  # type: ignore[arg-type]
            dim=int(state["dim"]),  # type: ignore[arg-type]
            n_classes=state.get("n_classes"),  # type: ignore[arg-type]
            one_way=dict(state.get("one_way") or {}),  # type: ignore[call-overload]
        )


Labelling = Literal["conditional", "joint"]
"""How labels passed to ``fit`` are released: one release per class, or joined into each record."""


class GeneratorState:
    """The attributes every job of a sliced generator reads (``SlicedGenerator``'s arguments document them), and the
    accessors of its fitted state."""

    name: ClassVar[str]
    per_step: ClassVar[bool] = False
    """Whether the generator makes per-step releases (then the kind's ``per_step_directions`` default applies,
    else its ``one_shot_directions``: ``models.kinds.KindSpec``)."""
    conditions_on_target: ClassVar[bool] = True
    """Whether generation can flow one group per class of a named target (``MarginalLayout.condition``)."""

    mechanism: ReleaseMechanism
    codec: LabelledCodec
    release: str
    radius: float
    boundary: Boundary
    n_release_directions: int | None
    n_bins: int
    marginals: MarginalLayout | None
    labelling: Labelling
    feature_weight: float
    accountant: str
    neighbouring: Adjacency
    n_levels: int
    settings: FlowSettings
    seed: int
    release_seed: int | None
    device: torch.device
    progress: bool
    pool_: ReleasePool | None
    """The releases, once fitted (all that ``fit`` keeps)."""
    report_: PrivacyReport | None
    """Their privacy report, once fitted."""
    labels_: Labelling | None
    """How the labels were released (``None``: fitted without labels)."""
    n_classes_: int | None
    """The public class count of a fit with labels."""

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

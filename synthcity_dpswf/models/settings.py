"""A generator's public settings, of two kinds: its releases' schedule, fixed at ``fit``, and its generation-time
settings, free to change after it.

``ReleaseSchedule``: which records each release reads, from public numbers only (privacy.md, "Sampling and
composition"): one release of all records (DPSWflow), or K per-step batches (DPSWflow-r, DPSWgen) of a fixed size b
under replace-one or Poisson samples of rate q under add/remove; and the accountant of that schedule. A value that
exists before any generator is built, so a run's noise is calibrated once, from it (``privacy.budget.Budget.
noise_multiplier``), before the tables it decides are laid out.

``FlowSettings``: how generation runs the flow; each run is post-processing of the releases.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal, get_args

from synthcity_dpswf.math.checks import check_non_negative, check_positive, check_positive_int
from synthcity_dpswf.math.histograms import CountEstimator
from synthcity_dpswf.math.sliced import ParticleCDF
from synthcity_dpswf.privacy import MECHANISMS, REPLACE_ONE_RDP, Adjacency, ReleaseAccountant
from synthcity_dpswf.privacy.gaussian import Prior, PriorLike

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
    """b = max(ceil(n / 10), min(n, 1,000)): q = 0.1 on large data (the per-step histogram form run on MNIST:
    docs/flows.md, "Per-step histogram releases (DPSWflow-r's form), MNIST"), every record in each release below
    1,000 (a tenth of a small table, iris' 150 rows, is a batch whose marginal counts are noise: synthcity's iris
    check failed in most fits)."""
    return max(math.ceil(n_records / 10), min(n_records, MIN_DEFAULT_BATCH))


def release_steps(n_records: int, batch_size: int, passes: float) -> int:
    """K = ceil(passes * n / b): the number of per-step releases for ``passes`` passes over the data."""
    return max(1, math.ceil(passes * n_records / batch_size))


@dataclass(frozen=True)
class ReleaseSchedule:
    """The releases' sampling: ``per_step=False``, one release of all records (q = 1, K = 1); else K releases of
    ``batch_size`` records each (replace-one; ``None``: ``default_batch_size(n)``) or of Poisson samples at
    ``sample_rate`` (add/remove; ``None``: ``DEFAULT_SAMPLE_RATE``), K = ``release_steps`` or enough for ``passes``
    passes."""

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

    def batches(self, n_records: int) -> tuple[int, int]:
        """``(b, K)``: records per release and number of releases for ``n_records`` (public) records, replace-one."""
        if not self.per_step:
            return n_records, 1
        batch_size = default_batch_size(n_records) if self.batch_size is None else self.batch_size
        if batch_size > n_records:
            raise ValueError(f"batch_size={batch_size} exceeds the {n_records} records; lower it.")
        return batch_size, self.release_steps or release_steps(n_records, batch_size, self.passes)

    def poisson(self) -> tuple[float, int]:
        """``(q, K)``: the Poisson rate and number of releases under add/remove (never a function of n)."""
        if not self.per_step:
            return 1.0, 1
        sample_rate = DEFAULT_SAMPLE_RATE if self.sample_rate is None else self.sample_rate
        return sample_rate, self.release_steps or max(1, math.ceil(self.passes / sample_rate))

    def accountant(self, n_public: int | None, neighbouring: Adjacency | str, accountant: str, release: str,
                   prior: PriorLike = None) -> ReleasePlan:
        """The accountant of this schedule of ``release`` releases and their number: fixed-size batches of the public n
        under replace-one, Poisson batches (n never read) under add/remove; ``prior`` as in ``ReleaseAccountant``.
        Per-step releases of a kind whose Opacus pair privacy.md does not prove (histograms, marginal tables) are
        accounted by the replace-one RDP bound instead of ``accountant`` (stated in the report), and so is every
        schedule after a replace-one DP-SGD codec (its fixed-size batches of gradient sums: privacy.md, "A private image
        codec trained by DP-SGD")."""
        if Adjacency.of(neighbouring).n_is_public:
            if n_public is None:
                raise ValueError("replace-one schedules are functions of the public n; pass n_records.")
            batch_size, steps = self.batches(n_public)
            per_step = steps > 1 or batch_size < n_public
            sampled_prior = isinstance(prior, Prior) and not prior.one_shot
            if (per_step and not MECHANISMS[release].opacus_pair_proven) or sampled_prior:
                accountant = REPLACE_ONE_RDP
            return ReleaseAccountant(n_public, batch_size, accountant, prior), steps
        sample_rate, steps = self.poisson()
        return ReleaseAccountant.poisson(sample_rate, accountant, prior), steps


Reuse = Literal["pooled", "once"]


@dataclass(frozen=True)
class FlowSettings:
    """Generation-time settings: public, free to change after ``fit`` (each run is post-processing).

    Defaults chosen for the default release (projected histograms; docs/flows.md, "Flow settings for histogram
    releases", on a validation split of the MNIST training set and on the digits): h = 1, 1,500 steps, 70 of the
    released directions per step. Noisy-record releases carry their noise as smoothing, which flattens the
    transport map: h = 3 with 2,000-3,000 steps did far better than h = 1 there, on MNIST and on the digits
    (docs/flows.md, "What the flows need to work well" and "The same on MNIST"): pass them with such releases.

    Attributes:
        n_steps: flow steps (with ``reuse="once"``: ignored, one step per release).
        step_size: h of the Euler-Maruyama step.
        entropy: lambda, the entropic term (Wiener noise sqrt(2 lambda h)).
        smoothing: total smoothing sigma of target and particles for record and projected releases; ``None``
            uses the release noise, a larger value adds noise to the released data to match. Never below the
            release noise. Histogram releases carry their noise in the counts: ``None`` or 0 only.
        flow_batch_size: released rows per flow step for record and projected releases (capped at the pool size;
            ``None``: all rows).
        n_directions: directions per flow step (released directions subsampled per step for projected kinds).
        reuse: ``"pooled"`` (every step draws from all releases) or ``"once"`` (step k uses release k only, in
            order: the paper's way; per-step record and projected releases only).
        particle_cdf: ``"histogram"`` (O(nL)), ``"sort"`` (exact ranks) or ``"grid"`` (quantile grid and
            ``searchsorted``) for the particles' CDF.
        count_estimator: how noisy counts become bin probabilities (``math.histograms.bin_probabilities``):
            ``"simplex"`` (Euclidean projection, default, chosen on validation data: docs/flows.md, "Flow
            settings for histogram releases") or ``"clip"``.
        flow_particles: particles flowed per ``sample`` call when the kind's particle space can draw more rows from
            them (``ParticleSpace.resample``: the marginal kind redraws a flowed particle's position inside its coarse
            cell, i.e. its fine levels from the released one-way tables); ``None`` flows every row.
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
        if self.count_estimator not in get_args(CountEstimator):
            raise ValueError(f"count_estimator must be one of {get_args(CountEstimator)}, got {self.count_estimator!r}.")

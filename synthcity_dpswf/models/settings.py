"""Generation-time settings of the flows: public, free to change after ``fit`` (each run is post-processing)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

from synthcity_dpswf.math.checks import check_non_negative, check_positive, check_positive_int
from synthcity_dpswf.math.histograms import CountEstimator
from synthcity_dpswf.math.sliced import ParticleCDF

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

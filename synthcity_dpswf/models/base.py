"""What the three generators share: validation, bounding, the release pool, the report, sampling, saving.

``fit(records, epsilon, delta)`` bounds the records, makes the releases (the subclass's schedule) and keeps
only them; ``sample(count)`` is post-processing of the pool, at no budget, with generation-time settings
that can be changed per call.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal, get_args

import torch

from synthcity_dpswf.math import EmpiricalTarget, TargetSource, run_flow
from synthcity_dpswf.math.checks import check_matrix, check_non_negative, check_positive, check_positive_int
from synthcity_dpswf.math.sliced import ParticleCDF
from synthcity_dpswf.models.pool import ProjectedReleaseTarget, ReleaseKind, ReleasePool, Reuse
from synthcity_dpswf.models.releasing import release_batches
from synthcity_dpswf.privacy import (
    ACCOUNTANTS,
    PrivacyReport,
    ReleaseAccountant,
    bound_records,
    projected_sensitivity,
    record_sensitivity,
    secret_generator,
)
from synthcity_dpswf.privacy.releases import Boundary


@dataclass(frozen=True)
class FlowSettings:
    """Generation-time settings: public, free to change after ``fit`` (each run is post-processing).

    Defaults measured with pooled record releases at epsilon = 10 (noise s of about 1.3): on MNIST latents
    (CAS of 10,000 samples) h = 1 / 1,500 steps gave 25.7%, h = 3 51.4%, h = 3 / 3,000 steps 59.4%; on the
    digits demo h = 1 / 1,000 steps 18.4%, h = 3 / 2,000 steps 34.4%. Heavier smoothing flattens the
    transport map and asks for a longer horizon h * n_steps (docs/flows.md, fact 2). lambda = 0.001 gave 9.4%.

    Attributes:
        n_steps: flow steps (with ``reuse="once"``: ignored, one step per release).
        step_size: h of the Euler-Maruyama step.
        entropy: lambda, the entropic term (Wiener noise sqrt(2 lambda h)).
        smoothing: total smoothing sigma of target and particles; ``None`` uses the release noise, a larger
            value adds noise to the released data to match. Never below the release noise.
        batch_size: pool rows per flow step (capped at the pool size; ``None``: all rows).
        n_directions: directions per flow step (projected releases: columns subsampled per step).
        reuse: ``"pooled"`` (every step draws from all releases) or ``"once"`` (step k uses release k only, in
            order: the paper's way; per-step releases only).
        particle_cdf: ``"histogram"`` (O(nL)), ``"sort"`` (exact ranks) or ``"grid"`` (quantile grid and
            ``searchsorted``) for the particles' CDF.
    """

    n_steps: int = 2000
    step_size: float = 3.0
    entropy: float = 0.0
    smoothing: float | None = None
    batch_size: int | None = 4000
    n_directions: int = 70
    reuse: Reuse = "pooled"
    particle_cdf: ParticleCDF = "histogram"

    def __post_init__(self) -> None:
        check_positive_int("n_steps", self.n_steps)
        check_positive("step_size", self.step_size)
        check_non_negative("entropy", self.entropy)
        if self.smoothing is not None:
            check_non_negative("smoothing", self.smoothing)
        if self.batch_size is not None:
            check_positive_int("batch_size", self.batch_size)
        check_positive_int("n_directions", self.n_directions)
        if self.reuse not in ("pooled", "once"):
            raise ValueError(f"reuse must be 'pooled' or 'once', got {self.reuse!r}.")
        if self.particle_cdf not in get_args(ParticleCDF):
            raise ValueError(f"particle_cdf must be one of {get_args(ParticleCDF)}, got {self.particle_cdf!r}.")


def check_privacy_target(epsilon: float, delta: float, n_records: int) -> None:
    """Validate (epsilon, delta) for n records: epsilon > 0 (inf allowed), delta in (0, 1), warn if delta >= 1/n."""
    if isinstance(epsilon, bool) or not isinstance(epsilon, (int, float)) or math.isnan(epsilon) or epsilon <= 0:
        raise ValueError(f"epsilon must be > 0 (float('inf') for no privacy), got {epsilon!r}.")
    if math.isfinite(epsilon):
        check_delta(delta, n_records)
    elif isinstance(delta, bool) or not isinstance(delta, (int, float)) or not 0 < delta < 1:
        raise ValueError(f"delta must lie in (0, 1), got {delta!r}; a common choice is below 1/n.")


def check_delta(delta: float, n_records: int) -> None:
    """Validate delta in (0, 1) for n records; warn if delta >= 1/n."""
    if isinstance(delta, bool) or not isinstance(delta, (int, float)) or not 0 < delta < 1:
        raise ValueError(f"delta must lie in (0, 1), got {delta!r}; a common choice is below 1/n.")
    if delta >= 1 / n_records:
        warnings.warn(
            f"delta={delta:g} >= 1/n = {1 / n_records:.3g}: a mechanism that publishes a random record would meet "
            "it; choose delta well below 1/n.",
            stacklevel=3,
        )


class SlicedGenerator(ABC):
    """Base class of DPSWFlow, DPSWFlowR and DPSWGen.

    Args:
        release: ``"record"`` (noisy-record release, the default) or ``"projected"`` (the paper's).
        radius: r, records are mapped onto the ball (or sphere) of this radius before any release.
        boundary: ``"ball"`` (project records with norm > r onto the ball) or ``"sphere"`` (normalise all).
        n_release_directions: directions of each projected release (the paper's N_theta).
        accountant: ``"rdp"``, ``"prv"`` or ``"gdp"`` (Opacus), composes the releases.
        n_levels: G, points of the quantile grid.
        settings: generation-time ``FlowSettings``.
        seed: public seed of the directions and of generation (never of the release noise).
        release_seed: seed of the batches and noise of the releases; ``None`` (default) draws it from OS
            entropy and keeps it nowhere. Pass one only in tests: it makes the noise removable.
        device: where the flow runs (``"cpu"``, ``"cuda"``); releases are made and stored on CPU.
        progress: show progress bars.
    """

    name: ClassVar[str]

    def __init__(
        self,
        *,
        release: ReleaseKind = "record",
        radius: float = 1.0,
        boundary: Boundary = "ball",
        n_release_directions: int = 70,
        accountant: str = "rdp",
        n_levels: int = 1000,
        settings: FlowSettings | None = None,
        seed: int = 0,
        release_seed: int | None = None,
        device: str | torch.device = "cpu",
        progress: bool = False,
    ) -> None:
        if release not in ("record", "projected"):
            raise ValueError(f"release must be 'record' or 'projected', got {release!r}.")
        if boundary not in ("ball", "sphere"):
            raise ValueError(f"boundary must be 'ball' or 'sphere', got {boundary!r}.")
        check_positive("radius", radius)
        check_positive_int("n_release_directions", n_release_directions)
        if accountant not in ACCOUNTANTS:
            raise ValueError(f"accountant must be one of {sorted(ACCOUNTANTS)}, got {accountant!r}.")
        if isinstance(n_levels, bool) or not isinstance(n_levels, int) or n_levels < 2:
            raise ValueError(f"n_levels must be an integer >= 2, got {n_levels!r}.")
        self.release = release
        self.radius = float(radius)
        self.boundary = boundary
        self.n_release_directions = n_release_directions
        self.accountant = accountant
        self.n_levels = n_levels
        self.settings = settings if settings is not None else FlowSettings()
        self.seed = seed
        self.release_seed = release_seed
        self.device = torch.device(device)
        self.progress = progress
        self.pool_: ReleasePool | None = None
        self.report_: PrivacyReport | None = None

    # ----------------------------------------------------------------------------------------- fitting
    def fit(
        self, records: torch.Tensor, epsilon: float | None, delta: float, *, noise_multiplier: float | None = None
    ) -> "SlicedGenerator":
        """Bound ``records`` (``(n, d)``), make the releases of ``release_schedule``, keep only them and their
        report.

        The noise is calibrated to (epsilon, delta); or, with ``epsilon=None``, set by ``noise_multiplier``
        z (noise std s = z Delta) and the report gives the epsilon it achieves at ``delta`` (as Opacus'
        ``make_private`` does beside ``make_private_with_epsilon``).
        """
        check_matrix("records", records)
        if (epsilon is None) == (noise_multiplier is None):
            raise ValueError("give exactly one of epsilon (to calibrate the noise) and noise_multiplier (to set it).")
        if epsilon is None:
            check_positive("noise_multiplier", noise_multiplier)
            check_delta(delta, records.shape[0])
        else:
            check_privacy_target(epsilon, delta, records.shape[0])
        bounded = bound_records(records.detach().to("cpu", torch.float32), self.radius, self.boundary)
        n_records = bounded.shape[0]
        batch_size, steps = self.release_schedule(n_records)
        accountant = ReleaseAccountant(n_records, batch_size, self.accountant)
        if noise_multiplier is None:
            assert epsilon is not None
            noise_multiplier = 0.0 if math.isinf(epsilon) else accountant.calibrate(float(epsilon), float(delta), steps)
        self.pool_ = release_batches(
            bounded, kind=self.release, batch_size=batch_size, steps=steps, noise_multiplier=noise_multiplier,
            radius=self.radius, n_directions=self.n_release_directions,
            directions_generator=torch.Generator().manual_seed(self.seed), secret=secret_generator(self.release_seed),
        )
        del bounded
        self.report_ = self._report(self.pool_, float(delta), accountant, noise_multiplier, steps)
        self._after_release()
        return self

    @abstractmethod
    def release_schedule(self, n_records: int) -> tuple[int, int]:
        """``(b, K)``: records per release and number of releases for ``n_records`` records (public)."""

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
        n, b = accountant.n_records, accountant.batch_size
        if b == n and steps == 1:
            sampling = f"none: one release of all n = {n} records (q = 1, one step)"
        else:
            sampling = f"uniform subsets of exactly b = {b} of n = {n} records, independent across the {steps} steps"
        if pool.kind == "record":
            sensitivity = record_sensitivity(self.radius)
            mechanism = "noisy-record release R = Y_B + N(0, s^2 I), Delta = 2r"
        else:
            assert pool.directions is not None
            sensitivity = max(projected_sensitivity(theta, self.radius) for theta in pool.directions)
            mechanism = (
                f"projected release R = Y_B Theta_k + N(0, s_k^2), L = {pool.directions.shape[2]}, "
                "Delta_k = 2r ||Theta_k||_2 (exact spectral norm), s_k = z Delta_k (largest shown)"
            )
        public = (
            f"n = {accountant.n_records} records, d = {pool.dim}, the directions (seed {self.seed})",
            f"the record bound: {self.boundary} of radius {self.radius:g}",
        )
        common = dict(
            delta=delta, mechanism=mechanism, sampling=sampling, sample_rate=accountant.sample_rate, steps=steps,
            sensitivity=sensitivity, radius=self.radius, stored=pool.describe(), public=public,
        )
        if noise_multiplier == 0:
            return PrivacyReport(
                epsilon=math.inf, noise_multiplier=0.0, noise_std=0.0, accountant="none",
                conservative_epsilon=None, **common,  # type: ignore[arg-type]
            )
        accounting = accountant.epsilon(noise_multiplier, delta, steps)
        return PrivacyReport(
            epsilon=accounting.epsilon, noise_multiplier=noise_multiplier, noise_std=float(pool.noise_std.max()),
            accountant=accounting.method, conservative_epsilon=accountant.conservative_epsilon(noise_multiplier, delta, steps),
            **common,  # type: ignore[arg-type]
        )

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

    def flow_target(self, settings: FlowSettings, seed: int) -> TargetSource:
        """The flow target that generation reads from the pool, per ``settings``."""
        pool = self._pool()
        if settings.reuse == "once" and pool.n_releases == 1:
            raise ValueError("reuse='once' needs per-step releases; this model made a single release.")
        order: Literal["random", "sequential"] = "sequential" if settings.reuse == "once" else "random"
        if pool.kind == "projected":
            assert pool.directions is not None
            return ProjectedReleaseTarget(
                pool, min(settings.n_directions, pool.directions.shape[2]), settings.smoothing, self.n_levels, settings.batch_size if order == "random" else None, order, seed,
                self.device,
            )
        release_noise = float(pool.noise_std.max())
        rows = pool.releases.reshape(-1, pool.dim).to(self.device)
        batch_size = pool.releases.shape[1] if order == "sequential" else settings.batch_size
        if batch_size is not None:
            batch_size = min(batch_size, rows.shape[0])
        smoothing = release_noise if settings.smoothing is None else settings.smoothing
        return EmpiricalTarget(
            rows, settings.n_directions, smoothing, self.n_levels, batch_size, seed,
            sample_noise=release_noise, batch_order=order,
        )

    def _steps(self, settings: FlowSettings) -> int:
        return self._pool().n_releases if settings.reuse == "once" else settings.n_steps

    def initial_particles(self, count: int, generator: torch.Generator) -> torch.Tensor:
        """Gaussian particles with the records' scale: N(0, r^2 / d I), so that their norm is about r."""
        dim = self._pool().dim
        return (torch.randn(count, dim, generator=generator) * (self.radius / math.sqrt(dim))).to(self.device)

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
        of ``FlowSettings`` for this call only; ``seed`` (default: the model's) seeds the run.
        """
        check_positive_int("count", count)
        settings = dataclasses.replace(self.settings, **overrides)
        run_seed = self.seed if seed is None else seed
        generator = torch.Generator().manual_seed(run_seed + 1)
        if init is None:
            particles = self.initial_particles(count, generator)
        else:
            check_matrix("init", init, self._pool().dim)
            if init.shape[0] != count:
                raise ValueError(f"init has {init.shape[0]} rows but count={count}; pass one row per sample.")
            particles = init.to(self.device, torch.float32)
        return self._generate(particles, settings, run_seed)

    def _generate(self, particles: torch.Tensor, settings: FlowSettings, seed: int) -> torch.Tensor:
        """Flow ``particles`` over the pool (DPSWGen overrides this with its network)."""
        flow_generator = torch.Generator(device=self.device).manual_seed(seed + 2)
        return run_flow(
            particles, self.flow_target(settings, seed + 3), self._steps(settings), settings.step_size,
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
        }

    def get_parameters(self) -> dict[str, Any]:
        """The constructor arguments (public), for saving and for ``repr``."""
        return {
            "release": self.release, "radius": self.radius, "boundary": self.boundary,
            "n_release_directions": self.n_release_directions, "accountant": self.accountant,
            "n_levels": self.n_levels, "settings": dataclasses.asdict(self.settings), "seed": self.seed,
            "device": str(self.device), "progress": self.progress,
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

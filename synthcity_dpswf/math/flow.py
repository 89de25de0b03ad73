r"""The Euler-Maruyama particle integrator of the smoothed sliced-Wasserstein flow.

Eq. (sde discrete) of the paper, with the particle term that the algorithm boxes drop:

.. math:: X_{k+1} = X_k + h\, \hat v_k(X_k) + \sqrt{2 \lambda h}\, Z_{k+1}, \qquad Z_{k+1} \sim \mathcal{N}(0, I_d),

where :math:`\hat v_k` is ``sliced_drift`` against the target slice of step k. The integrator knows nothing of
privacy: it asks a ``TargetSource`` for each step's directions and target quantiles. A non-private flow uses
``EmpiricalTarget``; the private generators plug in sources that read only released (noisy) data.
"""

from __future__ import annotations

import math
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Iterator, Protocol

import torch
from tqdm.auto import tqdm

from synthcity_dpswf.math.checks import check_matrix, check_non_negative, check_positive, check_positive_int
from synthcity_dpswf.math.sliced import (
    ParticleCDF,
    empirical_quantiles,
    grouped_sliced_drift,
    project,
    quantile_levels,
    random_directions,
    sliced_drift,
)


@dataclass(frozen=True)
class TargetSlice:
    """What one flow step needs from the target: directions ``(d, L)``, the quantile functions of the smoothed
    projected target on ``quantile_levels(G)`` (``(L, G)``; ``(C, L, G)`` for C groups of particles with a
    target each, see ``run_flow``'s ``group_sizes``), and the standard deviation of the Gaussian smoothing
    those projections carry (the particles are smoothed with exactly the same). ``coordinate_scale`` (``(d,)``,
    optional) multiplies the drift coordinate by coordinate, for sparse directions that touch few coordinates
    (the marginal target: each direction lies in the plane of two columns)."""

    directions: torch.Tensor
    quantiles: torch.Tensor
    smoothing: float
    coordinate_scale: torch.Tensor | None = None


class TargetSource(Protocol):
    """A source of per-step target slices (``EmpiricalTarget`` here; release pools in ``synthcity_dpswf.models``)."""

    @property
    def dim(self) -> int:
        """Dimension d of the records."""
        ...

    def target_slice(self, step: int) -> TargetSlice:
        """The target slice for flow step ``step`` (0-based)."""
        ...


def smoothed_quantiles(
    samples: torch.Tensor,
    directions: torch.Tensor,
    added_noise: float,
    levels: torch.Tensor,
    generator: torch.Generator,
) -> torch.Tensor:
    r"""Quantile functions ``(L, G)`` of the projections of ``samples`` (``(m, d)``) onto ``directions`` after adding
    :math:`\mathcal{N}(0, \text{added\_noise}^2)` to each projection (noise drawn on CPU from ``generator``)."""
    projections = project(samples, directions)
    if added_noise > 0:
        noise = torch.randn(projections.shape, generator=generator, dtype=projections.dtype)
        projections = projections + added_noise * noise.to(projections.device)
    return empirical_quantiles(projections, levels)


class EmpiricalTarget:
    r"""A target given by samples: fresh directions every step on (a batch of) the samples, smoothed to a total
    noise of ``smoothing`` on each projection.

    ``sample_noise`` is the Gaussian noise the samples already carry (a noisy-record release carries its
    release noise s); :math:`\sqrt{\text{smoothing}^2 - \text{sample\_noise}^2}` is added so that every slice
    carries exactly ``smoothing``, which is also what the particles get. With ``smoothing = 0`` and clean
    samples this is the plain sliced flow.

    Args:
        samples: ``(m, d)`` target samples.
        n_directions: L, directions per step.
        smoothing: total sigma of the Gaussian smoothing of eq. (dpsw defn), >= ``sample_noise``.
        n_levels: G, points of the quantile grid.
        batch_size: rows per step (``None``: all rows).
        seed: seeds the directions, batches and added noise (all public: they act on given samples).
        orthonormal: draw directions as stacked orthonormal blocks.
        sample_noise: noise standard deviation already in the samples.
        batch_order: ``"random"`` (uniform rows per step: a subset, or with replacement when the pool holds
            10 times the batch or more) or ``"sequential"`` (step k takes rows
            ``k*b .. k*b + b - 1``, cycling; used to consume releases in the order they were made).
    """

    def __init__(
        self,
        samples: torch.Tensor,
        n_directions: int,
        smoothing: float = 0.0,
        n_levels: int = 1000,
        batch_size: int | None = None,
        seed: int = 0,
        orthonormal: bool = False,
        sample_noise: float = 0.0,
        batch_order: str = "random",
    ) -> None:
        check_matrix("samples", samples)
        check_positive_int("n_directions", n_directions)
        check_non_negative("smoothing", smoothing)
        check_non_negative("sample_noise", sample_noise)
        if smoothing < sample_noise:
            raise ValueError(
                f"smoothing={smoothing:.6g} is below the noise the samples already carry ({sample_noise:.6g}); "
                "the particles must be smoothed with at least the target's noise: raise smoothing."
            )
        if batch_size is not None:
            check_positive_int("batch_size", batch_size)
            if batch_size > samples.shape[0]:
                raise ValueError(f"batch_size={batch_size} exceeds the {samples.shape[0]} samples; lower it.")
        if batch_order not in ("random", "sequential"):
            raise ValueError(f"batch_order must be 'random' or 'sequential', got {batch_order!r}.")
        self.samples = samples
        self.n_directions = n_directions
        self.smoothing = float(smoothing)
        self.added_noise = math.sqrt(max(smoothing**2 - sample_noise**2, 0.0))
        self.batch_size = batch_size
        self.batch_order = batch_order
        self.orthonormal = orthonormal
        self.levels = quantile_levels(n_levels, samples.dtype, samples.device)
        self._generator = torch.Generator().manual_seed(seed)

    @property
    def dim(self) -> int:
        return self.samples.shape[1]

    def _batch(self, step: int) -> torch.Tensor:
        if self.batch_size is None:
            return self.samples
        n = self.samples.shape[0]
        if self.batch_order == "sequential":
            rows = (torch.arange(self.batch_size) + step * self.batch_size) % n
        elif 10 * self.batch_size <= n:
            # From a large pool, drawing with replacement repeats at most ~b/(2n) < 5% of the rows and avoids
            # a permutation of the whole pool at every step (on a pool of a million rows, most of a step's time).
            rows = torch.randint(n, (self.batch_size,), generator=self._generator)
        else:
            rows = torch.randperm(n, generator=self._generator)[: self.batch_size]
        return self.samples[rows.to(self.samples.device)]

    def target_slice(self, step: int) -> TargetSlice:
        directions = random_directions(
            self.dim, self.n_directions, self._generator, orthonormal=self.orthonormal,
            dtype=self.samples.dtype, device=self.samples.device,
        )
        quantiles = smoothed_quantiles(self._batch(step), directions, self.added_noise, self.levels, self._generator)
        return TargetSlice(directions, quantiles, self.smoothing)


StepCallback = Callable[[int, torch.Tensor], None]

THREADED_WORK = 4_000_000
"""Particles times directions per step from which a CPU flow keeps torch's threads: below it every step runs on one
thread (``flow_threads``). Beside a busy core, threads never paid below this size (they wait on each other, the more
so the busier the machine), while on an idle machine they pay from about 10^5 (at most twice as fast): one thread
below it bounds what an idle machine loses and keeps a busy one from stalling. Measured side by side, idle and busy,
by ``benchmarks/studies/flow_threads.py`` (``benchmarks/results/flow_threads.md``)."""


@contextmanager
def flow_threads(particles: torch.Tensor, n_directions: int) -> Iterator[None]:
    """Run the enclosed flow on one CPU thread when its work per step (particles x ``n_directions``) is below
    ``THREADED_WORK``, restoring torch's thread count after; a flow on another device, or a larger one, is left to
    torch's setting. (torch's thread count is process-wide: flows run from several Python threads at once share it.)"""
    threads = torch.get_num_threads()
    if particles.device.type != "cpu" or threads == 1 or particles.shape[0] * n_directions >= THREADED_WORK:
        yield
        return
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def run_flow(
    particles: torch.Tensor,
    source: TargetSource,
    n_steps: int,
    step_size: float = 1.0,
    entropy: float = 0.0,
    generator: torch.Generator | None = None,
    *,
    particle_cdf: ParticleCDF = "histogram",
    n_bins: int = 1000,
    chunk_size: int | None = None,
    callback: StepCallback | None = None,
    progress: bool = False,
    group_sizes: torch.Tensor | None = None,
) -> torch.Tensor:
    r"""Integrate the flow for ``n_steps`` from ``particles`` (``(n, d)``, not modified) and return the result.

    Each step k asks ``source.target_slice(k)`` for directions and target quantiles, computes the drift
    (``sliced_drift``, particles smoothed with the slice's ``smoothing``) and applies
    :math:`X \leftarrow X + h \hat v_k(X) + \sqrt{2 \lambda h} Z` with ``h = step_size`` and ``lambda = entropy``.
    ``generator`` (on the particles' device) drives the particle smoothing and the Wiener term; with a seeded
    generator a CPU run is bit-reproducible. ``callback(k, X)`` is called after step k (1-based count of
    steps done); ``progress`` shows a tqdm bar. A small flow on the CPU runs on one thread (``flow_threads``). With ``group_sizes`` (``(C,)``), the particles are C groups
    stored one after the other, each flowing to its own target (slices with ``(C, L, G)`` quantiles, no
    smoothing): ``grouped_sliced_drift``, exact ranks within each group. A slice's ``coordinate_scale``
    rescales its drift per coordinate before the step.
    """
    check_matrix("particles", particles)
    if particles.shape[1] != source.dim:
        raise ValueError(f"particles have {particles.shape[1]} features but the target has {source.dim}.")
    check_positive_int("n_steps", n_steps)
    check_positive("step_size", step_size)
    check_non_negative("entropy", entropy)
    if generator is None:
        generator = torch.Generator(device=particles.device).manual_seed(0)
    diffusion = math.sqrt(2.0 * entropy * step_size)
    x = particles.clone()
    target = source.target_slice(0)  # its directions size the work per step (``flow_threads``)
    with flow_threads(x, target.directions.shape[-1]):
        for step in tqdm(range(n_steps), disable=None if progress else True, desc="flow", leave=False):
            if step > 0:
                target = source.target_slice(step)
            if group_sizes is not None:
                drift = grouped_sliced_drift(x, group_sizes, target.directions, target.quantiles)
            else:
                drift = sliced_drift(
                    x, target.directions, target.quantiles, target.smoothing, generator,
                    particle_cdf=particle_cdf, n_bins=n_bins, chunk_size=chunk_size,
                )
            if target.coordinate_scale is not None:
                drift = drift * target.coordinate_scale.to(drift)
            x.add_(drift, alpha=step_size)
            if diffusion > 0:
                x.add_(torch.randn(x.shape, generator=generator, dtype=x.dtype, device=x.device), alpha=diffusion)
            if callback is not None:
                callback(step + 1, x)
    return x

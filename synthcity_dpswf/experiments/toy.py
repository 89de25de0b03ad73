"""The paper's toy experiment (Sec. 5.1, Figure 1): the smoothed flow towards a mixture of 5 Gaussians in 2-D.

N_theta = 200 directions per step, h = 1, lambda = 0.001, sigma in {0, 0.5, 1}, 200 steps. The paper does not
state the mixture's geometry; here the 5 means sit on a circle of radius 2 with standard deviation 0.25,
so SW figures compare in order of magnitude only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import torch

from synthcity_dpswf.math import EmpiricalTarget, run_flow, sliced_wasserstein

PAPER_SW = {0.0: 0.08, 0.5: 0.81}
SNAPSHOT_STEPS = (1, 10, 200)


def mixture_means(n_components: int = 5, radius: float = 2.0) -> torch.Tensor:
    """Means of the toy mixture: ``n_components`` points evenly spaced on a circle, shape ``(K, 2)``."""
    angles = torch.arange(n_components, dtype=torch.float64) * (2 * math.pi / n_components)
    return radius * torch.stack([angles.cos(), angles.sin()], dim=1)


def sample_mixture(n: int, generator: torch.Generator, std: float = 0.25) -> torch.Tensor:
    """``n`` samples of the equal-weight Gaussian mixture with ``mixture_means()`` and isotropic ``std``."""
    means = mixture_means()
    component = torch.randint(len(means), (n,), generator=generator)
    return (means[component] + std * torch.randn(n, 2, generator=generator, dtype=torch.float64)).float()


def mixture_density(grid: torch.Tensor, std: float = 0.25) -> torch.Tensor:
    """Density of the toy mixture at the points ``grid`` (``(..., 2)``), for the level sets of the figure."""
    squared = ((grid.unsqueeze(-2).double() - mixture_means()) ** 2).sum(-1)
    return (torch.exp(-squared / (2 * std**2)) / (2 * math.pi * std**2)).mean(-1)


@dataclass(frozen=True)
class ToyResult:
    """Snapshots ``{sigma: {step: particles}}``, final SW per sigma, and the figure path."""

    snapshots: dict[float, dict[int, torch.Tensor]]
    sliced_distance: dict[float, float]
    figure: Path | None


def run_toy(
    out: Path | None,
    sigmas: tuple[float, ...] = (0.0, 0.5, 1.0),
    n_particles: int = 2000,
    n_steps: int = 200,
    n_directions: int = 200,
    step_size: float = 1.0,
    entropy: float = 0.001,
    seed: int = 0,
) -> ToyResult:
    """Run the toy flow for every sigma, measure SW to a fresh target sample, and write the figure to ``out``.

    Each flow starts from the same standard Gaussian particles and targets the same mixture sample; the
    target and the particles are smoothed with the same sigma (eq. (dpsw defn)).
    """
    data_generator = torch.Generator().manual_seed(seed)
    target = sample_mixture(n_particles, data_generator)
    holdout = sample_mixture(n_particles, data_generator)
    start = torch.randn(n_particles, 2, generator=data_generator)
    snapshots: dict[float, dict[int, torch.Tensor]] = {}
    distances: dict[float, float] = {}
    for sigma in sigmas:
        kept: dict[int, torch.Tensor] = {}

        def keep(step: int, x: torch.Tensor, kept: dict[int, torch.Tensor] = kept) -> None:
            if step in SNAPSHOT_STEPS or step == n_steps:
                kept[step] = x.clone()

        source = EmpiricalTarget(target, n_directions, smoothing=sigma, seed=seed + 1)
        final = run_flow(
            start, source, n_steps, step_size, entropy,
            torch.Generator().manual_seed(seed + 2), callback=keep,
        )
        snapshots[sigma] = kept
        distances[sigma] = sliced_wasserstein(final, holdout, seed=seed + 3)
    figure = plot_toy(snapshots, out) if out is not None else None
    return ToyResult(snapshots, distances, figure)


def plot_toy(snapshots: dict[float, dict[int, torch.Tensor]], out: Path) -> Path:
    """Figure 1 layout: rows sigma, columns the snapshot steps, level sets in black, particles in green."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sigmas = list(snapshots)
    steps = sorted(next(iter(snapshots.values())))
    axis = torch.linspace(-4, 4, 200)
    grid = torch.stack(torch.meshgrid(axis, axis, indexing="xy"), dim=-1)
    density = mixture_density(grid).numpy()
    fig, axes = plt.subplots(len(sigmas), len(steps), figsize=(3 * len(steps), 3 * len(sigmas)), squeeze=False)
    for row, sigma in enumerate(sigmas):
        for col, step in enumerate(steps):
            ax = axes[row][col]
            ax.contour(axis.numpy(), axis.numpy(), density, levels=6, colors="black", linewidths=0.6)
            points = snapshots[sigma][step].numpy()
            ax.scatter(points[:, 0], points[:, 1], s=1, c="green", alpha=0.5)
            ax.set_xlim(-4, 4)
            ax.set_ylim(-4, 4)
            ax.set_xticks([])
            ax.set_yticks([])
            if row == 0:
                ax.set_title(f"step {step}")
            if col == 0:
                ax.set_ylabel("SWF (sigma = 0)" if sigma == 0 else f"sigma = {sigma:g}")
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out

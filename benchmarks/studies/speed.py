"""One flow step: synthcity-dpswf's drift against a faithful re-implementation of the reference code's step.

The reference step (dpswgf, ``dpswflow/flow/swf_moment.py``) per flow step: ``torch.quantile`` of the noisy
target projections and of the noisy particle projections at 30,000 levels, two ``interp1d`` calls by
``searchsorted`` (particles' CDF, then target quantile), and the drift by materialising an ``L x d x n``
tensor. Ours: target quantiles on a 1,000-point grid by one sort of the (small) target batch, the particles'
CDF by a histogram on a 1,000-bin grid (O(nL), no sort), and the drift as one matrix product.

Every row is timed in the same process, interleaved, median of several repetitions; the floor is a bare
``torch.sort`` of the same ``(L, n)`` projections. The default rows are n in {10^4, 10^5, 10^6} x L in {70, 500},
and on CUDA the floor row n = 10^6, L = 1,000 (the reference is skipped where its drift tensor passes 4 GiB).
Run: ``python benchmarks/studies/speed.py [--quick] [--device cuda] [--shapes 10000:70 1000000:1000] [--out DIR]``.
Writes ``speed_<device>.md`` and ``.json`` under ``--out`` (default ``benchmarks/results/``).
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from pathlib import Path
from typing import Callable

import torch

from synthcity_dpswf.math import empirical_quantiles, project, quantile_levels, random_directions, sliced_drift

RESULTS = Path(__file__).resolve().parents[1] / "results"
REFERENCE_LEVELS = 30_000
GRID = 1_000
TARGET_BATCH = 250
DIM = 8
SMOOTHING = 0.5
REFERENCE_MEMORY_GB = 4.0
PAPER_SHAPE = (10_000, 70)
"""(n, L) of the paper's MNIST flow: 10,000 particles, N_theta = 70 directions per step."""
FLOOR_SHAPE = (1_000_000, 1_000)
"""(n, L) of the large-scale row, timed against a bare sort of the same projections: the target on one GPU is
one step within 2x of that sort."""


def reference_interp1d(x: torch.Tensor, y: torch.Tensor, x_new: torch.Tensor) -> torch.Tensor:
    """Row-wise linear interpolation by ``searchsorted``, as torchinterp1d (used by the reference) does it."""
    eps = torch.finfo(y.dtype).eps
    index = torch.searchsorted(x.contiguous(), x_new.contiguous()) - 1
    index = index.clamp(0, x.shape[1] - 2)
    slopes = (y[:, 1:] - y[:, :-1]) / (eps + (x[:, 1:] - x[:, :-1]))
    return y.gather(1, index) + slopes.gather(1, index) * (x_new - x.gather(1, index))


def reference_step(particles: torch.Tensor, target: torch.Tensor, theta: torch.Tensor, sigma: float) -> torch.Tensor:
    """The reference code's drift ``nabla`` (its ``theta`` is ``(L, d)``), line for line in spirit."""
    percentiles = torch.linspace(0, 1, REFERENCE_LEVELS, device=particles.device)
    n_projs = theta.shape[0]
    target_noised = torch.normal((target @ theta.T).T, sigma)
    target_quantiles = torch.quantile(target_noised, percentiles, dim=1).T
    particles_noised = torch.normal((particles @ theta.T).T, sigma)
    particle_quantiles = torch.quantile(particles_noised, percentiles, dim=1).T
    cdf = reference_interp1d(particle_quantiles, percentiles.repeat(n_projs, 1), particles_noised)
    matched = reference_interp1d(percentiles.repeat(n_projs, 1), target_quantiles, cdf)
    return ((particles_noised - matched)[:, None, :] * theta[:, :, None]).mean(dim=0).T


def our_step(particles: torch.Tensor, target: torch.Tensor, directions: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """Target quantiles on the 1,000-point grid (what a release source hands the integrator) plus the drift."""
    levels = quantile_levels(GRID, device=particles.device)
    noisy = project(target, directions)
    noisy += SMOOTHING * torch.randn(noisy.shape, generator=generator, device=noisy.device)
    return sliced_drift(particles, directions, empirical_quantiles(noisy, levels), SMOOTHING, generator)


def timed(fn: Callable[[], object], device: torch.device, budget_s: float, max_reps: int) -> float:
    """Median wall time of ``fn`` in milliseconds over up to ``max_reps`` runs (at least 1) within ``budget_s``."""
    def once() -> float:
        if device.type == "cuda":
            torch.cuda.synchronize()
        start = time.perf_counter()
        fn()
        if device.type == "cuda":
            torch.cuda.synchronize()
        return (time.perf_counter() - start) * 1e3

    once()  # warm-up
    times: list[float] = []
    began = time.perf_counter()
    while len(times) < max_reps and (not times or time.perf_counter() - began < budget_s):
        times.append(once())
    return statistics.median(times)


def run_row(n: int, n_directions: int, device: torch.device, budget_s: float, max_reps: int) -> dict[str, object]:
    generator = torch.Generator().manual_seed(0)
    particles = torch.randn(n, DIM, generator=generator).to(device)
    target = torch.randn(TARGET_BATCH, DIM, generator=generator).to(device)
    directions = random_directions(DIM, n_directions, generator, device=device)
    device_generator = torch.Generator(device=device).manual_seed(1)
    projections = project(particles, directions)
    row: dict[str, object] = {"n": n, "L": n_directions}
    row["sort_floor_ms"] = timed(lambda: torch.sort(projections, dim=1), device, budget_s, max_reps)
    row["ours_ms"] = timed(lambda: our_step(particles, target, directions, device_generator), device, budget_s, max_reps)
    drift_tensor_gb = n_directions * DIM * n * 4 / 2**30
    if drift_tensor_gb > REFERENCE_MEMORY_GB:
        row["reference_ms"] = None
        row["reference_error"] = f"skipped: its L x d x n drift tensor needs {drift_tensor_gb:.0f} GiB"
        return row
    try:
        row["reference_ms"] = timed(
            lambda: reference_step(particles, target, directions.T.contiguous(), SMOOTHING), device, budget_s, max_reps
        )
    except (RuntimeError, MemoryError) as error:  # torch.quantile refuses inputs past 2^24 elements
        row["reference_ms"] = None
        row["reference_error"] = str(error).splitlines()[0][:80]
    return row


def shape(text: str) -> tuple[int, int]:
    """``"N:L"`` (particles:directions, both positive integers) as ``(N, L)``, for ``--shapes``."""
    parts = text.split(":")
    if len(parts) != 2 or not all(part.isdigit() and int(part) > 0 for part in parts):
        raise argparse.ArgumentTypeError(f"expected particles:directions as two positive integers, e.g. 10000:70; got {text!r}")
    return int(parts[0]), int(parts[1])


def format_table(rows: list[dict[str, object]], device: str) -> str:
    lines = [
        "| n | L | reference step (ms) | ours (ms) | speed-up | bare sort (ms) | ours / sort |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        ours, sort_ms, reference = float(row["ours_ms"]), float(row["sort_floor_ms"]), row["reference_ms"]
        reference_cell = f"{float(reference):.1f}" if reference is not None else str(row.get("reference_error"))
        speedup = f"{float(reference) / ours:.1f}x" if reference is not None else "-"
        lines.append(
            f"| {row['n']:,} | {row['L']} | {reference_cell} | {ours:.1f} | {speedup} | {sort_ms:.1f} | {ours / sort_ms:.2f} |"
        )
    return f"Device: {device}\n\n" + "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--quick", action="store_true", help="only the paper-scale row")
    parser.add_argument("--shapes", nargs="+", type=shape, default=None, metavar="N:L",
                        help="rows to time as particles:directions (default: the grid above, with 1000000:1000 on CUDA)")
    parser.add_argument("--budget", type=float, default=3.0, help="seconds of repetitions per timing")
    parser.add_argument("--out", type=Path, default=RESULTS, help="results folder (default: %(default)s)")
    args = parser.parse_args()
    if args.quick and args.shapes:
        parser.error("--quick is the paper-scale row alone; give either --quick or --shapes")
    device = torch.device(args.device)
    if args.quick:
        shapes = [PAPER_SHAPE]
    else:
        grid = [(n, L) for n in (10_000, 100_000, 1_000_000) for L in (70, 500)]
        shapes = args.shapes or grid + ([FLOOR_SHAPE] if device.type == "cuda" else [])  # 16 GB of sort on a CPU
    rows = []
    for n, n_directions in shapes:
        max_reps = 15 if n * n_directions <= 10**7 else 3
        row = run_row(n, n_directions, device, args.budget, max_reps)
        rows.append(row)
        print(row, flush=True)
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else f"CPU ({platform.processor() or platform.machine()}, {torch.get_num_threads()} threads)"
    table = format_table(rows, name)
    print(table)
    args.out.mkdir(parents=True, exist_ok=True)
    stem = args.out / f"speed_{device.type}"
    header = "# One flow step at the paper's MNIST scale (d = 8, target batch 250)\n\n"
    header += "Reference: torch.quantile at 30,000 levels, interp1d, L x d x n drift. Ours: 1,000-point grid, histogram CDF.\n\n"
    stem.with_suffix(".md").write_text(header + table + "\n")
    meta = {"device": name, "torch": torch.__version__, "rows": rows, "grid": GRID, "reference_levels": REFERENCE_LEVELS}
    stem.with_suffix(".json").write_text(json.dumps(meta, indent=2) + "\n")


if __name__ == "__main__":
    main()

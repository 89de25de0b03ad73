"""Generation at scale on CPU: 10^7 table rows in chunks, with memory bounded by the chunk size.

Generation is post-processing of the stored releases: ``SlicedGenerator.sample_chunks`` flows one chunk of
fresh particles at a time to the stored target (``models.chunks``), and each chunk is decoded to table rows
and dropped. The model is DPSWflow with the tables' default release (marginal: one- and two-way tables, the
plugins' defaults for a table under 1,000 rows: 8 coarse levels, 100 fine bins, 300 flow steps) fitted at
epsilon = 10 on scikit-learn's iris (150 rows; public domain: four lengths in [0, 10] cm and the class). As in the
plugins, each chunk flows 10,000 particles and draws its rows from them (``--flow-particles``; 0 flows every row).

Every run is a fresh process, so that its peak resident memory (``ru_maxrss``) is its own: the peak after
the fit (the baseline: interpreter, torch, the model) and the peak at the end; their difference is what
generation added. The main row makes ``--rows`` rows (10^7) in chunks of ``--chunk-size``; the memory rows
make fewer rows with two chunk sizes: the same chunk size as the main row should add about the same memory
whatever the total, and a 10x smaller chunk less; one more row makes them flowing every row, for the speed-up's
ratio measured in the same run. The column means of all rows are printed beside the
real table's as a sanity check.

Run: ``python benchmarks/studies/scale.py [--rows 10000000] [--chunk-size 100000] [--threads 1]``. Writes
``benchmarks/results/scale_cpu.{md,json}`` (``--out`` for another folder).
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import pandas as pd
import torch
from sklearn.datasets import load_iris

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: the shared modules, imported by name
from common import RESULTS, environment, write_json

from synthcity_dpswf.adapters.table_domain import TabularDomain
from synthcity_dpswf.adapters.tabular import MarginalTableCodec
from synthcity_dpswf.models import KINDS, DPSWFlow, FlowSettings
from synthcity_dpswf.privacy import MarginalLayout

EPSILON, DELTA = 10.0, 1e-5
COARSE_BINS, FINE_BINS, MAX_PAIRS, FLOW_STEPS = 8, 100, 120, 300
"""Settings of the marginal release at this table's size (``adapters.tabular.table_resolution`` as the plugins
use it, ``max_pairs``, ``models.kinds.KINDS["marginal"].steps``)."""
SEED = 0


def iris_model(flow_particles: int | None) -> tuple[DPSWFlow, MarginalTableCodec, pd.DataFrame]:
    """DPSWflow (marginal release) fitted on iris, its codec, and the real table; each chunk flows
    ``flow_particles`` particles and draws its rows from them (``None``: flows every row)."""
    frame = load_iris(as_frame=True).frame
    description: dict[str, dict[str, Any]] = {
        column: {"type": "numeric", "low": 0.0, "high": 10.0} for column in frame.columns if column != "target"
    }
    description["target"] = {"type": "categorical", "categories": [0, 1, 2]}
    codec = MarginalTableCodec(TabularDomain.from_dict(description), FINE_BINS)
    layout = MarginalLayout.build(codec.levels, COARSE_BINS, MAX_PAIRS, SEED)
    model = DPSWFlow(release="marginal", marginals=layout, settings=FlowSettings(n_steps=FLOW_STEPS, flow_particles=flow_particles),
                     seed=SEED)
    model.fit(codec.encode(frame), EPSILON, DELTA)
    return model, codec, frame


def peak_rss_mib() -> float:
    """This process's peak resident memory so far (Linux reports ``ru_maxrss`` in KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def generate(rows: int, chunk_size: int, threads: int, flow_particles: int | None) -> dict[str, Any]:
    """One run, meant for a fresh process: fit, then ``rows`` rows in chunks, each decoded and dropped."""
    torch.set_num_threads(threads)
    model, codec, frame = iris_model(flow_particles)
    baseline = peak_rss_mib()
    sums = pd.Series(0.0, index=frame.columns)
    started = time.perf_counter()
    made = 0
    for chunk in model.sample_chunks(rows, chunk_size):
        table = codec.decode(chunk.records)
        sums += table.astype(float).sum()
        made += len(table)
    seconds = time.perf_counter() - started
    peak = peak_rss_mib()
    return {
        "rows": made, "chunk_size": chunk_size, "threads": threads, "flow_particles": flow_particles, "seconds": seconds, "rows_per_second": made / seconds,
        "baseline_rss_mib": baseline, "peak_rss_mib": peak, "generation_rss_mib": peak - baseline,
        "synthetic_means": (sums / made).round(3).to_dict(), "real_means": frame.astype(float).mean().round(3).to_dict(),
    }


def in_fresh_process(rows: int, chunk_size: int, threads: int, flow_particles: int | None) -> dict[str, Any]:
    """``generate`` in a new (spawned) process, so that its peak memory is not an earlier run's."""
    with ProcessPoolExecutor(max_workers=1, mp_context=get_context("spawn")) as pool:
        return pool.submit(generate, rows, chunk_size, threads, flow_particles).result()


def flowed(run: dict[str, Any]) -> str:
    """The particles one chunk flows: all its rows, or ``flow_particles`` of them."""
    particles = run.get("flow_particles")
    return "every row" if particles is None else f"{min(particles, run['chunk_size']):,}"


def format_table(runs: list[dict[str, Any]], hardware: str) -> str:
    lines = [
        f"CPU: {hardware}, {runs[0]['threads']} torch thread(s). DPSWflow, marginal release of iris (epsilon = {EPSILON:g}), "
        f"{FLOW_STEPS} flow steps; every row a fresh process.",
        "",
        "| rows | chunk size | flowed per chunk | wall (s) | rows / s | RSS after fit (MiB) | peak RSS (MiB) | added by generation (MiB) |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    lines += [
        f"| {run['rows']:,} | {run['chunk_size']:,} | {flowed(run)} | {run['seconds']:.0f} | {run['rows_per_second']:,.0f} | "
        f"{run['baseline_rss_mib']:.0f} | {run['peak_rss_mib']:.0f} | {run['generation_rss_mib']:.0f} |"
        for run in runs
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=10**7, help="rows of the main run (default: %(default)s)")
    parser.add_argument("--chunk-size", type=int, default=100_000, help="rows per chunk of the main run")
    parser.add_argument("--memory-rows", type=int, default=200_000,
                        help="rows of the two memory runs (chunk size, and a tenth of it)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads per run (default: %(default)s)")
    parser.add_argument("--flow-particles", type=int, default=KINDS["marginal"].flow_particles,
                        help="particles flowed per chunk, the rows drawn from them (default: the plugins', %(default)s); "
                             "0 flows every row")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    flow_particles = args.flow_particles or None
    for name in ("rows", "chunk_size", "memory_rows", "threads"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be a positive integer, got {getattr(args, name)}")
    small_chunk = max(1, args.chunk_size // 10)
    plan = [(args.memory_rows, small_chunk, flow_particles), (args.memory_rows, args.chunk_size, flow_particles),
            (args.rows, args.chunk_size, flow_particles)]
    if flow_particles is not None:  # the same rows flowing every particle, side by side: the speed-up's ratio
        plan.insert(2, (args.memory_rows, args.chunk_size, None))
    runs = []
    for rows, chunk_size, particles in plan:
        runs.append(in_fresh_process(rows, chunk_size, args.threads, particles))
        print({key: value for key, value in runs[-1].items() if not key.endswith("means")}, flush=True)
    main_run = runs[-1]
    print("column means, synthetic (all rows of the main run) vs real:")
    for column, mean in main_run["synthetic_means"].items():
        print(f"  {column:<22} {mean:>7.3f}  {main_run['real_means'][column]:>7.3f}")
    env = environment(torch.device("cpu"))
    table = format_table(runs, env["hardware"])
    print(table)
    header = "# Chunked generation on CPU (`benchmarks/studies/scale.py`)\n\n"
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "scale_cpu.md").write_text(header + table + "\n")
    write_json(args.out / "scale_cpu.json", {
        "suite": "scale", "epsilon": EPSILON, "delta": DELTA, "flow_steps": FLOW_STEPS, "runs": runs, "environment": env,
    })


if __name__ == "__main__":
    main()

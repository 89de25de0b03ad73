"""Generating tables beyond one process: a fitted DPSWflow writes ``--rows`` rows to a Parquet dataset on a local
two-worker Dask cluster, one task per chunk (``plugin.generate_parquet``; post-processing of the release).

The model: DPSWflow with no schema (DP domain and marginal release, epsilon = 1, delta = 1e-5, replace-one) fitted
from the 10^6-row Adult-shaped Parquet table of ``benchmarks/studies/scale_fit.py`` (made there from a public model, so
generated here if missing). Per size (and chunk size): the wall time of the write, rows per second, the peak resident
memory of the client and of each worker (``getrusage``' maximum RSS), and the dataset's size on disk; the written
dataset is then deleted. Every measured run is a fresh process, so its peaks are its own.

Run: ``python benchmarks/studies/scale_generate.py --data-root ../shared/data [--rows 1000000 100000000]``. Writes
``benchmarks/results/scale_generate.{md,json}``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: the shared modules, imported by name
from common import RESULTS, environment, results_page, write_results
from scale_fit import DELTA, EPSILON, make_table, peak_mib

FIT_ROWS = 1_000_000


def generate(table: Path, out: Path, rows: int, chunk_size: int) -> dict[str, Any]:
    """Fit on ``table`` (partitioned), then write ``rows`` rows to ``out`` in chunks of ``chunk_size``: measured."""
    import distributed
    from synthcity.plugins import Plugins

    import synthcity_dpswf  # noqa: F401

    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None) as cluster:
        with distributed.Client(cluster) as client:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                plugin = Plugins().get("dpswflow", epsilon=EPSILON, delta=DELTA).fit(str(table))
            fitted_peaks = sorted(client.run(peak_mib).values())
            started = time.perf_counter()
            written = plugin.generate_parquet(out, count=rows, chunk_size=chunk_size, seed=0)
            seconds = time.perf_counter() - started
            workers = sorted(client.run(peak_mib).values())
    size = sum(part.stat().st_size for part in out.glob("part-*.parquet")) / 2**20
    return {"rows": written, "chunk_size": chunk_size, "write_s": seconds, "rows_per_s": written / seconds,
            "client_peak_mib": peak_mib(), "worker_peak_mib": workers, "worker_peak_after_fit_mib": fitted_peaks,
            "dataset_mib": size}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-root", type=Path, required=True)
    parser.add_argument("--rows", type=int, nargs="+", default=[1_000_000])
    parser.add_argument("--chunk-sizes", type=int, nargs="+", default=[100_000])
    parser.add_argument("--work", type=Path, default=Path("workspace/scale_fit"))
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--step", action="store_true", help="one measured run in this process (internal)")
    args = parser.parse_args(argv)
    table = args.work / f"adult_{FIT_ROWS}"
    if args.step:
        written = args.work / "generated"
        try:
            print(json.dumps(generate(table, written, args.rows[0], args.chunk_sizes[0])))
        finally:
            shutil.rmtree(written, ignore_errors=True)
        return
    if not table.exists():
        make_table(args.data_root, FIT_ROWS, 250_000, table)
    results = []
    for count in args.rows:
        for chunk_size in args.chunk_sizes:
            done = subprocess.run([sys.executable, __file__, "--step", "--data-root", str(args.data_root), "--rows",
                                   str(count), "--chunk-sizes", str(chunk_size), "--work", str(args.work)],
                                  capture_output=True, text=True, check=True)
            row = json.loads(done.stdout.strip().splitlines()[-1])
            results.append(row)
            print(row, flush=True)
    text = results_page(
        "Generating beyond one process "
        f"(`python benchmarks/studies/scale_generate.py --rows {' '.join(map(str, args.rows))} "
        f"--chunk-sizes {' '.join(map(str, args.chunk_sizes))}`)",
        f"DPSWflow, no schema, epsilon = {EPSILON:g}, delta = {DELTA:g}, replace-one, fitted from the {FIT_ROWS:,}-row "
        "Adult-shaped Parquet table of `scale_fit.py`; `plugin.generate_parquet` on a local two-worker Dask cluster "
        "(one thread each), one task per chunk. Each run a fresh process; worker peaks are over the fit and the write.",
        [("rows written", True), ("chunk", True), ("write s", True), ("rows / s", True), ("client peak MiB", True),
         ("worker peaks MiB", False), ("dataset MiB", True)],
        [[f"{row['rows']:,}", f"{row['chunk_size']:,}", f"{row['write_s']:.1f}", f"{row['rows_per_s']:,.0f}",
          f"{row['client_peak_mib']:.0f}", ", ".join(f"{peak:.0f}" for peak in row["worker_peak_mib"]),
          f"{row['dataset_mib']:.0f}"] for row in results],
    )
    write_results(args.out, "scale_generate", {"suite": "scale_generate", "environment": environment(torch.device("cpu")),
                                               "rows": results}, text)


if __name__ == "__main__":
    main()

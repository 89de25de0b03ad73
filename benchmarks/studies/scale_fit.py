"""Fitting tables beyond one process: DPSWflow on an Adult-shaped Parquet dataset, counted partition by partition on
a local two-worker Dask cluster (privacy.md, "Tables on Dask"), beside the same release fitted in memory.

The table: ``--rows`` rows with UCI Adult's 15 columns, made by the package from a public model: DPSWflow fitted on
UCI Adult's published training split (public data, ``--data-root``/adult/adult.csv) with no privacy (epsilon = inf:
the model is not private, and need not be: it only makes a public test table; 10,000 flowed particles per chunk,
the tables' default), its rows streamed by
``sample_chunks`` and written as Parquet files of ``--partition-rows`` rows each (memory bounded by the chunk).
Then, per size: DPSWflow fitted with no schema (DP domain and marginal release, epsilon = 1, delta = 1e-5,
replace-one) from the Parquet folder, and 10^5 rows generated; the wall time of each, the fit time per row, and the
peak resident memory of the client process and of each worker (``getrusage``' maximum RSS). At the smallest size
the same fit runs in memory (pandas) too, in a fresh process. Every measured run is a fresh process, so its peak
memory is its own.

Run: ``python benchmarks/studies/scale_fit.py --data-root ../shared/data [--rows 1000000 10000000]``. Writes
``benchmarks/results/scale_fit.{md,json}``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: the shared modules, imported by name
from common import RESULTS, environment, write_results

EPSILON, DELTA, GENERATED = 1.0, 1e-5, 100_000


def peak_mib() -> float:
    """This process's peak resident memory, MiB (Linux reports KiB)."""
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def make_table(data_root: Path, rows: int, partition_rows: int, folder: Path) -> None:
    """``rows`` Adult-shaped rows from a non-private DPSWflow fitted on UCI Adult's public training split, written
    as Parquet files of ``partition_rows`` rows (module docstring)."""
    import pandas as pd

    from synthcity_dpswf.adapters import MarginalTableCodec
    from synthcity_dpswf.adapters.table_domain import TabularDomain
    from synthcity_dpswf.models import DPSWFlow, FlowSettings
    from synthcity_dpswf.privacy import MarginalLayout

    adult = pd.read_csv(data_root / "adult" / "adult.csv")
    domain_file = Path(__file__).resolve().parents[1] / "domains" / "adult_raw_domain.json"
    domain = TabularDomain.from_dict(json.loads(domain_file.read_text()))
    codec = MarginalTableCodec(domain, 100)
    layout = MarginalLayout.build(codec.levels, 16)
    model = DPSWFlow(release="marginal", marginals=layout, settings=FlowSettings(n_steps=300, flow_particles=10_000))
    model.fit(codec.encode(adult[domain.names]), float("inf"), 1e-5)
    folder.mkdir(parents=True, exist_ok=True)
    for chunk in model.sample_chunks(rows, partition_rows, seed=0):
        codec.decode(chunk.records).to_parquet(folder / f"part-{chunk.index:05d}.parquet")


def fit_partitioned(folder: Path) -> dict[str, Any]:
    """One measured fit from the Parquet folder on a local two-worker cluster, then 10^5 rows generated."""
    import distributed
    from synthcity.plugins import Plugins

    import synthcity_dpswf  # noqa: F401

    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None) as cluster:
        with distributed.Client(cluster) as client:
            started = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                plugin = Plugins().get("dpswflow", epsilon=EPSILON, delta=DELTA).fit(str(folder))
            fit = time.perf_counter() - started
            started = time.perf_counter()
            plugin.generate(GENERATED)
            generate = time.perf_counter() - started
            workers = sorted(client.run(peak_mib).values())
    return {"fit_s": fit, "generate_s": generate, "client_peak_mib": peak_mib(), "worker_peak_mib": workers}


def fit_in_memory(folder: Path) -> dict[str, Any]:
    """The same fit from the table read into one pandas frame."""
    import pandas as pd
    from synthcity.plugins import Plugins

    import synthcity_dpswf  # noqa: F401

    frame = pd.read_parquet(folder)
    started = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plugin = Plugins().get("dpswflow", epsilon=EPSILON, delta=DELTA).fit(frame)
    fit = time.perf_counter() - started
    started = time.perf_counter()
    plugin.generate(GENERATED)
    return {"fit_s": fit, "generate_s": time.perf_counter() - started, "client_peak_mib": peak_mib(),
            "worker_peak_mib": []}


def in_fresh_process(step: str, *arguments: str) -> dict[str, Any]:
    """Run one step of this script in its own interpreter and return what it printed last (a JSON line)."""
    done = subprocess.run([sys.executable, __file__, "--step", step, *arguments], capture_output=True, text=True,
                          check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-root", type=Path, required=True)
    parser.add_argument("--rows", type=int, nargs="+", default=[1_000_000])
    parser.add_argument("--partition-rows", type=int, default=250_000)
    parser.add_argument("--work", type=Path, default=Path("workspace/scale_fit"))
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--step", choices=["make", "partitioned", "memory"], default=None)
    parser.add_argument("--folder", type=Path, default=None)
    parser.add_argument("--stem", default="scale_fit", help="the results files' name")
    parser.add_argument("--label", default="", help="the package the rows ran (a before / after comparison)")
    args = parser.parse_args(argv)
    if args.step is not None:  # one measured step, in this fresh process
        assert args.folder is not None
        if args.step == "make":
            make_table(args.data_root, args.rows[0], args.partition_rows, args.folder)
            print(json.dumps({}))
        else:
            print(json.dumps(fit_partitioned(args.folder) if args.step == "partitioned" else fit_in_memory(args.folder)))
        return
    rows = []
    for count in args.rows:
        folder = args.work / f"adult_{count}"
        common = ["--data-root", str(args.data_root), "--rows", str(count), "--folder", str(folder),
                  "--partition-rows", str(args.partition_rows)]
        if not folder.exists():
            in_fresh_process("make", *common)
        modes = ["partitioned", "memory"] if count == min(args.rows) else ["partitioned"]
        for mode in modes:
            measured = in_fresh_process(mode, *common)
            row = {"rows": count, "mode": mode, **measured, "fit_us_per_row": 1e6 * measured["fit_s"] / count}
            rows.append(row)
            print(row, flush=True)
    lines = [
        "# Fitting beyond one process "
        f"(`python benchmarks/studies/scale_fit.py --rows {' '.join(map(str, args.rows))}`)",
        "",
        f"DPSWflow, no schema (DP domain + marginal release), epsilon = {EPSILON:g}, delta = {DELTA:g}, replace-one; an "
        f"Adult-shaped table (15 columns) made from a public model, Parquet files of {args.partition_rows:,} rows; "
        "partitioned: a local two-worker Dask cluster (one thread each); memory: one pandas frame. Each run a fresh "
        f"process; generation of {GENERATED:,} rows after the fit." + (f" Package: {args.label}." if args.label else ""),
        "",
        "| rows | mode | fit s | fit us / row | generate 10^5 s | client peak MiB | worker peaks MiB |",
        "|---:|---|---:|---:|---:|---:|---|",
        *(f"| {row['rows']:,} | {row['mode']} | {row['fit_s']:.1f} | {row['fit_us_per_row']:.2f} | {row['generate_s']:.1f} | "
          f"{row['client_peak_mib']:.0f} | {', '.join(f'{peak:.0f}' for peak in row['worker_peak_mib']) or '-'} |"
          for row in rows),
    ]
    write_results(args.out, args.stem, {"suite": "scale_fit", "label": args.label,
                                        "environment": environment(torch.device("cpu")), "rows": rows},
                  "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()

"""How close a fit comes to one scan of the data: DPSWflow on an Adult-shaped Parquet dataset (6 integer columns, 9
categorical; random, independent columns drawn from a fixed seed: the shape matters here, not the dependence) counted
on Dask, beside the floor of what any fit must do, read each row once and count it, on the same local cluster in the
same run; and ``generate_parquet`` beside writing the same number of rows of the same columns to Parquet.

Per size (``--rows``): the bare scan (``dd.read_parquet``, then per partition each categorical column's value counts
and each integer column's 100-bin histogram, summed), the fit with no schema and with every column declared
(``Plugins().get("dpswflow", epsilon=1.0).fit(path)``), and their ratios to the scan; ``generate_parquet`` of the same
number of rows beside a plain Parquet write of random rows of the same dtypes; at the smallest size the same fit in
memory (a pandas frame, in a fresh process) beside the same scan over the frame. Wall times on the machine's cores
(where the package runs a call's counts without a Dask client, ``adapters.partitioned.computing``: ``LOCAL_THREADS``
threads), after one untimed scan (the scheduler's first compute); the scans and fits the median of ``--repeats`` runs,
taken in turn (scan, fit, declared fit, then again), generation and the write one run each: read them side by side.
``--label`` names the package the rows ran (a before / after comparison runs the script once per checkout).

Sizes above ``--full-max`` (10^7) run the scan and the fits only: a 10^8-row generation and in-memory frame would
take most of an hour and more memory than the machine's.

Run: ``python benchmarks/studies/dask_floor.py [--rows 1000000 10000000]``. Writes
``benchmarks/results/dask_floor.{md,json}``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: the shared modules, imported by name
from common import RESULTS, environment, results_page, write_results

import synthcity_dpswf  # noqa: F401  (registers the plugins)

INTEGERS = {"age": (17, 91), "fnlwgt": (12285, 1484706), "education_num": (1, 17), "capital_gain": (0, 100000),
            "capital_loss": (0, 4357), "hours_per_week": (1, 100)}
CATEGORIES = {"workclass": 9, "education": 16, "marital_status": 7, "occupation": 15, "relationship": 6, "race": 5,
              "sex": 2, "native_country": 42, "income": 2}
PARTITION_ROWS = 250_000


def adult_shaped(n: int, seed: int) -> pd.DataFrame:
    """``n`` rows of Adult's shape: integers uniform in their ranges, categories uniform over their levels."""
    rng = np.random.default_rng(seed)
    frame = {name: rng.integers(low, high, n) for name, (low, high) in INTEGERS.items()}
    for name, levels in CATEGORIES.items():
        frame[name] = np.array([f"{name}_{level}" for level in range(levels)], dtype=object)[rng.integers(0, levels, n)]
    return pd.DataFrame(frame)


def declared_domain() -> dict[str, Any]:
    """Every column declared: the integers' ranges and the categories (what the table is drawn from: public)."""
    domain: dict[str, Any] = {name: (low, high - 1) for name, (low, high) in INTEGERS.items()}
    domain.update({name: [f"{name}_{level}" for level in range(levels)] for name, levels in CATEGORIES.items()})
    return domain


def write_dataset(folder: Path, rows: int) -> None:
    """``rows`` rows in Parquet files of ``PARTITION_ROWS`` rows each."""
    folder.mkdir(parents=True)
    for index, start in enumerate(range(0, rows, PARTITION_ROWS)):
        adult_shaped(min(PARTITION_ROWS, rows - start), seed=index).to_parquet(folder / f"part-{index}.parquet")


def partition_counts(part: pd.DataFrame) -> dict[str, np.ndarray | pd.Series]:
    """The floor's per-partition work: each categorical column's value counts, each integer column's histogram."""
    counts: dict[str, np.ndarray | pd.Series] = {}
    for name, (low, high) in INTEGERS.items():
        counts[name] = np.histogram(part[name].to_numpy(), bins=100, range=(low, high))[0]
    for name in CATEGORIES:
        counts[name] = part[name].value_counts()
    return counts


def summed(first: dict[str, Any], second: dict[str, Any]) -> dict[str, Any]:
    return {name: first[name] + second[name] if name in INTEGERS else first[name].add(second[name], fill_value=0)
            for name in first}


def scan(path: Path) -> None:
    """The floor on Dask: every partition read once and counted, the counts summed."""
    import dask
    import dask.dataframe as dd

    parts = [dask.delayed(partition_counts)(part) for part in dd.read_parquet(str(path)).to_delayed()]
    while len(parts) > 1:
        parts = [dask.delayed(summed)(parts[i], parts[i + 1]) if i + 1 < len(parts) else parts[i]
                 for i in range(0, len(parts), 2)]
    dask.compute(parts[0])


def plain_write(folder: Path, rows: int) -> None:
    """The floor of generation: ``rows`` random rows of the same columns written to Parquet, chunk by chunk."""
    write_dataset(folder, rows)


def seconds(call: Callable[[], Any]) -> float:
    started = time.perf_counter()
    call()
    return time.perf_counter() - started


def in_memory(path: Path, repeats: int) -> dict[str, float]:
    """The Parquet dataset at ``path`` read into one pandas frame: the scan over it and the same fit in memory, the
    median of ``repeats`` runs each, after an untimed first call (a fit of 2,000 rows: the process's one-time imports
    and set-up)."""
    from synthcity.plugins import Plugins

    frame = pd.read_parquet(path)
    partition_counts(frame)
    scans, fits = [], []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        Plugins().get("dpswflow", epsilon=1.0, delta=1e-5).fit(frame.head(2000))  # the process's first fit, untimed
        for _ in range(repeats):
            scans.append(seconds(lambda: partition_counts(frame)))
            fits.append(seconds(lambda: Plugins().get("dpswflow", epsilon=1.0, delta=1e-5).fit(frame)))
    return {"memory_scan": float(np.median(scans)), "memory_fit": float(np.median(fits))}


def main(argv: list[str] | None = None) -> None:
    from synthcity.plugins import Plugins

    from synthcity_dpswf.adapters.partitioned import computing

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[1_000_000, 10_000_000])
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--label", default="", help="the package the rows ran, written into each row")
    parser.add_argument("--repeats", type=int, default=3, help="runs of each scan and fit, their median reported")
    parser.add_argument("--full-max", type=int, default=10_000_000,
                        help="sizes above this run the scan and the fits only (no generation, write or in-memory fit)")
    parser.add_argument("--memory", type=Path, default=None, help=argparse.SUPPRESS)  # the in-memory child process
    parser.add_argument("--stem", default="dask_floor", help="the results files' name")
    args = parser.parse_args(argv)
    if args.memory is not None:
        print(json.dumps(in_memory(args.memory, args.repeats)))
        return
    rows_out: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="dask_floor_") as work, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for count in args.rows:
            data = Path(work) / f"data_{count}"
            write_dataset(data, count)
            row: dict[str, Any] = {"rows": count, "label": args.label}
            full = count <= args.full_max
            if full and count == min(args.rows):  # in a fresh process, before any cluster: its threads are the only ones
                row.update(json.loads(subprocess.run(
                    [sys.executable, __file__, "--memory", str(data), "--repeats", str(args.repeats)], check=True,
                    capture_output=True, text=True,
                ).stdout.strip().splitlines()[-1]))
            with computing():
                scan(data)  # the scheduler's first compute (imports, a cluster's start) timed in none
                plugin = Plugins().get("dpswflow", epsilon=1.0, delta=1e-5)
                declared = Plugins().get("dpswflow", epsilon=1.0, delta=1e-5, domain=declared_domain())
                timed: dict[str, list[float]] = {"scan": [], "fit": [], "fit_declared": []}
                for _ in range(args.repeats):  # in turn, so that a slow spell of the machine falls on all three
                    timed["scan"].append(seconds(lambda: scan(data)))
                    timed["fit"].append(seconds(lambda: plugin.fit(data)))
                    timed["fit_declared"].append(seconds(lambda: declared.fit(data)))
                row.update({key: float(np.median(values)) for key, values in timed.items()})
                if full:
                    row["generate"] = seconds(lambda: plugin.generate_parquet(Path(work) / f"out_{count}", count=count))
            if full:
                row["write"] = seconds(lambda: plain_write(Path(work) / f"plain_{count}", count))
            for folder in (data, Path(work) / f"out_{count}", Path(work) / f"plain_{count}"):
                shutil.rmtree(folder, ignore_errors=True)
            rows_out.append(row)
            print(row, flush=True)
    payload = {"arguments": " ".join(argv or []), "rows": rows_out, "environment": environment(torch.device("cpu"))}

    def cell(row: dict[str, Any], key: str, floor: str) -> str:
        return "-" if key not in row else f"{row[key]:.1f} ({row[key] / row[floor]:.1f}x)"

    table = [[row["label"] or "-", f"{row['rows']:,}", f"{row['scan']:.1f}", cell(row, "fit", "scan"), cell(row, "fit_declared", "scan"),
              f"{row['write']:.1f}" if "write" in row else "-", cell(row, "generate", "write"),
              "-" if "memory_scan" not in row else f"{row['memory_scan']:.2f}", cell(row, "memory_fit", "memory_scan")]
             for row in rows_out]
    text = results_page(
        "A Dask fit beside one scan of the data (`python benchmarks/studies/dask_floor.py`)",
        "Adult-shaped Parquet (6 integer and 9 categorical columns, random, 250,000-row files), DPSWflow at epsilon 1, "
        "delta 1e-5, where the package runs a call's counts without a Dask client (2 threads); seconds, and in brackets "
        "the ratio to the floor beside it (the scan for a fit, a plain Parquet write of as many rows for "
        f"generate_parquet); scans and fits the median of {args.repeats} runs in turn, generation and the write one run.",
        [("package", False), ("rows", True), ("scan s", True), ("fit, no schema", True), ("fit, declared", True), ("write s", True),
         ("generate_parquet", True), ("in-memory scan s", True), ("in-memory fit", True)], table)
    write_results(args.out, args.stem, payload, text)


if __name__ == "__main__":
    main()

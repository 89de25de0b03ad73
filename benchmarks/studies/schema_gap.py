"""Where a declared schema and the DP domain differ, column by column, on the validation table only.

Two measurements on fair's 80% training split (statsmodels; the user-tables grid's validation table, never a table
the README reports once), epsilon = 1, delta = 1e-5, replace-one:

1. *Ranges*: ``--releases`` DP domains at the default share (``default_domain_share``), each column's share of real
   values outside its released range (a placed numeric column's values there are clipped into it).
2. *Fits*: DPSWflow ``--fits`` times with no schema (``fit(df)``) and with the declared schema of ``tables.py``
   (random states 0, 1, ..; the release noise is fresh every fit), scored by the user-tables suite's code
   (``table_metrics.QuantileCellMetrics``): 2-way TV, TSTR on ``affairs > 0``, and each column's 1-way TV.

Run: ``python benchmarks/studies/schema_gap.py [--releases 20] [--fits 6]``. Writes
``benchmarks/results/schema_gap.{md,json}`` (``--stem`` to name another, e.g. for the package at an earlier commit on
``PYTHONPATH``; the package's commit is stored in the payload).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: the shared modules, imported by name
from common import RESULTS, environment, write_results
from table_metrics import QuantileCellMetrics
from tables import holdout_split, load_table

import synthcity_dpswf  # noqa: F401  (registers the plugins)
from synthcity_dpswf.privacy import secret_generator
from synthcity_dpswf.privacy.budget import Budget, default_domain_share
from synthcity_dpswf.privacy.domain import release_domain_at

EPSILON, DELTA = 1.0, 1e-5


def outside_ranges(train: pd.DataFrame, releases: int) -> dict[str, float]:
    """Per numeric column the DP domain placed: the mean share of real values outside the released range."""
    share = default_domain_share(len(train), train.shape[1], 0, EPSILON, DELTA, "replace_one")
    calibration = Budget(EPSILON, DELTA).domain_part(share, keyed=True)
    outside: dict[str, list[float]] = {column: [] for column in train.columns}
    for _ in range(releases):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            release = release_domain_at(train, calibration, secret_generator(), "replace_one")
        for column, (low, high) in release.bounds.items():
            if release.placed.get(column, True):
                values = train[column].to_numpy(dtype=float)
                outside[column].append(float(((values < low) | (values > high)).mean()))
    return {column: float(np.mean(shares)) for column, shares in outside.items() if shares}


def one_way_tv(metrics: QuantileCellMetrics, real: np.ndarray, synthetic: pd.DataFrame) -> list[float]:
    """Each column's total variation distance over the suite's quantile cells."""
    fake = metrics.level_codes(synthetic).numpy()
    return [
        0.5 * float(np.abs(np.bincount(real[:, j], minlength=cells.levels) / len(real)
                           - np.bincount(fake[:, j], minlength=cells.levels) / len(fake)).sum())
        for j, cells in enumerate(metrics.cells)
    ]


def fits(train: pd.DataFrame, test: pd.DataFrame, schema: Any, target: Any, n_fits: int) -> dict[str, dict[str, Any]]:
    """Per schema (none, declared): 2-way TV and TSTR (mean, std) and the mean 1-way TV of each column."""
    from synthcity.plugins import Plugins

    metrics = QuantileCellMetrics(train, target, 0, test)
    real = metrics.level_codes(train).numpy()
    result = {}
    for name, domain in (("none", None), ("declared", schema)):
        tv2, tstr, columns = [], [], []
        for fit in range(n_fits):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                plugin = Plugins().get("dpswflow", epsilon=EPSILON, delta=DELTA, random_state=fit, domain=domain)
                synthetic = plugin.fit(train).generate(len(train)).dataframe()
            tv2.append(metrics.tv(synthetic)["tv2"])
            tstr.append(metrics.tstr(synthetic, test))
            columns.append(one_way_tv(metrics, real, synthetic))
        result[name] = {"tv2": float(np.mean(tv2)), "tv2_std": float(np.std(tv2)), "tstr": float(np.mean(tstr)),
                        "tstr_std": float(np.std(tstr)),
                        "tv1": dict(zip(metrics.names, np.mean(columns, axis=0).round(4).tolist()))}
        print(name, result[name], flush=True)
    return result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--releases", type=int, default=20)
    parser.add_argument("--fits", type=int, default=6)
    parser.add_argument("--stem", default="schema_gap")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    table = load_table("fair", None)
    train, test = holdout_split(table.frame, 0)
    ranges = outside_ranges(train, args.releases)
    scored = fits(train, test, table.schema(train), table.target, args.fits) if args.fits else {}
    package = Path(synthcity_dpswf.__file__).resolve().parent  # the package measured (PYTHONPATH may name another)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                            cwd=package).stdout.strip()
    lines = [
        "# Declared schema against the DP domain, column by column "
        f"(`python benchmarks/studies/schema_gap.py --releases {args.releases} --fits {args.fits}`)",
        "",
        f"fair (validation table, training split), epsilon = {EPSILON:g}, delta = {DELTA:g}, replace-one; commit {commit}.",
        "",
        f"Share of real values outside the released range (mean over {args.releases} DP domains at the default share):",
        "",
        "| column | outside |",
        "|---|---:|",
        *(f"| {column} | {share:.3f} |" for column, share in ranges.items()),
    ]
    if scored:
        names = list(scored["none"]["tv1"])
        lines += [
            "",
            f"DPSWflow, mean (std) over {args.fits} fits:",
            "",
            "| schema | 2-way TV | TSTR | " + " | ".join(f"1-way TV {name}" for name in names) + " |",
            "|---|---:|---:|" + "---:|" * len(names),
            *(f"| {schema} | {row['tv2']:.3f} ({row['tv2_std']:.3f}) | {row['tstr']:.3f} ({row['tstr_std']:.3f}) | "
              + " | ".join(f"{row['tv1'][name]:.3f}" for name in names) + " |" for schema, row in scored.items()),
        ]
    payload = {"suite": "schema_gap", "commit": commit, "environment": environment(torch.device("cpu")),
               "outside": ranges, "fits": scored}
    write_results(args.out, args.stem, payload, "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()

"""The DP domain's share of one table budget (privacy.md, "One budget"), chosen on validation tables only.

``dpswflow`` and ``dpswflow_r`` fitted with no schema (``fit(df)``, a DP domain for every column) at epsilon = 1,
delta = 1e-5, with ``domain_epsilon_share`` fixed at each of ``--shares`` and at the default (``default_domain_share``,
from public numbers), ``--fits`` fits each (random states 0, 1, ..: the release noise is fresh every fit). Scored by
the user-tables suite's code (``table_metrics.QuantileCellMetrics``): 2-way TV over 16 quantile cells per numeric
column, and TSTR. Tables: ``fair`` (statsmodels, the user-tables grid's validation table, its 80% training split) and
the synthetic stand-in of ``stand_in.py`` (4,000 rows x 20, its own held-out rows): never the tables the README
reports once.

Run: ``python benchmarks/studies/domain_share.py [--fits 3]``. Writes ``benchmarks/results/domain_share.{md,json}``.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: the shared modules, imported by name
from common import RESULTS, environment, write_results
from stand_in import TEST_ROWS, scored, stand_in
from table_metrics import QuantileCellMetrics
from tables import Target, holdout_split, load_table

import synthcity_dpswf  # noqa: F401  (registers the plugins)
from synthcity_dpswf.privacy.budget import default_domain_share

EPSILON, DELTA = 1.0, 1e-5


def validation_tables() -> dict[str, tuple[Any, Any, Target]]:
    """(training rows, test rows, target) of each validation table."""
    fair = load_table("fair", None)
    train, test = holdout_split(fair.frame, 0)
    frame = stand_in(4000 + TEST_ROWS, 0)
    return {
        "fair": (train, test, fair.target),
        "stand_in": (frame.iloc[:4000].reset_index(drop=True), scored(frame.iloc[4000:]).reset_index(drop=True),
                     Target("target", 0.5, "target = minority")),
    }


def main(argv: list[str] | None = None) -> None:
    from synthcity.plugins import Plugins

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shares", type=float, nargs="+", default=[0.05, 0.1, 0.2, 0.3, 0.4])
    parser.add_argument("--methods", nargs="+", default=["dpswflow", "dpswflow_r"])
    parser.add_argument("--fits", type=int, default=3)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    rows = []
    for name, (train, test, target) in validation_tables().items():
        metrics = QuantileCellMetrics(train if name == "fair" else scored(train), target, 0, test)
        default = default_domain_share(len(train), train.shape[1], 0, EPSILON, DELTA, "replace_one")
        for method in args.methods:
            for share in [*args.shares, None]:
                tv, tstr, seconds = [], [], []
                for fit in range(args.fits):
                    started = time.perf_counter()
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        plugin = Plugins().get(method, epsilon=EPSILON, delta=DELTA, domain_epsilon_share=share,
                                               random_state=fit).fit(train)
                        synthetic = plugin.generate(len(train)).dataframe()
                    seconds.append(time.perf_counter() - started)
                    synthetic = synthetic if name == "fair" else scored(synthetic)
                    tv.append(metrics.tv(synthetic)["tv2"])
                    tstr.append(metrics.tstr(synthetic, test))
                row = {"table": name, "method": method, "share": default if share is None else share,
                       "default": share is None, "tv2": float(np.mean(tv)), "tv2_std": float(np.std(tv)),
                       "tstr": float(np.mean(tstr)), "seconds": float(np.mean(seconds))}
                rows.append(row)
                print(row, flush=True)
    lines = [
        f"# The DP domain's share of one budget (`python benchmarks/studies/domain_share.py --fits {args.fits}`)",
        "",
        f"No schema, epsilon = {EPSILON:g}, delta = {DELTA:g}, replace-one; mean (std) over {args.fits} fits; validation "
        "tables only (fair's training split, the stand-in of `stand_in.py`). The default row is `default_domain_share`.",
        "",
        "| table | method | share of mu^2 | 2-way TV | TSTR | fit + generate s |",
        "|---|---|---:|---:|---:|---:|",
        *(f"| {row['table']} | {row['method']} | {row['share']:g}{' (default)' if row['default'] else ''} | "
          f"{row['tv2']:.3f} ({row['tv2_std']:.3f}) | {row['tstr']:.3f} | {row['seconds']:.1f} |" for row in rows),
    ]
    payload = {"suite": "domain_share", "environment": environment(torch.device("cpu")), "rows": rows}
    write_results(args.out, "domain_share", payload, "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()

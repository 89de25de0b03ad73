"""Coarse levels at released quantiles against runs of equal length, on the validation tables only (issue 46).

An integer column with one fine level per integer and a released value histogram has its coarse levels in runs of
whole histogram bins of about equal released mass (``MarginalTableCodec.equal_mass_runs``; privacy.md, "Coarse
levels at released quantiles"). This script fits DPSWflow the way a synthcity user would (``target_validation``'s
``fit_once``: no schema and the declared one, ``fit(train)`` and the target named, epsilon = 1, delta = 1e-5) with
that rule ("quantile runs") and with the rule before it ("equal runs": ``equal_mass_runs`` replaced by one that
gives no runs, so every column's coarse levels are runs of equal length), on the same training rows, and scores both
with the table suite's code (TSTR, 2-way TV, seconds of fit + generation) over ``--fits`` random states. Each row
names the columns the quantile rule gave runs (read from the fitted layout): where none, the two rules are one and
the row measures run-to-run spread alone.

Run: ``python benchmarks/studies/coarse_runs.py --data-root ../shared/data [--fits 5] [--tables adult_raw fair] [--modes
frame pairs] [--schemas none declared] [--rules ...] [--name coarse_runs]``. Writes
``benchmarks/results/<name>.{md,json}``.
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
from table_metrics import QuantileCellMetrics
from target_validation import EPSILON, DELTA, validation_table

import synthcity_dpswf  # noqa: F401  (registers the plugins)
from synthcity_dpswf.adapters import MarginalTableCodec

RULES = ("quantile runs", "equal runs")


def fit_once(train: Any, target: Any, declared: Any, mode: str, state: int) -> tuple[Any, list[str]]:
    """One DPSWflow fit (``target_validation.fit_once``'s arguments) and ``len(train)`` rows; the columns with runs."""
    from synthcity.plugins import Plugins
    from synthcity.plugins.core.dataloader import GenericDataLoader

    arguments: dict[str, Any] = {"epsilon": EPSILON, "delta": DELTA, "random_state": state}
    if declared is not None:
        arguments["domain"] = declared
    data = train if mode == "frame" else GenericDataLoader(train, target_column=target.column)
    plugin = Plugins().get("dpswflow", **arguments).fit(data)
    names = plugin.encoder_.domain.names
    with_runs = [names[column] for column in range(len(names)) if plugin.layout_.starts(column) is not None]
    return plugin.generate(len(train)).dataframe(), with_runs


def run(tables: list[str], fits: int, data_root: Path | None, modes: list[str], schemas: list[str],
        rules: list[str]) -> list[dict[str, Any]]:
    rows = []
    quantile_rule = MarginalTableCodec.equal_mass_runs
    for name in tables:
        train, test, target, declared = validation_table(name, data_root)
        metrics = QuantileCellMetrics(train, target, 0, test)
        for schema_name, schema in (("none", None), ("declared", declared)):
            if schema_name not in schemas:
                continue
            for mode in modes:
                for rule in rules:
                    MarginalTableCodec.equal_mass_runs = (  # type: ignore[method-assign]
                        (lambda self, coarse_bins: {}) if rule == "equal runs" else quantile_rule)
                    tstr, tv2, seconds, columns = [], [], [], set()
                    try:
                        for state in range(fits):
                            started = time.perf_counter()
                            with warnings.catch_warnings():
                                warnings.simplefilter("ignore")
                                synthetic, with_runs = fit_once(train, target, schema, mode, state)
                            seconds.append(time.perf_counter() - started)
                            tstr.append(metrics.tstr(synthetic, test))
                            tv2.append(metrics.tv(synthetic)["tv2"])
                            columns.update(with_runs)
                    finally:
                        MarginalTableCodec.equal_mass_runs = quantile_rule  # type: ignore[method-assign]
                    rows.append({"table": name, "schema": schema_name, "mode": mode, "rule": rule, "fits": fits,
                                 "columns_with_runs": sorted(columns), "tstr": float(np.mean(tstr)),
                                 "tv2": float(np.mean(tv2)), "seconds": float(np.mean(seconds)),
                                 "tstr_runs": tstr, "tv2_runs": tv2})
                    print({key: value for key, value in rows[-1].items() if not key.endswith("_runs")}, flush=True)
    return rows


def markdown(payload: dict[str, Any]) -> str:
    lines = [
        "# Coarse levels at released quantiles against equal runs, on the validation tables (`python benchmarks/studies/coarse_runs.py`)",
        "", f"DPSWflow, epsilon = {EPSILON:g}, delta = {DELTA:g}, replace-one; {payload['fits']} fits per cell (random "
        f"states 0..{payload['fits'] - 1}); {payload['environment']['device']}, {payload['environment']['date']}. TSTR: "
        "HistGradientBoosting trained on the synthetic rows, AUROC on the held-out real rows (mean over fits, and the "
        "spread min-max); 2-way TV against the training rows (mean, min-max); seconds: fit + generation. Columns with "
        "runs: those the quantile rule gave runs of equal mass (none: the two rules are one).",
        "", "| table | schema | target | rule | columns with runs | TSTR | TSTR min-max | 2-way TV | TV min-max | s |",
        "|---|---|---|---|---|---:|---|---:|---|---:|",
    ]
    for row in payload["rows"]:
        target = "named" if row["mode"] == "pairs" else "none"
        columns = ", ".join(row["columns_with_runs"]) if row["rule"] == RULES[0] else "-"
        lines.append(
            f"| {row['table']} | {row['schema']} | {target} | {row['rule']} | {columns or 'none'} | {row['tstr']:.3f} | "
            f"{min(row['tstr_runs']):.3f}-{max(row['tstr_runs']):.3f} | {row['tv2']:.4f} | "
            f"{min(row['tv2_runs']):.4f}-{max(row['tv2_runs']):.4f} | {row['seconds']:.1f} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tables", nargs="+", default=["adult_raw", "fair"])
    parser.add_argument("--fits", type=int, default=5)
    parser.add_argument("--modes", nargs="+", choices=("frame", "pairs"), default=["frame", "pairs"])
    parser.add_argument("--schemas", nargs="+", choices=("none", "declared"), default=["none", "declared"])
    parser.add_argument("--rules", nargs="+", choices=RULES, default=list(RULES))
    parser.add_argument("--name", default="coarse_runs", help="the results' file name")
    parser.add_argument("--data-root", type=Path, default=None)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    rows = run(args.tables, args.fits, args.data_root, args.modes, args.schemas, args.rules)
    payload = {"environment": environment(torch.device("cpu")), "fits": args.fits, "rows": rows}
    write_results(args.out, args.name, payload, markdown(payload))


if __name__ == "__main__":
    main()

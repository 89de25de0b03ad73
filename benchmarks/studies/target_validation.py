"""The named target's choices, on the validation tables only (issue 46: fair, the stand-in, Adult's training split,
that split with a numeric target named: ``adult_hours``, ``adult_age``, ``NUMERIC_TARGETS``, and
``flights_validation``: the flights table's training split alone, split again, the only large validation table whose
target hangs on a pair of numeric columns, and ``randhie_validation``: randhie's training split split again, a count
target thresholded at zero among weak predictors).

Each table is split into training and test rows (``tables.holdout_split``, seed 0; the stand-in: 4,000 + 1,000 rows
of ``stand_in.stand_in``); the generators are fitted on the training rows the way a synthcity user would, with no
schema and with the declared one, at epsilon = 1 (``--epsilon``) and delta = 1e-5:

  frame        ``fit(train)``: a DataFrame names no target
  pairs        ``fit(GenericDataLoader(train, target_column=...))``: every pair with the target measured (the default)
  per_value    the same with ``target_tables="per_value"``: every table counted per value of a target of 2 to
               ``recipes.tables.TARGET_CLASSES`` values (a target of more values: its pairs)

each at the package's most coarse levels per column in the two-way tables, or at each of ``--coarse-caps`` (a larger
``--epsilon`` standing for a table of more rows: the resolution rule reads n over the noise), and scored by the table suite's code (``table_metrics.QuantileCellMetrics``): TSTR (HistGradientBoosting trained on
the synthetic rows, AUROC on the test rows), 2-way TV against the training rows, and fit + generation seconds, over
``--fits`` random states. The real training rows' TSTR is the floor.

Run: ``python benchmarks/studies/target_validation.py --data-root ../shared/data [--fits 5] [--tables fair stand_in
adult_raw] [--modes frame pairs per_value] [--coarse-caps 16 32] [--epsilon 1] [--name ...]``. Writes
``benchmarks/results/<name>.{md,json}`` (default ``target_validation``).

Earlier files were written by earlier versions of this script, their labels that version's: ``target_validation_small``
(commit 95dac8c: "named, C <= k" conditioned every target, a numeric one on k runs of its levels),
``target_validation`` (76e14cc: "named" conditioned a target of at most 4 values, anchored the others),
``target_levels_validation`` (3c2f7ab: "pairs" measured a target of many values at its own finer levels in its pairs,
``adapters.tabular.anchor_resolution``; "pairs_coarse" at the other columns' levels, as today),
``split_levels_flights_validation`` (89fc29a: "split levels" by the rule measured the pairs with the target over each
coarse run cut in two, ``MarginalLayout.split_anchored``; "off" as today) and
``target_validation_modes`` (4cb60eb, the DP domain's one-way counts joined: "C <= 1" anchored every target, the pairs
of today; "C <= 4" conditioned as per_value does today). ``target_validation_randhie_eps1``, ``_eps100`` and ``_caps``
are today's modes on ``randhie_validation`` (``--tables randhie_validation --fits 3``, with ``--modes pairs``,
``--epsilon 100`` and ``--coarse-caps 16 32 64 --generators dpswflow --modes pairs frame`` at epsilon 100): what limits
that table's TSTR.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import sys
import time
import warnings
from pathlib import Path
from unittest import mock
from typing import Any

import numpy as np
import pandas as pd
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: the shared modules, imported by name
from common import RESULTS, environment, write_results
from stand_in import schema as stand_in_schema
from stand_in import stand_in
from table_metrics import QuantileCellMetrics
from tables import Target, holdout_split, load_table

import synthcity_dpswf  # noqa: F401  (registers the plugins)
from synthcity_dpswf.adapters import tabular

EPSILON, DELTA = 1.0, 1e-5
MODES = ("frame", "pairs", "per_value")
NUMERIC_TARGETS = {
    "adult_hours": Target("hours-per-week", 40.0, "hours-per-week > 40 (more than full time)"),
    "adult_age": Target("age", 40.0, "age > 40"),
}
"""Adult's training split with a numeric target named and thresholded (AUROC): the validation tables of a named
target of many values."""


def validation_table(name: str, data_root: Path | None) -> tuple[pd.DataFrame, pd.DataFrame, Target, Any]:
    """(training rows, test rows, the TSTR target, the declared schema) of a validation table."""
    if name == "stand_in":
        frame = stand_in(5000, 0)
        train, test = frame.iloc[:4000].reset_index(drop=True), frame.iloc[4000:].reset_index(drop=True)
        return train, test, Target("target", None, "target is the minority class", positive="minority"), stand_in_schema(train)
    if name in NUMERIC_TARGETS:  # Adult's training split with a numeric target
        table = load_table("adult_raw", data_root)
        train, test = holdout_split(table.frame, 0)
        return train, test, NUMERIC_TARGETS[name], table.schema(train)
    if name in ("flights_validation", "randhie_validation"):  # the table suite's training split (seed 0), split
        table = load_table(name.removesuffix("_validation"), data_root)  # again: its test split is never read
        train, test = holdout_split(holdout_split(table.frame, 0)[0], 1)
        return train, test, table.target, table.schema(train)
    table = load_table(name, data_root)
    train, test = holdout_split(table.frame, 0)
    return train, test, table.target, table.schema(train)


def fit_once(generator: str, train: pd.DataFrame, target: Target, declared: Any, mode: str, state: int,
             epsilon: float = EPSILON) -> pd.DataFrame:
    """One fit in ``mode`` (module docstring) and generation of ``len(train)`` rows."""
    from synthcity.plugins import Plugins
    from synthcity.plugins.core.dataloader import GenericDataLoader

    arguments: dict[str, Any] = {"epsilon": epsilon, "delta": DELTA, "random_state": state}
    if declared is not None:
        arguments["domain"] = declared
    if mode == "per_value":
        arguments["target_tables"] = "per_value"
    data = train if mode == "frame" else GenericDataLoader(train, target_column=target.column)
    plugin = Plugins().get(generator, **arguments).fit(data)
    return plugin.generate(len(train)).dataframe()


def coarse_cap(cap: int | None) -> contextlib.AbstractContextManager[Any]:
    """Fits with ``adapters.tabular.table_resolution``'s most coarse levels at ``cap`` (``None``: the package's own);
    the paid pair selection's rule (``recipes.tables.noise_limited``) keeps the package's."""
    if cap is None:
        return contextlib.nullcontext()
    return mock.patch.object(tabular, "COARSE_LEVELS", (tabular.COARSE_LEVELS[0], cap))


def run(tables: list[str], generators: list[str], modes: list[str], fits: int, data_root: Path | None,
        caps: tuple[int | None, ...] = (None,), epsilon: float = EPSILON) -> list[dict[str, Any]]:
    """Every table's floor and cells (module docstring), in each of ``modes`` and at each coarse ``caps``."""
    rows = []
    for name in tables:
        train, test, target, declared = validation_table(name, data_root)
        metrics = QuantileCellMetrics(train, target, 0, test)
        rows.append({"table": name, "generator": "real training rows", "schema": "-", "mode": "-", "cap": None, "fits": 1,
                     "tstr": metrics.tstr(train, test), "tv2": metrics.tv(train)["tv2"], "seconds": 0.0,
                     "tstr_runs": [], "tv2_runs": []})
        for generator in generators:
            for schema_name, schema in (("none", None), ("declared", declared)):
                for mode, cap in itertools.product(modes, caps):
                    tstr, tv2, seconds = [], [], []
                    for state in range(fits):
                        started = time.perf_counter()
                        with warnings.catch_warnings(), coarse_cap(cap):
                            warnings.simplefilter("ignore")
                            synthetic = fit_once(generator, train, target, schema, mode, state, epsilon)
                        seconds.append(time.perf_counter() - started)
                        tstr.append(metrics.tstr(synthetic, test))
                        tv2.append(metrics.tv(synthetic)["tv2"])
                    rows.append({"table": name, "generator": generator, "schema": schema_name, "mode": mode,
                                 "cap": cap or tabular.COARSE_LEVELS[1], "fits": fits, "tstr": float(np.mean(tstr)),
                                 "tv2": float(np.mean(tv2)),
                                 "seconds": float(np.mean(seconds)), "tstr_runs": tstr, "tv2_runs": tv2})
                    print({key: value for key, value in rows[-1].items() if not key.endswith("_runs")}, flush=True)
    return rows


def markdown(payload: dict[str, Any]) -> str:
    lines = [
        "# A named target's choices on the validation tables (`python benchmarks/studies/target_validation.py`)", "",
        f"epsilon = {payload.get('epsilon', EPSILON):g}, delta = {DELTA:g}, replace-one; {payload['fits']} fits per cell "
        "(random states "
        f"0..{payload['fits'] - 1}); {payload['environment']['device']}, {payload['environment']['date']}. TSTR: "
        "HistGradientBoosting trained on the synthetic rows, AUROC on the held-out real rows (mean over fits, and the "
        "spread min-max); 2-way TV against the training rows; seconds: fit + generation of the training split's size; "
        "coarse cap: the most coarse levels of a column in the two-way tables (`adapters.tabular.COARSE_LEVELS`).",
        "", "| table | generator | schema | target | coarse cap | TSTR | TSTR min-max | 2-way TV | s |",
        "|---|---|---|---|---:|---:|---|---:|---:|",
    ]
    for row in payload["rows"]:
        spread = (f"{min(row['tstr_runs']):.3f}-{max(row['tstr_runs']):.3f}" if row["tstr_runs"] else "-")
        lines.append(f"| {row['table']} | {row['generator']} | {row['schema']} | {row['mode']} | {row.get('cap') or '-'} | "
                     f"{row['tstr']:.3f} | {spread} | {row['tv2']:.3f} | {row['seconds']:.1f} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tables", nargs="+", default=["stand_in", "fair", "adult_raw"],
                        choices=["stand_in", "fair", "adult_raw", *NUMERIC_TARGETS, "flights_validation",
                                 "randhie_validation"])
    parser.add_argument("--generators", nargs="+", default=["dpswflow", "dpswflow_r"])
    parser.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES))
    parser.add_argument("--fits", type=int, default=5)
    parser.add_argument("--data-root", type=Path, default=None)
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--coarse-caps", type=int, nargs="+", default=None,
                        help="most coarse levels per column to compare (default: the package's own)")
    parser.add_argument("--epsilon", type=float, default=EPSILON,
                        help="the budget of every fit (a larger one stands for a table of more rows: the resolution "
                        "rules read n over the noise)")
    parser.add_argument("--name", default="target_validation")
    args = parser.parse_args(argv)
    rows = run(args.tables, args.generators, args.modes, args.fits, args.data_root, tuple(args.coarse_caps or [None]),
               args.epsilon)
    payload = {"environment": environment(torch.device("cpu")), "fits": args.fits, "epsilon": args.epsilon, "rows": rows}
    write_results(args.out, args.name, payload, markdown(payload))


if __name__ == "__main__":
    main()

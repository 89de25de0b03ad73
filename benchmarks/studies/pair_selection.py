"""The paid pair selection (``pair_selection="adaptive"``) against the public choice of pairs, on the validation tables.

The selection pays ``SELECTION_SHARE`` q of the mu^2 the DP domain leaves for T = 1.5 d rounds of the exponential
mechanism on every pair's dependence (a spanning forest of the most dependent first), and the release measures those
only (privacy.md, "Paid pair selection"). Each setting on:

- fair's 80% training split (statsmodels, 9 columns, 36 pairs: all measured by the public choice), scored by the
  small tables' suite's code (``table_metrics.QualityReportMetrics``: 2-way TV, TSTR on the 20% held out, SDMetrics'
  Column Pair Trends, the worst of the 3 strongest numeric pairs' correlation gaps);
- the small tables' validation tables (``tables.py``: adult_raw_2k, adult_raw_5k, fair_3k, computers_3k, credit_card),
  by the same code;
- the stand-in (``stand_in.py``: 20 columns, 190 pairs, of which the public choice measures a random 120), 2-way TV
  and TSTR by the quantile-cell suite's code on its 1,000 held-out rows;

with no schema and with the declared schema, ``--fits`` fits each (random states 0, 1, ..), DPSWflow at q in
``--shares`` and the public choice, DPSWflow-r at the default q and the public choice. Epsilon = 1 (``--epsilon``),
delta = 1e-5, replace-one; "selected" is the share of fits in which the selection ran (``selects_pairs`` and
``recipes.tables.noise_limited`` decide). The held-out tables of the fair suite (randhie, diamonds, flights) and of the
small tables (credit_data, hmda, mlc_churn) are not read here. ``--label`` names the package's selection in the rows
(run with another checkout's package on ``PYTHONPATH`` to measure an earlier selection beside this one).

Run: ``python benchmarks/studies/pair_selection.py [--tables fair stand_in] [--fits 4] [--shares 0.2 0.3 0.5]
[--pairs-per-column 1 1.5] [--no-public] [--stem NAME]`` (default: the package's q and T / d against the public choice). Writes ``benchmarks/results/pair_selection[_<tables>].{md,json}``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: the shared modules, imported by name
import stand_in
from common import RESULTS, environment, write_results
from table_metrics import QualityReportMetrics, QuantileCellMetrics
from tables import Target, holdout_split, load_table

from synthcity_dpswf.privacy.mechanisms import marginal

DELTA = 1e-5


VALIDATION_TABLES = ("fair", "stand_in", "adult_raw", "adult_raw_2k", "adult_raw_5k", "fair_3k", "computers_3k",
                     "credit_card")


def validation_table(name: str, data_root: Path | None) -> tuple[pd.DataFrame, pd.DataFrame, Any, QuantileCellMetrics,
                                                                  Callable[[pd.DataFrame], pd.DataFrame]]:
    """``(train, test, declared schema, metrics, scoring map)`` of a validation table."""
    if name != "stand_in":
        table = load_table(name, data_root)
        train, test = holdout_split(table.frame, 0)
        return train, test, table.schema(train), QualityReportMetrics(train, table.target, 0, test), lambda frame: frame
    frame = stand_in.stand_in(4000 + stand_in.TEST_ROWS, seed=0)
    train, test = frame.iloc[:4000].reset_index(drop=True), frame.iloc[4000:].reset_index(drop=True)
    target = Target("target", 0.5, "target is the minority class")
    return train, test, stand_in.schema(train), QuantileCellMetrics(stand_in.scored(train), target, 0), stand_in.scored


Setting = tuple[str, str, float | None, float | None]


def settings(shares: list[float], per_column: list[float], public: bool) -> list[Setting]:
    """``(generator, pair_selection, q, T / d)`` of every measured setting (``None``: the public choice)."""
    rows: list[Setting] = [("dpswflow", "public", None, None)] if public else []
    rows += [("dpswflow", "adaptive", share, ratio) for ratio in per_column for share in shares]
    if public:
        rows.append(("dpswflow_r", "public", None, None))
    rows += [("dpswflow_r", "adaptive", marginal.SELECTION_SHARE, ratio) for ratio in per_column]
    return rows


def measure(name: str, fits: int, shares: list[float], per_column: list[float], public: bool,
            data_root: Path | None = None, epsilon: float = 1.0, label: str = "") -> list[dict[str, Any]]:
    """Every setting's mean (std) 2-way TV and TSTR on table ``name``, no schema and declared, and on the real tables
    SDMetrics' Column Pair Trends and the worst correlation gap of the 3 strongest numeric pairs."""
    from synthcity.plugins import Plugins

    train, test, schema, metrics, scoring = validation_table(name, data_root)
    rows = []
    default, default_ratio = marginal.SELECTION_SHARE, marginal.PAIRS_PER_COLUMN
    for generator, choice, share, ratio in settings(shares, per_column, public):
        for schema_name, domain in (("none", None), ("declared", schema)):
            tv2, tstr, seconds, selected, trends, gaps = [], [], [], [], [], []
            marginal.SELECTION_SHARE = default if share is None else share
            marginal.PAIRS_PER_COLUMN = default_ratio if ratio is None else ratio
            try:
                for fit in range(fits):
                    started = time.perf_counter()
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        plugin = Plugins().get(generator, epsilon=epsilon, delta=DELTA, random_state=fit, domain=domain,
                                               pair_selection=choice)
                        synthetic = plugin.fit(train).generate(len(train)).dataframe()
                    selected.append(plugin.selection_part_ is not None)
                    seconds.append(time.perf_counter() - started)
                    if isinstance(metrics, QualityReportMetrics):
                        scores = metrics.scores(synthetic)
                        tv2.append(scores["tv2"])
                        tstr.append(scores["tstr"])
                        trends.append(scores["column_pair_trends"])
                        gaps.append(scores["worst_corr_gap"])
                    else:
                        tv2.append(metrics.tv(scoring(synthetic))["tv2"])
                        tstr.append(metrics.tstr(scoring(synthetic), scoring(test)))
            finally:
                marginal.SELECTION_SHARE, marginal.PAIRS_PER_COLUMN = default, default_ratio
            rows.append({"table": name, "generator": generator, "pair_selection": choice, "selection": label,
                         "share": share, "per_column": ratio,
                         "column_pair_trends": float(np.nanmean(trends)) if trends else None,
                         "worst_corr_gap": float(np.nanmean(gaps)) if gaps and not np.isnan(gaps).all() else None,
                         "schema": schema_name, "epsilon": epsilon, "selected": float(np.mean(selected)),
                         "tv2": float(np.mean(tv2)), "tv2_std": float(np.std(tv2)),
                         "tstr": float(np.mean(tstr)), "tstr_std": float(np.std(tstr)), "seconds": float(np.mean(seconds))})
            print(rows[-1], flush=True)
    return rows


def markdown(payload: dict[str, Any]) -> str:
    lines = [
        f"# Paid pair selection on the validation tables (`python benchmarks/studies/pair_selection.py {payload['arguments']}`)", "",
        f"Epsilon = {payload.get('epsilon', 1.0):g}, delta = 1e-5, replace-one; mean (std) over {payload['fits']} fits; 2-way TV and TSTR by the "
        "user-tables suite's code. q: the selection's share of the mu^2 the DP domain leaves (\"public\": no selection, "
        f"all pairs up to 120, beyond a random subset). {payload['environment']['device']}, "
        f"{payload['environment']['date']}.", "",
        "Column Pair Trends (SDMetrics) and worst |Δcorr| (of the 3 strongest numeric pairs) are means over the fits, on "
        "the real tables ('-': the stand-in, or no numeric pair). 'selection': the package's selection the rows ran "
        "(`--label`).", "",
        "| table | generator | selection | pairs | q | T / d | schema | selected | 2-way TV | TSTR | Column Pair Trends | worst \\|Δcorr\\| | fit + generate s |",
        "|---|---|---|---|---:|---:|---|---:|---:|---:|---:|---:|---:|",
    ]
    for row in payload["rows"]:
        share = "-" if row["share"] is None else f"{row['share']:g}"
        ratio = "-" if row.get("per_column") is None else f"{row['per_column']:g}"
        lines.append(
            f"| {row['table']} | {row['generator']} | {row.get('selection') or '-'} | {row['pair_selection']} | {share} | "
            f"{ratio} | {row['schema']} | {'-' if row.get('selected') is None else format(row['selected'], '.0%')} | "
            f"{row['tv2']:.3f} ({row['tv2_std']:.3f}) | {row['tstr']:.3f} ({row['tstr_std']:.3f}) | "
            f"{'-' if row.get('column_pair_trends') is None else format(row['column_pair_trends'], '.3f')} | "
            f"{'-' if row.get('worst_corr_gap') is None else format(row['worst_corr_gap'], '.3f')} | {row['seconds']:.1f} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", nargs="+", choices=VALIDATION_TABLES, default=["fair", "stand_in"])
    parser.add_argument("--data-root", type=Path, default=None, help="the shared data folder (adult_raw)")
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--fits", type=int, default=4)
    parser.add_argument("--shares", type=float, nargs="+", default=[marginal.SELECTION_SHARE])
    parser.add_argument("--pairs-per-column", type=float, nargs="+", default=[marginal.PAIRS_PER_COLUMN])
    parser.add_argument("--no-public", action="store_true", help="leave out the public choice's rows")
    parser.add_argument("--stem", default=None, help="the results' file name (default: pair_selection[_<tables>])")
    parser.add_argument("--label", default="", help="the package's selection, named in the rows")
    parser.add_argument("--merge", type=Path, default=None, help="an earlier run's JSON whose rows are kept before these")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    rows = [row for name in args.tables for row in measure(name, args.fits, args.shares, args.pairs_per_column,
                                                           not args.no_public, args.data_root, args.epsilon, args.label)]
    if args.merge is not None:
        rows = json.loads(args.merge.read_text())["rows"] + rows
    payload = {"suite": "pair_selection", "arguments": " ".join(sys.argv[1:] if argv is None else argv),
               "tables": args.tables, "fits": args.fits, "shares": args.shares, "epsilon": args.epsilon,
               "pairs_per_column": args.pairs_per_column, "environment": environment(torch.device("cpu")), "rows": rows}
    stem = args.stem or ("pair_selection" if args.tables == ["fair", "stand_in"] else "pair_selection_" + "_".join(args.tables))
    write_results(args.out, stem, payload, markdown(payload))


if __name__ == "__main__":
    main()

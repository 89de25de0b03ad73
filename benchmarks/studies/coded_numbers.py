"""Coded numbers, precision and ranges (issue 64, parts 4 and 5) on the validation tables only.

DPSWflow at epsilon 1, delta 1e-5, replace-one, with no schema (``fit(train)``: the DP domain), with the table's
declared schema (``tables.py``) and with that schema's coded columns declared by their values (``values``: read from
the training split, as ``tables.observed`` reads bounds), ``--seeds`` fits each on the holdout split of seed 0, scored by the ``quality_report``
suite (``table_metrics.QualityReportMetrics``): the coded columns' real-value share (per column of at most 10 distinct
real numbers, the share of generated values equal to a real one; the minimum over such columns), the precision
share, SDMetrics' Column Shapes and Column Pair Trends, 2-way TV, TSTR, and fit + generate seconds. Besides, for each
table with no schema, ``--releases`` DP domains released alone at the plugin's share (``domain_rows``): the share of
each numeric column's rows its released range folds onto an end value (the rows beyond its range, counted on the
training split: what the codecs clip), and how often each coded column is released coded.

Validation tables only (``small_tables.toml``'s ``validation_tables``): Computers, CreditCard, fair and Adult at 2,000
and 5,000 training rows. Constants are chosen on these; the held-out tables are not run here.

Run: ``python benchmarks/studies/coded_numbers.py --data-root ../shared/data [--seeds 4] [--releases 40] [--label after]
[--set module.NAME=VALUE ...]`` (``--set`` changes a constant of ``synthcity_dpswf.privacy.domain.calibration`` or
``.columns`` for the run, e.g. ``--set calibration.ATOM_NOISE_RATIO=1``). Writes
``benchmarks/results/coded_numbers_<label>.{md,json}``.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: the shared modules, imported by name
from common import DELTA, RESULTS, environment, write_results
from table_metrics import CODED_LEVELS, QualityReportMetrics
from tables import Schema, holdout_split, load_table

VALIDATION = ("computers_3k", "credit_card", "fair_3k", "adult_raw_2k", "adult_raw_5k")
"""The validation tables (``benchmarks/configs/tables/small_tables.toml``)."""
METRICS = ("coded_share", "precision_share", "column_shapes", "column_pair_trends", "tv2", "tstr", "seconds")


def set_constants(assignments: list[str]) -> None:
    """``module.NAME=VALUE`` assignments to the DP domain's modules (the release reads them at call time; the
    calibration's are also bound in ``release``, which is set too)."""
    from synthcity_dpswf.privacy.domain import calibration, columns, release

    modules = {"calibration": calibration, "columns": columns}
    for assignment in assignments:
        name, value = assignment.split("=", 1)
        module, constant = name.split(".", 1)
        setattr(modules[module], constant, float(value))
        if hasattr(release, constant):
            setattr(release, constant, float(value))


def with_values(schema: Schema | str, train: pd.DataFrame) -> Schema | str:
    """``schema`` with each numeric column of at most ``CODED_LEVELS`` distinct training values declared by its values
    (``{"type": "numeric", "values": [...]}``, read from the training split as ``tables.observed`` reads bounds: not
    paid for); a schema file (Adult's) is returned as it is."""
    if isinstance(schema, str):
        return schema
    declared = dict(schema)
    for column in train.columns:
        values = train[column]
        if pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values) \
                and values.nunique() <= CODED_LEVELS:
            present = sorted(values.dropna().unique().tolist())
            integer = all(float(value).is_integer() for value in present)
            declared[column] = {"type": "numeric", "values": [int(value) if integer else float(value) for value in present],
                                "missing": bool(values.isna().any())}
    return declared


def fit_scores(name: str, schema: str, seed: int, data_root: Path | None) -> dict[str, Any]:
    """One fit of DPSWflow on ``name``'s training split (``schema``: "none", "declared", or "values": the declared
    schema with its coded columns declared by their values, ``with_values``) and its scores."""
    from synthcity.plugins import Plugins

    import synthcity_dpswf  # noqa: F401  (registers the plugins)

    table = load_table(name, data_root)
    train, test = holdout_split(table.frame, 0)
    domain = None if schema == "none" else table.schema(train)
    if schema == "values":
        domain = with_values(domain, train)
    suite = QualityReportMetrics(train, table.target, 0, test)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        started = time.perf_counter()
        plugin = Plugins().get("dpswflow", epsilon=1.0, delta=DELTA, domain=domain, random_state=seed).fit(train)
        synthetic = plugin.generate(len(train)).dataframe()
        seconds = time.perf_counter() - started
        scores = suite.scores(synthetic)
    return {"table": name, "schema": schema, "seed": seed, "seconds": seconds,
            **{key: scores[key] for key in METRICS if key in scores}, "coded_shares": scores["coded_shares"]}


def domain_rows(name: str, releases: int, data_root: Path | None) -> dict[str, Any]:
    """``releases`` DP domains of ``name``'s training split at the plugin's share, each column's folded share (rows
    beyond its released range, over the column's numbers) and how often each coded column is released coded."""
    from synthcity_dpswf.adapters import TabularDomain
    from synthcity_dpswf.privacy.budget import Budget, default_domain_share
    from synthcity_dpswf.privacy.domain import release_domain_at
    from synthcity_dpswf.privacy.neighbouring import Adjacency

    table = load_table(name, data_root)
    train, _ = holdout_split(table.frame, 0)
    budget = Budget(1.0, DELTA, Adjacency.REPLACE_ONE)
    share = default_domain_share(len(train), train.shape[1], 0, 1.0, DELTA, Adjacency.REPLACE_ONE)
    split = budget.domain_part(share, keyed=True)
    secret = torch.Generator().manual_seed(0)
    numeric = [column for column in train.columns if pd.api.types.is_numeric_dtype(train[column])]
    coded = [column for column in numeric if train[column].nunique() <= CODED_LEVELS]
    folded: dict[str, list[float]] = {column: [] for column in numeric}
    released_coded: dict[str, int] = {column: 0 for column in coded}
    noise: dict[str, float] = {}
    for _ in range(releases):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            release = release_domain_at(train, split, secret)
            domain = TabularDomain.from_release(release)
        noise = {"category_std": release.category_std, "threshold": release.threshold,
                 "needed_rows": release.needed_rows}  # a function of the kinds: the same in nearly every release
        for column in domain.columns:
            if column.name not in folded or not getattr(column, "placed", False):
                continue
            values = pd.to_numeric(train[column.name], errors="coerce").dropna().to_numpy(dtype=float)
            coded_values = getattr(column, "values", ())  # () in the code before coded columns
            low, high = (coded_values[0], coded_values[-1]) if coded_values else (column.low, column.high)
            folded[column.name].append(float(((values < low) | (values > high)).mean()))
            if column.name in released_coded and coded_values:
                released_coded[column.name] += 1
    return {"table": name, "share": share, "releases": releases, **noise,
            "folded_mean": {column: float(np.mean(shares)) for column, shares in folded.items() if shares},
            "folded_p90": {column: float(np.quantile(shares, 0.9)) for column, shares in folded.items() if shares},
            "coded_rate": {column: count / releases for column, count in released_coded.items()}}


HISTORY_ROWS = 1900
"""The rows of ``history_table`` (the issue's mortgage table has 2,380; its training split about this many)."""


def history_table(n: int = HISTORY_ROWS, seed: int = 0) -> pd.DataFrame:
    """A table built like the issue's mortgage table (not that table: it is held out): a credit history code 1..6, 57%
    at 1, 19% at 2 and 24% over 3..6 (each within two noise stds at epsilon 1), beside eight yes/no columns, two
    ratios, a rate to a tenth and another code."""
    rng = np.random.default_rng(seed)
    frame = {"history": rng.choice([1, 2, 3, 4, 5, 6], n, p=[0.57, 0.19, 0.05, 0.03, 0.08, 0.08])}
    for index in range(8):
        frame[f"flag{index}"] = np.where(rng.random(n) < 0.1 + 0.05 * index, "yes", "no")
    frame["ratio"] = np.round(rng.gamma(4.0, 0.08, n), 2)
    frame["rate"] = np.round(rng.uniform(1.0, 11.0, n), 1)
    frame["share"] = rng.beta(2.0, 5.0, n)
    frame["mortgage"] = rng.choice([1, 2, 3, 4], n, p=[0.3, 0.66, 0.02, 0.02])
    return pd.DataFrame(frame)


def history_ranges(releases: int) -> dict[str, Any]:
    """``releases`` seeded DP domains of ``history_table`` at epsilon 1 and the plugins' share: how many hold its
    history code's values 1..6, and the share of its rows beyond the range (mean, largest)."""
    from synthcity_dpswf.privacy.budget import Budget, default_delta, default_domain_share
    from synthcity_dpswf.privacy.domain import release_domain_at

    frame = history_table()
    delta = default_delta(len(frame))
    share = default_domain_share(len(frame), frame.shape[1], 0, 1.0, delta, "replace_one")
    calibration = Budget(1.0, delta).domain_part(share)
    whole, folded = 0, []
    for seed in range(releases):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            low, high = release_domain_at(frame, calibration, torch.Generator().manual_seed(seed)).bounds["history"]
        whole += low < 1 and high > 6
        folded.append(float(((frame["history"] < low) | (frame["history"] > high)).mean()))
    return {"rows": len(frame), "releases": releases, "whole": whole, "folded_mean": float(np.mean(folded)),
            "folded_max": float(np.max(folded))}


def code_version() -> str:
    """The commit the package was run at (``git describe --always --dirty`` of this file's checkout)."""
    run = subprocess.run(["git", "describe", "--always", "--dirty"], cwd=Path(__file__).resolve().parent,
                         capture_output=True, text=True, check=False)
    return run.stdout.strip() or "unknown"


def markdown(payload: dict[str, Any]) -> str:
    lines = [f"# Coded numbers, precision and ranges on the validation tables ({payload['label']}, code "
             f"{payload['code']})", "",
             f"DPSWflow, epsilon 1, delta 1e-5, replace-one; mean over {payload['seeds']} fits (min over fits in "
             "brackets for the coded share). Settings: " + (", ".join(payload["set"]) or "the code's defaults") + ".",
             "", "| table | schema | coded share | precision share | Column Shapes | Column Pair Trends | 2-way TV | "
             "TSTR | fit + generate (s) |", "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for summary in payload["summary"]:
        lines.append(
            f"| {summary['table']} | {summary['schema']} | {summary['coded_share']:.3f} ({summary['coded_share_min']:.3f}) "
            f"| {summary['precision_share']:.3f} | {summary['column_shapes']:.3f} | {summary['column_pair_trends']:.3f} | "
            f"{summary['tv2']:.3f} | {summary['tstr']:.3f} | {summary['seconds']:.1f} |")
    if payload["domains"]:
        lines += ["", "The DP domain's noise at the plugins' share (no schema): s_c, the category threshold tau and the "
                  "rows a category needs (tau + 1.645 s_c).", "", "| table | share | s_c | tau | a category needs |",
                  "|---|---:|---:|---:|---:|"]
        lines += [f"| {domain['table']} | {domain['share']:g} | {domain['category_std']:.2f} | {domain['threshold']:.1f} | "
                  f"{domain['needed_rows']:.0f} |" for domain in payload["domains"]]
    if payload.get("history"):
        history = payload["history"]
        lines += ["", f"A table built like the issue's mortgage table (`history_table`, {history['rows']:,} rows): "
                  f"{history['whole']} of {history['releases']} seeded DP domains hold its history code's values 1..6; "
                  f"rows beyond the range {history['folded_mean']:.4f} on average, {history['folded_max']:.4f} at most."]
    if payload["domains"]:
        lines += ["", f"DP domains released alone ({payload['domains'][0]['releases']} per table, no schema): the "
                  "share of a numeric column's rows beyond its released range (folded onto an end value; mean, 90th "
                  "percentile) and how often a coded column (at most 10 real values) is released coded.", "",
                  "| table | column | folded, mean | folded, p90 | released coded |", "|---|---|---:|---:|---:|"]
        for domain in payload["domains"]:
            for column, mean in domain["folded_mean"].items():
                rate = domain["coded_rate"].get(column)
                lines.append(f"| {domain['table']} | {column} | {mean:.3f} | {domain['folded_p90'][column]:.3f} | "
                             + ("-" if rate is None else f"{rate:.2f}") + " |")
    return "\n".join(lines) + "\n"


def summarise(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per table and schema, the fits' mean of each metric and the smallest coded share."""
    out = []
    for key in dict.fromkeys((row["table"], row["schema"]) for row in rows):
        group = [row for row in rows if (row["table"], row["schema"]) == key]
        summary: dict[str, Any] = {"table": key[0], "schema": key[1]}
        for metric in METRICS:
            summary[metric] = float(np.nanmean([row.get(metric, np.nan) for row in group]))
        summary["coded_share_min"] = float(np.nanmin([row.get("coded_share", np.nan) for row in group]))
        out.append(summary)
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-root", type=Path, default=None)
    parser.add_argument("--tables", nargs="+", default=list(VALIDATION))
    parser.add_argument("--schemas", nargs="+", default=["none", "declared", "values"])
    parser.add_argument("--seeds", type=int, default=4)
    parser.add_argument("--releases", type=int, default=40)
    parser.add_argument("--history", type=int, default=0, help="seeded releases of history_table (0: none)")
    parser.add_argument("--label", default="after")
    parser.add_argument("--set", dest="assignments", action="append", default=[])
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    unknown = sorted(set(args.tables) - set(VALIDATION))
    if unknown:
        raise SystemExit(f"{unknown} are not validation tables: settings are chosen on {list(VALIDATION)} only.")
    torch.set_num_threads(1)
    set_constants(args.assignments)
    rows = [fit_scores(name, schema, seed, args.data_root)
            for name in args.tables for schema in args.schemas for seed in range(args.seeds)]
    domains = [domain_rows(name, args.releases, args.data_root) for name in args.tables] if args.releases else []
    history = history_ranges(args.history) if args.history else None
    payload = {"suite": "coded_numbers", "label": args.label, "code": code_version(), "seeds": args.seeds,
               "set": args.assignments,
               "environment": environment(torch.device("cpu")), "rows": rows, "summary": summarise(rows),
               "domains": domains, "history": history}
    write_results(args.out, f"coded_numbers_{args.label}", payload, markdown(payload))


if __name__ == "__main__":
    main()

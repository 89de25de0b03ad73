"""One table grid run at several seeds: each method's scores over the seeds, and its paired difference to a peer.

A single run of the fair suite cannot order two methods whose scores differ by less than one run's spread: a seed
draws the 80/20 split, the private noise and the generation at once, and dpmm's MST moved its randhie TSTR by 0.045
between two runs (issue 46). This script reads the results of one grid (``table_runner.py``) run at several seeds
(``--set seed=N --set 'name="..._seed_N"'``), each a different split of the same tables, and writes per table, method,
schema and target the mean and standard error of each score over the seeds, with the real training split's floor
beside them; and against ``--peer``, the mean and standard error of the per-seed difference (method minus peer, the
same split): ours without a schema paired with the peer's end-to-end row, ours with the declared schema with its
reference row, ours with the categories declared (the peers' end-to-end information) with its end-to-end row. A
difference is read as an order only beyond Student's t quantile times its standard error.

Run: ``python benchmarks/seed_spread.py RUN.json ... --peer dpmm_mst --name fair_seeds`` (the runs' files, e.g.
``benchmarks/results/fair_peers.json`` for seed 0 and the others'). Writes ``benchmarks/results/<name>.{json,md}``.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any

from common import RESULTS, results_page, write_results

METRICS = ("tstr", "performance.xgb.syn_id", "tv2")
NAMES = {"tstr": "TSTR", "performance.xgb.syn_id": "TSTR xgb (synthcity)", "tv2": "2-way TV"}
SAME_GRID = ("suite", "metrics", "split", "delta", "cap")
"""The fields the runs of one grid share (the seed aside)."""
CONFIDENCE = 0.95
"""The two-sided level at which a paired difference is read as an order (Student's t over the seeds)."""

Key = tuple[str, str, str, str, str]
"""(table, method, schema class, target, adjacency as ``table_runner`` states it: ``adjacency_of``)."""

ADJACENCY_LABELS = {"replace_one": "replace-one", "add_remove": "add/remove"}
"""Ours' ``neighbouring`` as ``table_runner`` labels it in a row's ``adjacency``."""


def adjacency_of(row: dict[str, Any]) -> str:
    """The adjacency a row's epsilon is stated under, as ``table_runner`` labels it (``adjacency``: "replace-one",
    "add/remove", a peer's own statement), from ours' ``neighbouring`` where a row has no label; "-" where neither."""
    if row.get("adjacency"):
        return str(row["adjacency"])
    return ADJACENCY_LABELS.get(str(row.get("neighbouring")), "-")


def mean_and_error(values: list[float]) -> tuple[float, float]:
    """The mean of ``values`` and its standard error, s / sqrt(n) with the sample standard deviation s (0 for one)."""
    mean = sum(values) / len(values)
    if len(values) < 2:
        return mean, 0.0
    variance = sum((value - mean) ** 2 for value in values) / (len(values) - 1)
    return mean, math.sqrt(variance / len(values))


def summary(values: list[float]) -> dict[str, Any]:
    """``values`` over the runs with their mean and standard error."""
    mean, error = mean_and_error(values)
    return {"mean": mean, "error": error, "values": values}


PEER_CLASS = {"none": "none", "categories": "none", "declared": "declared"}
"""The peer's schema class each of ours is paired with: its end-to-end row (categories declared, bounds paid) for ours
with no schema and with the categories declared, its reference row for ours with the declared schema."""


def schema_class(row: dict[str, Any]) -> str:
    """``none`` for a row fitted without a schema (ours with ``schema`` "none", a peer's end-to-end run),
    ``categories`` for ours given the declared categories alone (``table_runner.CATEGORIES_DECLARED``), ``declared``
    otherwise (ours with the declared schema, a peer's reference run)."""
    mode = row.get("mode")
    if mode is not None:
        return "none" if mode == "end_to_end" else "declared"
    return {"none": "none", "categories declared": "categories"}.get(row["schema"], "declared")


def cells_of(payload: dict[str, Any]) -> dict[Key, dict[str, float]]:
    """One run's scored rows by key (``Key``); rows with an error left out. Two rows of one key are refused."""
    cells: dict[Key, dict[str, float]] = {}
    for row in payload["results"]:
        if row.get("error") or not row.get("scores"):
            continue
        key = (row["table"], row["method"], schema_class(row), str(row.get("target", "none")), adjacency_of(row))
        if key in cells:
            raise ValueError(f"run {payload['name']!r} holds two rows of {key}: summarise runs with one row per cell.")
        cells[key] = row["scores"]
    return cells


def partner_of(cells: dict[Key, dict[str, float]], table: str, peer: str, schema: str) -> dict[str, float] | None:
    """The peer's scores of ``table`` in schema class ``schema`` in one run (``None``: not scored there); more than one
    such row is refused, since the pairing would be ambiguous."""
    found = [scores for key, scores in cells.items() if key[:3] == (table, peer, schema)]
    if len(found) > 1:
        raise ValueError(f"{peer} has {len(found)} rows of {table} with schema {schema!r} in one run: pair with one.")
    return found[0] if found and "tstr" in found[0] else None


def spread(payloads: list[dict[str, Any]], peer: str) -> dict[str, Any]:
    """Every key scored in all runs: each metric's mean and standard error over the runs, the real split's floor
    alike, and for methods other than ``peer`` the paired TSTR difference to the peer's row of the same table and
    schema class in each run; the keys scored in some runs only are listed with their count."""
    if len(payloads) < 2:
        raise ValueError(f"a spread needs runs at two seeds or more, got {len(payloads)}.")
    seeds = [payload["seed"] for payload in payloads]
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"the runs must differ in seed, got seeds {seeds}.")
    for field in SAME_GRID:
        if len({json.dumps(payload.get(field)) for payload in payloads}) > 1:
            raise ValueError(f"the runs differ in {field!r}: summarise runs of one grid only.")
    runs = [cells_of(payload) for payload in payloads]
    every = set.union(*(set(cells) for cells in runs))
    common = sorted(set.intersection(*(set(cells) for cells in runs)))
    rows = []
    for key in common:
        table, method, schema, target, adjacency = key
        row: dict[str, Any] = {"table": table, "method": method, "schema": schema, "target": target, "neighbouring": adjacency}
        for metric in METRICS:
            if all(metric in cells[key] for cells in runs):
                row[metric] = summary([cells[key][metric] for cells in runs])
        floors = [payload["tables"][table]["floor"].get("tstr") for payload in payloads]
        if all(value is not None for value in floors):
            row["floor_tstr"] = summary(floors)
        partners = [partner_of(cells, table, peer, PEER_CLASS[schema]) for cells in runs]
        if method != peer and "tstr" in row and all(partner is not None for partner in partners):
            row["tstr_minus_peer"] = summary([cells[key]["tstr"] - partner["tstr"]
                                              for cells, partner in zip(runs, partners) if partner is not None])
        rows.append(row)
    partial = [{"key": list(key), "runs": sum(key in cells for cells in runs)} for key in sorted(every - set(common))]
    return {"seeds": seeds, "peer": peer, "runs": [payload["name"] for payload in payloads], "rows": rows,
            "partial": partial, "confidence": CONFIDENCE}


def t_quantile(runs: int, confidence: float = CONFIDENCE) -> float:
    """Student's t quantile with ``runs`` - 1 degrees of freedom at two-sided ``confidence`` (2.571 for six runs)."""
    from scipy.stats import t as student

    return float(student.ppf(0.5 + confidence / 2, runs - 1))


def order_of(difference: dict[str, Any] | None, confidence: float = CONFIDENCE) -> str:
    """How a method stands to the peer: "above" or "below" where the mean paired difference d over n runs lies beyond
    t_{n-1} standard errors (Student's t quantile at ``confidence``, two-sided: 2.571 for six runs), else "level"
    ("-" without a difference)."""
    if difference is None:
        return "-"
    runs = len(difference["values"])
    if runs < 2 or abs(difference["mean"]) <= t_quantile(runs, confidence) * difference["error"]:
        return "level"
    return "above" if difference["mean"] > 0 else "below"


def markdown(payload: dict[str, Any]) -> str:
    """The results page: a line per table, method and schema, means ± standard errors over the seeds, then the cells
    scored in some runs only."""
    def cell(value: dict[str, Any] | None, form: str = ".3f") -> str:
        return "-" if value is None else f"{value['mean']:{form}} ± {value['error']:{form}}"

    description = (
        f"One grid run at seeds {', '.join(str(seed) for seed in payload['seeds'])} (each seed its own 80/20 split, noise "
        f"and generation; runs {', '.join(payload['runs'])}): mean ± standard error over the {len(payload['seeds'])} "
        f"seeds. Against {payload['peer']}: the per-seed TSTR difference (method minus peer, same split; ours without "
        f"a schema and with the categories declared against the peer's end-to-end row, with the declared schema "
        f"against its reference row; the peer at the adjacency its code states, ours under both: the rows at the "
        f"peer's adjacency are the comparison at equal adjacency), read as "
        f"an order only where it lies beyond Student's t quantile ({payload['confidence']:.0%}, two-sided, "
        f"{len(payload['seeds']) - 1} degrees of freedom: {t_quantile(len(payload['seeds']), payload['confidence']):.3f}) "
        f"times its standard error. `benchmarks/seed_spread.py`."
    )
    columns = [("table", False), ("method", False), ("schema", False), ("target", False), ("adjacency", False),
               ("real TSTR", True),
               *((NAMES[metric], True) for metric in METRICS), (f"TSTR minus {payload['peer']}", True), ("order", False)]
    rows = [[row["table"], row["method"], row["schema"], row["target"], row["neighbouring"], cell(row.get("floor_tstr")),
             *(cell(row.get(metric), ".4f" if metric == "tv2" else ".3f") for metric in METRICS),
             cell(row.get("tstr_minus_peer"), ".4f"), order_of(row.get("tstr_minus_peer"), payload["confidence"])]
            for row in payload["rows"]]
    page = results_page(f"Scores over seeds, against {payload['peer']}", description, columns, rows)
    partial = [f"- {' / '.join(entry['key'])}: scored in {entry['runs']} of {len(payload['seeds'])} runs"
               for entry in payload["partial"] if entry["runs"] > 1]
    single = sum(entry["runs"] == 1 for entry in payload["partial"])
    if single:  # a wider grid at one seed (another run's rows kept in its file)
        partial.append(f"- {single} cells scored in one run only (in the payload's `partial`)")
    return page + ("\nNot in every run, so left out above:\n\n" + "\n".join(partial) + "\n" if partial else "")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="+", type=Path, help="results files of one grid at different seeds")
    parser.add_argument("--peer", default="dpmm_mst", help="the method every other is paired with")
    parser.add_argument("--name", default="fair_seeds", help="the results files' name")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    payload = spread([json.loads(path.read_text()) for path in args.runs], args.peer)
    write_results(args.out, args.name, payload, markdown(payload))


if __name__ == "__main__":
    main()

"""Two runs of one table grid side by side: every cell of ours in both, its scores before and after, and their means.

A change to the package is judged on the same grid run with the package before it (another checkout on
``PYTHONPATH``, its results under another ``name``) and after it. This script reads the two results files that
``table_runner.py`` wrote and writes, per table, ours' cells (method, schema, target, adjacency) with each score of the
grid's suite before and after, the peers' rows of the second run beside them (read from the data or paid, as each row
says), and the mean of each score over the cells both runs hold.

Run: ``python benchmarks/run_comparison.py BEFORE.json AFTER.json --name NAME [--scores tv2 tstr ...]``. Writes
``benchmarks/results/<name>.{json,md}``.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any

from common import RESULTS, write_results

OURS = ("dpswflow", "dpswflow_r", "dpswgen")
DEFAULT_SCORES = ("column_pair_trends", "worst_corr_gap", "coded_share", "tv2", "tstr")

Key = tuple[str, str, str, str, str]
"""(table, method, schema, target, adjacency) of a row."""


def key_of(row: dict[str, Any]) -> Key:
    """A row's cell, its schema as the runner labels it (the same grid labels it the same in both runs)."""
    return (row["table"], row["method"], str(row["schema"]), row.get("target", "none"), str(row.get("adjacency", "-")))


def rows_of(payload: dict[str, Any]) -> dict[Key, dict[str, Any]]:
    """A results file's rows by key (the last of a key where a file repeats one)."""
    return {key_of(row): row for row in payload["results"]}


def score(row: dict[str, Any] | None, name: str) -> float | None:
    """A row's score ``name``; None where the row failed or has none."""
    value = None if row is None else row.get("scores", {}).get(name)
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else float(value)


def compare(before: dict[str, Any], after: dict[str, Any], scores: tuple[str, ...]) -> dict[str, Any]:
    """The cells of ours in ``after`` with their ``scores`` in both runs, the peers of ``after``, and the means over
    the cells both runs scored."""
    old, new = rows_of(before), rows_of(after)
    cells = [{"key": list(key), **{name: [score(old.get(key), name), score(row, name)] for name in scores}}
             for key, row in new.items() if key[1] in OURS]
    peers = [{"key": list(key), **{name: score(row, name) for name in scores},
              "failure": row.get("error") or row.get("failure")} for key, row in new.items() if key[1] not in OURS]
    means = {}
    for name in scores:
        pairs = [cell[name] for cell in cells if None not in cell[name]]
        if pairs:
            means[name] = [sum(pair[0] for pair in pairs) / len(pairs), sum(pair[1] for pair in pairs) / len(pairs),
                           len(pairs)]
    floors = {table: info.get("floor", {}) for table, info in after["tables"].items()}
    return {"cells": cells, "peers": peers, "means": means, "floors": floors}


def number(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"


def markdown(payload: dict[str, Any]) -> str:
    scores = payload["scores"]
    lines = [f"# {payload['name']} (`python benchmarks/run_comparison.py {payload['arguments']}`)", "",
             f"Ours' cells of `{payload['after']}` (after) beside the same cells of `{payload['before']}` (before), "
             "each score as before -> after; the real test split's row of the after run as the floor; the peers' rows of "
             "the after run below ours. One fit per cell: a cell moves by a fit's spread.", "",
             "## Means over the cells both runs scored", "", "| score | before | after | cells |", "|---|---:|---:|---:|"]
    for name, (old, new, count) in payload["means"].items():
        lines.append(f"| {name} | {old:.4f} | {new:.4f} | {count} |")
    for table in sorted({cell["key"][0] for cell in payload["cells"]}):
        floor = payload["floors"].get(table, {})
        lines += ["", f"## {table}", "", "| method | schema | target | adjacency | " + " | ".join(scores) + " |",
                  "|---|---|---|---|" + "---:|" * len(scores),
                  "| real test split | - | - | - | " + " | ".join(number(floor.get(name)) for name in scores) + " |"]
        for cell in payload["cells"]:
            if cell["key"][0] == table:
                values = " | ".join(f"{number(cell[name][0])} -> {number(cell[name][1])}" for name in scores)
                lines.append(f"| {' | '.join(cell['key'][1:])} | {values} |")
        for peer in payload["peers"]:
            if peer["key"][0] == table:
                values = " | ".join(number(peer[name]) for name in scores)
                failure = f" (failed: {str(peer['failure'])[:80]})" if peer["failure"] else ""
                lines.append(f"| {' | '.join(peer['key'][1:])}{failure} | {values} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--name", required=True)
    parser.add_argument("--scores", nargs="+", default=list(DEFAULT_SCORES))
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    payload = {"name": args.name, "before": args.before.name, "after": args.after.name, "scores": args.scores,
               "arguments": " ".join(argv if argv is not None else __import__("sys").argv[1:]),
               **compare(json.loads(args.before.read_text()), json.loads(args.after.read_text()), tuple(args.scores))}
    write_results(args.out, args.name, payload, markdown(payload))


if __name__ == "__main__":
    main()

"""How often the DP domain leaves a numeric column unplaced (output as missing entries only) for each ``HELD_SHARE``
(``privacy.domain.columns.holds_the_numbers``), on iris (a validation table: ``dp_domain.py``), at the plugins' split for a
table below 1,000 rows (``SMALL_TABLE_SHARE``) and epsilon 3 and 1, delta 1e-5: seeded releases, no fit.

Run: ``python benchmarks/studies/held_share.py [--releases 400]``; writes ``results/held_share.{json,md}``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import torch
from sklearn.datasets import load_iris

from synthcity_dpswf.privacy.domain import columns, release_domain_at
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: the shared modules, imported by name
from common import RESULTS, environment
from synthcity_dpswf.privacy.budget import SMALL_TABLE_SHARE, Budget

SHARES = (0.5, 0.4, 0.25)
EPSILONS = (3.0, 1.0)


def iris() -> pd.DataFrame:
    frame = pd.DataFrame(load_iris()["data"], columns=["sepal length", "sepal width", "petal length", "petal width"])
    return frame.assign(target=load_iris()["target"])


def unplaced(frame: pd.DataFrame, epsilon: float, share: float, releases: int) -> dict[str, int]:
    """Per column, in how many of ``releases`` seeded releases it is not placed at ``HELD_SHARE`` = ``share``."""
    held, columns.HELD_SHARE = columns.HELD_SHARE, share
    try:
        calibration = Budget(epsilon, 1e-5).domain_part(SMALL_TABLE_SHARE)
        counts = {column: 0 for column in frame.columns}
        for seed in range(releases):
            release = release_domain_at(frame, calibration, torch.Generator().manual_seed(seed))
            for column in frame.columns:
                counts[column] += not release.placed.get(column, True)
        return counts
    finally:
        columns.HELD_SHARE = held


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--releases", type=int, default=400)
    args = parser.parse_args()
    frame = iris()
    rows: list[dict[str, Any]] = [
        {"epsilon": epsilon, "held_share": share, "releases": args.releases, "unplaced": unplaced(frame, epsilon, share, args.releases)}
        for epsilon in EPSILONS for share in SHARES
    ]
    lines = ["# Unplaced numeric columns by HELD_SHARE, iris (150 rows), seeded DP-domain releases", "",
             "| epsilon | HELD_SHARE | releases | " + " | ".join(frame.columns) + " |",
             "|---:|---:|---:|" + "---:|" * len(frame.columns)]
    for row in rows:
        lines.append(f"| {row['epsilon']:g} | {row['held_share']:g} | {row['releases']} | "
                     + " | ".join(str(row["unplaced"][column]) for column in frame.columns) + " |")
    text = "\n".join(lines) + "\n"
    print(text)
    (RESULTS / "held_share.md").write_text(text)
    (RESULTS / "held_share.json").write_text(json.dumps({"rows": rows, "environment": environment(torch.device("cpu"))}, indent=2) + "\n")


if __name__ == "__main__":
    main()

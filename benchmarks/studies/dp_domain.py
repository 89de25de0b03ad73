"""How often the DP domain gets an integer column's levels exactly right, on the validation tables.

Iris (sklearn, 150 rows) with its integer target (0/1/2, 50 rows each), at the default epsilon = 3 and
the default delta (``default_delta``: 1e-5 here), for several shares of mu^2 of one budget (``Budget.domain_part``:
the domain accounted with the releases, privacy.md "One budget"): over ``--releases`` releases (public seeds: this measures the
mechanism, it releases nothing), how often the target's range is exactly {0, 1, 2}, misses a class ("narrow")
or adds one ("wide"), how often it is not released as an integer column, and how often a float column is not released as numeric or its range is wider than 20 (the data span 0.1-7.9).
The default share below 1,000 rows (``default_domain_share``) was chosen from this table.

Run: ``python benchmarks/studies/dp_domain.py`` (under a minute). Writes
``benchmarks/results/dp_domain_iris.{json,md}``.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

import torch
from sklearn.datasets import load_iris

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: the shared modules, imported by name
from common import RESULTS, environment, write_json

from synthcity_dpswf.adapters import NumericColumn, TabularDomain
from synthcity_dpswf.privacy.budget import Budget, default_delta
from synthcity_dpswf.privacy.domain import release_domain_at

EPSILON = 3.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--releases", type=int, default=3000)
    parser.add_argument("--shares", type=float, nargs="+", default=[0.2, 0.3, 0.4, 0.5])
    args = parser.parse_args()
    frame = load_iris(as_frame=True).frame
    delta = default_delta(len(frame))
    floats = [column for column in frame.columns if column != "target"]
    rows = []
    for share in args.shares:
        outcomes: Counter[str] = Counter()
        wide_floats = 0
        for seed in range(args.releases):
            release = release_domain_at(frame, Budget(EPSILON, delta).domain_part(share), torch.Generator().manual_seed(seed))
            target = TabularDomain.from_release(release).columns[-1]
            if not isinstance(target, NumericColumn) or not target.integer:
                outcomes["wrong kind"] += 1
            else:
                outcomes["exact" if (target.low, target.high) == (0, 2) else "wide" if target.low < 0 or target.high > 2 else "narrow"] += 1
            wide_floats += sum(column not in release.bounds or release.bounds[column][1] - release.bounds[column][0] > 20 for column in floats)
        rows.append({
            "share": share, "domain_epsilon": Budget(EPSILON, delta).domain_part(share).epsilon,
            **{outcome: outcomes[outcome] / args.releases for outcome in ("exact", "narrow", "wide", "wrong kind")},
            "float_ranges_wider_than_20": wide_floats / (args.releases * len(floats)),
        })
    lines = [
        f"DP domain on iris, epsilon = {EPSILON}, delta = {delta:.3g} (the default), {args.releases} releases per share",
        "",
        "| share | domain epsilon | target exactly {0,1,2} | a class missing | an extra class | not an integer column | float range > 20 |",
        "|---|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {r['share']} | {r['domain_epsilon']:.2f} | {r['exact']:.1%} | {r['narrow']:.1%} | {r['wide']:.1%} | {r['wrong kind']:.1%} | {r['float_ranges_wider_than_20']:.2%} |"
        for r in rows
    ]
    table = "\n".join(lines)
    print(table)
    write_json(RESULTS / "dp_domain_iris.json", {"rows": rows, "releases": args.releases, "environment": environment(torch.device("cpu"))})
    (RESULTS / "dp_domain_iris.md").write_text(table + "\n")


if __name__ == "__main__":
    main()

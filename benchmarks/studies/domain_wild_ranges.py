"""How often a DP domain's released range runs far beyond a column's values, and what is generated then (an audit of
the DP domain's post-processing on the validation tables; the DP domain's noise seeded, so each range replays).

A numeric column's range is read from noisy counts over octaves (privacy.md, "The DP domain"): a bin far from every
value may stand out of its noise by chance (stage 2's tests are set to about 0.1% a column each), and stage 3's value
histogram over the stretched range then has cells too wide to hold the values apart. This script fits ``dpswflow``
with no schema on each validation table ``--fits`` times, the DP domain's (and a paid pair selection's) noise seeded
from 0, 1, ... (``recipes.tables``' ``secret_generator`` with a known seed: for audits only, never for a release; the
flow's own releases keep OS entropy, so the generated rows do not replay), at ``--steps`` flow steps (the ranges do
not depend on the flow), and lists every fit whose released range of some numeric column reaches beyond
``FAR`` times the column's largest magnitude (at least 1): the released range, the real one, and the share of the
generated rows (the training split's size) outside the real [min, max].

Run: ``python benchmarks/studies/domain_wild_ranges.py --data-root ../shared/data [--tables fair stand_in adult_raw
randhie_validation] [--fits 200] [--name domain_wild_ranges]``. Writes ``benchmarks/results/<name>.{md,json}``.
"""

from __future__ import annotations

import argparse
import re
import sys
import warnings
from pathlib import Path
from typing import Any
from unittest import mock

import pandas as pd
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: the shared modules, imported by name
from common import RESULTS, environment, results_page, write_results
from target_validation import DELTA, EPSILON, validation_table

import synthcity_dpswf  # noqa: F401  (registers the plugins)
from synthcity_dpswf.recipes import tables as table_recipes

TABLES = ("fair", "stand_in", "adult_raw", "randhie_validation")
FAR = 10.0
"""A released range is wild where an end lies beyond this many times the column's largest magnitude (at least 1)."""
NUMBER = r"[-+]?(?:\d+\.?\d*(?:e[-+]?\d+)?|inf)"
RANGE = re.compile(rf"^\[(?P<low>{NUMBER}), (?P<high>{NUMBER})\]( \(\d+ decimals?\))?$")
"""A numeric column's range as ``released_domain()`` writes it, ``[low, high]`` (a float column's output decimals
after it); categories, and a coded column's values (``values 25, 33, ...``: published values, never beyond the data),
do not match."""


def numeric_ranges(released: pd.DataFrame) -> dict[str, tuple[float, float]]:
    """Each numeric column's released [low, high] from ``released_domain()``'s ``values`` column."""
    ranges = {}
    for column, values in zip(released["column"], released["values"].astype(str)):
        match = RANGE.match(values)
        if match is not None:
            ranges[column] = (float(match["low"]), float(match["high"]))
    return ranges


def wild(low: float, high: float, real: pd.Series) -> bool:
    """Whether the released [low, high] reaches beyond ``FAR`` times the real column's largest magnitude."""
    scale = max(1.0, float(real.abs().max()))
    return max(abs(low), abs(high)) > FAR * scale


def audit(tables: list[str], fits: int, steps: int, data_root: Path | None) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """The wild ranges of ``fits`` seeded fits per table (module docstring), and the fits run per table."""
    from synthcity.plugins import Plugins

    rows, counted = [], {}
    for name in tables:
        train, _, _, _ = validation_table(name, data_root)
        numeric = train.select_dtypes("number")
        counted[name] = fits
        for seed in range(fits):
            with warnings.catch_warnings(), mock.patch.object(
                    table_recipes, "secret_generator", lambda seed=seed: torch.Generator().manual_seed(seed)):
                warnings.simplefilter("ignore")
                plugin = Plugins().get("dpswflow", epsilon=EPSILON, delta=DELTA, random_state=0, n_steps=steps).fit(train)
                ranges = numeric_ranges(plugin.released_domain())
                far = {column: bounds for column, bounds in ranges.items()
                       if column in numeric and wild(*bounds, numeric[column])}
                generated = plugin.generate(len(train)).dataframe() if far else None
            for column, (low, high) in far.items():
                assert generated is not None
                values = pd.to_numeric(generated[column], errors="coerce")
                real = numeric[column]
                outside = float(((values < real.min()) | (values > real.max())).mean())
                rows.append({"table": name, "seed": seed, "column": column, "released": [low, high],
                             "real": [float(real.min()), float(real.max())], "outside": outside,
                             "generated_max": float(values.max())})
                print(rows[-1], flush=True)
    return rows, counted


def markdown(payload: dict[str, Any]) -> str:
    environment_ = payload["environment"]
    counts = "; ".join(f"{name}: {sum(row['table'] == name for row in payload['rows'])} wild ranges in "
                       f"{fits} fits" for name, fits in payload["fits"].items())
    return results_page(
        "DP-domain ranges far beyond a column's values (`python benchmarks/studies/domain_wild_ranges.py`)",
        f"DPSWflow, no schema, epsilon = {EPSILON:g}, delta = {DELTA:g}, replace-one, the DP domain's noise seeded "
        f"0, 1, ... (audit only; the flow's own noise not), {payload['steps']} flow steps; {environment_['device']}, {environment_['date']}. A range is "
        f"wild where an end lies beyond {FAR:g} times the column's largest magnitude (at least 1). {counts}. Outside: "
        "the share of the generated rows (the training split's size) outside the real [min, max].",
        [("table", False), ("seed", True), ("column", False), ("released", False), ("real", False),
         ("generated max", True), ("outside", True)],
        [[row["table"], str(row["seed"]), row["column"], f"[{row['released'][0]:g}, {row['released'][1]:g}]",
          f"[{row['real'][0]:g}, {row['real'][1]:g}]", f"{row['generated_max']:g}", f"{row['outside']:.2%}"]
         for row in payload["rows"]],
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tables", nargs="+", default=list(TABLES), choices=list(TABLES))
    parser.add_argument("--fits", type=int, default=200)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--data-root", type=Path, default=None)
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--name", default="domain_wild_ranges")
    args = parser.parse_args(argv)
    rows, fits = audit(args.tables, args.fits, args.steps, args.data_root)
    payload = {"environment": environment(torch.device("cpu")), "steps": args.steps, "fits": fits, "rows": rows}
    write_results(args.out, args.name, payload, markdown(payload))


if __name__ == "__main__":
    main()

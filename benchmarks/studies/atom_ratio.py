"""The atoms' noise ratio r_a (``privacy.domain.calibration.ATOM_NOISE_RATIO``) chosen on the validation tables only.

The DP domain's stage 4 counts a float column's frequent exact values at noise r_a s_c and publishes them above
r_a tau (privacy.md, "The DP domain"): a small r_a publishes more atoms, and raises every other stage's noise by
sqrt(1 + C_atom / (r_a^2 S)). Each ratio, and none (r_a = 1e9: no atom passes, no noise spent), on:

- fair's 80% training split (statsmodels; the user-tables grid's validation table: coded floats such as ages 17.5,
  22, 27, ...): DPSWflow with no schema and with ``tables.py``'s declared schema, ``--fits`` fits each, 2-way TV and
  TSTR by the user-tables suite's code (``schema_gap.fits``);
- the stand-in (``stand_in.py``: 15 log-normal columns to the cent, no frequent value, 5 categorical ones):
  the 10% category's survival over ``--releases`` DP domains (target 95%) and ``--stand-in-fits`` fits each way.

Epsilon = 1, delta = 1e-5, replace-one. Run: ``python benchmarks/studies/atom_ratio.py [--ratios 1 2 4] [--fits 6]``.
Writes ``benchmarks/results/atom_ratio.{md,json}``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: the shared modules, imported by name
import schema_gap
import stand_in
from common import RESULTS, environment, write_results
from tables import holdout_split, load_table

from synthcity_dpswf.privacy.domain import calibration, release

NO_ATOMS = 1e9
"""A ratio at which no atom passes its threshold and the atoms' share of the noise vanishes: the code without atoms."""


def measure(ratio: float, fits: int, releases: int, stand_in_fits: int) -> dict[str, Any]:
    """Both tables' numbers with ``ATOM_NOISE_RATIO`` set to ``ratio`` for this measurement only."""
    default = calibration.ATOM_NOISE_RATIO
    for module in (calibration, release):  # the stages' noise and the release's atom threshold read it
        module.ATOM_NOISE_RATIO = ratio
    try:
        table = load_table("fair", None)
        train, test = holdout_split(table.frame, 0)
        fair = schema_gap.fits(train, test, table.schema(train), table.target, fits)
        frame = stand_in.stand_in(4000 + stand_in.TEST_ROWS, seed=0)
        first, second = frame.iloc[:4000].reset_index(drop=True), frame.iloc[4000:].reset_index(drop=True)
        survival = stand_in.survival(first, releases)
        rows = stand_in.fits(first, second, stand_in_fits)
    finally:
        for module in (calibration, release):
            module.ATOM_NOISE_RATIO = default
    stand = {name: float(np.mean([row["tv2"] for row in rows if row["schema"] == name])) for name in ("none", "declared")}
    return {"ratio": ratio, "fair": {name: fair[name]["tv2"] for name in fair},
            "fair_std": {name: fair[name]["tv2_std"] for name in fair}, "stand_in": stand,
            "survival": survival["flag_10pct"]}


def markdown(payload: dict[str, Any]) -> str:
    lines = [
        "# The atoms' noise ratio on the validation tables (`python benchmarks/studies/atom_ratio.py`)", "",
        f"Epsilon = 1, delta = 1e-5, replace-one; DPSWflow; fair: mean (std) over {payload['fits']} fits; the stand-in: "
        f"mean over {payload['stand_in_fits']} fits, survival of its 10% category over {payload['releases']} DP domains "
        "(target 95%). r_a = none: no atom (the code before stage 4).", "",
        "| r_a | fair, no schema | fair, declared | stand-in, no schema | stand-in, declared | stand-in survival |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for row in payload["rows"]:
        name = "none" if row["ratio"] >= NO_ATOMS else f"{row['ratio']:g}"
        lines.append(
            f"| {name} | {row['fair']['none']:.3f} ({row['fair_std']['none']:.3f}) | {row['fair']['declared']:.3f} "
            f"({row['fair_std']['declared']:.3f}) | {row['stand_in']['none']:.3f} | {row['stand_in']['declared']:.3f} | "
            f"{100 * row['survival']:.0f}% |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ratios", type=float, nargs="+", default=[NO_ATOMS, 1.0, 2.0, 4.0])
    parser.add_argument("--fits", type=int, default=6)
    parser.add_argument("--releases", type=int, default=100)
    parser.add_argument("--stand-in-fits", type=int, default=3)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    rows = [measure(ratio, args.fits, args.releases, args.stand_in_fits) for ratio in args.ratios]
    payload = {"suite": "atom_ratio", "fits": args.fits, "releases": args.releases, "stand_in_fits": args.stand_in_fits,
               "environment": environment(torch.device("cpu")), "rows": rows}
    write_results(args.out, "atom_ratio", payload, markdown(payload))


if __name__ == "__main__":
    main()

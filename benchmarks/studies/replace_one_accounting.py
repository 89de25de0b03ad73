"""The noise per-step releases need under replace-one, fixed-size batches against Poisson batches (privacy.md,
"Poisson batches under replace-one").

For each sampling rate q (K = ceil(passes / q) releases, a one-hot sum kind: every record contributes a vector of norm
C = Delta_RO / sqrt(2)), the multiplier z each accountant calibrates to (epsilon, delta): fixed-size batches of b = q n
by dp-accounting's replace-one RDP bound for sampling without replacement (``replace_one_rdp``), Poisson batches at
rate q by the privacy loss distribution of the antipodal pair (``replace_one_pld``), and their ratio, the factor on
every count's noise std; beside them, r = z / (q sqrt(K)), the noise per record counted of the K releases summed, and
the one release of all records' z (the analytic Gaussian mechanism). Nothing private is read: the numbers are functions
of (q, K, epsilon, delta).

Run: ``python benchmarks/studies/replace_one_accounting.py [--rates 0.1 0.2 0.3 0.5 0.7 0.9 1] [--epsilons 1 4]
[--passes 10]``. Writes ``benchmarks/results/replace_one_accounting.{md,json}``.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: the shared modules, imported by name
from common import DELTA, RESULTS, environment, results_page, write_results

from synthcity_dpswf.privacy import REPLACE_ONE_PLD, REPLACE_ONE_RDP, ReleaseAccountant, analytic_gaussian_noise_multiplier

N_RECORDS = 100_000
"""n for the fixed-size batches (b = q n); the Poisson accounting does not depend on it."""
ONE_HOT = 1 / math.sqrt(2.0)
"""C / Delta_RO of the histogram and marginal kinds."""


def row(rate: float, epsilon: float, passes: float) -> dict[str, Any]:
    """Both accountants' z at one (q, epsilon), K = ceil(passes / q)."""
    steps = math.ceil(passes / rate)
    batch = round(rate * N_RECORDS)
    fixed = ReleaseAccountant(N_RECORDS, batch, REPLACE_ONE_RDP).calibrate(epsilon, DELTA, steps)
    poisson = ReleaseAccountant.poisson(rate, REPLACE_ONE_PLD, n_records=N_RECORDS,
                                        contribution_norm=ONE_HOT).calibrate(epsilon, DELTA, steps)
    spread = rate * math.sqrt(steps)
    return {"rate": rate, "steps": steps, "epsilon": epsilon, "fixed_z": fixed, "poisson_z": poisson,
            "ratio": poisson / fixed, "fixed_r": fixed / spread, "poisson_r": poisson / spread,
            "one_release_z": analytic_gaussian_noise_multiplier(epsilon, DELTA)}


def markdown(payload: dict[str, Any]) -> str:
    return results_page(
        "Per-step releases under replace-one: fixed-size against Poisson batches (`python "
        "benchmarks/studies/replace_one_accounting.py`)",
        f"delta = {DELTA:g}, K = ceil({payload['passes']:g} / q) releases, a one-hot sum kind (C = Delta / sqrt(2)); z in "
        "units of the replace-one sensitivity Delta, calibrated by each accountant (fixed-size batches of b = q n: "
        "dp-accounting's replace-one RDP for sampling without replacement; Poisson batches: the antipodal pair's "
        "privacy loss distribution, privacy.md, \"Poisson batches under replace-one\"); ratio: Poisson's z over the "
        "fixed-size one, the factor on every count's noise; r = z / (q sqrt(K)): the K releases summed, per record "
        f"counted; one release: z of all records released once. {payload['environment']['date']}.",
        [("epsilon", True), ("q", True), ("K", True), ("fixed-size z", True), ("Poisson z", True), ("ratio", True),
         ("fixed-size r", True), ("Poisson r", True), ("one release z", True)],
        [[f"{row['epsilon']:g}", f"{row['rate']:g}", str(row["steps"]), f"{row['fixed_z']:.2f}", f"{row['poisson_z']:.2f}",
          f"{row['ratio']:.2f}", f"{row['fixed_r']:.2f}", f"{row['poisson_r']:.2f}", f"{row['one_release_z']:.2f}"]
         for row in payload["rows"]],
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rates", type=float, nargs="+", default=[0.1, 0.2, 0.3, 0.5, 0.7, 0.9, 1.0])
    parser.add_argument("--epsilons", type=float, nargs="+", default=[1.0, 4.0])
    parser.add_argument("--passes", type=float, default=10.0)
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--name", default="replace_one_accounting")
    args = parser.parse_args(argv)
    rows = [row(rate, epsilon, args.passes) for epsilon in args.epsilons for rate in args.rates]
    payload = {"environment": environment(torch.device("cpu")), "passes": args.passes, "rows": rows}
    text = markdown(payload)
    write_results(args.out, args.name, payload, text)
    print(text)


if __name__ == "__main__":
    main()

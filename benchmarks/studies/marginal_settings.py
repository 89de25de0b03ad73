"""Validation of the marginal path's settings, on data we do not report on: the raw UCI Adult training split
(32,561 rows, ``adult.csv``) with the domain written from the UCI documentation. The reported tables use the
integer-coded Adult of all 48,842 rows (``configs/tables/marginals_adult_discretized.toml``); the two share people (the training split is
part of the 48,842), so this is a validation on another encoding of overlapping data, not on independent data.

For each epsilon, one release per ``coarse_bins`` (the flow settings are post-processing of it): flow steps and
step size vary on the same release. Metric: mean two-way TV (``marginal_tv_distance``) between 5,000 generated
rows and the real rows, on 16 coarse levels per column and at the codec's full resolution.

Run: ``python benchmarks/studies/marginal_settings.py --data-root ../shared/data`` (about 20 minutes on 2 CPU cores).
Writes ``benchmarks/results/marginal_settings.{json,md}``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: the shared modules, imported by name
from common import DELTA, RESULTS, environment, write_json
from table_metrics import coarse
from tables import load_table

from synthcity_dpswf.adapters import MarginalTableCodec, TabularDomain
from synthcity_dpswf.evaluation import marginal_tv_distance
from synthcity_dpswf.models import DPSWFlow
from synthcity_dpswf.privacy import MarginalLayout

SAMPLES = 5_000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-root", type=Path, required=True)
    parser.add_argument("--epsilons", nargs="+", type=float, default=[1.0, 10.0])
    parser.add_argument("--coarse-bins", nargs="+", type=int, default=[8, 16, 32])
    parser.add_argument("--steps", nargs="+", type=int, default=[100, 300, 1000])
    parser.add_argument("--step-sizes", nargs="+", type=float, default=[0.5, 1.0])
    parser.add_argument("--rows", type=int, default=None)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    table = load_table("adult_raw", args.data_root)
    frame, domain_path = table.frame, table.domain_file
    if args.rows is not None:
        frame = frame.sample(args.rows, random_state=0).reset_index(drop=True)
    codec = MarginalTableCodec(TabularDomain.from_dict(json.loads(Path(domain_path).read_text())), fine_bins=100)
    codes = codec.encode(frame)
    real_coarse, coarse_levels = coarse(codes.long(), codec.levels)
    rows: list[dict[str, Any]] = []
    for epsilon in args.epsilons:
        for coarse_bins in args.coarse_bins:
            layout = MarginalLayout.build(codec.levels, coarse_bins)
            model = DPSWFlow(release="marginal", marginals=layout).fit(codes, epsilon, DELTA)
            grid = [(steps, h) for steps in args.steps for h in args.step_sizes]
            if coarse_bins != 16:  # the other resolutions at the middle flow setting only
                grid = [(args.steps[len(args.steps) // 2], 1.0)]
            for steps, step_size in grid:
                started = time.perf_counter()
                samples = model.sample(SAMPLES, n_steps=steps, step_size=step_size)
                seconds = time.perf_counter() - started
                synthetic = codec.encode(codec.decode(samples)).long()
                row = {
                    "epsilon": epsilon, "coarse_bins": coarse_bins, "n_steps": steps, "step_size": step_size,
                    "tv2_coarse": marginal_tv_distance(real_coarse, coarse(synthetic, codec.levels)[0], coarse_levels),
                    "tv2_full": marginal_tv_distance(codes.long(), synthetic, codec.levels), "seconds": seconds,
                }
                rows.append(row)
                print(row, flush=True)
                write_json(args.out / "marginal_settings.json", {"rows_used": len(frame), "results": rows,
                                                                 "environment": environment(torch.device("cpu"))})
    lines = [f"# Marginal path settings, validation on raw Adult ({len(frame)} rows), {SAMPLES} samples, delta = {DELTA:g}",
             "", "| epsilon | coarse bins | flow steps | h | 2-way TV coarse | 2-way TV full | flow seconds |", "|---|---|---|---|---|---|---|"]
    lines += [f"| {r['epsilon']:g} | {r['coarse_bins']} | {r['n_steps']} | {r['step_size']:g} | {r['tv2_coarse']:.4f} | "
              f"{r['tv2_full']:.4f} | {r['seconds']:.0f} |" for r in rows]
    (args.out / "marginal_settings.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()

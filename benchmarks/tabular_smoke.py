"""Tabular smoke benchmark: UCI Adult (discretized, with its public domain) at epsilon = 3.

Our three plugins (given the public domain, so the whole budget goes to the releases) beside synthcity's
DP generators dpgan, pategan, privbayes and aim, each through ``Benchmarks.evaluate`` on a few thousand
rows with cheap metrics, timed one by one. synthcity's plugins fit their encoders on the private table
(outside their DP guarantee); ours do not. The full suite is ``benchmarks/tabular.py`` (a later issue).

Run: ``python benchmarks/tabular_smoke.py --data-root ../shared/data [--rows 3000] [--epsilon 3]``.
Writes ``benchmarks/results/tabular_smoke.md`` and ``.json``.
"""

from __future__ import annotations

import argparse
import json
import platform
import tempfile
import time
from pathlib import Path

import pandas as pd
import torch

import synthcity_dpswf  # noqa: F401  (registers the plugins)
from synthcity.benchmark import Benchmarks
from synthcity.plugins.core.dataloader import GenericDataLoader

RESULTS = Path(__file__).resolve().parent / "results"
METRICS = {
    "stats": ["jensenshannon_dist", "wasserstein_dist"],
    "detection": ["detection_xgb"],
    "performance": ["linear_model"],
}
COLUMNS = {
    "stats.jensenshannon_dist.marginal": "JS dist (lower better)",
    "stats.wasserstein_dist.joint": "Wasserstein (lower better)",
    "detection.detection_xgb.mean": "detection AUC (0.5 best)",
    "performance.linear_model.syn_id": "TSTR linear (higher better)",
    "performance.linear_model.gt": "real linear",
}


def methods(epsilon: float, delta: float, domain: Path) -> list[tuple[str, str, dict]]:
    ours = {"epsilon": epsilon, "delta": delta, "domain": str(domain)}
    return [
        ("dpswflow_r", "dpswflow_r", ours),
        ("dpswflow", "dpswflow", ours),
        ("dpswgen", "dpswgen", ours),
        ("dpgan", "dpgan", {"epsilon": epsilon, "delta": delta, "n_iter": 20}),  # ~6 s per iteration here
        ("pategan", "pategan", {"epsilon": epsilon, "delta": delta, "n_iter": 50}),
        ("privbayes", "privbayes", {"epsilon": epsilon}),
        ("aim", "aim", {"epsilon": epsilon, "delta": delta}),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-root", type=Path, required=True, help="folder holding adult/adult_discretized.csv")
    parser.add_argument("--rows", type=int, default=3000)
    parser.add_argument("--epsilon", type=float, default=3.0)
    parser.add_argument("--only", nargs="*", help="run only these methods")
    args = parser.parse_args()
    table = pd.read_csv(args.data_root / "adult" / "adult_discretized.csv").sample(args.rows, random_state=0)
    domain = args.data_root / "adult" / "adult_discretized_domain.json"
    delta = 1e-5
    data = GenericDataLoader(table, target_column="income>50K")
    rows, timings = [], {}
    for label, plugin, kwargs in methods(args.epsilon, delta, domain):
        if args.only and label not in args.only:
            continue
        started = time.perf_counter()
        with tempfile.TemporaryDirectory() as workspace:
            try:
                score = Benchmarks.evaluate(
                    [(label, plugin, kwargs)], data, metrics=METRICS, repeats=1, workspace=Path(workspace),
                    synthetic_cache=False, use_metric_cache=False,
                )[label]
                row = {name: float(score.loc[key, "mean"]) for key, name in COLUMNS.items() if key in score.index}
            except Exception as error:  # a baseline that fails is reported, not hidden
                row = {"error": f"{type(error).__name__}: {str(error).splitlines()[0][:80]}"}
        timings[label] = time.perf_counter() - started
        rows.append({"method": label, **row, "wall time (s)": round(timings[label], 1)})
        print(rows[-1], flush=True)
    frame = pd.DataFrame(rows).set_index("method")
    header = (
        f"# Adult (discretized, public domain), {args.rows} rows, epsilon = {args.epsilon:g}, delta = {delta:g}\n\n"
        f"CPU: {platform.processor() or platform.machine()}, {torch.get_num_threads()} threads; one repeat each.\n\n"
    )
    table_md = frame.to_markdown(floatfmt=".3f")
    print(table_md)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "tabular_smoke.md").write_text(header + table_md + "\n")
    meta = {"rows": args.rows, "epsilon": args.epsilon, "delta": delta, "torch": torch.__version__, "results": rows}
    (RESULTS / "tabular_smoke.json").write_text(json.dumps(meta, indent=2) + "\n")


if __name__ == "__main__":
    main()

"""Marginal benchmark: our plugins (marginal release, their defaults) against the reference MST and AIM on Adult,
with the metrics of the marginal literature, every method scored by the same code.

Table: UCI Adult, all 48,842 rows, integer-coded, with its public domain (levels per column; private-pgm's
``adult_discretized``), target ``income>50K``. ``--table adult_raw`` runs the raw training split (32,561 rows)
with the domain written from the UCI documentation.

Methods:
  dpswflow, dpswflow_r, dpswgen   ours, through synthcity's ``Plugins().get(...)`` with their defaults and the
                                  public domain; fit and generate timed together
  mst, aim (reference)            smartnoise-synth 1.0.8 on private-pgm's mbi, run in their own environment
                                  (numpy 2) by ``benchmarks/reference/run_reference.py``, read from
                                  ``--reference DIR``: files ``<method>_eps<epsilon>.csv`` (n rows,
                                  integer codes) and ``timings.jsonl`` (wall times); domain from the same public
                                  file, no budget spent on preprocessing
  pategan (synthcity)             optional (``--methods``); reads the columns' min/max from the private table
                                  without paying for them

Metrics (``synthcity_dpswf.evaluation.marginal_tv_distance`` and sklearn, same for every method; n synthetic rows):
  tv2_coarse  mean total variation over all 91 two-way marginals, 16 equal bins per wide column (lower is better;
              two independent halves of the real rows differ by about 0.02)
  tv2_full    the same at the domain's full resolution (coarse bins flatter a method that measures coarse)
  tv3_coarse  three-way marginals, 100 random triples, coarse
  tstr_auroc  HistGradientBoosting trained on the synthetic table to predict the target, AUROC on the real rows
  detection   AUROC of HistGradientBoosting telling 10,000 real from 10,000 synthetic rows (5-fold), 0.5 is best

``--neighbouring add_remove`` runs ours under add/remove (Poisson-sampled per-step releases, Opacus' RDP); the
table's adjacency column says which adjacency each row's epsilon is stated under.

Run: ``python benchmarks/marginals.py --data-root ../shared/data --reference DIR`` (about 40 minutes on 2 CPU
cores for ours at three epsilons). Writes ``benchmarks/results/marginals_<table>.{json,md}``; rows of an earlier
run on the same table (other methods or epsilons) are kept and the table is rewritten with all of them.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import DELTA, RESULTS, environment, load_adult, write_json  # noqa: E402
from report import marginal_table  # noqa: E402

import synthcity_dpswf  # noqa: E402,F401  (registers the plugins)
from synthcity_dpswf.adapters import MarginalTableCodec, TabularDomain  # noqa: E402
from synthcity_dpswf.evaluation import marginal_tv_distance  # noqa: E402
from synthcity_dpswf.math.marginals import coarse_index  # noqa: E402

OURS = ("dpswflow", "dpswflow_r", "dpswgen")
REFERENCE = ("mst", "aim")
COARSE_BINS = 16
TRIPLES = 100
DETECTION_ROWS = 10_000


def coarse(codes: torch.Tensor, levels: tuple[int, ...]) -> tuple[torch.Tensor, tuple[int, ...]]:
    """Codes at ``COARSE_BINS`` levels per wide column (``math.marginals.coarse_index``)."""
    coarse_levels = tuple(min(k, COARSE_BINS) for k in levels)
    columns = [coarse_index(codes[:, j], levels[j], coarse_levels[j]) for j in range(codes.shape[1])]
    return torch.stack(columns, dim=1), coarse_levels


def scores(real: pd.DataFrame, synthetic: pd.DataFrame, codec: MarginalTableCodec, target: str, seed: int = 0) -> dict[str, float]:
    """The metrics of the module docstring for one synthetic table."""
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.metrics import roc_auc_score
    from sklearn.model_selection import cross_val_score

    real_codes = codec.encode(real).long()
    synthetic_codes = codec.encode(synthetic[list(real.columns)]).long()
    levels = codec.levels
    real_coarse, coarse_levels = coarse(real_codes, levels)
    synthetic_coarse, _ = coarse(synthetic_codes, levels)
    result = {
        "tv2_coarse": marginal_tv_distance(real_coarse, synthetic_coarse, coarse_levels),
        "tv2_full": marginal_tv_distance(real_codes, synthetic_codes, levels),
        "tv3_coarse": marginal_tv_distance(real_coarse, synthetic_coarse, coarse_levels, way=3, max_tables=TRIPLES, seed=seed),
    }
    column = list(real.columns).index(target)
    features = [j for j in range(real_codes.shape[1]) if j != column]
    labels_real = real_codes[:, column].numpy()
    labels_synthetic = synthetic_codes[:, column].numpy()
    if len(np.unique(labels_synthetic)) < 2:
        result["tstr_auroc"] = 0.5  # a constant target: no classifier can rank
    else:
        model = HistGradientBoostingClassifier(random_state=seed).fit(synthetic_codes[:, features].numpy(), labels_synthetic)
        positive = list(model.classes_).index(1) if 1 in model.classes_ else len(model.classes_) - 1
        result["tstr_auroc"] = float(roc_auc_score(labels_real == 1, model.predict_proba(real_codes[:, features].numpy())[:, positive]))
    rng = np.random.default_rng(seed)
    take = min(DETECTION_ROWS, len(real_codes), len(synthetic_codes))
    mixed = np.vstack([real_codes.numpy()[rng.choice(len(real_codes), take, replace=False)],
                       synthetic_codes.numpy()[rng.choice(len(synthetic_codes), take, replace=False)]])
    origin = np.r_[np.ones(take), np.zeros(take)]
    detector = HistGradientBoostingClassifier(random_state=seed)
    result["detection"] = float(cross_val_score(detector, mixed, origin, cv=5, scoring="roc_auc").mean())
    return result


def run_ours(
    method: str, frame: pd.DataFrame, domain: str, epsilon: float, seed: int, neighbouring: str = "replace_one"
) -> tuple[pd.DataFrame, float, str]:
    """Fit one of our plugins on ``frame`` and generate as many rows; (table, seconds, reported epsilon)."""
    from synthcity.plugins import Plugins

    started = time.perf_counter()
    plugin = Plugins().get(method, epsilon=epsilon, delta=DELTA, domain=domain, random_state=seed, neighbouring=neighbouring)
    plugin.fit(frame)
    synthetic = plugin.generate(len(frame)).dataframe()
    return synthetic, time.perf_counter() - started, f"{plugin.privacy_report().epsilon:.4g}"


def run_pategan(frame: pd.DataFrame, target: str, epsilon: float, seed: int) -> tuple[pd.DataFrame, float, str]:
    from synthcity.plugins import Plugins
    from synthcity.plugins.core.dataloader import GenericDataLoader

    started = time.perf_counter()
    plugin = Plugins().get("pategan", epsilon=epsilon, delta=DELTA, random_state=seed)
    plugin.fit(GenericDataLoader(frame, target_column=target))
    synthetic = plugin.generate(len(frame)).dataframe()
    return synthetic, time.perf_counter() - started, f"{epsilon:g} (claimed; min/max read non-privately)"


def reference_run(directory: Path, method: str, epsilon: float) -> tuple[pd.DataFrame, float, str] | None:
    """A reference run's output and wall time from ``directory``, or None if it is not there."""
    path = directory / f"{method}_eps{epsilon:g}.csv"
    timings = directory / "timings.jsonl"
    if not path.exists() or not timings.exists():
        return None
    seconds = float("nan")
    for line in timings.read_text().splitlines():
        entry = json.loads(line)
        if entry.get("method") == method and float(entry.get("epsilon")) == epsilon and not entry.get("tag"):
            seconds = float(entry["wall_s"])
    return pd.read_csv(path), seconds, f"{epsilon:g}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-root", type=Path, required=True, help="folder holding adult/")
    parser.add_argument("--table", default="adult_discretized", choices=["adult_discretized", "adult_raw"])
    parser.add_argument("--epsilons", nargs="+", type=float, default=[1.0, 3.0, 10.0])
    parser.add_argument("--methods", nargs="+", default=[*OURS, *REFERENCE])
    parser.add_argument("--reference", type=Path, default=None, help="folder of the reference MST / AIM runs")
    parser.add_argument("--rows", type=int, default=None, help="a random subset of rows (smoke runs)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--neighbouring", choices=["replace_one", "add_remove"], default="replace_one",
                        help="the adjacency our plugins calibrate for (the peers' is fixed by their code)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--notes", default=None, help="a sentence on how the run was made (shown under the table)")
    args = parser.parse_args()
    frame, target, domain_path = load_adult(args.data_root, args.table)
    if args.rows is not None:
        frame = frame.sample(args.rows, random_state=args.seed).reset_index(drop=True)
    description = json.loads(Path(domain_path).read_text())
    levels_only = all(isinstance(value, int) for value in description.values())
    domain = TabularDomain.from_levels(description) if levels_only else TabularDomain.from_dict(description)
    codec = MarginalTableCodec(domain, fine_bins=100)
    halves = np.random.default_rng(args.seed).permutation(len(frame))
    first, second = frame.iloc[halves[: len(frame) // 2]], frame.iloc[halves[len(frame) // 2 :]]
    floor = scores(first.reset_index(drop=True), second.reset_index(drop=True), codec, target, args.seed)
    print(f"real half vs half: {floor}", flush=True)
    out_json = args.out / f"marginals_{args.table}.json"
    rows: list[dict[str, Any]] = []
    notes = args.notes
    if out_json.exists() and args.rows is None:  # runs of other methods are kept: one table, several invocations
        previous = json.loads(out_json.read_text())
        if previous.get("rows_used") == len(frame):
            rows, notes = list(previous["results"]), args.notes or previous.get("notes")
    for epsilon in args.epsilons:
        for method in args.methods:
            row: dict[str, Any] = {"method": method, "epsilon": epsilon}
            try:
                if method in OURS:
                    row["neighbouring"] = args.neighbouring
                    synthetic, seconds, reported = run_ours(method, frame, domain_path, epsilon, args.seed, args.neighbouring)
                elif method == "pategan":
                    synthetic, seconds, reported = run_pategan(frame, target, epsilon, args.seed)
                elif method in REFERENCE:
                    found = None if args.reference is None else reference_run(args.reference, method, epsilon)
                    if found is None:
                        continue
                    synthetic, seconds, reported = found
                    row["method"] = f"{method} (reference, smartnoise-synth)"
                else:
                    raise ValueError(f"unknown method {method!r}")
                row.update(scores=scores(frame, synthetic, codec, target, args.seed), seconds=seconds, reported_epsilon=reported)
            except Exception as raised:  # a method that fails is reported, not hidden
                row["error"] = f"{type(raised).__name__}: {str(raised).splitlines()[0][:120] if str(raised) else ''}"
            key = lambda r: (r["method"], r["epsilon"], r.get("neighbouring", "replace_one"))  # noqa: E731
            rows = [r for r in rows if key(r) != key(row)] + [row]
            print(row, flush=True)
            write_json(out_json, {"table": args.table, "rows_used": len(frame), "delta": DELTA, "floor": floor,
                                  "environment": environment(torch.device("cpu")), "results": rows, "notes": notes})
    header = (f"# Marginal benchmark: {args.table}, {len(frame)} rows, delta = {DELTA:g} "
              f"(`python benchmarks/marginals.py --data-root ../shared/data --table {args.table}`)\n\n"
              "Metrics in the docstring of `benchmarks/marginals.py`; the first row compares two halves of the real rows.\n\n")
    markdown = header + marginal_table({"floor": floor, "results": rows})
    (args.out / f"marginals_{args.table}.md").write_text(markdown)
    print(markdown)


if __name__ == "__main__":
    main()

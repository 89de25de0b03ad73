"""Tabular benchmark: our three plugins against synthcity's DP generators through ``Benchmarks.evaluate``.

Tables (target column in brackets):
  adult_discretized   UCI Adult, integer-coded, with its public domain (levels per column) [income>50K]
  adult_raw           UCI Adult as published, with ``benchmarks/domains/adult_raw_domain.json`` written from the
                      UCI documentation (no bound read from the rows) [income-per-year]
  breast_cancer       sklearn's Wisconsin breast cancer table, 569 rows, 30 numeric columns, no public domain:
                      our plugins pay their default share of the budget for a DP domain (half below 1,000 rows,
                      stated in their report) [target]
Methods: dpswflow_r, dpswflow, dpswgen (ours, package defaults) and synthcity's dpgan, pategan, privbayes, aim,
at epsilon in {1, 3, 10} and delta = 1e-5 (privbayes is pure epsilon-DP). synthcity's plugins fit their
encoders (min/max, category lists) on the private table, outside their guarantee; ours do not.
Metrics (synthcity): detection_xgb (AUC, 0.5 is best), performance xgb (AUROC of a model trained on the
synthetic table, tested on real rows: syn_id; trained on real: gt), jensenshannon_dist, wasserstein_dist,
alpha_precision and prdc.

Run: ``python benchmarks/tabular.py --data-root ../shared/data --quick`` (2,000 Adult rows, one repeat,
1,000 flow steps, dpgan 10 and pategan 20 iterations, aim on 30 marginals, at most 150 s per method, table
and epsilon; about an hour on 2 CPU cores) or ``--full`` (all rows, 3 repeats, synthcity's default training
lengths, no time limit). A method that runs out of memory or time is reported as failed, with the reason.
Writes ``benchmarks/results/tabular_{quick,full}.{json,md}`` (the JSON after every row).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import resource
import signal
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from typing import Iterator
from pathlib import Path
from typing import Any

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import DELTA, RESULTS, choose_device, environment, load_adult, write_json  # noqa: E402

METRICS = {
    "stats": ["jensenshannon_dist", "wasserstein_dist", "alpha_precision", "prdc"],
    "detection": ["detection_xgb"],
    "performance": ["xgb"],
}
OURS = ("dpswflow_r", "dpswflow", "dpswgen")
BASELINES = ("dpgan", "pategan", "privbayes", "aim")


@dataclass(frozen=True)
class Mode:
    name: str
    adult_rows: int | None  # None: all rows
    repeats: int
    dpgan_iterations: int | None  # None: synthcity's default
    pategan_iterations: int | None
    aim_marginals: int | None  # None: every 2-way marginal (synthcity's default)
    flow_steps: int  # our plugins' n_steps (flow steps; DPSWgen's training steps)


MODES = {"quick": Mode("quick", 2000, 1, 10, 20, 30, 1000), "full": Mode("full", None, 3, None, None, None, 2000)}
MEMORY_HEADROOM = 8 * 2**30  # bytes of address space one evaluation may add (synthcity's privbayes can ask for more)


@dataclass(frozen=True)
class Table:
    frame: pd.DataFrame
    target: str
    domain: str | None
    description: str


def load_tables(data_root: Path, mode: Mode, seed: int) -> dict[str, Table]:
    """The three tables, Adult subsampled (seeded) in quick mode."""
    from sklearn.datasets import load_breast_cancer

    def rows(frame: pd.DataFrame) -> pd.DataFrame:
        if mode.adult_rows is None or mode.adult_rows >= len(frame):
            return frame.reset_index(drop=True)
        return frame.sample(mode.adult_rows, random_state=seed).reset_index(drop=True)

    descriptions = {
        "adult_discretized": "UCI Adult, integer-coded, public domain (levels per column)",
        "adult_raw": "UCI Adult as published, domain written from the UCI documentation",
    }
    adult = {name: load_adult(data_root, name) for name in descriptions}
    return {
        **{name: Table(rows(frame), target, domain, descriptions[name]) for name, (frame, target, domain) in adult.items()},
        "breast_cancer": Table(
            load_breast_cancer(as_frame=True).frame, "target", None,
            "sklearn breast cancer (569 rows, 30 numeric), no public domain: ours release a DP domain (30% of the budget below 1,000 rows)",
        ),
    }


def method_arguments(method: str, epsilon: float, table: Table, mode: Mode, device: str) -> dict[str, Any]:
    """Each method's arguments: the privacy target, the public domain for ours, the quick-mode lengths."""
    if method in OURS:
        return {"epsilon": epsilon, "delta": DELTA, "domain": table.domain, "n_steps": mode.flow_steps, "device": device}
    if method == "privbayes":
        return {"epsilon": epsilon}
    arguments: dict[str, Any] = {"epsilon": epsilon, "delta": DELTA}
    iterations = {"dpgan": mode.dpgan_iterations, "pategan": mode.pategan_iterations}.get(method)
    if iterations is not None:
        arguments["n_iter"] = iterations
    if method == "aim" and mode.aim_marginals is not None:
        arguments["num_marginals"] = mode.aim_marginals
    if method in ("dpgan", "pategan"):
        arguments["device"] = device
    return arguments


@contextlib.contextmanager
def time_limit(seconds: int) -> Iterator[None]:
    """Raise TimeoutError in this (main) thread after ``seconds`` (Unix), so one slow baseline is reported as
    such instead of holding the whole suite; 0 means no limit."""
    if seconds <= 0 or not hasattr(signal, "SIGALRM"):
        yield
        return

    def expire(signum: int, frame: object) -> None:
        raise TimeoutError(f"over the {seconds} s time limit")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@contextlib.contextmanager
def memory_cap(headroom: int) -> Iterator[None]:
    """Cap the address space at the current size + ``headroom`` (Linux), so that a baseline asking for too much
    memory raises MemoryError, which is reported, instead of the whole run being killed."""
    statm = Path("/proc/self/statm")
    if not statm.exists():
        yield
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    current = int(statm.read_text().split()[0]) * resource.getpagesize()
    cap = current + headroom if hard == resource.RLIM_INFINITY else min(current + headroom, hard)
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def evaluate(method: str, arguments: dict[str, Any], table: Table, repeats: int, seconds: int) -> dict[str, Any]:
    """``Benchmarks.evaluate`` of one method; every metric's mean and std, or the error a baseline raised
    (running out of memory or over ``seconds`` included). synthcity is imported here, not at the top: its import
    takes about 15 s, which ``--help`` need not wait for."""
    import synthcity_dpswf  # noqa: F401  (registers our plugins with synthcity)
    from synthcity.benchmark import Benchmarks
    from synthcity.plugins.core.dataloader import GenericDataLoader

    data = GenericDataLoader(table.frame, target_column=table.target)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as workspace, memory_cap(MEMORY_HEADROOM):
        try:
            with time_limit(seconds):
                score = Benchmarks.evaluate(
                    [(method, method, arguments)], data, metrics=METRICS, repeats=repeats, task_type="classification",
                    workspace=Path(workspace), synthetic_cache=False, use_metric_cache=False,
                )[method]
            scores = {key: {"mean": float(score.loc[key, "mean"]), "stddev": float(score.loc[key, "stddev"])} for key in score.index}
            error = None if scores else "no scores: synthcity caught an error of the plugin (see its log)"
        except Exception as raised:  # a baseline that fails is reported, not hidden
            scores, error = {}, f"{type(raised).__name__}: {str(raised).splitlines()[0][:120] if str(raised) else ''}"
    return {"scores": scores, "error": error, "seconds": time.perf_counter() - started}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-root", type=Path, required=True, help="folder holding adult/")
    scale = parser.add_mutually_exclusive_group()
    scale.add_argument("--quick", action="store_const", const="quick", dest="mode", help="about an hour on 2 CPU cores (default)")
    scale.add_argument("--full", action="store_const", const="full", dest="mode", help="all rows, 3 repeats, for one GPU")
    parser.add_argument("--device", default="auto", help="auto (CUDA when present), cpu, cuda, ...")
    parser.add_argument("--tables", nargs="+", default=["adult_discretized", "adult_raw", "breast_cancer"])
    parser.add_argument("--epsilons", nargs="+", type=float, default=[1.0, 3.0, 10.0])
    parser.add_argument("--methods", nargs="+", default=[*OURS, *BASELINES])
    parser.add_argument("--rows", type=int, default=None, help="override the mode's number of Adult rows")
    parser.add_argument("--seed", type=int, default=0, help="seed of the Adult subsample")
    parser.add_argument("--time-limit", type=int, default=None,
                        help="seconds one method may take on one table and epsilon (default: 150 quick, none full)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    mode = MODES[args.mode or "quick"]
    if args.rows is not None:
        mode = dataclasses.replace(mode, adult_rows=args.rows)
    device = choose_device(args.device)
    tables = load_tables(args.data_root, mode, args.seed)
    unknown = set(args.tables) - set(tables)
    if unknown:
        raise SystemExit(f"unknown tables {sorted(unknown)}; choose from {sorted(tables)}.")
    seconds = args.time_limit if args.time_limit is not None else (150 if mode.name == "quick" else 0)
    started = time.perf_counter()
    rows: list[dict[str, Any]] = []
    payload = {
        "suite": "tabular", "mode": asdict(mode), "delta": DELTA, "seed": args.seed, "metrics": METRICS, "time_limit": seconds,
        "tables": {name: {"rows": len(tables[name].frame), "columns": tables[name].frame.shape[1],
                          "target": tables[name].target, "description": tables[name].description} for name in args.tables},
        "environment": environment(device), "wall_seconds": 0.0, "rows": rows,
    }
    for name in args.tables:
        table = tables[name]
        for epsilon in args.epsilons:
            for method in args.methods:
                arguments = method_arguments(method, epsilon, table, mode, str(device))
                result = evaluate(method, arguments, table, mode.repeats, seconds)
                rows.append({"table": name, "method": method, "epsilon": epsilon, "arguments": arguments, **result})
                print(f"[{name}] {method} eps={epsilon:g}: {result['seconds']:.0f} s "
                      f"{result['error'] or ''}", flush=True)
                payload["wall_seconds"] = time.perf_counter() - started
                write_json(args.out / f"tabular_{mode.name}.json", payload)  # after every row
    from report import tabular_markdown

    markdown = tabular_markdown(payload)
    (args.out / f"tabular_{mode.name}.md").write_text(markdown)
    print(markdown)


if __name__ == "__main__":
    main()

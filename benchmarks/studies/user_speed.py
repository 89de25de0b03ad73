"""What a synthcity user waits for: ``fit(df)`` with no schema, then ``generate``, on one CPU thread.

Adult's shape (UCI Adult's training split as published, 32,561 rows x 15, from ``--data-root``): fit, then 10^5
rows; sklearn's wine (178 x 14): fit, then ``generate(100)`` after a first call. DPSWflow and DPSWflow-r at
epsilon = 1, delta = 1e-5, their defaults otherwise; the median of ``--repeats`` runs of each (the machine is noisy:
read the figures side by side). Issue 35's targets: Adult fit + 10^5 rows under 10 s; wine as fast as before
(fit 0.07 s, ``generate(100)`` 0.44 s).

Run: ``python benchmarks/studies/user_speed.py --data-root ../shared/data [--repeats 3]``. Writes
``benchmarks/results/user_speed.{md,json}``.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: the shared modules, imported by name
from common import RESULTS, environment, results_page, write_results

import synthcity_dpswf  # noqa: F401  (registers the plugins)


def seconds(call: Callable[[], Any]) -> float:
    started = time.perf_counter()
    call()
    return time.perf_counter() - started


def measure(method: str, frame: pd.DataFrame, count: int, warm: bool) -> dict[str, float]:
    """Fit seconds, and the seconds of ``generate(count)`` (after one first call when ``warm``)."""
    from synthcity.plugins import Plugins

    plugin = Plugins().get(method, epsilon=1.0, delta=1e-5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = seconds(lambda: plugin.fit(frame))
        if warm:
            plugin.generate(count)
        generate = seconds(lambda: plugin.generate(count))
    return {"fit": fit, "generate": generate}


def main(argv: list[str] | None = None) -> None:
    from sklearn.datasets import load_wine

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-root", type=Path, required=True)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    tables = {
        "adult_raw": (pd.read_csv(args.data_root / "adult" / "adult.csv"), 100_000, False),
        "wine": (load_wine(as_frame=True).frame, 100, True),
    }
    rows = []
    for name, (frame, count, warm) in tables.items():
        for method in ("dpswflow", "dpswflow_r"):
            runs = [measure(method, frame, count, warm) for _ in range(args.repeats)]
            row = {"table": name, "rows": len(frame), "columns": frame.shape[1], "method": method, "count": count,
                   "fit_s": float(np.median([run["fit"] for run in runs])),
                   "generate_s": float(np.median([run["generate"] for run in runs]))}
            rows.append(row)
            print(row, flush=True)
    text = results_page(
        f"fit(df) with no schema, then generate, on one CPU thread (`python benchmarks/studies/user_speed.py --repeats "
        f"{args.repeats}`)",
        f"epsilon = 1, delta = 1e-5, defaults otherwise; median of {args.repeats} runs. wine's generate is timed after "
        "a first call.",
        [("table", False), ("rows x columns", False), ("method", False), ("fit s", True), ("generate(n)", True),
         ("generate s", True), ("fit + generate s", True)],
        [[row["table"], f"{row['rows']:,} x {row['columns']}", row["method"], f"{row['fit_s']:.2f}", f"{row['count']:,}",
          f"{row['generate_s']:.2f}", f"{row['fit_s'] + row['generate_s']:.2f}"] for row in rows],
    )
    payload = {"suite": "user_speed", "environment": environment(torch.device("cpu")), "rows": rows}
    write_results(args.out, "user_speed", payload, text)


if __name__ == "__main__":
    main()

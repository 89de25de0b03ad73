"""When torch's threads pay in a flow, with the machine's other cores idle and busy (issue 44, item 4).

Two measurements, each side by side in one run:

1. ``run_flow`` alone, over particles x directions (the work per step that ``math.flow.THREADED_WORK`` reads), on one
   thread and on ``--threads`` threads: the ratio says where threads start to pay.
2. What a user waits for: ``fit`` on iris, then ``generate(100)`` and ``generate(10^5)`` with torch's default thread
   count, the package as it is (small flows on one thread) against every flow threaded (``THREADED_WORK = 0``, the
   behaviour before).

Each is run with the other cores idle and beside busy ones: ``--busy`` processes spinning in pure Python for the
duration of the measurement (one per other core by default). The median of ``--repeats`` runs of each.

Run: ``python benchmarks/studies/flow_threads.py [--repeats 3]``. Writes ``benchmarks/results/flow_threads.{md,json}``.
"""

from __future__ import annotations

import argparse
import contextlib
import multiprocessing
import os
import sys
import time
import warnings
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: the shared modules, imported by name
from common import RESULTS, environment, results_page, write_results

from synthcity_dpswf.math import flow as flow_module
from synthcity_dpswf.math.flow import EmpiricalTarget, run_flow

FLOW_SIZES = [(150, 70), (1_000, 70), (10_000, 70), (10_000, 400), (10_000, 2_000)]
"""(particles, directions) of the raw flows: a small table's generate, the table default (10,000 particles flowed),
an image flow's directions."""
STEPS = 10


def spin(stop: Any) -> None:
    """Keep one core busy until ``stop`` is set."""
    while not stop.is_set():
        sum(range(10_000))


@contextlib.contextmanager
def busy_cores(count: int) -> Iterator[None]:
    """``count`` processes spinning for the duration (none when 0)."""
    if count == 0:
        yield
        return
    context = multiprocessing.get_context("spawn")
    stop = context.Event()
    workers = [context.Process(target=spin, args=(stop,), daemon=True) for _ in range(count)]
    for worker in workers:
        worker.start()
    time.sleep(1.0)
    try:
        yield
    finally:
        stop.set()
        for worker in workers:
            worker.join()


def median_seconds(call: Callable[[], Any], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        call()
        times.append(time.perf_counter() - started)
    return float(np.median(times))


@contextlib.contextmanager
def threaded_work(work: int) -> Iterator[None]:
    """``THREADED_WORK`` set to ``work`` for the duration (0: every flow keeps torch's threads)."""
    kept = flow_module.THREADED_WORK
    flow_module.THREADED_WORK = work
    try:
        yield
    finally:
        flow_module.THREADED_WORK = kept


def raw_flow(particles: int, directions: int, threads: int, repeats: int) -> float:
    """Seconds of ``STEPS`` steps of a flow of ``particles`` in 8 dimensions over ``directions`` per step, to a target of
    as many samples (so that a step's work is particles x directions)."""
    generator = torch.Generator().manual_seed(0)
    target = EmpiricalTarget(torch.randn(particles, 8, generator=generator), directions, seed=0)  # as many samples
    start = torch.randn(particles, 8, generator=generator)
    kept = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        with threaded_work(0):  # the thread count asked for, whatever the rule says
            return median_seconds(lambda: run_flow(start, target, STEPS), repeats)
    finally:
        torch.set_num_threads(kept)


def user_calls(repeats: int) -> dict[str, dict[str, float]]:
    """``generate(100)`` and ``generate(10^5)`` after ``fit`` on iris, with the rule and with every flow threaded."""
    from sklearn.datasets import load_iris
    from synthcity.plugins import Plugins

    import synthcity_dpswf  # noqa: F401  (registers the plugins)

    frame = load_iris(as_frame=True).frame
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plugin = Plugins().get("dpswflow", epsilon=1.0, delta=1e-5).fit(frame)
        plugin.generate(100)
        timings: dict[str, dict[str, float]] = {}
        for label, work in (("one thread below THREADED_WORK (now)", flow_module.THREADED_WORK),
                            ("every flow threaded (before)", 0)):
            with threaded_work(work):
                timings[label] = {str(count): median_seconds(lambda: plugin.generate(count), repeats)
                                  for count in (100, 100_000)}
    return timings


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=torch.get_num_threads(), help="the threaded runs' count")
    parser.add_argument("--busy", type=int, default=max((os.cpu_count() or 2) - 1, 1),
                        help="spinning processes in the busy condition")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    raw, users = [], {}
    for condition, busy in (("idle", 0), ("busy", args.busy)):
        with busy_cores(busy):
            for particles, directions in FLOW_SIZES:
                one = raw_flow(particles, directions, 1, args.repeats)
                many = raw_flow(particles, directions, args.threads, args.repeats)
                row = {"condition": condition, "particles": particles, "directions": directions,
                       "work": particles * directions, "one_thread_s": one, "threaded_s": many}
                raw.append(row)
                print(row, flush=True)
            users[condition] = user_calls(args.repeats)
            print(condition, users[condition], flush=True)
    rows = [[row["condition"], f"{row['particles']:,} x {row['directions']:,}", f"{row['work']:,}",
             f"{row['one_thread_s']:.2f}", f"{row['threaded_s']:.2f}", f"{row['threaded_s'] / row['one_thread_s']:.2f}"]
            for row in raw]
    user_rows = [[condition, label, f"{timings['100']:.2f}", f"{timings['100000']:.2f}"]
                 for condition, by_label in users.items() for label, timings in by_label.items()]
    text = results_page(
        f"Flows on one thread and on {args.threads}, other cores idle and busy "
        f"(`python benchmarks/studies/flow_threads.py --repeats {args.repeats}`)",
        f"{STEPS} steps of `run_flow` in 8 dimensions (median of {args.repeats}); busy: {args.busy} process(es) spinning "
        f"beside. `THREADED_WORK` = {flow_module.THREADED_WORK:,} (particles x directions from which a flow keeps "
        "torch's threads).",
        [("condition", False), ("particles x directions", False), ("work", True), ("1 thread s", True),
         (f"{args.threads} threads s", True), ("threaded / one", True)],
        rows,
    ) + "\n" + results_page(
        "What a user waits for: iris, fit then generate, torch's default threads",
        "DPSWflow at epsilon = 1; the package's rule against every flow threaded (the behaviour before).",
        [("condition", False), ("flows", False), ("generate(100) s", True), ("generate(10^5) s", True)],
        user_rows,
    ).replace("# ", "## ", 1)
    write_results(args.out, "flow_threads", {"environment": environment(torch.device("cpu")), "threaded_work":
                                             flow_module.THREADED_WORK, "raw": raw, "user": users}, text)


if __name__ == "__main__":
    main()

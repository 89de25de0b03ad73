"""How many particles a table's generation flows (``models.kinds.KINDS["marginal"].flow_particles``), on the
validation tables only (issue 46), and what each costs on the suite's tables.

A table's ``generate(count)`` flows ``min(count, flow_particles)`` particles and draws every row from them
(``MarginalParticleSpace.resample``): the synthetic joint over the coarse cells is those particles', so a table of
more rows than particles gets a coarser joint than its tables allow. A flow step's work is particles x directions
(``n_directions`` of the released pairs' slices a step), so each setting ``PARTICLES:DIRECTIONS`` of ``--settings``
states both: more particles at fewer directions a step cost what fewer at more do. This script fits the generators
the way a synthcity user would (``target_validation.fit_once``: no schema and the declared one, the target named,
epsilon = 1, delta = 1e-5) and generates the training split's size with each setting, the random states the same for
every setting, scored by the table suite's code (TSTR, 2-way TV) over ``--fits`` random states, on
``flights_validation`` (flights' training split split again: its test split unread) and Adult's training split
(``adult_mid``: subsampled to ``MID_ROWS``, between 10,000 and 20,000 rows); the validation tables of fewer rows than
the smallest count (fair, the stand-in) flow every row whatever it is. Then the
cost on the fair suite's tables (``--time-tables``, the reported ones: seconds only, nothing scored): fit + generation
of the training split's size with each setting, side by side in one run, the median of ``--repeats``.

Run: ``python benchmarks/studies/flow_particles.py --data-root ../shared/data [--settings 10000:70 20000:35 20000:70]
[--fits 3] [--repeats 3] [--name flow_particles]``. Writes ``benchmarks/results/<name>.{md,json}``.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import sys
import time
import warnings
from pathlib import Path
from typing import Any, Iterator
from unittest import mock

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: the shared modules, imported by name
from common import RESULTS, environment, results_page, write_results
from table_metrics import QuantileCellMetrics
from tables import holdout_split, load_table
from target_validation import DELTA, EPSILON, validation_table

import synthcity_dpswf  # noqa: F401  (registers the plugins)
from synthcity_dpswf.models import kinds

VALIDATION_TABLES = ("flights_validation", "adult_raw")
TIME_TABLES = ("fair", "randhie", "diamonds", "flights")
MID_ROWS = 16_152
"""``adult_mid``'s training rows: Adult's training split subsampled (seed 0) to the size of randhie's training split,
a table between 10,000 and 20,000 rows, where the rule flows every row at fewer directions a step."""


def scored_table(name: str, data_root: Path | None) -> tuple[Any, Any, Any, Any]:
    """(training rows, held-out rows, target, declared schema) of a validation table (``validation_table``), or of
    ``adult_mid`` (``MID_ROWS``)."""
    if name != "adult_mid":
        return validation_table(name, data_root)
    train, test, target, declared = validation_table("adult_raw", data_root)
    return train.sample(n=MID_ROWS, random_state=0).reset_index(drop=True), test, target, declared


@contextlib.contextmanager
def flowing(particles: int) -> Iterator[None]:
    """Generation that flows at most ``particles`` particles per call at the directions a step the setting gives (the
    marginal kind's ``flow_particles``, its own rules for more rows and fewer directions off)."""
    spec = dataclasses.replace(kinds.KINDS["marginal"], flow_particles=particles, rows_per_particle=None,
                               step_particles=None)
    with mock.patch.dict(kinds.KINDS, {"marginal": spec}):
        yield


Setting = tuple[int, int]
"""(particles flowed at most, directions a flow step)."""


def parse_setting(text: str) -> Setting:
    """``"PARTICLES:DIRECTIONS"`` (``"20000:35"``)."""
    particles, _, directions = text.partition(":")
    if not particles.isdigit() or not directions.isdigit() or int(particles) < 1 or int(directions) < 1:
        raise argparse.ArgumentTypeError(f"a setting is PARTICLES:DIRECTIONS, two positive integers, got {text!r}")
    return int(particles), int(directions)


def fit_and_generate(generator: str, train: Any, target: Any, declared: Any, state: int, setting: Setting) -> tuple[Any, float]:
    """One fit with the target named (no schema where ``declared`` is ``None``) and ``len(train)`` rows flowed from at
    most ``setting[0]`` particles at ``setting[1]`` directions a step; the rows and the seconds of fit + generation."""
    from synthcity.plugins import Plugins
    from synthcity.plugins.core.dataloader import GenericDataLoader

    particles, directions = setting
    arguments: dict[str, Any] = {"epsilon": EPSILON, "delta": DELTA, "random_state": state, "n_directions": directions}
    if declared is not None:
        arguments["domain"] = declared
    started = time.perf_counter()
    with flowing(particles), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plugin = Plugins().get(generator, **arguments).fit(GenericDataLoader(train, target_column=target.column))
        rows = plugin.generate(len(train)).dataframe()
    return rows, time.perf_counter() - started


def score(tables: list[str], generators: list[str], settings: list[Setting], fits: int, data_root: Path | None) -> list[dict[str, Any]]:
    """TSTR and 2-way TV of every validation table, generator, schema and setting, over ``fits`` states."""
    rows = []
    for name in tables:
        train, test, target, declared = scored_table(name, data_root)
        metrics = QuantileCellMetrics(train, target, 0, test)
        for generator in generators:
            for schema_name, schema in (("none", None), ("declared", declared)):
                for setting in settings:
                    tstr, tv2, seconds = [], [], []
                    for state in range(fits):
                        synthetic, elapsed = fit_and_generate(generator, train, target, schema, state, setting)
                        tstr.append(metrics.tstr(synthetic, test))
                        tv2.append(metrics.tv(synthetic)["tv2"])
                        seconds.append(elapsed)
                    rows.append({"table": name, "rows": len(train), "generator": generator, "schema": schema_name,
                                 "particles": setting[0], "directions": setting[1], "fits": fits, "tstr": float(np.mean(tstr)), "tv2": float(np.mean(tv2)),
                                 "seconds": float(np.mean(seconds)), "tstr_runs": tstr, "tv2_runs": tv2})
                    print({key: value for key, value in rows[-1].items() if not key.endswith("_runs")}, flush=True)
    return rows


def timing(tables: list[str], generators: list[str], settings: list[Setting], repeats: int, data_root: Path | None) -> list[dict[str, Any]]:
    """Seconds of fit + generation of the training split's size (no schema, the target named) on each table, the
    settings interleaved repeat by repeat so that they share the machine's moments, after one fit not timed (the noise
    calibration is cached per table size: no setting should pay it alone); medians, and their ratio to the first
    setting's."""
    rows = []
    for name in tables:
        table = load_table(name, data_root)
        train, _ = holdout_split(table.frame, 0)
        for generator in generators:
            seconds: dict[Setting, list[float]] = {setting: [] for setting in settings}
            fit_and_generate(generator, train, table.target, None, 0, settings[0])  # warm: not timed
            for repeat in range(repeats):
                for setting in settings:
                    seconds[setting].append(fit_and_generate(generator, train, table.target, None, repeat, setting)[1])
            base = float(np.median(seconds[settings[0]]))
            for setting in settings:
                median = float(np.median(seconds[setting]))
                rows.append({"table": name, "rows": len(train), "generator": generator, "particles": setting[0],
                             "directions": setting[1], "seconds": median, "ratio": median / base, "runs": seconds[setting]})
                print({key: value for key, value in rows[-1].items() if key != "runs"}, flush=True)
    return rows


def markdown(payload: dict[str, Any]) -> str:
    environment_ = payload["environment"]
    scored = results_page(
        "How many particles a table's generation flows (`python benchmarks/studies/flow_particles.py`)",
        f"epsilon = {EPSILON:g}, delta = {DELTA:g}, replace-one, the target named; {payload['fits']} fits per cell "
        f"(random states 0..{payload['fits'] - 1}), the same states for every setting; {environment_['device']}, "
        f"{environment_['cpu_threads']} thread(s), {environment_['date']}. Validation tables only. TSTR: "
        "HistGradientBoosting trained on the synthetic rows, AUROC on the held-out rows (mean over fits, and the spread "
        "min-max); 2-way TV against the training rows; seconds: fit + generation of the training split's size.",
        [("table", False), ("rows", True), ("generator", False), ("schema", False), ("particles", True),
         ("directions a step", True), ("TSTR", True), ("TSTR min-max", False), ("2-way TV", True), ("s", True)],
        [[row["table"], f"{row['rows']:,}", row["generator"], row["schema"], f"{row['particles']:,}",
          str(row["directions"]), f"{row['tstr']:.3f}",
          f"{min(row['tstr_runs']):.3f}-{max(row['tstr_runs']):.3f}", f"{row['tv2']:.4f}", f"{row['seconds']:.1f}"]
         for row in payload["rows"]],
    )
    timed = results_page(
        "Their cost on the fair suite's tables",
        f"Fit + generation of the training split's size (seed 0's split; nothing scored), no schema, the target named, "
        f"median of {payload['repeats']} runs, the settings interleaved run by run; ratio: against the first setting's "
        "median.",
        [("table", False), ("rows", True), ("generator", False), ("particles", True), ("directions a step", True),
         ("s", True), ("ratio", True)],
        [[row["table"], f"{row['rows']:,}", row["generator"], f"{row['particles']:,}", str(row["directions"]),
          f"{row['seconds']:.2f}", f"{row['ratio']:.2f}"] for row in payload["timing"]],
    )
    return scored + "\n" + timed.replace("# Their cost", "## Their cost", 1)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tables", nargs="+", default=list(VALIDATION_TABLES),
                        choices=["stand_in", "fair", "adult_raw", "adult_mid", "flights_validation"])
    parser.add_argument("--time-tables", nargs="*", default=list(TIME_TABLES))
    parser.add_argument("--generators", nargs="+", default=["dpswflow", "dpswflow_r"])
    parser.add_argument("--settings", type=parse_setting, nargs="+", default=[(10_000, 70), (20_000, 35), (20_000, 70)],
                        help="PARTICLES:DIRECTIONS, the first the reference of the ratios")
    parser.add_argument("--fits", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--data-root", type=Path, default=None)
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--name", default="flow_particles")
    args = parser.parse_args(argv)
    rows = score(args.tables, args.generators, args.settings, args.fits, args.data_root)
    timed = timing(args.time_tables, args.generators, args.settings, args.repeats, args.data_root)
    payload = {"environment": environment(torch.device("cpu")), "fits": args.fits, "repeats": args.repeats,
               "settings": [list(setting) for setting in args.settings], "rows": rows, "timing": timed}
    write_results(args.out, args.name, payload, markdown(payload))


if __name__ == "__main__":
    main()

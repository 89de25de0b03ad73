"""DPSWflow-r's batches on tables under replace-one (``dpswflow_r``'s ``batch_size`` and ``passes``), on the validation
tables only (issue 46).

A table's flow reads its K per-step releases summed (``models.marginal_target``: "from the releases summed over
rounds"): K releases of b = q n records each, noise N(0, (z Delta)^2) on every count, count q K n records with noise
std sqrt(K) z Delta. Per record counted, the summed tables carry the noise

    r = z / (q sqrt(K))        (in units of Delta / n),

against z_1 for DPSWflow's one release of all n records at the same (epsilon, delta). Under replace-one, fixed-size
batches are accounted by the RDP bound for sampling without replacement (privacy.md, "Aggregate releases: marginals";
Wang, Balle & Kasiviswanathan 2019), whose amplification is weaker than Poisson sampling's under add/remove: at b = n /
10 and 10 passes (K = 100) r is 2.3 to 2.5 times z_1 on the validation tables. Fewer, larger batches keep more of the
budget for the counts; so do Poisson batches, accounted by the antipodal pair (privacy.md, "Poisson batches under
replace-one"), the package's default since docs/flows.md's fact 132. Each setting ``FRACTION:PASSES`` of ``--settings``
gives fixed-size batches of b = ceil(FRACTION n) (the plugin caps it at n / 2) and ``passes`` (K = ceil(passes n / b));
``default`` is the package's own (Poisson batches at q = ``models.state.default_batch_size(n)`` / n, 10 passes, since
fact 132; before it, fixed-size batches of that b, which ``fixed`` draws); ``poisson`` draws Poisson batches at that
rate and passes (K = ceil(passes / q)), and ``poisson:FRACTION:PASSES`` at q = FRACTION. Every fit is as a synthcity user makes it (the target named, no schema and the declared one, epsilon = 1,
delta = 1e-5, replace-one), DPSWflow's one release beside as the reference; scored by the table suite's code (TSTR,
2-way TV) over ``--fits`` random states; r is read from each fit's privacy report (its z, q and K as drawn, the DP
domain's and the pair selection's priors included).

Run: ``python benchmarks/studies/table_batches.py --data-root ../shared/data [--tables fair stand_in adult_raw
randhie_validation flights_validation] [--settings default 0.25:2 0.5:1 poisson] [--fits 3] [--name table_batches]``. Writes
``benchmarks/results/<name>.{md,json}``.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: the shared modules, imported by name
from common import RESULTS, environment, results_page, write_results
from table_metrics import QuantileCellMetrics
from target_validation import DELTA, EPSILON, validation_table

import synthcity_dpswf  # noqa: F401  (registers the plugins)
from synthcity_dpswf.models.state import default_batch_size

TABLES = ("fair", "stand_in", "adult_raw", "randhie_validation", "flights_validation")
DEFAULT = "default"
"""The setting of the package's own batches and passes."""
FIXED, POISSON = "fixed", "poisson"
"""Fixed-size batches, and Poisson batches, at ``models.state.default_batch_size(n)``'s rate unless a fraction is
given."""


@dataclass(frozen=True)
class Setting:
    """DPSWflow-r's batches: ``DEFAULT`` (nothing passed: the package's own), ``FIXED`` or ``POISSON``, at ``fraction``
    of n per release (``None``: ``default_batch_size(n) / n``) and ``passes`` (``None``: the package's)."""

    mode: str = DEFAULT
    fraction: float | None = None
    passes: float | None = None


def parse_setting(text: str) -> Setting:
    """``"default"``, ``"fixed"``, ``"FRACTION:PASSES"`` (fixed-size batches, ``"0.25:2"``: a fraction in (0, 1] and a
    positive number of passes), ``"poisson"`` or ``"poisson:FRACTION:PASSES"``."""
    if text in (DEFAULT, FIXED, POISSON):
        return Setting(text)
    mode, rest = (POISSON, text[len(POISSON) + 1:]) if text.startswith(POISSON + ":") else (FIXED, text)
    fraction, _, passes = rest.partition(":")
    try:
        setting = Setting(mode, float(fraction), float(passes))
    except ValueError:
        setting = Setting(mode, math.nan, math.nan)
    if not (0 < setting.fraction <= 1 and setting.passes > 0):  # type: ignore[operator]
        raise argparse.ArgumentTypeError(f"a setting is 'default', 'fixed', FRACTION:PASSES (0 < FRACTION <= 1, PASSES "
                                         f"> 0), 'poisson' or poisson:FRACTION:PASSES, got {text!r}")
    return setting


def label(setting: Setting) -> str:
    """The setting as ``--settings`` names it."""
    if setting.fraction is None:
        return setting.mode
    own = f"{setting.fraction:g}:{setting.passes:g}"
    return own if setting.mode == FIXED else f"{POISSON}:{own}"


def fit_and_generate(generator: str, train: Any, target: Any, declared: Any, state: int,
                     setting: Setting) -> tuple[Any, float, float]:
    """One replace-one fit with the target named (no schema where ``declared`` is ``None``) at ``setting``'s batches
    (DPSWflow-r) and ``len(train)`` rows generated; the rows, the seconds of fit + generation and the summed tables'
    noise per record counted, r = z / (q sqrt(K)) from the privacy report (module docstring)."""
    from synthcity.plugins import Plugins
    from synthcity.plugins.core.dataloader import GenericDataLoader

    arguments: dict[str, Any] = {"epsilon": EPSILON, "delta": DELTA, "random_state": state}
    if declared is not None:
        arguments["domain"] = declared
    rate = default_batch_size(len(train)) / len(train) if setting.fraction is None else setting.fraction
    if setting.mode == POISSON:
        arguments["sample_rate"] = rate
    elif setting.mode == FIXED:
        arguments["batch_size"] = math.ceil(rate * len(train))
    if setting.passes is not None:
        arguments["passes"] = setting.passes
    started = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plugin = Plugins().get(generator, **arguments).fit(GenericDataLoader(train, target_column=target.column))
        rows = plugin.generate(len(train)).dataframe()
    seconds = time.perf_counter() - started
    report = plugin.privacy_report()
    return rows, seconds, report.noise_multiplier / (report.sample_rate * math.sqrt(report.steps))


def score(tables: list[str], settings: list[Setting], fits: int, data_root: Path | None) -> list[dict[str, Any]]:
    """DPSWflow's row and DPSWflow-r's at every setting, per validation table and schema, over ``fits`` states."""
    rows = []
    for name in tables:
        train, test, target, declared = validation_table(name, data_root)
        metrics = QuantileCellMetrics(train, target, 0, test)
        cells = [("dpswflow", Setting()), *(("dpswflow_r", setting) for setting in settings)]
        for schema_name, schema in (("none", None), ("declared", declared)):
            for generator, setting in cells:
                tstr, tv2, seconds, noise = [], [], [], []
                for state in range(fits):
                    synthetic, elapsed, per_record = fit_and_generate(generator, train, target, schema, state, setting)
                    tstr.append(metrics.tstr(synthetic, test))
                    tv2.append(metrics.tv(synthetic)["tv2"])
                    seconds.append(elapsed)
                    noise.append(per_record)
                rows.append({"table": name, "rows": len(train), "generator": generator, "schema": schema_name,
                             "setting": "one release" if generator == "dpswflow" else label(setting), "fits": fits,
                             "noise": float(np.mean(noise)), "tstr": float(np.mean(tstr)), "tv2": float(np.mean(tv2)),
                             "seconds": float(np.mean(seconds)), "tstr_runs": tstr, "tv2_runs": tv2})
                print({key: value for key, value in rows[-1].items() if not key.endswith("_runs")}, flush=True)
    return rows


def markdown(payload: dict[str, Any]) -> str:
    environment_ = payload["environment"]
    return results_page(
        "DPSWflow-r's batches on tables under replace-one (`python benchmarks/studies/table_batches.py`)",
        f"epsilon = {EPSILON:g}, delta = {DELTA:g}, replace-one, the target named; {payload['fits']} fits per cell "
        f"(random states 0..{payload['fits'] - 1}); {environment_['device']}, {environment_['cpu_threads']} "
        f"thread(s), {environment_['date']}. Validation tables only. Setting: FRACTION:PASSES, fixed-size batches of b "
        "= FRACTION x n records a release (at most n / 2) and K = passes x n / b releases; `fixed`: those of b = "
        "default_batch_size(n), the package's default before docs/flows.md's fact 132; `poisson`: Poisson batches at "
        "that b's rate (privacy.md, \"Poisson batches under replace-one\"), the default since; `default`: the "
        "package's own at the date above. Noise r: "
        "z / (q sqrt(K)) from the fits' privacy reports, the summed tables' noise per record counted in units of "
        "Delta / n (DPSWflow: its z). TSTR: HistGradientBoosting trained on the synthetic rows, AUROC on the held-out "
        "rows (mean over fits, and the spread min-max); 2-way TV against the training rows; seconds: fit + generation "
        "of the training split's size.",
        [("table", False), ("rows", True), ("generator", False), ("schema", False), ("setting", False),
         ("noise r", True), ("TSTR", True), ("TSTR min-max", False), ("2-way TV", True), ("s", True)],
        [[row["table"], f"{row['rows']:,}", row["generator"], row["schema"], row["setting"], f"{row['noise']:.2f}",
          f"{row['tstr']:.3f}", f"{min(row['tstr_runs']):.3f}-{max(row['tstr_runs']):.3f}", f"{row['tv2']:.4f}",
          f"{row['seconds']:.1f}"] for row in payload["rows"]],
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tables", nargs="+", default=list(TABLES),
                        choices=["stand_in", "fair", "adult_raw", "randhie_validation", "flights_validation"])
    parser.add_argument("--settings", type=parse_setting, nargs="+",
                        default=[Setting(), Setting(FIXED), Setting(FIXED, 0.25, 2.0), Setting(FIXED, 0.5, 1.0)],
                        help="'default', 'fixed', FRACTION:PASSES, 'poisson' or poisson:FRACTION:PASSES")
    parser.add_argument("--fits", type=int, default=3)
    parser.add_argument("--data-root", type=Path, default=None)
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--name", default="table_batches")
    args = parser.parse_args(argv)
    rows = score(args.tables, args.settings, args.fits, args.data_root)
    payload = {"environment": environment(torch.device("cpu")), "fits": args.fits,
               "settings": [label(setting) for setting in args.settings], "rows": rows}
    write_results(args.out, args.name, payload, markdown(payload))


if __name__ == "__main__":
    main()

"""How far the behaviour fixture's outputs move with the CPU, and which behaviour changes it catches (issue 44, item 1).

``tests/plugins/test_behaviour_fixture.py`` compares the releases exactly and what is generated as a distribution
(column summaries and pairs' joint shares, within tolerances). This script runs its ``all_outputs`` in fresh
processes, as the test does (release noise seeded 1, 2, ... in the order asked for), under:

- every setting a CPU or a user may change: 1 and 2 threads (``OMP_NUM_THREADS``) crossed with ``ATEN_CPU_CAPABILITY``
  default, avx2 and avx512 (those this CPU has);
- fresh generation draws (the same fits, generation seeds shifted): the sampling noise of the summaries;
- deliberate behaviour changes (``MUTANTS``), each alone.

Against the first setting it reports, per run: the exact parts that differ, the largest move of a numeric summary (in
units of the column's std), of a share and of a pair's joint share, each also as a fraction of the test's tolerance,
and whether the test's comparison passes.

Run: ``python benchmarks/studies/fixture_portability.py``. Writes ``benchmarks/results/fixture_portability.{md,json}``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: the shared modules, imported by name
from common import RESULTS, environment, results_page, write_results

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "plugins" / "test_behaviour_fixture.py"
CAPABILITIES = ("avx512", "avx2", "default")
SEED_SHIFTS = (1, 2, 3)


def load_fixture() -> Any:
    """The fixture test module, imported by path (tests/ is no package)."""
    spec = importlib.util.spec_from_file_location("behaviour_fixture", FIXTURE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def noise_scaled(fixture: Any) -> None:
    """Every release's noise std times 1.05."""
    from synthcity_dpswf.privacy.mechanisms import base

    draw = base.gaussian_noise
    base.gaussian_noise = lambda shape, std, generator, like: draw(shape, 1.05 * std, generator, like)


def fewer_particles(fixture: Any) -> None:
    """The tables' generation flows 500 particles per call instead of 10,000 (and draws its rows from them)."""
    import dataclasses

    from synthcity_dpswf.models.kinds import KINDS

    KINDS["marginal"] = dataclasses.replace(KINDS["marginal"], flow_particles=500)


def step_size(value: float) -> Callable[[Any], None]:
    def mutate(fixture: Any) -> None:
        fixture.FAST["step_size"] = value

    mutate.__doc__ = f"The flow's step size {value} instead of 1.0."
    return mutate


MUTANTS: dict[str, Callable[[Any], None]] = {
    "release noise x 1.05": noise_scaled,
    "500 flowed particles": fewer_particles,
    "step size 0.3": step_size(0.3),
    "step size 0.8": step_size(0.8),
}


def dump(out: Path, seed_shift: int, mutant: str | None) -> None:
    """The fixture's outputs in this process, seeded as the test seeds them, written to ``out``."""
    import warnings

    warnings.simplefilter("ignore")
    fixture = load_fixture()
    from synthcity_dpswf.plugins import image_path, paths, table_path
    from synthcity_dpswf.models import base as models_base
    from synthcity_dpswf.models import releasing as models_releasing
    from synthcity_dpswf.recipes import tables as table_recipe

    calls = iter(range(1, 10_000))

    def seeded(seed: int | None = None) -> torch.Generator:
        return torch.Generator().manual_seed(next(calls) if seed is None else seed)

    models_releasing.secret_generator = seeded
    table_recipe.secret_generator = seeded
    if seed_shift:  # another generation draw: the fits untouched
        draw_seed = paths.draw_seed
        table_path.draw_seed = image_path.draw_seed = lambda: draw_seed() + seed_shift
        sample_labelled = models_base.SlicedGenerator.sample_labelled

        def shifted(self: Any, count: int, seed: int | None = None, **kwargs: Any) -> Any:
            return sample_labelled(self, count, seed=(seed or 0) + seed_shift, **kwargs)

        models_base.SlicedGenerator.sample_labelled = shifted  # type: ignore[method-assign]
    if mutant is not None:
        MUTANTS[mutant](fixture)
    out.write_text(json.dumps(fixture.all_outputs()))


def run(out: Path, threads: int, capability: str, seed_shift: int = 0, mutant: str | None = None) -> dict[str, Any]:
    """One fresh process's outputs under these settings."""
    command = [sys.executable, __file__, "--dump", str(out), "--seed-shift", str(seed_shift)]
    if mutant is not None:
        command += ["--mutant", mutant]
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "ATEN_CPU_CAPABILITY": capability}
    subprocess.run(command, check=True, env=env, cwd=ROOT, capture_output=True, text=True)
    return json.loads(out.read_text())


def moves(found: Any, expected: Any, fixture: Any, out: dict[str, float]) -> None:
    """The largest move of each kind of summary (``numeric`` in stds, ``share``, ``dependence``) into ``out``."""
    if isinstance(expected, dict):
        if "missing" in expected and ("shares" in expected or "mean" in expected):
            shares = [abs(found["missing"] - expected["missing"])]
            if "shares" in expected:
                keys = set(found.get("shares", {})) | set(expected["shares"])
                shares += [abs(found.get("shares", {}).get(key, 0.0) - expected["shares"].get(key, 0.0)) for key in keys]
            else:
                scale = max(expected["std"], 1e-12)
                pairs = [(found["mean"], expected["mean"]), (found["std"], expected["std"]),
                         *zip(found["quantiles"], expected["quantiles"])]
                out["numeric"] = max(out["numeric"], *(abs(a - b) / scale for a, b in pairs))
            out["share"] = max(out["share"], *shares)
            return
        for key, value in expected.items():
            if key == "dependence":
                out["dependence"] = max(out["dependence"], *(abs(found[key][pair] - share) for pair, share in value.items()))
            elif key == "shares" and "coordinates" in expected:  # a tensor summary's class shares
                out["share"] = max(out["share"], *(abs(found[key][label] - share) for label, share in value.items()))
            else:
                moves(found[key], value, fixture, out)
    elif isinstance(expected, list):
        for item, wanted in zip(found, expected):
            moves(item, wanted, fixture, out)


def compare(name: str, found: Any, reference: Any, fixture: Any) -> dict[str, Any]:
    """A run against the reference: its exact differences, its largest moves and the test's verdict."""
    differences = fixture.differences(found, reference)
    largest = {"numeric": 0.0, "share": 0.0, "dependence": 0.0}
    moves(found, reference, fixture, largest)
    return {"run": name, "exact_differences": [line for line in differences if "/distribution" not in line
                                               and "/dependence" not in line],
            "distribution_differences": [line for line in differences if "/distribution" in line or "/dependence" in line],
            "passes": not differences, **largest}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dump", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--seed-shift", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--mutant", choices=sorted(MUTANTS), help=argparse.SUPPRESS)
    parser.add_argument("--work", type=Path, default=Path("benchmarks/.cache/fixture_portability"), help="scratch folder")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    if args.dump is not None:
        dump(args.dump, args.seed_shift, args.mutant)
        return
    flags = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    capabilities = [cap for cap in CAPABILITIES if cap != "avx512" or "avx512f" in flags]
    capabilities = [cap for cap in capabilities if cap != "avx2" or "avx2" in flags]
    args.work.mkdir(parents=True, exist_ok=True)
    fixture = load_fixture()
    reference_name = f"1 thread, {capabilities[0]}"
    runs: list[tuple[str, str, dict[str, Any]]] = []
    for threads in (1, 2):
        for capability in capabilities:
            name = f"{threads} thread{'s' if threads > 1 else ''}, {capability}"
            runs.append(("CPU setting", name, run(args.work / f"t{threads}_{capability}.json", threads, capability)))
            print(name, flush=True)
    reference = runs[0][2]
    for shift in SEED_SHIFTS:
        runs.append(("fresh generation draw", f"generation seeds + {shift}",
                     run(args.work / f"seed_{shift}.json", 1, capabilities[0], seed_shift=shift)))
    for mutant in MUTANTS:
        runs.append(("behaviour change", mutant,
                     run(args.work / f"mutant_{len(runs)}.json", 1, capabilities[0], mutant=mutant)))
        print(mutant, flush=True)
    rows = [{"kind": kind, **compare(name, found, reference, fixture)} for kind, name, found in runs[1:]]
    tolerances = {"numeric": fixture.NUMERIC_TOLERANCE, "share": fixture.SHARE_TOLERANCE,
                  "dependence": fixture.DEPENDENCE_TOLERANCE}
    table = [[row["kind"], row["run"], str(len(row["exact_differences"])),
              *(f"{row[key]:.4f} ({row[key] / tolerance:.2f})" for key, tolerance in tolerances.items()),
              "passes" if row["passes"] else "fails"] for row in rows]
    text = results_page(
        "The behaviour fixture across CPU settings, fresh draws and behaviour changes (`python "
        "benchmarks/studies/fixture_portability.py`)",
        f"Against the run at {reference_name}. Exact parts: the report, domain and release checksums that differ. The "
        "largest move of a numeric summary (in the column's stds), of a share and of a pair's joint share, each with "
        f"its fraction of the test's tolerance ({tolerances['numeric']} std, {tolerances['share']}, "
        f"{tolerances['dependence']}) in brackets; the last column is the test's verdict.",
        [("kind", False), ("run", False), ("exact parts moved", True), ("numeric (std)", True), ("share", True),
         ("pair's joint share", True), ("fixture", False)],
        table,
    )
    write_results(args.out, "fixture_portability", {"environment": environment(torch.device("cpu")),
                                                     "reference": reference_name, "tolerances": tolerances,
                                                     "rows": rows}, text)


if __name__ == "__main__":
    main()

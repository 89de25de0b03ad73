"""The two Python steps of ``benchmarks/gpu.sh``: record the device, and summarise a results folder.

``python benchmarks/gpu_report.py env --out DIR --mode gpu|smoke`` writes ``DIR/env.json`` (Python, torch, CUDA,
the device's name and memory) and ``DIR/nvidia-smi.txt``. ``python benchmarks/gpu_report.py summary DIR`` reads
what the stages left in DIR (``stages.tsv``, ``env.json``, ``tests.xml``, ``speed/speed_*.json``,
``images/paper_protocol_mnist_full.json``, ``codecs/``) and writes ``DIR/README.md``: the device, each stage's exit
status and time, the CUDA tests' outcomes, the speed table with the floor row against its target (one step at
n = 10^6, L = 1,000 within 2x of a bare sort), the image rows with fit + generation time against theirs (under
60 s), and the codec search's validation and test tables when that stage ran, and the full image table
(``table_<dataset>/``) when the table stage ran: every generator with the public-half autoencoder and with no public
data. Folders written before the image runner took the images and table stages over (``benchmarks/results/gpu/``,
``gpu_table/``) hold ``benchmarks/images.py``'s ``images_full.json`` (last version: ``git show
9a9cbb3:benchmarks/images.py``), which is read as it was written. Whatever a stage did not write is reported as
missing, never guessed.
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import shutil
import subprocess
import xml.etree.ElementTree as ElementTree
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from common import METHOD_NAMES, mean_std, sound_convention

FLOOR_SHAPE = (1_000_000, 1_000)
FLOOR_TARGET = 2.0
"""One flow step at the floor shape within this factor of a bare sort of the same projections."""
FIT_GENERATE_TARGET_S = 60.0
"""MNIST fit + 10,000 samples (autoencoder excluded), seconds, on one GPU."""


def record_environment(out: Path, mode: str) -> dict[str, Any]:
    """Write ``env.json`` and ``nvidia-smi.txt`` under ``out``; return the former."""
    import numpy
    import torch

    cuda = torch.cuda.is_available()
    properties = torch.cuda.get_device_properties(0) if cuda else None
    env: dict[str, Any] = {
        "mode": mode, "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "python": platform.python_version(), "torch": torch.__version__, "numpy": numpy.__version__,
        "cuda_available": cuda, "cuda_version": torch.version.cuda,
        "device": properties.name if properties else f"CPU ({platform.processor() or platform.machine()})",
        "device_memory_gib": round(properties.total_memory / 2**30, 1) if properties else None,
        "device_capability": f"{properties.major}.{properties.minor}" if properties else None,
        "cpu_threads": torch.get_num_threads(),
    }
    out.mkdir(parents=True, exist_ok=True)
    (out / "env.json").write_text(json.dumps(env, indent=2) + "\n")
    smi = shutil.which("nvidia-smi")
    text = subprocess.run([smi], capture_output=True, text=True, timeout=30).stdout if smi else "nvidia-smi not found\n"
    (out / "nvidia-smi.txt").write_text(text)
    return env


def read_json(path: Path) -> dict[str, Any] | None:
    return json.loads(path.read_text()) if path.exists() else None


def stages_run(folder: Path) -> set[str]:
    """The stages named in ``stages.tsv`` (empty when it is missing)."""
    stages = folder / "stages.tsv"
    return {row.split("\t")[0] for row in stages.read_text().splitlines()} if stages.exists() else set()


SECTION_STAGES: dict[str, tuple[str, ...]] = {
    "test_section": ("tests",), "speed_section": ("speed",), "image_section": ("images",), "codec_section": ("codecs",),
    "table_section": ("table", "private"),
}
"""The stages whose results each section reads: a folder whose ``stages.tsv`` names none of them leaves it out."""


def stage_section(folder: Path) -> list[str]:
    lines = ["## Stages", "", "| stage | exit | seconds | limit (s) |", "|---|---:|---:|---:|"]
    stages = folder / "stages.tsv"
    if not stages.exists():
        return lines + ["| (no stage ran: stages.tsv missing) | | | |"]
    for row in stages.read_text().splitlines():
        name, status, seconds, limit = row.split("\t")
        meaning = {"0": "0", "124": "124 (over its limit)", "skip": "skipped"}.get(status, status)
        lines.append(f"| {name} | {meaning} | {seconds} | {limit} |")
    return lines


def test_section(folder: Path) -> list[str]:
    report = folder / "tests.xml"
    lines = ["## CUDA tests (`pytest -m cuda`)", ""]
    if not report.exists():
        return lines + ["No test report (tests.xml missing): see tests.log."]
    outcomes: list[tuple[str, str, str]] = []
    for case in ElementTree.parse(report).getroot().iter("testcase"):
        name = f"{case.get('classname', '').split('.')[-1]}::{case.get('name')}"
        found = {child.tag: child for child in case}
        for tag, outcome in (("failure", "failed"), ("error", "error"), ("skipped", "skipped")):
            if tag in found:
                message = (found[tag].get("message") or "").splitlines()[0][:150] if found[tag].get("message") else ""
                outcomes.append((name, outcome, message))
                break
        else:
            outcomes.append((name, "passed", ""))
    counts = {outcome: sum(1 for _, got, _ in outcomes if got == outcome) for outcome in ("passed", "skipped", "failed", "error")}
    lines.append(", ".join(f"{count} {outcome}" for outcome, count in counts.items()) + ".")
    lines += ["", "| test | outcome | message |", "|---|---|---|"]
    lines += [f"| {name} | {outcome} | {message.replace('|', '/')} |" for name, outcome, message in outcomes]
    return lines


def speed_section(folder: Path) -> list[str]:
    lines = ["## One flow step (`benchmarks/studies/speed.py`)", ""]
    files = sorted((folder / "speed").glob("speed_*.json"))
    if not files:
        return lines + ["No speed results (speed/speed_*.json missing): see speed.log."]
    for path in files:
        lines.append((path.with_suffix(".md")).read_text().split("\n\n", 2)[-1].strip())
        floor = [row for row in json.loads(path.read_text())["rows"] if (row["n"], row["L"]) == FLOOR_SHAPE]
        for row in floor:
            ratio = row["ours_ms"] / row["sort_floor_ms"]
            verdict = "met" if ratio <= FLOOR_TARGET else "NOT met"
            lines += ["", f"Floor row (n = {FLOOR_SHAPE[0]:,}, L = {FLOOR_SHAPE[1]:,}): ours {row['ours_ms']:.1f} ms, bare sort "
                      f"{row['sort_floor_ms']:.1f} ms, ratio {ratio:.2f} (target <= {FLOOR_TARGET:g}: {verdict})."]
    return lines


def scale(metric: str) -> float:
    """Accuracies (``cas``, ``cas_cnn``, ...) are shown in percent, every other metric as stored."""
    return 100.0 if metric.startswith("cas") else 1.0


def metric_label(metric: str) -> str:
    return f"{metric} (%)" if scale(metric) == 100.0 else metric


IMAGE_RESULTS = "paper_protocol_mnist_full.json"
"""The images stage's results under ``images/``: the image runner's file of ``configs/images/paper_protocol_mnist_full.toml``."""


def image_section(folder: Path) -> list[str]:
    """The images stage's rows (the image runner's ``images/paper_protocol_mnist_full.json``): the codec's ceiling,
    then each row at each epsilon with its reported epsilon, FID, precision / recall and both CAS (mean +- std over
    generation runs), and fit + the slowest run's generation against the target. A folder of the stage's earlier
    script is read by ``images_py_section``."""
    payload, earlier = read_json(folder / "images" / IMAGE_RESULTS), read_json(folder / "images" / "images_full.json")
    if payload is None and earlier is not None:
        return images_py_section(earlier)
    lines = ["## Images (`benchmarks/image_runner.py`, `configs/images/paper_protocol_mnist_full.toml`)", ""]
    if payload is None or not payload["rows"]:
        return lines + [f"No image results (images/{IMAGE_RESULTS} missing or empty): see images.log."]
    first = payload["rows"][0]
    lines += [
        f"{first['n_released']:,} private records; {first['samples']:,} samples per run, FID on {first['fid_samples']:,} "
        f"vs {first['fid_samples']:,}; {first.get('generation_runs', 1)} generation run(s); codec {first['codec']}: "
        f"{first['description']} ({first['codec_seconds']:.0f} s, excluded from fit + generate).", "",
        "| method | epsilon | reported epsilon | FID | precision | recall | CAS MLP (%) | CAS CNN (%) | fit (s) "
        "| generate (s, per run) | fit + generate (s) |", "|---|---:|" + "---:|" * 9,
    ]

    def stat(cell: dict[str, Any], name: str) -> str:
        return mean_std([scale(name) * run[name] for run in cell.get("runs", [cell]) if run.get(name) is not None])

    metrics = ("fid", "precision", "recall", "cas_mlp", "cas_cnn")
    if first.get("ceiling"):
        ceiling = {**first["ceiling"], "cas_mlp": first["ceiling"]["mlp"], "cas_cnn": first["ceiling"]["cnn"]}
        lines.append("| codec ceiling (reconstructions) | inf | - | " + " | ".join(stat(ceiling, name) for name in metrics)
                     + " | - | - | - |")
    for row in payload["rows"]:
        label = (row.get("setting") or {}).get("label")
        method = METHOD_NAMES.get(row["generator"], row["generator"]) + (f" {label}" if label else "")
        for epsilon, found in row["epsilons"].items():
            cell = {**found, "runs": [{**run, "cas_mlp": run["mlp"], "cas_cnn": run["cnn"]} for run in found.get("runs", [found])]}
            generate = [run["sample_seconds"] for run in cell["runs"]]
            slowest = cell["fit_seconds"] + max(generate)
            reported = cell.get("reported_epsilon")
            lines.append(
                f"| {method} | {epsilon} | {reported if isinstance(reported, str) else f'{reported:.3g}'} | "
                + " | ".join(stat(cell, name) for name in metrics) + f" | {cell['fit_seconds']:.1f} | "
                + ", ".join(f"{seconds:.1f}" for seconds in generate)
                + f" | {slowest:.1f} ({'met' if slowest < FIT_GENERATE_TARGET_S else 'NOT met'}) |"
            )
    lines += ["", f"Target on one GPU: fit + 10,000 samples under {FIT_GENERATE_TARGET_S:.0f} s, the slowest run counted "
              "('met' reads this run's own sizes: a smoke run has far fewer samples)."]
    return lines


def images_py_section(payload: dict[str, Any]) -> list[str]:
    """The images stage's rows as ``benchmarks/images.py --full`` wrote them (``images/images_full.json``), in the
    folders written before the image runner took the stage over."""
    lines = ["## Images (`benchmarks/images.py --full`, MNIST, DPSWflow)", ""]
    mode = payload["mode"]
    info = payload["datasets"].get("mnist", {})
    lines += [
        f"{info.get('n_private', '?')} private records; {mode['n_samples']:,} samples per run, FID on {mode['fid_samples']:,} "
        f"vs {mode['fid_samples']:,}; {mode['runs']} generation run(s); autoencoder: {info.get('autoencoder', '?')} "
        f"({info.get('autoencoder_seconds', math.nan):.0f} s, excluded from fit + generate).", "",
    ]
    metrics = list(dict.fromkeys(name for row in payload["rows"] for run in row["runs"] for name in run))
    lines += [
        "| method | epsilon | reported epsilon | " + " | ".join(metric_label(name) for name in metrics)
        + " | fit (s) | generate (s, per run) | fit + generate (s) |",
        "|---|---:|---:|" + "---:|" * (len(metrics) + 3),
    ]
    for row in payload["rows"]:
        cells = [mean_std([scale(name) * run[name] for run in row["runs"] if run.get(name) is not None]) for name in metrics]
        generate = row.get("generate_seconds") or []
        fit = row.get("fit_seconds")
        total = "-"
        if fit is not None and generate:
            slowest = fit + max(generate)
            total = f"{slowest:.1f} ({'met' if slowest < FIT_GENERATE_TARGET_S else 'NOT met'})"
        reported = row.get("epsilon")
        lines.append(
            f"| {row['method']} | {row['target_epsilon']} | {f'{reported:.3g}' if reported is not None else '-'} | "
            + " | ".join(cells)
            + f" | {f'{fit:.1f}' if fit is not None else '-'} | {', '.join(f'{seconds:.1f}' for seconds in generate) or '-'} | {total} |"
        )
    lines += ["", f"Target on one GPU: fit + 10,000 samples under {FIT_GENERATE_TARGET_S:.0f} s, the slowest run counted "
              "('met' reads this run's own sizes: a smoke run has far fewer samples)."]
    return lines


def codec_section(folder: Path) -> list[str]:
    """The codec search's two tables (written by ``benchmarks/image_runner.py``), when that stage ran."""
    tables = [folder / "codecs" / f"image_codecs_mnist_{split}.md" for split in ("validation", "test")]
    if not (folder / "codecs.log").exists():
        return []
    lines = ["## No-public-data codecs (`benchmarks/image_runner.py`, MNIST)", ""]
    for table in tables:
        if table.exists():
            body = table.read_text().splitlines()
            lines += [f"### {table.stem.rsplit('_', 1)[1]} split", ""] + body[2:] + [""]  # the table's own title dropped
        else:
            lines += [f"No {table.name}: see codecs.log.", ""]
    return lines


TABLE_DATASETS = {"mnist": "MNIST", "fashion_mnist": "FashionMNIST"}


def runner_rows(payload: dict[str, Any]) -> list[dict[str, Any]]:
    """The public-half rows of an image-runner results file (``benchmarks/image_runner.py``, e.g.
    ``full_table_mnist.json``): the codec's ceiling once, then each generator at each epsilon; rows of the sound
    convention only (``common.sound_convention``)."""
    rows: list[dict[str, Any]] = []
    for index, row in enumerate(row for row in payload["rows"] if sound_convention(row)):
        refiner = f", refiner {row['refiner_epochs']} epochs" if row.get("refiner_epochs") else ""
        public = f"{row['public']}: {row['codec']}{refiner}"
        if index == 0 and row.get("ceiling"):
            rows.append({"public": public, "method": "codec ceiling (reconstructions)", "epsilon": "-", "reported": None,
                         "fid": None, "cas_mlp": row["ceiling"]["mlp"], "cas_cnn": row["ceiling"]["cnn"], "seconds": None})
        for epsilon, cell in row["epsilons"].items():
            rows.append({
                "public": public, "method": METHOD_NAMES.get(row["generator"], row["generator"]),
                "epsilon": epsilon, "reported": cell.get("reported_epsilon"), "fid": cell.get("fid"),
                "cas_mlp": cell.get("mlp"), "cas_cnn": cell.get("cnn"), "seconds": cell.get("seconds"),
            })
    return rows


def table_rows(folder: Path) -> list[dict[str, Any]]:
    """The rows of one ``table_<dataset>`` folder: the public-half rows of the image runner's
    ``full_table_<dataset>.json`` (or, in runs before it, of ``images.py``'s ``images_full.json``, ``images_quick.json``
    in a smoke run) and the no-public-data rows of ``private/results_*.json``, each with the same keys (metrics in
    their stored units)."""
    rows: list[dict[str, Any]] = []
    for path in sorted(folder.glob("full_table_*.json")):
        rows += runner_rows(read_json(path) or {"rows": []})
    payload = read_json(folder / "images_full.json") or read_json(folder / "images_quick.json")  # quick: a smoke run
    if payload is not None:
        for row in payload["rows"]:
            run = row["runs"][0] if row["runs"] else {}
            public = "public half: autoencoder" if row["method"] != "autoencoder reconstruction" else "public half: ceiling"
            rows.append({
                "public": public, "method": row["method"], "epsilon": row["target_epsilon"], "reported": row.get("epsilon"),
                "fid": run.get("fid"), "cas_mlp": run.get("cas"), "cas_cnn": run.get("cas_cnn"),
                "seconds": (row.get("fit_seconds") or 0.0) + sum(row.get("generate_seconds") or []) if "fit_seconds" in row else None,
            })
    for path in sorted((folder / "private").glob("results_*.json")):
        result = read_json(path) or {}
        config = result.get("config", {})
        seconds = result.get("seconds", {})
        rows.append({
            "public": "none: private codec (paid)", "method": METHOD_NAMES.get(config.get("generator"), config.get("generator")),
            "epsilon": config.get("epsilon"), "reported": result.get("epsilon"), "fid": result.get("fid"),
            "cas_mlp": result.get("cas", {}).get("mlp"), "cas_cnn": result.get("cas", {}).get("cnn"),
            "seconds": seconds.get("autoencoder", 0.0) + seconds.get("fit", 0.0) + seconds.get("generate", 0.0),
        })
    return rows


def table_section(folder: Path) -> list[str]:
    """The full image table of each dataset the table or private stage ran (``table_<dataset>/``)."""
    lines: list[str] = []
    stages = [stage for stage in ("table", "private") if stage in stages_run(folder)] or ["table"]
    for dataset, name in TABLE_DATASETS.items():
        subfolder = folder / f"table_{dataset}"
        if not subfolder.is_dir():
            continue
        rows = table_rows(subfolder)
        lines += [
            f"## The full image table: {name} (`benchmarks/gpu.sh --stages {'/'.join(stages)}`)", "",
            "Replace-one adjacency, delta = 1e-5, one generation run of 10,000 samples; FID on 10,000 generated vs the "
            "10,000 test images; CAS: classifiers trained on the 10,000 generated pairs, accuracy on the test set. "
            "Seconds: codec (private codec only) + fit + generate, jobs sharing the GPU (the table stage: two, the "
            "public half's and the private rows' one after the other; the private stage: one per row).", "",
            "| public data | method | epsilon | reported epsilon | FID | CAS MLP (%) | CAS CNN (%) | seconds |",
            "|---|---|---:|---:|---:|---:|---:|---:|",
        ]
        if not rows:
            lines.append("| no rows written: see the stage's logs | | | | | | | |")

        def number(value: Any, factor: float = 1.0, digits: int = 1) -> str:
            return "-" if not isinstance(value, (int, float)) else f"{factor * value:.{digits}f}"

        for row in rows:
            reported = row["reported"]
            lines.append(
                f"| {row['public']} | {row['method']} | {row['epsilon']} | "
                f"{f'{reported:.3g}' if isinstance(reported, (int, float)) else (reported or '-')} | {number(row['fid'])} | "
                f"{number(row['cas_mlp'], 100)} | {number(row['cas_cnn'], 100)} | {number(row['seconds'], 1, 0)} |"
            )
        lines.append("")
    return lines


def summarise(folder: Path) -> str:
    """``README.md`` of a results folder (also returned)."""
    env = read_json(folder / "env.json") or {}
    title = f"# GPU script results: {env.get('device', 'device not recorded')}"
    facts = (f"Mode: {env.get('mode', '?')}; {env.get('date', '?')}; Python {env.get('python', '?')}, torch "
             f"{env.get('torch', '?')} (CUDA {env.get('cuda_version')}), numpy {env.get('numpy', '?')}; device memory "
             f"{env.get('device_memory_gib')} GiB. Written by `benchmarks/gpu_report.py summary` from this folder.")
    parts = [title, "", facts, ""]
    ran = stages_run(folder)
    for section in (stage_section, test_section, speed_section, image_section, codec_section, table_section):
        wanted = SECTION_STAGES.get(section.__name__)
        if ran and wanted and not ran.intersection(wanted):
            continue
        parts += section(folder) + [""]
    text = "\n".join(parts)
    (folder / "README.md").write_text(text)
    return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    env = commands.add_parser("env", help="record the device under --out")
    env.add_argument("--out", type=Path, required=True)
    env.add_argument("--mode", choices=["gpu", "smoke"], required=True)
    summary = commands.add_parser("summary", help="write FOLDER/README.md from the stages' files")
    summary.add_argument("folder", type=Path)
    args = parser.parse_args()
    if args.command == "env":
        print(json.dumps(record_environment(args.out, args.mode), indent=2))
    else:
        if not args.folder.is_dir():
            parser.error(f"{args.folder} is not a folder; pass the --out folder of benchmarks/gpu.sh")
        print(summarise(args.folder))


if __name__ == "__main__":
    main()

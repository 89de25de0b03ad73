"""What the benchmark scripts share: the delta every row is stated at, the device choice, the
environment record, reading a runner's config, time and memory caps, writing results."""

from __future__ import annotations

import contextlib
import json
import math
import platform
import re
import resource
import signal
import tomllib
from datetime import datetime, timezone
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any, Iterator

import torch

RESULTS = Path(__file__).resolve().parent / "results"
DOMAINS = Path(__file__).resolve().parent / "domains"
DELTA = 1e-5
"""The delta of every benchmark row (the image literature's, and below 1/n for every table here)."""
PACKAGES = ("synthcity-dpswf", "torch", "opacus", "synthcity", "torchmetrics", "numpy", "dp-accounting", "xgboost")


def choose_device(requested: str) -> torch.device:
    """``"auto"``: CUDA when present, else CPU; otherwise the named device (checked to exist)."""
    if requested == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    device = torch.device(requested)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError("--device cuda was asked for but torch sees no CUDA device; use --device cpu or auto.")
    return device


def environment(device: torch.device) -> dict[str, Any]:
    """Versions, hardware and time of a run, stored beside its numbers."""
    versions = {}
    for package in PACKAGES:
        try:
            versions[package] = version(package)
        except PackageNotFoundError:
            versions[package] = None
    hardware = torch.cuda.get_device_name(device) if device.type == "cuda" else (platform.processor() or platform.machine())
    return {
        "versions": versions, "python": platform.python_version(), "device": str(device), "hardware": hardware,
        "cpu_threads": torch.get_num_threads(), "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }


def sound_convention(row: dict[str, Any]) -> bool:
    """Whether an image-runner row's noise is calibrated to its epsilon (the ``"sound"`` convention): rows of the
    paper's convention spend a larger epsilon than their column's, and noiseless rows (the flow without noise, a
    diagnostic) are not private, so neither is chosen for a test grid or shown in a table of private rows."""
    return (row.get("setting") or {}).get("convention", "sound") == "sound"


def finite_or_text(value: float | None) -> float | str | None:
    """JSON has no infinity: inf becomes the string "inf"."""
    if value is None or math.isfinite(value):
        return value
    return "inf"


def write_json(path: Path, payload: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload, indent=2, default=str) + "\n")


METHOD_NAMES = {"dpswflow": "DPSWflow", "dpswflow_r": "DPSWflow-r", "dpswgen": "DPSWgen", "dpsgd_gan": "DP-SGD GAN"}
"""How the image benchmarks name each generator in their tables."""


def refiner_weight_in(description: str) -> str | None:
    """The adversarial weight of the refiner a codec's public description names (``AutoencoderCodec.fit_refiner``
    writes "... (L1 + adversarial, weight W, ..."), as written; ``None`` for a codec without a refiner."""
    found = re.search(r"adversarial, weight ([0-9.eE+-]+)[,)]", description)
    return found.group(1) if found else None


def mean_and_spread(values: list[float]) -> tuple[float, float]:
    """The mean of ``values`` over runs and their sample standard deviation (0 for one run)."""
    mean = sum(values) / len(values)
    if len(values) == 1:
        return mean, 0.0
    return mean, math.sqrt(sum((value - mean) ** 2 for value in values) / (len(values) - 1))


def mean_std(values: list[float], form: str = ".3g") -> str:
    """"m ± s" over runs (sample std), or "m" for one run, in format ``form`` (the spread in ``.2g`` beside the
    default ``.3g``, in ``form`` otherwise); "-" for none."""
    if not values:
        return "-"
    mean, spread = mean_and_spread(values)
    if len(values) == 1:
        return format(mean, form)
    return f"{mean:{form}} ± {spread:{'.2g' if form == '.3g' else form}}"


def results_page(title: str, description: str, columns: list[tuple[str, bool]], rows: list[list[str]]) -> str:
    """A results file's Markdown: ``# title``, the ``description`` paragraph, and a table of ``columns`` (name, whether
    right-aligned: numbers) with one line per row of already formatted cells."""
    return "\n".join([
        f"# {title}", "", description, "",
        "| " + " | ".join(name for name, _ in columns) + " |",
        "|" + "|".join("---:" if numeric else "---" for _, numeric in columns) + "|",
        *("| " + " | ".join(cells) + " |" for cells in rows),
    ]) + "\n"


def write_results(out: Path, stem: str, payload: dict[str, Any], text: str) -> None:
    """A suite's results: ``out/<stem>.json`` (the payload) and ``out/<stem>.md`` (its table), and the table printed."""
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / f"{stem}.json", payload)
    (out / f"{stem}.md").write_text(text)
    print(text)


def read_config(path: Path, overrides: tuple[str, ...] | list[str], fields: set[str]) -> dict[str, Any]:
    """A runner's TOML config as a dict, with ``KEY=VALUE`` ``overrides`` (TOML values: ``samples=500``,
    ``epsilons=[10]``, ``methods=["dpswflow"]``), checked to name only ``fields``."""
    values: dict[str, Any] = tomllib.loads(Path(path).read_text())
    for override in overrides:
        key, separator, value = override.partition("=")
        if not separator:
            raise ValueError(f"--set takes KEY=VALUE, got {override!r}.")
        try:
            values[key.strip()] = tomllib.loads(f"value = {value}")["value"]
        except tomllib.TOMLDecodeError as error:
            raise ValueError(f"--set {override!r}: the value is not TOML ({error}); quote strings, e.g. "
                             f"{key.strip()}=\"{value}\", and write lists as [10, 1].") from None
    unknown = sorted(set(values) - fields)
    if unknown:
        raise ValueError(f"{path}: unknown keys {unknown}; a grid takes {sorted(fields)}.")
    return values


MEMORY_HEADROOM = 8 * 2**30
"""Bytes of address space one fit may add (synthcity's privbayes can ask for more)."""


@contextlib.contextmanager
def time_limit(seconds: int) -> Iterator[None]:
    """Raise TimeoutError in this (main) thread after ``seconds`` (Unix), so one slow baseline is reported as
    such instead of holding the whole grid; 0 means no limit."""
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

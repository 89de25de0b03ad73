"""What both benchmark suites share: the device choice, the environment record, writing results."""

from __future__ import annotations

import json
import math
import platform
from datetime import datetime, timezone
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import torch

RESULTS = Path(__file__).resolve().parent / "results"
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


def finite_or_text(value: float | None) -> float | str | None:
    """JSON has no infinity: inf becomes the string "inf"."""
    if value is None or math.isfinite(value):
        return value
    return "inf"


def write_json(path: Path, payload: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload, indent=2, default=str) + "\n")


def mean_std(values: list[float]) -> str:
    """"m ± s" over runs (sample std), or "m" for one run."""
    if not values:
        return "-"
    mean = sum(values) / len(values)
    if len(values) == 1:
        return f"{mean:.3g}"
    std = math.sqrt(sum((value - mean) ** 2 for value in values) / (len(values) - 1))
    return f"{mean:.3g} ± {std:.2g}"


def write_results(out: Path, stem: str, payload: dict[str, Any], text: str) -> None:
    """A suite's results: ``out/<stem>.json`` (the payload) and ``out/<stem>.md`` (its table), and the table printed."""
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / f"{stem}.json", payload)
    (out / f"{stem}.md").write_text(text)
    print(text)

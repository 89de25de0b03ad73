"""What the benchmark scripts share: the delta every row is stated at, the Adult tables, the device choice, the
environment record, writing results."""

from __future__ import annotations

import json
import math
import platform
from datetime import datetime, timezone
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import pandas as pd
import torch

RESULTS = Path(__file__).resolve().parent / "results"
DOMAINS = Path(__file__).resolve().parent / "domains"
DELTA = 1e-5
"""The delta of every benchmark row (the image literature's, and below 1/n for every table here)."""
ADULT_TABLES = ("adult_discretized", "adult_raw")
PACKAGES = ("synthcity-dpswf", "torch", "opacus", "synthcity", "torchmetrics", "numpy", "dp-accounting", "xgboost")


def load_adult(data_root: Path, name: str) -> tuple[pd.DataFrame, str, str]:
    """(frame, target column, public domain path) of one of ``ADULT_TABLES`` under a data root holding ``adult/``:
    the discretized table with its published domain, or the raw one with the domain written from the UCI
    documentation (``benchmarks/domains/adult_raw_domain.json``)."""
    adult = Path(data_root) / "adult"
    if name == "adult_discretized":
        return pd.read_csv(adult / "adult_discretized.csv"), "income>50K", str(adult / "adult_discretized_domain.json")
    if name == "adult_raw":
        return pd.read_csv(adult / "adult.csv"), "income-per-year", str(DOMAINS / "adult_raw_domain.json")
    raise ValueError(f"unknown table {name!r}; choose one of {list(ADULT_TABLES)}.")


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

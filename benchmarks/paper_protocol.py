"""The paper's image protocol (Sebag et al., Sec. 5) as the image runner runs it: the paper's accounting convention,
its FID table beside ours, and the pictures the protocol writes (``configs/images/paper_protocol_*.toml``).

The paper's convention: sigma, the noise multiplier Opacus gives for (epsilon, q, K), used as the noise *std* of the
projected release, i.e. the sensitivity Delta taken as 1. A row of that convention adds exactly that noise: its
generator is fitted with the noise multiplier sigma / E[Delta], E[Delta] = E[2 ||Theta||_2] over the release's random
unit directions, and its report gives the epsilon that noise achieves with the true Delta (the sound epsilon), which
the results state beside the epsilon the paper would have claimed.

The pictures: per epsilon, one generated image per class for each row of a run (``SampleGrids``), and FID and CAS
against epsilon for every row of a results file (``fid_cas_figure``), mean and spread over its generation runs.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import torch

from common import DELTA, METHOD_NAMES, mean_and_spread, mean_std

from synthcity_dpswf.evaluation import save_labelled_grid
from synthcity_dpswf.math import random_directions
from synthcity_dpswf.models import SlicedGenerator
from synthcity_dpswf.privacy import ReleaseAccountant, projected_sensitivity

PAPER_FID = {  # the paper's table (FID, 5 generation runs) at epsilon inf / 10 / 5
    "mnist": {"dpswgen": (114, 124, 198), "dpswflow_r": (21, 70, 114), "dpswflow": (73, 118, 171)},
    "fashion_mnist": {"dpswgen": (138, 170, 199), "dpswflow_r": (42, 88, 98), "dpswflow": (96, 98, 129)},
}
PAPER_EPSILONS = ("inf", "10.0", "5.0")
"""The epsilons of ``PAPER_FID``'s columns, as the runner's cells are keyed."""


def mean_projected_sensitivity(dim: int, n_directions: int, draws: int = 200, seed: int = 0) -> float:
    """E[2 ||Theta||_2] over ``draws`` random unit-column Theta (``dim`` x ``n_directions``): what turns the paper's
    noise std into our noise multiplier."""
    generator = torch.Generator().manual_seed(seed)
    return sum(projected_sensitivity(random_directions(dim, n_directions, generator), 1.0) for _ in range(draws)) / draws


def paper_noise_multiplier(
    model: SlicedGenerator, n_records: int, feature_dim: int, n_classes: int, epsilon: float
) -> tuple[float, dict[str, float]]:
    """The noise multiplier that gives ``model``'s projected releases of ``n_records`` records (``feature_dim``
    features, the label joined into each record unless the kind releases per class) the noise std of the paper's
    convention at ``epsilon``, and the facts a row states about it (``paper_sigma``, ``paper_epsilon``)."""
    batch_size, steps = model.schedule.batches(n_records)
    sigma = ReleaseAccountant(n_records, batch_size).calibrate(epsilon, DELTA, steps)
    per_class = model.mechanism.class_conditional and model.labelling == "conditional"
    dim = feature_dim + (0 if per_class else n_classes)
    return sigma / mean_projected_sensitivity(dim, model.mechanism.options.n_release_directions), {
        "paper_sigma": sigma, "paper_epsilon": epsilon}


def method_label(row: dict[str, Any], with_codec: bool = False) -> str:
    """A row's name in pictures and tables: the generator, its setting's label, the adjacency when add/remove (and the
    codec, ``with_codec``), e.g. ``DPSWflow-r record once``."""
    setting = row.get("setting") or {}
    parts = [METHOD_NAMES.get(row.get("generator", "dpswflow"), row.get("generator", "dpswflow"))]
    parts += [setting["label"]] if setting.get("label") else []
    parts += ["add/remove"] if row.get("neighbouring") == "add_remove" else []
    parts += [f"[{row['codec']}]"] if with_codec else []
    return " ".join(parts)


def cell_values(cell: dict[str, Any], metric: str) -> list[float]:
    """A cell's ``metric`` in each of its generation runs (the cell's own value when it had one run)."""
    return [run[metric] for run in cell.get("runs", [cell]) if run.get(metric) is not None]


def class_row(images: torch.Tensor, labels: torch.Tensor, n_classes: int = 10) -> torch.Tensor:
    """One image per class, in class order (blank where a class was never generated)."""
    row = torch.ones(n_classes, *images.shape[1:])
    for label in range(n_classes):
        found = torch.nonzero(labels == label).flatten()
        if len(found):
            row[label] = images[found[0]]
    return row


class SampleGrids:
    """One PNG per epsilon, ``<stem>_eps<epsilon>.png``: a row of one generated image per class for each row of a run
    (its first generation run), rewritten as each row is added."""

    def __init__(self, stem: Path, title: str) -> None:
        self.stem, self.title = stem, title
        self.rows: dict[float, dict[str, torch.Tensor]] = {}

    def add(self, epsilon: float, label: str, images: torch.Tensor, labels: torch.Tensor) -> Path:
        """Add a row of ``images`` with ``labels`` at ``epsilon`` and rewrite that epsilon's PNG (returned)."""
        self.rows.setdefault(epsilon, {})[label] = class_row(images, labels)
        path = Path(f"{self.stem}_eps{epsilon:g}.png")
        privacy = "not private" if math.isinf(epsilon) else f"delta = {DELTA:g}"
        title = f"{self.title}, epsilon = {epsilon:g} ({privacy})"
        return save_labelled_grid(self.rows[epsilon], [f"label {label}" for label in range(10)], path, title)


def epsilon_order(key: str) -> float:
    """Sort key of a cell's epsilon: finite ones ascending, inf last."""
    return math.inf if key == "inf" else float(key)


def fid_cas_figure(payload: dict[str, Any], path: Path) -> Path | None:
    """FID (when measured) and both CAS against epsilon, one line per row of the sound convention (mean over its
    generation runs, error bars their sample std), written to ``path``; ``None`` when no row has a cell."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [row for row in payload["rows"] if (row.get("setting") or {}).get("convention", "sound") == "sound" and row["epsilons"]]
    if not rows:
        return None
    epsilons = sorted({key for row in rows for key in row["epsilons"]}, key=epsilon_order)
    metrics = [("fid", "FID (lower is better)", 1.0)] if any("fid" in cell for row in rows for cell in row["epsilons"].values()) else []
    metrics += [("mlp", "CAS, MLP, % (higher is better)", 100.0), ("cnn", "CAS, CNN, % (higher is better)", 100.0)]
    with_codec = len({row["codec"] for row in rows}) > 1
    figure, axes = plt.subplots(1, len(metrics), figsize=(5.5 * len(metrics), 4), squeeze=False)
    for row in rows:
        for axis, (metric, _, scale) in zip(axes[0], metrics):
            points = [(position, [scale * value for value in cell_values(row["epsilons"][key], metric)])
                      for position, key in enumerate(epsilons) if key in row["epsilons"]]
            points = [(position, values) for position, values in points if values]
            means, spreads = zip(*(mean_and_spread(values) for _, values in points)) if points else ((), ())
            axis.errorbar([position for position, _ in points], means, yerr=spreads, marker="o", capsize=3,
                          label=method_label(row, with_codec))
    for axis, (_, title, _) in zip(axes[0], metrics):
        axis.set_xticks(range(len(epsilons)), ["∞" if key == "inf" else f"{float(key):g}" for key in epsilons])
        axis.set_xlabel(f"epsilon (delta = {DELTA:g})")
        axis.set_ylabel(title)
        axis.grid(alpha=0.3)
    axes[0][-1].legend(fontsize=7)
    figure.suptitle(f"{payload.get('name', '')}: {payload['dataset']}, {payload['split']} split")
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path


def paper_table(payload: dict[str, Any]) -> str:
    """The paper's FIDs beside ours, per generator and epsilon (inf, 10, 5): under the paper's convention (with the
    sound epsilon of its noise), the paper's scheme under the sound accountant (projected releases used once), and the
    package default (histogram releases). Empty when the results hold no row of the paper's convention."""
    rows = payload["rows"]
    if payload["dataset"] not in PAPER_FID or not any((row.get("setting") or {}).get("convention") == "paper" for row in rows):
        return ""

    def find(generator: str, **wanted: str) -> dict[str, Any] | None:
        """The first row of ``generator`` with the ``wanted`` settings, rows run without ``--set`` overrides first."""
        for row in sorted(rows, key=lambda row: bool(row.get("overrides"))):
            setting = {"release": "projected_histogram", "reuse": "pooled", "convention": "sound", **(row.get("setting") or {})}
            if row.get("generator") == generator and all(setting[key] == value for key, value in wanted.items()):
                return row
        return None

    def fid(row: dict[str, Any] | None, key: str) -> str:
        cell = None if row is None else row["epsilons"].get(key)
        return "-" if cell is None else mean_std(cell_values(cell, "fid"))

    lines = [
        "## The paper's table beside ours", "",
        "FID. Paper's convention: sigma = Opacus' noise multiplier for the target (epsilon, q, K), used as the noise std "
        "of the projected release (Delta taken as 1); the sound epsilon of that noise (Delta = 2 ||Theta||_2) in "
        "brackets. Paper's scheme, sound: projected releases used once, noise calibrated with the exact Delta. "
        "Package default: projected-histogram releases. At epsilon inf no noise is added, so the conventions coincide "
        "(the paper's scheme's row). The paper's FIDs come from another autoencoder, more samples and its own "
        "Inception pipeline: compare columns within our runs, not with the paper's values.", "",
        "| method | epsilon | paper FID | ours, paper's convention (sound epsilon of its noise) | ours, sound: paper's "
        "scheme | ours, sound: package default |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for generator, paper in PAPER_FID[payload["dataset"]].items():
        convention = find(generator, release="projected", convention="paper")
        scheme = find(generator, release="projected", reuse="once", convention="sound")
        default = find(generator, release="projected_histogram", convention="sound")
        for key, paper_fid in zip(PAPER_EPSILONS, paper):
            cell = convention["epsilons"].get(key) if convention is not None else None
            shown = "-" if cell is None else f"{fid(convention, key)} (epsilon = {cell['reported_epsilon']:.3g})"
            if key == "inf":
                shown = fid(scheme, key)
            lines.append(f"| {METHOD_NAMES[generator]} | {'∞' if key == 'inf' else f'{float(key):g}'} | {paper_fid} | "
                         f"{shown} | {fid(scheme, key)} | {fid(default, key)} |")
    return "\n".join(lines) + "\n"

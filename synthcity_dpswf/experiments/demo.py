"""The main job, ``dpswf demo``: DPSWflow at epsilon = 10 on scikit-learn's bundled 8 x 8 digits.

Each record is one labelled digit: its lowest DCT frequencies on the unit sphere (``DCTTransform``, a fixed
map: the pixel range 0..16 is public and no statistic of the private digits is used) with its label. The
digits are split once into a private training part and a real test part. The demo fits DPSWflow (one
class-conditional projected-histogram release) at the given epsilon and at epsilon = inf, prints the privacy
report, writes a grid of synthetic digits beside real ones, and prints the accuracy of a classifier trained
on synthetic digits and tested on the real test digits (CAS).

Settings (L = 50 directions, G = 8 bins) were chosen on a validation split of the private part, never on
the test digits (``benchmarks/results/histogram_settings_digits.md``): with about 130 records per class,
coarse bins and few directions keep the counts above the noise.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import torch
from sklearn.datasets import load_digits

from synthcity_dpswf.adapters import DCTTransform
from synthcity_dpswf.evaluation import classification_accuracy
from synthcity_dpswf.models import DPSWFlow
from synthcity_dpswf.privacy import PrivacyReport

if TYPE_CHECKING:  # matplotlib is imported when the grid is drawn, not with the package
    from matplotlib.figure import Figure

N_TEST = 500
DIRECTIONS, BINS = 50, 8


@dataclass(frozen=True)
class DemoRun:
    """One fitted run: its report, CAS accuracy, and generated images and labels."""

    report: PrivacyReport
    accuracy: float
    images: torch.Tensor
    labels: torch.Tensor


def load_split(seed: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """The digits as ``(n, 8, 8)`` images and labels, split into private training and real test parts."""
    images, labels = load_digits(return_X_y=True)
    order = np.random.default_rng(seed).permutation(len(images))
    images_t = torch.tensor(images[order], dtype=torch.float32).reshape(-1, 8, 8)
    labels_t = torch.tensor(labels[order])
    return images_t[N_TEST:], labels_t[N_TEST:], images_t[:N_TEST], labels_t[:N_TEST]


def run_demo(
    out: Path,
    epsilon: float = 10.0,
    delta: float = 1e-5,
    n_samples: int = 2000,
    seed: int = 0,
    progress: bool = True,
) -> dict[float, DemoRun]:
    """Fit at ``epsilon`` and at infinity, evaluate, write the grid to ``out``; return both runs."""
    train_images, train_labels, test_images, test_labels = load_split(seed)
    codec = DCTTransform(8, 8, n_frequencies=5, max_value=16.0)
    features = codec.encode(train_images)
    test_features = codec.encode(test_images)
    runs: dict[float, DemoRun] = {}
    for budget in (epsilon, math.inf):
        model = DPSWFlow(n_release_directions=DIRECTIONS, n_bins=BINS, seed=seed, progress=progress)
        model.fit(features, budget, delta, labels=train_labels, n_classes=10)
        features_out, labels = model.sample_labelled(n_samples)
        features_out = features_out.cpu()
        accuracy = classification_accuracy(features_out, labels, test_features, test_labels, seed=seed)
        runs[budget] = DemoRun(model.privacy_report, accuracy, codec.decode(features_out), labels)
    real = codec.decode(test_features)
    write_grid(out, {"real (through the codec)": (real, test_labels),
                     f"epsilon = {epsilon:g}": (runs[epsilon].images, runs[epsilon].labels),
                     "epsilon = inf": (runs[math.inf].images, runs[math.inf].labels)})
    return runs


def grid_figure(blocks: dict[str, tuple[torch.Tensor, torch.Tensor]], per_block: int = 5) -> Figure:
    """The figure of ``write_grid``: one row per class, named on its left ("digit 3"), and one titled block of
    ``per_block`` columns per entry of ``blocks`` (title -> (images ``(n, H, W)``, labels)), holding the images of
    that block that carry the row's label. Each image keeps its own aspect (square pixels) inside a thin frame, so
    an 8 x 8 digit reads as the square it is rather than as the narrow stroke it draws on a white ground."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if not blocks or per_block < 1:
        raise ValueError("grid_figure needs at least one block and per_block >= 1.")
    height, width = next(iter(blocks.values()))[0].shape[-2:]
    cell = 0.6 / max(height, width)  # inches per pixel: the longer side of an image is 0.6 inch
    gap = 0.3  # width of the empty column between two blocks, in images
    ratios = ([1.0] * per_block + [gap]) * len(blocks)
    ratios.pop()
    fig, axes = plt.subplots(
        10, len(ratios), squeeze=False, gridspec_kw={"width_ratios": ratios, "wspace": 0.08, "hspace": 0.08},
        figsize=(sum(ratios) * cell * width * 1.08, 10 * cell * height * 1.08),
    )
    fig.subplots_adjust(left=0, right=1, bottom=0, top=1)  # the names and titles lie outside; savefig's tight box keeps them
    for column in range(per_block, len(ratios), per_block + 1):  # the gaps between blocks
        for digit in range(10):
            axes[digit][column].axis("off")
    for block, (title, (images, labels)) in enumerate(blocks.items()):
        first = block * (per_block + 1)
        axes[0][first + per_block // 2].set_title(title, fontsize=9)
        for digit in range(10):
            chosen = images[labels == digit][:per_block]
            for index in range(per_block):
                ax = axes[digit][first + index]
                ax.set_xticks([])
                ax.set_yticks([])
                for spine in ax.spines.values():
                    spine.set(color="0.8", linewidth=0.5, visible=index < len(chosen))
                if index < len(chosen):
                    ax.imshow(chosen[index].numpy(), cmap="gray_r", vmin=0, vmax=float(images.max()), aspect="equal",
                              interpolation="nearest")
                else:  # an empty cell still spans an image's shape, so the row keeps its height
                    ax.set(xlim=(0, width), ylim=(height, 0), aspect="equal")
                if block == 0 and index == 0:
                    ax.set_ylabel(f"digit {digit}", rotation=0, ha="right", va="center", fontsize=9)
    return fig


def write_grid(out: Path, blocks: dict[str, tuple[torch.Tensor, torch.Tensor]], per_block: int = 5) -> Path:
    """A PNG with one row per class, named on its left, and one titled block of ``per_block`` columns per entry of
    ``blocks`` (title -> (images, labels)): the images of that block that carry the row's label (``grid_figure``)."""
    import matplotlib.pyplot as plt

    fig = grid_figure(blocks, per_block)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=100, bbox_inches="tight")
    plt.close(fig)
    return out

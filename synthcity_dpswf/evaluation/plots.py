"""Image grids: plain, and with named rows and columns."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:  # matplotlib is imported when a grid is drawn, not with the package
    from matplotlib.figure import Figure


def save_image_grid(images: torch.Tensor, path: str | Path, per_row: int = 10) -> Path:
    """Write images in [0, 1] (``(N, C, H, W)``) as one PNG grid, ``per_row`` images a row."""
    from torchvision.utils import save_image

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    save_image(images.clamp(0, 1), path, nrow=per_row, padding=2, pad_value=1.0)
    return path


def labelled_grid_figure(rows: dict[str, torch.Tensor], column_labels: list[str], title: str = "") -> Figure:
    """The figure of ``save_labelled_grid``: one row of axes per entry of ``rows`` (name -> images in [0, 1],
    ``(k, C, H, W)``, k <= the number of columns), the row's name on its left, ``column_labels`` above the top row.
    Each image is drawn at its own aspect (square pixels), whatever matplotlib's ``image.aspect`` setting says."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n_rows, n_columns = len(rows), len(column_labels)
    if n_rows == 0 or n_columns == 0:
        raise ValueError("save_labelled_grid needs at least one row and one column.")
    fig, axes = plt.subplots(
        n_rows, n_columns, figsize=(1.6 + 0.8 * n_columns, 0.35 + 0.8 * n_rows), squeeze=False,
        gridspec_kw={"wspace": 0.05, "hspace": 0.05},
    )
    for row, (name, images) in enumerate(rows.items()):
        for column in range(n_columns):
            ax = axes[row][column]
            ax.set_xticks([])
            ax.set_yticks([])
            for spine in ax.spines.values():
                spine.set_visible(False)
            if column < len(images):
                picture = images[column].detach().cpu().clamp(0, 1)
                if picture.shape[0] == 1:
                    ax.imshow(picture[0].numpy(), cmap="gray", vmin=0, vmax=1, aspect="equal")
                else:
                    ax.imshow(picture.permute(1, 2, 0).numpy(), aspect="equal")
            if row == 0:
                ax.set_title(column_labels[column], fontsize=9)
            if column == 0:
                ax.set_ylabel(name, rotation=0, ha="right", va="center", fontsize=9)
    if title:  # above the column names (the tight bounding box makes room for it)
        fig.suptitle(title, fontsize=10, y=1.0 + 0.3 / fig.get_figheight())
    return fig


def save_labelled_grid(rows: dict[str, torch.Tensor], column_labels: list[str], path: str | Path, title: str = "") -> Path:
    """Write a PNG grid whose rows are named (``rows``: name -> images in [0, 1], ``(k, C, H, W)``, k <= the
    number of columns) and whose columns are named (``column_labels``), the names inside the picture."""
    import matplotlib.pyplot as plt

    fig = labelled_grid_figure(rows, column_labels, title)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90, bbox_inches="tight")
    plt.close(fig)
    return path

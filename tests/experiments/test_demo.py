"""The demo's picture (``dpswf demo``'s PNG, the first one a new user opens): each digit at its own aspect, each row
named by its class, each block by its source."""

from __future__ import annotations

import matplotlib
import pytest
import torch

from synthcity_dpswf.experiments.demo import grid_figure

from conftest import drawn_aspects


def blocks(height: int = 8, width: int = 8, missing: int | None = None) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    """Three blocks of random images, six of each class, class ``missing`` absent from the second."""
    generator = torch.Generator().manual_seed(0)
    labels = torch.arange(10).repeat(6)
    images = 16 * torch.rand(len(labels), height, width, generator=generator)
    kept = labels != missing
    return {"real (through the codec)": (images, labels), "epsilon = 10": (images[kept], labels[kept]),
            "epsilon = inf": (images, labels)}


@pytest.mark.parametrize("setting", ["equal", "auto"])
@pytest.mark.parametrize("shape", [(8, 8), (6, 12)])
def test_each_image_keeps_its_own_aspect(setting: str, shape: tuple[int, int]) -> None:
    # Under image.aspect = "auto" an image fills its cell; the grid must not depend on that setting.
    with matplotlib.rc_context({"image.aspect": setting}):
        figure = grid_figure(blocks(*shape, missing=3))
        aspects = drawn_aspects(figure)
    assert len(aspects) == 3 * 10 * 5 - 5  # class 3 is absent from the second block
    for drawn, own in aspects:
        assert drawn == pytest.approx(own, rel=0.03)


def test_rows_are_named_by_class_and_blocks_by_source() -> None:
    figure = grid_figure(blocks(), per_block=5)
    first_column = [ax for ax in figure.axes if ax.get_ylabel()]
    assert [ax.get_ylabel() for ax in first_column] == [f"digit {digit}" for digit in range(10)]
    assert sorted(ax.get_title() for ax in figure.axes if ax.get_title()) == [
        "epsilon = 10", "epsilon = inf", "real (through the codec)"]


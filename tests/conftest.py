"""Shared fixtures: the path of the offline data copies, and a CUDA marker helper; marks the tests that run a
user-facing command or benchmark script whole as ``end_to_end`` (``pytest -m end_to_end``). ``benchmarks/`` and
``benchmarks/studies/`` are on the tests' import path through pytest's ``pythonpath`` option in pyproject.toml, so the
tests import the benchmark modules (``common``, ``table_runner``, the studies' ``stand_in``) and the baselines that
are not our product (``baselines.dpsgd_gan``) by name, as a script in ``benchmarks/`` does.

The tests mirror the package: ``tests/<subpackage>/`` for ``synthcity_dpswf/<subpackage>/``, ``tests/benchmarks/``
for ``benchmarks/``, and at the top the checks that span the project (the README, CUDA)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

import numpy as np
import pytest
import torch
from pandas._libs import lib
from pandas.core.arrays.masked import BaseMaskedArray

if TYPE_CHECKING:  # matplotlib is imported by the tests that draw
    from matplotlib.figure import Figure

SHARED = Path(os.environ.get("DPSWF_SHARED", Path(__file__).resolve().parents[1].parent / "shared"))

requires_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
END_TO_END = ("tests/benchmarks/", "tests/experiments/test_cli.py")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the tests of ``END_TO_END`` files ``end_to_end``."""
    root = Path(__file__).resolve().parents[1]
    for item in items:
        relative = Path(str(item.fspath)).resolve().relative_to(root).as_posix()
        if relative.startswith(END_TO_END):
            item.add_marker(pytest.mark.end_to_end)


@pytest.fixture
def seeded_release_noise(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every release a plugin makes draws its batches and noise from generators seeded 1, 2, ... in the order they are
    asked for, so that a test whose outcome reads a noisy release (a released share, a published category, a flow
    fitted to noisy tables) does not hang on a rare draw: a categorical column gains an "(other categories)" level in
    about 0.13% of domain releases, enough to fail a test that checks its categories one run in a few hundred."""
    calls = iter(range(1, 10_000))

    def seeded(seed: int | None = None) -> torch.Generator:
        return torch.Generator().manual_seed(next(calls) if seed is None else seed)

    # Not the image codecs' releases: a codec trained on seeded noise must never be cached for reuse.
    for module in ("synthcity_dpswf.models.releasing", "synthcity_dpswf.recipes.tables"):
        monkeypatch.setattr(f"{module}.secret_generator", seeded)


@pytest.fixture
def shared_dir() -> Path:
    """The folder with the offline data and weights (``../shared`` beside the checkout, or $DPSWF_SHARED)."""
    if not SHARED.exists():
        pytest.skip(f"offline data folder {SHARED} not found; set DPSWF_SHARED")
    return SHARED


def numeric_parts(state: object) -> Iterator[torch.Tensor]:
    """Every number reachable from ``state`` (through dicts, sequences, sets and object attributes), as flat float64
    tensors: one per tensor, array or frame (its numeric entries), one of length 1 per scalar (booleans skipped)."""
    import numpy as np
    import pandas as pd

    stack, seen = [state], set()
    while stack:
        item = stack.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        if isinstance(item, bool):
            continue
        if isinstance(item, (int, float, np.integer, np.floating)):
            yield torch.tensor([float(item)], dtype=torch.float64)
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, (list, tuple, set)):
            stack.extend(item)
        elif isinstance(item, torch.Tensor):
            yield item.detach().double().reshape(-1)
        elif isinstance(item, (pd.DataFrame, pd.Series, np.ndarray)):
            values = pd.DataFrame(item).apply(pd.to_numeric, errors="coerce").to_numpy(dtype=float).reshape(-1)
            yield torch.tensor(values[np.isfinite(values)], dtype=torch.float64)
        elif hasattr(item, "__dict__") and not isinstance(item, type):
            stack.extend(vars(item).values())


def private_rows_found(state: object, rows: torch.Tensor, tolerance: float = 1e-4) -> int:
    """How many of ``rows`` (``(n, d)``) appear as a run of d consecutive values in any tensor, array or frame
    reachable from ``state`` (``numeric_parts``)."""
    rows = rows.double()
    found = torch.zeros(len(rows), dtype=torch.bool)
    for flat in numeric_parts(state):
        if flat.numel() >= rows.shape[1]:
            windows = flat.unfold(0, rows.shape[1], 1)
            for start in range(0, len(windows), 20000):
                found |= torch.cdist(rows, windows[start : start + 20000]).min(dim=1).values < tolerance
    return int(found.sum())


def blobs(n: int, seed: int = 0, size: int = 32) -> tuple[torch.Tensor, torch.Tensor]:
    """Synthetic labelled images in [0, 1]: a bright square whose position depends on the label (0..3)."""
    generator = torch.Generator().manual_seed(seed)
    labels = torch.randint(4, (n,), generator=generator)
    images = 0.1 * torch.rand(n, 1, size, size, generator=generator)
    for index, label in enumerate(labels.tolist()):
        row, column = divmod(label, 2)
        images[index, 0, 4 + 14 * row : 14 + 14 * row, 4 + 14 * column : 14 + 14 * column] = 0.9
    return images, labels


def drawn_aspects(figure: Figure) -> list[tuple[float, float]]:
    """For each image a matplotlib ``figure`` draws: (its drawn width / height on the canvas, its array's width /
    height). The two agree when the image keeps its own aspect (square pixels); a stretched image's do not."""
    figure.canvas.draw()
    aspects = []
    for ax in figure.axes:
        for image in ax.images:
            drawn = image.get_window_extent()
            height, width = image.get_array().shape[:2]
            aspects.append((drawn.width / drawn.height, width / height))
    return aspects


@pytest.fixture
def pandas_2_1_to_numpy(monkeypatch: pytest.MonkeyPatch) -> None:
    """pandas 2.1's ``to_numpy`` of a nullable array (allowed by synthcity's pins): a float dtype without ``na_value``
    raises where the array holds pandas' NA (pandas 2.2 returns NaN instead)."""
    original = BaseMaskedArray.to_numpy

    def strict(self: BaseMaskedArray, dtype: object = None, copy: bool = False, na_value: object = lib.no_default) -> np.ndarray:
        if na_value is lib.no_default and self._hasna and dtype is not None and np.dtype(dtype).kind == "f":
            raise ValueError("cannot convert to 'float64'-dtype NumPy array with missing values. Specify an "
                             "appropriate 'na_value' for this dtype.")
        return original(self, dtype=dtype, copy=copy, na_value=na_value)

    monkeypatch.setattr(BaseMaskedArray, "to_numpy", strict)

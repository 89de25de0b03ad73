"""Shared fixtures: the path of the offline data copies, and a CUDA marker helper."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

SHARED = Path(os.environ.get("DPSWF_SHARED", Path(__file__).resolve().parents[1].parent / "shared"))

requires_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


@pytest.fixture
def shared_dir() -> Path:
    """The folder with the offline data and weights (``../shared`` beside the checkout, or $DPSWF_SHARED)."""
    if not SHARED.exists():
        pytest.skip(f"offline data folder {SHARED} not found; set DPSWF_SHARED")
    return SHARED

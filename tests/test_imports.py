"""Import hygiene: transformers' two "PyTorch was not found" notices are dropped, every other warning stays."""

from __future__ import annotations

import subprocess
import sys

import pytest

SCRIPT = """
import logging
import warnings

import synthcity_dpswf
import synthcity_dpswf.plugins
from synthcity_dpswf.models.base import check_delta

logging.getLogger("transformers").warning("another transformers message")
warnings.simplefilter("always")
check_delta(0.5, 10)
"""


@pytest.fixture(scope="module")
def import_output() -> str:
    """stdout and stderr of a fresh interpreter that imports the package and synthcity's plugins (one run)."""
    completed = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=300)
    assert completed.returncode == 0, completed.stderr[-3000:]
    return completed.stdout + completed.stderr


def test_transformers_torch_notices_are_dropped(import_output: str) -> None:
    assert "PyTorch was not found" not in import_output
    assert "Disabling PyTorch" not in import_output


def test_other_warnings_still_show(import_output: str) -> None:
    assert "another transformers message" in import_output  # the filter matches the two notices only
    assert "choose delta well below 1/n" in import_output  # our own warnings.warn

"""DPSWflow-r (the paper's Algorithm 1): fresh directions and a fresh private batch at every step."""

from __future__ import annotations

import math
from typing import Any

from synthcity_dpswf.math.checks import check_positive_int
from synthcity_dpswf.models.base import FlowSettings, SlicedGenerator

PAPER_PRESET: dict[str, Any] = {
    "release": "projected",
    "n_release_directions": 70,
    "batch_size": 250,
    "passes": 35,
    "settings": FlowSettings(step_size=3.0, entropy=0.0, n_directions=70, reuse="once"),
}
"""The paper's MNIST setting: projected releases of N_theta = 70 directions on batches of 250, 35 passes,
h = 3, lambda = 0, each release used once by the step that made it."""


def release_steps(n_records: int, batch_size: int, passes: float) -> int:
    """K = ceil(passes * n / b): the number of per-step releases for ``passes`` passes over the data."""
    return max(1, math.ceil(passes * n_records / batch_size))


class DPSWFlowR(SlicedGenerator):
    """DPSWflow-r: K releases, each of a uniformly random batch of exactly ``batch_size`` records (independent
    across steps), composed with Opacus' accountant; the flow then runs over them.

    Args:
        batch_size: b, records per release.
        passes: K = ceil(passes * n / b) releases (ignored when ``release_steps`` is given).
        release_steps: K directly.
        **kwargs: the ``SlicedGenerator`` arguments (release, radius, settings, seed, ...).

    With the default ``FlowSettings`` (reuse="pooled") every flow step draws a batch of 4,000 rows from all K
    releases with fresh directions; ``FlowSettings(reuse="once")`` is the paper's way. ``DPSWFlowR.paper()``
    gives the paper's MNIST preset.
    """

    name = "dpswflow_r"

    def __init__(self, *, batch_size: int = 250, passes: float = 35.0, release_steps: int | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        check_positive_int("batch_size", batch_size)
        if not isinstance(passes, (int, float)) or not math.isfinite(passes) or passes <= 0:
            raise ValueError(f"passes must be a finite number > 0, got {passes!r}.")
        if release_steps is not None:
            check_positive_int("release_steps", release_steps)
        self.batch_size = batch_size
        self.passes = float(passes)
        self.release_steps = release_steps

    @classmethod
    def paper(cls, **overrides: Any) -> "DPSWFlowR":
        """The paper's MNIST preset (``PAPER_PRESET``), with any argument overridden."""
        return cls(**{**PAPER_PRESET, **overrides})

    def release_schedule(self, n_records: int) -> tuple[int, int]:
        if self.batch_size > n_records:
            raise ValueError(f"batch_size={self.batch_size} exceeds the {n_records} records; lower it.")
        return self.batch_size, self.release_steps or release_steps(n_records, self.batch_size, self.passes)

    def get_parameters(self) -> dict[str, Any]:
        return {
            **super().get_parameters(), "batch_size": self.batch_size, "passes": self.passes,
            "release_steps": self.release_steps,
        }

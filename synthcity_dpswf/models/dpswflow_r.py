"""DPSWflow-r (the paper's Algorithm 1): fresh directions and a fresh private batch at every step."""

from __future__ import annotations

import math
from typing import Any

from synthcity_dpswf.math.checks import check_positive_int
from synthcity_dpswf.models.base import SlicedGenerator
from synthcity_dpswf.models.settings import FlowSettings

PAPER_PRESET: dict[str, Any] = {
    "release": "projected",
    "labelling": "joint",
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


MIN_DEFAULT_BATCH = 1000
"""The smallest default batch (or all records when fewer): a release's counts must stand out of noise that does
not shrink with the batch."""


DEFAULT_SAMPLE_RATE = 0.1
"""The Poisson rate of add/remove releases when none is given: the rate of the replace-one default on large data
(b = n / 10, measured on MNIST), a constant because n is private there."""


def default_batch_size(n_records: int) -> int:
    """b = max(ceil(n / 10), min(n, 1,000)): q = 0.1 on large data (MNIST's 30,000: b = 3,000, measured), every
    record in each release below 1,000 (iris' 150 rows at q = 0.1 gave batches of 15 whose marginal counts were
    noise: synthcity's iris check scored 0 in 5 of 8 fits)."""
    return max(math.ceil(n_records / 10), min(n_records, MIN_DEFAULT_BATCH))


class DPSWFlowR(SlicedGenerator):
    """DPSWflow-r: K releases along fresh directions, each of a fresh private batch (independent across steps),
    composed with an RDP accountant; the flow then runs over them. Under replace-one (the default) a batch is a
    uniformly random subset of exactly ``batch_size`` records; under add/remove (``neighbouring="add_remove"``) a
    Poisson sample of rate ``sample_rate``, accounted with Opacus' sampled-Gaussian RDP (privacy.md, "Add/remove
    neighbours").

    Args:
        batch_size: b, records per release (replace-one); ``None`` (default): ``default_batch_size(n)``, q = 0.1
            from 10,000 records up, all of them below 1,000.
        sample_rate: q, the Poisson rate (add/remove); ``None`` (default): ``DEFAULT_SAMPLE_RATE`` (0.1, the
            replace-one default's rate on large data, chosen without reading n).
        passes: K = ceil(passes * n / b) releases, or ceil(passes / q) under add/remove (ignored when
            ``release_steps`` is given); the default 10 with q = 0.1 makes K = 100.
        release_steps: K directly.
        **kwargs: the ``SlicedGenerator`` arguments (release, radius, settings, seed, neighbouring, ...).

    The defaults are the per-step histogram form measured on MNIST (docs/flows.md: b = 3,000 of 30,000,
    K = 100, M = 50 directions per release): a count carries noise z sqrt(2M) while it grows with b, so
    batches are large. ``DPSWFlowR.paper()`` gives the paper's MNIST preset (projected releases, b = 250, 35
    passes, each release used once by the step that made it).
    """

    name = "dpswflow_r"
    per_step = True

    def __init__(
        self,
        *,
        batch_size: int | None = None,
        sample_rate: float | None = None,
        passes: float = 10.0,
        release_steps: int | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if batch_size is not None:
            check_positive_int("batch_size", batch_size)
            if self.neighbouring == "add_remove":
                raise ValueError("under add/remove batches are Poisson samples: give sample_rate, not batch_size.")
        if sample_rate is not None:
            if isinstance(sample_rate, bool) or not isinstance(sample_rate, (int, float)) or not 0 < sample_rate <= 1:
                raise ValueError(f"sample_rate must lie in (0, 1], got {sample_rate!r}.")
            if self.neighbouring == "replace_one":
                raise ValueError("sample_rate is the Poisson rate of add/remove releases; under replace-one give batch_size.")
        if not isinstance(passes, (int, float)) or not math.isfinite(passes) or passes <= 0:
            raise ValueError(f"passes must be a finite number > 0, got {passes!r}.")
        if release_steps is not None:
            check_positive_int("release_steps", release_steps)
        self.batch_size = batch_size
        self.sample_rate = sample_rate
        self.passes = float(passes)
        self.release_steps = release_steps

    @classmethod
    def paper(cls, **overrides: Any) -> "DPSWFlowR":
        """The paper's MNIST preset (``PAPER_PRESET``), with any argument overridden."""
        return cls(**{**PAPER_PRESET, **overrides})

    def release_schedule(self, n_records: int) -> tuple[int, int]:
        batch_size = default_batch_size(n_records) if self.batch_size is None else self.batch_size
        if batch_size > n_records:
            raise ValueError(f"batch_size={batch_size} exceeds the {n_records} records; lower it.")
        return batch_size, self.release_steps or release_steps(n_records, batch_size, self.passes)

    def poisson_schedule(self) -> tuple[float, int]:
        sample_rate = DEFAULT_SAMPLE_RATE if self.sample_rate is None else self.sample_rate
        return sample_rate, self.release_steps or max(1, math.ceil(self.passes / sample_rate))

    def get_parameters(self) -> dict[str, Any]:
        return {
            **super().get_parameters(), "batch_size": self.batch_size, "sample_rate": self.sample_rate,
            "passes": self.passes, "release_steps": self.release_steps,
        }

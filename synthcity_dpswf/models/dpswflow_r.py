"""DPSWflow-r (the paper's Algorithm 1): fresh directions and a fresh private batch at every step."""

from __future__ import annotations

from typing import Any, Mapping

from synthcity_dpswf.models.base import SlicedGenerator
from synthcity_dpswf.models.state import DEFAULT_PASSES, FlowSettings, ReleaseSchedule
from synthcity_dpswf.privacy import MECHANISMS

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


class DPSWFlowR(SlicedGenerator):
    """DPSWflow-r: K releases along fresh directions, each of a fresh private batch (independent across steps),
    composed by an accountant; the flow then runs over them. Under replace-one (the default) a batch of the
    histogram and marginal kinds is a Poisson sample (every record independently with probability q), accounted by
    the antipodal pair (privacy.md, "Poisson batches under replace-one"), unless ``batch_size`` is given; of the other
    kinds, a uniformly random subset of exactly ``batch_size`` records; under add/remove (``neighbouring="add_remove"``) a Poisson sample of rate ``sample_rate``, accounted with Opacus'
    sampled-Gaussian RDP (privacy.md, "Add/remove neighbours").

    Args:
        batch_size: b, records per release in batches of a fixed size (replace-one); ``None`` (default):
            Poisson batches for histograms and marginals, ``models.state.default_batch_size(n)`` records otherwise (q =
            0.1 from 10,000 records up, all of them below 1,000, where every kind takes them all).
        sample_rate: q, the Poisson rate; ``None`` (default): ``models.state.DEFAULT_SAMPLE_RATE`` (0.1) under
            add/remove (n private), ``default_batch_size(n) / n`` under replace-one.
        passes: K = ceil(passes * n / b) releases (the default rate's b under replace-one), or ceil(passes / q) for a
            given ``sample_rate`` and under add/remove (ignored when ``release_steps`` is given); the default 10 with
            q = 0.1 makes K = 100.
        release_steps: K directly.
        **kwargs: the ``SlicedGenerator`` arguments (release, radius, settings, seed, neighbouring, ...).

    The defaults are the per-step histogram form as run on a validation split of MNIST (q = 0.1 of the records per
    release, K = 100, M = 50 directions per release: ``benchmarks/results/archive/histogram_settings_mnist.md``): a
    count carries noise z sqrt(2M) while it grows with b, so batches are large. ``DPSWFlowR.paper()`` gives the
    paper's MNIST preset (projected releases, b = 250, 35 passes, each release used once by the step that made it).
    """

    name = "dpswflow_r"
    per_step = True

    def __init__(
        self,
        *,
        batch_size: int | None = None,
        sample_rate: float | None = None,
        passes: float = DEFAULT_PASSES,
        release_steps: int | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        schedule = ReleaseSchedule(True, batch_size, sample_rate, passes, release_steps)  # validates them
        if batch_size is not None and not self.neighbouring.n_is_public:
            raise ValueError("under add/remove batches are Poisson samples: give sample_rate, not batch_size.")
        schedule.check_release(self.release, self.neighbouring)
        self.batch_size = batch_size
        self.sample_rate = sample_rate
        self.passes = float(schedule.passes)
        self.release_steps = release_steps

    @classmethod
    def schedule_of(cls, arguments: Mapping[str, Any]) -> ReleaseSchedule:
        return ReleaseSchedule(True, arguments.get("batch_size"), arguments.get("sample_rate"),
                               float(arguments.get("passes", DEFAULT_PASSES)), arguments.get("release_steps"))

    @classmethod
    def paper(cls, **overrides: Any) -> "DPSWFlowR":
        """The paper's MNIST preset (``PAPER_PRESET``), with any argument overridden."""
        return cls(**{**PAPER_PRESET, **overrides})

    def get_parameters(self) -> dict[str, Any]:
        return {
            **super().get_parameters(), "batch_size": self.batch_size, "sample_rate": self.sample_rate,
            "passes": self.passes, "release_steps": self.release_steps,
        }

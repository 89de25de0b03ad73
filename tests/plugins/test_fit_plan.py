"""issue 47, item 2: a fit resolves its generator once (``models.base.GeneratorSpec``) and computes its release schedule
once to calibrate the noise (``GeneratorSpec.plan``); the generator checks that plan against its own once, where it
releases (a plan handed down is never trusted: the report's epsilon is computed from it), on tables (with and without
a DP domain, in memory and on Dask) and on images; a plan that is not the generator's is refused before anything is
released."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pandas as pd
import pytest
import torch
from sklearn.datasets import load_digits
from synthcity.plugins import Plugins
from synthcity.plugins.core.dataloader import ImageDataLoader

import synthcity_dpswf  # noqa: F401  (registers the plugins)
from synthcity_dpswf.models import DPSWFlow, DPSWFlowR, ReleaseSchedule
from synthcity_dpswf.models.releasing import Releasing
from synthcity_dpswf.models.base import GeneratorSpec
from synthcity_dpswf.privacy import MarginalLayout

FAST = {"n_steps": 5, "n_directions": 10, "flow_batch_size": 200}
ONCE_AND_CHECKED = {"schedule": 2, "accountant": 2}
"""One plan computed to calibrate the noise, and the generator's check of it at the release (before this design: the
schedule four times, the accountant twice, with no check)."""


def table(n: int = 400) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    return pd.DataFrame({"age": rng.integers(18, 90, n), "city": rng.choice(["a", "b", "c"], n),
                         "income": rng.lognormal(10, 1, n)})


def digits() -> ImageDataLoader:
    images, labels = load_digits(n_class=3, return_X_y=True)
    pixels = torch.tensor(images[:200], dtype=torch.float32).reshape(-1, 1, 8, 8) / 16.0
    return ImageDataLoader(data=(pixels * 2 - 1, torch.tensor(labels[:200])), height=8)


def counted_plans(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Counters of the schedule computations: ``schedule_of`` (a schedule from a generator's arguments) and
    ``ReleaseSchedule.accountant`` (its accountant and number of releases)."""
    counts = {"schedule": 0, "accountant": 0}
    accountant = ReleaseSchedule.accountant

    def counting_accountant(self: ReleaseSchedule, *args: Any, **kwargs: Any) -> Any:
        counts["accountant"] += 1
        return accountant(self, *args, **kwargs)

    monkeypatch.setattr(ReleaseSchedule, "accountant", counting_accountant)
    for generator in (Releasing, DPSWFlowR):  # where schedule_of is defined
        schedule_of = generator.__dict__["schedule_of"].__func__

        def counting_schedule_of(cls: type, arguments: Any, original: Any = schedule_of) -> ReleaseSchedule:
            counts["schedule"] += 1
            return original(cls, arguments)

        monkeypatch.setattr(generator, "schedule_of", classmethod(counting_schedule_of))
    return counts


@pytest.mark.parametrize("name, arguments", [
    ("dpswflow", {}),
    ("dpswflow", {"domain": {"age": (18, 90), "city": ["a", "b", "c"], "income": (0.0, 1e7)}}),
    ("dpswflow", {"neighbouring": "add_remove"}),
    ("dpswflow_r", {"batch_size": 300}),
    ("dpswgen", {"n_steps": 3}),
])
def test_a_table_fit_computes_its_schedule_once_and_releases_by_it(
    name: str, arguments: dict[str, Any], monkeypatch: pytest.MonkeyPatch,
) -> None:
    plugin = Plugins().get(name, epsilon=2.0, **{**FAST, **arguments})
    counts = counted_plans(monkeypatch)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plugin.fit(table())
    assert counts == ONCE_AND_CHECKED
    assert plugin.privacy_report().epsilon == pytest.approx(2.0, rel=1e-3)  # calibrated to the plan it released by
    if name == "dpswflow_r":  # the small-table rule: a given batch capped at half the public n
        assert plugin.generator_.privacy_report.sample_rate == pytest.approx(200 / 400)


def test_an_image_fit_computes_its_schedule_once(monkeypatch: pytest.MonkeyPatch) -> None:
    plugin = Plugins().get("image_dpswflow", epsilon=2.0, delta=1e-5, image_codec="private-pca", n_classes=3,
                           codec_options={"components": 6}, n_release_directions=40, **FAST)
    counts = counted_plans(monkeypatch)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plugin.fit(digits())
    assert counts == ONCE_AND_CHECKED
    assert plugin.privacy_report().epsilon == pytest.approx(2.0, rel=1e-3)


def test_a_partitioned_fit_computes_its_schedule_once(monkeypatch: pytest.MonkeyPatch) -> None:
    dd = pytest.importorskip("dask.dataframe")
    plugin = Plugins().get("dpswflow", epsilon=2.0, **FAST)
    counts = counted_plans(monkeypatch)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plugin.fit(dd.from_pandas(table(), npartitions=3))
    assert counts == ONCE_AND_CHECKED


def test_a_plan_that_is_not_the_generators_own_is_refused_before_any_release() -> None:
    """Second reader's finding: a trusted plan of 10 records per batch made DPSWflow's one release of everything print
    epsilon 0.985 where the bound was 4.377, and an Opacus accountant for per-step histograms 1.993 instead of 3.96."""
    spec = GeneratorSpec(DPSWFlow, {"release": "projected_histogram", "accountant": "rdp", "neighbouring": "replace_one"})
    records = torch.nn.functional.normalize(torch.randn(100, 3), dim=1)
    model = spec.build(100)
    per_step = ReleaseSchedule(True, batch_size=10).accountant(100, "replace_one", "rdp", "projected_histogram")
    opacus = ReleaseSchedule(True, batch_size=10).accountant(100, "replace_one", "rdp", "projected")
    for plan in (spec.plan(99), per_step, opacus, (per_step[0], 1)):
        with pytest.raises(ValueError, match="the release plan .* is not this generator's .* nothing was released"):
            model.fit(records, None, 1e-5, noise_multiplier=1.0, plan=plan)
        assert model.pool_ is None
    model.fit(records, None, 1e-5, noise_multiplier=1.0, plan=spec.plan(100))
    assert model.privacy_report.noise_multiplier == 1.0 and model.privacy_report.steps == 1


def test_a_partitioned_release_refuses_a_per_step_plan() -> None:
    spec = GeneratorSpec(DPSWFlow, {"release": "marginal", "accountant": "rdp", "neighbouring": "replace_one"})
    model = spec.build(1000, MarginalLayout.build((2, 2), coarse_bins=2))
    per_step = ReleaseSchedule(True, batch_size=10).accountant(1000, "replace_one", "rdp", "marginal")
    with pytest.raises(ValueError, match="is not this generator's"):
        model.fit_total(torch.zeros(4), 2, None, 1e-5, n_records=1000, noise_multiplier=1.0, plan=per_step)
    assert model.pool_ is None

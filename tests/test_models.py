"""The three generators: end to end on a mixture target, stored state, epsilon = inf, bad input."""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import pytest
import torch

from synthcity_dpswf.math import EmpiricalTarget, run_flow, sliced_wasserstein
from synthcity_dpswf.models import DPSWFlow, DPSWFlowR, DPSWGen, FlowSettings, SlicedGenerator, release_steps
from synthcity_dpswf.privacy import bound_records

from conftest import private_rows_found


def mixture(n: int, seed: int, dim: int = 4) -> torch.Tensor:
    """A mixture of 4 Gaussians inside the unit ball (means fixed by a separate seed)."""
    means = 0.6 * torch.nn.functional.normalize(torch.randn(4, dim, generator=torch.Generator().manual_seed(99)), dim=1)
    generator = torch.Generator().manual_seed(seed)
    component = torch.randint(4, (n,), generator=generator)
    return means[component] + 0.1 * torch.randn(n, dim, generator=generator)


FAST = FlowSettings(n_steps=150, batch_size=2000, n_directions=30)


def _models() -> list[SlicedGenerator]:
    return [
        DPSWFlowR(batch_size=250, passes=10, settings=FAST),
        # The projected release carries about 4x more noise at equal epsilon: it needs a smaller step (flows.md).
        DPSWFlowR(batch_size=250, passes=10, release="projected", settings=FlowSettings(
            n_steps=800, step_size=0.1, batch_size=2000, n_directions=30)),
        DPSWFlow(settings=FAST),
        DPSWGen(batch_size=250, passes=10, settings=FlowSettings(n_steps=800, batch_size=1000, n_directions=30)),
    ]


@pytest.mark.parametrize("model", _models(), ids=lambda m: f"{type(m).__name__}-{m.release}")
def test_generators_improve_on_their_starting_point_at_epsilon_10(model: SlicedGenerator) -> None:
    records, holdout = mixture(5000, seed=0), mixture(2000, seed=1)
    model.fit(records, epsilon=10.0, delta=1e-5)
    assert model.privacy_report.epsilon <= 10.0
    samples = model.sample(2000)
    assert samples.shape == (2000, 4) and bool(torch.isfinite(samples).all())
    if isinstance(model, DPSWGen):
        untrained = DPSWGen(batch_size=250, passes=10, settings=FlowSettings(n_steps=1))
        start = untrained.fit(records, 10.0, 1e-5).sample(2000)
    else:
        start = model.initial_particles(2000, torch.Generator().manual_seed(model.seed + 1))
    before, after = sliced_wasserstein(start, holdout), sliced_wasserstein(samples, holdout)
    assert after < 0.7 * before, (before, after)


def test_paper_preset_reproduces_the_paper_scheme() -> None:
    model = DPSWFlowR.paper(passes=2).fit(mixture(2000, seed=0), 10.0, 1e-5)
    assert model.release == "projected" and model.settings.step_size == 3.0 and model.settings.reuse == "once"
    assert model.privacy_report.steps == release_steps(2000, 250, 2) == 16
    assert model.sample(500).shape == (500, 4)


@pytest.mark.parametrize("model_class", [DPSWFlowR, DPSWFlow, DPSWGen])
def test_saved_state_contains_no_private_record(model_class: type[SlicedGenerator], tmp_path: Path) -> None:
    records = mixture(400, seed=3)
    private = bound_records(records)
    kwargs = {"batch_size": 100, "passes": 2} if model_class is not DPSWFlow else {}
    settings = FlowSettings(n_steps=5, batch_size=100, n_directions=10)
    model = model_class(settings=settings, **kwargs)  # type: ignore[arg-type]
    model.fit(records, 10.0, 1e-5)
    model.save(tmp_path / "model.pt")
    state = torch.load(tmp_path / "model.pt", weights_only=False)
    assert private_rows_found(state, private) == 0
    # The search finds rows when they are there: without noise the releases are the records themselves.
    leaky = model_class(settings=settings, **kwargs).fit(records, math.inf, 1e-5)  # type: ignore[arg-type]
    assert private_rows_found(leaky.state_dict(), private) > 0


@pytest.mark.parametrize("model_class", [DPSWFlowR, DPSWFlow, DPSWGen])
def test_save_and_load_round_trip(model_class: type[SlicedGenerator], tmp_path: Path) -> None:
    kwargs = {"batch_size": 100, "passes": 2} if model_class is not DPSWFlow else {}
    model = model_class(settings=FlowSettings(n_steps=5, batch_size=100, n_directions=10), **kwargs)  # type: ignore[arg-type]
    model.fit(mixture(400, seed=3), 5.0, 1e-5)
    model.save(tmp_path / "model.pt")
    loaded = model_class.load(tmp_path / "model.pt")
    torch.testing.assert_close(loaded.sample(50, seed=4), model.sample(50, seed=4))
    assert str(loaded.privacy_report) == str(model.privacy_report)


def test_infinite_epsilon_is_the_non_private_engine() -> None:
    records = mixture(1000, seed=5)
    settings = FlowSettings(n_steps=40, batch_size=None, n_directions=20)
    model = DPSWFlow(settings=settings, seed=11).fit(records, math.inf, 1e-5)
    samples = model.sample(500)
    # The same flow, written with the engine directly on the (bounded) records.
    particles = model.initial_particles(500, torch.Generator().manual_seed(12))
    source = EmpiricalTarget(bound_records(records), 20, 0.0, 1000, None, seed=14)
    expected = run_flow(particles, source, 40, settings.step_size, 0.0, torch.Generator().manual_seed(13))
    torch.testing.assert_close(samples, expected, atol=1e-5, rtol=0)


def test_sampling_settings_are_free_to_change_after_fit() -> None:
    model = DPSWFlowR(batch_size=100, passes=2, settings=FlowSettings(n_steps=5)).fit(mixture(500, seed=0), 5.0, 1e-5)
    report = str(model.privacy_report)
    assert model.sample(30, n_steps=3, step_size=0.5, smoothing=3.0, batch_size=50).shape == (30, 4)
    assert model.sample(30, reuse="once").shape == (30, 4)
    assert str(model.privacy_report) == report  # generation spends nothing
    with pytest.raises(ValueError, match="below the noise"):
        model.sample(30, smoothing=0.1)


def test_bad_input_fails_early_and_clearly() -> None:
    records = mixture(300, seed=0)
    model = DPSWFlowR(batch_size=100, passes=1, settings=FlowSettings(n_steps=2))
    for epsilon in (0.0, -1.0, float("nan")):
        with pytest.raises(ValueError, match="epsilon must be > 0"):
            model.fit(records, epsilon, 1e-5)
    for delta in (0.0, 1.0, -0.1, 2.0):
        with pytest.raises(ValueError, match="delta must lie in"):
            model.fit(records, 1.0, delta)
    with pytest.warns(UserWarning, match="below 1/n"):
        model.fit(records, 1.0, 0.01)
    with pytest.raises(ValueError, match="batch_size=500 exceeds the 300 records"):
        DPSWFlowR(batch_size=500).fit(records, 1.0, 1e-5)
    bad = records.clone()
    bad[3, 1] = float("nan")
    with pytest.raises(ValueError, match="NaN or inf"):
        model.fit(bad, 1.0, 1e-5)
    model.fit(records, 1.0, 1e-5)
    with pytest.raises(ValueError, match="init has 3 features but 4"):
        model.sample(10, init=torch.zeros(10, 3))
    with pytest.raises(RuntimeError, match="not fitted"):
        DPSWFlow().sample(5)
    with pytest.raises(ValueError, match="release must be"):
        DPSWFlow(release="both")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="n_steps"):
        FlowSettings(n_steps=0)
    with pytest.raises(ValueError, match="reuse='once' needs per-step releases"):
        DPSWFlow(settings=FlowSettings(n_steps=2)).fit(records, 1.0, 1e-5).sample(5, reuse="once")


def test_fit_prints_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        DPSWFlowR(batch_size=100, passes=2, settings=FlowSettings(n_steps=2)).fit(mixture(300, seed=0), 1.0, 1e-5)
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == ""


def test_fit_with_a_given_noise_multiplier_reports_the_epsilon_it_reaches() -> None:
    records = mixture(2000, seed=0)
    calibrated = DPSWFlowR(batch_size=200, passes=5, settings=FAST).fit(records, 3.0, 1e-5)
    z = calibrated.privacy_report.noise_multiplier
    given = DPSWFlowR(batch_size=200, passes=5, settings=FAST).fit(records, None, 1e-5, noise_multiplier=z)
    assert given.privacy_report.noise_multiplier == z
    assert given.privacy_report.epsilon == pytest.approx(calibrated.privacy_report.epsilon, rel=1e-9)
    assert float(given.pool_.noise_std.max()) == pytest.approx(2 * z)  # s = z * Delta, Delta = 2r
    # Twice the noise: a smaller epsilon, computed, not assumed.
    louder = DPSWFlowR(batch_size=200, passes=5, settings=FAST).fit(records, None, 1e-5, noise_multiplier=2 * z)
    assert louder.privacy_report.epsilon < 0.5 * given.privacy_report.epsilon
    for epsilon, multiplier in ((3.0, z), (None, None)):
        with pytest.raises(ValueError, match="exactly one of epsilon"):
            DPSWFlow().fit(records, epsilon, 1e-5, noise_multiplier=multiplier)
    with pytest.raises(ValueError, match="noise_multiplier"):
        DPSWFlow().fit(records, None, 1e-5, noise_multiplier=-1.0)

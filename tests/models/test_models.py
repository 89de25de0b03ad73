"""The three generators: end to end on a mixture target, stored state, epsilon = inf, bad input."""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import pytest
import torch

from synthcity_dpswf.math import EmpiricalTarget, run_flow, sliced_wasserstein
from synthcity_dpswf.models import DPSWFlow, DPSWFlowR, DPSWGen, FlowSettings, SlicedGenerator, release_steps
from synthcity_dpswf.privacy import MECHANISMS, MarginalLayout, bound_records

from conftest import private_rows_found


def mixture(n: int, seed: int, dim: int = 4) -> torch.Tensor:
    """A mixture of 4 Gaussians inside the unit ball (means fixed by a separate seed)."""
    means = 0.6 * torch.nn.functional.normalize(torch.randn(4, dim, generator=torch.Generator().manual_seed(99)), dim=1)
    generator = torch.Generator().manual_seed(seed)
    component = torch.randint(4, (n,), generator=generator)
    return means[component] + 0.1 * torch.randn(n, dim, generator=generator)


FAST = FlowSettings(n_steps=150, flow_batch_size=2000, n_directions=30)
LAYOUT = MarginalLayout.build((5, 40, 3, 8), coarse_bins=16)


def _inputs(release: str, records: torch.Tensor) -> tuple[torch.Tensor, dict[str, MarginalLayout]]:
    """What a release kind is fitted on: the records, or for marginals their level codes in ``LAYOUT``."""
    if release != "marginal":
        return records, {}
    levels = torch.tensor(LAYOUT.levels, dtype=torch.float32)
    return ((records.clamp(-1, 1 - 1e-6) + 1) / 2 * levels).floor(), {"marginals": LAYOUT}
RECORD_FAST = FlowSettings(n_steps=150, step_size=3.0, flow_batch_size=2000, n_directions=30)


def _models() -> list[SlicedGenerator | object]:
    return [
        DPSWFlowR(settings=FAST),
        DPSWFlowR(batch_size=250, passes=10, release="record", settings=RECORD_FAST),
        # The projected release carries about 4x more noise at equal epsilon: it needs a smaller step (flows.md).
        DPSWFlowR(batch_size=250, passes=10, release="projected", settings=FlowSettings(
            n_steps=800, step_size=0.1, flow_batch_size=2000, n_directions=30)),
        DPSWFlow(settings=FAST),
        DPSWFlow(release="record", settings=RECORD_FAST),
        DPSWGen(settings=FlowSettings(n_steps=800, n_directions=30)),
        # The network's training is covered by the row above; the record release by the flows' rows.
        pytest.param(DPSWGen(batch_size=250, passes=10, release="record", settings=FlowSettings(
            n_steps=800, flow_batch_size=1000, n_directions=30)), marks=pytest.mark.slow),
    ]


@pytest.mark.parametrize("model", _models(), ids=lambda m: f"{type(m).__name__}-{m.release}")
def test_generators_improve_on_their_starting_point_at_epsilon_10(model: SlicedGenerator) -> None:
    records, holdout = mixture(5000, seed=0), mixture(2000, seed=1)
    model.fit(records, epsilon=10.0, delta=1e-5)
    assert model.privacy_report.epsilon <= 10.0
    samples = model.sample(2000)
    assert samples.shape == (2000, 4) and bool(torch.isfinite(samples).all())
    if isinstance(model, DPSWGen):
        untrained = DPSWGen(release=model.release, settings=FlowSettings(n_steps=1))
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


@pytest.mark.parametrize("release", sorted(MECHANISMS))
@pytest.mark.parametrize("model_class", [DPSWFlowR, DPSWFlow, DPSWGen])
def test_saved_state_contains_no_private_record(model_class: type[SlicedGenerator], release: str, tmp_path: Path) -> None:
    records, layout = _inputs(release, mixture(400, seed=3))
    private = records if release == "marginal" else bound_records(records)
    kwargs = {"batch_size": 100, "passes": 2, **layout} if model_class is not DPSWFlow else dict(layout)
    settings = FlowSettings(n_steps=5, flow_batch_size=100, n_directions=10)
    model = model_class(release=release, settings=settings, **kwargs)  # type: ignore[arg-type]
    model.fit(records, 10.0, 1e-5)
    model.save(tmp_path / "model.pt")
    state = torch.load(tmp_path / "model.pt", weights_only=False)
    assert private_rows_found(state, private) == 0
    if release == "record":
        # The search finds rows when they are there: without noise the releases are the records themselves.
        leaky = model_class(release=release, settings=settings, **kwargs).fit(records, math.inf, 1e-5)  # type: ignore[arg-type]
        assert private_rows_found(leaky.state_dict(), private) > 0


@pytest.mark.parametrize("release", sorted(MECHANISMS))
@pytest.mark.parametrize("model_class", [DPSWFlowR, DPSWFlow, DPSWGen])
def test_save_and_load_round_trip(model_class: type[SlicedGenerator], release: str, tmp_path: Path) -> None:
    records, layout = _inputs(release, mixture(400, seed=3))
    kwargs = {"batch_size": 100, "passes": 2, **layout} if model_class is not DPSWFlow else dict(layout)
    settings = FlowSettings(n_steps=5, flow_batch_size=100, n_directions=10)
    model = model_class(release=release, settings=settings, **kwargs)  # type: ignore[arg-type]
    model.fit(records, 5.0, 1e-5)
    model.save(tmp_path / "model.pt")
    loaded = model_class.load(tmp_path / "model.pt")
    torch.testing.assert_close(loaded.sample(50, seed=4), model.sample(50, seed=4))
    assert str(loaded.privacy_report) == str(model.privacy_report)


def test_infinite_epsilon_is_the_non_private_engine() -> None:
    records = mixture(1000, seed=5)
    settings = FlowSettings(n_steps=40, flow_batch_size=None, n_directions=20)
    model = DPSWFlow(release="record", settings=settings, seed=11).fit(records, math.inf, 1e-5)
    samples = model.sample(500)
    # The same flow, written with the engine directly on the (bounded) records.
    particles = model.initial_particles(500, torch.Generator().manual_seed(12))
    source = EmpiricalTarget(bound_records(records), 20, 0.0, 1000, None, seed=14)
    expected = run_flow(particles, source, 40, settings.step_size, 0.0, torch.Generator().manual_seed(13))
    torch.testing.assert_close(samples, expected, atol=1e-5, rtol=0)


def test_sampling_settings_are_free_to_change_after_fit() -> None:
    model = DPSWFlowR(batch_size=100, passes=2, release="record", settings=FlowSettings(n_steps=5)).fit(mixture(500, seed=0), 5.0, 1e-5)
    report = str(model.privacy_report)
    assert model.sample(30, n_steps=3, step_size=0.5, smoothing=3.0, flow_batch_size=50).shape == (30, 4)
    assert model.sample(30, reuse="once").shape == (30, 4)
    assert str(model.privacy_report) == report  # generation spends nothing
    with pytest.raises(ValueError, match="below the noise"):
        model.sample(30, smoothing=0.1)


def test_bad_input_fails_early_and_clearly() -> None:
    records = mixture(300, seed=0)
    model = DPSWFlowR(batch_size=100, passes=1, release="record", settings=FlowSettings(n_steps=2))
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
    calibrated = DPSWFlowR(batch_size=200, passes=5, release="record", settings=FAST).fit(records, 3.0, 1e-5)
    z = calibrated.privacy_report.noise_multiplier
    given = DPSWFlowR(batch_size=200, passes=5, release="record", settings=FAST).fit(records, None, 1e-5, noise_multiplier=z)
    assert given.privacy_report.noise_multiplier == z
    assert given.privacy_report.epsilon == pytest.approx(calibrated.privacy_report.epsilon, rel=1e-9)
    assert float(given.pool_.noise_std.max()) == pytest.approx(2 * z)  # s = z * Delta, Delta = 2r
    # Twice the noise: a smaller epsilon, computed, not assumed.
    louder = DPSWFlowR(batch_size=200, passes=5, release="record", settings=FAST).fit(records, None, 1e-5, noise_multiplier=2 * z)
    assert louder.privacy_report.epsilon < 0.5 * given.privacy_report.epsilon
    for epsilon, multiplier in ((3.0, z), (None, None)):
        with pytest.raises(ValueError, match="exactly one of epsilon"):
            DPSWFlow().fit(records, epsilon, 1e-5, noise_multiplier=multiplier)
    with pytest.raises(ValueError, match="noise_multiplier"):
        DPSWFlow().fit(records, None, 1e-5, noise_multiplier=-1.0)


# ---------------------------------------------------------------------------------------------- labels
def labelled_blobs(n: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Three classes in shares 60/30/10%, each a blob around its own mean."""
    generator = torch.Generator().manual_seed(seed)
    labels = torch.cat([torch.zeros(6 * n // 10), torch.ones(3 * n // 10), torch.full((n // 10,), 2)]).long()
    means = torch.tensor([[0.6, 0.0, 0.0], [-0.3, 0.5, 0.0], [0.0, -0.3, -0.5]])
    return means[labels] + 0.05 * torch.randn(len(labels), 3, generator=generator), labels


@pytest.mark.parametrize("model_class", [DPSWFlow, DPSWFlowR, DPSWGen])
def test_every_flow_is_a_generator(model_class: type[SlicedGenerator]) -> None:
    """``models.Generator``, the protocol the benchmarks run every method through: fitted, each flow has it."""
    from synthcity_dpswf.models import Generator

    records, labels = labelled_blobs(300, seed=4)
    model = model_class(n_release_directions=20, settings=FlowSettings(n_steps=5), seed=0)
    fitted = model.fit(records, 5.0, 1e-5, labels=labels, n_classes=3)
    assert fitted is model and isinstance(fitted, Generator)
    samples, sampled_labels = fitted.sample_labelled(30, seed=2)
    assert samples.shape == (30, 3) and sampled_labels.shape == (30,) and set(sampled_labels.tolist()) <= {0, 1, 2}


def _class_means(records: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    return torch.stack([records[labels == label].mean(dim=0) for label in range(3)])


@pytest.mark.parametrize("model_class", [DPSWFlow, DPSWFlowR, DPSWGen])
def test_class_conditional_releases_generate_exact_labels_in_the_released_shares(model_class: type[SlicedGenerator]) -> None:
    records, labels = labelled_blobs(3000, seed=0)
    settings = FlowSettings(n_steps=400 if model_class is DPSWGen else 150, n_directions=20)
    # Per-step releases see batches of n / 10 = 300 records: few directions and coarse bins keep counts above noise.
    small_batches = {} if model_class is DPSWFlow else {"n_release_directions": 10, "n_bins": 8, "passes": 3}
    model = model_class(settings=settings, **small_batches).fit(records, 10.0, 1e-5, labels=labels, n_classes=3)
    assert model.labels_ == "conditional" and model.pool_ is not None and model.pool_.releases.shape[1] == 3
    assert "one release per class" in str(model.privacy_report)
    samples, generated = model.sample_labelled(2000)
    assert samples.shape == (2000, 3) and generated.shape == (2000,)
    # Shares from the released counts: 60/30/10% up to the noise.
    shares = torch.bincount(generated, minlength=3) / 2000
    torch.testing.assert_close(shares, torch.tensor([0.6, 0.3, 0.1]), atol=0.03, rtol=0)
    # Each class went to its own blob: the means are 0.84 or more apart, so an error under 0.3 puts every class
    # nearest its own. Only the one-shot flow is held tighter: the network is trained for few steps, and the
    # per-step flow's 10% class has about 30 records per batch (its error measured 0.08-0.14 over 12 runs).
    error = (_class_means(samples, generated) - _class_means(records, labels)).norm(dim=1)
    assert float(error.max()) < (0.15 if model_class is DPSWFlow else 0.3), error
    with pytest.raises(ValueError, match="sample_labelled"):
        model.sample(10)


def test_at_infinite_epsilon_the_shares_are_the_true_ones_and_save_load_keeps_the_labels(tmp_path: Path) -> None:
    records, labels = labelled_blobs(1000, seed=1)
    model = DPSWFlow(settings=FlowSettings(n_steps=20, n_directions=10)).fit(records, math.inf, 1e-5, labels=labels, n_classes=3)
    _, generated = model.sample_labelled(500)
    assert torch.bincount(generated, minlength=3).tolist() == [300, 150, 50]
    model.save(tmp_path / "model.pt")
    loaded = DPSWFlow.load(tmp_path / "model.pt")
    for expected, got in zip(model.sample_labelled(40, seed=3), loaded.sample_labelled(40, seed=3)):
        torch.testing.assert_close(got, expected)
    # Starting particles with their labels fix the labels (e.g. public records).
    start = records[:12], labels[:12]
    assert loaded.sample_labelled(12, init=start)[1].sort().values.tolist() == labels[:12].sort().values.tolist()


@pytest.mark.parametrize("release", ["record", "projected_histogram"])
def test_joint_labelling_joins_the_label_into_the_record(release: str) -> None:
    records, labels = labelled_blobs(2000, seed=2)
    model = DPSWFlow(release=release, labelling="joint", settings=FlowSettings(n_steps=150, step_size=1.0, n_directions=20))
    model.fit(records, math.inf, 1e-5, labels=labels, n_classes=3)
    assert model.labels_ == "joint" and model.dim == 6  # 3 features and a 3-class label block
    samples, generated = model.sample_labelled(1000)
    assert samples.shape == (1000, 3) and set(generated.tolist()) <= {0, 1, 2}
    # Kinds without class-conditional releases join the label whatever labelling says.
    assert DPSWFlow(release="record").fit(records, 5.0, 1e-5, labels=labels, n_classes=3).labels_ == "joint"


def test_labels_are_checked_against_the_public_class_count_before_any_release() -> None:
    records, labels = labelled_blobs(300, seed=3)
    model = DPSWFlow(settings=FlowSettings(n_steps=2))
    with pytest.raises(ValueError, match="pass n_classes"):
        model.fit(records, 1.0, 1e-5, labels=labels)
    with pytest.raises(ValueError, match="without labels"):
        model.fit(records, 1.0, 1e-5, n_classes=3)
    with pytest.raises(ValueError, match="must lie in 0..1"):
        model.fit(records, 1.0, 1e-5, labels=labels, n_classes=2)
    with pytest.raises(ValueError, match="integer tensor"):
        model.fit(records, 1.0, 1e-5, labels=labels.float(), n_classes=3)
    with pytest.raises(ValueError, match="labelling must be"):
        DPSWFlow(labelling="both")  # type: ignore[arg-type]
    model.fit(records, 1.0, 1e-5)
    with pytest.raises(ValueError, match="without labels"):
        model.sample_labelled(5)

"""The release-kind registry (privacy.md): every kind's sensitivity is a bound that adversarial pairs attain,
its noise is z * Delta, and the canary audit catches a release with half the noise it claims."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from synthcity_dpswf.models import DPSWFlowR, FlowSettings
from synthcity_dpswf.privacy import (
    MECHANISMS,
    PrivacyAuditError,
    MarginalLayout,
    ReleaseAccountant,
    ReleaseOptions,
    audit_gaussian_scores,
    audit_scores,
    create_mechanism,
    histogram_sensitivity,
    secret_generator,
)
from synthcity_dpswf.privacy.mechanisms import ProjectedHistogramRelease, register_mechanism

DIM = 3
LAYOUT = MarginalLayout.build((3, 40, 2), coarse_bins=16)  # the marginal kind's public tables: m = 3 + 3 pairs


def _options(kind: str, **options: object) -> ReleaseOptions:
    return ReleaseOptions(**options, layout=LAYOUT if kind == "marginal" else None)  # type: ignore[arg-type]


def _random_records(kind: str, count: int, generator: torch.Generator) -> torch.Tensor:
    """Records a kind reads: points of the unit sphere, or level codes of the test layout (marginals)."""
    if kind == "marginal":
        return torch.stack([torch.randint(k, (count,), generator=generator) for k in LAYOUT.levels], dim=1).float()
    return torch.nn.functional.normalize(torch.randn(count, DIM, generator=generator), dim=1)


def _worst_pair(kind: str, directions: torch.Tensor | None, radius: float = 1.0) -> tuple[torch.Tensor, torch.Tensor]:
    """Two records whose statistics differ by exactly the kind's sensitivity."""
    if kind == "marginal":  # different in every column's coarse level: a different cell in every table
        return torch.zeros(1, DIM), torch.tensor([[k - 1 for k in LAYOUT.levels]], dtype=torch.float32)
    if kind == "projected":
        assert directions is not None
        top = torch.linalg.svd(directions.double()).U[:, 0].float()
        return radius * top[None], -radius * top[None]
    # Record: y' = -y. Histograms: with an even number of bins, p and -p never share a bin.
    y = torch.nn.functional.normalize(torch.tensor([[0.3, -0.5, 0.8]]), dim=1) * radius
    return y, -y


def _probe_record(kind: str) -> torch.Tensor:
    """One record of the kind's input space (its value does not change the calibration)."""
    return torch.zeros(1, DIM)


def _statistic_gap(mechanism, first: torch.Tensor, second: torch.Tensor, directions, labels=(None, None), n_classes=1) -> float:
    return float((mechanism.statistic(first, directions, labels[0], n_classes)
                  - mechanism.statistic(second, directions, labels[1], n_classes)).double().norm())


@pytest.mark.parametrize("kind", sorted(MECHANISMS))
def test_every_release_kind_bounds_random_pairs_and_attains_its_sensitivity(kind: str) -> None:
    mechanism = create_mechanism(kind, _options(kind, radius=1.0, n_release_directions=40, n_bins=16))
    generator = torch.Generator().manual_seed(0)
    directions = mechanism.draw_directions(DIM, generator)
    sensitivity = mechanism.sensitivity(directions)
    records = _random_records(kind, 400, generator)
    for first, second in zip(records[:200], records[200:]):
        assert _statistic_gap(mechanism, first[None], second[None], directions) <= sensitivity * (1 + 1e-6)
    worst = _worst_pair(kind, directions)
    assert _statistic_gap(mechanism, *worst, directions) == pytest.approx(sensitivity, rel=1e-5)


def test_histogram_sensitivity_is_sqrt_2l_and_classes_cost_nothing_more() -> None:
    mechanism = ProjectedHistogramRelease(ReleaseOptions(radius=1.0, n_release_directions=25, n_bins=8))
    directions = mechanism.draw_directions(DIM, torch.Generator().manual_seed(1))
    assert mechanism.sensitivity(directions) == histogram_sensitivity(25) == math.sqrt(50)
    same = torch.tensor([[0.2, 0.1, -0.4]])
    # The same features in another class: one -1 and one +1 per direction, in two class blocks.
    labels = (torch.tensor([0]), torch.tensor([2]))
    assert _statistic_gap(mechanism, same, same, directions, labels, n_classes=3) == pytest.approx(math.sqrt(50))
    # The same record in the same class: nothing changes.
    assert _statistic_gap(mechanism, same, same, directions, (labels[0], labels[0]), n_classes=3) == 0
    # A batch: each record adds exactly one count per direction, in its class.
    batch = torch.nn.functional.normalize(torch.randn(60, DIM, generator=torch.Generator().manual_seed(2)), dim=1)
    classes = torch.arange(60) % 3
    counts = mechanism.statistic(batch, directions, classes, n_classes=3)
    assert counts.shape == (3, 25, 8)
    torch.testing.assert_close(counts.sum(dim=-1), torch.full((3, 25), 20.0, dtype=torch.float64))
    with pytest.raises(ValueError, match="labels must be one integer"):
        mechanism.statistic(batch, directions, classes, n_classes=2)


def test_kinds_without_classes_refuse_labels_and_the_registry_refuses_a_clash() -> None:
    record = create_mechanism("record")
    with pytest.raises(ValueError, match="takes no labels"):
        record.release(torch.zeros(2, 3), None, 1.0, torch.Generator(), labels=torch.zeros(2, dtype=torch.long), n_classes=2)

    class Impostor(ProjectedHistogramRelease):
        name = "record"

    with pytest.raises(ValueError, match="already registered"):
        register_mechanism(Impostor)
    with pytest.raises(ValueError, match="release must be one of"):
        create_mechanism("histogram")


def test_per_step_histogram_releases_carry_z_sqrt_2m_and_are_accounted_with_q_and_k() -> None:
    records = torch.nn.functional.normalize(torch.randn(1000, DIM, generator=torch.Generator().manual_seed(3)), dim=1)
    model = DPSWFlowR(batch_size=100, passes=2, n_release_directions=12, n_bins=8, settings=FlowSettings(n_steps=2))
    model.fit(records, 3.0, 1e-5)
    report, pool = model.privacy_report, model.pool_
    assert pool is not None and pool.releases.shape == (20, 1, 12, 8)
    assert report.steps == 20 and report.sample_rate == pytest.approx(0.1)
    assert report.sensitivity == pytest.approx(math.sqrt(24))
    torch.testing.assert_close(pool.noise_std, torch.full((20,), report.noise_multiplier * math.sqrt(24), dtype=torch.float64))
    # Histograms are sums whose contributions can form an equilateral triangle: Opacus' pair is not proven for
    # them, so the replace-one RDP bound (WBK 2019, a Gaussian base mechanism) is the reported accountant.
    assert report.accountant.startswith("dp-accounting RDP, replace-one") and 2.97 <= report.epsilon <= 3.0
    assert report.conservative_epsilon <= report.epsilon  # the same bound, on all orders rather than those up to 128
    # Each release counts exactly b records per direction (up to its noise).
    totals = pool.releases.sum(dim=-1).mean(dim=(1, 2))
    assert float((totals - 100).abs().max()) < 6 * pool.noise_std[0] * math.sqrt(8 / 12)


# ---------------------------------------------------------------------------------------------- audit
# The release itself is audited: ``mechanism.release`` on D = {c} and D' = {c'} (the kind's worst pair, fixed
# public directions), each run one noise draw, scored with the likelihood ratio's statistic <R, S(c) - S(c')>
# (Gaussian, one variance, shifted by exactly 1/z standard deviations). Kinds whose rows are independent releases
# of one record (record, projected) are drawn as many rows at once, the class-conditional histograms as one
# class per run; marginals run one release per run. Noise and multiplier are the calibrated one-shot ones.
AUDIT_EPSILON, AUDIT_DELTA = 2.0, 1e-5
AUDIT_CONFIDENCE = 0.999  # a sound release fails with probability <= 0.1%
AUDIT_RUNS = {"record": 20000, "projected": 20000, "projected_histogram": 20000, "marginal": 800}  # per side
MUTATIONS = ("sound", "noise halved", "sensitivity halved")
pytestmark = pytest.mark.filterwarnings("ignore:release noise seeded with a known seed")


def _mutate(mutation: str, kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Install a factor-2 bug: the noise draw at half its std, or the kind's sensitivity at half its value."""
    if mutation == "noise halved":
        from synthcity_dpswf.privacy.mechanisms import base
        from synthcity_dpswf.privacy.mechanisms.base import gaussian_noise

        monkeypatch.setattr(base, "gaussian_noise", lambda shape, std, generator, like: gaussian_noise(shape, std / 2, generator, like))
    elif mutation == "sensitivity halved":
        sensitivity = MECHANISMS[kind].sensitivity
        monkeypatch.setattr(MECHANISMS[kind], "sensitivity", lambda self, directions: sensitivity(self, directions) / 2)


def one_shot_scores(kind: str, runs: int, secret: torch.Generator) -> tuple[np.ndarray, np.ndarray, float]:
    """Scores <R, S(c) - S(c')> of ``runs`` one-shot releases on D = {c} and on D' = {c'}, and the claimed epsilon
    (the analytic Gaussian at the multiplier calibrated to AUDIT_EPSILON, as a one-shot model reports it)."""
    accountant = ReleaseAccountant(1, 1)
    z = accountant.calibrate(AUDIT_EPSILON, AUDIT_DELTA, 1)
    mechanism = create_mechanism(kind, _options(kind, n_release_directions=6, n_bins=4))
    directions = mechanism.draw_directions(DIM, torch.Generator().manual_seed(0))
    canary, replacement = _worst_pair(kind, directions)
    gap = (mechanism.statistic(canary, directions) - mechanism.statistic(replacement, directions)).double().reshape(-1)
    scores = []
    for record in (canary, replacement):
        if kind in ("record", "projected"):  # rows are independent releases of one record each
            values = mechanism.release(record.expand(runs, -1), directions, z, secret).values.reshape(runs, -1)
        elif kind == "projected_histogram":  # one class per run: independent blocks, the same noise std
            classes = torch.arange(runs)
            values = mechanism.release(record.expand(runs, -1), directions, z, secret, classes, runs).values.reshape(runs, -1)
        else:
            values = torch.stack([mechanism.release(record, directions, z, secret).values.reshape(-1) for _ in range(runs)])
        scores.append((values.double() @ gap).numpy())
    return scores[0], scores[1], accountant.epsilon(z, AUDIT_DELTA, 1).epsilon


@pytest.mark.parametrize("mutation", MUTATIONS)
@pytest.mark.parametrize("kind", sorted(MECHANISMS))
def test_gaussian_audit_of_every_kind_passes_the_release_and_fails_factor_2_bugs(
    kind: str, mutation: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _mutate(mutation, kind, monkeypatch)
    scores_in, scores_out, claimed = one_shot_scores(kind, AUDIT_RUNS[kind], secret_generator(17))
    assert claimed == pytest.approx(AUDIT_EPSILON)
    if mutation != "sound":
        with pytest.raises(PrivacyAuditError, match="PRIVACY AUDIT FAILED"):
            audit_gaussian_scores(scores_in, scores_out, AUDIT_DELTA, claimed, AUDIT_CONFIDENCE)
        return
    result = audit_gaussian_scores(scores_in, scores_out, AUDIT_DELTA, claimed, AUDIT_CONFIDENCE)
    # The worst pair separates the scores by exactly 1/z standard deviations, and the bound is close to the claim.
    z = ReleaseAccountant(1, 1).calibrate(AUDIT_EPSILON, AUDIT_DELTA, 1)
    assert result.mu_estimate == pytest.approx(1 / z, abs=0.15 if kind == "marginal" else 0.04)
    assert (0.5 if kind == "marginal" else 0.85) * claimed < result.epsilon_lower_bound < claimed


def test_both_audits_fail_loudly_when_the_histogram_noise_is_switched_off(monkeypatch: pytest.MonkeyPatch) -> None:
    from synthcity_dpswf.privacy.mechanisms import base
    from synthcity_dpswf.privacy.mechanisms.base import gaussian_noise

    monkeypatch.setattr(base, "gaussian_noise", lambda shape, std, generator, like: gaussian_noise(shape, 0.0, generator, like))
    scores_in, scores_out, claimed = one_shot_scores("projected_histogram", 200, secret_generator(17))
    with pytest.raises(PrivacyAuditError, match="PRIVACY AUDIT FAILED"):
        audit_scores(scores_in, scores_out, AUDIT_DELTA, claimed_epsilon=claimed)
    with pytest.raises(PrivacyAuditError, match="carries no noise"):
        audit_gaussian_scores(scores_in, scores_out, AUDIT_DELTA, claimed_epsilon=claimed)

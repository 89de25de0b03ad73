"""privacy.md, "Poisson batches under replace-one": the antipodal pair dominates every pair of equal-norm contributions
(the lemma, checked by integration), the accountant reports at least what a realised pair of neighbours proves (and a
factor-2 mistake falls below that), the generators draw Poisson batches and report them, and the per-step releases
pass the audit and fail their factor-2 mutants."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from dp_accounting import NeighboringRelation
from dp_accounting.pld import privacy_loss_distribution

from synthcity_dpswf.models import DPSWFlowR, releasing
from synthcity_dpswf.models.state import ReleaseSchedule
from synthcity_dpswf.privacy import (
    MECHANISMS,
    REPLACE_ONE_PLD,
    MarginalLayout,
    PrivacyAuditError,
    ReleaseAccountant,
    analytic_gaussian_epsilon,
    poisson_batch,
    secret_generator,
)
from synthcity_dpswf.privacy.audit import audit_gaussian_scores
from synthcity_dpswf.privacy.gaussian import Prior, SampledGaussian
from synthcity_dpswf.privacy.mechanisms import base

DELTA, CONFIDENCE, SEED = 1e-5, 0.999, 23
ONE_HOT = 1 / math.sqrt(2.0)
"""C / Delta_RO of the one-hot sum kinds: the antipodal pair's radius in the multiplier's units."""
pytestmark = pytest.mark.filterwarnings("ignore:release noise seeded with a known seed")


# ------------------------------------------------------------------------------------------- the lemma
def hockey_stick(first: np.ndarray, second: np.ndarray, gamma: float, cell: float) -> float:
    """H_gamma(P || Q) = integral of (p - gamma q)_+ from densities on a uniform grid of cell area ``cell``."""
    return float(np.clip(first - gamma * second, 0.0, None).sum() * cell)


def mixture(points: np.ndarray, mean: np.ndarray, q: float) -> np.ndarray:
    """The density of (1 - q) N(0, I) + q N(mean, I) at ``points`` ``(..., 2)``."""
    def normal(centre: np.ndarray) -> np.ndarray:
        return np.exp(-0.5 * ((points - centre) ** 2).sum(axis=-1)) / (2 * math.pi)
    return (1 - q) * normal(np.zeros(2)) + q * normal(mean)


@pytest.mark.parametrize("norm", [0.3, 2.5])
@pytest.mark.parametrize("q", [0.05, 0.5])
def test_the_antipodal_pair_dominates_every_pair_of_equal_norm_contributions(norm: float, q: float) -> None:
    """(P_a, P_b), ||a|| = ||b||, at angles from 0 to 180 degrees, against (P_a, P_{-a}) on the same 2-D grid, at
    gammas below and above 1: never above it beyond the grid's error (the lemma), and (P_a, P_{-a}) is the 1-D
    antipodal pair."""
    axis = np.linspace(-9.0, 9.0, 601)
    cell = float(axis[1] - axis[0]) ** 2
    points = np.stack(np.meshgrid(axis, axis, indexing="ij"), axis=-1)
    a = np.array([norm, 0.0])
    first = mixture(points, a, q)
    antipodal = mixture(points, -a, q)
    for gamma in (0.5, 1.0, math.exp(0.5), math.exp(2.0), math.exp(5.0)):
        bound = hockey_stick(first, antipodal, gamma, cell)
        line = np.linspace(-12.0, 12.0, 48001)
        normal = lambda centre: np.exp(-0.5 * (line - centre) ** 2) / math.sqrt(2 * math.pi)  # noqa: E731
        one_d = hockey_stick((1 - q) * normal(0) + q * normal(norm), (1 - q) * normal(0) + q * normal(-norm), gamma,
                             float(line[1] - line[0]))
        assert bound == pytest.approx(one_d, rel=2e-3)  # the 2-D grid's error
        for angle in np.linspace(0.0, math.pi, 9):
            b = norm * np.array([math.cos(angle), math.sin(angle)])
            assert hockey_stick(first, mixture(points, b, q), gamma, cell) <= bound * (1 + 2e-3), (gamma, angle)


# ------------------------------------------------------------------------------------------- the accountant
def pld_epsilon(noise_multiplier: float, radius: float, q: float, steps: int, relation: NeighboringRelation,
                pessimistic: bool) -> float:
    loss = privacy_loss_distribution.from_gaussian_mechanism(
        noise_multiplier, sensitivity=radius, sampling_prob=q, neighboring_relation=relation,
        pessimistic_estimate=pessimistic, use_connect_dots=pessimistic, value_discretization_interval=1e-4)
    return float(loss.self_compose(steps).get_epsilon_for_delta(DELTA))


@pytest.mark.parametrize("q, steps, epsilon", [(0.1, 100, 1.0), (0.25, 40, 4.0)])
def test_the_accountant_meets_its_target_and_respects_a_realised_pairs_lower_bound(
    q: float, steps: int, epsilon: float
) -> None:
    """A realised pair (privacy.md: D = {x, w}, D' = {x', w}, pairwise orthogonal one-hot contributions) projected on
    f(x) - f(x') is the antipodal pair at radius C / sqrt(2), a lower bound (optimistic rounding) the reported epsilon
    must respect; the pair at half the radius (a replacement's move taken at half its size, a factor-2 mistake in the
    sensitivity) falls below it."""
    accountant = ReleaseAccountant.poisson(q, REPLACE_ONE_PLD, n_records=10_000, contribution_norm=ONE_HOT)
    z = accountant.calibrate(epsilon, DELTA, steps)
    claimed = accountant.epsilon(z, DELTA, steps).epsilon
    assert 0.98 * epsilon <= claimed <= epsilon
    lower = pld_epsilon(z, ONE_HOT / math.sqrt(2.0), q, steps, NeighboringRelation.REPLACE_ONE, pessimistic=False)
    assert lower <= claimed
    assert pld_epsilon(z, ONE_HOT / 2, q, steps, NeighboringRelation.REPLACE_ONE, pessimistic=True) < lower
    # A one-shot prior (a DP domain) joins the composition: more epsilon at the same z, and calibration leaves room.
    with_prior = ReleaseAccountant.poisson(q, REPLACE_ONE_PLD, 3 * z + 8, n_records=10_000, contribution_norm=ONE_HOT)
    assert with_prior.epsilon(z, DELTA, steps).epsilon > claimed
    assert with_prior.epsilon(with_prior.calibrate(epsilon, DELTA, steps), DELTA, steps).epsilon <= epsilon


def test_the_accountant_accounts_its_own_sampling_only() -> None:
    with pytest.raises(ValueError, match="accounts Poisson batches and releases of all records only"):
        ReleaseAccountant(1000, 100, REPLACE_ONE_PLD)
    with pytest.raises(ValueError, match="not proven for Poisson sampling under add/remove"):
        ReleaseAccountant.poisson(0.1, REPLACE_ONE_PLD)
    with pytest.raises(ValueError, match="not proven for Poisson sampling under replace-one"):
        ReleaseAccountant.poisson(0.1, "rdp", n_records=1000, contribution_norm=ONE_HOT)
    with pytest.raises(ValueError, match="needs contribution_norm"):
        ReleaseAccountant.poisson(0.1, REPLACE_ONE_PLD, n_records=1000)
    codec = Prior(None, (SampledGaussian(1.5, 0.25, 30, 100, 25),))  # a replace-one DP-SGD codec's schedule
    with pytest.raises(ValueError, match="composes no schedule of fixed-size batches"):
        ReleaseAccountant.poisson(0.1, REPLACE_ONE_PLD, codec, n_records=1000, contribution_norm=ONE_HOT)
    for name, kind in MECHANISMS.items():  # the radius every kind states is its own C / Delta_RO, or none
        assert kind.replace_one_contribution_norm == (ONE_HOT if kind.sums_contributions else None), name


# ------------------------------------------------------------------------------------------- the generators
LAYOUT = MarginalLayout.build((4, 4), coarse_bins=4)


@pytest.mark.parametrize("mutation", ["sound", "radius halved"])
def test_the_reported_epsilon_is_the_pair_of_the_realised_noise_and_contributions(
    mutation: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The report's epsilon recomputed from what the fit released, not from the accountant's inputs: the noise std
    stored with the releases and the norm of one record's counts. The realised pair of two records in different cells
    of every table (projected on their difference: the antipodal pair at radius ||f(c) - f(c')|| / 2) bounds it from
    below; an accountant that took the radius at half its value falls below that bound."""
    if mutation == "radius halved":
        monkeypatch.setattr(MECHANISMS["marginal"], "replace_one_contribution_norm", ONE_HOT / 2)
    records = torch.randint(0, 4, (400, 2)).float()
    model = DPSWFlowR(release="marginal", marginals=LAYOUT, sample_rate=0.25, release_steps=12).fit(records, 2.0, DELTA)
    report, std = model.privacy_report, float(model.pool_.noise_std[0])
    norm = float(model.mechanism.statistic(torch.zeros(1, 2), None).norm())
    gap = float((model.mechanism.statistic(torch.zeros(1, 2), None)
                 - model.mechanism.statistic(torch.full((1, 2), 3.0), None)).norm())
    lower = pld_epsilon(std, gap / 2, 0.25, 12, NeighboringRelation.REPLACE_ONE, pessimistic=False)
    if mutation == "radius halved":
        assert report.epsilon < lower
        return
    assert report.epsilon == pytest.approx(pld_epsilon(std, norm, 0.25, 12, NeighboringRelation.REPLACE_ONE, True), rel=1e-9)
    assert lower <= report.epsilon <= 2.0


def test_histograms_and_marginals_draw_poisson_batches_by_default_where_the_rate_is_below_one() -> None:
    """The default's choice (``models.state.ReleaseSchedule.accountant``): Poisson batches at q = b(n) / n and K =
    ceil(10 n / b) for n = 3,000 (b = 1,000); every record at every step for n = 500 (q = 1, exact with fixed
    batches); fixed-size batches after a sampled prior (a replace-one DP-SGD codec's schedule), and for kinds that are
    not sums."""
    schedule = DPSWFlowR(release="marginal", marginals=LAYOUT).schedule
    accountant, steps = schedule.accountant(3000, "replace_one", "rdp", "marginal")
    assert accountant.accountant == REPLACE_ONE_PLD and accountant.sample_rate == pytest.approx(1 / 3) and steps == 30
    accountant, steps = schedule.accountant(500, "replace_one", "rdp", "marginal")
    assert accountant.batch_size == 500 and steps == 10 and not accountant.sampling.poisson
    codec = Prior(None, (SampledGaussian(1.5, 0.25, 30, 3000, 750),))
    accountant, _ = schedule.accountant(3000, "replace_one", "rdp", "projected_histogram", codec)
    assert accountant.batch_size == 1000 and accountant.accountant == "replace_one_rdp"
    accountant, _ = schedule.accountant(3000, "replace_one", "rdp", "record")
    assert accountant.batch_size == 1000 and accountant.accountant == "rdp"
    with pytest.raises(ValueError, match="composes no schedule of fixed-size batches"):
        DPSWFlowR(sample_rate=0.2).schedule.accountant(3000, "replace_one", "rdp", "projected_histogram", codec)
    # after a codec trained on Poisson batches (the DP-SGD codec's default): Poisson batches or all records, composed
    # by the antipodal pair; a fixed-size batch of fewer records is refused
    poisson_codec = Prior(None, (SampledGaussian(1.5, 0.25, 30, 3000, contribution_norm=0.5),))
    accountant, steps = schedule.accountant(3000, "replace_one", "rdp", "projected_histogram", poisson_codec)
    assert accountant.accountant == REPLACE_ONE_PLD and accountant.sampling.poisson and steps == 30
    accountant, steps = ReleaseSchedule().accountant(3000, "replace_one", "rdp", "projected_histogram", poisson_codec)
    assert accountant.accountant == REPLACE_ONE_PLD and accountant.batch_size == 3000 and steps == 1
    with pytest.raises(ValueError, match="replace_one_sampling=.fixed."):
        schedule.accountant(3000, "replace_one", "rdp", "record", poisson_codec)


def test_a_replace_one_fit_with_a_sample_rate_draws_poisson_batches_and_reports_them(monkeypatch: pytest.MonkeyPatch) -> None:
    rates: list[float] = []
    monkeypatch.setattr(releasing, "poisson_batch", lambda n, q, generator: rates.append(q) or poisson_batch(n, q, generator))
    monkeypatch.setattr(releasing, "sample_batch", lambda *args: pytest.fail("a fixed-size batch was drawn"))
    records = torch.randint(0, 4, (400, 2)).float()
    model = DPSWFlowR(release="marginal", marginals=LAYOUT, sample_rate=0.25, release_steps=12).fit(records, 2.0, DELTA)
    report = model.privacy_report
    assert rates == [0.25] * 12 and report.steps == 12 and report.sample_rate == 0.25
    assert report.neighbouring.startswith("replace-one") and "antipodal" in report.accountant
    assert report.sampling.startswith("Poisson") and report.conservative_epsilon is None
    assert 1.96 <= report.epsilon <= 2.0 and any("n = 400" in line for line in report.public)
    assert report.other.epsilon is not None and report.other.epsilon > 0  # the add/remove statement, Opacus' pair
    expected = report.noise_multiplier * MECHANISMS["marginal"](model.mechanism.options).sensitivity(None)
    assert torch.allclose(model.pool_.noise_std, torch.full((12,), expected, dtype=torch.float64))
    monkeypatch.undo()
    histogram = DPSWFlowR(sample_rate=0.25, release_steps=6, n_release_directions=8).fit(torch.randn(300, 3), 2.0, DELTA)
    assert "antipodal" in histogram.privacy_report.accountant and histogram.privacy_report.epsilon <= 2.0


# ------------------------------------------------------------------------------------------- the audit
# The marginal kind through DPSWFlowR.fit: n = 4 level-coded records, q = 1/4, K = 16. D holds the canary c = (0, 0) at
# position 0, D' its replacement c' = (3, 3) there, and both hold w = (1, 1) at the other positions: c, c' and w fall
# in different cells of every table, so w's counts are orthogonal to g = f(c) - f(c') and the score <R_k, g> / (||g|| s)
# is N(+-1 / (2z), 1) on the steps whose batch held position 0 (read from the sampler), N(0, 1) on the others. The
# steps that held it are audited as a Gaussian release of separation ||g|| / s = 1 / z against the accountant's base,
# the antipodal pair at q = 1, whose separation 2 C / s = sqrt(2) / z is epsilon_AG(z / sqrt(2)).
AUDIT_RECORDS, AUDIT_STEPS, AUDIT_EPSILON, AUDIT_RUNS = 4, 16, 6.0, 120


def audit_scores(canary: torch.Tensor) -> tuple[np.ndarray, float]:
    """The scores of the steps whose batch held position 0, over AUDIT_RUNS fits with ``canary`` there, and z."""
    records = torch.cat([canary, torch.ones(AUDIT_RECORDS - 1, 2)])
    held: list[bool] = []
    sampler = releasing.poisson_batch

    def recording(n_records: int, rate: float, generator: torch.Generator) -> torch.Tensor:
        batch = sampler(n_records, rate, generator)
        held.append(bool((batch == 0).any()))
        return batch

    releasing.poisson_batch = recording
    try:
        models = [DPSWFlowR(release="marginal", marginals=LAYOUT, sample_rate=1 / AUDIT_RECORDS, release_steps=AUDIT_STEPS)
                  .fit(records, AUDIT_EPSILON, DELTA) for _ in range(AUDIT_RUNS)]
    finally:
        releasing.poisson_batch = sampler
    mechanism = models[0].mechanism
    gap = (mechanism.statistic(torch.zeros(1, 2), None) - mechanism.statistic(torch.full((1, 2), 3.0), None)).double()
    unit = gap.reshape(-1) / gap.norm()
    values = torch.stack([model.pool_.releases.double().reshape(AUDIT_STEPS, -1) for model in models])
    stds = torch.stack([model.pool_.noise_std for model in models])
    scores = ((values * unit).sum(dim=-1) / stds).numpy().reshape(-1)
    return scores[np.array(held)], models[0].privacy_report.noise_multiplier


@pytest.mark.parametrize("mutation", ["sound", "noise halved", "sensitivity halved"])
def test_poisson_replace_one_releases_pass_the_audit_and_fail_factor_2_mutants(
    mutation: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if mutation == "noise halved":
        noise = base.gaussian_noise
        monkeypatch.setattr(base, "gaussian_noise", lambda shape, std, generator, like: noise(shape, std / 2, generator, like))
    elif mutation == "sensitivity halved":
        sensitivity = MECHANISMS["marginal"].sensitivity
        monkeypatch.setattr(MECHANISMS["marginal"], "sensitivity", lambda self, directions: sensitivity(self, directions) / 2)
    shared = secret_generator(SEED)  # one secret stream for every fit, seeded for reproducibility
    monkeypatch.setattr(releasing, "secret_generator", lambda seed=None: shared)
    held_in, z = audit_scores(torch.zeros(1, 2))
    held_out, _ = audit_scores(torch.full((1, 2), 3.0))
    claimed_step = analytic_gaussian_epsilon(z / math.sqrt(2.0), DELTA)
    audit = lambda: audit_gaussian_scores(held_in, held_out, DELTA, claimed_step, CONFIDENCE)  # noqa: E731
    if mutation != "sound":
        with pytest.raises(PrivacyAuditError, match="PRIVACY AUDIT FAILED"):
            audit()
        return
    result = audit()
    assert 0.25 * claimed_step < result.epsilon_lower_bound < claimed_step

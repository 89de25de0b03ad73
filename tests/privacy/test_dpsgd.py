"""privacy.md, "A private image codec trained by DP-SGD": the clipping bound and both sensitivities of the clipped
gradient sum (attained by a canary pair), the schedule's batches, the accountant's epsilon with the codec's entry
recomputed with dp-accounting and Opacus directly (and the priors it refuses), a white-box audit of the releases of
``train_dpsgd`` with a canary that passes the implementation and fails its mutants (noise halved, clipping off, one
step left out of the accounting), and the codec end to end, directly and through the registry. Every audit holds at
99.9% confidence, and its own randomness is seeded."""

from __future__ import annotations

import copy
import dataclasses
import math
from pathlib import Path

import dp_accounting
from dp_accounting.pld import privacy_loss_distribution
import numpy as np
import pytest
import torch
from opacus.accountants import RDPAccountant
from torch import nn

from synthcity_dpswf import extensions
from synthcity_dpswf.adapters import private_autoencoder
from synthcity_dpswf.adapters.image_codecs import AutoencoderRequest, CodecRequest
from synthcity_dpswf.adapters.private_autoencoder import DECODE_TEMPERATURE, PrivateAutoencoderCodec, PrivateAutoencoderSettings
from synthcity_dpswf.models import releasing
from synthcity_dpswf.models.state import ReleaseSchedule
from synthcity_dpswf.privacy import PrivacyAuditError, analytic_gaussian_epsilon, dpsgd
from synthcity_dpswf.privacy.accountant import (
    REPLACE_ONE_ORDERS,
    REPLACE_ONE_PLD,
    REPLACE_ONE_RDP,
    RDP_ORDERS,
    ReleaseAccountant,
)
from synthcity_dpswf.privacy.audit import ScheduleAuditResult, audit_gaussian_scores, audit_sampled_schedule
from synthcity_dpswf.privacy.budget import Budget
from synthcity_dpswf.privacy.gaussian import Prior, SampledGaussian
from synthcity_dpswf.privacy.dpsgd import (
    DPSGDSchedule,
    clip_rows,
    clipped_sum_sensitivity,
    noisy_clipped_sum,
    train_dpsgd,
)

DELTA, CONFIDENCE, SEED = 1e-5, 0.999, 17
ROUNDING = 4 * torch.finfo(torch.float64).eps
"""Relative slack of a float64 norm: ``g * (C / ||g||)`` is C up to an ulp or two, never more."""


# ------------------------------------------------------------------------------------ clipping and sensitivity
def test_clipped_rows_never_exceed_the_clip_norm_and_short_rows_pass_unchanged() -> None:
    generator = torch.Generator().manual_seed(SEED)
    for dtype in (torch.float32, torch.float64):
        directions = torch.randn(3000, 9, generator=generator, dtype=dtype)
        scales = torch.tensor([1e-30, 1e-6, 0.3, 1.0, 7.0, 1e6, 1e30], dtype=dtype).repeat(500)[:3000, None]
        gradients = directions * scales
        for clip in (0.1, 1.0, 4.0):
            clipped = clip_rows(gradients, clip)
            norms = clipped.norm(dim=1)
            assert clipped.dtype == torch.float64
            assert float(norms.max()) <= clip  # clipped at C (1 - 1e-12): rounding stays within C
            long = gradients.to(torch.float64).norm(dim=1) > clip * (1 - 1e-12)
            assert torch.allclose(norms[long], torch.full_like(norms[long], clip), rtol=1e-11, atol=0.0)
            assert torch.equal(clipped[~long], gradients[~long].to(torch.float64))  # no shrinking below C
            cosines = (clipped[long] * gradients[long].to(torch.float64)).sum(dim=1) / (
                norms[long] * gradients[long].to(torch.float64).norm(dim=1))
            assert torch.allclose(cosines, torch.ones_like(cosines), rtol=1e-12, atol=0.0)  # directions kept


def test_the_sensitivities_are_two_c_and_c_and_opposite_gradients_attain_them() -> None:
    clip = 1.5
    assert clipped_sum_sensitivity(clip, "replace_one") == 2 * clip
    assert clipped_sum_sensitivity(clip, "add_remove") == clip
    generator = torch.Generator().manual_seed(SEED)
    others = torch.randn(7, 12, generator=generator) * 3
    for length in (clip, 2.0, 1e3, 1e30):  # every gradient of norm >= C attains the bound
        direction = torch.randn(12, generator=generator, dtype=torch.float64)
        gradient = (direction / direction.norm() * length).to(torch.float32)[None]
        _, with_g = noisy_clipped_sum(torch.cat([others, gradient]), clip, 1.0, generator)
        _, with_minus_g = noisy_clipped_sum(torch.cat([others, -gradient]), clip, 1.0, generator)
        _, without = noisy_clipped_sum(others, clip, 1.0, generator)
        assert float((with_g - with_minus_g).norm()) == pytest.approx(clipped_sum_sensitivity(clip, "replace_one"), rel=1e-6)
        assert float((with_g - without).norm()) == pytest.approx(clipped_sum_sensitivity(clip, "add_remove"), rel=1e-6)
    for _ in range(300):  # and no pair of records exceeds it
        first, second = torch.randn(2, 1, 12, generator=generator, dtype=torch.float64) * torch.rand(
            2, 1, 1, generator=generator, dtype=torch.float64) * 5
        _, with_first = noisy_clipped_sum(torch.cat([others.double(), first]), clip, 1.0, generator)
        _, with_second = noisy_clipped_sum(torch.cat([others.double(), second]), clip, 1.0, generator)
        _, without = noisy_clipped_sum(others.double(), clip, 1.0, generator)
        assert float((with_first - with_second).norm()) <= 2 * clip * (1 + 1e-12)
        assert float((with_first - without).norm()) <= clip * (1 + 1e-12)


def test_the_release_adds_noise_of_std_z_times_the_sensitivity() -> None:
    replace_one = DPSGDSchedule("replace_one", 3, 0.5, 1.3, 4, n_records=10)
    add_remove = DPSGDSchedule("add_remove", 3, 0.5, 1.3, 4, sample_rate=0.4)
    assert replace_one.noise_std == pytest.approx(1.3 * 2 * 0.5) and add_remove.noise_std == pytest.approx(1.3 * 0.5)
    gradients = torch.randn(6, 20000, generator=torch.Generator().manual_seed(SEED)) * 4
    release, exact = noisy_clipped_sum(gradients, 0.5, replace_one.noise_std, torch.Generator().manual_seed(SEED + 1))
    assert release.dtype == exact.dtype == torch.float64
    assert torch.allclose(exact, clip_rows(gradients, 0.5).sum(dim=0), rtol=0, atol=1e-12)
    noise = (release - exact).numpy()
    assert abs(float(noise.mean())) < 5 * replace_one.noise_std / math.sqrt(noise.size)
    assert float(noise.std()) == pytest.approx(replace_one.noise_std, rel=0.03)  # 20,000 draws: the std to 0.5%


# -------------------------------------------------------------------------------------------------- schedule
def test_replace_one_batches_are_k_sets_of_exactly_b_distinct_records_drawn_uniformly() -> None:
    n_records, batch_size, steps = 12, 5, 600
    schedule = DPSGDSchedule("replace_one", steps, 1.0, 1.0, batch_size, n_records=n_records)
    batches = list(schedule.batches(n_records, torch.Generator().manual_seed(SEED)))
    assert len(batches) == steps
    for batch in batches:
        assert len(batch) == batch_size and len(set(batch.tolist())) == batch_size
        assert 0 <= int(batch.min()) and int(batch.max()) < n_records
    counts = np.bincount(torch.cat(batches).numpy(), minlength=n_records)
    expected = steps * batch_size / n_records  # each record is in a batch with probability b / n = 5/12
    spread = math.sqrt(steps * (batch_size / n_records) * (1 - batch_size / n_records))
    assert np.all(np.abs(counts - expected) < 5 * spread)
    assert len({tuple(sorted(batch.tolist())) for batch in batches}) > steps / 2  # drawn afresh at every step
    with pytest.raises(ValueError, match="planned for n = 12"):
        next(schedule.batches(13, torch.Generator().manual_seed(SEED)))


@pytest.mark.parametrize("neighbouring", ["add_remove", "replace_one"])
def test_poisson_batches_are_poisson_samples_of_mean_size_q_n(neighbouring: str) -> None:
    """Under add/remove, and under replace-one with a sample_rate (the codec's default): sizes vary as Binomial(n, q),
    which batches of a fixed size (the sampling the antipodal pair does not cover) would not."""
    n_records, rate, steps = 1000, 0.05, 400
    public = {"n_records": n_records} if neighbouring == "replace_one" else {}
    schedule = DPSGDSchedule(neighbouring, steps, 1.0, 1.0, 50, sample_rate=rate, **public)  # type: ignore[arg-type]
    batches = list(schedule.batches(n_records, torch.Generator().manual_seed(SEED)))
    sizes = np.array([len(batch) for batch in batches], dtype=float)
    assert len(batches) == steps and all(len(set(batch.tolist())) == len(batch) for batch in batches)
    variance = n_records * rate * (1 - rate)
    assert abs(sizes.mean() - n_records * rate) < 5 * math.sqrt(variance / steps)
    assert 0.7 < sizes.std(ddof=1) / math.sqrt(variance) < 1.3  # binomial sizes, not a fixed b
    assert schedule.rate == rate and schedule.n_records == public.get("n_records") and schedule.poisson


def test_bad_schedules_and_modules_with_batch_statistics_are_refused() -> None:
    with pytest.raises(ValueError, match="batch_size <= n_records"):
        DPSGDSchedule("replace_one", 3, 1.0, 1.0, 11, n_records=10)
    with pytest.raises(ValueError, match="batch_size <= n_records"):
        DPSGDSchedule("replace_one", 3, 1.0, 1.0, 5)
    with pytest.raises(ValueError, match="give sample_rate"):
        DPSGDSchedule("add_remove", 3, 1.0, 1.0, 5)
    with pytest.raises(ValueError, match=r"sample_rate must lie in \(0, 1\]"):
        DPSGDSchedule("add_remove", 3, 1.0, 1.0, 5, sample_rate=1.5)
    with pytest.raises(ValueError, match=r"sample_rate must lie in \(0, 1\]"):
        DPSGDSchedule("replace_one", 3, 1.0, 1.0, 5, n_records=10, sample_rate=0.0)
    with pytest.raises(ValueError, match="n is private under add/remove"):
        DPSGDSchedule("add_remove", 3, 1.0, 1.0, 5, n_records=10, sample_rate=0.5)
    with pytest.raises(ValueError, match="noise_multiplier must be >= 0"):
        DPSGDSchedule("replace_one", 3, 1.0, -1.0, 5, n_records=10)
    schedule = DPSGDSchedule("replace_one", 2, 1.0, 1.0, 4, n_records=8)
    for mixing, name in [(nn.BatchNorm1d(3), "BatchNorm1d"), (nn.LazyBatchNorm1d(), "LazyBatchNorm1d"),
                         (nn.SyncBatchNorm(3), "SyncBatchNorm"),
                         (nn.InstanceNorm1d(3, track_running_stats=True), "InstanceNorm1d")]:
        module = nn.Sequential(nn.Linear(4, 3), mixing, nn.Linear(3, 1))
        before = [parameter.detach().clone() for parameter in module.parameters()
                  if not isinstance(parameter, nn.parameter.UninitializedParameter)]
        with pytest.raises(ValueError, match=name):
            train_dpsgd(module, canary_loss, torch.randn(8, 4), schedule, torch.Generator().manual_seed(SEED))
        after = [parameter for parameter in module.parameters()
                 if not isinstance(parameter, nn.parameter.UninitializedParameter)]
        assert all(torch.equal(old, new) for old, new in zip(before, after))
    # per-record normalisations pass: one record's statistics only, no running buffer
    from synthcity_dpswf.privacy.dpsgd import mixes_records

    assert not any(mixes_records(layer) for layer in (nn.GroupNorm(1, 3), nn.LayerNorm(3), nn.InstanceNorm1d(3)))


def test_the_schedule_is_one_history_entry_of_its_sampling() -> None:
    replace_one = DPSGDSchedule("replace_one", 30, 1.0, 1.7, 25, n_records=100)
    assert replace_one.history() == SampledGaussian(1.7, 0.25, 30, 100, 25) and not replace_one.history().poisson
    add_remove = DPSGDSchedule("add_remove", 30, 1.0, 1.7, 25, sample_rate=0.2)
    assert add_remove.history() == SampledGaussian(1.7, 0.2, 30) and add_remove.history().poisson


# ------------------------------------------------------------------------------------------------ accounting
N_RECORDS, CODEC_BATCH, CODEC_STEPS, CODEC_Z = 2000, 200, 50, 1.5


def test_replace_one_epsilon_with_the_codec_prior_is_dp_accountings_own_composition() -> None:
    entry = SampledGaussian(CODEC_Z, CODEC_BATCH / N_RECORDS, CODEC_STEPS, N_RECORDS, CODEC_BATCH)
    accountant = ReleaseAccountant(N_RECORDS, N_RECORDS, REPLACE_ONE_RDP, prior=Prior(None, (entry,)))
    z = 3.0
    reported = accountant.epsilon(z, DELTA, 1)
    direct = dp_accounting.rdp.RdpAccountant(
        list(REPLACE_ONE_ORDERS), neighboring_relation=dp_accounting.NeighboringRelation.REPLACE_ONE)
    direct.compose(dp_accounting.SelfComposedDpEvent(dp_accounting.SampledWithoutReplacementDpEvent(
        N_RECORDS, CODEC_BATCH, dp_accounting.GaussianDpEvent(CODEC_Z)), CODEC_STEPS))
    direct.compose(dp_accounting.GaussianDpEvent(z))
    assert reported.epsilon == pytest.approx(direct.get_epsilon(DELTA), rel=1e-9)
    assert "analytic" not in reported.method  # the whole history by RDP, not the one-shot Gaussian shortcut
    alone = ReleaseAccountant(N_RECORDS, N_RECORDS, REPLACE_ONE_RDP).epsilon(z, DELTA, 1).epsilon
    assert reported.epsilon > alone * 1.2  # the codec's entry costs something


def test_add_remove_epsilon_with_the_codec_prior_is_opacus_own_history() -> None:
    entry = SampledGaussian(CODEC_Z, 0.1, CODEC_STEPS)
    for rate, steps, z in ((0.05, 40, 1.2), (1.0, 1, 3.0)):  # per-step releases, and one release of all records
        accountant = ReleaseAccountant.poisson(rate, "rdp", prior=Prior(None, (entry,)))
        opacus = RDPAccountant()
        opacus.history = [(z, rate, steps), (CODEC_Z, 0.1, CODEC_STEPS)]
        direct = opacus.get_epsilon(delta=DELTA, alphas=RDP_ORDERS)
        assert accountant.epsilon(z, DELTA, steps).epsilon == pytest.approx(direct, rel=1e-12)
        alone = ReleaseAccountant.poisson(rate, "rdp").epsilon(z, DELTA, steps).epsilon
        assert accountant.epsilon(z, DELTA, steps).epsilon > alone * 1.2


def test_priors_sampled_otherwise_than_their_releases_or_fixed_size_under_opacus_are_refused() -> None:
    fixed = Prior(None, (SampledGaussian(CODEC_Z, CODEC_BATCH / N_RECORDS, CODEC_STEPS, N_RECORDS, CODEC_BATCH),))
    poisson = Prior(None, (SampledGaussian(CODEC_Z, 0.1, CODEC_STEPS),))
    with pytest.raises(ValueError, match="not by Opacus' pair"):
        ReleaseAccountant(N_RECORDS, CODEC_BATCH, "rdp", prior=fixed)
    with pytest.raises(ValueError, match="accounted under the releases' adjacency"):
        ReleaseAccountant(N_RECORDS, CODEC_BATCH, REPLACE_ONE_RDP, prior=poisson)
    with pytest.raises(ValueError, match="accounted under the releases' adjacency"):
        ReleaseAccountant.poisson(0.1, "rdp", prior=fixed)
    # the schedule of a run after the codec switches to the replace-one bound by itself
    accountant, steps = ReleaseSchedule(per_step=True, batch_size=CODEC_BATCH, release_steps=5).accountant(
        N_RECORDS, "replace_one", "rdp", "record", fixed)
    assert accountant.accountant == REPLACE_ONE_RDP and steps == 5


@pytest.mark.parametrize("neighbouring", ["replace_one", "add_remove"])
def test_the_budget_holds_the_codec_entry_and_calibrates_the_whole_history_to_epsilon(neighbouring: str) -> None:
    epsilon = 8.0
    if neighbouring == "replace_one":
        entry = SampledGaussian(CODEC_Z, CODEC_BATCH / N_RECORDS, CODEC_STEPS, N_RECORDS, CODEC_BATCH)
        schedule, n_public = ReleaseSchedule(), N_RECORDS  # one release of all records
    else:
        entry = SampledGaussian(CODEC_Z, 0.1, CODEC_STEPS)
        schedule, n_public = ReleaseSchedule(per_step=True, sample_rate=0.05, release_steps=40), None
    budget = Budget(epsilon, DELTA, neighbouring).spend_schedule(entry)  # type: ignore[arg-type]
    assert isinstance(budget.prior, Prior) and budget.prior == Prior(None, (entry,))
    with pytest.raises(ValueError, match="sampled schedule was spent"):
        budget.rest_multiplier()
    accountant, steps = schedule.accountant(n_public, neighbouring, "rdp", "record", budget.prior)  # type: ignore[arg-type]
    z = budget.noise_multiplier(accountant, steps)
    whole = accountant.epsilon(z, DELTA, steps).epsilon
    assert 0.99 * epsilon <= whole <= epsilon
    without_codec = ReleaseAccountant(N_RECORDS, N_RECORDS) if n_public else ReleaseAccountant.poisson(0.05)
    assert without_codec.epsilon(z, DELTA, steps).epsilon < 0.97 * whole  # the codec's entry was paid for
    with pytest.raises(ValueError, match="is not this budget's"):
        Budget(epsilon, DELTA, neighbouring).noise_multiplier(accountant, steps)  # type: ignore[arg-type]


# ------------------------------------------------------------------------------- white-box audit of the releases
# A toy network whose per-record gradient is known: nn.Linear(4, 1) without bias and the loss 100 <w, x>, whose
# gradient 100 x does not depend on the weights. n = 20 records: the canary e_1 at index 0 on D, -e_1 on D'
# (replace-one; clipped to C = 1 both, they attain Delta = 2C), the others in span(e_2, e_3, e_4), so the others'
# clipped gradients project to 0 on e_1 and score_k = <G_k, e_1> is +-C plus N(0, (z 2C)^2): mu = 1/z per step.
# Batches of b = n (every step holds the canary: predictable), K = 2 steps. z = 0.5: the 'step left out' mutant
# claims the analytic Gaussian of one step, and the audit must show sqrt(2) times its mu; with R runs per side the
# per-step mu's lower bound is about mu - 3.6 / sqrt(R) (absolute), so a small z (a large mu) is what makes the
# factor sqrt(2) measurable: at z = 2 and R = 500 the mutant escaped in 1 of 3 simulated audits, at z = 0.5 and
# R = 400 in none of 2,000 (smallest bound 1.13 times its claim), the sound run's bound 0.66-0.92 of its claim.
AUDIT_N, AUDIT_STEPS, AUDIT_CLIP, AUDIT_Z, AUDIT_RUNS = 20, 2, 1.0, 0.5, 500


def canary_loss(module: nn.Module, parameters: dict[str, torch.Tensor], record: torch.Tensor) -> torch.Tensor:
    """100 times the module's output: the gradient of nn.Linear(4, 1, bias=False) is 100 x, whatever its weights."""
    return 100.0 * torch.func.functional_call(module, parameters, (record.unsqueeze(0),)).sum()


def audit_records(canary: float) -> torch.Tensor:
    """The canary ``canary`` e_1 at index 0, the 19 others fixed in span(e_2, e_3, e_4)."""
    records = torch.zeros(AUDIT_N, 4)
    records[0, 0] = canary
    records[1:, 1:] = torch.randn(AUDIT_N - 1, 3, generator=torch.Generator().manual_seed(SEED))
    return records


def canary_scores(records: torch.Tensor, schedule: DPSGDSchedule, first_seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``AUDIT_RUNS`` trainings by ``train_dpsgd``, each with a fresh secret: per run and step, the release projected on
    e_1 and whether the canary was in the batch (read from the sampler through ``observe``)."""
    scores = np.zeros((AUDIT_RUNS, schedule.steps))
    included = np.zeros((AUDIT_RUNS, schedule.steps), dtype=bool)
    for run in range(AUDIT_RUNS):
        def observe(step: int, batch: torch.Tensor, gradients: torch.Tensor, release: torch.Tensor, run: int = run) -> None:
            others = gradients[batch != 0]
            assert not bool(others[:, 0].any())  # the others' gradients vanish on e_1: the score is the canary's alone
            scores[run, step] = float(release[0])
            included[run, step] = bool((batch == 0).any())

        module = nn.Linear(4, 1, bias=False)
        train_dpsgd(module, canary_loss, records, schedule, torch.Generator().manual_seed(first_seed + run), observe=observe)
    return scores, included


def mutate_release(mutation: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The releases' mutants: ``"noise halved"`` (every noise draw at half its std) or ``"clipping off"`` (gradients
    summed unclipped); any other name leaves the releases sound."""
    if mutation == "noise halved":
        noise = dpsgd.gaussian_noise
        monkeypatch.setattr(dpsgd, "gaussian_noise",
                            lambda shape, std, generator, like: noise(shape, std / 2, generator, like))
    elif mutation == "clipping off":
        monkeypatch.setattr(dpsgd, "clip_rows", lambda gradients, clip: gradients.to(torch.float64))


def history_claim(history: SampledGaussian) -> float:
    """The epsilon the accountant states for a schedule's history entry alone: the replace-one RDP bound for fixed-size
    batches, the antipodal pair at the entry's radius for Poisson batches under replace-one."""
    if history.replace_one_poisson:
        accountant = ReleaseAccountant.poisson(history.sample_rate, REPLACE_ONE_PLD, n_records=history.n_records,
                                               contribution_norm=history.contribution_norm)
    else:
        accountant = ReleaseAccountant(history.n_records, history.batch_size, REPLACE_ONE_RDP)
    return accountant.epsilon(history.noise_multiplier, DELTA, history.steps).epsilon


def audit_training(seed: int, sampling: str = "fixed") -> tuple[ScheduleAuditResult | None, float]:
    """The audit of the sound or mutated training on D and D' against the claim built from ``schedule.history()``
    (batches of all n records, drawn as fixed-size batches or as Poisson batches at q = 1); returns the result
    (``PrivacyAuditError`` propagates) and the claim."""
    schedule = DPSGDSchedule("replace_one", AUDIT_STEPS, AUDIT_CLIP, AUDIT_Z, AUDIT_N, n_records=AUDIT_N,
                             sample_rate=1.0 if sampling == "poisson" else None)
    claim = history_claim(schedule.history())
    scores_in, included = canary_scores(audit_records(1.0), schedule, seed * 10**6)
    scores_out, _ = canary_scores(audit_records(-1.0), schedule, seed * 10**6 + 10**5)
    result = audit_sampled_schedule(scores_in, scores_out, included, DELTA, claimed_epsilon=claim,
                                    claimed_step_epsilon=analytic_gaussian_epsilon(AUDIT_Z, DELTA), confidence=CONFIDENCE)
    return result, claim


@pytest.mark.parametrize("sampling", ["fixed", "poisson"])
@pytest.mark.parametrize("mutation", ["sound", "noise halved", "clipping off", "step left out", "radius halved"])
def test_dpsgd_training_passes_the_canary_audit_and_fails_its_mutants(
    mutation: str, sampling: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under replace-one, on batches of all records drawn either way; the Poisson schedule's claim is the antipodal
    pair's, whose radius halved (C / Delta_RO taken as 1/4: a factor-2 mistake) must fail too."""
    if mutation == "radius halved" and sampling == "fixed":
        pytest.skip("a fixed-size schedule's accountant has no radius")
    mutate_release(mutation, monkeypatch)
    if mutation == "step left out":
        history = DPSGDSchedule.history
        monkeypatch.setattr(DPSGDSchedule, "history", lambda self: dataclasses.replace(history(self), steps=self.steps - 1))
    elif mutation == "radius halved":
        monkeypatch.setattr(dpsgd, "CLIPPED_GRADIENT_RADIUS", dpsgd.CLIPPED_GRADIENT_RADIUS / 2)
    if mutation != "sound":
        with pytest.raises(PrivacyAuditError, match="PRIVACY AUDIT FAILED"):
            audit_training(SEED, sampling)
        return
    result, claim = audit_training(SEED, sampling)
    step_claim = analytic_gaussian_epsilon(AUDIT_Z, DELTA)
    assert result is not None and result.predictable_steps == AUDIT_STEPS
    assert result.step is not None and 0.5 * step_claim < result.step.epsilon_lower_bound < step_claim
    assert 0.5 * claim < result.schedule_epsilon_lower_bound < claim


@pytest.mark.parametrize("mutation", ["sound", "noise halved", "clipping off"])
def test_poisson_batches_under_replace_one_release_the_claimed_step(mutation: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """At q = 1/2 the steps that held the canary's position (c on D, its opposite c' on D'; the coin is the position's,
    the same law on both) score Gaussians at C and -C under noise z 2C: separation 1 / z, the base pair the accountant
    composes at q = 1 (radius 1/2: the Gaussian at z). Noise halved or clipping off fails it."""
    mutate_release(mutation, monkeypatch)
    schedule = DPSGDSchedule("replace_one", AUDIT_STEPS, AUDIT_CLIP, AUDIT_Z, AUDIT_N // 2, n_records=AUDIT_N,
                             sample_rate=0.5)
    scores_in, included_in = canary_scores(audit_records(1.0), schedule, SEED * 10**6)
    scores_out, included_out = canary_scores(audit_records(-1.0), schedule, SEED * 10**6 + 10**5)
    assert 0.4 < included_in.mean() < 0.6 and 0.4 < included_out.mean() < 0.6  # Poisson coins at q = 1/2
    claim = ReleaseAccountant.poisson(1.0, REPLACE_ONE_PLD, n_records=AUDIT_N,
                                      contribution_norm=dpsgd.CLIPPED_GRADIENT_RADIUS).composed_epsilon(AUDIT_Z, DELTA, 1)
    assert claim == pytest.approx(analytic_gaussian_epsilon(AUDIT_Z, DELTA), rel=0.01)  # the pair at q = 1 is the Gaussian
    audit = lambda: audit_gaussian_scores(scores_in[included_in], scores_out[included_out], DELTA, claim, CONFIDENCE)  # noqa: E731
    if mutation != "sound":
        with pytest.raises(PrivacyAuditError, match="PRIVACY AUDIT FAILED"):
            audit()
        return
    assert 0.5 * claim < audit().epsilon_lower_bound < claim


@pytest.mark.parametrize(("rate", "steps", "epsilon"), [(0.01, 1000, 1.0), (0.25, 40, 4.0)])
def test_the_poisson_codec_claim_holds_a_realised_pair_and_a_halved_radius_falls_below_it(
    rate: float, steps: int, epsilon: float
) -> None:
    """The canary pair of the audit above at any q: its score is exactly (1 - q) N(0) + q N(+-C) under noise z 2C, so
    the optimistic PLD at radius 1/2 bounds epsilon from below; the claim (pessimistic, same radius) is at least that,
    and a claim at radius 1/4 (a factor-2 mistake: Delta_RO taken as 4C, or noise z 2C against a sensitivity of C
    read as 2C twice) falls below it."""
    def pld(radius: float, pessimistic: bool, z: float) -> float:
        pair = privacy_loss_distribution.from_gaussian_mechanism(
            z, sensitivity=radius, sampling_prob=rate, pessimistic_estimate=pessimistic,
            neighboring_relation=dp_accounting.NeighboringRelation.REPLACE_ONE, value_discretization_interval=1e-4)
        return float(pair.self_compose(steps).get_epsilon_for_delta(DELTA))
    schedule = DPSGDSchedule("replace_one", steps, 1.0, 1.0, max(1, round(rate * 1000)), n_records=1000, sample_rate=rate)
    z = private_autoencoder.dpsgd_noise_multiplier(schedule, epsilon, DELTA)
    history = dataclasses.replace(schedule, noise_multiplier=z).history()
    claim = history_claim(history)
    lower = pld(0.5, False, z)
    assert lower <= claim <= epsilon and claim >= 0.98 * epsilon
    assert history_claim(dataclasses.replace(history, contribution_norm=0.25)) < lower


def test_a_poisson_codec_composes_with_the_releases_in_the_antipodal_pair() -> None:
    """The codec's entry and the releases' composed by dp-accounting's PLD directly: Poisson releases of a one-hot
    kind (radius 1/sqrt(2)), and one release of all records (the Gaussian: radius 1/2 at q = 1); the codec's entry is
    paid for; the whole history calibrated within 1% of the budget; and the same releases under add/remove read the
    codec at 2 z_c (Opacus' pair)."""
    entry = SampledGaussian(CODEC_Z, 0.05, CODEC_STEPS, N_RECORDS, contribution_norm=0.5)
    prior = Prior(None, (entry,))
    def direct(rate: float, radius: float, z: float, steps: int) -> float:
        def pair(q: float, r: float, multiplier: float) -> "privacy_loss_distribution.PrivacyLossDistribution":
            return privacy_loss_distribution.from_gaussian_mechanism(
                multiplier, sensitivity=r, sampling_prob=q, value_discretization_interval=1e-4,
                neighboring_relation=dp_accounting.NeighboringRelation.REPLACE_ONE)
        whole = pair(rate, radius, z).self_compose(steps).compose(pair(0.05, 0.5, CODEC_Z).self_compose(CODEC_STEPS))
        return float(whole.get_epsilon_for_delta(DELTA))
    poisson = ReleaseAccountant.poisson(0.1, REPLACE_ONE_PLD, prior, n_records=N_RECORDS, contribution_norm=2**-0.5)
    assert poisson.epsilon(3.0, DELTA, 40).epsilon == pytest.approx(direct(0.1, 2**-0.5, 3.0, 40), rel=1e-9)
    every = ReleaseAccountant(N_RECORDS, N_RECORDS, REPLACE_ONE_PLD, prior)
    assert every.epsilon(3.0, DELTA, 1).epsilon == pytest.approx(direct(1.0, 0.5, 3.0, 1), rel=1e-9)
    alone = ReleaseAccountant(N_RECORDS, N_RECORDS).epsilon(3.0, DELTA, 1).epsilon
    assert every.epsilon(3.0, DELTA, 1).epsilon > 1.2 * alone
    budget = Budget(4.0, DELTA).spend_schedule(entry)
    for schedule in (ReleaseSchedule(), ReleaseSchedule(per_step=True)):
        accountant, steps = schedule.accountant(N_RECORDS, "replace_one", "rdp", "projected_histogram", budget.prior)
        assert accountant.accountant == REPLACE_ONE_PLD
        z = budget.noise_multiplier(accountant, steps)
        assert 0.99 * 4.0 <= accountant.epsilon(z, DELTA, steps).epsilon <= 4.0
    assert releasing.as_add_remove(entry) == SampledGaussian(2 * CODEC_Z, 0.05, CODEC_STEPS)
    with pytest.raises(ValueError, match="antipodal pair"):
        entry.opacus_entry()
    with pytest.raises(ValueError, match="antipodal pair"):
        entry.dp_event()


# -------------------------------------------------------------------------------------------- the codec itself
SETTINGS = PrivateAutoencoderSettings(latent_dim=4, width=4, epochs=2, batch_size=32)
CODEC_EPSILON = 2.0


def tiny_images(seed: int) -> torch.Tensor:
    return torch.rand(64, 1, 8, 8, generator=torch.Generator().manual_seed(seed))


@pytest.fixture(scope="module")
def codec() -> PrivateAutoencoderCodec:
    return PrivateAutoencoderCodec(tiny_images(SEED), SETTINGS, CODEC_EPSILON, DELTA, "replace_one",
                                   secret=torch.Generator().manual_seed(SEED))


def test_the_codec_is_calibrated_to_its_own_epsilon_and_spends_exactly_its_schedule(codec: PrivateAutoencoderCodec) -> None:
    """Under replace-one the default draws Poisson batches at q = b / n, accounted by the antipodal pair at radius
    C / Delta_RO = 1/2; ``replace_one_sampling="fixed"`` draws exactly b, accounted by the replace-one RDP bound."""
    schedule = codec.schedule
    assert (schedule.neighbouring, schedule.batch_size, schedule.n_records, schedule.steps) == ("replace_one", 32, 64, 4)
    assert schedule.poisson and schedule.rate == 0.5
    assert schedule.history() == SampledGaussian(codec.noise_multiplier, 0.5, 4, 64, contribution_norm=0.5)
    alone = ReleaseAccountant.poisson(0.5, REPLACE_ONE_PLD, n_records=64, contribution_norm=0.5).epsilon(
        codec.noise_multiplier, DELTA, schedule.steps).epsilon
    assert 0.98 * CODEC_EPSILON <= alone <= CODEC_EPSILON
    fixed = dataclasses.replace(SETTINGS, replace_one_sampling="fixed").schedule(64, "replace_one", 1.0)
    assert not fixed.poisson and fixed.history() == SampledGaussian(1.0, 0.5, 4, 64, 32)
    assert private_autoencoder.schedule_accountant(fixed).accountant == REPLACE_ONE_RDP
    with pytest.raises(ValueError, match="replace_one_sampling"):
        dataclasses.replace(SETTINGS, replace_one_sampling="uniform")
    spent = codec.spend(Budget(10.0, DELTA))
    assert isinstance(spent.prior, Prior) and spent.prior.schedules == (schedule.history(),) and spent.prior.gaussian is None
    after_pca = codec.spend(Budget(10.0, DELTA).spend(4.0))  # a one-shot part spent before stays
    assert after_pca.prior == Prior(4.0, (schedule.history(),))
    part = codec.privacy_part
    assert (part.name, part.epsilon, part.delta) == ("private codec", CODEC_EPSILON, DELTA)
    assert "DP-SGD" in part.detail and f"{schedule.steps} releases of clipped gradient sums" in part.detail
    assert "Delta = 2" in part.detail and "Poisson batches" in part.detail  # replace-one: 2C


def test_codes_lie_on_the_sphere_and_decode_to_images_in_the_unit_range(codec: PrivateAutoencoderCodec) -> None:
    images = tiny_images(SEED)
    codes = codec.encode(images)
    assert codes.shape == (64, 4)
    assert torch.allclose(codes.norm(dim=1), torch.ones(64), atol=1e-5)
    decoded = codec.decode(codes)
    assert decoded.shape == (64, 1, 8, 8) and float(decoded.min()) >= 0 and float(decoded.max()) <= 1
    with pytest.raises(ValueError, match="trained on"):
        codec.encode(torch.rand(3, 1, 16, 8))


def test_decoding_is_the_decoder_s_logit_at_the_settings_temperature(codec: PrivateAutoencoderCodec) -> None:
    """A pixel is sigmoid(t * logit): t = 1 is the Bernoulli mean, a larger t moves every pixel away from 1/2 on
    its own side, and t changes neither the training settings a checkpoint is bound to nor its cache name."""
    codes = codec.encode(tiny_images(SEED))
    with torch.no_grad():
        logits = codec.network.decoder(codes)
    sharp, mean = copy.copy(codec), copy.copy(codec)
    sharp.settings, mean.settings = (dataclasses.replace(SETTINGS, decode_temperature=t) for t in (4.0, 1.0))
    assert torch.allclose(mean.decode(codes), torch.sigmoid(logits), atol=1e-6)
    assert torch.allclose(sharp.decode(codes), torch.sigmoid(4.0 * logits), atol=1e-6)
    assert bool(((sharp.decode(codes) - 0.5).abs() >= (mean.decode(codes) - 0.5).abs() - 1e-7).all())
    assert codec.settings.decode_temperature == DECODE_TEMPERATURE and "logit temperature 4" in codec.public_description
    assert sharp.settings.training() == mean.settings.training() and "decode_temperature" not in sharp.settings.training()
    assert repr(sharp.settings) == repr(mean.settings)  # the registry's cache name is hashed from the repr
    with pytest.raises(ValueError, match="decode_temperature"):
        dataclasses.replace(SETTINGS, decode_temperature=0.0)


def test_a_saved_codec_loads_only_for_its_data_key_settings_and_budget(codec: PrivateAutoencoderCodec, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="known seed"):  # a seeded (test) codec is never kept for reuse
        codec.save(tmp_path / "seeded.pt", "tiny")
    settings, images, path = dataclasses.replace(SETTINGS, batch_size=64), tiny_images(SEED), tmp_path / "codec.pt"
    trained = PrivateAutoencoderCodec(images, settings, CODEC_EPSILON, DELTA, "replace_one")  # b = n: cheap calibration
    trained.save(path, "tiny")
    stored = torch.load(path, weights_only=True)
    assert set(stored) == {"state", "settings", "epsilon", "delta", "neighbouring", "data_key", "schedule", "shape",
                           "training_seconds"}
    loaded = PrivateAutoencoderCodec.load(path, "tiny", settings, CODEC_EPSILON, DELTA, "replace_one")
    assert torch.allclose(loaded.encode(images), trained.encode(images), atol=1e-6)
    sharper = dataclasses.replace(settings, decode_temperature=2 * settings.decode_temperature)  # decoding is not training
    loaded_sharper = PrivateAutoencoderCodec.load(path, "tiny", sharper, CODEC_EPSILON, DELTA, "replace_one")
    codes = trained.encode(images)
    assert loaded_sharper.settings.decode_temperature == sharper.decode_temperature
    assert not torch.allclose(loaded_sharper.decode(codes), trained.decode(codes), atol=1e-3)
    assert loaded.schedule == trained.schedule and loaded.privacy_part == trained.privacy_part
    refusals = {
        "epsilon": dict(epsilon=3.0),
        "delta": dict(delta=1e-6),
        "data_key": dict(data_key="other"),
        "settings": dict(settings=dataclasses.replace(settings, learning_rate=1e-3)),
        "neighbouring": dict(neighbouring="add_remove"),
    }
    for differs, change in refusals.items():
        arguments = dict(data_key="tiny", settings=settings, epsilon=CODEC_EPSILON, delta=DELTA, neighbouring="replace_one")
        with pytest.raises(ValueError, match=f"trained with other {differs} than") as refused:
            PrivateAutoencoderCodec.load(path, **{**arguments, **change})  # type: ignore[arg-type]
        assert all(other not in str(refused.value) for other in refusals if other != differs)
    stored["schedule"]["noise_multiplier"] *= 0.5  # a checkpoint whose noise does not give its stated epsilon
    torch.save(stored, path)
    with pytest.raises(ValueError, match="above its stated"):
        PrivateAutoencoderCodec.load(path, "tiny", settings, CODEC_EPSILON, DELTA, "replace_one")


# ---------------------------------------------------------------------------------------------- the registry
def test_the_registry_entry_is_paid_needs_no_public_image_and_caches_per_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    entry = extensions.image_codecs()["private-autoencoder"]
    assert entry.paid and entry.public_images == "none"
    settings = dataclasses.replace(SETTINGS, batch_size=64)  # b = n: two cheap calibrations
    images = tiny_images(SEED + 2)
    request = CodecRequest(CODEC_EPSILON, DELTA, autoencoder=AutoencoderRequest(cache=tmp_path),
                           private_autoencoder=settings, data_key="tiny")
    first = entry.build(images, request)
    assert isinstance(first, PrivateAutoencoderCodec) and first.epsilon == CODEC_EPSILON
    assert len(list(tmp_path.iterdir())) == 1
    with monkeypatch.context() as patched:
        def refuse(*args: object, **kwargs: object) -> float:
            raise AssertionError("the cached codec was trained anew")

        patched.setattr(private_autoencoder, "train_dpsgd", refuse)
        again = entry.build(images, request)
    assert torch.allclose(again.encode(images), first.encode(images), atol=1e-6)
    other = entry.build(images, dataclasses.replace(request, epsilon=3.0))
    assert other.epsilon == 3.0 and other.noise_multiplier < first.noise_multiplier
    assert len(list(tmp_path.iterdir())) == 2
    entry.build(images, dataclasses.replace(request, data_key=None))  # no public name of the set: nothing kept
    assert len(list(tmp_path.iterdir())) == 2


def test_a_non_finite_gradient_contributes_nothing_and_a_non_finite_image_is_refused() -> None:
    """One record's inf or NaN gradient would make the release NaN whatever the noise (a certain tell): it is mapped
    to 0 on its own, and the codec refuses images that are not finite before any release."""
    gradients = torch.tensor([[float("inf"), 0.0, 0.0], [float("nan"), 1.0, 0.0], [0.5, 0.5, 0.0]])
    release, exact = noisy_clipped_sum(gradients, 1.0, 10.0, torch.Generator().manual_seed(0))
    assert torch.isfinite(release).all() and torch.allclose(exact, torch.tensor([0.5, 0.5, 0.0], dtype=torch.float64))
    images = tiny_images(SEED)
    images[0, 0, 0, 0] = float("nan")
    with pytest.raises(ValueError, match="must lie in"):  # NaN lies in no range
        PrivateAutoencoderCodec(images, SETTINGS, CODEC_EPSILON, DELTA, "replace_one")


def replayed_distance(train: object) -> float:
    """The largest difference between the weights ``train`` (``dpsgd.train_dpsgd``'s signature) trains and the weights
    Adam reaches from the same start on the releases it was observed to make, alone: zero when nothing but the releases
    reaches the parameters (privacy.md, "A private image codec trained by DP-SGD")."""
    torch.manual_seed(0)
    module = nn.Sequential(nn.Linear(4, 3), nn.Tanh(), nn.Linear(3, 1))
    start = copy.deepcopy(module)
    records = torch.randn(16, 4, generator=torch.Generator().manual_seed(1))
    schedule = DPSGDSchedule("replace_one", 6, 1.0, 1.0, 4, n_records=16)
    releases: list[torch.Tensor] = []
    train(module, canary_loss, records, schedule, torch.Generator().manual_seed(SEED), learning_rate=0.05,  # type: ignore[operator]
          observe=lambda step, batch, gradients, release: releases.append(release.clone()))
    optimiser = torch.optim.Adam(start.parameters(), lr=0.05)
    shapes = [(parameter, parameter.numel()) for parameter in start.parameters()]
    for release in releases:
        update, offset = (release / schedule.batch_size).to(torch.float32), 0
        for parameter, size in shapes:
            parameter.grad = update[offset:offset + size].reshape(parameter.shape).clone()
            offset += size
        optimiser.step()
    return max(float((trained - replayed).abs().max()) for trained, replayed in zip(module.parameters(), start.parameters()))


def test_the_trained_weights_are_the_optimiser_replayed_on_the_observed_releases_alone() -> None:
    """A review's mutant trained on the exact clipped sums while the releases it was seen to make stayed noisy; the
    release audits cannot see it. Replaying Adam on the observed releases from the same start must give the trained
    weights, and does not for that mutant (a copy of ``train_dpsgd`` whose update reads the exact sum)."""
    import inspect
    import textwrap

    assert replayed_distance(dpsgd.train_dpsgd) < 1e-6
    source = textwrap.dedent(inspect.getsource(dpsgd.train_dpsgd))
    planted = source.replace("release, _ = noisy_clipped_sum(", "release, exact = noisy_clipped_sum(").replace(
        "update = (release / schedule.batch_size)", "update = (exact / schedule.batch_size)")
    assert planted.count("exact") >= 2
    namespace = dict(vars(dpsgd))
    exec(compile(planted, "mutant", "exec"), namespace)  # noqa: S102  (the planted mutant, built from the real source)
    assert replayed_distance(namespace["train_dpsgd"]) > 1e-3

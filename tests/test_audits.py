"""privacy.md, "Tests that must hold": the audits of the releases beyond one-shot kinds (those are in
test_mechanisms.py): per-step releases on sampled batches, the DP domain, the DP-SGD baseline, and the plugin
path end to end. Each passes the implementation and fails its factor-2 mutants (noise halved, sensitivity
halved) and, where batches are sampled, batches drawn with a fixed seed. Every audit holds at 99.9%
confidence, and its own randomness is seeded."""

from __future__ import annotations

import math
import types

import numpy as np
import pandas as pd
import pytest
import torch

import synthcity_dpswf  # noqa: F401  (registers the plugins)
from synthcity.plugins import Plugins
from synthcity_dpswf.models import releasing
from synthcity_dpswf.models.dpsgd_gan import DPSGDGAN
from synthcity_dpswf.privacy import (
    MECHANISMS,
    PrivacyAuditError,
    ReleaseAccountant,
    ReleaseOptions,
    analytic_gaussian_epsilon,
    create_mechanism,
    release_domain,
    sample_batch,
    secret_generator,
)
from synthcity_dpswf.privacy import domain as dp_domain
from synthcity_dpswf.privacy.audit import audit_exclusive_event, audit_gaussian_scores, audit_noise, audit_sampled_schedule
from synthcity_dpswf.privacy.mechanisms import base

DELTA, CONFIDENCE, SEED = 1e-5, 0.999, 17
pytestmark = pytest.mark.filterwarnings("ignore:release noise seeded with a known seed")


def halve_the_noise(monkeypatch: pytest.MonkeyPatch) -> None:
    """Mutant: every release's noise drawn at half its std."""
    noise = base.gaussian_noise
    monkeypatch.setattr(base, "gaussian_noise", lambda shape, std, generator, like: noise(shape, std / 2, generator, like))


def halve_the_sensitivity(kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Mutant: the kind's sensitivity taken at half its value (so its noise is half what z requires)."""
    sensitivity = MECHANISMS[kind].sensitivity
    monkeypatch.setattr(MECHANISMS[kind], "sensitivity", lambda self, directions: sensitivity(self, directions) / 2)


# ------------------------------------------------------------------------------ per-step sampled releases
# K = 16 releases, each on a batch of b = 1 of n = 4 records (q = 1/4), z = 1.5: the claim relies on amplification
# by subsampling (4.3 with Opacus' RDP for records, 7.7 with the replace-one RDP for histograms, against 14.3 for
# the same 16 releases without it). D' holds the replacement c' at every position, D_j the canary c at position j;
# every position is audited, so a sampler that fixes the batch cannot hide the canary.
N_RECORDS, STEPS, MULTIPLIER, SCHEDULE_RUNS = 4, 16, 1.5, 120


def schedule_scores(kind: str, position: int | None, secret: torch.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Per-step scores <R_k - S_k(c'), g_k> / ||g_k|| (g_k = S_k(c) - S_k(c')) of SCHEDULE_RUNS runs of
    ``release_batches`` (the models' schedule code), and whether the canary's position was in each step's batch,
    read from the sampler the schedule calls."""
    mechanism = create_mechanism(kind, ReleaseOptions(n_directions=4, n_bins=4))
    canary = torch.nn.functional.normalize(torch.tensor([[0.3, -0.5, 0.8]]), dim=1)
    replacement = -canary  # p and -p never share a bin of an even grid: both kinds' sensitivity is attained
    records = replacement.repeat(N_RECORDS, 1)
    if position is not None:
        records[position] = canary[0]
    batches: list[torch.Tensor] = []
    sampler = releasing.sample_batch  # the sampler in use (a mutant's, if one is installed)

    def recording(n_records: int, batch_size: int, generator: torch.Generator) -> torch.Tensor:
        batches.append(sampler(n_records, batch_size, generator))
        return batches[-1]

    releasing.sample_batch = recording  # type: ignore[assignment]
    try:
        pools = [
            releasing.release_batches(records, mechanism=mechanism, batch_size=1, steps=STEPS, noise_multiplier=MULTIPLIER,
                                      directions_generator=torch.Generator().manual_seed(0), secret=secret)
            for _ in range(SCHEDULE_RUNS)
        ]
    finally:
        releasing.sample_batch = sampler  # type: ignore[assignment]
    directions = [None] * STEPS if pools[0].directions is None else list(pools[0].directions)  # public: the same every run
    gaps = torch.stack([(mechanism.statistic(canary, d) - mechanism.statistic(replacement, d)).double().reshape(-1) for d in directions])
    bases = torch.stack([mechanism.statistic(replacement, d).double().reshape(-1) for d in directions])
    units = gaps / gaps.norm(dim=1, keepdim=True)
    values = torch.stack([pool.releases.double().reshape(STEPS, -1) for pool in pools])  # (runs, K, cells)
    scores = ((values - bases) * units).sum(dim=-1).numpy()
    included = np.array([position is not None and position in batch.tolist() for batch in batches]).reshape(SCHEDULE_RUNS, STEPS)
    return scores, included


@pytest.mark.parametrize("mutation", ["sound", "noise halved", "sensitivity halved", "fixed-seed sampling"])
@pytest.mark.parametrize("kind", ["record", "projected_histogram"])
def test_per_step_audit_passes_sampled_releases_and_fails_their_mutants(
    kind: str, mutation: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if mutation == "noise halved":
        halve_the_noise(monkeypatch)
    elif mutation == "sensitivity halved":
        halve_the_sensitivity(kind, monkeypatch)
    elif mutation == "fixed-seed sampling":
        monkeypatch.setattr(releasing, "sample_batch", lambda n, b, generator: sample_batch(n, b, torch.Generator().manual_seed(0)))
    accountant = ReleaseAccountant(N_RECORDS, 1, "rdp" if MECHANISMS[kind].opacus_pair_proven else "replace_one_rdp")
    claimed = accountant.epsilon(MULTIPLIER, DELTA, STEPS).epsilon
    claimed_step = analytic_gaussian_epsilon(MULTIPLIER, DELTA)  # one step's release, which the accountant composes
    secret = secret_generator(SEED)
    scores_out, _ = schedule_scores(kind, None, secret)
    confidence = 1 - (1 - CONFIDENCE) / (2 * N_RECORDS)  # Bonferroni over the positions and the two bounds
    try:
        results = []
        for position in range(N_RECORDS):
            scores_in, included = schedule_scores(kind, position, secret)
            results.append(audit_sampled_schedule(scores_in, scores_out, included, DELTA, claimed, claimed_step, confidence))
    except PrivacyAuditError as error:
        assert mutation != "sound", error
        assert ("predictable batches" in str(error)) == (mutation == "fixed-seed sampling")
        return
    assert mutation == "sound", f"the audit passed the mutant {mutation!r}"
    for result in results:
        assert result.predictable_steps == 0 and result.schedule_epsilon_lower_bound == 0
        assert result.step is not None and 0.25 * claimed_step < result.step.epsilon_lower_bound < claimed_step


# ------------------------------------------------------------------------------------------- DP domain
# An integer column of 40 zeros and the canary: D holds 3, D' holds -3 (the same type cell, different bins, each
# integer of -16..16 has its own), so the bins of 3 and -3 are the only counts that differ, by +1 and -1. The bin
# counts are the release (the bounds are post-processing): captured where ``numeric_bounds`` reads them, and
# scored by count(3) - count(-3), the likelihood ratio's statistic.
DOMAIN_EPSILON, DOMAIN_RUNS = 2.0, 1000


def domain_scores(monkeypatch: pytest.MonkeyPatch) -> tuple[np.ndarray, np.ndarray]:
    """count(3) - count(-3) of DOMAIN_RUNS domain releases on D (canary 3) and on D' (canary -3)."""
    captured: list[tuple[np.ndarray, np.ndarray]] = []
    bounds = dp_domain.numeric_bounds
    monkeypatch.setattr(dp_domain, "numeric_bounds", lambda counts, lower, upper, std: (captured.append((counts, lower)), bounds(counts, lower, upper, std))[1])
    secret = secret_generator(SEED)
    scores = []
    for value in (3, -3):
        frame = pd.DataFrame({"x": [0] * 40 + [value]})
        captured.clear()
        for _ in range(DOMAIN_RUNS):
            release_domain(frame, DOMAIN_EPSILON, DELTA, secret)
        assert len(captured) == DOMAIN_RUNS  # the column was released as an integer column every time
        bins = [(np.searchsorted(lower, 3, side="right") - 1, np.searchsorted(lower, -3, side="right") - 1) for _, lower in captured]
        scores.append(np.array([counts[a] - counts[b] for (counts, _), (a, b) in zip(captured, bins)]))
    return scores[0], scores[1]


@pytest.mark.parametrize("mutation", ["sound", "noise halved", "sensitivity halved"])
def test_dp_domain_counts_pass_the_gaussian_audit_and_fail_their_mutants(mutation: str, monkeypatch: pytest.MonkeyPatch) -> None:
    if mutation == "noise halved":  # s = z Delta with half the multiplier (the threshold follows s)
        multiplier = dp_domain.analytic_gaussian_noise_multiplier
        monkeypatch.setattr(dp_domain, "analytic_gaussian_noise_multiplier", lambda epsilon, delta: multiplier(epsilon, delta) / 2)
    elif mutation == "sensitivity halved":  # Delta = sqrt(C (2 + 2 w^2)) taken at half its value
        monkeypatch.setattr(dp_domain, "math", types.SimpleNamespace(sqrt=lambda value: math.sqrt(value) / 2, isfinite=math.isfinite, exp=math.exp))
    scores_in, scores_out = domain_scores(monkeypatch)
    # The counts are (epsilon, delta / 2)-DP; the category threshold takes the other delta / 2.
    if mutation != "sound":
        with pytest.raises(PrivacyAuditError, match="PRIVACY AUDIT FAILED"):
            audit_gaussian_scores(scores_in, scores_out, DELTA / 2, DOMAIN_EPSILON, CONFIDENCE)
        return
    result = audit_gaussian_scores(scores_in, scores_out, DELTA / 2, DOMAIN_EPSILON, CONFIDENCE)
    # The canary moves the bins only (not the type cells): it attains sqrt(2) of Delta = sqrt(2.5).
    assert 0.3 * DOMAIN_EPSILON < result.epsilon_lower_bound < DOMAIN_EPSILON


@pytest.mark.parametrize("mutation", ["sound", "threshold without its tail quantile"])
def test_dp_domain_publishes_a_category_held_by_one_record_with_probability_at_most_delta(
    mutation: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """D = 40 x "common" + "rare", D' = 41 x "common": publishing "rare" is impossible on D', so
    (epsilon, delta)-DP bounds its probability on D by delta, whatever epsilon. A large delta (0.2) makes the
    threshold's tail (delta / 2 for one column) measurable in a few hundred runs."""
    if mutation != "sound":  # tau = 1 + s * 0: a record alone passes half the time
        monkeypatch.setattr(dp_domain, "norm", types.SimpleNamespace(isf=lambda tail: 0.0))
    delta, runs, secret = 0.2, 400, secret_generator(SEED)
    frame = pd.DataFrame({"c": ["common"] * 40 + ["rare"]})
    hits = sum("rare" in release_domain(frame, 1.0, delta, secret).categories["c"] for _ in range(runs))
    if mutation != "sound":
        with pytest.raises(PrivacyAuditError, match="exclusive event"):
            audit_exclusive_event(hits, runs, delta, CONFIDENCE)
        return
    assert audit_exclusive_event(hits, runs, delta, CONFIDENCE) < delta
    assert hits > 0  # the threshold is attained, not vacuous: about delta / 2 of the runs


# --------------------------------------------------------------------------------------- DP-SGD baseline
# One discriminator step on all n = 2 records (q = 1, one step: the analytic Gaussian is the claim). The release is
# the noisy sum of clipped per-sample gradients; the realised noise (noisy minus clipped sum, read inside Opacus'
# DPOptimizer) is audited against the sensitivity 2C that a gradient canary attains (Nasr et al. 2021), and the
# canary pair's clipped sums are checked to differ by at most 2C.
def dpsgd_release(records: torch.Tensor, monkeypatch: pytest.MonkeyPatch) -> tuple[torch.Tensor, torch.Tensor, float]:
    """The clipped gradient sum and the noisy one of DPSGDGAN's single discriminator step, and the claimed epsilon."""
    from opacus.optimizers import DPOptimizer

    captured: list[tuple[torch.Tensor, torch.Tensor]] = []
    add_noise = DPOptimizer.add_noise

    def recording(self: DPOptimizer) -> None:
        clipped = torch.cat([p.summed_grad.detach().reshape(-1) for p in self.params])
        add_noise(self)
        captured.append((clipped, torch.cat([p.grad.detach().reshape(-1) for p in self.params])))

    monkeypatch.setattr(DPOptimizer, "add_noise", recording)
    model = DPSGDGAN(batch_size=2, epochs=1, hidden=32, release_seed=SEED).fit(records, 2.0, DELTA)
    monkeypatch.setattr(DPOptimizer, "add_noise", add_noise)
    assert len(captured) == 1 and model.privacy_report.steps == 1
    return captured[0][0], captured[0][1], model.privacy_report.epsilon


@pytest.mark.parametrize("mutation", ["sound", "noise halved", "sensitivity halved"])
def test_dpsgd_gradient_noise_passes_the_audit_and_fails_its_mutants(mutation: str, monkeypatch: pytest.MonkeyPatch) -> None:
    if mutation == "noise halved":
        from opacus.optimizers import optimizer

        noise = optimizer._generate_noise
        monkeypatch.setattr(optimizer, "_generate_noise", lambda std, *args, **kwargs: noise(std / 2, *args, **kwargs))
    elif mutation == "sensitivity halved":  # Opacus' add/remove std z C where replace-one needs z 2C
        from synthcity_dpswf.models import dpsgd_gan

        optimiser = dpsgd_gan.DPOptimizer
        monkeypatch.setattr(dpsgd_gan, "DPOptimizer", lambda *args, noise_multiplier, **kwargs: optimiser(
            *args, noise_multiplier=noise_multiplier / 2, **kwargs))
    clipped, noisy, claimed = dpsgd_release(torch.tensor([[0.0, 1.0], [1.0, 0.0]]), monkeypatch)
    clipped_other, _, _ = dpsgd_release(torch.tensor([[0.0, 1.0], [-1.0, 0.0]]), monkeypatch)
    clip = DPSGDGAN().max_grad_norm
    assert float((clipped - clipped_other).norm()) <= 2 * clip * (1 + 1e-5)  # replace-one sensitivity 2C holds
    if mutation != "sound":
        with pytest.raises(PrivacyAuditError, match="PRIVACY AUDIT FAILED"):
            audit_noise((noisy - clipped).numpy(), 2 * clip, DELTA, claimed, CONFIDENCE)
        return
    result = audit_noise((noisy - clipped).numpy(), 2 * clip, DELTA, claimed, CONFIDENCE)
    assert 0.85 * claimed < result.epsilon_lower_bound < claimed


# ------------------------------------------------------------------------------------ plugin end to end
# The synthcity plugin (marginal release, public domain: the whole budget goes to the one-shot release) fitted
# three times on a small table; each stored release minus the exact counts of the encoded table is its noise, and
# the sensitivity is the one the layout's worst pair (two rows different in every coarse level) attains.
def plugin_noise(monkeypatch: pytest.MonkeyPatch) -> tuple[np.ndarray, float, float]:
    """The realised noise of three plugin fits, the attained sensitivity and the reported epsilon."""
    from synthcity_dpswf.models import base as model_base

    seeds = iter(range(SEED, SEED + 3))
    monkeypatch.setattr(model_base, "secret_generator", lambda seed=None: secret_generator(next(seeds)))
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"a": rng.integers(0, 5, 40), "b": rng.choice(["x", "y", "z"], 40), "c": rng.uniform(0, 1, 40)})
    domain = {"a": {"type": "numeric", "low": 0, "high": 4, "integer": True},
              "b": {"type": "categorical", "categories": ["x", "y", "z"]}, "c": {"type": "numeric", "low": 0.0, "high": 1.0}}
    noise = []
    for _ in range(3):
        plugin = Plugins().get("dpswflow", epsilon=2.0, delta=DELTA, domain=domain, n_steps=5).fit(frame)
        generator = plugin.generator_
        assert generator.pool_ is not None and generator.release == "marginal"
        exact = generator.mechanism.statistic(plugin.encoder_.encode(frame), None)
        noise.append((generator.pool_.releases[0] - exact).numpy())
    layout = generator.mechanism.layout
    first, last = torch.zeros(1, layout.n_columns), torch.tensor([[k - 1 for k in layout.levels]], dtype=torch.float32)
    attained = float((generator.mechanism.statistic(first, None) - generator.mechanism.statistic(last, None)).norm())
    return np.concatenate(noise), attained, plugin.privacy_report().epsilon


@pytest.mark.parametrize("mutation", ["sound", "noise halved", "sensitivity halved"])
def test_plugin_release_passes_the_audit_end_to_end_and_fails_its_mutants(mutation: str, monkeypatch: pytest.MonkeyPatch) -> None:
    if mutation == "noise halved":
        halve_the_noise(monkeypatch)
    elif mutation == "sensitivity halved":
        halve_the_sensitivity("marginal", monkeypatch)
    noise, sensitivity, claimed = plugin_noise(monkeypatch)
    assert claimed == pytest.approx(2.0)
    if mutation != "sound":
        with pytest.raises(PrivacyAuditError, match="PRIVACY AUDIT FAILED"):
            audit_noise(noise, sensitivity, DELTA, claimed, CONFIDENCE)
        return
    result = audit_noise(noise, sensitivity, DELTA, claimed, CONFIDENCE)
    assert 0.75 * claimed < result.epsilon_lower_bound < claimed

"""privacy.md, "Tests that must hold": the audits of the releases beyond one-shot kinds (those are in
test_mechanisms.py): per-step releases of every kind through the generator's own fit, the DP domain's type, value
and category counts, the DP-SGD baseline, and the three plugins end to end (with and without a DP domain). Each
passes the implementation and fails its factor-2 mutants (noise halved, sensitivity halved; type counts released at
weight 1) and, where batches are sampled, batches drawn with a fixed seed. Every audit holds at 99.9% confidence,
and its own randomness is seeded."""

from __future__ import annotations

import math
import types

import numpy as np
import pandas as pd
import pytest
import torch
from scipy.stats import binom, norm

import synthcity_dpswf  # noqa: F401  (registers the plugins)
from synthcity.plugins import Plugins
from synthcity_dpswf.models import DPSWFlowR, releasing
from baselines.dpsgd_gan import DPSGDGAN  # benchmarks/baselines (pyproject.toml's pytest pythonpath puts benchmarks/ on the path)
from synthcity_dpswf.recipes import tables as table_recipe
from synthcity_dpswf.privacy import (
    MECHANISMS,
    MarginalLayout,
    MarginalRelease,
    PrivacyAuditError,
    ReleaseOptions,
    analytic_gaussian_epsilon,
    analytic_gaussian_noise_multiplier,
    poisson_batch,
    release_domain,
    sample_batch,
    secret_generator,
)
from synthcity_dpswf.privacy.counts import DECIMAL_CELLS
from synthcity_dpswf.privacy.domain import calibration as domain_calibration, columns as domain_columns
from synthcity_dpswf.privacy.domain import release as domain_release
from synthcity_dpswf.privacy.audit import (
    audit_exclusive_event,
    audit_gaussian_parts,
    audit_gaussian_scores,
    audit_noise,
    audit_sampled_schedule,
)
from synthcity_dpswf.privacy.mechanisms import base

DELTA, CONFIDENCE, SEED = 1e-5, 0.999, 17
CLAIM_MULTIPLIER = analytic_gaussian_noise_multiplier  # the claim's z, kept apart from the mutants' patched copies
pytestmark = pytest.mark.filterwarnings("ignore:release noise seeded with a known seed")


def halve_the_noise(monkeypatch: pytest.MonkeyPatch) -> None:
    """Mutant: every release's noise drawn at half its std."""
    noise = base.gaussian_noise
    monkeypatch.setattr(base, "gaussian_noise", lambda shape, std, generator, like: noise(shape, std / 2, generator, like))


def halve_the_sensitivity(kind: str, monkeypatch: pytest.MonkeyPatch, neighbouring: str = "replace_one") -> None:
    """Mutant: the kind's sensitivity under ``neighbouring`` taken at half its value (so its noise is half what z
    requires)."""
    method = "sensitivity" if neighbouring == "replace_one" else "add_remove_sensitivity"
    sensitivity = getattr(MECHANISMS[kind], method)
    monkeypatch.setattr(MECHANISMS[kind], method, lambda self, directions: sensitivity(self, directions) / 2)


# ------------------------------------------------------------------------------ per-step sampled releases
# Every kind with a per-step form, through ``DPSWFlowR.fit`` itself (the generator calibrates z with the accountant
# it chooses for the kind, and its report gives the claim): K = 16 releases, each on a batch of b = 1 of n = 4
# records (q = 1/4), so the claim relies on amplification by subsampling. D' holds the replacement c' at every
# position, D_j the canary c at position j; every position is audited, so a sampler that fixes the batch cannot hide
# the canary. Records are 2-d (c' = -c: both kinds of point attain their sensitivity, the projected kind nearly) or
# level codes of two 4-level columns (c = (0, 0), c' = (3, 3): different in every table's cell).
N_RECORDS, STEPS, SCHEDULE_EPSILON, SCHEDULE_RUNS = 4, 16, 6.0, 120
LAYOUT = MarginalLayout.build((4, 4), coarse_bins=4)
PER_STEP_KINDS = ["record", "projected", "projected_histogram", "marginal"]


def schedule_pair(kind: str) -> tuple[torch.Tensor, torch.Tensor]:
    """The canary c and its replacement c' for ``kind`` (for the sum kinds, f(c) and f(c') are orthogonal: every
    direction's bin, every table's cell differs)."""
    if kind == "marginal":
        return torch.zeros(1, 2), torch.full((1, 2), 3.0)
    canary = torch.nn.functional.normalize(torch.tensor([[0.6, -0.8]]), dim=1)
    return canary, -canary


def schedule_scores(kind: str, position: int | None, neighbouring: str = "replace_one") -> tuple[np.ndarray, np.ndarray, float, float]:
    """Per-step scores of SCHEDULE_RUNS fits, whether the canary's position was in each step's batch (read from the
    sampler the schedule calls), the claimed epsilon (the fit's report) and the claimed step epsilon (one release at
    the report's z). Replace-one: D' holds c' at every one of the n positions, D_j the canary at position j, scores
    <R_k - S_k(c'), g_k> / (||g_k|| s_k) with g_k = S_k(c) - S_k(c'). Add/remove (Poisson rate 1/4): D' holds n - 1
    copies of c', D_j the canary inserted at position j, scores <R_k, f_k(c)> / (||f_k(c)|| s_k) (f(c') is orthogonal
    to f(c), so the other records do not move them)."""
    canary, replacement = schedule_pair(kind)
    add_remove = neighbouring == "add_remove"
    records = replacement.repeat(N_RECORDS - (1 if add_remove else 0), 1)
    if position is not None:
        records = torch.cat([records[:position], canary, records[position + 1 - (1 if add_remove else 0):]])
    batches: list[torch.Tensor] = []
    name = "poisson_batch" if add_remove else "sample_batch"
    sampler = getattr(releasing, name)  # the sampler in use (a mutant's, if one is installed)

    def recording(n_records: int, size: float, generator: torch.Generator) -> torch.Tensor:
        batches.append(sampler(n_records, size, generator))
        return batches[-1]

    setattr(releasing, name, recording)
    schedule = {"sample_rate": 1 / N_RECORDS} if add_remove else {"batch_size": 1}
    try:
        models = [
            DPSWFlowR(release=kind, release_steps=STEPS, n_release_directions=4, n_bins=4, neighbouring=neighbouring,
                      marginals=LAYOUT if kind == "marginal" else None, **schedule).fit(records, SCHEDULE_EPSILON, DELTA)
            for _ in range(SCHEDULE_RUNS)
        ]
    finally:
        setattr(releasing, name, sampler)
    pools = [model.pool_ for model in models]
    mechanism = models[0].mechanism
    directions = [None] * STEPS if pools[0].directions is None else list(pools[0].directions)  # public: the same every run
    canaries = torch.stack([mechanism.statistic(canary, d).double().reshape(-1) for d in directions])
    bases = torch.stack([mechanism.statistic(replacement, d).double().reshape(-1) for d in directions])
    gaps, bases = (canaries, torch.zeros_like(bases)) if add_remove else (canaries - bases, bases)
    units = gaps / gaps.norm(dim=1, keepdim=True)
    values = torch.stack([pool.releases.double().reshape(STEPS, -1) for pool in pools])  # (runs, K, cells)
    noise_std = torch.stack([pool.noise_std for pool in pools])  # (runs, K)
    scores = (((values - bases) * units).sum(dim=-1) / noise_std).numpy()
    included = np.array([position is not None and position in batch.tolist() for batch in batches]).reshape(SCHEDULE_RUNS, STEPS)
    report = models[0].privacy_report
    assert all(model.privacy_report.noise_multiplier == report.noise_multiplier for model in models)
    return scores, included, report.epsilon, analytic_gaussian_epsilon(report.noise_multiplier, DELTA)


@pytest.mark.parametrize("mutation", ["sound", "noise halved", "sensitivity halved", "fixed-seed sampling"])
@pytest.mark.parametrize("kind, neighbouring", [(kind, "replace_one") for kind in PER_STEP_KINDS]
                         + [("projected_histogram", "add_remove"), ("marginal", "add_remove")])
def test_per_step_audit_passes_the_fitted_schedule_of_every_kind_and_fails_its_mutants(
    kind: str, neighbouring: str, mutation: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if mutation == "noise halved":
        halve_the_noise(monkeypatch)
    elif mutation == "sensitivity halved":
        halve_the_sensitivity(kind, monkeypatch, neighbouring)
    elif mutation == "fixed-seed sampling" and neighbouring == "replace_one":
        monkeypatch.setattr(releasing, "sample_batch", lambda n, b, generator: sample_batch(n, b, torch.Generator().manual_seed(0)))
    elif mutation == "fixed-seed sampling":  # a public seed whose coins take every position (seed 0 takes none)
        monkeypatch.setattr(releasing, "poisson_batch", lambda n, q, generator: poisson_batch(n, q, torch.Generator().manual_seed(1)))
    shared = secret_generator(SEED)  # one secret stream for every fit of the test, seeded for reproducibility
    monkeypatch.setattr(releasing, "secret_generator", lambda seed=None: shared)
    scores_out, _, claimed, claimed_step = schedule_scores(kind, None, neighbouring)
    assert claimed == pytest.approx(SCHEDULE_EPSILON, abs=0.03)
    confidence = 1 - (1 - CONFIDENCE) / (2 * N_RECORDS)  # Bonferroni over the positions and the two bounds
    try:
        results = []
        for position in range(N_RECORDS):
            scores_in, included, _, _ = schedule_scores(kind, position, neighbouring)
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
# The domain's released vectors (type counts at weight w, then category counts, numeric bins and value histograms,
# each stage with its own noise) are read where the release makes them (``noisy_counts``, wrapped), on D and on D'
# that differ in one record, the canary:
# - between kinds, bins and histogram cells: an integer column of 20 zeros and 20 eights with 3 (D) or 1.5 (D'):
#   the type counts move between the integer and the float cell, the bins and the value histogram (unit cells inside
#   the range [-0.5, 8.5]) between the cells of 3 and of 2 (1.5 falls in [1.5, 2.5)), so the pair attains the whole
#   Delta of one column, in three independent parts;
# - between categories: a column of 40 "a" and 20 "b" with one more "a" (D) or "b" (D'): the category counts.
# Each part is scored by its likelihood ratio's statistic and the parts are combined in Gaussian DP
# (``audit_gaussian_parts``), so a part released with more weight than the sensitivity assumed is caught.
DOMAIN_EPSILON, DOMAIN_RUNS = 8.0, 1000


def domain_vectors(
    frame: pd.DataFrame, monkeypatch: pytest.MonkeyPatch, runs: int
) -> list[tuple[list[tuple[np.ndarray, np.ndarray]], domain_release.DomainRelease]]:
    """For each of ``runs`` domain releases of ``frame``: the (exact counts, released counts) of every noisy vector, and
    the release."""
    captured: list[tuple[np.ndarray, np.ndarray]] = []
    noisy = domain_release.noisy_counts  # the one in use (a mutant's, if one is installed)

    def recording(counts: np.ndarray, noise_std: float, secret: torch.Generator, weight: float = 1.0) -> np.ndarray:
        released = noisy(counts, noise_std, secret, weight)
        captured.append((counts.copy(), released))
        return released

    monkeypatch.setattr(domain_release, "noisy_counts", recording)
    secret, runs_out = secret_generator(SEED), []
    for _ in range(runs):
        captured.clear()
        release = release_domain(frame, DOMAIN_EPSILON, DELTA, secret)
        runs_out.append((list(captured), release))
    monkeypatch.setattr(domain_release, "noisy_counts", noisy)
    return runs_out


def mutate_the_domain(mutation: str, monkeypatch: pytest.MonkeyPatch) -> None:
    if mutation == "noise halved":  # every stage's std from half the multiplier (the threshold follows s_c)
        multiplier = domain_calibration.analytic_gaussian_noise_multiplier
        monkeypatch.setattr(domain_calibration, "analytic_gaussian_noise_multiplier", lambda epsilon, delta: multiplier(epsilon, delta) / 2)
    elif mutation == "sensitivity halved":  # every stage's sensitivity taken at half its value
        monkeypatch.setattr(domain_calibration, "math", types.SimpleNamespace(**{**vars(math), "sqrt": lambda value: math.sqrt(value) / 2}))
    elif mutation == "type counts at weight 1":  # the kinds' counts released unscaled while the budget assumes w = 1/2
        noisy = domain_release.noisy_counts
        monkeypatch.setattr(domain_release, "noisy_counts", lambda counts, std, secret, weight=1.0: noisy(counts, std, secret, 1.0))


def audit_domain_parts(parts: list[tuple[np.ndarray, ...]], mutation: str, certified: float) -> None:
    """The canary pair's independent Gaussian parts (``audit_gaussian_parts``) against the domain's claim: the counts
    are (epsilon, delta / 2)-DP, the key threshold takes the other delta / 2. A mutant must fail; the sound release
    must certify more than ``certified`` of the claim and stay below it."""
    first, second = parts
    audit = lambda: audit_gaussian_parts(list(zip(first, second)), DELTA / 2, DOMAIN_EPSILON, CONFIDENCE)  # noqa: E731
    if mutation != "sound":
        with pytest.raises(PrivacyAuditError, match="PRIVACY AUDIT FAILED"):
            audit()
        return
    result = audit()
    assert certified * DOMAIN_EPSILON < result.epsilon_lower_bound < DOMAIN_EPSILON


def cell(edges: np.ndarray, value: float) -> int:
    return int(np.searchsorted(edges, value, side="right")) - 1


@pytest.mark.parametrize("mutation", ["sound", "noise halved", "sensitivity halved", "type counts at weight 1"])
def test_dp_domain_type_bin_and_histogram_counts_pass_the_audit_and_fail_their_mutants(
    mutation: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    mutate_the_domain(mutation, monkeypatch)
    # The audit needs every run's kind integer (the bins vector's partition). The kind is post-processing: at this
    # budget's small noise, FLOAT_MARGIN types the column float in 0.13% of runs (a float count 3 stds out of the
    # noise), so the audit decides the kinds without it, by the integer and float counts alone.
    monkeypatch.setattr(domain_columns, "FLOAT_MARGIN", math.inf)
    parts = []
    bins = domain_columns.integer_bin_edges()
    for value in (3, 1.5):
        runs = domain_vectors(pd.DataFrame({"x": [0] * 20 + [8] * 20 + [value]}, dtype=object), monkeypatch, DOMAIN_RUNS)
        types, counts, histogram = [], [], []
        for vectors, release in runs:
            low, high = release.bounds["x"]  # (-0.5, 8.5), now and then wider by a noise bin: 3 and 2 stay unit cells
            # Three draws: type counts, bins and the value histogram (its overflow cells first and last).
            assert len(vectors) == 3 and release.kinds == {"x": "integer"} and low <= -0.5 and high >= 8.5
            zero = int(np.flatnonzero(vectors[2][0] == 20)[0])  # the histogram's cell of 0 (unit cells from there on)
            types.append(vectors[0][1][0] - vectors[0][1][1])  # integer minus float cell
            counts.append(vectors[1][1][cell(bins, 3)] - vectors[1][1][cell(bins, 2)])
            histogram.append(vectors[2][1][zero + 3] - vectors[2][1][zero + 2])
        parts.append((np.array(types), np.array(counts), np.array(histogram)))
    # The canary attains the column's whole sensitivity: most of the claim is certified.
    audit_domain_parts(parts, mutation, 0.7)


@pytest.mark.parametrize("mutation", ["sound", "noise halved"])
def test_dp_domain_category_counts_pass_the_audit_and_fail_their_mutant(mutation: str, monkeypatch: pytest.MonkeyPatch) -> None:
    mutate_the_domain(mutation, monkeypatch)
    scores = []
    for value in ("a", "b"):
        runs = domain_vectors(pd.DataFrame({"c": ["a"] * 40 + ["b"] * 20 + [value]}), monkeypatch, DOMAIN_RUNS)
        for vectors, _ in runs:  # the type counts, then the category counts in the order of the observed counts: a, b
            assert len(vectors) == 2 and list(vectors[1][0]) in ([41, 20, 0], [40, 21, 0])  # the missing cell last
        scores.append(np.array([vectors[1][1][0] - vectors[1][1][1] for vectors, _ in runs]))
    if mutation != "sound":
        with pytest.raises(PrivacyAuditError, match="PRIVACY AUDIT FAILED"):
            audit_gaussian_scores(scores[0], scores[1], DELTA / 2, DOMAIN_EPSILON, CONFIDENCE)
        return
    result = audit_gaussian_scores(scores[0], scores[1], DELTA / 2, DOMAIN_EPSILON, CONFIDENCE)
    # The canary moves the category counts only (not the type cells): it attains sqrt(2) of Delta = sqrt(2.5).
    assert 0.5 * DOMAIN_EPSILON < result.epsilon_lower_bound < DOMAIN_EPSILON


@pytest.mark.parametrize("mutation", ["sound", "threshold without its tail quantile"])
def test_dp_domain_publishes_a_category_held_by_one_record_with_probability_at_most_delta(
    mutation: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """D = 40 x "common" + "rare", D' = 41 x "common": publishing "rare" is impossible on D', so
    (epsilon, delta)-DP bounds its probability on D by delta, whatever epsilon. A large delta (0.2) makes the
    threshold's tail (delta / 2 for one column) measurable in a few hundred runs."""
    if mutation != "sound":  # tau = 1 + s * 0: a record alone passes half the time
        monkeypatch.setattr(domain_calibration, "norm", types.SimpleNamespace(isf=lambda tail: 0.0))
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
        from baselines import dpsgd_gan

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
# The synthcity plugins fitted on a small table: every stored release minus the exact counts of the batch it was made
# from (the encoded table's rows that the sampler picked, recorded where the schedule calls it) is its noise; the
# releases are one (dpswflow) or K = 10 of all 40 rows (dpswflow_r and dpswgen below 1,000 rows: q = 1, no
# amplification), the layout's worst pair (two rows different in every coarse level) moving each by the sensitivity.
# The DP domain's vectors (the type counts, category counts, numeric bins and value histograms of the columns it
# releases; with the declared domain below, the value histogram of its float column) are read where they are drawn.
# Every noise entry is divided by the std its part's claim implies (the release's stored z Delta; for the domain, the
# stage stds of ``privacy.domain.calibration.stage_noise`` at the z_D of the domain's own claimed epsilon, from the kinds it
# released), so a sound run's are N(0, 1); a pair of rows different in every type cell, category, bin and cell of every
# table moves each domain vector by sqrt(2) w (w: its weight) and each release by Delta, so the whole is
# sqrt(sum 2 w^2 / s^2 + K Delta^2 / s_rel^2)-GDP between them (Gaussian mechanisms compose in GDP), which
# ``audit_noise`` checks against the report's epsilon, the domain inside the releases' accounting (privacy.md, "One
# budget"). Each fails its noise-halved mutant (the releases' and the domain's stages' noise halved).
PLUGIN_EPSILON = 2.0
PLUGIN_DOMAIN = {"a": {"type": "numeric", "low": 0, "high": 4, "integer": True},
                 "b": {"type": "categorical", "categories": ["x", "y", "z"]}, "c": {"type": "numeric", "low": 0.0, "high": 1.0}}


def plugin_table() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    # "c" coded to one decimal: the DP domain counts its atoms (stage 4), whose noise the audit then reads too
    return pd.DataFrame({"a": rng.integers(0, 5, 40), "b": rng.choice(["x", "y", "z"], 40), "c": np.round(rng.uniform(0, 1, 40), 1)})


def plugin_noise(name: str, domain: dict | None, monkeypatch: pytest.MonkeyPatch) -> tuple[np.ndarray, float, float]:
    """The noise of three plugin fits, each entry divided by its claimed std, the separation (in those units) that a
    pair of rows attains, and the reported epsilon."""
    shared = secret_generator(SEED)  # the releases' and the domain's noise, seeded for a reproducible audit
    monkeypatch.setattr(releasing, "secret_generator", lambda seed=None: shared)
    monkeypatch.setattr(table_recipe, "secret_generator", lambda seed=None: shared)
    batches: list[torch.Tensor] = []
    sampler = releasing.sample_batch
    monkeypatch.setattr(releasing, "sample_batch", lambda n, b, generator: (batches.append(sampler(n, b, generator)), batches[-1])[1])
    drawn: list[tuple[np.ndarray, float]] = []  # the domain's vectors: released-scale noise and weight, in order
    releases: list[domain_release.DomainRelease] = []
    noisy, release_domain_used = domain_release.noisy_counts, table_recipe.release_domain_at

    def recording(counts: np.ndarray, noise_std: float, secret: torch.Generator, weight: float = 1.0) -> np.ndarray:
        released = noisy(counts, noise_std, secret, weight)
        drawn.append(((released - counts) * weight, weight))
        return released

    monkeypatch.setattr(domain_release, "noisy_counts", recording)
    monkeypatch.setattr(table_recipe, "release_domain_at", lambda *args, **kwargs: (releases.append(release_domain_used(*args, **kwargs)), releases[-1])[1])
    frame, noise, separations = plugin_table(), [], []
    for _ in range(3):
        batches.clear()
        drawn.clear()
        plugin = Plugins().get(name, epsilon=PLUGIN_EPSILON, delta=DELTA, domain=domain, n_steps=5).fit(frame)
        generator = plugin.generator_
        assert generator.pool_ is not None and generator.release == "marginal" and drawn
        domain_noise = claimed_domain_noise(drawn, releases[-1], plugin.domain_part_)
        # The last two vectors drawn: the declared "c"'s atoms and its precision partition (stage 4), audited with the
        # rest (with no schema, 40 rows rarely place "c" where its values are: its atom vector is then empty).
        assert domain is None or (len(drawn[-2][0]) > 0 and len(drawn[-1][0]) == DECIMAL_CELLS)
        records, pool = plugin.encoder_.encode(frame), generator.pool_
        assert len(batches) == pool.n_releases and all(len(batch) == len(frame) for batch in batches)  # q = 1 below 1,000 rows
        exact = torch.stack([generator.mechanism.statistic(records[batch], None) for batch in batches])
        noise.append(((pool.releases - exact) / pool.noise_std[:, None]).numpy().reshape(-1))
        layout = generator.mechanism.layout
        first, last = torch.zeros(1, layout.n_columns), torch.tensor([[k - 1 for k in layout.levels]], dtype=torch.float32)
        attained = float((generator.mechanism.statistic(first, None) - generator.mechanism.statistic(last, None)).norm())
        separation = pool.n_releases * attained**2 / float(pool.noise_std[0]) ** 2 + sum(part for _, part in domain_noise)
        noise.extend(entries for entries, _ in domain_noise)
        separations.append(separation)
    # The released kinds (hence the layout) may differ between fits: the smallest separation bounds every fit's.
    return np.concatenate(noise), math.sqrt(min(separations)), plugin.privacy_report().epsilon


def claimed_domain_noise(
    drawn: list[tuple[np.ndarray, float]], release: domain_release.DomainRelease, part: object
) -> list[tuple[np.ndarray, float]]:
    """The domain's noise vectors (in the order the release draws them: type counts per typed column, then each
    column's categories or bins, then the value histograms, then the float columns' atoms, then their precision
    partitions) each divided by the std its stage's claim implies, with the separation sqrt(2) w / s a pair attains in
    it, squared."""
    z = CLAIM_MULTIPLIER(part.epsilon, part.delta - part.threshold_delta)  # type: ignore[attr-defined]  # z_D, its own claim
    kinds = list(release.kinds.values())
    n_categorical = kinds.count("categorical")
    n_atoms = kinds.count("float") + sum(not integer for _, _, integer in release.declared.values())
    n_precision = n_atoms  # the float columns, typed or declared
    s, s_c = domain_calibration.stage_noise(z, len(kinds), n_categorical, len(kinds) - n_categorical, len(release.declared),
                                   "replace_one", n_atoms, n_precision)
    stds = [s] * len(kinds)
    stds += [s_c if kind == "categorical" else domain_calibration.range_ratio(n_categorical) * s_c for kind in kinds]
    stds += [domain_calibration.HISTOGRAM_NOISE_RATIO * s_c] * (len(release.histograms))
    stds += [domain_calibration.ATOM_NOISE_RATIO * s_c] * n_atoms
    stds += [domain_calibration.DECIMAL_NOISE_RATIO * s_c] * n_precision
    assert len(stds) == len(drawn)
    return [(noise / std, 2 * weight**2 / std**2) for (noise, weight), std in zip(drawn, stds)]


@pytest.mark.filterwarnings("ignore:the DP domain could not place")
@pytest.mark.parametrize("mutation", ["sound", "noise halved"])
@pytest.mark.parametrize("name, domain", [("dpswflow", PLUGIN_DOMAIN), ("dpswflow_r", PLUGIN_DOMAIN), ("dpswgen", PLUGIN_DOMAIN),
                                          ("dpswflow", None)], ids=["dpswflow", "dpswflow_r", "dpswgen", "dp-domain+dpswflow"])
def test_plugin_releases_pass_the_audit_end_to_end_and_fail_their_mutant(
    name: str, domain: dict | None, mutation: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if mutation == "noise halved":
        halve_the_noise(monkeypatch)
        stage_noise = domain_release.stage_noise
        monkeypatch.setattr(domain_release, "stage_noise", lambda *args: tuple(std / 2 for std in stage_noise(*args)))
    noise, separation, claimed = plugin_noise(name, domain, monkeypatch)
    # Most of the claim is certified (less with a DP domain: GDP composition is tighter than the report's basic one).
    audit_end_to_end(noise, separation, claimed, mutation, 0.5 if domain is not None else 0.3)


def audit_end_to_end(noise: np.ndarray, separation: float, claimed: float, mutation: str, certified: float) -> None:
    """The end-to-end audits' shared tail: the report claims the plugins' epsilon; a mutant fails the audit, and a
    sound run passes it, certifying more than ``certified`` of the claim."""
    assert claimed == pytest.approx(PLUGIN_EPSILON, abs=0.03)
    if mutation != "sound":
        with pytest.raises(PrivacyAuditError, match="PRIVACY AUDIT FAILED"):
            audit_noise(noise, separation, DELTA, claimed, CONFIDENCE)
        return
    result = audit_noise(noise, separation, DELTA, claimed, CONFIDENCE)
    assert certified * claimed < result.epsilon_lower_bound < claimed


@pytest.mark.parametrize("mutation", ["sound", "noise halved", "sensitivity halved"])
def test_dp_domain_atom_and_precision_counts_pass_the_audit_with_their_bins_and_histogram_and_fail_their_mutants(
    mutation: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A float column's canary, 17.5 or 40.25 (both counted by value, stage 4; one decimal against two), moves one unit
    between two stage-2 bins, two stage-3 cells, two atoms and two cells of the precision partition: the four parts
    together attain the whole sensitivity of stages 2 to 4 (the worst pair of the sensitivity lemma: one unit out of
    one cell and into another in each partition of the column)."""
    mutate_the_domain(mutation, monkeypatch)
    bins = domain_columns.log_bin_edges()
    parts = []
    for value in (17.5, 40.25):
        runs = domain_vectors(pd.DataFrame({"x": [17.5] * 40 + [40.25] * 20 + [value]}), monkeypatch, DOMAIN_RUNS)
        counts, histogram, atoms, decimals = [], [], [], []
        for vectors, release in runs:
            edges = np.asarray(release.histograms["x"][0])  # stage 3's cells: stage 2's range, before any trimming
            assert len(vectors) == 5 and release.kinds == {"x": "float"} and edges[0] <= 16 and edges[-1] >= 64
            assert list(vectors[3][0]) in ([41, 20], [40, 21])  # the atoms 17.5 and 40.25, in increasing order
            assert list(vectors[4][0][:3]) in ([0, 41, 20], [0, 40, 21])  # no, one and two decimals
            held = np.flatnonzero(vectors[2][0])  # the two stage-3 cells (the overflow cells first and last: empty)
            assert len(held) == 2
            counts.append(vectors[1][1][cell(bins, 17.5)] - vectors[1][1][cell(bins, 40.25)])
            histogram.append(vectors[2][1][held[0]] - vectors[2][1][held[1]])
            atoms.append(vectors[3][1][0] - vectors[3][1][1])
            decimals.append(vectors[4][1][1] - vectors[4][1][2])
        parts.append((np.array(counts), np.array(histogram), np.array(atoms), np.array(decimals)))
    # Stages 2 to 4 carry mu^2 / (1 + w^2) of the claim, in four parts: most of it is certified.
    audit_domain_parts(parts, mutation, 0.55)


@pytest.mark.parametrize("mutation", ["sound", "threshold without its tail quantile"])
def test_dp_domain_publishes_an_atom_held_by_one_record_with_probability_at_most_delta(
    mutation: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """D = 40 x 17.5 + 20.25, D' = 41 x 17.5: publishing the atom 20.25 (inside the range, counted by value) is
    impossible on D', so (epsilon, delta)-DP bounds its probability on D by delta (0.2, to measure the tail)."""
    if mutation != "sound":  # r_a tau = 0: a record alone passes about half the time
        monkeypatch.setattr(domain_calibration, "norm", types.SimpleNamespace(isf=lambda tail: 0.0))
    delta, runs, secret = 0.2, 400, secret_generator(SEED)
    frame = pd.DataFrame({"x": [17.5] * 40 + [20.25]})
    releases = [release_domain(frame, 1.0, delta, secret) for _ in range(runs)]
    hits = sum(20.25 in dict(release.atoms.get("x", ())) for release in releases)
    if mutation == "sound":  # every published atom passed r_a tau (a threshold of tau alone published 0.22 of runs)
        assert all(count > domain_calibration.ATOM_NOISE_RATIO * release.threshold
                   for release in releases for _, count in release.atoms.get("x", ()))
        design = norm.sf((domain_calibration.ATOM_NOISE_RATIO * releases[0].threshold - 1)
                         / (domain_calibration.ATOM_NOISE_RATIO * releases[0].category_std))
        assert hits <= binom.ppf(0.9999, runs, design)  # the designed rate of a count of one passing its threshold
    if mutation != "sound":
        with pytest.raises(PrivacyAuditError, match="exclusive event"):
            audit_exclusive_event(hits, runs, delta, CONFIDENCE)
        return
    assert audit_exclusive_event(hits, runs, delta, CONFIDENCE) < delta
    assert hits > 0  # the threshold is attained, not vacuous: about delta / (2 (1 + e)) of the runs


STAGE_FOUR = {"atoms": (3, "ATOM_NOISE_RATIO"), "precision": (4, "DECIMAL_NOISE_RATIO")}
"""Stage 4's vectors of a one-float-column table (its draws: type counts, bins, histogram, atoms, precision): their
place among the draws and the name of their noise ratio."""


@pytest.mark.parametrize("mutation", ["sound", "at s_c"])
@pytest.mark.parametrize("part", list(STAGE_FOUR))
def test_dp_domain_stage_four_noise_has_the_std_its_calibration_claims(part: str, mutation: str,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """The realised noise of the atom counts, and of the precision partition's, (released minus exact) over many
    releases, in units of the claimed r_a s_c (r_p s_c): std 1, where the part drawn at s_c (the calibration still
    counting it at its ratio) gives 1 / r_a (1 / r_p)."""
    place, name = STAGE_FOUR[part]
    ratio = getattr(domain_calibration, name)
    noisy = domain_release.noisy_counts
    if mutation != "sound":
        calls = {"n": 0}

        def part_at_s_c(counts: np.ndarray, noise_std: float, secret: torch.Generator, weight: float = 1.0) -> np.ndarray:
            calls["n"] += 1
            return noisy(counts, noise_std / (ratio if (calls["n"] - 1) % 5 == place else 1.0), secret, weight)

        monkeypatch.setattr(domain_release, "noisy_counts", part_at_s_c)
    runs = domain_vectors(pd.DataFrame({"x": [17.5] * 400 + [40.5] * 200}), monkeypatch, 300)
    scaled = np.concatenate([(vectors[place][1] - vectors[place][0]) / (ratio * release.category_std)
                             for vectors, release in runs])
    assert len(scaled) == 300 * (2 if part == "atoms" else DECIMAL_CELLS)
    if mutation != "sound":
        assert np.std(scaled) < 0.75
        return
    assert 0.9 < np.std(scaled) < 1.1 and abs(np.mean(scaled)) < 0.15


# ------------------------------------------------------------------------------------ paid pair selection
# DPSWflow on a 7-column table with every column declared (no DP domain): stage A, T = 10 rounds of the exponential
# mechanism over the 21 pairs, then stage B, the release of the 10 chosen pairs (privacy.md, "Paid pair selection").
# Every round's epsilon_r and Delta_u are recorded as drawn, with its scores, and stage B's realised noise (released
# minus exact counts) is divided by its stored std. The whole, recomputed from what was drawn (the rounds at 0.63
# epsilon_r-GDP each, stage B at sqrt(2 m_B) over its std), composes in Gaussian DP to the report's epsilon; the first
# round's privacy loss between the table and a neighbour (a row moved to the opposite corner) spans at most epsilon_r.
# Rounds drawn at twice epsilon_r fail the composition.
SELECTION_DOMAIN = {f"x{j}": {"type": "numeric", "low": 0, "high": 3, "integer": True} for j in range(7)}


def selection_rounds(monkeypatch: pytest.MonkeyPatch, mutation: str) -> dict[str, object]:
    """One fit's recorded stage A and stage B, and the report."""
    from synthcity_dpswf.privacy.mechanisms import marginal as mechanism_module

    shared = secret_generator(SEED)
    monkeypatch.setattr(releasing, "secret_generator", lambda seed=None: shared)
    monkeypatch.setattr(table_recipe, "secret_generator", lambda seed=None: shared)
    rounds: list[tuple[torch.Tensor, float, float]] = []
    draw = mechanism_module.exponential_mechanism

    def recording(scores: torch.Tensor, epsilon: float, sensitivity: float, secret: torch.Generator) -> int:
        epsilon = 2 * epsilon if mutation != "sound" else epsilon
        rounds.append((scores, epsilon, sensitivity))
        return draw(scores, epsilon, sensitivity, secret)

    monkeypatch.setattr(mechanism_module, "exponential_mechanism", recording)
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({f"x{j}": rng.integers(0, 4, 60) for j in range(7)})
    frame.iloc[:30, 1] = frame.iloc[:30, 0]  # one strong pair
    plugin = Plugins().get("dpswflow", epsilon=PLUGIN_EPSILON, delta=DELTA, domain=SELECTION_DOMAIN).fit(frame)
    generator = plugin.generator_
    pool, layout = generator.pool_, generator.mechanism.layout
    exact_b = generator.mechanism.statistic(plugin.encoder_.encode(frame), None)
    neighbour = frame.copy()
    neighbour.iloc[0] = [3 - value for value in frame.iloc[0]]
    return {"rounds": rounds, "plugin": plugin, "layout": layout, "frame": frame, "neighbour": neighbour,
            "noise_b": ((pool.releases[0] - exact_b) / pool.noise_std[0]).numpy(),
            "mu_b": math.sqrt(2 * layout.n_tables) / float(pool.noise_std[0])}


@pytest.mark.parametrize("mutation", ["sound", "rounds at twice epsilon_r"])
def test_the_pair_selection_and_its_release_pass_the_audit_end_to_end_and_fail_their_mutant(
    mutation: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from synthcity_dpswf.privacy.exponential import BOUNDED_RANGE_GDP, selection_probabilities
    from synthcity_dpswf.privacy.mechanisms.marginal import candidate_layout, pair_scores

    run = selection_rounds(monkeypatch, mutation)
    rounds, plugin = run["rounds"], run["plugin"]
    part, report = plugin.selection_part_, plugin.privacy_report()
    assert len(rounds) == 10 and len(run["layout"].pairs) == 10 and report.epsilon == pytest.approx(PLUGIN_EPSILON, abs=0.03)
    assert all(sensitivity == 6.0 for _, _, sensitivity in rounds)
    # stage B: its realised noise is its stored std's
    assert 0.9 < np.std(run["noise_b"]) < 1.1 and abs(np.mean(run["noise_b"])) < 0.1
    # the first round (every pair a candidate): its privacy loss on a neighbour spans at most epsilon_r
    candidates = candidate_layout(plugin.encoder_.levels, run["layout"].coarse_levels[0], 0, ())
    scores = [torch.tensor(list(pair_scores(MarginalRelease(ReleaseOptions(layout=candidates)).statistic(
        plugin.encoder_.encode(frame), None), candidates).values()), dtype=torch.float64)
        for frame in (run["frame"], run["neighbour"])]
    assert torch.allclose(scores[0], rounds[0][0])
    loss = (selection_probabilities(scores[0], rounds[0][1], 6.0).log()
            - selection_probabilities(scores[1], rounds[0][1], 6.0).log())
    assert float(loss.max() - loss.min()) <= rounds[0][1]
    # the whole, from what was drawn, against the report
    mu_a = math.sqrt(sum((BOUNDED_RANGE_GDP * epsilon) ** 2 for _, epsilon, _ in rounds))
    drawn = analytic_gaussian_epsilon(1 / math.hypot(mu_a, run["mu_b"]), part.delta)
    if mutation != "sound":
        assert drawn > 1.1 * report.epsilon
        return
    assert mu_a == pytest.approx(1 / CLAIM_MULTIPLIER(part.epsilon, part.delta), rel=1e-6)
    assert 0.97 * report.epsilon < drawn <= report.epsilon * (1 + 1e-3)

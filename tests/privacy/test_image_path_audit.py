"""privacy.md, "A private image codec trained by DP-SGD" and "Tests that must hold": a white-box audit of every noisy
release the whole image path makes with the DP-SGD codec (issue 45, item 4). ``recipes.images`` trains the
``"private-autoencoder"`` codec on the private images at its share of the budget (K noisy clipped gradient sums),
spends its schedule into the run's ``Budget``, and fits DPSWflow's class-conditional projected-histogram release of the
encoded images with what is left, the whole accounted by RDP and stated by the run's ``PrivacyReport``. The audit runs
that path on neighbouring datasets (a canary image present, or replaced by another, or removed), reads every release
where it is made, and bounds the whole's epsilon from below at 99.9% confidence: below the report's epsilon for the
implementation, above it for each mutant (the codec's or the flow's noise halved, one codec step left out of the
accounting, per-record clipping off, and in a replace-one run the flow's noise calibrated to its add/remove
sensitivity sqrt(L) instead of sqrt(2L)). The path runs with the codec at the recipe's 0.8 of the budget and at 0.2, so
that a fault of the flow moves the whole's epsilon as clearly as one of the codec; ``audited_cases`` says which
mutants are run at which split and why the others are not. Every run is seeded."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from synthcity_dpswf.adapters import private_autoencoder
from synthcity_dpswf.adapters.private_autoencoder import PrivateAutoencoderSettings
from synthcity_dpswf.models import releasing
from synthcity_dpswf.privacy import MECHANISMS, Adjacency, PrivacyAuditError, PrivacyReport, dpsgd, secret_generator
from synthcity_dpswf.privacy.audit import audit_noise, gaussian_epsilon_lower_bound
from synthcity_dpswf.privacy.budget import Budget
from synthcity_dpswf.privacy.dpsgd import DPSGDSchedule, RecordLoss, StepObserver
from synthcity_dpswf.privacy.mechanisms import base as mechanism_base
from synthcity_dpswf.privacy.mechanisms.base import Release, ReleaseMechanism
from synthcity_dpswf.recipes import images as recipe

DELTA, CONFIDENCE, SEED = 1e-5, 0.999, 17
pytestmark = pytest.mark.filterwarnings("ignore:release noise seeded with a known seed")

# ------------------------------------------------------------------------------------------------- the run
# n = 8 private 8 x 8 images, every one in each of the codec's K = 2 batches (b = n under replace-one, Poisson rate 1
# under add/remove: q = 1) and in the flow's one release. No step is amplified by sampling, so on a pair of
# neighbouring datasets the whole path is an adaptive composition of Gaussian mechanisms, mu-GDP with mu^2 the sum over
# its releases of (Delta_attained / s)^2 (Dong, Roth & Su 2022), which the audit measures. At epsilon = 8 the RDP
# claim is 7.5% above that composition's epsilon (the sound run's margin), whatever the split; under replace-one the
# codec now draws Poisson batches at rate 1 (its default sampling) and the claim is the privacy loss distribution of
# the Gaussians, exact up to its grid, so there the sound run's margin is the audit's own (about 0.9); the 30-seed
# spreads below were measured with the RDP claim under both adjacencies, and the seeded runs here pass and fail as
# stated under both claims. The path runs at two splits of the budget, so that each part's faults move the whole's epsilon well clear of
# the audit's resolution (its bound is about 0.9 of the true epsilon):
# - codec-heavy (codec_share 0.8, the recipe's default): one of the codec's two steps carries 40% of the whole's mu^2:
#   left out of the accounting, the flow's noise is calibrated to what remains, and the true epsilon is 14% above the
#   claim; the flow's noise halved puts it 24% above, the codec's 98%. Over 30 seeds (either adjacency) the audit
#   certified 0.89-0.92 of the sound claim and 1.09-1.13 of the claim with a step left out (the least of the mutants:
#   1.19-1.23 with the flow's noise halved, 1.87-1.97 with the codec's, 10^6 without clipping).
# - flow-heavy (codec_share 0.2): the flow carries 80% of mu^2, so that its Delta taken as the other adjacency's
#   (sqrt(L) in a replace-one run, sqrt(2) too small) doubles 80% of mu^2 and the true epsilon is 33% above the
#   claim (codec-heavy: 4%, which the audit's bound, 0.99-1.02 of the claim over 30 seeds, cannot tell from sound:
#   the mutant is not run there); the codec's noise halved puts it 24% above, the flow's 99%. Over 30 seeds (either
#   adjacency) the audit certified 0.89-0.92 of the sound claim and 1.28-1.31 with the flow's sensitivity of the
#   other adjacency (1.18-1.21 with the codec's noise halved, 1.91-1.98 with the flow's, 10^6 without clipping).
#   One codec step left out is not run here: it carries 10% of mu^2, and the path's true epsilon stays 1.5% below
#   the claim (inside the RDP claim's slack): the run is still (8, 1e-5)-DP, and no audit can fail it (0.95-0.97).
N_IMAGES, EPSILON = 8, 8.0
CODEC_HEAVY, FLOW_HEAVY = 0.8, 0.2
"""``codec_share``: the codec's share of the budget's mu^2, the recipe's default, and the flow-heavy split."""
SETTINGS = PrivateAutoencoderSettings(latent_dim=2, width=1, epochs=2, batch_size=N_IMAGES, sample_rate=1.0,
                                      learning_rate=1e-2)
RUNS = 5
"""Fits per dataset. Each gives 2 x 385 noise entries of the codec and 10 x 16 x 8 of the flow, so that each part's
noise std is bounded to about 3% at 99.95% (``audit_noise``)."""


def run_config(neighbouring: Adjacency, codec_share: float) -> recipe.ImageRunConfig:
    """The run's public settings (``dpswf images --codec private-autoencoder``) under ``neighbouring``, the codec
    taking ``codec_share`` of the budget."""
    return recipe.ImageRunConfig(
        codec="private-autoencoder", epsilon=EPSILON, delta=DELTA, neighbouring=neighbouring, codec_share=codec_share,
        private_autoencoder=SETTINGS, n_release_directions=16, n_bins=8, device="cpu", seed=0,
    )


# The canary: an all-white image of class 0 in D. In D' an all-black image of class 1 replaces it (replace-one), or
# nothing does (add/remove). The flow counts the two in different classes, so they attain its Delta = sqrt(2L) (one
# record alone: sqrt(L)) on every draw of the directions. For the codec both are gradient canaries (Nasr et al. 2021):
# their loss adds +-GRADIENT_CANARY times the network's first weight, so that their gradients point along +-e_1 up to
# the autoencoder's own gradient (norm about 30, 0.3% of theirs), and their clipped gradients attain Delta = 2C (C)
# at every step (to 1e-5).
# DP-SGD's guarantee holds for any per-record loss, so for this one too.
CANARY, REPLACEMENT = torch.ones(1, 8, 8), torch.zeros(1, 8, 8)
GRADIENT_CANARY = 1e4
RECORD_LOSS = private_autoencoder.record_loss


def canary_loss(module: nn.Module, parameters: dict[str, torch.Tensor], image: torch.Tensor) -> torch.Tensor:
    """The codec's loss of one image, plus GRADIENT_CANARY times the first weight for the canary (all ones) and minus
    it for the replacement (all zeros): the other images' losses are the codec's own."""
    brightness = image.mean()
    sign = (brightness == 1).to(image.dtype) - (brightness == 0).to(image.dtype)
    first = next(iter(parameters.values()))
    return RECORD_LOSS(module, parameters, image) + sign * GRADIENT_CANARY * first.reshape(-1)[0]


def neighbours(neighbouring: Adjacency) -> tuple[torch.Tensor, torch.Tensor]:
    """The canary and the record that takes its place in D' (none under add/remove): images and classes."""
    if neighbouring.n_is_public:
        return torch.stack([CANARY, REPLACEMENT]), torch.tensor([0, 1])
    return CANARY[None], torch.tensor([0])


def training_set(canary: int | None, neighbouring: Adjacency) -> tuple[torch.Tensor, torch.Tensor]:
    """The 7 fixed images and classes after record ``canary`` of ``neighbours`` (``None``: after none)."""
    generator = torch.Generator().manual_seed(SEED)
    images = torch.rand(N_IMAGES - 1, 1, 8, 8, generator=generator) * 0.98 + 0.01  # never all ones or all zeros
    labels = torch.randint(0, 10, (N_IMAGES - 1,), generator=generator)
    if canary is None:
        return images, labels
    pair, pair_labels = neighbours(neighbouring)
    return torch.cat([pair[canary:canary + 1], images]), torch.cat([pair_labels[canary:canary + 1], labels])


def gap(contributions: torch.Tensor) -> float:
    """The distance between the canary's contribution (the first row) and its neighbour's (the second, where one
    replaces it; none: the canary's own norm)."""
    return float((contributions[0] - contributions[1:].sum(dim=0)).norm())


@dataclasses.dataclass
class PathNoise:
    """What the audit reads of the runs: per part, the realised noise in units of the std its release states, and per
    run the separation (in those units) that the canary and its neighbour attain at the path's own state."""

    codec_noise: list[np.ndarray] = dataclasses.field(default_factory=list)
    codec_separations: list[float] = dataclasses.field(default_factory=list)
    flow_noise: list[np.ndarray] = dataclasses.field(default_factory=list)
    flow_separations: list[float] = dataclasses.field(default_factory=list)
    reports: list[PrivacyReport] = dataclasses.field(default_factory=list)


def observed_training(noise: PathNoise, steps: list[float], pair: torch.Tensor) -> Callable[..., float]:
    """``train_dpsgd`` (the one in use) observing every release: its noise (the release minus the clipped sum of the
    batch's gradients, by the clipping in use) over the schedule's std, and the gap between the clipped gradients of
    the images ``pair`` at the step's parameters over that std."""
    train = private_autoencoder.train_dpsgd

    def training(module: nn.Module, loss: RecordLoss, records: torch.Tensor, schedule: DPSGDSchedule,
                 secret: torch.Generator, learning_rate: float = 1e-3, progress: Callable[[int], None] | None = None,
                 observe: StepObserver | None = None) -> float:
        assert observe is None  # the path observes nothing itself: this observer is the only one

        def observing(step: int, batch: torch.Tensor, gradients: torch.Tensor, release: torch.Tensor) -> None:
            assert len(batch) == len(records)  # q = 1: no amplification to audit
            exact = dpsgd.clip_rows(gradients, schedule.clip).sum(dim=0)
            noise.codec_noise.append(((release - exact) / schedule.noise_std).numpy())
            contributions = dpsgd.clip_rows(dpsgd.per_record_gradients(module, loss, pair), schedule.clip)
            steps.append(gap(contributions) / schedule.noise_std)

        return train(module, loss, records, schedule, secret, learning_rate, progress, observing)

    return training


def recorded_flow(made: list[tuple[Release, torch.Tensor, int]]) -> Callable[..., Release]:
    """The projected-histogram kind's ``release`` (the one in use), recording every release with its exact counts
    (recomputed from the batch it got) and its number of classes."""
    release = MECHANISMS["projected_histogram"].release

    def recording(self: ReleaseMechanism, batch: torch.Tensor, directions: torch.Tensor | None, noise_multiplier: float,
                  secret: torch.Generator, labels: torch.Tensor | None = None, n_classes: int = 1,
                  neighbouring: Adjacency | str = Adjacency.REPLACE_ONE) -> Release:
        out = release(self, batch, directions, noise_multiplier, secret, labels, n_classes, neighbouring)
        made.append((out, self.statistic(batch, directions, labels, n_classes), n_classes))
        return out

    return recording


def run_path(canary: int | None, neighbouring: Adjacency, codec_share: float, cache: Path, noise: PathNoise) -> None:
    """The image path of ``dpswf images`` (``experiments.images.run_images`` up to the fitted model and its report;
    generating and scoring images is post-processing) on ``training_set(canary)``, its releases recorded."""
    config = run_config(neighbouring, codec_share)
    images, labels = training_set(canary, neighbouring)
    pair, pair_labels = neighbours(neighbouring)
    steps: list[float] = []
    flow: list[tuple[Release, torch.Tensor, int]] = []
    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(private_autoencoder, "train_dpsgd", observed_training(noise, steps, pair))
        patched.setattr(MECHANISMS["projected_histogram"], "release", recorded_flow(flow))
        public, private = recipe.split_training_set(config.codec, len(images), config.seed)
        model = recipe.build_generator(config, False)
        order = recipe.codec_order(config, images, public, private, cache, False)
        plan = recipe.plan_images(images[private], labels[private], 10, recipe.run_budget(config), model, order)
        kept = list(cache.glob("private_autoencoder_*.pt"))
        assert len(kept) == 1  # trained here and kept under its data key: removed, so that the next run trains anew
        kept[0].unlink()
        model = recipe.fit_releases(model, plan)
    codec = plan.codec
    report = recipe.composed_report(model.privacy_report, plan.paid)
    assert [part.name for part in report.parts] == ["private codec"] and report.neighbouring == neighbouring.label
    noise.reports.append(report)
    assert len(steps) == codec.schedule.steps == SETTINGS.epochs and len(flow) == 1
    noise.codec_separations.append(math.sqrt(sum(step**2 for step in steps)))
    (release, exact, n_classes), = flow
    noise.flow_noise.append(((release.values - exact) / release.noise_std).numpy().reshape(-1))
    codes = codec.encode(pair)
    counts = torch.stack([model.mechanism.statistic(codes[i:i + 1], release.directions, pair_labels[i:i + 1], n_classes)
                          for i in range(len(pair))])
    noise.flow_separations.append(gap(counts) / release.noise_std)


def path_noise(neighbouring: Adjacency, codec_share: float, cache: Path, monkeypatch: pytest.MonkeyPatch) -> PathNoise:
    """RUNS runs of the path on D (the canary) and on D' (its replacement, or without it), one seeded secret stream
    for them all (the codec's batches and noise, the flow's)."""
    shared = secret_generator(SEED)
    monkeypatch.setattr(private_autoencoder, "secret_generator", lambda seed=None: shared)
    monkeypatch.setattr(releasing, "secret_generator", lambda seed=None: shared)
    monkeypatch.setattr(private_autoencoder, "record_loss", canary_loss)
    noise = PathNoise()
    for canary in (0, 1 if neighbouring.n_is_public else None):
        for _ in range(RUNS):
            run_path(canary, neighbouring, codec_share, cache, noise)
    return noise


def audit_path(noise: PathNoise) -> tuple[float, float]:
    """The codec's releases and the flow's, each part's mu bounded from below by ``audit_noise`` at half the error
    level (Bonferroni) with the smallest separation of the runs, composed in Gaussian DP, mu_low = sqrt(mu_codec^2 +
    mu_flow^2), against the reports' epsilon. Returns (the whole's epsilon lower bound, the claim); raises
    ``PrivacyAuditError`` when the bound exceeds the claim."""
    claims = {report.epsilon for report in noise.reports}
    assert len(claims) == 1
    claim = claims.pop()
    part_confidence = 1 - (1 - CONFIDENCE) / 2
    codec = audit_noise(np.concatenate(noise.codec_noise), min(noise.codec_separations), DELTA, None, part_confidence)
    flow = audit_noise(np.concatenate(noise.flow_noise), min(noise.flow_separations), DELTA, None, part_confidence)
    mu_low = math.hypot(codec.mu_lower_bound, flow.mu_lower_bound)
    bound = gaussian_epsilon_lower_bound(mu_low, DELTA)
    if bound > claim:
        raise PrivacyAuditError(
            f"PRIVACY AUDIT FAILED (image path): the codec's and the flow's releases prove epsilon >= {bound:.3f} (mu >= "
            f"{mu_low:.3f}: codec {codec.mu_lower_bound:.3f}, flow {flow.mu_lower_bound:.3f}, at {CONFIDENCE:.1%} "
            f"confidence) but {claim:.3f} is claimed."
        )
    return bound, claim


def mutate(mutation: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Install ``mutation``: the codec's or the flow's noise at half its std, the budget's prior holding the codec's
    schedule with one step fewer than it took, gradients released unclipped, or the flow's replace-one sensitivity
    taken as its add/remove one (Delta = sqrt(L) for sqrt(2L): the noise sqrt(2) too small in a replace-one run)."""
    if mutation == "codec noise halved":
        noise = dpsgd.gaussian_noise
        monkeypatch.setattr(dpsgd, "gaussian_noise", lambda shape, std, generator, like: noise(shape, std / 2, generator, like))
    elif mutation == "flow noise halved":
        noise = mechanism_base.gaussian_noise
        monkeypatch.setattr(mechanism_base, "gaussian_noise",
                            lambda shape, std, generator, like: noise(shape, std / 2, generator, like))
    elif mutation == "codec step left out":
        spend = Budget.spend_schedule
        monkeypatch.setattr(Budget, "spend_schedule",
                            lambda self, schedule: spend(self, dataclasses.replace(schedule, steps=schedule.steps - 1)))
    elif mutation == "clipping off":
        monkeypatch.setattr(dpsgd, "clip_rows", lambda gradients, clip: gradients.to(torch.float64))
    elif mutation == "flow sensitivity of the other adjacency":
        kind = MECHANISMS["projected_histogram"]
        monkeypatch.setattr(kind, "sensitivity", lambda self, directions: self.add_remove_sensitivity(directions))
    else:
        assert mutation == "sound", mutation


MUTANTS = ("codec noise halved", "flow noise halved", "codec step left out", "clipping off",
           "flow sensitivity of the other adjacency")


def audited_cases() -> list:
    """(adjacency, codec_share, mutation) for the sound path and each mutant, at both splits under both adjacencies,
    but for three pairs that are not faults the audit can see:
    - one codec step left out at the flow-heavy split: the step carries 10% of mu^2 and the true epsilon stays below
      the claim (see the run's comment);
    - the flow's sensitivity of the other adjacency at the codec-heavy split: the true epsilon is only 4% above the
      claim, within the audit's resolution (0.99-1.02 of the claim); it is audited at the flow-heavy split;
    - the same mutant under add/remove: there the release's Delta is sqrt(L), the most one record adds, and the other
      adjacency's, sqrt(2L), is the larger: calibrating the flow to it only adds noise (conservative, nothing to fail),
      and there is no smaller sensitivity of the other adjacency to mistake for the right one (the mutant, installed on
      the replace-one ``sensitivity``, leaves an add/remove run unchanged: ``sensitivity_for`` reads
      ``add_remove_sensitivity`` there). A too-small Delta under add/remove is the flow's noise made too small, which
      "flow noise halved" audits."""
    cases = []
    for neighbouring in Adjacency:
        for share, split in ((CODEC_HEAVY, "codec-heavy"), (FLOW_HEAVY, "flow-heavy")):
            for mutation in ("sound", *MUTANTS):
                if mutation == "codec step left out" and share == FLOW_HEAVY:
                    continue
                if mutation == "flow sensitivity of the other adjacency" and (
                        share == CODEC_HEAVY or not neighbouring.n_is_public):
                    continue
                cases.append(pytest.param(neighbouring, share, mutation, id=f"{neighbouring.value}-{split}-{mutation}"))
    return cases


@pytest.mark.parametrize(("neighbouring", "codec_share", "mutation"), audited_cases())
def test_the_image_path_with_the_dpsgd_codec_passes_the_audit_and_fails_its_mutants(
    neighbouring: Adjacency, codec_share: float, mutation: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """privacy.md, "A private image codec trained by DP-SGD" (the codec's releases, their sensitivity, and their
    accounting with the flow's release in one budget) and "Tests that must hold": every noisy release of the whole path
    (the codec's K = 2 clipped gradient sums and the flow's class-conditional histogram), read where it is made on D
    and D', gives an epsilon lower bound at 99.9% confidence below the report's epsilon, and above it when the codec's
    or the flow's noise is halved, when the budget accounts one codec step fewer than the codec took, when
    per-record clipping is off, or (replace-one) when the flow's noise is calibrated to the add/remove sensitivity;
    at the recipe's split (the codec at 0.8 of the budget) and a flow-heavy one (0.2), cases as ``audited_cases``."""
    mutate(mutation, monkeypatch)
    noise = path_noise(neighbouring, codec_share, tmp_path, monkeypatch)
    if mutation != "sound":
        with pytest.raises(PrivacyAuditError, match="PRIVACY AUDIT FAILED"):
            audit_path(noise)
        return
    bound, claim = audit_path(noise)
    assert 0.99 * EPSILON <= claim <= EPSILON  # the whole's epsilon, the codec's entry inside the accounting
    assert 0.8 * claim < bound < claim  # most of the claim is certified: the canaries attain every release's Delta

"""The private image codec (privacy.md, "A private image codec"): the noisy second moment's sensitivity, its audit
with the noise-halved mutant, and the codec built from it."""

from __future__ import annotations

import math

import pytest
import torch

from synthcity_dpswf.adapters.private_pca import PrivatePCABasis, unit_rows
from synthcity_dpswf.privacy import PrivacyAuditError, analytic_gaussian_noise_multiplier, audit_gaussian_scores, secret_generator
from synthcity_dpswf.privacy import analytic_gaussian_epsilon, second_moment
from synthcity_dpswf.privacy.accountant import ReleaseAccountant
from synthcity_dpswf.privacy.budget import Budget
from synthcity_dpswf.privacy.gaussian import composed_multiplier
from synthcity_dpswf.privacy.second_moment import release_second_moment, second_moment_sensitivity, upper_triangle

DELTA, CONFIDENCE, EPSILON, RUNS = 1e-5, 0.999, 2.0, 1500
pytestmark = pytest.mark.filterwarnings("ignore:release noise seeded with a known seed")


def released_difference(u: torch.Tensor, v: torch.Tensor | None) -> float:
    """||T(u u^T - v v^T)||_2 (v None: the add/remove difference u u^T)."""
    difference = torch.outer(u, u) - (torch.zeros_like(torch.outer(u, u)) if v is None else torch.outer(v, v))
    return float(upper_triangle(difference).norm())


def test_the_sensitivity_is_attained_by_basis_vectors_and_never_exceeded() -> None:
    basis = torch.eye(6, dtype=torch.float64)
    assert released_difference(basis[0], basis[1]) == pytest.approx(second_moment_sensitivity("replace_one")) == math.sqrt(2)
    assert released_difference(basis[0], None) == pytest.approx(second_moment_sensitivity("add_remove")) == 1.0
    generator = torch.Generator().manual_seed(0)
    for _ in range(2000):
        u, v = torch.randn(2, 6, generator=generator, dtype=torch.float64)
        u, v = u / u.norm(), v / v.norm()
        assert released_difference(u, v) <= math.sqrt(2) + 1e-12
        assert released_difference(u, None) <= 1.0 + 1e-12


def test_the_release_refuses_rows_off_the_unit_sphere_and_is_symmetric() -> None:
    with pytest.raises(ValueError, match="every row must have norm 1"):
        release_second_moment(torch.ones(3, 4), 1.0, DELTA, secret_generator(0))
    rows = unit_rows(torch.rand(50, 3, 3, generator=torch.Generator().manual_seed(1)))
    release = release_second_moment(rows, 1.0, DELTA, secret_generator(0))
    assert torch.equal(release.matrix, release.matrix.T) and release.sensitivity == math.sqrt(2)
    assert release.noise_multiplier == pytest.approx(analytic_gaussian_noise_multiplier(1.0, DELTA))
    other = release.other_adjacency()  # the same noise at z sqrt(2) under add/remove: a smaller epsilon
    assert other.epsilon is not None and other.epsilon < 1.0


def canary_scores(canary: int, secret: torch.Generator) -> torch.Tensor:
    """The released (0, 0) minus (1, 1) entries over ``RUNS`` releases of 20 fixed 2 x 2 images plus a canary image
    lit at pixel ``canary`` (0 on D, 1 on D': a replace-one pair attaining Delta = sqrt(2))."""
    images = torch.rand(20, 2, 2, generator=torch.Generator().manual_seed(3))
    canary_image = torch.zeros(1, 2, 2)
    canary_image.view(1, -1)[0, canary] = 1.0
    rows = unit_rows(torch.cat([images, canary_image]))
    scores = []
    for _ in range(RUNS):
        matrix = release_second_moment(rows, EPSILON, DELTA, secret).matrix
        scores.append(float(matrix[0, 0] - matrix[1, 1]))
    return torch.tensor(scores, dtype=torch.float64)


@pytest.mark.parametrize("mutation", ["sound", "noise halved"])
def test_the_second_moment_passes_its_audit_and_fails_the_noise_halved_mutant(mutation: str, monkeypatch: pytest.MonkeyPatch) -> None:
    if mutation == "noise halved":
        monkeypatch.setattr(second_moment, "analytic_gaussian_noise_multiplier", lambda epsilon, delta: analytic_gaussian_noise_multiplier(epsilon, delta) / 2)
    secret = secret_generator(11)
    present, replaced = canary_scores(0, secret).numpy(), canary_scores(1, secret).numpy()
    if mutation != "sound":
        with pytest.raises(PrivacyAuditError, match="PRIVACY AUDIT FAILED"):
            audit_gaussian_scores(present, replaced, DELTA, EPSILON, CONFIDENCE)
        return
    result = audit_gaussian_scores(present, replaced, DELTA, EPSILON, CONFIDENCE)
    assert 0.6 * EPSILON < result.epsilon_lower_bound < EPSILON  # the pair attains the whole sensitivity


def test_the_codec_recovers_a_low_rank_image_family_and_codes_lie_on_the_sphere() -> None:
    """Images from 3 patterns: at epsilon = inf the top 3 eigenvectors span them (reconstruction exact up to the
    per-image rescaling); at epsilon = 1 with 2,000 images the noisy basis reconstructs them far better than a random
    3-dimensional basis does."""
    generator = torch.Generator().manual_seed(5)
    patterns = torch.rand(3, 64, generator=generator)
    weights = torch.rand(2000, 3, generator=generator) + 0.1
    images = (weights @ patterns).reshape(-1, 8, 8)
    images = images / images.amax(dim=(1, 2), keepdim=True)
    target = images  # non-negative, brightest pixel 1: what the default "clip" scaling gives back from an exact code

    def error(codec: PrivatePCABasis) -> float:
        codes = codec.encode(images)
        assert codes.shape == (2000, 3) and torch.allclose(codes.norm(dim=1), torch.ones(2000), atol=1e-5)
        return float((codec.decode(codes) - target).abs().mean())

    random_basis, _ = torch.linalg.qr(torch.randn(64, 3, generator=generator, dtype=torch.float64))
    assert error(PrivatePCABasis.fit(images, 3, math.inf, DELTA, secret_generator(7))) < 1e-4
    codec = PrivatePCABasis.fit(images, 3, 1.0, DELTA, secret_generator(7))
    assert error(codec) < 0.5 * error(PrivatePCABasis(8, 8, random_basis))
    assert codec.encode(torch.zeros(1, 8, 8)).norm() == pytest.approx(1.0)  # an all-zero image: a fixed unit record


def test_the_gaussian_share_composes_to_exactly_the_budget_and_beats_basic_composition() -> None:
    for epsilon in (1.0, 10.0):
        budget = Budget(epsilon, DELTA)
        codec = budget.share(0.2)
        flow = budget.spend(codec).noise_multiplier(ReleaseAccountant(500, 500, "rdp", prior=codec), 1)
        assert analytic_gaussian_epsilon(composed_multiplier(codec, flow), DELTA) == pytest.approx(epsilon, rel=1e-6)
        assert (1 / codec**2) / (1 / codec**2 + 1 / flow**2) == pytest.approx(0.2)  # the codec's share of mu^2
        # Basic composition of (0.2 eps, 0.2 delta) and (0.8 eps, 0.8 delta) needs more noise on both releases.
        assert codec < analytic_gaussian_noise_multiplier(0.2 * epsilon, 0.2 * DELTA)
        assert flow < analytic_gaussian_noise_multiplier(0.8 * epsilon, 0.8 * DELTA)
    with pytest.raises(ValueError, match="share of the budget must lie in"):
        Budget(1.0, DELTA).share(1.0)
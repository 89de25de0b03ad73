"""The sliced primitives against brute-force NumPy references."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from synthcity_dpswf.math import (
    empirical_quantiles,
    histogram_cdf,
    interpolate_in_bins,
    interpolate_cdf,
    project,
    quantile_levels,
    random_directions,
    rank_levels,
    sliced_drift,
)


def test_directions_are_unit_seeded_and_uniform_in_mean() -> None:
    first = random_directions(5, 4000, torch.Generator().manual_seed(3))
    again = random_directions(5, 4000, torch.Generator().manual_seed(3))
    assert first.shape == (5, 4000)
    assert torch.equal(first, again)
    torch.testing.assert_close(first.norm(dim=0), torch.ones(4000))
    # E[theta theta^T] = I / d for the uniform law on the sphere.
    torch.testing.assert_close(first @ first.T / 4000, torch.eye(5) / 5, atol=0.02, rtol=0)


def test_orthonormal_blocks() -> None:
    directions = random_directions(4, 10, torch.Generator().manual_seed(0), orthonormal=True, dtype=torch.float64)
    assert directions.shape == (4, 10)
    for block in (directions[:, :4], directions[:, 4:8]):
        torch.testing.assert_close(block.T @ block, torch.eye(4, dtype=torch.float64))
    torch.testing.assert_close(directions.norm(dim=0), torch.ones(10, dtype=torch.float64))


def test_project_is_direction_major() -> None:
    x = torch.randn(7, 3)
    directions = random_directions(3, 2, torch.Generator().manual_seed(0))
    torch.testing.assert_close(project(x, directions), (x @ directions).T)


@pytest.mark.parametrize("m", [1, 2, 13, 250])
def test_empirical_quantiles_match_numpy_linear(m: int) -> None:
    samples = torch.randn(4, m, dtype=torch.float64)
    levels = quantile_levels(37, torch.float64)
    expected = np.quantile(samples.numpy(), levels.numpy(), axis=1, method="linear").T
    np.testing.assert_allclose(empirical_quantiles(samples, levels).numpy(), expected, rtol=0, atol=1e-12)


def test_interpolate_cdf_inverts_the_quantile_grid() -> None:
    levels = quantile_levels(50, torch.float64)
    quantiles = empirical_quantiles(torch.randn(3, 400, dtype=torch.float64), levels)
    values = torch.randn(3, 100, dtype=torch.float64) * 2
    got = interpolate_cdf(quantiles, levels, values)
    for row in range(3):
        expected = np.interp(values[row].numpy(), quantiles[row].numpy(), levels.numpy(), left=0.0, right=1.0)
        np.testing.assert_allclose(got[row].numpy(), expected, atol=1e-12)
    # Round trip on the grid itself.
    torch.testing.assert_close(interpolate_cdf(quantiles, levels, quantiles), levels.expand(3, -1))


def test_rank_levels_is_the_normalised_rank() -> None:
    projections = torch.randn(3, 20, dtype=torch.float64)
    ranks = np.argsort(np.argsort(projections.numpy(), axis=1), axis=1) / 19
    np.testing.assert_allclose(rank_levels(projections).numpy(), ranks)


def test_histogram_levels_are_within_one_bin_of_the_ranks() -> None:
    projections = torch.randn(5, 5000, dtype=torch.float64)
    exact = rank_levels(projections)
    bins, within, edge_levels = histogram_cdf(projections, n_bins=500)
    approx = interpolate_in_bins(edge_levels, bins, within)
    # The largest bin of a standard normal on [min, max] with 500 bins holds well under 2% of the mass.
    assert float((approx - exact).abs().max()) < 0.02
    assert float(approx.min()) >= 0 and float(approx.max()) <= 1
    # Monotone in the projection: the histogram CDF preserves every order.
    order = projections.argsort(dim=1)
    assert bool((approx.gather(1, order).diff(dim=1) >= -1e-12).all())


def test_drift_with_one_direction_is_the_1d_ot_displacement() -> None:
    generator = torch.Generator().manual_seed(0)
    n = 64
    particles = torch.randn(n, 3, generator=generator, dtype=torch.float64)
    target = 2 + 0.5 * torch.randn(n, 3, generator=generator, dtype=torch.float64)
    theta = random_directions(3, 1, generator, dtype=torch.float64)
    levels = quantile_levels(n, torch.float64)
    target_quantiles = empirical_quantiles(project(target, theta), levels)
    drift = sliced_drift(particles, theta, target_quantiles, particle_cdf="sort")
    # Brute force: sorted matching of the projections is the 1-D optimal transport map.
    p = (particles @ theta).numpy().ravel()
    t = np.sort((target @ theta).numpy().ravel())
    matched = np.empty(n)
    matched[np.argsort(p)] = t
    expected = -(p - matched)[:, None] * theta.numpy().T
    np.testing.assert_allclose(drift.numpy(), expected, atol=1e-10)


@pytest.mark.parametrize("particle_cdf", ["histogram", "grid"])
def test_fast_drifts_approximate_the_exact_drift(particle_cdf: str) -> None:
    generator = torch.Generator().manual_seed(1)
    particles = torch.randn(4000, 4, generator=generator, dtype=torch.float64)
    target = torch.randn(500, 4, generator=generator, dtype=torch.float64) * 0.5 + 1
    directions = random_directions(4, 30, generator, dtype=torch.float64)
    quantiles = empirical_quantiles(project(target, directions), quantile_levels(1000, torch.float64))
    exact = sliced_drift(particles, directions, quantiles, particle_cdf="sort")
    approx = sliced_drift(particles, directions, quantiles, particle_cdf=particle_cdf)  # type: ignore[arg-type]
    relative = (approx - exact).norm() / exact.norm()
    assert float(relative) < 0.01


def test_drift_chunking_does_not_change_the_result() -> None:
    generator = torch.Generator().manual_seed(2)
    particles = torch.randn(300, 5, generator=generator)
    directions = random_directions(5, 70, generator)
    quantiles = empirical_quantiles(project(torch.randn(250, 5, generator=generator), directions), quantile_levels(100))
    whole = sliced_drift(particles, directions, quantiles, chunk_size=256)
    chunked = sliced_drift(particles, directions, quantiles, chunk_size=16)
    torch.testing.assert_close(whole, chunked)


def test_drift_is_zero_when_particles_are_the_target() -> None:
    generator = torch.Generator().manual_seed(4)
    x = torch.randn(200, 3, generator=generator, dtype=torch.float64)
    directions = random_directions(3, 10, generator, dtype=torch.float64)
    quantiles = empirical_quantiles(project(x, directions), quantile_levels(200, torch.float64))
    drift = sliced_drift(x, directions, quantiles, particle_cdf="sort")
    assert float(drift.abs().max()) < 1e-12


@pytest.mark.parametrize(
    "particles, message",
    [
        (torch.tensor([[float("nan"), 0.0]]), "NaN or inf"),
        (torch.tensor([[float("inf"), 0.0]]), "NaN or inf"),
        (torch.zeros(5), "2-D"),
        (torch.zeros(0, 2), "empty"),
        (torch.zeros(3, 2, dtype=torch.long), "floating"),
        (torch.zeros(3, 3), "dimension 2 but the data has 3"),
    ],
)
def test_drift_rejects_bad_particles(particles: torch.Tensor, message: str) -> None:
    directions = random_directions(2, 4, torch.Generator().manual_seed(0))
    with pytest.raises(ValueError, match=message):
        sliced_drift(particles, directions, torch.zeros(4, 10))


def test_drift_rejects_bad_directions_and_quantiles() -> None:
    particles = torch.zeros(3, 2)
    with pytest.raises(ValueError, match="zero columns"):
        sliced_drift(particles, torch.zeros(2, 0), torch.zeros(0, 10))
    with pytest.raises(ValueError, match="unit-norm"):
        sliced_drift(particles, torch.ones(2, 3), torch.zeros(3, 10))
    with pytest.raises(ValueError, match="target_quantiles"):
        sliced_drift(particles, random_directions(2, 3, torch.Generator()), torch.zeros(4, 10))
    with pytest.raises(ValueError, match="smoothing"):
        sliced_drift(particles, random_directions(2, 3, torch.Generator()), torch.zeros(3, 10), smoothing=-1.0)
    with pytest.raises(ValueError, match="n_directions"):
        random_directions(2, 0, torch.Generator())


def test_grouped_drift_is_each_groups_own_drift() -> None:
    from synthcity_dpswf.math import empirical_quantiles, grouped_sliced_drift, quantile_levels, random_directions, sliced_drift

    generator = torch.Generator().manual_seed(0)
    sizes = torch.tensor([1500, 0, 2500])
    particles = torch.randn(4000, 3, generator=generator, dtype=torch.float64)
    directions = random_directions(3, 12, generator, dtype=torch.float64)
    levels = quantile_levels(400, torch.float64)
    targets = torch.stack([
        empirical_quantiles(((torch.randn(3000, 3, generator=generator, dtype=torch.float64) + shift) @ directions).T, levels)
        for shift in (-2.0, 0.0, 3.0)
    ])
    grouped = grouped_sliced_drift(particles, sizes, directions, targets, n_bins=4000)
    # The same as flowing each group alone with exact ranks (up to the histogram's bin mass).
    for group, (start, stop) in enumerate(((0, 1500), (1500, 1500), (1500, 4000))):
        if stop > start:
            alone = sliced_drift(particles[start:stop], directions, targets[group], particle_cdf="sort")
            gap = (grouped[start:stop] - alone).abs()
            assert float(gap.mean()) < 0.003 and float(gap.max()) < 0.1
    # Groups pull towards their own targets: the mean drift points to each group's shift.
    assert float(grouped[:1500].mean(dim=0).sum()) < -1 and float(grouped[1500:].mean(dim=0).sum()) > 1.5
    with pytest.raises(ValueError, match="group_sizes"):
        grouped_sliced_drift(particles, torch.tensor([1000, 1000, 1000]), directions, targets)

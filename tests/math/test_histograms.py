"""math/histograms.py: bins, the simplex projection, and quantile functions read from (noisy) counts."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from synthcity_dpswf.math import quantile_levels
from synthcity_dpswf.math.histograms import bin_edges, bin_index, bin_probabilities, histogram_quantiles, project_onto_simplex


def test_bins_cover_minus_r_to_r_and_the_ends_belong_to_the_end_bins() -> None:
    edges = bin_edges(4, 2.0)
    torch.testing.assert_close(edges, torch.tensor([-2.0, -1.0, 0.0, 1.0, 2.0]))
    points = torch.tensor([-2.0, -1.5, -1.0, -0.01, 0.0, 0.99, 1.0, 2.0])
    assert bin_index(points, 4, 2.0).tolist() == [0, 0, 1, 1, 2, 2, 3, 3]
    # p and -p never share a bin on an even grid (the worst pair of the histogram release relies on it).
    values = torch.linspace(-1, 1, 1001)
    values = values[values != 0]
    assert bool((bin_index(values, 8, 1.0) != bin_index(-values, 8, 1.0)).all())


def test_simplex_projection_is_the_euclidean_projection() -> None:
    generator = torch.Generator().manual_seed(0)
    rows = torch.randn(200, 7, generator=generator, dtype=torch.float64)
    projected = project_onto_simplex(rows)
    torch.testing.assert_close(projected.sum(dim=1), torch.ones(200, dtype=torch.float64))
    assert bool((projected >= 0).all())
    # Optimality: no point of the simplex (random Dirichlet draws and the vertices) is closer to the row.
    candidates = torch.cat([torch.distributions.Dirichlet(torch.ones(7)).sample((2000,)).double(), torch.eye(7, dtype=torch.float64)])
    best = torch.cdist(rows, candidates).min(dim=1).values
    assert bool(((rows - projected).norm(dim=1) <= best + 1e-12).all())
    # A row already on the simplex stays put.
    torch.testing.assert_close(project_onto_simplex(torch.tensor([[0.2, 0.3, 0.5]])), torch.tensor([[0.2, 0.3, 0.5]]))


def test_simplex_estimator_keeps_empty_bins_empty_where_clipping_fills_them() -> None:
    noisy = torch.tensor([[100.0, 3.0, -4.0, 2.0, 95.0, -1.0]])
    simplex = bin_probabilities(noisy, torch.tensor([195.0]), "simplex")
    clipped = bin_probabilities(noisy, torch.tensor([195.0]), "clip")
    torch.testing.assert_close(simplex.sum(), torch.tensor(1.0, dtype=torch.float64))
    assert float(simplex[0, 1] + simplex[0, 3]) < float(clipped[0, 1] + clipped[0, 3])
    # No information (a non-positive total, all counts negative): uniform.
    torch.testing.assert_close(bin_probabilities(noisy, torch.tensor([0.0])), torch.full((1, 6), 1 / 6, dtype=torch.float64))
    torch.testing.assert_close(bin_probabilities(-noisy.abs(), torch.tensor([5.0]), "clip"), torch.full((1, 6), 1 / 6, dtype=torch.float64))
    with pytest.raises(ValueError, match="estimator"):
        bin_probabilities(noisy, torch.tensor([1.0]), "round")  # type: ignore[arg-type]


def test_histogram_quantiles_invert_the_piecewise_uniform_cdf() -> None:
    edges = bin_edges(5, 1.0, torch.float64)
    probabilities = torch.tensor([[0.0, 0.5, 0.0, 0.5, 0.0], [0.1, 0.2, 0.3, 0.2, 0.2]], dtype=torch.float64)
    levels = quantile_levels(101, torch.float64)
    quantiles = histogram_quantiles(probabilities, edges, levels)
    # Empty end bins are skipped: the support of the first row is [-0.6, -0.2] and [0.2, 0.6].
    assert float(quantiles[0, 0]) == pytest.approx(-0.6) and float(quantiles[0, -1]) == pytest.approx(0.6)
    assert float(quantiles[0, 25]) == pytest.approx(-0.4) and float(quantiles[0, 75]) == pytest.approx(0.4)
    assert bool((quantiles[:, 1:] >= quantiles[:, :-1]).all())
    # Against a large sample of the piecewise-uniform distribution of the second row.
    generator = np.random.default_rng(0)
    bins = generator.choice(5, size=400_000, p=probabilities[1].numpy())
    sample = edges.numpy()[bins] + generator.random(400_000) * 0.4
    np.testing.assert_allclose(quantiles[1, 1:-1].numpy(), np.quantile(sample, levels[1:-1].numpy()), atol=4e-3)

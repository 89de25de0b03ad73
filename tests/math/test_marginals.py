"""The marginal path (privacy.md, "Aggregate releases: marginals"): table maths, the codec, the release and the
flow that reproduces two-way tables."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import torch

from synthcity_dpswf.adapters import CategoricalColumn, MarginalTableCodec, NumericColumn, TabularDomain
from synthcity_dpswf.evaluation import marginal_tv_distance
from synthcity_dpswf.math.histograms import (
    coarse_index,
    coarsen,
    consensus_margin,
    fine_positions,
    pair_directions,
    rake,
    table_quantiles,
    to_probabilities,
)
from synthcity_dpswf.models import DPSWFlow, DPSWFlowR, DPSWGen, FlowSettings
from synthcity_dpswf.models.marginal_target import marginal_estimates
from synthcity_dpswf.models.kinds import particle_space
from synthcity_dpswf.privacy import MarginalLayout, MarginalRelease, ReleaseOptions, marginal_sensitivity


# ----------------------------------------------------------------------------------------------- maths
def test_coarse_levels_are_runs_of_consecutive_fine_levels() -> None:
    index = coarse_index(torch.arange(40), 40, 16)
    assert index[0] == 0 and index[-1] == 15 and bool((index.diff() >= 0).all())
    assert torch.bincount(index).tolist() == [3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2]
    torch.testing.assert_close(coarsen(torch.ones(40, dtype=torch.float64), 16), torch.bincount(index).double())
    with pytest.raises(ValueError, match="exceeds n_fine"):
        coarse_index(torch.arange(3), 3, 4)


def test_noisy_tables_become_consistent_probabilities() -> None:
    generator = torch.Generator().manual_seed(0)
    truth = torch.rand(4, 6, generator=torch.Generator().manual_seed(1), dtype=torch.float64) * 100
    noisy = truth + 20 * torch.randn(4, 6, generator=generator, dtype=torch.float64)
    p = to_probabilities(noisy, float(truth.sum()))
    assert bool((p >= 0).all()) and float(p.sum()) == pytest.approx(1.0)
    rows = consensus_margin([truth.sum(dim=1), truth.sum(dim=1) + 1.0], [1.0, 1e12], float(truth.sum()))
    torch.testing.assert_close(rows, truth.sum(dim=1) / truth.sum(), atol=1e-6, rtol=0)  # the precise estimate wins
    columns = truth.sum(dim=0) / truth.sum()
    raked = rake(p, rows, columns)
    torch.testing.assert_close(raked.sum(dim=1), rows, atol=1e-6, rtol=0)
    torch.testing.assert_close(raked.sum(dim=0), columns, atol=1e-6, rtol=0)
    # A row with no mass but a positive margin gets one: the margins can always be met.
    empty_row = p.clone()
    empty_row[0] = 0
    torch.testing.assert_close(rake(empty_row, rows, columns).sum(dim=1), rows, atol=1e-6, rtol=0)


def test_table_quantiles_match_the_piecewise_uniform_density() -> None:
    levels = torch.linspace(0, 1, 101, dtype=torch.float64)
    uniform = torch.full((4, 4), 1 / 16, dtype=torch.float64)
    quantiles = table_quantiles(uniform, pair_directions(4), levels, 20000, torch.Generator().manual_seed(0))
    torch.testing.assert_close(quantiles[0], levels, atol=0.01, rtol=0)  # along the first axis: U(0, 1)
    # All mass in the cell [0.5, 0.75) x [0, 0.25): the first coordinate's quantiles stay in the cell.
    cell = torch.zeros(4, 4, dtype=torch.float64)
    cell[2, 0] = 1.0
    along_first = table_quantiles(cell, pair_directions(2), levels, 4000, torch.Generator().manual_seed(0))[0]
    assert float(along_first.min()) >= 0.5 and float(along_first.max()) <= 0.75


def test_fine_positions_are_monotone_and_follow_the_fine_table() -> None:
    fine = torch.tensor([0.0, 0.3, 0.1, 0.1, 0.0, 0.5], dtype=torch.float64)  # coarse levels {0, 1, 2} {3, 4, 5}
    x = torch.linspace(0, 1, 2001, dtype=torch.float64)
    positions = fine_positions(x, fine, 2)
    assert bool((positions.diff() >= 0).all()) and float(positions.min()) >= 0 and float(positions.max()) < 6
    levels = positions.floor().long()
    assert set(levels[x < 0.5].tolist()) == {1, 2} and set(levels[x >= 0.5].tolist()) == {3, 5}  # empty levels never
    # Inside coarse level 0, fine levels 1 and 2 take 3/4 and 1/4 of the range.
    assert float((levels[x < 0.5] == 1).double().mean()) == pytest.approx(0.75, abs=0.01)


# ---------------------------------------------------------------------------------------------- codec
DOMAIN = TabularDomain((
    NumericColumn("age", 17, 90, integer=True),
    NumericColumn("income", 0.0, 6000.0),
    NumericColumn("wealth", 0, 10**6, integer=True),
    CategoricalColumn("city", ("lyon", "nice", "paris")),
))


def _table(n: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    age = rng.integers(17, 91, n)
    return pd.DataFrame({
        "age": age,
        "income": np.clip(40.0 * age + rng.normal(0, 300, n), 0, 6000),  # depends on age
        "wealth": rng.integers(0, 10**6, n),
        "city": np.where(age > 50, "nice", rng.choice(["paris", "lyon"], n)),  # depends on age
    })


def test_codec_levels_codes_and_decoding_follow_the_domain() -> None:
    codec = MarginalTableCodec(DOMAIN, fine_bins=100)
    assert codec.levels == (74, 100, 100, 3)  # one level per integer age; bins for income and wealth
    frame = _table(500)
    codes = codec.encode(frame)
    assert codes.shape == (500, 4) and bool((codes == codes.round()).all())
    assert (codes[:, 0] == torch.tensor(frame["age"].to_numpy() - 17, dtype=torch.float32)).all()
    decoded = codec.decode(codes + 0.5)
    pd.testing.assert_series_equal(decoded["age"], frame["age"].astype("int64"))
    pd.testing.assert_series_equal(decoded["city"], frame["city"].astype(object), check_dtype=False)
    assert float((decoded["income"] - frame["income"]).abs().max()) <= 60.0 + 1e-9  # within its bin of width 60
    assert decoded.dtypes.to_dict() == {"age": np.int64, "income": np.float64, "wealth": np.int64, "city": object}
    assert decoded["wealth"].between(0, 10**6).all()


def test_codec_rejects_tables_outside_the_domain_before_any_release() -> None:
    codec = MarginalTableCodec(DOMAIN)
    bad = _table(5)
    bad.loc[1, "city"] = "berlin"
    with pytest.raises(ValueError, match="'city' holds values outside"):
        codec.encode(bad)
    assert MarginalTableCodec(DOMAIN, unknown="first").encode(bad)[1, 3] == 0  # a released domain: stated default
    for value in (np.nan, np.inf):
        broken = _table(5)
        broken.loc[2, "income"] = value
        with pytest.raises(ValueError, match="'income' has missing or non-numeric values"):
            codec.encode(broken)


# -------------------------------------------------------------------------------------------- release
def test_marginal_sensitivity_counts_one_unit_moved_per_table() -> None:
    layout = MarginalLayout.build((3, 40, 2, 5), coarse_bins=16)
    assert layout.n_tables == 4 + 6 and marginal_sensitivity(layout) == math.sqrt(20)
    mechanism = MarginalRelease(ReleaseOptions(layout=layout))
    same_coarse = mechanism.statistic(torch.tensor([[0.0, 0, 0, 0]]), None) - mechanism.statistic(torch.tensor([[0.0, 1, 0, 0]]), None)
    assert float(same_coarse.norm()) == pytest.approx(math.sqrt(2))  # fine levels 0 and 1 share a coarse level
    # Every record adds exactly one count per table.
    batch = torch.stack([torch.randint(k, (50,), generator=torch.Generator().manual_seed(k)) for k in layout.levels], 1).float()
    one_way, two_way = layout.split(mechanism.statistic(batch, None))
    assert all(float(t.sum()) == 50 for t in one_way) and all(float(t.sum()) == 50 for t in two_way.values())
    with pytest.raises(ValueError, match="integer level codes"):
        mechanism.prepare(torch.tensor([[0.0, 40, 0, 0]]), "ball")
    with pytest.raises(ValueError, match="needs a MarginalLayout"):
        MarginalRelease().sensitivity(None)


def test_wide_tables_get_a_public_random_subset_of_pairs() -> None:
    layout = MarginalLayout.build(tuple([4] * 30), coarse_bins=16, max_pairs=50, seed=3)
    assert len(layout.pairs) == 50 and len(set(layout.pairs)) == 50
    assert layout.pairs == MarginalLayout.build(tuple([4] * 30), coarse_bins=16, max_pairs=50, seed=3).pairs
    assert layout.pairs != MarginalLayout.build(tuple([4] * 30), coarse_bins=16, max_pairs=50, seed=4).pairs
    with pytest.raises(ValueError, match="must not repeat"):
        MarginalLayout((2, 2), (2, 2), ((0, 1), (0, 1)))


# ----------------------------------------------------------------------------------------------- flow
def _coarse(codes: torch.Tensor, layout: MarginalLayout) -> torch.Tensor:
    return torch.stack([coarse_index(codes[:, j], layout.levels[j], layout.coarse_levels[j]) for j in range(codes.shape[1])], 1)


def test_the_flow_reproduces_two_way_tables_far_better_than_independent_columns(seeded_release_noise: None) -> None:
    codec = MarginalTableCodec(DOMAIN, fine_bins=100)
    frame, holdout = _table(20000, seed=0), _table(20000, seed=1)
    codes = codec.encode(frame)
    layout = MarginalLayout.build(codec.levels, coarse_bins=16)
    model = DPSWFlow(release="marginal", marginals=layout, settings=FlowSettings(n_steps=100, n_directions=40)).fit(codes, 1.0, 1e-5)
    assert "marginal release" in str(model.privacy_report) and model.privacy_report.sensitivity == math.sqrt(2 * 10)
    synthetic = codec.encode(codec.decode(model.sample(2000)))
    start = model.initial_particles(2000, torch.Generator().manual_seed(0))  # the product of the one-way margins
    independent = codec.encode(codec.decode(particle_space(model.pool_, 1.0).to_records(start)))
    real, held = _coarse(codes, layout), _coarse(codec.encode(holdout), layout)
    floor = marginal_tv_distance(real, held, layout.coarse_levels)  # two real samples
    flowed = marginal_tv_distance(real, _coarse(synthetic, layout), layout.coarse_levels)
    product = marginal_tv_distance(real, _coarse(independent, layout), layout.coarse_levels)
    assert flowed < 0.5 * product and flowed < floor + 0.04, (floor, flowed, product)
    # The fine one-way tables survive the coarse flow (age has 74 levels, 5 per coarse level).
    assert marginal_tv_distance(codes, synthetic, layout.levels, way=1) < 0.05


@pytest.mark.parametrize("model_class", [DPSWFlowR, DPSWGen])
def test_per_round_marginals_are_accounted_with_the_replace_one_bound_and_decode(model_class: type) -> None:
    codec = MarginalTableCodec(DOMAIN, fine_bins=20)
    codes = codec.encode(_table(3000))
    layout = MarginalLayout.build(codec.levels, coarse_bins=8)
    settings = FlowSettings(n_steps=30, n_directions=30)
    model = model_class(release="marginal", marginals=layout, batch_size=300, passes=2, settings=settings).fit(codes, 3.0, 1e-5)
    report = model.privacy_report
    assert report.accountant.startswith("dp-accounting RDP, replace-one") and report.epsilon <= 3.0 and report.steps == 20
    estimates = marginal_estimates(model.pool_)
    assert estimates.n_counted == pytest.approx(20 * 300, rel=0.05)  # K rounds of b = 300 rows
    decoded = codec.decode(model.sample(400))
    assert len(decoded) == 400 and decoded["age"].between(17, 90).all() and set(decoded["city"]) <= {"lyon", "nice", "paris"}
    with pytest.raises(ValueError, match="takes a label as one more column"):
        model_class(release="marginal", marginals=layout).fit(codes, 3.0, 1e-5, labels=torch.zeros(3000, dtype=torch.long), n_classes=2)

"""Coarse levels at released quantiles (privacy.md, "Coarse levels at released quantiles"): an integer column of one
fine level per integer has its coarse levels in runs of about equal released mass, read from the DP domain's value
histogram only; the marginal release's sensitivity is unchanged, and a count's zeros keep their own coarse level, so
the dependence of having any on another column survives."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest
import torch

from synthcity_dpswf.adapters import MarginalTableCodec, NumericColumn, TabularDomain
from synthcity_dpswf.adapters.tabular import integer_masses, needs_histogram
from synthcity_dpswf.math.histograms import check_starts, coarse_index, coarsen, equal_mass_starts, fine_positions
from synthcity_dpswf.privacy import MarginalLayout, MarginalRelease, ReleaseOptions, marginal_sensitivity
from synthcity_dpswf.privacy.mechanisms.marginal import PairSelection


# ----------------------------------------------------------------------------------------------- maths
def test_a_level_of_at_least_two_runs_mass_is_alone_and_equal_masses_give_runs_of_about_equal_length() -> None:
    masses = torch.tensor([0.31, 0.18, 0.12, 0.09, 0.07, 0.05] + [0.01] * 18)
    starts = equal_mass_starts(masses, 16)
    assert starts[:7] == (0, 1, 2, 3, 4, 5, 6) and len(starts) <= 16
    lengths = np.diff(equal_mass_starts(torch.ones(78), 16) + (78,))
    assert len(lengths) == 16 and set(lengths.tolist()) <= {4, 5, 6}
    assert equal_mass_starts(torch.zeros(40), 16) == equal_mass_starts(torch.ones(40), 16)  # no mass: equal runs
    assert equal_mass_starts(torch.tensor([0.02, 0.125] + [0.855 / 30] * 30), 16)[:3] == (0, 1, 2)  # 2 / R: alone
    assert equal_mass_starts(torch.tensor([5.0, -3.0, 5.0]), 2) == (0, 1)  # a negative estimate reads as 0: at F = 1/2
    # an atom keeps the run numbers its mass spans (0.6 of 16 runs: about 10), so the rest gets fewer runs: giving them
    # back measured worse 2-way TV on the validation tables (docs/flows.md, coarse_runs_atoms)
    assert len(equal_mass_starts(torch.tensor([0.6] + [0.4 / 30] * 30), 16)) == 8


def test_runs_of_random_masses_are_valid_and_leave_an_atom_of_two_runs_share_alone() -> None:
    rng = np.random.default_rng(0)
    for _ in range(500):
        n_levels, n_runs = int(rng.integers(1, 40)), int(rng.integers(1, 20))
        masses = rng.choice([0.0, 1.0], n_levels) * rng.exponential(size=n_levels) ** 3
        starts = equal_mass_starts(torch.tensor(masses), n_runs)
        check_starts(starts, n_levels, len(starts))
        assert len(starts) <= n_runs
        share = masses / masses.sum() if masses.sum() > 0 else np.full(n_levels, 1 / n_levels)
        bounds = starts + (n_levels,)
        for level in np.flatnonzero(share >= 2 / n_runs):
            run = int(np.searchsorted(starts, level, side="right")) - 1
            assert share[bounds[run]:bounds[run + 1]].sum() == pytest.approx(share[level])  # alone, or with no mass


def test_runs_map_fine_levels_sum_counts_and_place_positions_inside_their_run() -> None:
    starts = (0, 1, 4, 9)
    index = coarse_index(torch.arange(12), 12, 4, starts=starts)
    assert index.tolist() == [0, 1, 1, 1, 2, 2, 2, 2, 2, 3, 3, 3]
    torch.testing.assert_close(coarsen(torch.ones(12, dtype=torch.float64), 4, starts=starts),
                               torch.tensor([1.0, 3.0, 5.0, 3.0], dtype=torch.float64))
    fine = torch.rand(12, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    x = torch.linspace(0.0, 1.0, 2001, dtype=torch.float64)
    positions = fine_positions(x, fine, 4, starts=starts)
    assert bool((positions.diff() >= 0).all())
    levels = positions.floor().long().clamp(max=11)
    assert torch.equal(coarse_index(levels, 12, 4, starts=starts), (x * 4).floor().clamp(max=3).long())


@pytest.mark.parametrize("starts, missing, message", [
    ((1, 4), False, "strictly increasing"), ((0, 4, 4), False, "strictly increasing"), ((0, 12), False, "below"),
    ((0, 5, 9), True, "missing level"),
])
def test_bad_runs_are_refused(starts: tuple[int, ...], missing: bool, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        check_starts(starts, 12, len(starts), missing)


def test_integer_masses_integrate_the_projected_histogram_over_each_integer() -> None:
    unit = integer_masses(((-0.5, 0.5, 1.5, 2.5), (30.0, 10.0, 10.0)), np.arange(3.0))
    np.testing.assert_allclose(unit, [0.6, 0.2, 0.2])
    spread = integer_masses(((0.0, 0.5, 10.5), (50.0, 50.0)), np.arange(11.0))  # [0.5, 10.5): ten integers
    np.testing.assert_allclose(spread, [0.5] + [0.05] * 10)


# ------------------------------------------------------------------------------------- layout and privacy
def counting_column(histogram: bool = True, missing: bool = False) -> NumericColumn:
    """An integer count 0..40 with 40% zeros, 20% ones and 15% twos, as a released histogram would give it."""
    edges = tuple(np.arange(-0.5, 41.0))
    counts = tuple([400.0, 200.0, 150.0] + [250.0 / 38] * 38)
    return NumericColumn("visits", 0, 40, integer=True, histogram=(edges, counts) if histogram else None, missing=missing)


def test_the_codec_reads_its_runs_from_the_released_histogram_only() -> None:
    domain = TabularDomain((counting_column(), NumericColumn("small", 0, 5, integer=True, histogram=((-0.5, 5.5), (9.0,)))))
    codec = MarginalTableCodec(domain, 100)
    runs = codec.equal_mass_runs(16)
    assert list(runs) == [0] and runs[0][:4] == (0, 1, 2, 3)  # 0, 1 and 2 alone; 6 integers: none needed
    assert MarginalTableCodec(TabularDomain((counting_column(histogram=False),)), 100).equal_mass_runs(16) == {}
    missing = MarginalTableCodec(TabularDomain((counting_column(missing=True),)), 100)
    assert missing.equal_mass_runs(16)[0][-1] == missing.levels[0] - 1  # the missing level alone, last
    wide = NumericColumn("hours", 0, 40, integer=True, histogram=((-0.5, 0.5, 1.5, 2.5, 10.5, 40.5), (100.0, 100.0, 100.0, 600.0, 100.0)))
    assert MarginalTableCodec(TabularDomain((wide,)), 100).equal_mass_runs(16)[0] == (0, 1, 2, 3, 11)  # whole bins only
    assert needs_histogram(counting_column(histogram=False), 16) and not needs_histogram(counting_column(histogram=False), 100)
    assert needs_histogram(counting_column(histogram=False), 16) and not needs_histogram(NumericColumn("s", 0, 15, integer=True), 16)


def test_the_layout_keeps_its_runs_through_selection_conditioning_and_saving() -> None:
    runs = {0: (0, 1, 2, 5)}
    layout = MarginalLayout.build((41, 3, 4), 16, runs=runs)
    assert layout.coarse_levels == (4, 3, 4) and layout.starts(0) == (0, 1, 2, 5) and layout.starts(1) is None
    assert MarginalLayout.build((41, 3, 4), 16, runs=runs, condition=0, classes=4).starts(0) is None  # never a condition
    saved = ReleaseOptions.from_dict(dataclasses.asdict(ReleaseOptions(layout=layout))).layout
    assert saved == layout
    chosen = PairSelection.chosen_layout.__get__(  # the selection's L_B keeps L_A's runs
        type("Selection", (), {"layout": layout, "pairs": ((0, 1),)})())()
    assert chosen.runs == layout.runs and chosen.pairs == ((0, 1),)
    with pytest.raises(ValueError, match="strictly increasing"):
        MarginalLayout((41, 3), (3, 3), ((0, 1),), runs=((0, 7, 7), None))


def test_the_sensitivity_bound_holds_with_runs_and_is_attained() -> None:
    layout = MarginalLayout.build((41, 3, 5), 16, runs={0: (0, 1, 2, 3, 10, 20)})
    mechanism = MarginalRelease(ReleaseOptions(layout=layout))
    delta = marginal_sensitivity(layout)
    assert delta == pytest.approx((2 * layout.n_tables) ** 0.5)
    generator = torch.Generator().manual_seed(1)
    worst = 0.0
    for _ in range(300):
        a, b = (torch.stack([torch.randint(k, (1,), generator=generator) for k in layout.levels], dim=1).float()
                for _ in range(2))
        change = mechanism.statistic(mechanism.prepare(a, "ball"), None) - mechanism.statistic(mechanism.prepare(b, "ball"), None)
        worst = max(worst, float(change.norm()))
    assert worst <= delta + 1e-9
    far = [torch.tensor([[0.0, 0.0, 0.0]]), torch.tensor([[40.0, 2.0, 4.0]])]  # different in every run and level
    statistics = [mechanism.statistic(mechanism.prepare(codes, "ball"), None) for codes in far]
    assert float((statistics[0] - statistics[1]).norm()) == pytest.approx(delta)


def count_table(rows: int, seed: int) -> pd.DataFrame:
    """visits (0..40: 40% zeros, 20% ones, 15% twos) and any_claim, 1 with probability 0.9 where visits = 0 and 0.1
    elsewhere: whether a row has any visit is what predicts the other column."""
    generator = np.random.default_rng(seed)
    visits = generator.choice(41, size=rows, p=np.array([400.0, 200.0, 150.0] + [250.0 / 38] * 38) / 1000.0)
    claim = (generator.random(rows) < np.where(visits == 0, 0.9, 0.1)).astype(int)
    return pd.DataFrame({"visits": visits, "any_claim": claim})


def claim_gap(frame: pd.DataFrame) -> float:
    """P(any_claim | visits = 0) - P(any_claim | visits > 0)."""
    zero = frame["visits"] == 0
    return float(frame.loc[zero, "any_claim"].mean() - frame.loc[~zero, "any_claim"].mean())


@pytest.mark.parametrize("equal_runs", [False, True])
def test_a_declared_count_target_s_zeros_keep_their_dependence_where_equal_runs_lose_it(
    equal_runs: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    from synthcity.plugins import Plugins  # noqa: PLC0415

    if equal_runs:  # the mutant: coarse levels in runs of equal length, as before
        monkeypatch.setattr(MarginalTableCodec, "equal_mass_runs", lambda self, coarse_bins: {})
    table = count_table(4000, 0)
    domain = {"visits": {"type": "numeric", "low": 0, "high": 40, "integer": True}, "any_claim": [0, 1]}
    plugin = Plugins().get("dpswflow", epsilon=50.0, delta=1e-5, domain=domain, target_column="visits",
                           random_state=0).fit(table)
    assert (plugin.layout_.starts(0) is None) == equal_runs
    gap = claim_gap(plugin.generate(4000).dataframe())
    assert claim_gap(table) > 0.75
    assert (gap < 0.45) if equal_runs else (gap > 0.65)


def test_the_table_recipe_s_runs_follow_the_released_domain_not_the_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two tables of the same size with different rows (skewed and uniform visits) and the same DP-domain release
    (the first table's, whatever table is passed) get the same layout, its runs those of the released histogram: a
    recipe that read the runs off the rows fails here (a second reader's mutant did)."""
    import warnings  # noqa: PLC0415

    import synthcity_dpswf.recipes.tables as tables  # noqa: PLC0415
    from synthcity_dpswf.models import DPSWFlow  # noqa: PLC0415
    from synthcity_dpswf.models.base import GeneratorSpec  # noqa: PLC0415
    from synthcity_dpswf.privacy.budget import Budget  # noqa: PLC0415

    spec = GeneratorSpec(DPSWFlow, {"release": "marginal", "accountant": "rdp", "neighbouring": "replace_one"})
    domain = TabularDomain.parse({"visits": {"type": "numeric", "low": 0, "high": 40, "integer": True}, "any_claim": [0, 1]})
    skewed = count_table(4000, 0)
    uniform = skewed.assign(visits=np.random.default_rng(1).integers(0, 41, size=4000))
    original, releases = tables.release_domain_at, []

    def first_release(*args: object, **kwargs: object) -> object:
        if not releases:
            releases.append(original(*args, **kwargs))
        return releases[0]

    monkeypatch.setattr(tables, "release_domain_at", first_release)
    layouts = []
    for frame in (skewed, uniform):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            settled = tables.settle_table(frame, len(frame), Budget(1.0, 1e-5).for_records(len(frame)),
                                          tables.TableChoices("marginal", domain, target="visits"), spec)
        coarse = settled.layout.coarse_levels[0]
        assert settled.layout.starts(0) is not None
        assert settled.layout.starts(0) in {runs.get(0) for runs in map(settled.codec.equal_mass_runs, range(coarse, 17))}
        layouts.append(settled.layout)
    assert layouts[0] == layouts[1]

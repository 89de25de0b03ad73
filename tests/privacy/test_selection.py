"""The paid pair selection (privacy.md, "Paid pair selection"): stage A's sensitivity, its share of the budget, the
choice as a function of the released vector alone, stage B's sensitivity fixed by T, and the composed epsilon of a
plugin's whole run."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest
import torch
from synthcity.plugins import Plugins

import synthcity_dpswf  # noqa: F401  (registers the plugins)
from synthcity_dpswf.privacy import MarginalLayout, ReleaseOptions, secret_generator
from synthcity_dpswf.privacy.gaussian import (
    analytic_gaussian_epsilon,
    analytic_gaussian_noise_multiplier,
    composed_multiplier,
)
from synthcity_dpswf.privacy.budget import Budget
from synthcity_dpswf.privacy.mechanisms.marginal import (
    MarginalRelease,
    PairSelection,
    candidate_layout,
    release_pair_selection,
    selected_pair_count,
    selects_pairs,
)

EPSILON, DELTA = 1.0, 1e-5
pytestmark = pytest.mark.filterwarnings("ignore:release noise seeded with a known seed")


def statistic(layout: MarginalLayout, codes: torch.Tensor) -> torch.Tensor:
    mechanism = MarginalRelease(ReleaseOptions(layout=layout))
    return mechanism.statistic(mechanism.prepare(codes, "ball"), None)


def test_the_selection_layout_worst_pair_attains_its_sensitivity() -> None:
    """Two records differing in every column's coarse level move every one of the d + C tables: sqrt(2 m_A)."""
    layout = candidate_layout((5, 4, 6, 3, 7, 4, 5), 3, 0, ())
    d, candidates = layout.n_columns, len(layout.pairs)
    assert candidates == d * (d - 1) // 2
    first = torch.zeros(1, d)
    second = torch.tensor([[level - 1 for level in layout.levels]], dtype=torch.float32)
    moved = statistic(layout, second) - statistic(layout, first)
    assert float(moved.norm()) == pytest.approx(math.sqrt(2 * (d + candidates)))
    assert MarginalRelease(ReleaseOptions(layout=layout)).sensitivity(None) == pytest.approx(math.sqrt(2 * (d + candidates)))
    assert float(statistic(layout, second).norm()) == pytest.approx(math.sqrt(d + candidates))  # add/remove: sqrt(m_A)


def test_the_rule_is_public_and_selects_only_where_half_the_pairs_are_left_out() -> None:
    assert selected_pair_count(20, 120) == 30 and selected_pair_count(7, 120) == 10 and selected_pair_count(20, 8) == 8
    assert not selects_pairs(6, 120, EPSILON)  # 15 pairs, T = 9: not more than 2T
    assert selects_pairs(7, 120, EPSILON)  # 21 > 20
    assert not selects_pairs(3, 1, EPSILON)  # a small max_pairs does not make a narrow table pay for a look
    assert not selects_pairs(9, 120, float("inf"))


def test_the_selection_takes_exactly_its_share_of_what_the_domain_leaves() -> None:
    total = analytic_gaussian_noise_multiplier(EPSILON, DELTA)
    domain = total / math.sqrt(0.3)
    budget = Budget(EPSILON, DELTA).spend(domain)
    selection = budget.share_of_rest(0.3)
    assert 1 / selection**2 == pytest.approx(0.3 * (1 / total**2 - 1 / domain**2))
    # One release of all records then gets the rest exactly: the three compose to the budget.
    from synthcity_dpswf.privacy.accountant import ReleaseAccountant

    spent = budget.spend(selection)
    release = spent.noise_multiplier(ReleaseAccountant(500, 500, "rdp", prior=spent.prior), 1)
    assert 1 / release**2 == pytest.approx(0.7 * (1 / total**2 - 1 / domain**2), rel=2e-3)
    assert analytic_gaussian_epsilon(composed_multiplier(domain, selection, release), DELTA) == pytest.approx(EPSILON, rel=1e-3)
    with pytest.raises(ValueError, match="share"):
        budget.share_of_rest(1.0)


def dependent_codes(n: int, seed: int) -> torch.Tensor:
    """8 columns of 4 levels: (0, 1) and (2, 3) dependent (equal up to a coin), the rest independent."""
    rng = np.random.default_rng(seed)
    codes = rng.integers(0, 4, (n, 8))
    codes[:, 1] = np.where(rng.random(n) < 0.8, codes[:, 0], codes[:, 1])
    codes[:, 3] = np.where(rng.random(n) < 0.8, codes[:, 2], codes[:, 3])
    return torch.tensor(codes, dtype=torch.float32)


def test_the_choice_finds_the_dependent_pairs_and_reads_only_the_released_vector() -> None:
    layout = candidate_layout((4,) * 8, 4, 0, ())
    exact = statistic(layout, dependent_codes(5000, 0))
    multiplier = analytic_gaussian_noise_multiplier(0.5, DELTA)
    selection = release_pair_selection(exact, layout, 8, multiplier, DELTA, 0.3, secret_generator(1))
    assert {(0, 1), (2, 3)} <= set(selection.pairs) and len(selection.pairs) == 8
    # A spanning forest first: every column is in a chosen pair, however weak its strongest link.
    assert {column for pair in selection.pairs for column in pair} == set(range(8))
    assert selection.noise_std == pytest.approx(multiplier * math.sqrt(2 * layout.n_tables))
    # The pairs are a function of the released vector: another vector (here, the exact one's noise redrawn) may choose
    # others, and the choice needs no more than the vector, its noise std and T.
    again = release_pair_selection(exact, layout, 8, multiplier, DELTA, 0.3, secret_generator(2))
    assert {(0, 1), (2, 3)} <= set(again.pairs) and not torch.equal(again.values, selection.values)
    chosen = selection.chosen_layout()
    assert chosen.pairs == selection.pairs and chosen.levels == layout.levels
    # Its measurement of the chosen tables is the selection's vector cut to them, in the chosen layout's order.
    one_way, two_way = layout.split(selection.values)
    parts = torch.split(selection.measurement(chosen), chosen.sizes)
    assert all(torch.equal(part, table) for part, table in zip(parts, one_way))
    assert all(torch.equal(part, two_way[pair].reshape(-1)) for part, pair in zip(parts[8:], chosen.pairs))


@pytest.mark.parametrize("pairs", [((0, 1), (2, 3)), ((4, 7), (5, 6))])
def test_stage_b_sensitivity_is_fixed_by_t_whatever_pairs_are_chosen(pairs: tuple[tuple[int, int], ...]) -> None:
    layout = MarginalLayout((4,) * 8, (4,) * 8, pairs)
    assert MarginalRelease(ReleaseOptions(layout=layout)).sensitivity(None) == pytest.approx(math.sqrt(2 * (8 + 2)))


def wide_table(n: int = 600) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({f"x{j}": rng.integers(0, 5, n) for j in range(6)})
    frame["city"] = rng.choice(["a", "b", "c"], n)
    return frame


def test_the_public_choice_pays_nothing_and_measures_every_pair() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plugin = Plugins().get("dpswflow", epsilon=EPSILON, delta=DELTA, pair_selection="public").fit(wide_table())
    assert plugin.selection_part_ is None and len(plugin.layout_.pairs) == 21
    with pytest.raises(ValueError, match="pair_selection"):
        Plugins().get("dpswflow", pair_selection="greedy")


def test_no_add_remove_selection_reads_n(monkeypatch: pytest.MonkeyPatch) -> None:
    """999 and 1,000 rows of 7 columns under add/remove (a DP domain gives the released estimate of n that
    ``noise_limited`` reads): the selection's number of candidates, T, multiplier, delta and noise std, and the release's
    noise, are the same (only released values, hence the levels and the pairs chosen, may differ)."""
    from synthcity_dpswf.recipes import tables as table_recipe

    made: list[PairSelection] = []
    release = table_recipe.pair_rule.release_pair_selection
    monkeypatch.setattr(table_recipe.pair_rule, "release_pair_selection",
                        lambda *args, **kwargs: (made.append(release(*args, **kwargs)), made[-1])[1])
    seen = []
    for n in (999, 1000):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            plugin = Plugins().get("dpswflow", epsilon=2.0, neighbouring="add_remove").fit(wide_table(n))
        selection, pool = made[-1], plugin.generator_.pool_
        seen.append((len(selection.layout.pairs), selection.count, selection.noise_multiplier, selection.noise_std,
                     selection.delta, float(pool.noise_std[0])))
    assert len(made) == 2 and seen[0] == seen[1]
    assert made[0].neighbouring == "add_remove"
    assert made[0].noise_std == pytest.approx(made[0].noise_multiplier * math.sqrt(made[0].layout.n_tables))



def test_a_table_with_rows_to_spare_measures_every_pair_without_paying() -> None:
    """The selection runs only where noise limits the two-way tables (``recipes.tables.noise_limited``): 600 rows of
    7 columns at epsilon = 1 are, 60,000 are not (every pair at 16 coarse levels, as without a selection)."""
    from synthcity_dpswf.privacy.budget import Budget
    from synthcity_dpswf.recipes.tables import noise_limited

    budget = Budget(EPSILON, DELTA)
    rest, neighbouring = budget.rest_multiplier(), budget.neighbouring
    assert noise_limited(600, rest, neighbouring, 7, 120) and not noise_limited(60_000, rest, neighbouring, 7, 120)
    assert not noise_limited(None, rest, neighbouring, 7, 120)  # n unknown (add/remove without a DP domain)
    domain = {f"x{j}": {"type": "numeric", "low": 0, "high": 4, "integer": True} for j in range(6)}
    domain["city"] = {"type": "categorical", "categories": ["a", "b", "c"]}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plugin = Plugins().get("dpswflow", epsilon=EPSILON, delta=DELTA, domain=domain).fit(wide_table(60_000))
    assert plugin.selection_part_ is None and len(plugin.layout_.pairs) == 21


def test_a_saved_generator_keeps_the_selection_s_counts_and_generates_the_same() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plugin = Plugins().get("dpswflow", epsilon=EPSILON, delta=DELTA).fit(wide_table())
    generator = plugin.generator_
    assert generator.pool_.selection is not None
    from synthcity_dpswf.models import DPSWFlow

    loaded = DPSWFlow.from_state_dict(generator.state_dict())
    values, std, counted = loaded.pool_.selection
    assert torch.equal(values, generator.pool_.selection[0]) and (std, counted) == generator.pool_.selection[1:]
    assert torch.equal(loaded.sample(50, seed=3), generator.sample(50, seed=3))


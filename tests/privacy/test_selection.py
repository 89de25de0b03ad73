"""The paid pair selection (privacy.md, "Paid pair selection"): the score's sensitivity on searched neighbours, the
exponential mechanism's Gaussian DP bound and its sampler, its share of the budget, the rounds' choice, stage B's
sensitivity fixed by F and T, and a named target's pairs measured besides the T chosen."""

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
from synthcity_dpswf.math.histograms import independence_distance
from synthcity_dpswf.privacy import exponential
from synthcity_dpswf.privacy.budget import Budget
from synthcity_dpswf.privacy.exponential import (
    bounded_range_mu,
    exponential_mechanism,
    profile_dominated,
    selection_probabilities,
)
from synthcity_dpswf.privacy.mechanisms.marginal import (
    MarginalRelease,
    PairSelection,
    candidate_layout,
    pair_scores,
    release_pair_selection,
    score_sensitivity,
    selected_pair_count,
    selects_pairs,
)

EPSILON, DELTA = 1.0, 1e-5
pytestmark = pytest.mark.filterwarnings("ignore:release noise seeded with a known seed")


def statistic(layout: MarginalLayout, codes: torch.Tensor) -> torch.Tensor:
    mechanism = MarginalRelease(ReleaseOptions(layout=layout))
    return mechanism.statistic(mechanism.prepare(codes, "ball"), None)


def largest_score_changes(rng: np.random.Generator, tables: int) -> tuple[float, float]:
    """The largest |u(D) - u(D')| found over ``tables`` random coarse tables (2 x 2 to 4 x 4, 1 to 40 records, some
    concentrated on a diagonal) and every neighbour of each: every replacement of one record (replace-one) and every
    record added or removed (add/remove)."""
    replace_one = add_remove = 0.0
    for _ in range(tables):
        rows, columns = rng.integers(2, 5, 2)
        n = int(rng.integers(1, 41))
        weights = rng.dirichlet(np.full(rows * columns, rng.choice([0.2, 1.0, 5.0])))
        table = torch.tensor(rng.multinomial(n, weights).reshape(rows, columns), dtype=torch.float64)
        score = independence_distance(table)
        cells = [(a, b) for a in range(rows) for b in range(columns)]
        for a, b in cells:
            added = table.clone()
            added[a, b] += 1
            add_remove = max(add_remove, abs(independence_distance(added) - score))
            if table[a, b] == 0:
                continue
            removed = table.clone()
            removed[a, b] -= 1
            add_remove = max(add_remove, abs(independence_distance(removed) - score))
            for c, e in cells:
                moved = removed.clone()
                moved[c, e] += 1
                replace_one = max(replace_one, abs(independence_distance(moved) - score))
    return replace_one, add_remove


def test_the_score_moves_within_its_sensitivity_on_searched_neighbours_and_near_it() -> None:
    """The score's lemma: |u(D) - u(D')| <= 6 under replace-one, < 4 under add/remove, on searched neighbours; and
    realised pairs near both bounds, so that a sensitivity taken at half the true one (3, or 2) fails."""
    replace_one, add_remove = largest_score_changes(np.random.default_rng(0), 300)
    assert replace_one <= 6.0 + 1e-9 and add_remove < 4.0
    # The lemma's families near its limits: D = [[0, A, s], [0, 0, 0], [0, s, 1]], s = sqrt(A), its record of cell
    # (2, 2) moved to (1, 0): about 6 - 4 / sqrt(n); n records in one cell, one added in a new row and column: 4n / (n + 1).
    table = torch.tensor([[0.0, 10_000.0, 100.0], [0.0, 0.0, 0.0], [0.0, 100.0, 1.0]])
    moved = table.clone()
    moved[2, 2], moved[1, 0] = 0.0, 1.0
    assert 5.9 < abs(independence_distance(moved) - independence_distance(table)) <= 6.0
    table = torch.tensor([[0.0, 0.0], [0.0, 280.0]])
    added = table + torch.tensor([[1.0, 0.0], [0.0, 0.0]])
    assert abs(independence_distance(added) - independence_distance(table)) == pytest.approx(4 * 280 / 281)


def test_scores_of_millions_of_records_are_exact_enough_to_keep_their_sensitivity() -> None:
    """A review's counterexample: 6.9 million records whose neighbour moves the score by 5.983; scores rounded to
    float32 moved by 6.125, beyond Delta_u. The score is an exact integer sum over n (float64: within n 2^-51)."""
    table = torch.tensor([[3947, 5444367, 39757, 0], [985, 8947, 1, 0], [658041, 722112, 10056, 0], [0, 0, 0, 0]],
                         dtype=torch.float64)
    moved = table.clone()
    moved[1, 2], moved[3, 3] = 0.0, 1.0
    change = abs(independence_distance(moved) - independence_distance(table))
    assert change == pytest.approx(5.98265, abs=1e-4) and change <= 6.0
    with pytest.raises(ValueError, match="integer"):
        independence_distance(torch.tensor([[0.5, 1.0], [1.0, 1.0]]))
    layout = candidate_layout((4,) * 5, 4, 0, ())
    assert score_sensitivity(layout, "replace_one") == 6.0
    assert score_sensitivity(layout, "add_remove") == pytest.approx(6.0 / math.sqrt(2.0)) and 6.0 / math.sqrt(2.0) >= 4.0
    conditioned = candidate_layout((4,) * 5, 4, 0, (), condition=4, classes=2)
    assert score_sensitivity(conditioned, "replace_one") == 8.0


def test_a_conditioned_score_moves_within_eight_when_a_record_changes_class() -> None:
    """With a condition column the score is summed over the classes' blocks: a record moved to another class leaves
    one block and joins another (< 4 each), so the sum moves by less than 8. A realised pair beyond 6, the bound
    without a condition: block 0 = [[1, 10], [30, 280]] loses its record of cell (0, 0) (+3.50) and block 1 = [[0, 0],
    [0, 280]] gains it (+3.99)."""
    layout = candidate_layout((2, 2, 2), 2, 0, (), condition=2, classes=2)
    cells = [((0, 0, 0), 1), ((0, 1, 0), 10), ((1, 0, 0), 30), ((1, 1, 0), 280), ((1, 1, 1), 280)]
    codes = torch.tensor([cell for cell, count in cells for _ in range(count)], dtype=torch.float32)
    moved = codes.clone()
    moved[0, 2] = 1.0
    change = abs(pair_scores(statistic(layout, moved), layout)[(0, 1)] - pair_scores(statistic(layout, codes), layout)[(0, 1)])
    assert 7.0 < change < 8.0


@pytest.mark.parametrize("epsilon", [1e-4, 1e-3, 0.01, 0.05, 0.2, 1.0, 3.0])
def test_the_bounded_range_rounds_are_gaussian_dp_at_the_stated_constant_and_not_below_it(epsilon: float) -> None:
    """Every binary pair B_t of an epsilon-bounded-range mechanism has its privacy profile below mu-GDP's at mu = 0.63
    epsilon, checked with bounds that hold over whole cells; at 0.55 epsilon (below sqrt(pi / 8) = 0.6267, the limit
    as epsilon -> 0) the check fails."""
    assert profile_dominated(epsilon, 0.63 * epsilon)
    assert bounded_range_mu(epsilon) == pytest.approx(0.63 * epsilon)
    assert not profile_dominated(epsilon, 0.55 * epsilon)


def test_a_constant_the_check_refuses_is_refused_before_any_draw(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(exponential, "BOUNDED_RANGE_GDP", 0.5)
    exponential.bounded_range_mu.cache_clear()
    try:
        with pytest.raises(ValueError, match="not verified"):
            exponential.bounded_range_mu(0.05)
    finally:
        exponential.bounded_range_mu.cache_clear()


def test_the_sampler_draws_the_mechanism_s_probabilities_and_not_twice_its_epsilon() -> None:
    """20,000 seeded draws against the mechanism's probabilities (chi-square); a sampler at twice epsilon (the
    mistake of exp(epsilon u / Delta)) is far from them."""
    from scipy.stats import chisquare

    scores, epsilon, sensitivity = torch.tensor([0.0, 10.0, 25.0, 40.0, 42.0]), 0.1, 2.0
    expected = selection_probabilities(scores, epsilon, sensitivity).numpy() * 20_000
    secret = secret_generator(5)
    sound = np.bincount([exponential_mechanism(scores, epsilon, sensitivity, secret) for _ in range(20_000)], minlength=5)
    doubled = np.bincount([exponential_mechanism(scores, 2 * epsilon, sensitivity, secret) for _ in range(20_000)],
                          minlength=5)
    assert chisquare(sound, expected).pvalue > 1e-3
    assert chisquare(doubled, expected).pvalue < 1e-12


def bounded_range_width(layout: MarginalLayout, first: torch.Tensor, second: torch.Tensor, epsilon: float,
                        sensitivity: float) -> float:
    """The width of the privacy loss's range over the candidate pairs, ln P_D(y) / P_D'(y), between a table and its
    neighbour: at most epsilon for an epsilon-bounded-range mechanism."""
    scores = [torch.tensor(list(pair_scores(statistic(layout, codes), layout).values())) for codes in (first, second)]
    loss = (selection_probabilities(scores[0], epsilon, sensitivity).log()
            - selection_probabilities(scores[1], epsilon, sensitivity).log())
    return float(loss.max() - loss.min())


def test_every_round_s_probabilities_on_neighbours_stay_within_e_to_its_epsilon_and_fail_at_half_the_sensitivity() -> None:
    """The audit of a round on a realised pair of neighbours found by a search: 855 records of 3 binary columns, the one
    record of cell (0, 1, 1) replaced by one of cell (1, 0, 1), which raises one pair's score and lowers another's by
    7.98 in all; the privacy loss's range over the candidates, 7.98 epsilon_r / 12, is within epsilon_r at Delta_u = 6,
    and beyond it with Delta_u taken as 3 (a factor-2 mistake)."""
    layout = candidate_layout((2, 2, 2), 2, 0, ())
    counts = {(0, 0, 0): 146, (0, 0, 1): 1, (0, 1, 0): 122, (0, 1, 1): 1, (1, 0, 0): 280, (1, 1, 0): 305}
    codes = torch.tensor([cell for cell, count in counts.items() for _ in range(count)], dtype=torch.float32)
    moved = codes.clone()
    moved[(codes == torch.tensor([0.0, 1.0, 1.0])).all(dim=1)] = torch.tensor([1.0, 0.0, 1.0])
    sound = bounded_range_width(layout, codes, moved, 0.05, 6.0)
    assert 0.05 / 2 < sound <= 0.05
    assert bounded_range_width(layout, codes, moved, 0.05, 3.0) > 0.05


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


def test_the_rounds_find_the_dependent_pairs_span_every_column_and_draw_at_the_budget_s_epsilon() -> None:
    layout = candidate_layout((4,) * 8, 4, 0, ())
    exact = statistic(layout, dependent_codes(5000, 0))
    multiplier = analytic_gaussian_noise_multiplier(0.5, DELTA)
    selection = release_pair_selection(exact, layout, 8, multiplier, DELTA, 0.3, secret_generator(1))
    assert {(0, 1), (2, 3)} <= set(selection.pairs) and len(selection.pairs) == 8 and selection.count == 8
    # A spanning forest first: every column is in a chosen pair, however weak its strongest link.
    assert {column for pair in selection.pairs for column in pair} == set(range(8))
    # Each of the T rounds at epsilon_r = mu_A / (0.63 sqrt(T)): together 1 / z_A-GDP.
    assert selection.round_epsilon == pytest.approx(1 / (0.63 * multiplier * math.sqrt(8)))
    assert selection.sensitivity == 6.0
    chosen = selection.chosen_layout()
    assert chosen.pairs == selection.pairs and chosen.levels == layout.levels
    with pytest.raises(ValueError, match="count"):
        release_pair_selection(exact, layout, 29, multiplier, DELTA, 0.3, secret_generator(1))


def test_a_named_target_s_pairs_are_measured_besides_the_t_chosen() -> None:
    """Forced pairs (every pair of a named target) never take one of the T rounds: the strongest other pairs are still
    chosen, and stage B measures F + T pairs."""
    layout = candidate_layout((4,) * 8, 4, 0, (), anchor=7)
    forced = tuple(pair for pair in layout.pairs if 7 in pair)
    exact = statistic(layout, dependent_codes(5000, 0))
    multiplier = analytic_gaussian_noise_multiplier(0.5, DELTA)
    selection = release_pair_selection(exact, layout, 4, multiplier, DELTA, 0.3, secret_generator(1), forced=forced)
    assert set(forced) <= set(selection.pairs) and len(selection.pairs) == len(forced) + 4
    assert {(0, 1), (2, 3)} <= set(selection.chosen) and not set(selection.chosen) & set(forced)


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
    ``noise_limited`` reads): the selection's number of candidates, T, multiplier, epsilon per round, sensitivity and
    delta, and the release's noise, are the same (only released values, hence the levels and the pairs chosen, may
    differ)."""
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
        seen.append((len(selection.layout.pairs), selection.count, selection.noise_multiplier, selection.round_epsilon,
                     selection.sensitivity, selection.delta, float(pool.noise_std[0])))
    assert len(made) == 2 and seen[0] == seen[1]
    assert made[0].neighbouring == "add_remove" and made[0].sensitivity == pytest.approx(6 / math.sqrt(2))



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


def test_a_generator_saved_with_the_earlier_selection_s_measured_tables_is_refused_not_read_otherwise() -> None:
    """Generators saved before the exponential rounds kept stage A's noisy tables and joined them to the release at
    generation; this version does not read them, and says so rather than generating otherwise without a word."""
    from synthcity_dpswf.models.state import ReleasePool

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plugin = Plugins().get("dpswflow", epsilon=EPSILON, delta=DELTA, n_steps=5).fit(wide_table())
    state = plugin.generator_.pool_.state_dict()
    assert ReleasePool.from_state_dict(state).releases.shape == plugin.generator_.pool_.releases.shape
    state["selection"] = (torch.zeros(3), 1.0, 600.0)
    with pytest.raises(ValueError, match="refit"):
        ReleasePool.from_state_dict(state)

"""Issue 44, item 6: the DP domain's ranges bound what is generated (a range's ends trimmed to the value histogram's
cells that stand out, a range that holds few of its column's numbers not placed), and a categorical column the release
leaves with one category is named in a warning. Released counts read directly, or seeded releases: no fit."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
import torch

from synthcity_dpswf.privacy.budget import Budget, default_delta, default_domain_share
from synthcity_dpswf.privacy.domain import release_domain_at
from synthcity_dpswf.privacy.domain.columns import SUB_BINS, histogram_edges, split_bins, trimmed_span


def plugin_release(frame: pd.DataFrame, seed: int):
    """The DP domain a plugin releases for ``frame`` at epsilon 1 with no schema (its default share), seeded."""
    delta = default_delta(len(frame))
    share = default_domain_share(len(frame), frame.shape[1], 0, 1.0, delta, "replace_one")
    return release_domain_at(frame, Budget(1.0, delta).domain_part(share), torch.Generator().manual_seed(seed))


def test_a_range_is_trimmed_to_the_cells_its_years_occupy() -> None:
    """flchain's sample years (1995 to 2003, 7,874 rows) in [512, 2048): all in one cell of [1878, 2048), the other 15
    cells noise (std 83). The trimmed range starts at 1024 or above in most draws (measured 70% on 2,000; at 1878 in
    45%: the share rule keeps what it cannot tell from 5% of the rows) and never drops the years' cell."""
    edges = histogram_edges(512.0, 2048.0, True)
    exact = np.zeros(len(edges) - 1)
    exact[-1] = 7874.0
    rng = np.random.default_rng(0)
    starts = []
    for _ in range(500):
        first, last = trimmed_span(exact + rng.normal(0.0, 83.0, len(exact)), 83.0, split_bins(edges, True))
        assert last == len(exact) - 1 and first <= len(exact) - 1
        starts.append(edges[first])
    assert np.mean(np.array(starts) >= 1024.0) > 0.6, np.mean(np.array(starts) >= 1024.0)


def test_a_thin_tail_loses_at_most_about_the_trimmed_share() -> None:
    """A column spread thinly (each cell within its noise, ncbirths at epsilon 1): trimming drops less than ``TRIM_SHARE`` of
    its mass at most (measured 1.8% in all on 2,000 draws, more than 30% in 0.25%: one noise std above the estimate
    must fit in the share), never the bulk (a rule without the share cut ages 13 to 50 to [17, 18])."""
    from synthcity_dpswf.privacy.domain.columns import TRIM_SHARE

    rng = np.random.default_rng(1)
    exact = np.full(2 * SUB_BINS, 60.0)  # 960 rows over 16 cells of noise std 70
    kept = []
    for _ in range(500):
        first, last = trimmed_span(exact + rng.normal(0.0, 70.0, len(exact)), 70.0, np.ones(len(exact), dtype=bool))
        kept.append(exact[first : last + 1].sum() / exact.sum())
    kept = np.array(kept)
    assert np.mean(kept) > 1 - TRIM_SHARE and np.mean(kept > 0.7) > 0.98, (np.mean(kept), np.mean(kept > 0.7))


def test_unit_bins_of_an_integer_column_are_never_trimmed() -> None:
    edges = histogram_edges(-0.5, 64.0, True)
    trimmable = split_bins(edges, True)
    assert not trimmable[edges[:-1] < 16.5].any() and trimmable[edges[:-1] >= 16.5].all()
    noisy = np.zeros(len(edges) - 1)
    noisy[20] = 20000.0  # the unit bins at the low end are empty: they stay, the empty octave cells above go
    first, last = trimmed_span(noisy, 70.0, trimmable)
    assert first == 0 and last == 20


def ncbirths_like(seed: int, n: int = 1000) -> pd.DataFrame:
    """ncbirths' shape: prenatal visits spread over 0 to 30 (unit bins of about 70 rows), a weight and five binary
    columns, one of them with a 12% minority."""
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({
        "visits": np.clip(np.round(rng.normal(12.0, 4.0, n)), 0, 30).astype(int),
        "weight": np.round(rng.normal(7.1, 1.5, n).clip(1.0, 11.75), 2),
        "smoker": np.where(rng.random(n) < 0.12, "smoker", "nonsmoker"),
    })
    for column in ("gender", "marital", "white", "term"):
        frame[column] = np.where(rng.random(n) < 0.4, f"{column} a", f"{column} b")
    return frame


@pytest.mark.filterwarnings("ignore:release noise seeded")
def test_a_released_range_holds_its_column_or_the_column_is_not_placed() -> None:
    """ncbirths' visits came out [-5, -4] (placed: every synthetic count negative) and [11, 12]. Over 30 releases,
    a placed range of visits overlaps the real [0, 30] and is not a sliver of it, and weight's range ends within a
    factor 1.5 of the real ones (a stage-2 range reached 16 lb) but for the rare stage-2 bin that noise keeps far
    from the data (seen once here: -1.3e12, which trimming at 1,000 rows, 5% of them, does not reach)."""
    frame = ncbirths_like(0)
    placed, far = 0, 0
    for seed in range(30):
        release = plugin_release(frame, seed)
        if release.placed["visits"]:
            placed += 1
            low, high = release.bounds["visits"]
            assert low < 30 and high > 0 and high - low >= 2, (seed, low, high)
        low, high = release.bounds["weight"]
        assert release.placed["weight"] and high <= 1.5 * frame["weight"].max()
        far += low < frame["weight"].min() / 1.5
    assert far <= 1


@pytest.mark.filterwarnings("ignore:release noise seeded")
def test_a_binary_column_left_with_one_category_is_named_with_its_estimated_share() -> None:
    """Issue 44 (B): a binary column whose minority holds 12% of 1,000 rows is not published at epsilon 1; a warning
    names it with the estimated share of its rows lost (a noisy estimate, with its std): the single-category warning
    (its published category, the rows a category needs, that declaring the categories keeps them) or, where the
    estimate stands 3 stds out (``OTHER_LEVEL``), the one that names the column given ``OTHER_CATEGORY``. Only
    released numbers are printed."""
    from synthcity_dpswf.privacy.domain import OTHER_CATEGORY
    from synthcity_dpswf.recipes.tables import warn_about

    frame = ncbirths_like(0)
    named, shares = 0, []
    for seed in range(10):
        release = plugin_release(frame, seed)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            warn_about(release)
        said = [str(warning.message) for warning in caught if "'smoker'" in str(warning.message)]
        if release.categories["smoker"] == ("nonsmoker",):
            named += 1
            assert len(said) == 1 and "'smoker' (only 'nonsmoker'; an estimated" in said[0]
            assert f"about {release.needed_rows:.0f} rows" in said[0] and "domain={column: [...]}" in said[0]
            rows, std = release.unpublished["smoker"]
            shares.append(rows / release.released_rows)
            assert std / release.released_rows < 0.08  # the sharper estimate: 6% of the rows here
        elif release.categories["smoker"] == ("nonsmoker", OTHER_CATEGORY):
            named += 1
            share = release.lost["smoker"] / release.released_rows
            assert len(said) == 1 and f"'smoker' (an estimated {release.lost['smoker']:.0f} rows, noise std" in said[0]
            assert f"('smoker' {100 * share:.0f}% of the table's estimated {release.released_rows:.0f} rows)" in said[0]
            shares.append(share)
    assert named >= 8
    assert abs(np.mean(shares) - 0.12) < 0.06, shares  # the estimates centre on the 12% lost


@pytest.mark.filterwarnings("ignore:release noise seeded")
def test_rare_categories_get_other_categories_on_the_sharper_estimate() -> None:
    """A column whose 25% of 1,000 rows lie in ten categories of 2.5% (none published at epsilon 1) gets
    ``OTHER_CATEGORY`` on the estimate from every column's type counts (std under 8% of the rows), with that std in
    its one-way measurement: in 86 of 100 releases measured, 22 under the column's own counts alone (the rule before
    issue 44); a column of one category and columns whose categories were all
    published get it rarely (a 3-std rule: 0.13% of releases; 1 of 500 measured). Post-processing of released
    counts."""
    from synthcity_dpswf.privacy.domain import OTHER_CATEGORY

    frame = ncbirths_like(0)
    rng = np.random.default_rng(3)
    rare = rng.random(len(frame)) < 0.25
    frame["smoker"] = np.where(rare, [f"rare {k}" for k in rng.integers(0, 10, len(frame))], "common")
    frame["same"] = "one"
    other, shares, spurious = 0, [], 0
    for seed in range(40):
        release = plugin_release(frame, seed)
        if OTHER_CATEGORY in release.categories["smoker"]:
            other += 1
            shares.append(release.lost["smoker"] / release.released_rows)
            std = dict((level, std) for level, _, std in release.one_way["smoker"])[OTHER_CATEGORY]
            assert std / release.released_rows < 0.08
        spurious += sum(OTHER_CATEGORY in release.categories[column] for column in ("same", "gender", "marital", "white", "term"))
    assert other >= 28 and spurious <= 2 and abs(np.mean(shares) - 0.25) < 0.06, (other, spurious, shares)


def test_a_range_of_one_integer_keeps_a_neighbour_before_stage_three() -> None:
    """An integer column's stage-2 range of one unit bin k becomes [k, k + 1] (or [k - 1, k] where k - 1's noisy count
    exceeds k + 1's by 2 stds of their difference): stage 3 then counts both integers apart."""
    from synthcity_dpswf.privacy.domain.columns import integer_bin_edges, two_integers

    edges = integer_bin_edges()
    counts = np.zeros(len(edges) - 1)
    zero = int(np.searchsorted(edges, -0.5))
    assert two_integers((-0.5, 0.5), counts, edges, 80.0) == (-0.5, 1.5)
    counts[zero - 1] = 300.0  # 300 rows at -1, 2.7 stds of the difference above 1's
    assert two_integers((-0.5, 0.5), counts, edges, 80.0) == (-1.5, 0.5)
    assert two_integers((15.5, 16.5), counts, edges, 80.0) == (14.5, 16.5)  # 17 lies in an octave's bin
    assert two_integers((-0.5, 1.5), counts, edges, 80.0) == (-0.5, 1.5)
    assert two_integers((32.0, 64.0), counts, edges, 80.0) == (32.0, 64.0)


@pytest.mark.filterwarnings("ignore:release noise seeded")
def test_a_binary_numeric_column_keeps_both_values_measured() -> None:
    """flchain's ``mgus`` (115 ones in 7,874 rows; the bin of 1 within the noise at epsilon 1) got the range [0, 0]
    in most releases (21 of 30 here), the ones clipped into 0 by stage 3 and unmeasured: its range now holds 0 and 1,
    each counted by the value histogram (the one-way measurement has both, the ones' count centred on 115), in every
    release but those where noise keeps a stage-2 bin far below (one in 30 here: the range then ends at 0 or, where the
    numbers above it stand out of their overflow cell, is widened over the unit bins above, to 14 here)."""
    rng = np.random.default_rng(2)
    n = 7874
    frame = pd.DataFrame({"mgus": (rng.random(n) < 115 / n).astype(int), "age": rng.integers(50, 102, n),
                          "sex": np.where(rng.random(n) < 0.55, "F", "M")})
    ones, far = [], 0
    for seed in range(30):
        release = plugin_release(frame, seed)
        low, high = release.bounds["mgus"]
        if (low, high) != (-0.5, 1.5):
            far += 1
            assert high >= 0.5 and low < -1, (low, high)
            continue
        ones.append({level: count for level, count, _ in release.one_way["mgus"]}[1])
    assert far <= 2 and abs(np.mean(ones) - 115) < 40, (far, np.mean(ones))

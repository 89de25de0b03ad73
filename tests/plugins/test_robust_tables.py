"""Issue 35, item 4: tables as a new user passes them. Nothing output that nobody declared or released, no column
changing kind, warnings computed from released counts only and never a noisy estimate printed as a count."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import synthcity_dpswf  # noqa: F401  (registers the plugins)
from synthcity.plugins import Plugins
from synthcity_dpswf.recipes.tables import warn_about
from synthcity_dpswf.privacy import release_domain, secret_generator



def nullable_table(n: int = 400) -> pd.DataFrame:
    """Nullable Int64 and Float64 columns, each with one pandas NA."""
    rng = np.random.default_rng(0)
    ints = pd.array(rng.integers(0, 50, n), dtype="Int64")
    floats = pd.array(rng.normal(10.0, 2.0, n), dtype="Float64")
    ints[3], floats[5] = pd.NA, pd.NA
    return pd.DataFrame({"count": ints, "level": floats})


@pytest.fixture
def seeded_domain(monkeypatch: pytest.MonkeyPatch) -> None:
    """The DP domain's noise from a known seed, so that a test's outcome does not hang on a rare draw (the plugins'
    other releases keep theirs)."""
    from synthcity_dpswf.recipes import tables as table_recipe

    seeds = iter(range(100, 10_000))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        monkeypatch.setattr(table_recipe, "secret_generator", lambda: secret_generator(next(seeds)))


def inside_released_domain(plugin, synthetic: pd.DataFrame) -> None:  # type: ignore[no-untyped-def]
    """Every synthetic value lies in its column's released (or declared) range or categories, and a column that was
    not placed holds missing entries only."""
    domain = plugin.encoder_.domain
    for column in domain.columns:
        values = synthetic[column.name]
        if not column.placed:
            assert values.isna().all(), column.name
        elif hasattr(column, "low"):
            assert pd.api.types.is_numeric_dtype(values), column.name
            assert values.dropna().between(column.low, column.high).all(), column.name
        else:
            assert values.dropna().astype(str).isin([str(category) for category in column.categories]).all(), column.name


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_a_two_row_table_gives_nothing_nobody_released() -> None:
    frame = pd.DataFrame({"year": [2007, 2009], "bill": [39.1, 41.3], "species": ["Adelie", "Gentoo"]})
    for _ in range(5):
        plugin = Plugins().get("dpswflow", epsilon=1.0, n_steps=5).fit(frame)
        synthetic = plugin.generate(20).dataframe()
        inside_released_domain(plugin, synthetic)
        summary = plugin.released_domain()
        assert list(summary["column"]) == ["year", "bill", "species"]
        # Two rows, all in one bin, could not reach the run's threshold: no numeric column is placed (a year got a
        # noise range such as 2.1e12 in 18% of such fits before), and a category cannot pass its threshold.
        assert not summary.loc[summary["kind"] != "categorical", "placed"].any()
        assert "not placed" in str(plugin.privacy_report())


@pytest.mark.filterwarnings("ignore:release noise seeded")
def test_an_unplaced_column_is_named_with_the_rows_it_needs_and_what_a_schema_buys(seeded_domain: None) -> None:
    frame = pd.DataFrame({"year": [2007, 2009, 2008], "species": ["Adelie", "Gentoo", "Adelie"]})
    with pytest.warns(UserWarning, match=r"could not place columns .* missing entries only .* numeric column about \d+ "
                                         r"rows .* Declaring the columns .* gives the flow the share of the budget the DP domain takes \(40% of mu\^2"):
        Plugins().get("dpswflow", epsilon=1.0, n_steps=5).fit(frame)


def test_no_missing_value_warning_for_a_column_without_missing_values() -> None:
    from sklearn.datasets import load_diabetes

    frame = load_diabetes(as_frame=True, scaled=False).frame  # the bp, which has no missing value
    for _ in range(100):
        release = release_domain(frame, 0.5, 2.5e-6, secret_generator())
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            warn_about(release)
        # bp has no missing value: a warning may name it only for a range it could not place, never for missing entries
        named = [str(w.message) for w in caught if "'bp'" in str(w.message)]
        assert all(message.startswith("the DP domain could not place") for message in named), named


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_a_nullable_table_with_one_na_fits_and_generates(pandas_2_1_to_numpy: None) -> None:
    plugin = Plugins().get("dpswflow", epsilon=3.0, n_steps=5).fit(nullable_table())
    inside_released_domain(plugin, plugin.generate(50).dataframe())
    declared = Plugins().get("dpswflow", epsilon=3.0, n_steps=5, domain={"count": (0, 60, None), "level": (0.0, 20.0, None)})
    declared.fit(nullable_table())
    assert declared.generate(50).dataframe()["count"].dtype == "Int64"


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_dtypes_follow_the_released_kind_or_the_declared_schema(seeded_domain: None) -> None:
    rng = np.random.default_rng(0)
    n = 3000
    size = pd.Categorical(rng.choice(["S", "M", "L"], n), categories=["S", "M", "L"], ordered=True)
    frame = pd.DataFrame({"flag": rng.random(n) < 0.4, "size": size, "x": rng.normal(size=n)})
    plugin = Plugins().get("dpswflow", epsilon=3.0, n_steps=5).fit(frame)
    synthetic = plugin.generate(100).dataframe()
    assert synthetic["flag"].dtype == bool  # published True / False stay bool (synthcity's schema cast them to 0 / 1)
    # An undeclared Categorical: its category list is not read (one record adds a category), so the output is the
    # released categories, as objects.
    assert synthetic["size"].dtype == object and synthetic["x"].dtype == "float64"
    declared = pd.CategoricalDtype(["S", "M", "L"], ordered=True)
    plugin = Plugins().get("dpswflow", epsilon=3.0, n_steps=5, domain={"size": declared}).fit(frame)
    synthetic = plugin.generate(100).dataframe()
    assert synthetic["size"].dtype == declared and synthetic["flag"].dtype == bool


def test_a_column_mixing_numbers_and_strings_is_named_in_a_warning() -> None:
    rng = np.random.default_rng(0)
    n = 4000
    mixed = np.where(rng.random(n) < 0.5, rng.integers(0, 5, n).astype(object), rng.choice(["two", "x"], n))
    frame = pd.DataFrame({"mixed": mixed, "x": rng.normal(size=n)})
    with pytest.warns(UserWarning, match=r"mix numbers and other entries: 'mixed' \((integer|categorical); an estimated "
                                         r"\d+% of its entries, a noisy estimate"):
        Plugins().get("dpswflow", epsilon=3.0, n_steps=5).fit(frame)


def test_a_constraint_the_generator_cannot_meet_stops_after_a_bounded_effort(monkeypatch: pytest.MonkeyPatch) -> None:
    from synthcity.plugins.core.constraints import Constraints

    from synthcity_dpswf.plugins.table_path import CONSTRAINT_PROBE_DRAWS

    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"level": rng.uniform(1.0, 9.0, 500), "group": rng.choice(["a", "b"], 500)})
    plugin = Plugins().get("dpswflow", epsilon=3.0, n_steps=5, domain={"level": (0.0, 10.0), "group": ["a", "b"]})
    plugin.fit(frame)
    calls = []
    sample = plugin.generator_.sample
    monkeypatch.setattr(plugin.generator_, "sample", lambda *args, **kwargs: calls.append(1) or sample(*args, **kwargs))
    rare = Constraints(rules=[("level", ">=", 5.0000001), ("level", "<=", 5.0000002)])  # a window no row falls in
    with pytest.warns(UserWarning, match=r"the constraints kept 0 of the \d+ rows generated in 3 draws.*loosen them"):
        synthetic = plugin.generate(100, constraints=rare).dataframe()
    assert len(synthetic) == 0 and len(calls) == CONSTRAINT_PROBE_DRAWS  # synthcity's patience: 500 draws

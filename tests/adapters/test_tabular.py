"""The tabular adapter and the DP domain release (no synthcity needed)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from synthcity_dpswf.adapters import CategoricalColumn, MarginalTableCodec, NumericColumn, TabularDomain, TabularCodec
from synthcity_dpswf.privacy import release_domain, secret_generator
from synthcity_dpswf.privacy.domain import NO_CATEGORY


def _table(n: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "age": rng.integers(17, 91, n),
        "income": rng.normal(3000.0, 800.0, n),
        "city": rng.choice(["paris", "lyon", "nice"], n, p=[0.5, 0.3, 0.2]),
        "flag": rng.integers(0, 2, n),
    })


DOMAIN = TabularDomain((
    NumericColumn("age", 17, 90, integer=True),
    NumericColumn("income", 0.0, 6000.0),
    CategoricalColumn("city", ("lyon", "nice", "paris")),
    CategoricalColumn("flag", (0, 1)),
))


def test_encoded_rows_lie_in_the_unit_ball_and_decode_back() -> None:
    frame = _table(500)
    encoder = TabularCodec(DOMAIN)
    records = encoder.encode(frame)
    assert records.shape == (500, 2 + 3 + 2) == (500, encoder.dim)
    assert float(records.norm(dim=1).max()) <= 1 + 1e-6
    decoded = encoder.decode(records)  # dtypes from the domain: int64, float64, the categories' own
    assert list(decoded.columns) == list(frame.columns)
    assert dict(decoded.dtypes) == dict(frame.dtypes)
    pd.testing.assert_series_equal(decoded["age"], frame["age"])
    pd.testing.assert_series_equal(decoded["city"], frame["city"])
    pd.testing.assert_series_equal(decoded["flag"], frame["flag"])
    np.testing.assert_allclose(decoded["income"], frame["income"].clip(0, 6000), rtol=1e-5)


def test_decoding_clips_and_rounds_any_record() -> None:
    encoder = TabularCodec(DOMAIN)
    decoded = encoder.decode(torch.randn(200, encoder.dim) * 3)
    assert decoded["age"].between(17, 90).all() and decoded["age"].dtype.kind == "i"
    assert decoded["income"].between(0, 6000).all()
    assert set(decoded["city"]) <= {"lyon", "nice", "paris"} and set(decoded["flag"]) <= {0, 1}


def test_domain_from_levels_splits_narrow_and_wide_columns() -> None:
    domain = TabularDomain.from_levels({"a": 3, "b": 85}, max_one_hot=20)
    assert domain.columns == (CategoricalColumn("a", (0, 1, 2)), NumericColumn("b", 0.0, 84.0, integer=True))


def test_bad_domains_and_tables_fail_clearly() -> None:
    with pytest.raises(ValueError, match="low < high"):
        NumericColumn("x", 1.0, 1.0)
    with pytest.raises(ValueError, match="type must be"):
        TabularDomain.from_dict({"x": {"type": "text"}})
    with pytest.raises(ValueError, match="lacks the domain's columns"):
        TabularCodec(DOMAIN).encode(_table(5).drop(columns=["city"]))
    broken = _table(5)
    broken.loc[2, "income"] = np.nan
    with pytest.raises(ValueError, match="missing or non-numeric"):
        TabularCodec(DOMAIN).encode(broken)
    # A released domain maps what it does not describe to stated defaults, one record at a time.
    broken["city"] = broken["city"].astype(object)
    broken.loc[3, "city"] = "rome"
    records = TabularCodec(DOMAIN, unknown="first").encode(broken)
    encoded_income = float(records[2, 1]) * np.sqrt(4)
    assert encoded_income == pytest.approx(-1.0) and float(records[3, 2:5].abs().sum()) == 0.0


def test_dp_domain_finds_bounds_and_frequent_categories_only() -> None:
    # What holds for every noise draw is tested on each of 16 draws; a bound's place moves with the draw (and torch's
    # normal sampler differs from one CPU to another), so where it lies is tested on the draws' median.
    frame = _table(20000)
    frame.loc[0, "city"] = "a-rare-city"  # one record: must never be released
    income_lows = []
    for seed in range(16):
        release = release_domain(frame, 1.0, 1e-6, torch.Generator().manual_seed(seed))
        assert release.kinds == {"age": "integer", "income": "float", "city": "categorical", "flag": "integer"}
        low, high = release.bounds["age"]
        assert low <= 17 and high >= 90 and high <= 256  # within the factor-2 log bins around the data
        low, high = release.bounds["income"]
        # Tails too thin to stand out of the noise are cut: the bounds hold the central 94% on every draw.
        assert 0 < low <= frame["income"].quantile(0.03) and high >= frame["income"].quantile(0.97)
        income_lows.append(low)
        assert release.categories["city"] == ("lyon", "nice", "paris")
        assert release.bounds["flag"] == (-0.5, 1.5)  # the bins of 0 and 1
    assert np.median(income_lows) <= frame["income"].quantile(0.01)  # the central 98% on a typical draw
    domain = TabularDomain.from_release(release)
    flag = domain.columns[3]
    assert (flag.name, flag.low, flag.high, flag.integer) == ("flag", 0, 1, True) and flag.histogram is not None
    assert "differentially private" in domain.source


def test_dp_domain_threshold_matches_its_delta() -> None:
    release = release_domain(_table(5000)[["age", "city"]], 1.0, 1e-6, secret_generator())
    # tau = s * Phi^{-1}(1 - delta / (2 C (1 + e^epsilon))): a category unobserved in one of the pair passes with
    # probability at most that, and (1 + e^epsilon) C of it plus delta / 2 make delta (domain.py's proof).
    from scipy.stats import norm

    assert release.threshold == pytest.approx(release.category_std * norm.isf(1e-6 / (2 * (1 + np.e))))  # C_cat = 1
    # Stage 1 (type cells weighted by 1/2) takes mu^2 w^2 / (1 + w^2) of the budget: s = z sqrt(2 C (1 + w^2)); stages
    # 2 and 3 the rest, the categorical column at weight 1, the integer one's bins at 1 / r^2 and its histogram at
    # 1 / r_q^2 (r = r_q = 2): s_c = z sqrt(2 (1 + w^2)(1 + 1/4 + 1/4)).
    assert release.noise_std == pytest.approx(release.noise_multiplier * np.sqrt(2 * 2 * 1.25))
    assert release.category_std == pytest.approx(release.noise_multiplier * np.sqrt(2 * 1.25 * 1.5))



def test_dp_domain_never_raises_on_the_data_and_says_what_it_could_not_place() -> None:
    # 20 rows at epsilon = 1: nothing stands out of the noise. No error (an error is an output one record can
    # change): a placeholder category, a finite range, and located = False for the caller's warning.
    # At this noise even the kinds are coin flips (type noise 2s = 28 against a margin of 20): over seeds, both
    # branches give stated defaults.
    kinds = set()
    for seed in range(8):
        release = release_domain(_table(20)[["age", "city"]], 1.0, 1e-6, torch.Generator().manual_seed(seed))
        for column, kind in release.kinds.items():
            kinds.add(kind)
            if kind == "categorical":
                assert release.categories[column] == (NO_CATEGORY,) and not release.located[column]
            else:
                low, high = release.bounds[column]
                assert np.isfinite(low) and np.isfinite(high) and low < high
    assert kinds >= {"categorical", "integer"}


def test_dp_domain_places_small_and_heavy_tailed_columns_within_a_factor_of_their_range() -> None:
    from sklearn.datasets import load_breast_cancer

    frame = load_breast_cancer(as_frame=True).frame.drop(columns=["target"])
    n = len(frame)
    rng = np.random.default_rng(0)
    heavy = pd.DataFrame({"pareto": (rng.pareto(1.5, 5000) + 1) * 100, "mostly_zero": np.where(rng.random(5000) < 0.9, 0.0, rng.lognormal(8, 2, 5000))})
    for table, epsilon in ((frame, 1.5), (heavy, 0.3)):  # 1.5: the default share (0.5) of epsilon = 3
        release = release_domain(table, epsilon, 0.3 * 0.1 / n, torch.Generator().manual_seed(1))
        for column in table.columns:
            low, high = release.bounds[column]
            values = table[column]
            magnitude = max(abs(values.min()), abs(values.max()))
            # Never orders of magnitude outside the data (the breast cancer release of the old rule reached 1e13),
            # and holding most of the column (at this noise, 569 rows at epsilon 1.5, tails spread over octaves near
            # zero are cut).
            assert max(abs(low), abs(high)) <= 16 * magnitude, (column, low, high)
            assert values.between(low, high).mean() >= 0.6, (column, low, high)


def test_dp_domain_categories_do_not_depend_on_which_record_comes_first() -> None:
    """1, 1.0 and True are equal under Python's == and hash: counted as pandas does, the published label (and
    the order of equal-looking categories) followed the first record or the counts. Counted by kind and
    canonical value, neither moves."""
    releases = []
    for first in (1, 1.0, True, np.int64(1)):
        frame = pd.DataFrame({"c": pd.Series([first] + ["x"] * 600 + [1] * 200 + [True] * 200 + ["1"] * 200, dtype=object)})
        releases.append(release_domain(frame, 3.0, 1e-5, torch.Generator().manual_seed(0)).categories["c"])
    assert all(categories == releases[0] for categories in releases)
    assert [type(category) for category in releases[0]] == [int, str, bool, str]  # 1, "1", True, "x"


def test_pandas_categorical_columns_are_read_record_by_record() -> None:
    """A Categorical dtype carries its own category list (possibly with unobserved entries): the release counts
    records only, and the encoders map entries, not the dtype's codes (map + fillna on a Categorical raised)."""
    frame = pd.DataFrame({"c": pd.Categorical(["a"] * 400 + ["b"] * 400, categories=["a", "b", "never"]), "x": np.arange(800)})
    release = release_domain(frame, 3.0, 1e-5, torch.Generator().manual_seed(0))
    assert release.categories["c"] == ("a", "b")
    domain = TabularDomain.from_release(release)
    codes = MarginalTableCodec(domain, unknown="first").encode(frame)
    assert codes[:, 0].tolist() == [0.0] * 400 + [1.0] * 400
    assert TabularCodec(domain, unknown="first").encode(frame).shape == (800, 3)


def test_the_one_line_schema_declares_columns_that_may_be_missing() -> None:
    domain = TabularDomain.from_dict({"age": (17, 90, None), "income": (0.0, 1e5), "sex": ["F", "M", None], "city": ["a"]})
    age, income, sex, city = domain.columns
    assert isinstance(age, NumericColumn) and age.missing and age.integer and (age.low, age.high) == (17, 90)
    assert isinstance(income, NumericColumn) and not income.missing and not income.integer
    assert isinstance(sex, CategoricalColumn) and sex.missing and sex.categories == ("F", "M")
    assert isinstance(city, CategoricalColumn) and not city.missing
    frame = pd.DataFrame({"age": [20, None, 40], "income": [1.0, 2.0, 3.0], "sex": ["F", None, "M"], "city": ["a"] * 3})
    decoded = MarginalTableCodec(domain, 10).decode(MarginalTableCodec(domain, 10).encode(frame) + 0.5)
    assert decoded["age"].isna().tolist() == [False, True, False] and decoded["sex"].isna().tolist() == [False, True, False]
    with pytest.raises(ValueError, match=r"\(low, high, None\)"):
        TabularDomain.from_dict({"age": (17, 90, "missing")})


def test_every_codec_of_the_package_is_one_codec_protocol() -> None:
    """Tables and images are encoded and decoded through one protocol (``adapters.codec.Codec``): each built-in codec
    has ``encode``, ``decode`` and ``public_description``."""
    from synthcity_dpswf.adapters.codec import Codec
    from synthcity_dpswf.adapters.image_codecs import CodecRequest
    from synthcity_dpswf.adapters.image_latent import AutoencoderCodec
    from synthcity_dpswf.extensions import image_codecs

    images = torch.rand(6, 1, 8, 8)
    codecs = [TabularCodec(DOMAIN), MarginalTableCodec(DOMAIN, 4), AutoencoderCodec("mnist", latent_dim=4, device="cpu"),
              image_codecs()["dct"].build(images, CodecRequest(0.0, 0.0, dct_frequencies=4)),
              image_codecs()["private-pca"].build(images, CodecRequest(1.0, 1e-5, pca_components=2))]
    for codec in codecs:
        assert isinstance(codec, Codec), type(codec).__name__
        assert isinstance(codec.public_description, str) and codec.public_description


def test_check_table_lists_what_does_not_fit_the_domain_with_its_rows_and_values() -> None:
    """The local check (``synthcity_dpswf.check_table``) names, per column, each problem, its row count, what fit does
    with it and the values themselves; the codec's error names the column, no value, and points to the check."""
    import synthcity_dpswf

    frame = pd.DataFrame({"chapter": ["a", "b", "c", None, "c", "zz"], "age": [10, 20, 95, np.nan, "x", 30],
                          "extra": range(6)})
    domain = {"chapter": ["a", "b"], "age": (15, 90), "gone": (0, 1)}
    report = synthcity_dpswf.check_table(frame, domain)
    found = {(row["column"], row["problem"]): (row["rows"], row["at fit"], row["examples"])
             for row in report.to_dict("records")}
    assert found[("chapter", "categories not declared")] == (3, "refused", "'c' (2), 'zz' (1)")
    assert found[("chapter", 'missing entries, not declared ("missing": true)')][:2] == (1, "refused")
    assert found[("age", "non-numeric entries in a numeric column")] == (1, "refused", "'x' (1)")
    assert found[("age", "values below the range's low 15")] == (1, "clipped to the range", "10 (1)")
    assert found[("age", "values above the range's high 90")] == (1, "clipped to the range", "95 (1)")
    assert found[("gone", "not in the table")][:2] == (6, "refused")
    assert found[("extra", "not in the domain")][1] == "DP domain"
    assert len(found) == 8
    assert synthcity_dpswf.check_table(frame[["chapter"]].iloc[:2], {"chapter": ["a", "b"]}).empty
    with pytest.raises(ValueError, match="column 'chapter' holds values outside") as error:
        MarginalTableCodec(TabularDomain.parse({"chapter": ["a", "b"]})).encode(frame[["chapter"]].fillna("a"))
    assert "synthcity_dpswf.check_table" in str(error.value) and "dpswf check" in str(error.value)
    assert "'zz'" not in str(error.value) and "'c'" not in str(error.value)


@pytest.mark.parametrize("values", [
    pd.Series(["b", "a", None, "zz", "a", np.nan] * 50, dtype=object),  # strings, missing entries, an unknown one
    pd.Series(["b", "a", None, "zz"] * 50, dtype="string"),
    pd.Series([1, 0, 3, 1] * 50, dtype=np.int64),
    pd.Series([1.0, 0.0, np.nan, 2.5, -0.0] * 40),
    pd.Series([True, False, True] * 50),
    pd.Series([1, True, "1", 1.0, None, 0, False] * 30, dtype=object),  # mixed kinds: the per-entry path
])
def test_category_positions_are_each_entry_s_key_looked_up(values: pd.Series) -> None:
    """``category_index`` looks each distinct value up once where a column holds one kind of entry; every position
    is the one ``category_key`` of that entry gives (1, 1.0 and True told apart by kind, missing to the missing
    slot, an unknown value to the fallback)."""
    from synthcity_dpswf.adapters.table_domain import category_index
    from synthcity_dpswf.privacy.counts import category_key, is_missing

    column = CategoricalColumn("x", categories=["a", "b", 0, 1, 1.0, True, False, 2.5], missing=True)
    found = category_index(values, column, "first")
    keys = {category_key(category): index for index, category in enumerate(column.categories)}
    expected = [len(column.categories) if is_missing(value) else keys.get(category_key(value), -1)
                for value in values.to_numpy(dtype=object)]
    assert found.tolist() == expected

"""privacy.md, "Missing values": a missing entry is a level of its own, released like any other; the synthetic
table keeps the missing rates and their joint pattern, in the column's own dtype; the sensitivities hold for rows
that move between missing and present."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import torch

import synthcity_dpswf  # noqa: F401  (registers the plugins)
from synthcity.plugins import Plugins
from synthcity.plugins.core.dataloader import GenericDataLoader
from synthcity_dpswf.adapters import MarginalTableCodec, TabularDomain, TabularCodec
from synthcity_dpswf.math.histograms import coarse_index
from synthcity_dpswf.privacy import MarginalLayout, create_mechanism, release_domain, secret_generator
from synthcity_dpswf.privacy.mechanisms import ReleaseOptions

from missing_values import survey  # benchmarks/studies/missing_values.py: the table of the missing-values suite

DOMAIN = {
    "group": {"type": "categorical", "categories": ["a", "b", "c"]},
    "income": {"type": "numeric", "low": 0, "high": 200000, "missing": True},
    "age": {"type": "numeric", "low": 18, "high": 90, "integer": True, "missing": True},
    "home": {"type": "categorical", "categories": ["own", "rent"], "missing": True},
}


@pytest.mark.filterwarnings("ignore::UserWarning", "ignore::FutureWarning")
@pytest.mark.parametrize("schema", ["none", "declared"])
def test_missing_rates_and_their_pattern_survive_at_epsilon_1(schema: str, seeded_release_noise: None) -> None:
    real = survey()
    plugin = Plugins().get("dpswflow", epsilon=1.0, domain=None if schema == "none" else DOMAIN)
    plugin.fit(GenericDataLoader(real))
    synthetic = plugin.generate(len(real)).dataframe()
    for column in ("income", "age", "home"):  # within 0.02 of the real rate (issue 24's target at 5,000+ rows)
        assert abs(synthetic[column].isna().mean() - real[column].isna().mean()) < 0.02, column
    assert synthetic["group"].isna().mean() < 0.02  # a column without missing entries gets (about) none
    in_c = synthetic["group"] == "c"  # missing more often in group c: the joint pattern is kept
    assert synthetic.loc[in_c, "income"].isna().mean() > synthetic.loc[~in_c, "income"].isna().mean() + 0.15
    # The dtypes are the domain's: declared, income is a float column; released, its integer-valued numbers make it an
    # integer one (pandas' nullable Int64 where missing entries are).
    assert synthetic["age"].dtype == "Int64" and synthetic["home"].dtype == object
    assert synthetic["income"].dtype == ("float64" if schema == "declared" else "Int64")
    assert synthetic["home"].dropna().isin(["own", "rent"]).all()


def test_a_declared_column_without_missing_entries_refuses_one_before_any_release(monkeypatch: pytest.MonkeyPatch) -> None:
    from synthcity_dpswf.models import releasing as model_releasing

    monkeypatch.setattr(model_releasing, "release_batches", lambda *args, **kwargs: pytest.fail("released before refusing"))
    declared = {**DOMAIN, "home": {"type": "categorical", "categories": ["own", "rent"]}}
    with pytest.raises(ValueError, match="'home' holds values outside the domain's categories .*missing"):
        Plugins().get("dpswflow", domain=declared).fit(survey(200))
    declared = {**DOMAIN, "age": {"type": "numeric", "low": 18, "high": 90, "integer": True}}
    with pytest.raises(ValueError, match="'age' has missing or non-numeric values.*missing"):
        Plugins().get("dpswflow", domain=declared).fit(survey(200))
    with pytest.raises(ValueError, match="infinite values"):
        Plugins().get("dpswflow").fit(survey(200).assign(income=np.inf))


def test_codecs_give_missing_its_own_level_and_keep_records_in_the_ball() -> None:
    frame = survey(500)
    domain = TabularDomain.from_dict(DOMAIN)
    codec = MarginalTableCodec(domain, 20)
    codes = codec.encode(frame)
    assert codec.missing == (False, True, True, True) and codec.levels[1] == 21  # 20 income levels and missing
    assert torch.equal(codes[:, 1] == 20, torch.tensor(frame["income"].isna().to_numpy()))
    decoded = codec.decode(codes + 0.5)
    pd.testing.assert_series_equal(decoded["income"].isna(), frame["income"].isna(), check_names=False)
    pd.testing.assert_series_equal(decoded["home"].isna(), frame["home"].isna(), check_names=False)
    encoder = TabularCodec(domain)
    records = encoder.encode(frame)
    assert records.shape[1] == encoder.dim == 3 + 2 + 2 + 3 and float(records.norm(dim=1).max()) <= 1 + 1e-6
    back = encoder.decode(records)
    pd.testing.assert_series_equal(back["age"].isna(), frame["age"].isna(), check_names=False)
    assert back["age"].dtype == "Int64"


def test_the_missing_level_is_its_own_coarse_level_and_the_marginal_sensitivity_holds() -> None:
    groups = coarse_index(torch.arange(21), 21, 5, missing=True)
    assert groups[-1] == 4 and int((groups == 4).sum()) == 1 and groups[:-1].max() == 3  # 20 values in 4 levels
    layout = MarginalLayout.build((3, 21, 11, 3), coarse_bins=4, missing=(False, True, True, True))
    assert layout.coarse_levels == (3, 5, 5, 3)
    mechanism = create_mechanism("marginal", ReleaseOptions(layout=layout))
    present = torch.tensor([[0.0, 0.0, 0.0, 0.0]])
    missing = torch.tensor([[2.0, 20.0, 10.0, 2.0]])  # missing in every column that may be, another group
    gap = float((mechanism.statistic(present, None) - mechanism.statistic(missing, None)).norm())
    assert gap == pytest.approx(mechanism.sensitivity(None)) == pytest.approx(math.sqrt(2 * layout.n_tables))


def test_the_dp_domain_counts_missing_entries_in_a_type_cell_of_their_own() -> None:
    frame = survey(3000)[["income", "home"]]
    release = release_domain(frame, 2.0, 1e-5, secret_generator(3))
    assert release.missing == {"income": True, "home": True}
    assert release.kinds == {"income": "integer", "home": "categorical"}  # missing entries decide no kind
    assert release.categories["home"] == ("own", "rent")  # nor a category
    # Without missing entries the level comes only from noise above four stds (0.003% of releases per column).
    secret, clean = secret_generator(4), frame.dropna()
    assert not any(release_domain(clean, 2.0, 1e-5, secret).missing["income"] for _ in range(60))


def test_a_declared_columns_histogram_counts_its_numbers_only() -> None:
    """Missing entries of a declared numeric column fall in no histogram cell (not in its top one), whatever the
    column's dtype (an object column holding pandas' NA among numbers included)."""
    values = np.r_[np.linspace(0.5, 9.5, 1000), np.full(1000, np.nan)]
    frame = pd.DataFrame({"x": values, "y": pd.Series(list(values[:1500]) + [pd.NA] * 500, dtype=object)})
    release = release_domain(frame, 5.0, 1e-5, secret_generator(1), declared={"x": (0.0, 10.0, False), "y": (0.0, 10.0, False)})
    for column, expected in (("x", 1000), ("y", 1000)):
        counts = np.asarray(release.histograms[column][1])
        assert abs(counts.sum() - expected) < 6 * np.sqrt(len(counts)) * release.category_std * 2, column
        assert counts[-1] < 200, column  # not the 1,000 missing entries

"""The table runner's ``quality_report`` suite (benchmarks/table_metrics.py): SDMetrics' QualityReport properties, the
strongest real pairs' correlations, the coded columns' real-value share and the precision check, each on a toy table
built so that the right answer is known."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

import table_runner
from table_metrics import QUALITY_NOTE, SDMETRICS_NOTE, QualityReportMetrics, sdmetrics_metadata
from tables import Target


def toy_table(rows: int, seed: int) -> pd.DataFrame:
    """y = 2x plus a little noise (the planted strongest pair), z and w independent, a coded rate (3 values with one
    decimal), a coded integer (size class 1-4), a colour and a date."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=rows)
    return pd.DataFrame({
        "x": x, "y": 2 * x + 0.05 * rng.normal(size=rows), "z": rng.normal(size=rows), "w": rng.uniform(size=rows),
        "rate": rng.choice([3.2, 10.6, 1.8], size=rows), "size": rng.integers(1, 5, size=rows),
        "colour": rng.choice(["red", "blue"], size=rows),
        "day": pd.Timestamp("2020-01-01") + pd.to_timedelta(rng.integers(0, 365, size=rows), unit="D"),
    })


@pytest.fixture(scope="module")
def metrics() -> QualityReportMetrics:
    return QualityReportMetrics(toy_table(300, 0), Target("y", 0.0, "y > 0"), 0, toy_table(100, 1))


def test_the_metadata_reads_each_column_as_the_real_training_split_shows_it() -> None:
    """Numbers with more than 10 distinct values are ``numerical``, coded numbers (at most 10) and strings
    ``categorical``, datetimes ``datetime``."""
    assert sdmetrics_metadata(toy_table(300, 0)) == {"columns": {
        "x": {"sdtype": "numerical"}, "y": {"sdtype": "numerical"}, "z": {"sdtype": "numerical"},
        "w": {"sdtype": "numerical"}, "rate": {"sdtype": "categorical"}, "size": {"sdtype": "categorical"},
        "colour": {"sdtype": "categorical"}, "day": {"sdtype": "datetime"}}}


def test_sdmetrics_columns_are_scored_in_the_unit_interval_on_odd_synthetic_dtypes(metrics: QualityReportMetrics) -> None:
    """Column Shapes and Column Pair Trends are columns of the suite; a synthetic table with numbers as strings,
    missing entries, a category and a number the real rows lack and dates as text is scored, not crashed, and the
    real test split (the floor) scores near 1."""
    assert ("column_shapes", "Column Shapes") in metrics.columns and ("column_pair_trends", "Column Pair Trends") in metrics.columns
    odd = toy_table(100, 2).astype(object)
    odd.loc[:9, "x"] = np.nan
    odd.loc[10:19, "colour"] = "green"
    odd.loc[20:29, "rate"] = "7.7"
    odd["day"] = odd["day"].astype(str)
    odd.loc[30, "z"] = "not a number"
    scores = metrics.sdmetrics_scores(odd)
    for key in ("column_shapes", "column_pair_trends"):
        assert 0 <= scores[key] <= 1, scores
    assert SDMETRICS_NOTE not in scores, scores[SDMETRICS_NOTE]
    assert scores["column_pair_trends_pairs"] >= 1  # x / y is above SDMetrics' threshold
    floor = metrics.sdmetrics_scores(metrics.test)
    assert floor["column_shapes"] > 0.85 and floor["column_pair_trends"] > 0.9, floor


def test_a_crash_inside_sdmetrics_is_nan_with_the_reason(metrics: QualityReportMetrics,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from sdmetrics.reports.single_table.quality_report import QualityReport

    def crash(*args: object, **kwargs: object) -> None:
        raise RuntimeError("boom inside the report")

    monkeypatch.setattr(QualityReport, "generate", crash)
    scores = metrics.sdmetrics_scores(metrics.test)
    assert math.isnan(scores["column_shapes"]) and math.isnan(scores["column_pair_trends"])
    assert scores[SDMETRICS_NOTE] == "QualityReport failed: RuntimeError: boom inside the report"


def test_the_planted_strongest_pair_is_found_and_its_shuffled_copy_scores_near_zero(metrics: QualityReportMetrics) -> None:
    """y = 2x + small noise is the strongest real pair; a synthetic table with y shuffled has r near 0 there, and the
    worst |delta corr| is then about 1; a constant synthetic column gives a NaN r (and summary) with the pair named."""
    assert len(metrics.pairs) == 3 and metrics.pairs[0][:2] == ("x", "y") and metrics.pairs[0][2] > 0.99
    shuffled = metrics.train.assign(y=np.random.default_rng(3).permutation(metrics.train["y"].to_numpy()))
    result = metrics.correlations(shuffled)
    first = result["top_pairs"][0]
    assert first["columns"] == ["x", "y"] and first["real"] > 0.99 and abs(first["synthetic"]) < 0.15, first
    assert result["worst_corr_gap"] > 0.85 and QUALITY_NOTE not in result
    assert metrics.correlations(metrics.train)["worst_corr_gap"] == pytest.approx(0.0)
    constant = metrics.correlations(metrics.train.assign(x=1.0))
    assert math.isnan(constant["top_pairs"][0]["synthetic"]) and math.isnan(constant["worst_corr_gap"])
    assert "x / y" in constant[QUALITY_NOTE]


def test_the_coded_share_counts_real_values_and_the_precision_share_counts_decimals(metrics: QualityReportMetrics) -> None:
    """Real coded values (as text or with float noise, missing entries left out) score 1.0, shifted ones 0.0;
    values with more decimals than the real column's fail the precision check."""
    assert set(metrics.levels) == {"rate", "size"} and metrics.real_decimals["rate"] == 1 and metrics.real_decimals["size"] == 0
    real_values = metrics.test.astype({"rate": object})
    real_values.loc[:4, "rate"] = "3.2"
    real_values.loc[5:9, "size"] = np.nan
    real_values.loc[10:14, "rate"] = 10.6 * (1 + 1e-12)
    coded = metrics.coded_shares(real_values)
    assert coded["coded_shares"] == {"rate": 1.0, "size": 1.0} and coded["coded_share"] == 1.0
    shifted = metrics.test.assign(rate=metrics.test["rate"] + 0.5, size=metrics.test["size"] + 0.5)
    assert metrics.coded_shares(shifted)["coded_share"] == 0.0
    assert metrics.precision(metrics.test)["precision_share"] == 1.0
    precise = metrics.test.assign(rate=metrics.test["rate"] + 0.001)
    result = metrics.precision(precise)
    assert result["precision"]["rate"] == {"real_decimals": 1, "share": 0.0} and result["precision_share"] == 0.0
    without = QualityReportMetrics(metrics.train[["x", "y", "colour"]], Target("y", 0.0, "y > 0"), 0)
    assert math.isnan(without.coded_shares(metrics.test)["coded_share"])  # "-": no coded column
    alone = QualityReportMetrics(metrics.train[["x", "rate"]], Target("x", 0.0, "x > 0"), 0)
    assert math.isnan(alone.correlations(metrics.test)["worst_corr_gap"])  # "-": no numerical pair, and why
    assert "no pair of numerical columns" in alone.correlations(metrics.test)[QUALITY_NOTE]


def test_the_markdown_shows_every_column_of_the_suite_in_its_own_cell(metrics: QualityReportMetrics) -> None:
    """The header's |delta corr| is escaped, so that each row has as many cells as the header."""
    scores = metrics.scores(metrics.train)
    assert set(key for key, _ in metrics.columns) <= set(scores)
    payload = {"tables": {"toy": {"floor": metrics.floor()}}, "floor_label": metrics.floor_label,
               "columns": [list(column) for column in metrics.columns],
               "results": [{"table": "toy", "method": "privbayes", "schema": table_runner.SYNTHCITY_SCHEMA,
                            "epsilon": 1.0, "adjacency": "replace-one", "scores": scores, "fit_seconds": 1.0,
                            "generate_n_seconds": 0.5}]}
    lines = table_runner.rows_table(payload, "toy").splitlines()
    assert r"| Column Shapes | Column Pair Trends | worst \|Δcorr\| of top 3 | coded share | precision share |" in lines[0]
    cells = [len(line.replace(r"\|", "").split("|")) for line in lines]
    assert len(set(cells)) == 1, lines
    assert "| privbayes | read from data (synthcity's fit, not paid for) |" in lines[3]


@pytest.mark.parametrize("name", ["fair_3k", "computers_3k", "credit_card", "credit_data", "hmda", "mlc_churn"])
def test_the_small_tables_load_offline_with_a_schema_that_holds_their_training_rows(name: str) -> None:
    """Each small table (the Adult ones need the data root) has its target column, no ``rownames``, and a declared
    schema that names every column and holds every training value (missing ones where it allows them)."""
    from tables import holdout_split, load_table

    table = load_table(name, None)
    assert table.target.column in table.frame and "rownames" not in table.frame
    train, _ = holdout_split(table.frame, 0)
    schema = table.schema(train)
    assert list(schema) == list(train.columns)
    for column, entry in schema.items():
        values = train[column]
        assert entry.get("missing", False) or values.notna().all(), column
        known = values.dropna()
        if entry["type"] == "numeric":
            assert known.between(entry["low"], entry["high"]).all(), column
        else:
            assert known.isin(entry["categories"]).all(), column

"""The benchmark suites run end to end at a toy scale and write what the README promises."""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_raw_adult_domain_covers_the_published_table(shared_dir: Path) -> None:
    import pandas as pd

    from synthcity_dpswf.adapters.tabular import CategoricalColumn, NumericColumn, TabularDomain

    domain = TabularDomain.from_dict(json.loads((ROOT / "benchmarks" / "domains" / "adult_raw_domain.json").read_text()))
    table = pd.read_csv(shared_dir / "data" / "adult" / "adult.csv")
    assert domain.names == list(table.columns)
    for column in domain.columns:
        values = table[column.name]
        if isinstance(column, CategoricalColumn):
            assert set(values.unique()) <= set(column.categories), column.name
        else:
            assert isinstance(column, NumericColumn)
            assert column.low <= values.min() and values.max() <= column.high, column.name


def test_the_stand_in_and_missing_values_suites_run_at_a_toy_scale(tmp_path: Path) -> None:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import missing_values
    import stand_in

    stand_in.main(["--rows", "300", "--releases", "3", "--fits", "1", "--out", str(tmp_path)])
    payload = json.loads((tmp_path / "stand_in.json").read_text())
    assert payload["survival"]["releases"] == 3 and [row["schema"] for row in payload["fits"]] == ["none", "declared"]
    assert all(0 <= row["tv2"] <= 1 for row in payload["fits"]) and "**Survival**" in (tmp_path / "stand_in.md").read_text()
    missing_values.main(["--rows", "400", "--fits", "1", "--out", str(tmp_path)])
    payload = json.loads((tmp_path / "missing_values.json").read_text())
    for row in payload["fits"]:
        assert set(row["kept"]["missing"]) == {"income", "age", "home"} and 0 < row["dropped"]["tv2"] <= 1
    assert "largest rate error" in (tmp_path / "missing_values.md").read_text()

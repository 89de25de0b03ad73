"""The benchmark suites run end to end at a toy scale and write what the README promises."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

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


def test_refiner_validation_merges_runs_and_names_their_dataset(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import refiner_validation

    def part(dataset: str | None, weight: float | None, fid: float) -> dict:
        scores = {"cas": {"mlp": 0.5, "cnn": 0.6}}
        row = {"weight": weight, "latent_noise": None if weight is None else 0.0, "samples": {
            "fid": fid, "precision": 0.4, "recall": 0.2, **scores}, "reconstructions": scores}
        payload = {"epochs": 5, "fid_samples": 2000, "epsilon": 10.0, "release_seed": 0, "environment": {},
                   "nearest_latent_distance": None, "rows": [row]}
        return payload if dataset is None else {**payload, "dataset": dataset}

    parts = []
    for name, payload in (("a", part("fashion_mnist", None, 30.0)), ("b", part("fashion_mnist", 0.2, 20.0))):
        parts.append(tmp_path / f"{name}.json")
        parts[-1].write_text(json.dumps(payload))
    monkeypatch.setattr(sys, "argv", ["refiner_validation.py", "--out", str(tmp_path), "--name", "merged", "--merge",
                                      *map(str, parts)])
    refiner_validation.main()
    text = (tmp_path / "merged.md").read_text()
    assert text.startswith("# The autoencoder's refiner on FashionMNIST's public half")
    assert "| seed 0 | no refiner | - | - | - | 30.0 |" in text and "| 0.2 | 0 | 0 | 0 | 20.0 |" in text
    (tmp_path / "a.json").write_text(json.dumps(part(None, None, 30.0)))  # files written before --dataset: MNIST
    monkeypatch.setattr(sys, "argv", ["refiner_validation.py", "--out", str(tmp_path), "--name", "old", "--merge",
                                      str(tmp_path / "a.json")])
    refiner_validation.main()
    assert (tmp_path / "old.md").read_text().startswith("# The autoencoder's refiner on MNIST's public half")

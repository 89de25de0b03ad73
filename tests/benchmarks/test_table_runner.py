"""The table runner (benchmarks/table_runner.py): every committed config loads, and each metric suite runs end to end
on a toy scale, scoring ours, a synthcity peer and a reference run with the same code."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

import table_runner

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = ROOT / "benchmarks" / "configs" / "tables"


@pytest.mark.parametrize("config", sorted(CONFIGS.glob("*.toml")), ids=lambda path: path.stem)
def test_every_committed_config_loads_and_names_its_results_file(config: Path) -> None:
    grid = table_runner.load_grid(config)
    assert grid.name == config.stem and grid.epsilons and grid.tables


def test_a_grid_refuses_unknown_methods_and_suites_early() -> None:
    with pytest.raises(ValueError, match="unknown methods \\['ctgan'\\]"):
        table_runner.TableGrid("x", ("fair",), "quantile_cells", ("ctgan",), (1.0,))
    with pytest.raises(ValueError, match="metrics must be one of"):
        table_runner.TableGrid("x", ("fair",), "tv", ("dpswflow",), (1.0,))
    with pytest.raises(ValueError, match="score TSTR on a test split"):
        from table_metrics import SUITES
        from tables import load_table

        table = load_table("fair", None)
        SUITES["quantile_cells"](table, table.frame, None, 0)


def test_user_tables_score_ours_without_and_with_a_declared_schema_and_keep_other_rows(tmp_path: Path) -> None:
    config = str(CONFIGS / "user_tables.toml")
    common = ["--set", 'tables=["anes96"]', "--set", "rows=200", "--set", "speed=false", "--out", str(tmp_path)]
    table_runner.main([config, "--set", 'methods=["dpswflow"]', *common])
    payload = json.loads((tmp_path / "user_tables.json").read_text())
    assert payload["tables"]["anes96"]["train_rows"] == 160 and payload["tables"]["anes96"]["test_rows"] == 40
    rows = {row["schema"]: row for row in payload["results"]}
    assert set(rows) == {"none", "declared"}
    for row in rows.values():
        assert row["method"] == "dpswflow" and "error" not in row, row.get("error")
        assert row["reported_epsilon"] == "1" and row["config_file"] == "user_tables.toml"
        for name in ("tv1", "tv2", "tv3"):
            assert math.isfinite(row["scores"][name]) and 0 <= row["scores"][name] <= 1
        assert "speed_seconds" not in row
    table_runner.main([config, "--set", 'methods=["privbayes"]', "--set", "cap=60", *common])  # a second run, a peer
    payload = json.loads((tmp_path / "user_tables.json").read_text())
    assert sorted(row["method"] for row in payload["results"]) == ["dpswflow", "dpswflow", "privbayes"]
    markdown = (tmp_path / "user_tables.md").read_text()
    assert "| method | schema | adjacency | epsilon | TV1 |" in markdown and "| dpswflow | declared | replace-one | 1 |" in markdown
    assert "| privbayes | read from data (synthcity's fit, not paid for) | replace-one (PrivBayes'" in markdown


def test_domain_marginals_score_ours_and_a_reference_run_with_the_same_code(shared_dir: Path, tmp_path: Path) -> None:
    import pandas as pd

    reference = tmp_path / "reference"
    reference.mkdir()
    # A stand-in for a reference synthesizer's output: real rows (its scores must then be near the floor).
    pd.read_csv(shared_dir / "data" / "adult" / "adult_discretized.csv").head(2000).to_csv(
        reference / "adult_discretized_mst_eps3.csv", index=False)
    (reference / "timings.jsonl").write_text(json.dumps({"method": "mst", "epsilon": 3.0, "wall_s": 12.5}) + "\n")
    table_runner.main([str(CONFIGS / "marginals_adult_discretized.toml"), "--data-root", str(shared_dir / "data"),
                       "--set", "rows=400", "--set", "epsilons=[3]", "--set", 'methods=["dpswflow", "mst_reference"]',
                       "--set", 'neighbourings=["add_remove"]', "--reference", str(reference), "--out", str(tmp_path)])
    payload = json.loads((tmp_path / "marginals_adult_discretized.json").read_text())
    rows = {row["method"]: row for row in payload["results"]}
    assert set(rows) == {"dpswflow", "mst_reference"} and rows["mst_reference"]["fit_seconds"] == 12.5
    for row in rows.values():
        assert 0 <= row["scores"]["tv2_coarse"] <= row["scores"]["tv2_full"] <= 1 and 0 <= row["scores"]["detection"] <= 1
    assert rows["mst_reference"]["scores"]["detection"] < 0.65  # real rows against real rows
    assert payload["tables"]["adult_discretized"]["test_rows"] == 0  # split "none": every row to the generators
    table = (tmp_path / "marginals_adult_discretized.md").read_text()
    assert "| dpswflow | declared | add/remove | 3 |" in table and "| mst (reference, smartnoise-synth) | reference | add/remove (" in table
    assert "| real rows, half vs half |" in table


def test_synthcity_metrics_score_ours_and_a_synthcity_gan(shared_dir: Path, tmp_path: Path) -> None:
    table_runner.main([str(CONFIGS / "synthcity_metrics_quick.toml"), "--data-root", str(shared_dir / "data"),
                       "--set", "rows=200", "--set", 'tables=["adult_discretized"]', "--set", "epsilons=[3]",
                       "--set", 'methods=["dpswflow", "dpgan"]', "--out", str(tmp_path)])
    payload = json.loads((tmp_path / "synthcity_metrics_quick.json").read_text())
    rows = {row["method"]: row for row in payload["results"]}
    assert set(rows) == {"dpswflow", "dpgan"}
    for row in rows.values():
        assert "error" not in row, row.get("error")
        assert 0 <= row["scores"]["detection.detection_xgb.mean"] <= 1 and "performance.xgb.syn_id" in row["scores"]
    assert rows["dpgan"]["arguments"]["n_iter"] == 10 and rows["dpswflow"]["arguments"]["n_steps"] == 1000
    assert "| dpswflow | declared | replace-one | 3 |" in (tmp_path / "synthcity_metrics_quick.md").read_text()


def test_merge_adds_rows_and_refuses_another_split(tmp_path: Path) -> None:
    def part(train_rows: int, method: str) -> dict:
        return {"suite": "tables", "name": "toy", "metrics": "quantile_cells", "seed": 0, "delta": 1e-5, "cap": 1,
                "description": "", "environment": {"device": "cpu", "hardware": "x", "cpu_threads": 1,
                                                   "versions": {"synthcity": "0"}, "date": "today"},
                "columns": [["tv2", "TV2"]], "floor_label": "real", "parts": [],
                "tables": {"fair": {"train_rows": train_rows, "test_rows": 1, "columns": 1, "description": "", "target_rule": "",
                                    "metric": "AUROC", "floor": {"tv2": 0.1}}},
                "results": [{"table": "fair", "method": method, "schema": "none", "epsilon": 1.0, "adjacency": "replace-one",
                             "scores": {"tv2": 0.2}}]}

    first, second = tmp_path / "a.json", tmp_path / "b.json"
    first.write_text(json.dumps(part(4, "dpswflow")))
    second.write_text(json.dumps(part(4, "pategan")))
    out = tmp_path / "out"
    table_runner.main(["--merge", str(first), str(second), "--out", str(out)])
    assert sorted(row["method"] for row in json.loads((out / "toy.json").read_text())["results"]) == ["dpswflow", "pategan"]
    second.write_text(json.dumps(part(5, "pategan")))
    with pytest.raises(SystemExit, match="another split"):
        table_runner.main(["--merge", str(second), "--out", str(out)])


def test_a_categorical_target_is_labelled_by_its_positive_category() -> None:
    import numpy as np
    import pandas as pd
    from table_metrics import QuantileCellMetrics
    from tables import Target

    rows = pd.DataFrame({"age": [25.0, 40.0, 61.0, 33.0], "income": [">50K", "<=50K", ">50K", None]})
    metrics = QuantileCellMetrics(rows, Target("income", None, "income = >50K", positive=">50K"), 0, rows)
    assert metrics.target.metric == "AUROC"
    np.testing.assert_array_equal(metrics.labels(rows), [1.0, 0.0, 1.0, np.nan])


def easy_table(rows: int, seed: int) -> "pd.DataFrame":  # noqa: F821  (pandas imported where used)
    """A table whose numeric target y is x plus a little noise (its rule: y > 0), and a categorical column."""
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(seed)
    x = rng.normal(size=rows)
    return pd.DataFrame({"x": x, "z": rng.normal(size=rows), "colour": rng.choice(["red", "blue", None], size=rows),
                         "y": x + 0.3 * rng.normal(size=rows)})


def test_quantile_cells_score_synthcitys_own_tstr_and_detection_beside_the_packages() -> None:
    """synthcity's ``performance.xgb.syn_id`` and ``detection.detection_xgb.mean`` are columns of the suite, scored on the
    target rule's label: the real training split (the floor) predicts an easy target well and is not detected; a
    synthetic table whose target is unrelated to its features predicts it no better than chance; one whose target
    holds one class is NaN with the reason, not a crashed row; a numeric target is scored by regression (R^2)."""
    import numpy as np
    from table_metrics import SYNTHCITY_DETECTION, SYNTHCITY_NOTE, SYNTHCITY_TSTR, QuantileCellMetrics
    from tables import Target

    train, test = easy_table(800, 0), easy_table(400, 1)
    metrics = QuantileCellMetrics(train, Target("y", 0.0, "y > 0"), 0, test)  # synthcity must see the 0/1 label
    assert (SYNTHCITY_TSTR, "TSTR xgb (synthcity)") in metrics.columns
    assert (SYNTHCITY_DETECTION, "detection xgb (synthcity)") in metrics.columns
    floor = metrics.floor()
    assert floor[SYNTHCITY_TSTR] > 0.85 and floor[SYNTHCITY_DETECTION] < 0.65 and SYNTHCITY_NOTE not in floor, floor
    unrelated = train.assign(y=np.random.default_rng(2).permutation(train["y"].to_numpy()))
    scores = metrics.scores(unrelated)
    assert scores[SYNTHCITY_TSTR] < 0.7 and 0 <= scores[SYNTHCITY_DETECTION] <= 1, scores
    constant = metrics.scores(train.assign(y=1.0))
    assert math.isnan(constant[SYNTHCITY_TSTR]) and "one class" in constant[SYNTHCITY_NOTE]
    assert constant[SYNTHCITY_DETECTION] > 0.7  # the constant column gives it away
    regression = QuantileCellMetrics(train, Target("x", None, "x (R^2)"), 0, test).synthcity_scores(train)
    assert math.isfinite(regression[SYNTHCITY_TSTR]) and SYNTHCITY_NOTE not in regression, regression


def test_the_target_mode_crosses_ours_and_synthcitys_cells_and_names_the_target_column() -> None:
    """``targets = ["none", "named"]``: ours and synthcity's plugins get a cell per mode, the end-to-end peers one cell
    (per peer mode) standing for both; a named cell fits on synthcity's loader with the table's target column; rows
    differ by their mode, a row of an earlier run without one reads as ``none``, and the Markdown shows a target
    column only once some row named the target."""
    import pandas as pd
    from synthcity.plugins.core.dataloader import GenericDataLoader

    grid = table_runner.TableGrid("x", ("fair",), "quantile_cells", ("dpswflow", "privbayes", "dpmm_mst"), (1.0,),
                                  schemas=("none",), targets=("none", "named"), peer_modes=("end_to_end",))
    table = table_runner.load_table("fair", None)
    cells = table_runner.cells(grid, "fair", table, 1.0)
    assert [(cell.method, cell.target) for cell in cells] == [
        ("dpswflow", "none"), ("dpswflow", "named"), ("privbayes", "none"), ("privbayes", "named"), ("dpmm_mst", "none")]
    with pytest.raises(ValueError, match="targets take"):
        table_runner.TableGrid("x", ("fair",), "quantile_cells", ("dpswflow",), (1.0,), targets=("label",))

    class Recorder:  # a stand-in for Plugins(): records what fit is given
        def get(self, method: str, **arguments: object) -> "Recorder":
            return self

        def fit(self, data: object) -> None:
            self.data = data

        def generate(self, count: int) -> GenericDataLoader:
            return GenericDataLoader(train.head(count))

    train = table.frame.head(50)
    recorder = Recorder()
    table_runner.fit_plugin(recorder, "privbayes", {"epsilon": 1.0}, train, 0, table.target.column)
    assert isinstance(recorder.data, GenericDataLoader) and recorder.data.target_column == "affairs"
    table_runner.fit_plugin(recorder, "privbayes", {"epsilon": 1.0}, train, 0)
    assert isinstance(recorder.data, pd.DataFrame)

    old = {"table": "fair", "method": "dpswflow", "schema": "none", "epsilon": 1.0, "adjacency": "replace-one",
           "scores": {"tv2": 0.2}}
    named = {**old, "target": "named", "scores": {"tv2": 0.1, "performance.xgb.syn_id": 0.75}}
    assert table_runner.row_key(old) == table_runner.row_key({**old, "target": "none"}) != table_runner.row_key(named)
    payload = {"tables": {"fair": {"floor": {"tv2": 0.05}}}, "results": [old], "floor_label": "real",
               "columns": [["tv2", "TV2"], ["performance.xgb.syn_id", "TSTR xgb (synthcity)"]]}
    assert "| method | schema | adjacency |" in table_runner.rows_table(payload, "fair")
    assert "| dpswflow | none | replace-one | 1 | 0.200 | - |" in table_runner.rows_table(payload, "fair")
    payload["results"].append(named)
    table = table_runner.rows_table(payload, "fair")
    assert "| method | schema | target | adjacency |" in table and "| real | - | - | - | - | 0.050 | - |" in table
    assert "| dpswflow | none | none | replace-one | 1 | 0.200 | - |" in table
    assert "| dpswflow | none | named | replace-one | 1 | 0.100 | 0.750 |" in table


def test_the_categories_schema_gives_ours_what_the_end_to_end_peers_are_given() -> None:
    """``schemas = ["categories"]``: ours fitted with the declared schema's categorical columns alone (the others left
    to the DP domain), labelled as such, held against the end-to-end peers in the TV targets; a table whose schema is
    a domain file is refused with what to run instead."""
    grid = table_runner.TableGrid("x", ("fair",), "quantile_cells", ("dpswflow",), (1.0,),
                                  schemas=("none", "categories", "declared"))
    table = table_runner.load_table("fair", None)
    cells = table_runner.cells(grid, "fair", table, 1.0)
    assert [cell.schema for cell in cells] == ["none", table_runner.CATEGORIES_DECLARED, "read from data (not paid for)"]
    declared = table.schema(table.frame)
    kept = table_runner.categories_only(declared)
    assert list(kept) == ["rate_marriage", "religious", "educ", "occupation", "occupation_husb"]
    assert all(kept[name] == declared[name] for name in kept)
    with pytest.raises(ValueError, match="run it with 'none' or 'declared'"):
        table_runner.categories_only("adult_domain.json")
    with pytest.raises(ValueError, match="schemas take"):
        table_runner.TableGrid("x", ("fair",), "quantile_cells", ("dpswflow",), (1.0,), schemas=("partial",))
    assert [table_runner.schema_class(label) for label in ("none", table_runner.CATEGORIES_DECLARED, "declared",
                                                           table_runner.READ_FROM_DATA)] == [
        "none", "categories", "declared", "declared"]

    def row(method: str, schema: str, tv2: float, mode: str | None = None) -> dict[str, Any]:
        return {"table": "flights", "method": method, "schema": schema, "mode": mode, "epsilon": 1.0, "adjacency": "replace-one",
                "neighbouring": "replace_one" if mode is None else None, "scores": {"tv2": tv2}}

    payload = {"tables": {"flights": {}}, "results": [
        row("dpswflow", "none", 0.057), row("dpswflow", table_runner.CATEGORIES_DECLARED, 0.090),
        row("dpswflow", "declared", 0.062),
        row("dpmm_mst", "end-to-end: categories declared, bounds paid (0.1 of epsilon)", 0.080, "end_to_end"),
        row("dpmm_mst", "reference: full schema given", 0.050, "reference")]}
    targets = table_runner.peer_summary(payload)
    assert "- flights, dpswflow (none, replace-one): 0.057, met against dpmm MST 0.080" in targets
    assert "- flights, dpswflow (categories declared, replace-one): 0.090, missed against dpmm MST 0.080" in targets
    assert "- flights, dpswflow (declared, replace-one): 0.062, missed against dpmm MST 0.050" in targets

"""The benchmark suites run end to end at a toy scale and write what the README promises."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_raw_adult_domain_covers_the_published_table(shared_dir: Path) -> None:
    import pandas as pd

    from synthcity_dpswf.adapters import CategoricalColumn, NumericColumn, TabularDomain

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


def test_refiner_validation_merges_runs_of_one_dataset_and_names_it(tmp_path: Path) -> None:
    import refiner_validation

    def part(dataset: str | None, weight: float | None, fid: float) -> dict[str, Any]:
        scores = {"cas": {"mlp": 0.5, "cnn": 0.6}}
        row = {"weight": weight, "latent_noise": None if weight is None else 0.0, "samples": {
            "fid": fid, "precision": 0.4, "recall": 0.2, **scores}, "reconstructions": scores}
        payload = {"epochs": 5, "fid_samples": 2000, "epsilon": 10.0, "release_seed": 0, "environment": {},
                   "nearest_latent_distance": None, "rows": [row]}
        return payload if dataset is None else {**payload, "dataset": dataset}

    def write(name: str, payload: dict[str, Any]) -> str:
        (tmp_path / f"{name}.json").write_text(json.dumps(payload))
        return str(tmp_path / f"{name}.json")

    first, second = write("a", part("fashion_mnist", None, 30.0)), write("b", part("fashion_mnist", 0.2, 20.0))
    refiner_validation.main(["--out", str(tmp_path), "--name", "merged", "--merge", first, second])
    text = (tmp_path / "merged.md").read_text()
    assert text.startswith("# The autoencoder's refiner on FashionMNIST's public half")
    assert "| seed 0 | no refiner | - | - | - | 30.0 |" in text and "| 0.2 | 0 | 0 | 0 | 20.0 |" in text
    assert json.loads((tmp_path / "merged.json").read_text())["dataset"] == "fashion_mnist"
    old = write("old", part(None, None, 30.0))  # files written before --dataset are MNIST's
    refiner_validation.main(["--out", str(tmp_path), "--name", "old_merged", "--merge", old])
    assert (tmp_path / "old_merged.md").read_text().startswith("# The autoencoder's refiner on MNIST's public half")
    with pytest.raises(ValueError, match="differ in dataset"):
        refiner_validation.main(["--out", str(tmp_path), "--name", "mixed", "--merge", first, old])
    # A merged file merged again keeps its rows' release seeds, files and environments.
    fresh = write("fresh", {**part("fashion_mnist", 0.05, 25.0), "release_seed": None})
    refiner_validation.main(["--out", str(tmp_path), "--name", "again", "--merge", str(tmp_path / "merged.json"), fresh])
    again = json.loads((tmp_path / "again.json").read_text())
    assert [row["release_seed"] for row in again["rows"]] == [0, 0, None]
    assert again["merged_from"] == [first, second, fresh] and len(again["environments"]) == 3
    assert "| seed 0 | 0.2 |" in (tmp_path / "again.md").read_text() and "| fresh | 0.05 |" in (tmp_path / "again.md").read_text()


def test_pair_selection_script_runs_every_setting_on_fair(tmp_path: Path) -> None:
    """``benchmarks/studies/pair_selection.py`` end to end on one fit: the public choice and the selection, both
    generators, both schemas, in a table that says which is which."""
    import pair_selection

    pair_selection.main(["--tables", "fair", "--fits", "1", "--out", str(tmp_path)])
    payload = json.loads((tmp_path / "pair_selection_fair.json").read_text())
    assert payload["arguments"] == "--tables fair --fits 1 --out " + str(tmp_path)
    settings = {(row["generator"], row["pair_selection"], row["schema"]) for row in payload["rows"]}
    assert settings == {(g, p, s) for g in ("dpswflow", "dpswflow_r") for p in ("public", "adaptive")
                        for s in ("none", "declared")}
    assert all(0 < row["tv2"] < 1 for row in payload["rows"])
    # fair at epsilon = 1 is noise-limited: the selection runs in every adaptive fit and in no public one
    assert all(row["selected"] == (row["pair_selection"] == "adaptive") for row in payload["rows"])
    assert "| fair | dpswflow | - | adaptive | 0.3 | 1.5 | none | 100% |" in (tmp_path / "pair_selection_fair.md").read_text()
    assert all(0 < row["column_pair_trends"] <= 1 for row in payload["rows"])  # fair, a real table: SDMetrics scores it


def test_target_validation_script_scores_a_frame_and_a_named_target(tmp_path: Path) -> None:
    """``benchmarks/studies/target_validation.py`` end to end on fair, one fit per cell: the floor, and the same
    generator fitted on a frame (no target) and on a loader naming the target, with no schema and with the declared
    one."""
    import target_validation

    target_validation.main(["--tables", "fair", "--generators", "dpswflow", "--modes", "frame", "pairs", "--fits", "1",
                            "--out", str(tmp_path)])
    payload = json.loads((tmp_path / "target_validation.json").read_text())
    cells = {(row["schema"], row["mode"]) for row in payload["rows"] if row["generator"] == "dpswflow"}
    assert cells == {(schema, mode) for schema in ("none", "declared") for mode in ("frame", "pairs")}
    assert all(0.4 < row["tstr"] <= 1 and 0 <= row["tv2"] < 1 for row in payload["rows"])


def test_target_validation_s_coarse_cap_holds_only_inside_its_fits() -> None:
    """``--coarse-caps``: inside ``coarse_cap`` the resolution rule's most coarse levels are the cap (Adult at epsilon
    1: 21 levels under a cap of 32, 16 under the package's), the package's own outside and with ``None``."""
    import target_validation

    from synthcity_dpswf.adapters.tabular import table_resolution

    with target_validation.coarse_cap(32):
        assert table_resolution(26_000, 58.0)[1] == 21
    with target_validation.coarse_cap(None):
        assert table_resolution(26_000, 58.0)[1] == 16
    assert table_resolution(26_000, 58.0)[1] == 16 and target_validation.NUMERIC_TARGETS["adult_age"].metric == "AUROC"


def test_coarse_runs_script_fits_both_rules_and_names_the_columns_with_runs(tmp_path: Path) -> None:
    """``benchmarks/studies/coarse_runs.py`` end to end on fair, one fit per cell: quantile runs against equal runs,
    with no schema (the DP domain types age as an integer column of more levels than coarse ones: it gets runs) and the
    declared schema (no integer column: no runs, the two rules one), and the rule restored after the run."""
    import coarse_runs

    from synthcity_dpswf.adapters import MarginalTableCodec

    rule = MarginalTableCodec.equal_mass_runs
    coarse_runs.main(["--tables", "fair", "--modes", "frame", "--fits", "1", "--out", str(tmp_path)])
    assert MarginalTableCodec.equal_mass_runs is rule
    rows = json.loads((tmp_path / "coarse_runs.json").read_text())["rows"]
    assert [(row["schema"], row["rule"]) for row in rows] == [
        (schema, rule_name) for schema in ("none", "declared") for rule_name in coarse_runs.RULES]
    with_runs = {(row["schema"], row["rule"]): row["columns_with_runs"] for row in rows}
    assert with_runs[("declared", "quantile runs")] == [] and all(not with_runs[(s, "equal runs")] for s in ("none", "declared"))
    assert all(0.4 < row["tstr"] <= 1 and 0 <= row["tv2"] < 1 for row in rows)


def test_one_table_fit_calls_nothing_back_up_into_the_plugin() -> None:
    """``benchmarks/studies/fit_trace.py``'s probe on this checkout (issue 47): a table fit and generation with no
    schema make no call from a data path into the plugin base, nor from ``recipes/`` into any module of ``plugins/`` (a
    callable handed down, such as the loader's public rules before they became a value)."""
    import fit_trace

    measured = fit_trace.trace(ROOT)
    assert measured["callbacks"] == []
    assert "recipes/tables.py" in measured["files"] and "plugins/paths.py" in measured["files"]


def test_flow_particles_script_scores_each_setting_and_times_them_side_by_side(tmp_path: Path) -> None:
    """``benchmarks/studies/flow_particles.py`` end to end on fair at toy counts, one fit per cell: every (schema,
    setting) of the validation table scored with the same random state, the timing rows' ratios against the first
    setting's, the kinds restored after the run, and a malformed setting refused."""
    import argparse

    import flow_particles

    from synthcity_dpswf.models import kinds

    before = kinds.KINDS["marginal"]
    flow_particles.main(["--tables", "fair", "--generators", "dpswflow", "--settings", "1000:70", "2000:35", "--fits", "1",
                         "--time-tables", "fair", "--repeats", "1", "--out", str(tmp_path)])
    assert kinds.KINDS["marginal"] is before  # the flowed particles restored after each fit
    payload = json.loads((tmp_path / "flow_particles.json").read_text())
    assert [(row["schema"], row["particles"], row["directions"]) for row in payload["rows"]] == [
        ("none", 1000, 70), ("none", 2000, 35), ("declared", 1000, 70), ("declared", 2000, 35)]
    assert all(0.4 < row["tstr"] <= 1 and 0 <= row["tv2"] < 1 for row in payload["rows"])
    assert [row["ratio"] for row in payload["timing"]][0] == 1.0 and len(payload["timing"]) == 2
    assert "| fair | 5,093 | dpswflow | none | 2,000 | 35 |" in (tmp_path / "flow_particles.md").read_text()
    with pytest.raises(argparse.ArgumentTypeError, match="PARTICLES:DIRECTIONS"):
        flow_particles.parse_setting("20000")


def test_table_batches_script_reads_each_setting_s_summed_noise_from_the_fits(tmp_path: Path) -> None:
    """``benchmarks/studies/table_batches.py`` end to end on fair, one fit per cell: DPSWflow's one release beside
    DPSWflow-r at the package's batches (Poisson), at fixed-size batches of their rate (`fixed`) and at half the rows in
    one pass, each row's noise per record counted r = z / (q sqrt(K)) read from its privacy report (DPSWflow-r's above
    DPSWflow's z; the Poisson default below 0.7 of the fixed-size batches'; fewer, larger fixed-size batches lower
    theirs), and a malformed setting refused."""
    import argparse

    import table_batches

    table_batches.main(["--tables", "fair", "--settings", "default", "fixed", "0.5:1", "--fits", "1", "--out",
                        str(tmp_path)])
    payload = json.loads((tmp_path / "table_batches.json").read_text())
    rows = {(row["schema"], row["setting"]): row for row in payload["rows"]}
    assert set(rows) == {(schema, setting) for schema in ("none", "declared")
                         for setting in ("one release", "default", "fixed", "0.5:1")}
    for schema in ("none", "declared"):
        one, default, fixed, halves = (rows[schema, setting]["noise"]
                                       for setting in ("one release", "default", "fixed", "0.5:1"))
        assert one < default < 0.7 * fixed and halves < fixed  # the default's Poisson batches at fixed's rate
    assert all(0.4 < row["tstr"] <= 1 and 0 <= row["tv2"] < 1 for row in payload["rows"])
    assert "| fair | 5,093 | dpswflow_r | none | 0.5:1 |" in (tmp_path / "table_batches.md").read_text()
    with pytest.raises(argparse.ArgumentTypeError, match="FRACTION:PASSES"):
        table_batches.parse_setting("0.5")
    assert table_batches.label(table_batches.parse_setting("poisson:0.1:10")) == "poisson:0.1:10"


def test_domain_wild_ranges_script_flags_ranges_far_beyond_the_values(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``benchmarks/studies/domain_wild_ranges.py``: a released range is wild only beyond ``FAR`` times the column's
    largest magnitude (at least 1), ranges are read from ``released_domain()``'s text (categories, written ``x, y``, a
    coded column's values and an unplaced column are not ranges; a float range with its decimals is), and a seeded run
    on fair at a ``FAR`` below 1 (every range "wild") scores each flagged column's generated rows against its real
    range."""
    import pandas as pd

    import domain_wild_ranges

    real = pd.Series([0.0, 3.0, 7.2])
    assert not domain_wild_ranges.wild(0.0, 64.0, real) and domain_wild_ranges.wild(0.0, 128.0, real)
    assert domain_wild_ranges.wild(-20.0, 1.0, pd.Series([0.0, 1.0]))  # a 0/1 column: magnitude 1
    released = pd.DataFrame({"column": ["a", "b", "c", "d", "e", "f"],
                             "values": ["[0, 1.5e+10]", "x, y", "0, 1", "UNPLACED", "[0.5, 32] (1 decimal)",
                                        "values 1, 2, 3"]})
    assert domain_wild_ranges.numeric_ranges(released) == {"a": (0.0, 1.5e10), "e": (0.5, 32.0)}
    monkeypatch.setattr(domain_wild_ranges, "FAR", 0.5)
    domain_wild_ranges.main(["--tables", "fair", "--fits", "1", "--steps", "5", "--out", str(tmp_path)])
    payload = json.loads((tmp_path / "domain_wild_ranges.json").read_text())
    assert payload["fits"] == {"fair": 1} and len(payload["rows"]) >= 1  # fair's coded columns show values, no range
    assert all(row["table"] == "fair" and 0.0 <= row["outside"] <= 1.0 and math.isfinite(row["generated_max"])
               for row in payload["rows"])
    assert "fair: " in (tmp_path / "domain_wild_ranges.md").read_text()


def test_replace_one_accounting_script_compares_fixed_size_and_poisson_batches(tmp_path: Path) -> None:
    """``benchmarks/studies/replace_one_accounting.py`` at two rates: Poisson batches take less noise than fixed-size
    ones below q = 1 and more at q = 1 (the antipodal pair's slack), r is z / (q sqrt(K)), and the table names both."""
    import replace_one_accounting

    replace_one_accounting.main(["--rates", "0.2", "1", "--epsilons", "1", "--out", str(tmp_path)])
    rows = {row["rate"]: row for row in json.loads((tmp_path / "replace_one_accounting.json").read_text())["rows"]}
    assert rows[0.2]["steps"] == 50 and rows[0.2]["ratio"] < 0.7 and rows[1.0]["ratio"] > 1
    assert rows[0.2]["poisson_r"] == pytest.approx(rows[0.2]["poisson_z"] / (0.2 * math.sqrt(50)))
    assert "| 1 | 0.2 | 50 |" in (tmp_path / "replace_one_accounting.md").read_text()


def test_dpsgd_codec_accounting_script_compares_the_codec_s_two_samplings(tmp_path: Path) -> None:
    """``benchmarks/studies/dpsgd_codec_accounting.py`` for 5,120 images at epsilon 1: q = 512 / 5,120, K = 50, the
    codec's half of mu^2 as its own epsilon, and the Poisson batches' z (antipodal pair) below the fixed-size batches'
    (the replace-one RDP bound), with the add/remove z of the same schedule beside them."""
    import dpsgd_codec_accounting

    dpsgd_codec_accounting.main(["--images", "5120", "--epsilons", "1", "--out", str(tmp_path)])
    (row,) = json.loads((tmp_path / "dpsgd_codec_accounting.json").read_text())["rows"]
    assert row["rate"] == pytest.approx(0.1) and row["steps"] == 50 and row["codec_epsilon"] < 1
    assert row["poisson_z"] < 0.8 * row["fixed_z"] and row["ratio"] == pytest.approx(row["poisson_z"] / row["fixed_z"])
    assert row["add_remove_z"] > 0
    assert "| 5,120 | 1 |" in (tmp_path / "dpsgd_codec_accounting.md").read_text()


def test_dpsgd_codec_speed_script_projects_the_full_schedule_from_a_timed_fraction(shared_dir: Path, tmp_path: Path) -> None:
    """``benchmarks/studies/dpsgd_codec_speed.py`` on 256 MNIST images at one and two threads: the default codec's
    schedule (5 epochs, every image in each batch: q = 1, 5 steps), a fifth of it timed (1 epoch, 1 step) and scaled by
    its steps, each count's ratio to one thread, and the 20-minute budget named."""
    import dpsgd_codec_speed

    dpsgd_codec_speed.main(["--data-root", str(shared_dir / "data"), "--images", "256", "--fraction", "0.2",
                            "--rounds", "1", "--out", str(tmp_path)])
    payload = json.loads((tmp_path / "dpsgd_codec_speed.json").read_text())
    assert payload["full_steps"] == 5 and payload["timed_epochs"] == 1 and payload["settings"]["epochs"] == 5
    one, two = payload["threads"]["1"], payload["threads"]["2"]
    assert one["ratio_to_first"] == [1.0] and two["ratio_to_first"][0] == pytest.approx(two["median"] / one["median"])
    assert all(value > 0 for entry in (one, two) for value in entry["projected_seconds"])
    assert "| 1 |" in (tmp_path / "dpsgd_codec_speed.md").read_text() and "Budget (issue 45): 1200 s" in (
        tmp_path / "dpsgd_codec_speed.md").read_text()


def test_image_generate_speed_script_times_the_plugin_beside_a_fresh_flow(tmp_path: Path) -> None:
    """``benchmarks/studies/image_generate_speed.py`` at a toy scale: every call timed, the kept pairs beside a fresh
    flow."""
    import image_generate_speed

    image_generate_speed.main(["--steps", "5", "--repeats", "1", "--out", str(tmp_path)])
    payload = json.loads((tmp_path / "image_generate_speed.json").read_text())
    assert [row["call"] for row in payload["rows"]] == ["fit", "generate(10)", "generate(500)", "generate(2000)"]
    assert all(row["seconds"] >= 0 for row in payload["rows"]) and "flowed" in payload["rows"][1]
    assert "| generate(10) |" in (tmp_path / "image_generate_speed.md").read_text()


def test_dask_floor_script_times_the_fit_beside_one_scan(tmp_path: Path) -> None:
    """``benchmarks/studies/dask_floor.py`` at a toy scale: the scan, both fits, generation beside a plain write, and
    the in-memory pair (in its own process), each with its ratio to the floor beside it."""
    import dask_floor

    dask_floor.main(["--rows", "20000", "--out", str(tmp_path), "--label", "toy"])
    (row,) = json.loads((tmp_path / "dask_floor.json").read_text())["rows"]
    assert {"scan", "fit", "fit_declared", "generate", "write", "memory_scan", "memory_fit"} <= set(row)
    assert row["label"] == "toy" and all(row[key] > 0 for key in ("scan", "fit", "memory_fit"))
    assert "| toy | 20,000 |" in (tmp_path / "dask_floor.md").read_text()

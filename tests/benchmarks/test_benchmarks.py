"""The benchmark suites run end to end at a toy scale and write what the README promises."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
INCEPTION = "weights/inception_fid_torchscript.pt"


def run(script: str, *arguments: str) -> str:
    completed = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / script), *arguments], capture_output=True, text=True, timeout=600,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    return completed.stdout


def test_image_suite_end_to_end(shared_dir: Path, tmp_path: Path) -> None:
    run(
        "images.py", "--data-root", str(shared_dir / "data"), "--inception", str(shared_dir / INCEPTION), "--quick",
        # The DP-SGD GAN's model is tested in test_dpsgd_gan.py; its training here cost about a minute of CI.
        # One epsilon: each scored run costs an FID and two classifiers, and epsilon = inf is the same path without
        # noise (its rows and the accountant's inf are checked in test_models.py and test_privacy.py).
        "--datasets", "mnist", "--epsilons", "10", "--methods", "DPSWflow", "DPSWflow-r", "DPSWflow-r record once",
        "--n-public", "1000", "--n-private", "600", "--autoencoder-epochs", "1", "--n-steps", "20",
        "--flow-steps", "20",
        "--n-samples", "200", "--fid-samples", "10", "--runs", "2", "--passes", "1", "--gan-epochs", "1",
        "--n-test", "1000",  # CAS scored on 1,000 test images: predicting all 10,000 was half of this test's time
        "--out", str(tmp_path), "--cache", str(tmp_path / "cache"),
    )
    payload = json.loads((tmp_path / "images_quick.json").read_text())
    assert payload["mode"]["n_test"] == 1000 and "the first 1,000 test images" in (tmp_path / "images_quick.md").read_text()
    assert payload["environment"]["device"] == "cpu" and payload["environment"]["versions"]["opacus"]
    rows = {(row["method"], row["convention"], str(row["target_epsilon"])) for row in payload["rows"]}
    assert ("DPSWflow-r", "paper", "10.0") in rows and ("DPSWflow", "sound", "10.0") in rows
    assert ("autoencoder reconstruction", "none", "inf") in rows
    for row in payload["rows"]:
        assert len(row["runs"]) == (1 if row["method"] == "autoencoder reconstruction" else 2)
        if row["convention"] == "sound" and row["target_epsilon"] != "inf":
            assert row["epsilon"] <= row["target_epsilon"]
        if row["convention"] == "paper":  # the paper's noise is far too small for its epsilon under Delta = 2||Theta||
            assert row["epsilon"] > 2 * row["paper_epsilon"]
            assert abs(row["mean_noise_std"] / row["paper_sigma"] - 1) < 0.1
    markdown = (tmp_path / "images_quick.md").read_text()
    assert "| DPSWflow-r record once |" in markdown and "the paper's table beside ours" in markdown
    releases = {row["method"]: row.get("release") for row in payload["rows"] if row["convention"] == "sound"}
    assert releases["DPSWflow"] == releases["DPSWflow-r"] == "projected_histogram" and releases["DPSWflow-r record once"] == "record"
    assert (tmp_path / "images_quick_mnist_eps10.png").exists() and (tmp_path / "images_quick_mnist_fid_cas.png").exists()


def test_tabular_suite_end_to_end(shared_dir: Path, tmp_path: Path) -> None:
    run(
        "tabular.py", "--data-root", str(shared_dir / "data"), "--quick", "--rows", "200", "--tables", "adult_discretized",
        "--epsilons", "3", "--methods", "dpswflow", "dpgan", "--out", str(tmp_path),
    )
    payload = json.loads((tmp_path / "tabular_quick.json").read_text())
    rows = {row["method"]: row for row in payload["rows"]}
    assert rows["dpswflow"]["error"] is None and rows["dpgan"]["error"] is None
    for row in rows.values():
        assert 0 <= row["scores"]["detection.detection_xgb.mean"]["mean"] <= 1
        assert "performance.xgb.syn_id" in row["scores"] and "stats.alpha_precision.delta_precision_alpha_OC" in row["scores"]
    assert "| dpswflow |" in (tmp_path / "tabular_quick.md").read_text()


def test_marginal_suite_scores_ours_and_a_reference_run_with_the_same_code(shared_dir: Path, tmp_path: Path) -> None:
    import pandas as pd

    reference = tmp_path / "reference"
    reference.mkdir()
    # A stand-in for a reference synthesizer's output: real rows (its scores must then be near the floor).
    pd.read_csv(shared_dir / "data" / "adult" / "adult_discretized.csv").head(2000).to_csv(reference / "mst_eps3.csv", index=False)
    (reference / "timings.jsonl").write_text(json.dumps({"method": "mst", "epsilon": 3.0, "wall_s": 12.5}) + "\n")
    run("marginals.py", "--data-root", str(shared_dir / "data"), "--rows", "400", "--epsilons", "3", "--methods", "dpswflow",
        "mst", "--reference", str(reference), "--out", str(tmp_path))
    payload = json.loads((tmp_path / "marginals_adult_discretized.json").read_text())
    rows = {row["method"]: row for row in payload["results"]}
    assert set(rows) == {"dpswflow", "mst (reference, smartnoise-synth)"} and rows["mst (reference, smartnoise-synth)"]["seconds"] == 12.5
    for row in rows.values():
        assert 0 <= row["scores"]["tv2_coarse"] <= row["scores"]["tv2_full"] <= 1 and 0 <= row["scores"]["detection"] <= 1
    assert rows["mst (reference, smartnoise-synth)"]["scores"]["detection"] < 0.65  # real rows against real rows
    table = (tmp_path / "marginals_adult_discretized.md").read_text()
    assert "| dpswflow | replace-one | 3 |" in table and "| mst (reference, smartnoise-synth) | add/remove (" in table


@pytest.mark.parametrize("script", ["images.py", "tabular.py"])
def test_suites_explain_themselves(script: str) -> None:
    usage = run(script, "--help")
    assert "--quick" in usage and "--full" in usage and "--device" in usage


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


def test_runs_split_over_invocations_merge(tmp_path: Path) -> None:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import report

    def part(datasets: list[str], fid: float) -> dict:
        return {
            "suite": "images", "mode": {"name": "quick"}, "wall_seconds": 10.0, "environment": {"device": "cpu"},
            "datasets": {name: {"n_private": 1} for name in datasets},
            "rows": [{"dataset": name, "method": "DPSWflow-r", "runs": [{"fid": fid}]} for name in datasets],
        }

    first, second = tmp_path / "a.json", tmp_path / "b.json"
    first.write_text(json.dumps(part(["mnist", "fashion_mnist"], 1.0)))  # its fashion_mnist was interrupted
    second.write_text(json.dumps(part(["fashion_mnist"], 2.0)))
    merged = report.merge([first, second])
    assert list(merged["datasets"]) == ["mnist", "fashion_mnist"] and merged["wall_seconds"] == 20.0
    assert [(row["dataset"], row["runs"][0]["fid"]) for row in merged["rows"]] == [("mnist", 1.0), ("fashion_mnist", 2.0)]
    second.write_text(json.dumps({**part(["mnist"], 3.0), "mode": {"name": "full"}}))
    with pytest.raises(SystemExit, match="suite or mode"):
        report.merge([first, second])


@pytest.mark.slow
def test_image_suite_without_public_data_writes_its_own_files(shared_dir: Path, tmp_path: Path) -> None:
    """The benchmark's --codec dct run end to end on real MNIST (28 s). Out of the default run: every codec runs
    end to end through the pipeline it calls in test_images.py, the suite's default path in the image smoke test
    here, and report.py's codec handling in test_merge_refuses_runs_of_different_codecs; with it the default run
    took 14:22 of the 15 minutes allowed."""
    run(
        "images.py", "--data-root", str(shared_dir / "data"), "--inception", str(shared_dir / INCEPTION), "--quick",
        "--codec", "dct", "--datasets", "mnist", "--epsilons", "10", "--methods", "DPSWflow", "--no-paper",
        "--n-private", "300", "--flow-steps", "10", "--n-samples", "100", "--fid-samples", "10", "--runs", "1",
        "--out", str(tmp_path), "--cache", str(tmp_path / "cache"),
    )
    payload = json.loads((tmp_path / "images_quick_dct.json").read_text())
    assert payload["codec"] == "dct" and payload["datasets"]["mnist"]["record_dim"] == 77 + 10
    assert payload["datasets"]["mnist"]["assumption"] == "a fixed DCT codec: no public data"
    assert "**Public-data assumption: a fixed DCT codec: no public data.**" in (tmp_path / "images_quick_dct.md").read_text()
    assert (tmp_path / "images_quick_dct_mnist_eps10.png").exists() and (tmp_path / "images_quick_dct_mnist_fid_cas.png").exists()
    assert not (tmp_path / "images_quick.json").exists() and not (tmp_path / "cache").exists()  # nothing trained


def test_merge_refuses_runs_of_different_codecs(tmp_path: Path) -> None:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import report

    base = {"suite": "images", "mode": {"name": "quick"}, "wall_seconds": 1.0, "environment": {}, "datasets": {}, "rows": []}
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    first.write_text(json.dumps(base))  # written before --codec existed: the public half
    second.write_text(json.dumps({**base, "codec": "dct"}))
    with pytest.raises(SystemExit, match="differ in --codec"):
        report.merge([first, second])


def test_codec_settings_for_the_test_split_are_chosen_on_validation_rows_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import image_codecs

    def row(codec: str, directions: int | None, at_10: tuple[float, float], at_1: tuple[float, float] | None,
            samples: int = 10000) -> dict:
        scores = {"10.0": {"mlp": at_10[0], "cnn": at_10[1]}}
        if at_1 is not None:
            scores["1.0"] = {"mlp": at_1[0], "cnn": at_1[1]}
        return {"codec": codec, "directions": directions, "bins": 32, "steps": 3000, "samples": samples, "epsilons": scores,
                "dim": 77, "public": "no public data", "ceiling": {"mlp": 0.9, "cnn": 0.9}, "codec_seconds": 0.0}

    validation = {"dataset": "mnist", "split": "validation", "rows": [
        row("dct:12", 1000, (0.80, 0.90), (0.70, 0.70)),
        row("dct:16", 4000, (0.88, 0.86), (0.60, 0.60)),  # best mean at epsilon 10 (0.87 against 0.85)
        row("dct:16", 8000, (0.99, 0.99), (0.99, 0.99), samples=2000),  # scored with other samples: not comparable
        row("ae:16:10", None, (0.99, 0.99), (0.99, 0.99)),  # another codec family: not a candidate
    ]}
    select = image_codecs.select_settings
    codec, choice, score = select(validation, ["dct:12", "dct:16"], 10.0, "mnist", 10000)
    assert (codec, choice, score) == ("dct:16", image_codecs.FlowChoice(4000, 32, 3000), pytest.approx(0.87))
    assert select(validation, ["dct:12", "dct:16"], 1.0, "mnist", 10000)[:2] == ("dct:12", image_codecs.FlowChoice(1000, 32, 3000))
    with pytest.raises(ValueError, match="no row of codecs"):
        select(validation, ["dct:12"], float("inf"), "mnist", 10000)
    for split, dataset in (("test", "mnist"), ("validation", "fashion_mnist")):  # never choose on the test split
        with pytest.raises(ValueError, match="validation results file of"):
            select({**validation, "split": split}, ["dct:12"], 10.0, dataset, 10000)
    assert image_codecs.FlowChoice.parse("default:16:1500") == image_codecs.FlowChoice(None, 16, 1500)
    with pytest.raises(argparse.ArgumentTypeError, match="L:G:STEPS"):
        image_codecs.FlowChoice.parse("4000:32")

    # The plan of a test run: each epsilon runs only its validation choice; epsilons of one choice share a row.
    chosen_file = tmp_path / "validation.json"
    chosen_file.write_text(json.dumps(validation))
    planned: list[tuple[str, image_codecs.FlowChoice, list[float]]] = []

    def fake_run(spec: str, choice: image_codecs.FlowChoice, epsilons: list[float], args: object) -> list[dict]:
        planned.append((spec, choice, epsilons))
        return [{**row(spec, choice.directions, (0.5, 0.5), None), "bins": choice.bins, "steps": choice.steps}]

    monkeypatch.setattr(image_codecs, "run_codec", fake_run)
    monkeypatch.setattr(sys, "argv", ["image_codecs.py", "--data-root", "data", "--codecs", "dct:12", "dct:16", "--split", "test",
                                      "--epsilons", "10", "1", "--select-from", str(chosen_file), "--out", str(tmp_path)])
    image_codecs.main()
    assert planned == [("dct:16", image_codecs.FlowChoice(4000, 32, 3000), [10.0]), ("dct:12", image_codecs.FlowChoice(1000, 32, 3000), [1.0])]
    written = json.loads((tmp_path / "image_codecs_mnist_test.json").read_text())
    assert [item["chosen_on"] for item in written["rows"]] == ["validation.json"] * 2

    # Another machine's rows join the table of the same dataset and split; a row of the same settings keeps the
    # epsilons the new one did not measure.
    out = tmp_path / "merged"
    first = {"dataset": "mnist", "split": "test", "rows": [row("dct:12", 1000, (0.5, 0.5), None)]}
    image_codecs.merge_rows(first, out)
    second = {**first, "rows": [dict(first["rows"][0], device="cuda", epsilons={"1.0": {"mlp": 0.8, "cnn": 0.7}})]}
    path = image_codecs.merge_rows(second, out)
    merged = json.loads(path.read_text())
    assert path.name == "image_codecs_mnist_test.json" and len(merged["rows"]) == 1
    assert set(merged["rows"][0]["epsilons"]) == {"10.0", "1.0"} and merged["rows"][0]["device"] == "cuda"
    assert "| 50.0% / 50.0% | 80.0% / 70.0% |" in path.with_suffix(".md").read_text()


def test_image_cpu_costs_table_names_each_part_and_its_minutes() -> None:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import image_cpu_costs

    payload = {"environment": {"cpu_threads": 2, "device": "cpu", "versions": {"torch": "2.2"}}, "parts": {
        "autoencoder": {"what": "autoencoder, latent 16, 10 epochs", "seconds": 465.0},
        "flow": {"what": "DPSWflow", "fit_seconds": 30.0, "sample_seconds": 270.0, "seconds": 300.0},
    }}
    table = image_cpu_costs.markdown(payload)
    assert "| autoencoder | autoencoder, latent 16, 10 epochs | 465 | 7.8 |" in table
    assert "| flow | DPSWflow (fit 30 s + sampling 270 s) | 300 | 5.0 |" in table and "2 torch threads" in table


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

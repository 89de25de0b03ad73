"""The benchmark suites run end to end at a toy scale and write what the README promises."""

from __future__ import annotations

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

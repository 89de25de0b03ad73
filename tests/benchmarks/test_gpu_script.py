"""benchmarks/gpu.sh on CPU (--smoke), so that a lent GPU is never spent on a typo, and benchmarks/gpu_pack.sh.

The fast tests run every stage but the images stage's FID-heavy run (three FIDs: over a minute here): its command
line is checked by running it against packed fake MNIST files, which the image runner reads only after parsing every
argument and loading and checking its grid with the smoke's overrides; so are the dpsgd stage's two branches (the
validation grid run first, or given validation rows copied). The slow tests run the whole smoke, images stage
included, and the dpsgd stage at toy size (about a minute here, five FIDs).
"""

from __future__ import annotations

import gzip
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import gpu_report
import image_results

ROOT = Path(__file__).resolve().parents[2]


def gpu_script(*arguments: str, timeout: int = 120) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "DPSWF_PYTHON": sys.executable, "OMP_NUM_THREADS": "1"}
    environment.pop("DPSWF_DATA", None)
    environment.pop("DPSWF_INCEPTION", None)
    return subprocess.run(
        ["bash", str(ROOT / "benchmarks" / "gpu.sh"), *arguments], capture_output=True, text=True, timeout=timeout, env=environment,
    )


def stage_statuses(out: Path) -> dict[str, str]:
    return {line.split("\t")[0]: line.split("\t")[1] for line in (out / "stages.tsv").read_text().splitlines()}


def test_smoke_runs_the_stages_and_writes_the_summary(tmp_path: Path) -> None:
    completed = gpu_script("--smoke", "--out", str(tmp_path))
    assert completed.returncode == 0, completed.stdout[-3000:] + completed.stderr[-3000:]
    assert stage_statuses(tmp_path) == {"env": "0", "tests": "0", "speed": "0", "images": "skip"}
    assert json.loads((tmp_path / "env.json").read_text())["mode"] == "smoke"
    assert (tmp_path / "nvidia-smi.txt").exists()
    tests = (tmp_path / "tests.xml").read_text()  # the CUDA selection: collected, skipped without a device
    assert "test_cuda_matches_cpu" in tests and "test_plugin_fits_and_generates_on_cuda" in tests
    assert "test_trains_and_samples_on_cuda" in tests and "test_the_images_command_builds_its_flow_on_cuda" in tests
    speed = json.loads((tmp_path / "speed" / "speed_cpu.json").read_text())
    assert [(row["n"], row["L"]) for row in speed["rows"]] == [(1000, 20), (4000, 50)]
    assert "no MNIST" in (tmp_path / "images.log").read_text()
    summary = (tmp_path / "README.md").read_text()
    assert "| tests | 0 |" in summary and "6 skipped" in summary and "| 4,000 | 50 |" in summary


def test_packed_files_are_rebuilt_and_the_image_command_line_parses(tmp_path: Path) -> None:
    data, pack, out = tmp_path / "data", tmp_path / "pack", tmp_path / "out"
    (data / "MNIST" / "raw").mkdir(parents=True)
    for name in ("train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"):
        (data / "MNIST" / "raw" / name).write_bytes(b"not really MNIST")
    fake_inception = tmp_path / "inception.pt"
    fake_inception.write_bytes(os.urandom(3000))
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "private_autoencoder_0123456789abcdef.pt").write_bytes(b"not really a codec")
    packed = subprocess.run(
        ["bash", str(ROOT / "benchmarks" / "gpu_pack.sh"), "--data-root", str(data), "--inception", str(fake_inception),
         "--out", str(pack), "--no-wheels", "--codecs", str(tmp_path / "cache")], capture_output=True, text=True, timeout=60,
    )
    assert packed.returncode == 0, packed.stderr
    assert (pack / "c" / "codecs" / "private_autoencoder_0123456789abcdef.pt").read_bytes() == b"not really a codec"
    assert (pack / "a" / "inception.pt.part1").stat().st_size == 3000
    for half in ("b", "c"):
        assert gzip.decompress((pack / half / "MNIST" / "raw" / "t10k-labels-idx1-ubyte.gz").read_bytes()) == b"not really MNIST"
    assert not (pack / "c" / "inception.pt.part1").exists()

    completed = gpu_script("--smoke", "--pack", str(pack), "--stages", "images,codecs,private,dpsgd", "--out", str(out))
    assert completed.returncode == 1  # the fake Inception file cannot load, nor can the fake MNIST
    assert "Inception file rebuilt from 1 part(s), sha256" in (out / "pack.log").read_text()
    assert f"DP-SGD codec checkpoints found under {pack / 'c' / 'codecs'}" in (out / "pack.log").read_text()
    log = (out / "images.log").read_text()  # every argument parsed, the grid loaded: the run reached the data
    assert "usage:" not in log and "unrecognized arguments" not in log and "in private_set" in log, log[-2000:]
    codecs = (out / "codecs.log").read_text()  # the codec search reached the data with every argument parsed
    assert "usage:" not in codecs and "unrecognized arguments" not in codecs and "Traceback" in codecs, codecs[-2000:]
    assert "ImportError" not in codecs and "ModuleNotFoundError" not in codecs and "image_runner.py" in codecs
    private = out / "table_mnist" / "private"  # the no-public-data rows side by side, each reached the data
    assert sorted(path.name for path in private.glob("log_*.txt")) == [
        "log_dpswflow_r_eps1.txt", "log_dpswflow_r_eps10.txt", "log_dpswgen_eps1.txt", "log_dpswgen_eps10.txt"]
    for row in private.glob("log_*.txt"):
        text = row.read_text()
        assert "usage:" not in text and "unrecognized arguments" not in text and "Traceback" in text, text[-2000:]
    assert (out / "table_mnist" / "private.log").read_text().count(": exit 1") == 4
    dpsgd = (out / "dpsgd.log").read_text()  # no validation rows with --smoke: the validation grid reached the data
    assert "the validation grid first" in dpsgd and "usage:" not in dpsgd and "in private_set" in dpsgd, dpsgd[-2000:]
    assert "1 codec checkpoints copied from" in dpsgd  # the packed codecs reach the stage's cache
    assert not (out / "dpsgd" / "dpsgd_codec_mnist_test.json").exists()  # the test grid waits for validation rows
    assert stage_statuses(out) == {"images": "1", "codecs": "1", "private": "1", "dpsgd": "1"}
    summary = (out / "README.md").read_text()  # the sections of the stages that ran, and only those
    assert "## One flow step" not in summary and "## CUDA tests" not in summary
    assert "## The full image table: MNIST (`benchmarks/gpu.sh --stages private`)" in summary


def test_bad_arguments_are_refused_before_any_stage() -> None:
    for arguments, message in [(["--stages", "env,fid"], "unknown stage 'fid'"), (["--out"], "--out needs a value"),
                               (["--image-runs", "0"], "--image-runs must be a positive integer"),
                               (["--dpsgd-validation", "/no/such/file.json"], "is not a file"),
                               (["--dpsgd-codecs", "/no/such/folder"], "is not a folder"),
                               (["--dpsgd-codecs", str(ROOT / "benchmarks")], "holds no private_autoencoder_*.pt")]:
        completed = gpu_script("--smoke", *arguments)
        assert completed.returncode == 2 and message in completed.stderr


def test_the_dpsgd_stage_copies_given_validation_rows_and_its_test_grid_reaches_the_data(tmp_path: Path) -> None:
    """--dpsgd-validation (the GPU run's default: benchmarks/results/dpsgd_codec_mnist_validation.json): the rows are
    copied beside the test grid's, which chooses from them alone and reaches the (fake) data with every argument parsed;
    --dpsgd-codecs' checkpoints are copied into the stage's cache; the FID rows wait for the test grid."""
    data, out = tmp_path / "data", tmp_path / "out"
    (data / "MNIST" / "raw").mkdir(parents=True)
    (data / "MNIST" / "raw" / "train-images-idx3-ubyte").write_bytes(b"not really MNIST")
    (tmp_path / "inception.pt").write_bytes(b"not really Inception")
    row = {"codec": "dpae:4:4:1", "samples": 100, "generator": "dpswflow", "neighbouring": "replace_one",
           "pixels": image_results.pixels_of("dpae:4:4:1"), "epsilons": {"10.0": {"mlp": 0.5, "cnn": 0.6}},
           "setting": {"directions": 50, "bins": 8, "steps": 5, "codec_share": 0.5}}
    validation = tmp_path / "validation.json"
    validation.write_text(json.dumps({"name": "dpsgd_codec_mnist_validation", "dataset": "mnist", "split": "validation",
                                      "rows": [row]}))
    (tmp_path / "codecs").mkdir()
    (tmp_path / "codecs" / "private_autoencoder_0123456789abcdef.pt").write_bytes(b"not really a codec")
    completed = gpu_script("--smoke", "--stages", "dpsgd", "--out", str(out), "--data-root", str(data),
                           "--inception", str(tmp_path / "inception.pt"), "--dpsgd-validation", str(validation),
                           "--dpsgd-codecs", str(tmp_path / "codecs"))
    assert completed.returncode == 1 and stage_statuses(out) == {"dpsgd": "1"}
    assert (out / "dpsgd" / "dpsgd_codec_mnist_validation.json").read_text() == validation.read_text()
    log = (out / "dpsgd.log").read_text()
    assert "validation rows copied from" in log and "the validation grid first" not in log
    assert f"1 codec checkpoints copied from {tmp_path / 'codecs'}" in log and "FID rows" not in log
    assert "epsilon 10: dpae:4:4:1 50, 8, 5, codec_share 0.5 chosen (validation mean CAS 55.0%)" in log, log[-2000:]
    assert "usage:" not in log and "unrecognized arguments" not in log and "in private_set" in log, log[-2000:]


@pytest.mark.skipif(torch.cuda.is_available(), reason="with CUDA this would be the whole GPU run")
def test_the_cuda_run_refuses_a_machine_without_cuda(tmp_path: Path) -> None:
    completed = gpu_script("--out", str(tmp_path))
    assert completed.returncode == 2 and "no CUDA device" in completed.stderr and not (tmp_path / "stages.tsv").exists()


@pytest.mark.slow
def test_whole_smoke_run_with_the_image_suite(shared_dir: Path, tmp_path: Path) -> None:
    completed = gpu_script(
        "--smoke", "--out", str(tmp_path), "--data-root", str(shared_dir / "data"),
        "--inception", str(shared_dir / "weights" / "inception_fid_torchscript.pt"), timeout=600,
    )
    assert completed.returncode == 0, completed.stdout[-3000:] + completed.stderr[-3000:]
    assert stage_statuses(tmp_path) == {"env": "0", "tests": "0", "speed": "0", "images": "0"}
    payload = json.loads((tmp_path / "images" / "paper_protocol_mnist_full.json").read_text())
    assert [(row["generator"], sorted(row["epsilons"])) for row in payload["rows"]] == [("dpswflow", ["1.0", "10.0"])]
    assert (tmp_path / "images" / "paper_protocol_mnist_full_eps10.png").exists()
    assert "| DPSWflow | 10.0 |" in (tmp_path / "README.md").read_text()


@pytest.mark.slow
def test_the_dpsgd_stage_at_toy_size(shared_dir: Path, tmp_path: Path) -> None:
    """The DP-SGD codec's test-split rows at toy size: the validation grid first (--smoke gives it no rows), then the
    test grid on its choice, FID included, then the FID rows of the README's table at one epsilon per config, a toy
    setting of their own (about two minutes on one core, most of it seven FIDs)."""
    completed = gpu_script(
        "--smoke", "--stages", "dpsgd", "--out", str(tmp_path), "--data-root", str(shared_dir / "data"),
        "--inception", str(shared_dir / "weights" / "inception_fid_torchscript.pt"), timeout=300,
    )
    assert completed.returncode == 0, completed.stdout[-3000:] + completed.stderr[-3000:]
    assert stage_statuses(tmp_path) == {"dpsgd": "0"}
    validation = json.loads((tmp_path / "dpsgd" / "dpsgd_codec_mnist_validation.json").read_text())
    test = json.loads((tmp_path / "dpsgd" / "dpsgd_codec_mnist_test.json").read_text())
    assert validation["split"] == "validation" and test["split"] == "test" and len(validation["rows"]) == 2
    best = max(validation["rows"], key=lambda row: row["epsilons"]["10.0"]["mlp"] + row["epsilons"]["10.0"]["cnn"])
    chosen = [row for row in test["rows"] if row.get("chosen_on")]
    assert [row["generator"] for row in chosen] == ["dpswflow", "dpswflow_r"]
    fid_rows = {row["generator"]: row for row in test["rows"] if not row.get("chosen_on")}
    assert sorted(fid_rows) == ["dpswflow", "dpswflow_r"]
    assert list(fid_rows["dpswflow"]["epsilons"]) == ["10.0"] and list(fid_rows["dpswflow_r"]["epsilons"]) == ["1.0"]
    for row in fid_rows.values():  # the _fid config (DPSWflow) and the _low config (DPSWflow-r), each at one epsilon
        assert row["setting"]["directions"] == 40 and row["fid_samples"] == 10
        assert all(math.isfinite(cell["fid"]) for cell in row["epsilons"].values())
    for row in chosen:  # the validation split's choice, scored on the test set with FID
        assert row["codec"] == "dpae:4:4:1" and row["chosen_on"] == "dpsgd_codec_mnist_validation.json"
        assert row["setting"] == best["setting"] and list(row["epsilons"]) == ["10.0"] and row["fid_samples"] == 10
        cell = row["epsilons"]["10.0"]
        assert row["n_released"] == 300 and row["n_scored"] == 10000 and cell["reported_epsilon"] <= 10
        assert all(math.isfinite(cell[key]) for key in ("mlp", "cnn", "fid")) and "fid" in cell["ceiling"]
    assert "| dpsgd | 0 |" in (tmp_path / "README.md").read_text()


def test_the_image_summary_reads_the_runners_rows_and_the_earlier_scripts(tmp_path: Path) -> None:
    """The images stage's rows from the image runner (mean and spread over generation runs, fit + the slowest run
    against the target), and the committed folder of the script before it, read as it was written."""
    run = {"mlp": 0.9, "cnn": 0.95, "fid": 40.0, "precision": 0.6, "recall": 0.5, "sample_seconds": 2.0}
    cell = {**run, "fit_seconds": 1.0, "reported_epsilon": 9.99, "runs": [run, {**run, "fid": 42.0, "sample_seconds": 3.0}]}
    row = {"codec": "ae:8:10", "description": "an autoencoder", "codec_seconds": 10.0, "n_released": 30000, "samples": 10000,
           "fid_samples": 10000, "generation_runs": 2, "generator": "dpswflow", "setting": {"label": ""},
           "ceiling": {"mlp": 0.95, "cnn": 0.97, "fid": 41.0, "precision": 0.7, "recall": 0.6}, "epsilons": {"10.0": cell}}
    (tmp_path / "images").mkdir()
    (tmp_path / "images" / "paper_protocol_mnist_full.json").write_text(json.dumps({"rows": [row]}))
    section = "\n".join(gpu_report.image_section(tmp_path))
    assert "| codec ceiling (reconstructions) | inf | - | 41 | 0.7 | 0.6 | 95 | 97 | - | - | - |" in section
    assert "| DPSWflow | 10.0 | 9.99 | 41 ± 1.4 | 0.6 ± 0 | 0.5 ± 0 | 90 ± 0 | 95 ± 0 | 1.0 | 2.0, 3.0 | 4.0 (met) |" in section
    earlier = "\n".join(gpu_report.image_section(ROOT / "benchmarks" / "results" / "gpu"))
    assert "`benchmarks/images.py --full`" in earlier and "| DPSWflow | 10.0 | 10 |" in earlier


def test_the_table_summary_reads_the_image_runners_rows(tmp_path: Path) -> None:
    """The table stage's public-half job is the image runner's full_table grid: its ceiling once, then one line per
    generator and epsilon, beside the no-public-data rows of ``dpswf images``."""
    folder = tmp_path / "table_mnist"
    (folder / "private").mkdir(parents=True)
    cell = {"mlp": 0.9, "cnn": 0.95, "fid": 30.0, "reported_epsilon": 9.99, "seconds": 4.0}
    rows = [{"codec": "ae:16:10", "public": "public half", "refiner_epochs": 5, "generator": name, "ceiling": {"mlp": 0.95, "cnn": 0.97},
             "epsilons": {"10.0": cell, "1.0": {**cell, "fid": 50.0}}} for name in ("dpswflow", "dpsgd_gan")]
    (folder / "full_table_mnist.json").write_text(json.dumps({"rows": rows}))
    (folder / "private" / "results_a.json").write_text(json.dumps(
        {"config": {"generator": "dpswflow", "epsilon": 10.0}, "epsilon": 10.0, "fid": 120.0, "cas": {"mlp": 0.9, "cnn": 0.94}}))
    table = gpu_report.table_rows(folder)
    assert [(row["method"], row["epsilon"]) for row in table] == [
        ("codec ceiling (reconstructions)", "-"), ("DPSWflow", "10.0"), ("DPSWflow", "1.0"), ("DP-SGD GAN", "10.0"),
        ("DP-SGD GAN", "1.0"), ("DPSWflow", 10.0)]
    assert table[1]["public"] == "public half: ae:16:10, refiner 5 epochs" and table[4]["fid"] == 50.0
    assert table[-1]["public"] == "none: private codec (paid)"
    assert "| public half: ae:16:10, refiner 5 epochs | DP-SGD GAN | 1.0 | 9.99 | 50.0 | 90.0 | 95.0 | 4 |" in "\n".join(
        gpu_report.table_section(tmp_path))

"""The ``dpswf`` command line, end to end (the README's main job)."""

from __future__ import annotations

from pathlib import Path
from urllib.error import URLError

import pandas as pd
import pytest
import torch

from synthcity_dpswf.cli import main


def test_toy_writes_the_figure_and_prints_the_distances(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "toy.png"
    assert main(["toy", "--out", str(out), "--particles", "300", "--steps", "20"]) == 0
    assert out.stat().st_size > 10_000
    printed = capsys.readouterr().out
    assert "0.08" in printed and "0.81" in printed  # the paper's figures beside ours
    assert len([line for line in printed.splitlines() if line.strip().startswith(("0 ", "0.5 ", "1 "))]) == 3


def test_demo_prints_the_report_the_grid_and_both_accuracies(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The release noise is secret and differs on every run; the test fixes it to be deterministic.
    monkeypatch.setattr("synthcity_dpswf.models.releasing.secret_generator", lambda seed=None: torch.Generator().manual_seed(1))
    out = tmp_path / "demo.png"
    assert main(["demo", "--out", str(out), "--quiet"]) == 0
    assert out.stat().st_size > 10_000
    printed = capsys.readouterr().out
    assert "-differentially private" in printed and "analytic Gaussian" in printed and "projected-histogram" in printed
    assert "epsilon = 10 " in printed and "epsilon = inf (not private)" in printed
    accuracies = [float(line.split("accuracy")[1].strip(" %")) for line in printed.splitlines() if "accuracy" in line]
    assert len(accuracies) == 2
    # Without noise the flow learns the digits; at epsilon = 10 the histogram release keeps most of it.
    assert accuracies[1] > 70 and accuracies[0] > 40


def test_images_help_lists_the_codecs(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    from synthcity_dpswf.cli import build_parser

    monkeypatch.setenv("COLUMNS", "10000")  # argparse wraps at the terminal's width, and breaks words at hyphens
    with pytest.raises(SystemExit) as exit_info:
        main(["images", "--help"])
    assert exit_info.value.code == 0
    printed = " ".join(capsys.readouterr().out.split())  # argparse wraps lines at the terminal's width
    assert "--codec {public-half,other-dataset,dct,private-pca,private-autoencoder}" in printed and "no public data" in printed
    assert "trained by DP-SGD" in printed
    assert "--download" in printed
    parser = build_parser()
    assert parser.parse_args(["images", "--data-root", "data"]).codec == "public-half"
    assert parser.parse_args(["images", "--data-root", "data", "--codec", "dct"]).codec == "dct"
    private = parser.parse_args(["images", "--data-root", "data", "--codec", "private-pca", "--pca-components", "30",
                                 "--codec-share", "0.3", "--download"])
    assert (private.codec, private.pca_components, private.codec_share, private.download) == ("private-pca", 30, 0.3, True)
    assert not parser.parse_args(["images", "--data-root", "data"]).download  # nothing is fetched unless asked
    chosen = parser.parse_args(["images", "--data-root", "data", "--codec", "dct", "--dct-frequencies", "16", "--device", "cuda"])
    assert (chosen.dct_frequencies, chosen.device) == (16, "cuda")
    assert "--dct-frequencies 16 --directions 8000" in printed  # the settings measured on validation data
    with pytest.raises(SystemExit):
        parser.parse_args(["images", "--data-root", "data", "--codec", "pca"])


class _Captured(Exception):
    """Raised by the stand-in for ``run_images`` once it has the configuration the command line built."""


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        (["--codec", "private-pca"], (2000, 16, 3000)),  # the settings chosen for this codec on validation data
        (["--codec", "private-pca", "--bins", "32", "--steps", "500"], (2000, 32, 500)),  # what is given wins
        (["--codec", "private-pca", "--generator", "dpswflow_r"], (None, 16, 1500)),  # chosen for DPSWflow only
        (["--codec", "private-pca", "--release", "record"], (None, 16, 1500)),  # and its histogram release only
        ([], (None, 16, 1500)),  # the public autoencoder keeps the generator's defaults
        (["--codec", "dct", "--directions", "8000"], (8000, 16, 1500)),
        (["--codec", "private-autoencoder"], (4000, 16, 3000)),  # the DP-SGD codec's, chosen on validation data
        (["--codec", "private-autoencoder", "--generator", "dpswflow_r"], (None, 16, 1500)),
    ],
)
def test_images_applies_the_flow_settings_chosen_for_the_codec(
    arguments: list[str], expected: tuple[int | None, int, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    config = captured_config(monkeypatch, arguments)
    assert (config.n_release_directions, config.n_bins, config.n_steps) == expected


def captured_config(monkeypatch: pytest.MonkeyPatch, arguments: list[str]) -> object:
    """The ``ImageRunConfig`` ``dpswf images`` builds from ``arguments``, captured before any data is read."""
    from synthcity_dpswf.experiments import images

    built = []

    def capture(config: images.ImageRunConfig, *args: object, **kwargs: object) -> None:
        built.append(config)
        raise _Captured

    monkeypatch.setattr(images, "run_images", capture)
    with pytest.raises(_Captured):
        main(["images", "--data-root", "data", *arguments])
    (config,) = built
    return config


def test_images_without_the_dataset_ends_in_one_line_naming_download_and_data_root(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An empty --data-root without --download: one line with the CLI's own flags, not torchvision's
    "You can use download=True"."""
    with pytest.raises(SystemExit) as exit_info:
        main(["images", "--data-root", str(tmp_path), "--codec", "dct", "--quiet", "--device", "cpu"])
    line = str(exit_info.value.code)
    assert "\n" not in line and line.startswith("dpswf images: error: MNIST is not under --data-root")
    assert "pass --download" in line and "download=True" not in line


@pytest.mark.parametrize("failure", [URLError("[Errno -3] Temporary failure in name resolution"),
                                     ConnectionResetError(104, "Connection reset by peer")])
def test_images_download_offline_ends_in_one_line_naming_download_and_data_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failure: Exception
) -> None:
    """--download with no network (torchvision turns a URLError into "Error downloading ..."; other socket errors come
    through raw): one line, no traceback."""
    import torchvision.datasets.mnist

    def offline(*args: object, **kwargs: object) -> None:
        raise failure

    monkeypatch.setattr(torchvision.datasets.mnist, "download_and_extract_archive", offline)
    with pytest.raises(SystemExit) as exit_info:
        main(["images", "--data-root", str(tmp_path / "data"), "--codec", "dct", "--quiet", "--device", "cpu",
              "--download"])
    line = str(exit_info.value.code)
    assert "\n" not in line and line.startswith(f"dpswf images: error: MNIST could not be downloaded into {tmp_path / 'data'}")
    assert "--data-root" in line and "without --download" in line


def test_images_refuses_the_public_half_under_add_remove_before_reading_data(tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["images", "--data-root", str(tmp_path), "--neighbouring", "add_remove", "--quiet"])
    line = str(exit_info.value.code)
    assert line.startswith("dpswf images: error: codec 'public-half' under add/remove") and "private half" in line


def _small_table(path: Path) -> None:
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(0)
    level = rng.uniform(0.0, 10.0, 400)
    pd.DataFrame({"level": level, "group": np.where(level < 5, "a", "b")}).to_csv(path, index=False)


@pytest.mark.end_to_end
def test_table_writes_the_synthetic_table_and_prints_the_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    import pandas as pd

    data, schema = tmp_path / "data.csv", tmp_path / "schema.json"
    _small_table(data)
    schema.write_text(json.dumps({"level": {"type": "numeric", "low": 0.0, "high": 10.0}, "group": ["a", "b"]}))
    out = tmp_path / "out" / "synthetic.parquet"
    assert main(["table", str(data), "--epsilon", "3", "--schema", str(schema), "--out", str(out), "--rows", "50",
                 "--quiet"]) == 0
    synthetic = pd.read_parquet(out)
    assert list(synthetic.columns) == ["level", "group"] and len(synthetic) == 50
    assert synthetic["level"].between(0.0, 10.0).all() and set(synthetic["group"]) <= {"a", "b"}
    printed = capsys.readouterr().out
    assert "(3, " in printed and "-differentially private" in printed and f"50 synthetic rows written to {out}" in printed
    default = tmp_path / "synthetic.csv"  # no schema (the DP domain), as many rows as the input
    assert main(["table", str(data), "--epsilon", "3", "--out", str(default), "--quiet", "--seed", "1"]) == 0
    assert len(pd.read_csv(default)) == 400 and "differentially private domain" in capsys.readouterr().out


def test_table_and_check_refuse_what_they_cannot_use_in_one_line(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    import json

    data, schema = tmp_path / "data.csv", tmp_path / "schema.json"
    _small_table(data)
    schema.write_text(json.dumps({"level": {"type": "numeric", "low": 0.0, "high": 10.0}, "group": ["a"]}))
    with pytest.raises(SystemExit) as exit_info:  # the plugin's message: the column, no value, and the check to run
        main(["table", str(data), "--epsilon", "3", "--schema", str(schema), "--out", str(tmp_path / "s.csv"), "--quiet"])
    line = str(exit_info.value.code)
    assert line.startswith("dpswf table: error: column 'group' holds values outside") and "dpswf check" in line
    assert "'b'" not in line
    with pytest.raises(SystemExit) as exit_info:
        main(["table", str(data), "--epsilon", "3", "--out", str(tmp_path / "s.xlsx")])
    assert "neither CSV nor Parquet" in str(exit_info.value.code)
    with pytest.raises(SystemExit) as exit_info:
        main(["table", str(data), "--epsilon", "3", "--out", str(tmp_path / "s.csv"), "--generator", "dpswflow_r",
              "--neighbouring", "add_remove", "--rows", "0"])
    assert "rows must be a positive integer" in str(exit_info.value.code)
    assert main(["check", str(data), "--schema", str(schema)]) == 1  # fit would refuse: the values are listed
    printed = capsys.readouterr().out
    assert "group" in printed and "categories not declared" in printed and "'b' (" in printed and "refused" in printed
    schema.write_text(json.dumps({"level": {"type": "numeric", "low": 0.0, "high": 10.0}, "group": ["a", "b"]}))
    assert main(["check", str(data), "--schema", str(schema)]) == 0
    assert "fits" in capsys.readouterr().out


def test_table_prints_no_row_count_and_no_unreadable_entry(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                           seeded_release_noise: None) -> None:
    """Under add/remove n is private: the progress shows no row count but the released estimate it writes; a file the
    parser stops in (a byte that is not UTF-8) is refused by its error's type, never with the bytes the parser quotes
    (found by the second reader). The noise is seeded: the estimate of the 400 rows is 400 itself on some draws (CI
    drew one)."""
    data = tmp_path / "data.csv"
    _small_table(data)
    main(["table", str(data), "--epsilon", "3", "--out", str(tmp_path / "s.csv"), "--neighbouring", "add_remove"])
    progress = capsys.readouterr().err
    written = len(pd.read_csv(tmp_path / "s.csv"))
    assert f"writing {written} rows" in progress and written != 400 and "400" not in progress
    broken = tmp_path / "broken.csv"
    broken.write_bytes(b"level,group\n1.0,a\n2.0,\xff\xfesecret\n")
    with pytest.raises(SystemExit) as exit_info:
        main(["table", str(broken), "--epsilon", "3", "--out", str(tmp_path / "t.csv"), "--quiet"])
    line = str(exit_info.value.code)
    assert "UnicodeDecodeError" in line and "secret" not in line and "0xff" not in line and "xff" not in line


@pytest.mark.parametrize(("arguments", "message"), [
    (["--codec", "private-autoencoder", "--ae-epochs", "3"], "--ae-epochs sets an autoencoder trained on public images"),
    (["--codec", "private-pca", "--dct-frequencies", "8"], "--dct-frequencies sets --codec dct, not --codec private-pca"),
    (["--codec", "dct", "--pca-components", "8"], "--pca-components sets --codec private-pca, not --codec dct"),
    (["--codec", "private-autoencoder", "--codec-option", "epoch=2"], "takes no option 'epoch'"),
    (["--codec", "private-autoencoder", "--codec-option", "epochs"], "--codec-option takes NAME=VALUE"),
])
def test_images_refuses_a_codec_setting_that_does_not_apply(tmp_path: Path, arguments: list[str], message: str) -> None:
    """A codec flag for another codec is refused, not ignored (``--ae-epochs`` was silently ignored with the DP-SGD
    codec), before any data is read."""
    with pytest.raises(SystemExit) as exit_info:
        main(["images", "--data-root", str(tmp_path), "--quiet", *arguments])
    assert message in str(exit_info.value.code)


def test_images_sets_the_dpsgd_codec_s_own_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    """``--codec-option`` reaches the DP-SGD codec's settings through its registry entry."""
    config = captured_config(monkeypatch, ["--codec", "private-autoencoder", "--codec-option", "epochs=2",
                                           "--codec-option", "batch_size=256"])
    settings = config.codec_request().private_autoencoder  # type: ignore[attr-defined]
    assert (settings.epochs, settings.batch_size) == (2, 256)


def test_images_refuses_a_codec_option_and_its_own_flag_together(tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["images", "--data-root", str(tmp_path), "--quiet", "--codec", "private-pca", "--codec-share", "0.3",
              "--codec-option", "share=0.4"])
    assert "--codec-option share= and --codec-share set the same setting" in str(exit_info.value.code)

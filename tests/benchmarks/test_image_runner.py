"""The image benchmarks' runner: grids from config files, the validation-only choice of the test rows, one results
schema and table, every generator through ``models.Generator``."""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
import image_runner  # noqa: E402
from image_runner import FlowChoice, ImageGrid, load_grid, select_settings  # noqa: E402

INCEPTION = "weights/inception_fid_torchscript.pt"


def test_every_committed_grid_loads() -> None:
    grids = {path.stem: load_grid(path) for path in sorted(image_runner.CONFIGS.glob("*.toml"))}
    assert {"codecs_mnist_validation", "codecs_mnist_test", "public_half_mnist_test", "full_table_mnist",
            "flow_settings_mnist_validation", "cpu_costs_mnist"} <= set(grids)
    for name, grid in grids.items():
        assert grid.split == ("validation" if name.endswith("_validation") else "test")
        if grid.select_from is not None:  # a test grid chooses from the validation grid of its own dataset
            assert grids[grid.select_from.replace("image_", "")].split == "validation"
            assert grids[grid.select_from.replace("image_", "")].dataset == grid.dataset
    settings = grids["flow_settings_mnist_validation"].settings
    assert settings[0] == FlowChoice(500, 32, 1500, label="base") and settings[1].estimator == "clip"
    assert grids["full_table_mnist"].generators == ("dpswflow", "dpswflow_r", "dpswgen", "dpsgd_gan")


def test_grids_refuse_what_they_cannot_run(tmp_path: Path) -> None:
    config = tmp_path / "grid.toml"
    config.write_text('name = "x"\ndataset = "mnist"\nsplit = "test"\ncodecs = ["dct:12"]\n')
    grid = load_grid(config, ["samples=500", "epsilons=[10, \"inf\"]", 'settings=["default:16:1500"]'])
    assert grid.samples == 500 and grid.epsilons == (10.0, float("inf"))
    assert grid.settings == (FlowChoice(None, 16, 1500),)
    for override, message in [
        ("sample=3", r"unknown keys \['sample'\]"),
        ('codecs=["pca:0"]', "codec spec must be"),
        ('codecs=["dct:12:3"]', "codec spec must be"),
        ('generators=["gan"]', r"unknown generators \['gan'\]"),
        ('split="train"', "split must be"),
        ("fid_samples=20000", "fid_samples"),
        ('settings=[{bins=8, depth=3}]', r"unknown setting keys \['depth'\]"),
        ('settings=["4000:32"]', "L:G:STEPS"),
        ("samples", "KEY=VALUE"),
        ("name=foo", "quote strings"),
        ('neighbourings=["replace-one"]', "unknown neighbourings"),
        ("epsilons=[-1]", "epsilons must be positive"),
        ("samples=0", "samples must be an integer >= 1"),
        ('samples="500"', "samples must be an integer"),
        ("codecs=[]", "at least one entry"),
        ('settings=["50:8:5", "50:8:5"]', "two settings are the same"),
    ]:
        with pytest.raises(ValueError, match=message):
            load_grid(config, [override])
    with pytest.raises(ValueError, match="with public codecs only"):
        load_grid(config, ['codecs=["pca:30"]', 'generators=["dpsgd_gan"]'])
    with pytest.raises(ValueError, match="replace-one only"):
        load_grid(config, ['generators=["dpsgd_gan"]', 'neighbourings=["replace_one", "add_remove"]'])
    with pytest.raises(ValueError, match="must not exceed it"):
        load_grid(config, ['split="validation"', "fid_samples=6000", "samples=6000"])
    with pytest.raises(ValueError, match="select_from chooses the rows of a test grid"):
        load_grid(config, ['split="validation"', 'select_from="v"'])


def validation_row(codec: str, directions: int | None, at_10: tuple[float, float], at_1: tuple[float, float] | None,
                   samples: int = 10000) -> dict:
    scores = {"10.0": {"mlp": at_10[0], "cnn": at_10[1]}}
    if at_1 is not None:
        scores["1.0"] = {"mlp": at_1[0], "cnn": at_1[1]}
    return {"codec": codec, "directions": directions, "bins": 32, "steps": 3000, "samples": samples, "epsilons": scores,
            "dim": 77, "public": "no public data", "ceiling": {"mlp": 0.9, "cnn": 0.9}, "codec_seconds": 0.0,
            "pixels": "clip"}


def test_test_rows_are_chosen_on_validation_rows_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    validation = {"dataset": "mnist", "split": "validation", "rows": [
        validation_row("dct:12", 1000, (0.80, 0.90), (0.70, 0.70)),
        validation_row("dct:16", 4000, (0.88, 0.86), (0.60, 0.60)),  # best mean at epsilon 10 (0.87 against 0.85)
        validation_row("dct:16", 8000, (0.99, 0.99), (0.99, 0.99), samples=2000),  # other samples: not comparable
        validation_row("ae:16:10", None, (0.99, 0.99), (0.99, 0.99)),  # another codec family: not a candidate
        {**validation_row("dct:12", 2000, (0.99, 0.99), (0.99, 0.99)), "pixels": "min_max"},  # an earlier pixel rule
        {**validation_row("dct:12", 3000, (0.99, 0.99), (0.99, 0.99)), "generator": "dpswgen"},  # not in the grid
    ]}
    codec, choice, score = select_settings(validation, ("dct:12", "dct:16"), 10.0, "mnist", 10000)
    assert (codec, choice, score) == ("dct:16", FlowChoice(4000, 32, 3000), pytest.approx(0.87))
    assert select_settings(validation, ("dct:12", "dct:16"), 1.0, "mnist", 10000)[:2] == ("dct:12", FlowChoice(1000, 32, 3000))
    with pytest.raises(ValueError, match="no row of codecs"):
        select_settings(validation, ("dct:12",), float("inf"), "mnist", 10000)
    # A row run with a setting table comes back whole (its step size too), not as L, G and steps alone.
    stepped = FlowChoice(1000, 32, 3000, step_size=2.0, label="h = 2")
    tabled = {**validation_row("dct:12", 1000, (0.95, 0.95), None), "setting": dataclasses.asdict(stepped)}
    assert select_settings({**validation, "rows": [tabled]}, ("dct:12",), 10.0, "mnist", 10000)[1] == stepped
    for split, dataset in (("test", "mnist"), ("validation", "fashion_mnist")):  # never choose on the test split
        with pytest.raises(ValueError, match="validation results file of"):
            select_settings({**validation, "split": split}, ("dct:12",), 10.0, dataset, 10000)

    # The plan of a test grid: each epsilon runs only its validation choice; epsilons of one choice share a row.
    (tmp_path / "chosen.json").write_text(json.dumps(validation))
    grid = ImageGrid("picked", "mnist", "test", ("dct:12", "dct:16"), select_from="chosen")
    planned: list[tuple[str, FlowChoice, list[float]]] = []

    def fake_run(grid: ImageGrid, spec: str, choice: FlowChoice, epsilons: list[float], *args: object) -> list[dict]:
        planned.append((spec, choice, epsilons))
        return [{**validation_row(spec, choice.directions, (0.5, 0.5), None), "bins": choice.bins, "steps": choice.steps}]

    monkeypatch.setattr(image_runner, "run_codec", fake_run)
    image_runner.run_grid(grid, tmp_path, tmp_path)
    assert planned == [("dct:16", FlowChoice(4000, 32, 3000), [10.0]), ("dct:12", FlowChoice(1000, 32, 3000), [1.0])]
    written = json.loads((tmp_path / "picked.json").read_text())
    assert [item["chosen_on"] for item in written["rows"]] == ["chosen.json"] * 2

    # Another machine's rows join the file of the same name; a row of the same settings keeps the epsilons the new
    # one did not measure.
    out = tmp_path / "merged"
    first = {"name": "picked", "dataset": "mnist", "split": "test", "rows": [validation_row("dct:12", 1000, (0.5, 0.5), None)]}
    image_runner.merge_rows(first, out)
    second = {**first, "rows": [dict(first["rows"][0], device="cuda", epsilons={"1.0": {"mlp": 0.8, "cnn": 0.7}})]}
    path = image_runner.merge_rows(second, out)
    merged = json.loads(path.read_text())
    assert path.name == "picked.json" and len(merged["rows"]) == 1
    assert set(merged["rows"][0]["epsilons"]) == {"10.0", "1.0"} and merged["rows"][0]["device"] == "cuda"
    assert "| 50.0% / 50.0% | 80.0% / 70.0% |" in path.with_suffix(".md").read_text()


def test_a_grid_runs_end_to_end_with_every_generator_and_fid(
    shared_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first 6,000 MNIST training and 300 test images stand in for the datasets: a public-half autoencoder row
    with the flows, the GAN and FID, then a validation grid of the two codecs without public data."""
    from synthcity_dpswf.datasets import load_mnist

    training, testing = load_mnist(shared_dir / "data", train=True), load_mnist(shared_dir / "data", train=False)

    def small_mnist(root: Path, train: bool = True, download: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
        images, labels = training if train else testing
        count = 6000 if train else 300
        return images[:count], labels[:count]

    monkeypatch.setitem(image_runner.IMAGE_LOADERS, "mnist", small_mnist)
    public = ImageGrid("public", "mnist", "test", ("ae:8:1",), generators=("dpswflow", "dpswgen", "dpsgd_gan"),
                       epsilons=(10.0,), settings=(FlowChoice(50, 8, 10),), samples=200, fid_samples=20, gan_epochs=0.2)
    payload = image_runner.run_grid(public, tmp_path, tmp_path, shared_dir / INCEPTION, cache=tmp_path / "cache")
    assert [row["generator"] for row in payload["rows"]] == ["dpswflow", "dpswgen", "dpsgd_gan"]
    assert payload["rows"][2]["gan"] == {"batch_size": 250, "epochs": 0.2} and payload["rows"][2]["setting"] is None
    for row in payload["rows"]:
        cell = row["epsilons"]["10.0"]
        assert row["n_released"] == 3000 and row["n_scored"] == 300 and row["public"] == "the public half of MNIST"
        assert 0 <= cell["mlp"] <= 1 and 0 <= cell["cnn"] <= 1 and cell["fid"] > 0 and 0 <= cell["precision"] <= 1
        assert cell["reported_epsilon"] <= 10.0 and cell["seconds"] == pytest.approx(cell["fit_seconds"] + cell["sample_seconds"])
    table = (tmp_path / "public.md").read_text()
    assert "| ae:8:1 | the public half of MNIST | 8 | - | dpsgd_gan | replace-one | - |" in table and ", FID " in table
    assert [path.name for path in (tmp_path / "cache").glob("autoencoder_*")] == ["autoencoder_mnist_3000_latent8_1ep_seed0.pt"]

    private = ImageGrid("private", "mnist", "validation", ("pca:8", "dct:4"), epsilons=(10.0, 1.0),
                        settings=(FlowChoice(50, 8, 10, label="tiny"),), samples=200)
    rows = image_runner.run_grid(private, tmp_path, tmp_path, cache=tmp_path / "cache")["rows"]
    assert [row["codec"] for row in rows] == ["pca:8", "dct:4"] and all(row["n_released"] == 1000 for row in rows)
    assert rows[0]["ceiling"] is None and set(rows[0]["epsilons"]["1.0"]["ceiling"]) == {"mlp", "cnn"}  # paid per epsilon
    assert rows[1]["ceiling"] is not None and rows[1]["pixels"] == "clip" and rows[1]["setting"]["label"] == "tiny"
    # The private codec's release is in the reported epsilon: the flow's share alone would be far below the target.
    for key, cell in rows[0]["epsilons"].items():
        assert cell["reported_epsilon"] == pytest.approx(float(key), rel=1e-6) and cell["reported_epsilon"] <= float(key)
    assert all(cell["reported_epsilon"] <= float(key) for key, cell in rows[1]["epsilons"].items())
    assert all(row["config_file"] == "" and row["overrides"] == [] for row in rows)

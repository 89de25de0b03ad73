"""The image benchmarks' runner: grids from config files, the validation-only choice of the test rows, one results
schema and table, every generator through ``models.Generator``, and the paper's protocol (its convention, the
record releases, generation runs with their spread, sample grids and figures)."""

from __future__ import annotations

import dataclasses
import json
import math
import sys
from pathlib import Path

import pytest
import torch

import image_runner
from image_runner import FlowChoice, ImageGrid, load_grid, row_generators, select_settings
from paper_protocol import method_label

ROOT = Path(__file__).resolve().parents[2]

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


def test_the_paper_protocol_configs_keep_the_former_scripts_sizes_and_rows() -> None:
    """The sizes of benchmarks/images.py's quick and full modes (its last version: commit 9a9cbb3), and its rows: every
    method it ran, and the paper's three under the paper's convention at epsilon 10 and 5."""
    for dataset in ("mnist", "fashion_mnist"):
        quick = load_grid(image_runner.CONFIGS / f"paper_protocol_{dataset}_quick.toml")
        assert (quick.dataset, quick.codecs, quick.refiner_epochs, quick.private_images, quick.public_images) == (
            dataset, ("ae:8:3",), 0, 10000, None)
        assert (quick.samples, quick.fid_samples, quick.runs, quick.gan_epochs, quick.gan_batch_size, quick.figures) == (
            1000, 128, 2, 20, 250, True)
        assert quick.epsilons == (float("inf"), 10.0, 5.0, 1.0)
        labels = {method_label({"generator": name, "setting": choice.stored()}) + (" (paper)" if choice.convention == "paper" else "")
                  for choice in quick.settings for name in row_generators(quick, choice)}
        assert labels == {"DPSWflow", "DPSWflow-r", "DPSWgen", "DPSWflow-r record", "DPSWflow-r record once",
                          "DPSWflow record", "DPSWgen record", "DPSWflow-r projected once", "DP-SGD GAN",
                          "DPSWgen paper (paper)", "DPSWflow-r paper (paper)", "DPSWflow paper (paper)"}
        record = quick.settings[1]
        assert (record.release, record.batch_size, record.passes, record.steps, record.step_size) == ("record", 250, 10, 600, 3.0)
        assert all(choice.epsilons == (10.0, 5.0) for choice in quick.settings if choice.convention == "paper")
    full = load_grid(image_runner.CONFIGS / "paper_protocol_mnist_full.toml")
    assert (full.codecs, full.generators, full.epsilons, full.samples, full.fid_samples, full.private_images) == (
        ("ae:8:10",), ("dpswflow",), (10.0, 1.0), 10000, 10000, None)


def test_a_setting_s_codec_share_reaches_the_budget_and_names_its_row() -> None:
    """``codec_share`` in a setting table sets the private codec's share of each cell's budget; a row stores it only
    where it differs from the 0.2 every row ran with before the key existed (``RELEASE_DEFAULTS``), so those rows keep
    their identity."""
    from image_results import setting_text
    from image_runner import cell_config
    from synthcity_dpswf.adapters.image_codecs import CODEC_SHARE
    from synthcity_dpswf.recipes.images import codec_release, run_budget

    grid = ImageGrid(name="x", dataset="mnist", split="validation", codecs=("pca:30",),
                     settings=(FlowChoice(2000, 16, 3000), FlowChoice.of({"directions": 2000, "bins": 16, "steps": 3000,
                                                                            "codec_share": 0.35})))
    default, shared = grid.settings
    assert default.stored() == {"directions": 2000, "bins": 16, "steps": 3000, "step_size": 1.0, "flow_directions": 70,
                                "estimator": "simplex", "labelling": "conditional", "label": ""}
    assert shared.stored()["codec_share"] == 0.35 and str(shared) == "2000, 16, 3000, codec_share 0.35"
    configs = [cell_config(grid, "pca:30", "dpswflow", choice, "replace_one", 10.0, "cpu") for choice in grid.settings]
    codec_epsilons = [codec_release(config, run_budget(config))[0] for config in configs]
    assert cell_config(grid, "pca:30", "dpswflow", default, "replace_one", 10.0, "cpu").codec_share == CODEC_SHARE
    row = {"generator": "dpswflow", "directions": 2000, "bins": 16, "steps": 3000}
    assert setting_text({**row, "setting": shared.stored()}) == "2000, 16, 3000, codec share 0.35"
    assert setting_text({**row, "setting": default.stored()}) == "2000, 16, 3000"
    assert codec_epsilons[1] > codec_epsilons[0]  # a larger share buys the codec a larger epsilon
    with pytest.raises(ValueError, match=r"codec_share must lie in \(0, 1\), got \[1.0\]"):
        ImageGrid(name="x", dataset="mnist", split="validation", codecs=("pca:30",),
                  settings=(FlowChoice(2000, 16, 3000, codec_share=1.0),))


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
    with pytest.raises(ValueError, match="codec 'public-half' under add/remove: .* neighbours of the private half"):
        load_grid(config, ['codecs=["dct:12", "ae:16:10"]', 'neighbourings=["replace_one", "add_remove"]'])
    assert load_grid(config, ['codecs=["dct:12", "other:16:10"]', 'neighbourings=["add_remove"]']).neighbourings == ("add_remove",)
    with pytest.raises(ValueError, match="must not exceed it"):
        load_grid(config, ['split="validation"', "fid_samples=6000", "samples=6000"])
    with pytest.raises(ValueError, match="select_from chooses the rows of a test grid"):
        load_grid(config, ['split="validation"', 'select_from="v"'])
    record_once = '{release = "record", batch_size = 250, reuse = "once"'
    for overrides, message in [
        (['generators=["dpswflow", "dpswflow_r"]', f"settings=[{record_once}}}]"], r"\['dpswflow'\] makes one release"),
        ([f'settings=[{record_once}, generators = ["gan"]}}]'], r"unknown flows \['gan'\]"),
        (['settings=[{release = "marginal"}]'], "a kind on records"),
        (['settings=[{release = "record", convention = "paper"}]'], "projected releases under replace-one"),
        (['neighbourings=["add_remove"]', 'settings=[{release = "projected", convention = "paper"}]'], "replace-one"),
        (['neighbourings=["add_remove"]', 'generators=["dpswflow_r"]', "settings=[{batch_size = 250}]"], "Poisson samples"),
        (["runs=0"], "runs must be an integer >= 1"), (["private_images=0"], "private_images must be"),
        (["figures=true", 'settings=["50:8:5", "100:8:5"]'], "no two rows share a name"),
    ]:
        with pytest.raises(ValueError, match=message):
            load_grid(config, overrides)


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
        {**validation_row("dct:12", 5000, (0.99, 0.99), (0.99, 0.99)),  # the paper's convention spends more epsilon
         "setting": {"directions": 5000, "bins": 32, "steps": 3000, "convention": "paper"}},
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
    first["rows"][0]["overrides"] = ["epsilons=[10]"]
    image_runner.merge_rows(first, out)
    second = {**first, "rows": [dict(first["rows"][0], device="cuda", epsilons={"1.0": {"mlp": 0.8, "cnn": 0.7}},
                                     overrides=["epsilons=[1]"])],
              "descriptions": {"picked.toml": "What the second run measured."}, "environment": {"cpu_threads": 1}}
    path = image_runner.merge_rows(second, out)
    merged = json.loads(path.read_text())
    assert path.name == "picked.json" and len(merged["rows"]) == 1
    assert set(merged["rows"][0]["epsilons"]) == {"10.0", "1.0"} and merged["rows"][0]["device"] == "cuda"
    text = path.with_suffix(".md").read_text()
    assert "| 50.0% / 50.0% | 80.0% / 70.0% |" in text
    assert "`picked.toml`: What the second run measured." in text  # the merged config's description comes along
    assert "with `epsilons=[10]`, `epsilons=[1]` |" in text  # both runs' overrides, beside the cells they measured
    assert merged["rows"][0]["environment"] == {"cpu_threads": 1}  # where the merged run ran


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

    private = ImageGrid("private", "mnist", "validation", ("pca:8", "dct:4", "dpae:4:4:1"), epsilons=(10.0, 1.0),
                        settings=(FlowChoice(50, 8, 10, label="tiny"),), samples=200, dpsgd={"batch_size": 250})
    rows = image_runner.run_grid(private, tmp_path, tmp_path, cache=tmp_path / "cache")["rows"]
    assert [row["codec"] for row in rows] == ["pca:8", "dct:4", "dpae:4:4:1"] and all(row["n_released"] == 1000 for row in rows)
    assert rows[2]["ceiling"] is None and set(rows[2]["epsilons"]["1.0"]["ceiling"]) == {"mlp", "cnn"}  # paid per epsilon
    assert len(list((tmp_path / "cache").glob("private_autoencoder_*.pt"))) == 2  # one DP-SGD codec per epsilon
    for key, cell in rows[2]["epsilons"].items():  # the DP-SGD codec's schedule inside the accounting of the whole
        assert 0.98 * float(key) <= cell["reported_epsilon"] <= float(key)
    assert rows[0]["ceiling"] is None and set(rows[0]["epsilons"]["1.0"]["ceiling"]) == {"mlp", "cnn"}  # paid per epsilon
    assert rows[1]["ceiling"] is not None and rows[1]["pixels"] == "clip" and rows[1]["setting"]["label"] == "tiny"
    # The private codec's release is in the reported epsilon: the flow's share alone would be far below the target.
    for key, cell in rows[0]["epsilons"].items():
        assert cell["reported_epsilon"] == pytest.approx(float(key), rel=1e-6) and cell["reported_epsilon"] <= float(key)
    assert all(cell["reported_epsilon"] <= float(key) for key, cell in rows[1]["epsilons"].items())
    assert all(row["config_file"] == "" and row["overrides"] == [] for row in rows)


def test_the_paper_protocol_runs_at_a_toy_scale(shared_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The MNIST paper-protocol config at a toy scale on the fixed DCT codec: the package default, a record release
    used once and the paper's scheme under the paper's convention, each sampled in two generation runs and scored with
    FID, written with their spread beside the paper's table, its sample grids and its FID / CAS figure; nothing is
    trained, so the cache holds no autoencoder."""
    from synthcity_dpswf.datasets import load_mnist

    training, testing = load_mnist(shared_dir / "data", train=True), load_mnist(shared_dir / "data", train=False)

    def small_mnist(root: Path, train: bool = True, download: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
        images, labels = training if train else testing
        return images[: 6000 if train else 300], labels[: 6000 if train else 300]

    monkeypatch.setitem(image_runner.IMAGE_LOADERS, "mnist", small_mnist)
    per_step = 'release = "{}", batch_size = 250, passes = 1, steps = 20, step_size = 3.0, reuse = "once", generators = ["dpswflow_r"]'
    overrides = [
        'codecs=["dct:4"]', "private_images=600", "samples=100", "fid_samples=5", "epsilons=[10]", 'generators=["dpswflow_r"]',
        'settings=["default:16:20", {label = "record once", ' + per_step.format("record") + "}, "
        '{label = "paper", convention = "paper", epsilons = [10, 5], ' + per_step.format("projected") + "}]",
    ]
    grid = load_grid(image_runner.CONFIGS / "paper_protocol_mnist_quick.toml", overrides)
    payload = image_runner.run_grid(grid, tmp_path, tmp_path, shared_dir / INCEPTION, cache=tmp_path / "cache",
                                    config_file="paper_protocol_mnist_quick.toml", overrides=overrides)
    rows = {(row["generator"], row["setting"]["label"], row["setting"].get("convention", "sound")): row for row in payload["rows"]}
    assert set(rows) == {("dpswflow_r", "", "sound"), ("dpswflow_r", "record once", "sound"), ("dpswflow_r", "paper", "paper")}
    assert rows[("dpswflow_r", "record once", "sound")]["setting"]["release"] == "record"
    assert rows[("dpswflow_r", "", "sound")]["setting"].get("release", "projected_histogram") == "projected_histogram"
    assert "fid" in rows[("dpswflow_r", "", "sound")]["ceiling"]  # the codec's ceiling is scored like a cell
    for (generator, label, convention), row in rows.items():
        assert set(row["epsilons"]) == {"10.0"} and row["generation_runs"] == 2 and row["n_released"] == 600
        cell = row["epsilons"]["10.0"]
        assert [run["seed"] for run in cell["runs"]] == [0, 1]
        assert cell["fid"] == pytest.approx(sum(run["fid"] for run in cell["runs"]) / 2)
        assert cell["mlp"] == pytest.approx(sum(run["mlp"] for run in cell["runs"]) / 2)
        if convention == "sound":
            assert cell["reported_epsilon"] <= 10.0
        else:  # the paper's noise is far too small for its epsilon under Delta = 2 ||Theta||_2
            assert cell["reported_epsilon"] > 2 * cell["paper_epsilon"] == 20.0
            assert abs(cell["mean_noise_std"] / cell["paper_sigma"] - 1) < 0.1
    table = (tmp_path / "paper_protocol_mnist_quick.md").read_text()
    assert "record once: record releases of b = 250, 1 passes, one step per release of h = 3 |" in table
    assert " ± " in table and "(sound epsilon " in table and "## The paper's table beside ours" in table
    assert "| DPSWflow-r | 10 | 70 | " in table
    assert (tmp_path / "paper_protocol_mnist_quick_eps10.png").exists()
    assert (tmp_path / "paper_protocol_mnist_quick_fid_cas.png").exists()
    assert not list((tmp_path / "cache").glob("autoencoder_*"))


def test_the_runner_explains_itself() -> None:
    import subprocess

    usage = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "image_runner.py"), "--help"], capture_output=True,
                           text=True, timeout=120, check=True).stdout
    assert all(option in usage for option in ("--set", "--device", "--inception", "--merge", "--data-root"))
    words = " ".join(usage.split())  # the docstring as printed, its line breaks aside
    assert "paper's accounting convention" in words and "generation runs" in words


def test_a_row_replaces_only_the_row_of_its_refiner_s_weight() -> None:
    """Rows of the same codec and settings whose refiners were trained at other adversarial weights (read from the
    codec's description) are other rows: a partial rerun after the weight changed must not put its cells beside the
    old weight's; the same weight merges, a new epsilon added and a remeasured one replaced."""
    from image_results import replace_row

    def row(weight: str, cells: dict[str, float]) -> dict:
        return {"codec": "ae:16:10", "refiner_epochs": 5, "generator": "dpswflow",
                "description": f"the public half; refined by a network trained on the same public images (L1 + "
                               f"adversarial, weight {weight}, weights averaged with decay 0.99, 5 epochs)",
                "epsilons": {key: {"mlp": value, "cnn": value} for key, value in cells.items()}}

    old = row("0.2", {"10.0": 0.80, "1.0": 0.75})
    kept = replace_row([old], row("0.05", {"10.0": 0.81}))
    assert [sorted(each["epsilons"]) for each in kept] == [["1.0", "10.0"], ["10.0"]]
    assert kept[0] == old
    (merged,) = replace_row([old], row("0.2", {"10.0": 0.82, "inf": 0.9}))
    assert merged["epsilons"]["10.0"]["cnn"] == 0.82 and merged["epsilons"]["1.0"]["cnn"] == 0.75 and "inf" in merged["epsilons"]


def test_the_decode_temperature_is_scored_on_one_fit_of_the_validation_choice(
    shared_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``benchmarks/studies/decode_temperature.py`` at a toy scale (the first 6,000 MNIST training images: 1,000
    released, 5,000 held out): the validation grid's DP-SGD codec row is chosen, fitted once per variant of its flow
    settings, and its codes and the ceiling's are decoded and scored at each temperature; a test grid and a malformed
    variant are refused."""
    import decode_temperature
    from synthcity_dpswf.datasets import load_mnist

    training = load_mnist(shared_dir / "data", train=True)
    monkeypatch.setitem(image_runner.IMAGE_LOADERS, "mnist",
                        lambda root, train=True, download=False: (training[0][:6000], training[1][:6000]))
    config = tmp_path / "toy_validation.toml"
    config.write_text('name = "toy_validation"\ndataset = "mnist"\nsplit = "validation"\ncodecs = ["dpae:4:4:1"]\n'
                      'generators = ["dpswflow"]\nepsilons = [10]\nsettings = [{directions = 50, bins = 8, steps = 10}]\n'
                      'samples = 200\ndpsgd = {batch_size = 250}\n')
    image_runner.run_grid(load_grid(config), shared_dir / "data", tmp_path, cache=tmp_path / "cache")
    payload = decode_temperature.run(shared_dir / "data", shared_dir / INCEPTION, [1.0, 4.0], [1.0], 20, 10.0, config,
                                     tmp_path / "toy_validation.json", tmp_path / "cache", variants=["", "bins=4,steps=20"])
    assert payload["codec"] == "dpae:4:4:1" and payload["setting"]["directions"] == 50
    assert [(row["decoded"], row["variant"], row["temperature"]) for row in payload["rows"]] == [
        ("flow", "", 1.0), ("flow", "", 4.0), ("ceiling", "", 1.0), ("flow", "bins=4,steps=20", 1.0), ("flow", "bins=4,steps=20", 4.0)]
    assert all(row["fid"] > 0 and 0 <= row["precision"] <= 1 and 0 <= row["cnn"] <= 1 for row in payload["rows"])
    assert payload["rows"][0]["fid"] != payload["rows"][1]["fid"]  # the same codes, decoded otherwise
    assert payload["rows"][0]["fid"] != payload["rows"][3]["fid"]  # another flow on the same released codes
    page = decode_temperature.markdown(payload)
    assert "| flow | - | 4 |" in page and "| flow | bins=4,steps=20 | 1 |" in page
    changed = decode_temperature.variant_of(image_runner.FlowChoice.of({"directions": 50, "bins": 8, "steps": 10}), "step_size=0.5")
    assert (changed.step_size, changed.bins, changed.label) == (0.5, 8, "step_size=0.5")
    with pytest.raises(ValueError, match="key=value"):
        decode_temperature.variant_of(changed, "bins")
    with pytest.raises(ValueError, match="codec_share"):  # another share trains another codec
        decode_temperature.variant_of(changed, "codec_share=0.2")
    test_grid = tmp_path / "toy_test.toml"
    test_grid.write_text(config.read_text().replace('split = "validation"', 'split = "test"'))
    with pytest.raises(ValueError, match="validation grid"):
        decode_temperature.run(shared_dir / "data", shared_dir / INCEPTION, [1.0], [], 20, 10.0, test_grid,
                               tmp_path / "toy_validation.json", tmp_path / "cache")


def test_one_codec_s_ceiling_is_scored_once_across_the_grid_s_settings(
    shared_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DPSWflow and DPSWflow-r with settings of their own at one epsilon share the DP-SGD codec of that epsilon (trained
    once, then loaded from the cache): its ceiling, a function of the decoded images and their labels, is scored once
    and recorded in both rows; another epsilon's codec is scored anew."""
    from synthcity_dpswf.datasets import load_mnist

    training = load_mnist(shared_dir / "data", train=True)
    monkeypatch.setitem(image_runner.IMAGE_LOADERS, "mnist",
                        lambda root, train=True, download=False: (training[0][:6000], training[1][:6000]))
    scored: list[int] = []

    def counted(grid: ImageGrid, scoring: object, generated: torch.Tensor, labels: torch.Tensor, device: str) -> dict[str, float]:
        scored.append(len(generated))
        return {"mlp": float(generated.mean()), "cnn": float(labels.float().mean())}

    monkeypatch.setattr(image_runner, "score", counted)
    settings = (FlowChoice.of({"directions": 50, "bins": 8, "steps": 10, "generators": ["dpswflow"]}),
                FlowChoice.of({"directions": "default", "steps": 10, "generators": ["dpswflow_r"]}))
    grid = ImageGrid("shared", "mnist", "validation", ("dpae:4:4:1",), generators=("dpswflow", "dpswflow_r"),
                     epsilons=(10.0,), settings=settings, samples=200, dpsgd={"batch_size": 250})
    rows = image_runner.run_grid(grid, tmp_path, tmp_path, cache=tmp_path / "cache")["rows"]
    assert [row["generator"] for row in rows] == ["dpswflow", "dpswflow_r"]
    assert len(list((tmp_path / "cache").glob("private_autoencoder_*.pt"))) == 1  # one codec for both generators
    assert len(scored) == 3  # two generations and one ceiling
    assert rows[0]["epsilons"]["10.0"]["ceiling"] == rows[1]["epsilons"]["10.0"]["ceiling"]
    again = dataclasses.replace(grid, name="again", epsilons=(10.0, 5.0))
    image_runner.run_grid(again, tmp_path, tmp_path, cache=tmp_path / "cache")
    assert len(scored) == 3 + 4 + 2  # four generations, a ceiling for each epsilon's codec


def test_a_grid_that_runs_no_cell_is_refused_before_it_reads_an_image(tmp_path: Path) -> None:
    """A ``--set generators=...`` that every setting's own generator list excludes planned no cell: the runner
    printed nothing, wrote nothing and exited 0. It now says so and what to override."""
    from image_runner import plan_of

    config = image_runner.CONFIGS / "dpsgd_codec_mnist_test_low.toml"  # each setting names its one flow
    grid = load_grid(config, ['generators=["dpswgen"]'])
    with pytest.raises(ValueError, match="runs no cell.*--set 'settings="):
        plan_of(grid, tmp_path)
    assert plan_of(load_grid(config, ['generators=["dpswflow"]']), tmp_path)  # one setting still runs


def test_a_noiseless_row_fits_the_flow_without_noise_through_the_private_codec_and_says_so(
    shared_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The ``noiseless`` convention (a diagnostic of the flow's own loss): the private codec is still released at its
    share of the cell's epsilon, the flow's release has no noise, the row reports epsilon inf and names itself not
    private, and a test grid never chooses it."""
    from synthcity_dpswf.datasets import load_mnist

    training = load_mnist(shared_dir / "data", train=True)
    monkeypatch.setitem(image_runner.IMAGE_LOADERS, "mnist",
                        lambda root, train=True, download=False: (training[0][:6000], training[1][:6000]))
    fitted: list[float | None] = []

    def scored(grid: ImageGrid, scoring: object, generated: torch.Tensor, labels: torch.Tensor, device: str) -> dict[str, float]:
        best = 0.9 if fitted and fitted[-1] == math.inf else 0.5  # the noiseless flow would win a choice by CAS
        return {"mlp": best, "cnn": best}

    monkeypatch.setattr(image_runner, "score", scored)
    fit = image_runner.SlicedGenerator.fit

    def recorded(self, records, epsilon, *args, **kwargs):  # type: ignore[no-untyped-def]
        fitted.append(epsilon)
        return fit(self, records, epsilon, *args, **kwargs)

    monkeypatch.setattr(image_runner.SlicedGenerator, "fit", recorded)
    settings = (FlowChoice(50, 8, 10), FlowChoice.of({"directions": 50, "bins": 8, "steps": 10, "convention": "noiseless"}))
    grid = ImageGrid("noiseless", "mnist", "validation", ("pca:8",), epsilons=(10.0, float("inf")), settings=settings,
                     samples=200)
    rows = image_runner.run_grid(grid, tmp_path, tmp_path, cache=tmp_path / "cache")["rows"]
    sound, noiseless = rows
    assert set(sound["epsilons"]) == {"10.0", "inf"} and set(noiseless["epsilons"]) == {"10.0"}  # at inf: the sound row
    cell = noiseless["epsilons"]["10.0"]
    assert cell["reported_epsilon"] == "inf" and cell["flow_noise"] == "none" and cell["mlp"] == 0.9
    assert cell["codec"] == sound["epsilons"]["10.0"]["codec"]  # the codec released at its share of 10, as the sound row's
    assert sound["epsilons"]["10.0"]["reported_epsilon"] == pytest.approx(10.0, rel=1e-6)
    assert fitted == [None, None, math.inf]  # the sound cells by their release plan's noise, the noiseless at inf
    assert "flow without noise (not private)" in (tmp_path / "noiseless.md").read_text()
    spec, choice, _ = select_settings(json.loads((tmp_path / "noiseless.json").read_text()), ("pca:8",), 10.0, "mnist",
                                      200, ("dpswflow",), ("replace_one",))
    assert choice.convention == "sound"  # the noiseless row's higher CAS is never a test grid's choice
    with pytest.raises(ValueError, match="diagnostic for validation"):
        dataclasses.replace(grid, split="test")

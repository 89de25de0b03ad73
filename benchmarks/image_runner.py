"""The image benchmarks' one runner: a config file names a grid, the runner scores every cell of it the same way.

A grid (``benchmarks/configs/images/*.toml``, one per study; ``ImageGrid`` says what each key means) crosses codecs,
generators, adjacencies, flow settings and epsilons on one dataset and split. Every cell is: the codec (loaded or
trained once, or, for the private codec, released anew at each epsilon with its share of the budget as
``dpswf images`` splits it), the private records encoded, the generator fitted at epsilon and sampled, the samples
decoded and scored with CAS (an MLP and the small CNN of ``synthcity_dpswf.evaluation``) and, with ``fid_samples``,
FID and precision / recall against as many scored images. A codec's ceiling (the private images through it, no
generator, no privacy) is scored beside its rows.

Codecs: ``ae:LATENT:EPOCHS`` (an autoencoder trained on the public half of the training set, with the grid's
``refiner_epochs``), ``other:LATENT:EPOCHS`` (the same trained on the other dataset's whole training set: no image of
the private distribution outside the private set), ``dct:K`` (the fixed DCT codec: no public data) and ``pca:K``
(the private codec: no public data, paid for). Generators: ``dpswflow``, ``dpswflow_r``, ``dpswgen`` and the
DP-SGD GAN baseline ``dpsgd_gan`` (``baselines.dpsgd_gan``), each fitted and sampled through ``models.Generator``.

The private set is ``dpswf images``' (``split_training_set``: the seeded private half with ``ae``, the whole
training set otherwise). ``split = "validation"`` (for choosing settings) holds 5,000 private images out, scored
against and never released; the test set is not read. ``split = "test"`` (for reporting) releases all of it and
scores on the test set; with ``select_from`` (a validation results file) it runs, at each epsilon, only the codec and
settings whose validation row had the highest mean CAS there: the test split is read once, for that choice.

Run: ``python benchmarks/image_runner.py benchmarks/configs/images/codecs_mnist_validation.toml --data-root
../shared/data`` (``--inception FILE`` when the grid asks for FID, ``--device cuda``, ``--set samples=500`` to
override a key for a quick check). Results: ``benchmarks/results/<name>.{json,md}``: rows of earlier runs with other
codecs or settings are kept, a row of the same codec, settings, generator, adjacency, refiner, seed and sizes
(``ROW_KEYS``) gets the new epsilons merged into it; each row records the config file and overrides it was last run
with. ``--merge FILE ...`` adds another machine's rows.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
import tempfile
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import DELTA, RESULTS, environment, finite_or_text, write_json  # noqa: E402

from baselines.dpsgd_gan import DPSGDGAN  # noqa: E402
from synthcity_dpswf.adapters import LabelledCodec  # noqa: E402
from synthcity_dpswf.adapters.image_codecs import ImageCodec  # noqa: E402
from synthcity_dpswf.adapters.pixel_range import DEFAULT_PIXEL_SCALING  # noqa: E402
from synthcity_dpswf.datasets import DATASET_NAMES, IMAGE_LOADERS, OTHER_DATASET  # noqa: E402
from synthcity_dpswf.evaluation import (  # noqa: E402
    InceptionFeatures,
    cached_inception_features,
    classification_accuracies,
    fid_precision_recall,
)
from synthcity_dpswf.experiments.images import (  # noqa: E402
    CODEC_SHARE,
    GENERATORS,
    ImageRunConfig,
    build_codec,
    build_generator,
    codec_budget,
    composed_report,
    load_other_training_set,
    split_training_set,
)
from synthcity_dpswf.models import Generator  # noqa: E402

VALIDATION = 5000
"""Private images a validation grid holds out and scores on (never released)."""
GENERATOR_NAMES = (*GENERATORS, "dpsgd_gan")
CONFIGS = Path(__file__).resolve().parent / "configs" / "images"


@dataclass(frozen=True)
class FlowChoice:
    """The flow settings of one row: ``L`` release directions (``None``: the generator's), ``G`` bins, steps, and
    the flow's step size, directions per step, count estimator and labelling (``ImageRunConfig``'s fields).
    ``label`` names the row where one study varies more than L, G and steps."""

    directions: int | None
    bins: int
    steps: int
    step_size: float = 1.0
    flow_directions: int = 70
    estimator: str = "simplex"
    labelling: str = "conditional"
    label: str = ""

    @classmethod
    def parse(cls, text: str) -> FlowChoice:
        """``L:G:STEPS`` (``L`` may be ``default``)."""
        parts = text.split(":")
        try:
            if len(parts) != 3:
                raise ValueError
            directions = None if parts[0] == "default" else int(parts[0])
            return cls(directions, int(parts[1]), int(parts[2]))
        except ValueError:
            raise ValueError(
                f"a setting is L:G:STEPS (e.g. 4000:32:3000; L may be 'default') or a table, got {text!r}."
            ) from None

    @classmethod
    def of(cls, value: str | dict[str, Any]) -> FlowChoice:
        """A setting from a config: ``"L:G:STEPS"``, or a table of this class's fields (``directions`` may be
        ``"default"``)."""
        if isinstance(value, str):
            return cls.parse(value)
        fields = {field.name for field in dataclasses.fields(cls)}
        unknown = sorted(set(value) - fields)
        if unknown:
            raise ValueError(f"unknown setting keys {unknown}; a setting table takes {sorted(fields)}.")
        if value.get("directions") == "default":
            value = {**value, "directions": None}
        return cls(**{"directions": None, "bins": ImageRunConfig.n_bins, "steps": ImageRunConfig.n_steps, **value})

    def __str__(self) -> str:
        text = f"{self.directions if self.directions is not None else 'default'}, {self.bins}, {self.steps}"
        return f"{self.label} ({text})" if self.label else text


@dataclass(frozen=True)
class ImageGrid:
    """One study: every codec x generator x adjacency x setting, at each epsilon, on one dataset and split.

    ``name``: the results file (``benchmarks/results/<name>.{json,md}``). ``samples``: generated pairs per cell
    (CAS trains on them). ``fid_samples``: generated images scored for FID and precision / recall against as many
    scored images (0: none; needs ``--inception``). ``refiner_epochs``: the autoencoder codecs' refiner (0: none).
    ``fresh_codecs``: train autoencoders in a temporary folder, so that ``codec (s)`` times their training.
    ``select_from``: the validation results file (under the results folder) a test grid takes its choice from.
    ``gan_batch_size`` and ``gan_epochs``: the DP-SGD GAN's (its settings are not the flows')."""

    name: str
    dataset: str
    split: str
    codecs: tuple[str, ...]
    generators: tuple[str, ...] = ("dpswflow",)
    neighbourings: tuple[str, ...] = ("replace_one",)
    epsilons: tuple[float, ...] = (10.0, 1.0)
    settings: tuple[FlowChoice, ...] = (FlowChoice(None, ImageRunConfig.n_bins, ImageRunConfig.n_steps),)
    samples: int = 10000
    fid_samples: int = 0
    refiner_epochs: int = 0
    fresh_codecs: bool = False
    select_from: str | None = None
    gan_batch_size: int = 250
    gan_epochs: float = 50.0
    seed: int = 0
    description: str = ""

    def __post_init__(self) -> None:
        for key in ("samples", "seed", "fid_samples", "refiner_epochs", "gan_batch_size"):
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, int) or value < (1 if key in ("samples", "gan_batch_size") else 0):
                raise ValueError(f"{key} must be an integer >= {1 if key in ('samples', 'gan_batch_size') else 0}, got {value!r}.")
        if not self.codecs or not self.generators or not self.neighbourings or not self.epsilons or not self.settings:
            raise ValueError("codecs, generators, neighbourings, epsilons and settings each need at least one entry.")
        if any(not epsilon > 0 for epsilon in self.epsilons):
            raise ValueError(f"epsilons must be positive (\"inf\": no noise), got {list(self.epsilons)}.")
        unknown_adjacency = sorted(set(self.neighbourings) - {"replace_one", "add_remove"})
        if unknown_adjacency:
            raise ValueError(f"unknown neighbourings {unknown_adjacency}; choose among ['replace_one', 'add_remove'].")
        if "dpsgd_gan" in self.generators and "add_remove" in self.neighbourings:
            raise ValueError("the DP-SGD GAN is accounted under replace-one only: drop add_remove, or the GAN.")
        if len(set(self.settings)) != len(self.settings):
            raise ValueError("two settings are the same: give each a different value (or label).")
        if self.split == "validation" and self.fid_samples > VALIDATION:
            raise ValueError(f"a validation grid scores {VALIDATION} held-out images: fid_samples must not exceed it.")
        if self.dataset not in IMAGE_LOADERS:
            raise ValueError(f"dataset must be one of {sorted(IMAGE_LOADERS)}, got {self.dataset!r}.")
        if self.split not in ("validation", "test"):
            raise ValueError(f"split must be 'validation' or 'test', got {self.split!r}.")
        if self.select_from is not None and self.split != "test":
            raise ValueError("select_from chooses the rows of a test grid: set split = \"test\", or drop select_from.")
        unknown = sorted(set(self.generators) - set(GENERATOR_NAMES))
        if unknown:
            raise ValueError(f"unknown generators {unknown}; choose among {list(GENERATOR_NAMES)}.")
        for spec in self.codecs:
            codec_kind(spec)
        if "dpsgd_gan" in self.generators and any(spec.startswith("pca:") for spec in self.codecs):
            raise ValueError("the DP-SGD GAN is run with public codecs only (its budget is not split with a private codec).")
        if self.fid_samples > self.samples:
            raise ValueError(f"fid_samples ({self.fid_samples}) exceeds samples ({self.samples}).")


def codec_kind(spec: str) -> tuple[str, list[int]]:
    """The kind and numbers of a codec spec (``ae:LATENT:EPOCHS``, ``other:LATENT:EPOCHS``, ``dct:K``, ``pca:K``)."""
    kind, *numbers = spec.split(":")
    arity = {"ae": 2, "other": 2, "dct": 1, "pca": 1}
    if kind not in arity or len(numbers) != arity[kind] or not all(number.isdigit() and int(number) > 0 for number in numbers):
        raise ValueError(f"codec spec must be ae:LATENT:EPOCHS, other:LATENT:EPOCHS, dct:K or pca:K with positive "
                         f"integers, got {spec!r}.")
    return kind, [int(number) for number in numbers]


def load_grid(path: Path, overrides: tuple[str, ...] | list[str] = ()) -> ImageGrid:
    """The grid of a TOML config, with ``KEY=VALUE`` ``overrides`` (TOML values: ``samples=500``,
    ``epsilons=[10]``, ``codecs=["dct:12"]``). Epsilons may be ``"inf"`` (the same flow without noise)."""
    values: dict[str, Any] = tomllib.loads(Path(path).read_text())
    for override in overrides:
        key, separator, value = override.partition("=")
        if not separator:
            raise ValueError(f"--set takes KEY=VALUE, got {override!r}.")
        try:
            values[key.strip()] = tomllib.loads(f"value = {value}")["value"]
        except tomllib.TOMLDecodeError as error:
            raise ValueError(f"--set {override!r}: the value is not TOML ({error}); quote strings, e.g. "
                             f"{key.strip()}=\"{value}\", and write lists as [10, 1].") from None
    fields = {field.name for field in dataclasses.fields(ImageGrid)}
    unknown = sorted(set(values) - fields)
    if unknown:
        raise ValueError(f"{path}: unknown keys {unknown}; a grid takes {sorted(fields)}.")
    for key in ("codecs", "generators", "neighbourings"):
        if key in values:
            values[key] = tuple(values[key])
    if "epsilons" in values:
        values["epsilons"] = tuple(float(epsilon) for epsilon in values["epsilons"])
    if "settings" in values:
        values["settings"] = tuple(FlowChoice.of(setting) for setting in values["settings"])
    return ImageGrid(**values)


def select_settings(
    validation: dict[str, Any], specs: tuple[str, ...], epsilon: float, dataset: str, samples: int,
    generators: tuple[str, ...] = ("dpswflow",), neighbourings: tuple[str, ...] = ("replace_one",),
) -> tuple[str, FlowChoice, float]:
    """The codec (one of ``specs``) and flow settings (all of a row's ``FlowChoice``) whose validation row (of
    ``dataset``, scored with ``samples`` generated pairs, one of ``generators`` and ``neighbourings``, decoded with
    today's pixel rule) had the highest mean CAS (MLP and CNN) at ``epsilon``: the rule by which the test split's rows
    are chosen, stated before they are run. A results file of another split or dataset is refused."""
    if validation.get("split") != "validation" or validation.get("dataset") != dataset:
        raise ValueError(f"select_from must be a validation results file of {dataset}, got split "
                         f"{validation.get('split')!r} of {validation.get('dataset')!r}: choose on validation data only.")
    key = str(finite_or_text(epsilon))
    scored = [  # means rounded to 1e-6, so that an exact tie stored in float32 goes to the row written first
        (round((row["epsilons"][key]["mlp"] + row["epsilons"][key]["cnn"]) / 2, 6), row)
        for row in validation["rows"]
        if row["codec"] in specs and key in row["epsilons"] and row["samples"] == samples
        and row.get("generator", "dpswflow") in generators and row.get("neighbouring", "replace_one") in neighbourings
        and row.get("pixels", pixels_of(row["codec"], written_before=True)) == pixels_of(row["codec"])
    ]
    if not scored:
        raise ValueError(f"the validation results hold no row of codecs {list(specs)} at epsilon {key} with {samples} "
                         "samples: run the validation grid with those codecs, epsilons and samples first.")
    best, row = max(scored, key=lambda item: item[0])
    if row.get("setting"):
        return row["codec"], FlowChoice(**row["setting"]), best
    return row["codec"], FlowChoice(row["directions"], row["bins"], row["steps"]), best


@dataclass
class Scoring:
    """The images every cell is scored on, and (with FID) their Inception features."""

    images: torch.Tensor
    labels: torch.Tensor
    network: InceptionFeatures | None = None
    features: torch.Tensor | None = None


@dataclass
class PrivateSet:
    """A grid's training images, the indices of its public and released private images, and its scoring."""

    images: torch.Tensor
    labels: torch.Tensor
    public: torch.Tensor
    private: torch.Tensor
    scoring: Scoring


def private_set(grid: ImageGrid, spec: str, data_root: Path, inception: Path | None, device: str, cache: Path) -> PrivateSet:
    """The released private images of codec ``spec`` under the grid's split, and what they are scored on."""
    images, labels = IMAGE_LOADERS[grid.dataset](data_root, train=True)
    public, private = split_training_set("public-half" if spec.startswith("ae:") else "dct", len(images), grid.seed)
    if grid.split == "validation":
        held, private = private[:VALIDATION], private[VALIDATION:]
        scoring = Scoring(images[held], labels[held])
    else:
        scoring = Scoring(*IMAGE_LOADERS[grid.dataset](data_root, train=False))
    if grid.fid_samples > 0:
        if inception is None:
            raise ValueError(f"the grid {grid.name} asks for FID (fid_samples = {grid.fid_samples}): pass --inception FILE.")
        scoring.network = InceptionFeatures(inception).to(device)
        count = grid.fid_samples
        scoring.features = cached_inception_features(
            scoring.images[:count], scoring.network, inception, cache / f"inception_{grid.dataset}_{grid.split}_{count}.pt"
        )
    return PrivateSet(images, labels, public, private, scoring)


def codec_fields(spec: str, grid: ImageGrid) -> dict[str, Any]:
    """``ImageRunConfig``'s codec fields of a codec spec: ``dpswf images``' codec name and its size."""
    kind, numbers = codec_kind(spec)
    if kind in ("ae", "other"):
        return {"codec": "public-half" if kind == "ae" else "other-dataset", "latent_dim": numbers[0],
                "autoencoder_epochs": numbers[1], "refiner_epochs": grid.refiner_epochs}
    if kind == "dct":
        return {"codec": "dct", "dct_frequencies": numbers[0]}
    return {"codec": "private-pca", "pca_components": numbers[0]}


def public_data(spec: str, dataset: str) -> str:
    """The public data codec ``spec`` assumes, in the results' words."""
    kind, _ = codec_kind(spec)
    if kind == "ae":
        return f"the public half of {DATASET_NAMES[dataset]}"
    if kind == "other":
        return f"{DATASET_NAMES[OTHER_DATASET[dataset]]}'s training set"
    return "no public data"


def build_model(grid: ImageGrid, generator: str, config: ImageRunConfig) -> Generator:
    """The generator of one cell: a flow with its cell's settings (``cell_config``), or the DP-SGD GAN with the grid's
    batch size and epochs."""
    if generator == "dpsgd_gan":
        if config.neighbouring != "replace_one":
            raise ValueError("the DP-SGD GAN is accounted under replace-one only; drop add_remove from neighbourings.")
        return DPSGDGAN(batch_size=grid.gan_batch_size, epochs=grid.gan_epochs, n_classes=10,
                        label_weight=LabelledCodec(10).label_weight, seed=grid.seed, device=config.device)
    return build_generator(config, progress=False)


def cell_config(grid: ImageGrid, spec: str, generator: str, choice: FlowChoice, neighbouring: str, epsilon: float,
                device: str) -> ImageRunConfig:
    """``dpswf images``' configuration of one cell: its codec, budget split and flow settings."""
    return ImageRunConfig(
        # The GAN runs with public codecs only (ImageGrid refuses pca with it): any flow's name gives its budget.
        dataset=grid.dataset, generator=generator if generator in GENERATORS else ImageRunConfig.generator,
        neighbouring=neighbouring, epsilon=epsilon, delta=DELTA, n_release_directions=choice.directions,
        n_bins=choice.bins, n_steps=choice.steps, step_size=choice.step_size, flow_directions=choice.flow_directions,
        count_estimator=choice.estimator, labelling=choice.labelling, seed=grid.seed, device=device,
        **codec_fields(spec, grid),
    )


def score(grid: ImageGrid, scoring: Scoring, generated: torch.Tensor, labels: torch.Tensor, device: str) -> dict[str, float]:
    """CAS of both classifiers and, with FID, FID and precision / recall of ``fid_samples`` generated images."""
    scores = classification_accuracies(generated, labels, scoring.images, scoring.labels, grid.seed, device=device)
    if scoring.network is not None and scoring.features is not None:
        fid, precision, recall = fid_precision_recall(scoring.features, generated[: grid.fid_samples], scoring.network)
        scores.update(fid=fid, precision=precision, recall=recall)
    return scores


def run_codec(grid: ImageGrid, spec: str, choice: FlowChoice, epsilons: list[float], data_root: Path,
              inception: Path | None, device: str, cache: Path) -> Iterator[dict[str, Any]]:
    """The rows of one codec and setting, one per generator and adjacency of the grid, each yielded as soon as it is
    measured (a run stopped by a time limit keeps the rows it finished): the codec's ceiling
    (computed once; per epsilon for the private codec, released anew at each one with ``codec_budget``'s share) and
    each generator's scores at every epsilon."""
    data = private_set(grid, spec, data_root, inception, device, cache)
    kind, numbers = codec_kind(spec)
    shown = min(grid.samples, len(data.private))
    private_labels = data.labels[data.private]

    def ceiling_of(codec: ImageCodec, latents: torch.Tensor) -> dict[str, float]:
        return classification_accuracies(codec.decode(latents[:shown]), private_labels[:shown], data.scoring.images,
                                         data.scoring.labels, grid.seed, device=device)

    def codec_at(config: ImageRunConfig) -> ImageCodec:
        budget = codec_budget(config)
        other = load_other_training_set(grid.dataset, data_root) if kind == "other" else None
        with tempfile.TemporaryDirectory() as fresh:
            return build_codec(config, data.images, data.public, data.private, budget,
                               Path(fresh) if grid.fresh_codecs else cache, False, other)

    started = time.perf_counter()
    if kind != "pca":
        codec = codec_at(cell_config(grid, spec, grid.generators[0], choice, grid.neighbourings[0], math.inf, device))
        latents = codec.encode(data.images[data.private])
        description, dim = codec.public_description, int(latents.shape[1])
    else:
        dim = numbers[0]
        description = (f"the top {dim} eigenvectors of the private images' second moment, released with "
                       f"{CODEC_SHARE:g} of the budget (of mu^2 with DPSWflow; privacy.md, \"A private image codec\")")
    codec_seconds = time.perf_counter() - started
    common: dict[str, Any] = {
        "codec": spec, "public": public_data(spec, grid.dataset), "description": description, "dim": dim, "pixels": pixels_of(spec),
        "codec_seconds": codec_seconds, "n_released": len(data.private), "n_scored": len(data.scoring.images),
        "directions": choice.directions, "bins": choice.bins, "steps": choice.steps, "setting": dataclasses.asdict(choice),
        "samples": grid.samples, "fid_samples": grid.fid_samples, "refiner_epochs": grid.refiner_epochs if kind in ("ae", "other") else 0,
        "seed": grid.seed, "device": device, "ceiling": None,
    }
    if kind != "pca":
        common["ceiling"] = ceiling_of(codec, latents)
        print(f"[{spec}] d = {dim}, codec {codec_seconds:.0f} s, ceiling {common['ceiling']}", flush=True)
    # The GAN takes no flow setting: it runs once, beside the grid's first setting.
    generators = [name for name in grid.generators if name != "dpsgd_gan" or choice == grid.settings[0]]
    for generator in generators:
        for neighbouring in grid.neighbourings:
            row = {**common, "generator": generator, "neighbouring": neighbouring, "epsilons": {}}
            if generator == "dpsgd_gan":
                row.update(directions=None, bins=None, steps=None, setting=None,
                           gan={"batch_size": grid.gan_batch_size, "epochs": grid.gan_epochs})
            for epsilon in epsilons:
                extra: dict[str, Any] = {}
                config = cell_config(grid, spec, generator, choice, neighbouring, epsilon, device)
                budget = codec_budget(config)  # dpswf images' split (all to the generator with a public codec)
                if kind == "pca":  # the codec's own release at this epsilon, then the generator's
                    released = time.perf_counter()
                    codec = codec_at(config)
                    latents = codec.encode(data.images[data.private])
                    extra["codec_seconds"] = time.perf_counter() - released
                    extra["ceiling"] = ceiling_of(codec, latents)
                model = build_model(grid, generator, config)
                started = time.perf_counter()
                model = model.fit(latents.to(device), budget.flow_epsilon, budget.flow_delta,
                                  labels=private_labels.to(device), n_classes=10)
                fitted = time.perf_counter()
                generated, generated_labels = model.sample_labelled(grid.samples, seed=grid.seed)
                sampled = time.perf_counter()
                scores = score(grid, data.scoring, codec.decode(generated.detach().cpu()), generated_labels.cpu(), device)
                # The generator's report, composed with the private codec's release when the codec is one.
                report = composed_report(model.privacy_report, codec if kind == "pca" else None, budget, neighbouring)  # type: ignore[arg-type]
                row["epsilons"][str(finite_or_text(epsilon))] = {
                    **scores, "seconds": sampled - started, "fit_seconds": fitted - started,
                    "sample_seconds": sampled - fitted, "reported_epsilon": finite_or_text(report.epsilon), **extra,
                }
                print(f"[{spec}] {generator} {neighbouring} {choice} epsilon {epsilon:g}: {scores} {extra}, fit + sample "
                      f"{sampled - started:.0f} s", flush=True)
            yield row


def percent_pair(scores: dict[str, float]) -> str:
    """``MLP / CNN`` CAS in percent."""
    return f"{scores['mlp']:.1%} / {scores['cnn']:.1%}"


def markdown(payload: dict[str, Any]) -> str:
    """The results table of one grid's file: one line per row, one column per epsilon."""
    epsilons = sorted({key for row in payload["rows"] for key in row["epsilons"]}, key=lambda key: -float(key))
    with_fid = any("fid" in cell for row in payload["rows"] for cell in row["epsilons"].values())
    configs = sorted({row["config_file"] for row in payload["rows"] if row.get("config_file")})
    scored = "the 5,000 held-out validation images" if payload["split"] == "validation" else "the test set"
    lines = [
        f"# Image benchmark `{payload.get('name', '')}`: {DATASET_NAMES[payload['dataset']]}, {payload['split']} split",
        "",
        f"CAS (MLP / CNN) of classifiers trained on generated (image, label) pairs and scored on {scored}"
        + (", then FID (with precision / recall) against as many scored images" if with_fid else "")
        + ". Ceiling: the released private images through the codec. Generators with their defaults besides the "
        "settings column: DPSWflow (one class-conditional projected-histogram release of L directions), DPSWflow-r "
        "(100 per-step releases of 50 directions each, q = 0.1: fixed-size batches under replace-one, Poisson "
        "samples under add/remove), DPSWgen (a generator network on the same releases), the DP-SGD GAN baseline "
        "(same sampling and accountant); delta = 1e-5; the adjacency column says which neighbours epsilon is stated "
        "for; epsilon inf is the same generator without noise: not private. Pixels: how a linear codec puts a "
        "decoded image on the pixel range (`adapters.pixel_range`: min_max, the rule before 2026-11-27, or clip). "
        + "".join(f"`{name}`: {text} " for name, text in payload.get("descriptions", {}).items())
        + "Written by `benchmarks/image_runner.py` from "
        + (", ".join(f"`configs/images/{name}`" for name in configs) if configs else "earlier scripts") + "; "
        + "the last column names each row's config (and `--set` overrides).",
        "",
        "| codec | public data | d | pixels | generator | adjacency | L, G, steps | ceiling | "
        + " | ".join(f"epsilon {key}" for key in epsilons) + " | codec (s) | device | config |",
        "|---|---|---:|---|---|---|---|---|" + "---|" * len(epsilons) + "---:|---|---|",
    ]
    for row in payload["rows"]:
        cells = []
        for key in epsilons:
            found = row["epsilons"].get(key)
            cell = "-" if found is None else percent_pair(found)
            if found is not None and "fid" in found:
                cell += f", FID {found['fid']:.1f} (P {found['precision']:.2f}, R {found['recall']:.2f})"
            if found is not None and "ceiling" in found:  # a private codec: its ceiling at this epsilon
                cell += f" (ceiling {percent_pair(found['ceiling'])})"
            cells.append(cell)
        generator = row.get("generator", "dpswflow")
        setting = (row.get("setting") or {}).get("label", "")
        directions = row["directions"] if row["directions"] is not None else "default"
        settings = "-" if generator == "dpsgd_gan" else (f"{setting}: " if setting else "") + (
            f"{directions}, {row['bins']}, {row['steps']}")
        ceiling = "per epsilon" if row["ceiling"] is None else percent_pair(row["ceiling"])
        chosen = " (chosen on validation)" if "chosen_on" in row else ""
        adjacency = "add/remove" if row.get("neighbouring") == "add_remove" else "replace-one"
        run = row.get("config_file") or "-"
        if row.get("overrides"):
            run += " with " + ", ".join(f"`{override}`" for override in row["overrides"])
        lines.append(
            f"| {row['codec']} | {row['public']} | {row['dim']} | {row.get('pixels', pixels_of(row['codec'], True))} | "
            f"{generator} | {adjacency} | {settings}{chosen} | {ceiling} | " + " | ".join(cells)
            + f" | {row['codec_seconds']:.0f} | {row.get('device', 'cpu')} | {run} |"
        )
    return "\n".join(lines) + "\n"


def pixels_of(spec: str, written_before: bool = False) -> str:
    """How codec ``spec`` puts decoded images on the pixel range: a linear codec's pixel scaling (``min_max`` for
    rows ``written_before`` the rows said it, the only rule then), ``-`` for an autoencoder (its decoder's sigmoid)."""
    if not spec.startswith(("dct:", "pca:")):
        return "-"
    return "min_max" if written_before else DEFAULT_PIXEL_SCALING


ROW_KEYS = {"codec": None, "directions": None, "bins": None, "steps": None, "samples": None, "generator": "dpswflow",
            "neighbouring": "replace_one", "setting": None, "refiner_epochs": 0, "seed": 0, "fid_samples": 0, "gan": None}
"""What makes two rows the same row, with the value a row written before the key existed had."""


def replace_row(rows: list[dict[str, Any]], row: dict[str, Any]) -> list[dict[str, Any]]:
    """``rows`` with ``row`` in place of any row of the same codec and settings: the epsilons ``row`` measured
    replace theirs, the others are kept; the row is marked chosen on validation only if ``row`` was."""
    kept, merged = [], dict(row)
    for old in rows:
        if any(old.get(key, default) != row.get(key, default) for key, default in ROW_KEYS.items()) or (
            old.get("pixels", pixels_of(old["codec"], written_before=True)) != row.get("pixels", pixels_of(row["codec"], True))
        ):
            kept.append(old)
            continue
        merged = {**old, **row, "epsilons": {**old["epsilons"], **row["epsilons"]}}
        if "chosen_on" not in row:
            merged.pop("chosen_on", None)
    return kept + [merged]


def write(path: Path, payload: dict[str, Any]) -> None:
    """A grid's results: ``<name>.json`` and its table ``<name>.md``."""
    write_json(path, payload)
    path.with_suffix(".md").write_text(markdown(payload))


def merge_rows(source: dict[str, Any], out: Path) -> Path:
    """Add the rows of a results payload (e.g. a GPU run's) to ``out``'s file of the same name; each row keeps its
    own ``device``. Returns the JSON path written (the Markdown beside it is rewritten)."""
    name = source.get("name") or f"image_codecs_{source['dataset']}_{source['split']}"
    path = out / f"{name}.json"
    payload = json.loads(path.read_text()) if path.exists() else {
        "name": name, "dataset": source["dataset"], "split": source["split"], "rows": []}
    for row in source["rows"]:
        payload["rows"] = replace_row(payload["rows"], row)
    write(path, payload)
    print(f"{len(source['rows'])} row(s) merged into {path}")
    return path


def plan_of(grid: ImageGrid, out: Path) -> dict[tuple[str, FlowChoice], list[float]]:
    """Which epsilons each (codec, setting) runs: the whole grid, or with ``select_from`` the validation choice at
    each epsilon."""
    if grid.select_from is None:
        return {(spec, choice): list(grid.epsilons) for spec in grid.codecs for choice in grid.settings}
    validation = json.loads((out / f"{grid.select_from}.json").read_text())
    plan: dict[tuple[str, FlowChoice], list[float]] = {}
    for epsilon in grid.epsilons:
        spec, choice, best = select_settings(validation, grid.codecs, epsilon, grid.dataset, grid.samples,
                                             grid.generators, grid.neighbourings)
        print(f"epsilon {epsilon:g}: {spec} {choice} chosen (validation mean CAS {best:.1%})", flush=True)
        plan.setdefault((spec, choice), []).append(epsilon)
    return plan


def run_grid(grid: ImageGrid, data_root: Path, out: Path, inception: Path | None = None, device: str = "cpu",
             cache: Path | None = None, config_file: str = "", overrides: tuple[str, ...] | list[str] = ()) -> dict[str, Any]:
    """Run every cell of ``grid``; each row is added to ``out/<name>.json`` (and its table) as soon as it is measured,
    recording the config file and the ``--set`` overrides it was run with. The file is read again before each write,
    so that grids sharing a results file may run side by side."""
    cache = cache or Path(__file__).resolve().parent / ".cache"
    path = out / f"{grid.name}.json"
    payload: dict[str, Any] = {"rows": []}
    for (spec, choice), epsilons in plan_of(grid, out).items():
        for row in run_codec(grid, spec, choice, epsilons, data_root, inception, device, cache):
            if grid.select_from is not None:
                row["chosen_on"] = f"{grid.select_from}.json"
            row.update(config_file=config_file, overrides=list(overrides))
            payload = json.loads(path.read_text()) if path.exists() else {"rows": []}
            descriptions = dict(payload.get("descriptions", {}))
            if grid.description:
                descriptions[config_file or grid.name] = grid.description
            payload.update(name=grid.name, dataset=grid.dataset, split=grid.split, descriptions=descriptions,
                           environment=environment(torch.device(device)))
            payload["rows"] = replace_row(payload["rows"], row)
            write(path, payload)
    return payload


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("configs", nargs="*", type=Path, help=f"grid files (TOML), e.g. {CONFIGS}/codecs_mnist_test.toml")
    parser.add_argument("--data-root", type=Path, default=None, help="torchvision root holding MNIST/ and FashionMNIST/")
    parser.add_argument("--inception", type=Path, default=None, help="Inception TorchScript file (grids with FID)")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="override a grid key (a TOML value), e.g. --set samples=500 --set 'epsilons=[10]'")
    parser.add_argument("--device", default="cpu", help="where the generators and the CAS classifiers run (cpu, cuda)")
    parser.add_argument("--merge", type=Path, nargs="+", default=None,
                        help="instead of running: add the rows of these results files (another machine's run) to "
                             "--out's file of the same name")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--cache", type=Path, default=Path(__file__).resolve().parent / ".cache")
    args = parser.parse_args()
    if args.merge is not None:
        for source in args.merge:
            merge_rows(json.loads(source.read_text()), args.out)
        return
    if args.data_root is None or not args.configs:
        parser.error("pass grid files and --data-root (or --merge FILE ...)")
    for config in args.configs:
        grid = load_grid(config, args.overrides)
        payload = run_grid(grid, args.data_root, args.out, args.inception, args.device, args.cache, config.name,
                           args.overrides)
        print(markdown(payload))


if __name__ == "__main__":
    main()

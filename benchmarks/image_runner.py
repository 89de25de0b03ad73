"""The image benchmarks' one runner: a config file names a grid, the runner scores every cell of it the same way.

A grid (``benchmarks/configs/images/*.toml``, one per study; ``ImageGrid`` says what each key means) crosses codecs,
generators, adjacencies, flow settings and epsilons on one dataset and split. Every cell is: the codec (loaded or
trained once, or, for the private codec, released anew at each epsilon with its share of the budget as
``dpswf images`` splits it), the private records encoded, the generator fitted at epsilon and sampled in ``runs``
generation runs, the samples decoded and scored with CAS (an MLP and the small CNN of
``synthcity_dpswf.evaluation``) and, with ``fid_samples``, FID and precision / recall against as many scored images
(a cell's scores are the means over its runs, each run's kept beside them). A codec's ceiling (the private images
through it, no generator, no privacy) is scored the same way beside its rows.

Codecs: ``ae:LATENT:EPOCHS`` (an autoencoder trained on the public half of the training set, with the grid's
``refiner_epochs``; latent 8 is the paper's), ``other:LATENT:EPOCHS`` (the same trained on the other dataset's whole
training set: no image of the private distribution outside the private set), ``dct:K`` (the fixed DCT codec: no
public data) and ``pca:K`` (the private codec: no public data, paid for). Generators: ``dpswflow``, ``dpswflow_r``,
``dpswgen`` and the DP-SGD GAN baseline ``dpsgd_gan`` (``baselines.dpsgd_gan``), each fitted and sampled through
``models.Generator``. A setting (``FlowChoice``) may also choose the flows' release kind (the previous default's
noisy records, the paper's projections), their batches, the paper's use of each release once, and the paper's
accounting convention (``paper_protocol``: rows that state the sound epsilon of the noise the paper adds).

The private set is ``dpswf images``' (``split_training_set``: the seeded private half with ``ae``, the whole
training set otherwise; ``public_images`` and ``private_images`` cap them). ``split = "validation"`` (for choosing
settings) holds 5,000 private images out, scored against and never released; the test set is not read.
``split = "test"`` (for reporting) releases all of it and scores on the test set; with ``select_from`` (a validation
results file) it runs, at each epsilon, only the codec and settings whose validation row had the highest mean CAS
there: the test split is read once, for that choice. With ``figures``, a run also writes sample grids (one PNG per
epsilon, a row per generator and setting) and FID / CAS against epsilon (``paper_protocol``).

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
import functools
import hashlib
import json
import math
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

import torch

from common import DELTA, RESULTS, environment, finite_or_text, read_config, sound_convention
from image_results import RELEASE_DEFAULTS, markdown, merge_rows, pixels_of, replace_row, write
from paper_protocol import SampleGrids, fid_cas_figure, method_label, paper_noise_multiplier
from baselines.dpsgd_gan import DPSGDGAN

from synthcity_dpswf.adapters import LabelledCodec
from synthcity_dpswf.adapters.image_codecs import CODEC_SHARE, ImageCodec
from synthcity_dpswf.adapters.private_autoencoder import PrivateAutoencoderSettings
from synthcity_dpswf.datasets import DATASET_CLASSES, DATASET_NAMES, IMAGE_LOADERS, OTHER_DATASET
from synthcity_dpswf.evaluation import (
    InceptionFeatures,
    cached_inception_features,
    classification_accuracies,
    fid_precision_recall,
)
from synthcity_dpswf.recipes.images import (
    GENERATORS,
    CodecOrder,
    ImagePlan,
    ImageRunConfig,
    build_generator,
    check_public_split,
    codec_order,
    composed_report,
    fit_releases,
    load_other_training_set,
    paid_codec,
    plan_images,
    run_budget,
    split_training_set,
)
from synthcity_dpswf.models import Generator, SlicedGenerator
from synthcity_dpswf.privacy import MECHANISMS

VALIDATION = 5000
"""Private images a validation grid holds out and scores on (never released)."""
GENERATOR_NAMES = (*GENERATORS, "dpsgd_gan")
CONFIGS = Path(__file__).resolve().parent / "configs" / "images"


@dataclass(frozen=True)
class FlowChoice:
    """The settings of one row: ``L`` release directions (``None``: the generator's), ``G`` bins, steps, and the
    flow's step size, directions per step, count estimator and labelling (``ImageRunConfig``'s fields); the release
    kind (``release``, one of ``privacy.MECHANISMS`` on records), the records per per-step release (``batch_size``;
    ``None``: the generator's default) and the ``passes`` that set their number; ``reuse``: ``"pooled"`` (every step
    draws from all releases) or ``"once"`` (step k uses release k: the paper's way, per-step record and projected
    releases); ``convention``: ``"sound"`` (the noise calibrated to epsilon), ``"paper"`` (the paper's noise for
    epsilon, the row stating the sound epsilon of it: ``paper_protocol``; projected releases, replace-one, finite
    epsilons) or ``"noiseless"`` (a diagnostic, not private: the flow's release without noise, a private codec still
    released at its share of the cell's epsilon, so that a row tells the flow's own loss from its noise's; finite
    epsilons, the row's reported epsilon inf). ``generators`` and ``epsilons`` restrict the grid's flows and epsilons the setting runs with (empty:
    all of them). ``codec_share``: the private codec's share of the budget (``ImageRunConfig.codec_share``; codecs
    that release nothing ignore it, though a setting that sets it is still a row of its own). ``label`` names the
    row where one study varies more than L, G and steps."""

    directions: int | None
    bins: int
    steps: int
    step_size: float = 1.0
    flow_directions: int = 70
    estimator: str = "simplex"
    labelling: str = "conditional"
    label: str = ""
    release: str = "projected_histogram"
    batch_size: int | None = None
    passes: float = 10.0
    reuse: str = "pooled"
    convention: str = "sound"
    generators: tuple[str, ...] = ()
    epsilons: tuple[float, ...] = ()
    codec_share: float = CODEC_SHARE

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
        value = {**value, "generators": tuple(value.get("generators", ())),
                 "epsilons": tuple(float(epsilon) for epsilon in value.get("epsilons", ()))}
        return cls(**{"directions": None, "bins": ImageRunConfig.n_bins, "steps": ImageRunConfig.n_steps, **value})

    def runs_with(self, generator: str) -> bool:
        """Whether the setting runs with flow ``generator``."""
        return not self.generators or generator in self.generators

    def epsilons_of(self, epsilons: list[float]) -> list[float]:
        """Those of ``epsilons`` the setting runs at (the paper's and the noiseless conventions: the finite ones; at
        inf no noise is added and every convention is the sound row)."""
        return [epsilon for epsilon in epsilons if (not self.epsilons or epsilon in self.epsilons)
                and (self.convention == "sound" or math.isfinite(epsilon))]  # at inf every convention is the sound row

    def stored(self) -> dict[str, Any]:
        """What a row records of the setting: every field that changes its numbers (``generators`` and ``epsilons``
        only say where it runs), those of ``RELEASE_DEFAULTS`` only where they differ from it."""
        fields = dataclasses.asdict(self)
        del fields["generators"], fields["epsilons"]
        return {key: value for key, value in fields.items() if key not in RELEASE_DEFAULTS or value != RELEASE_DEFAULTS[key]}

    def __str__(self) -> str:
        text = f"{self.directions if self.directions is not None else 'default'}, {self.bins}, {self.steps}"
        changed = [f"{key} {value}" for key, value in self.stored().items() if key in RELEASE_DEFAULTS]
        text = ", ".join([text, *changed])
        return f"{self.label} ({text})" if self.label else text


@dataclass(frozen=True)
class ImageGrid:
    """One study: every codec x generator x adjacency x setting, at each epsilon, on one dataset and split.

    ``name``: the results file (``benchmarks/results/<name>.{json,md}``). ``samples``: generated pairs per cell
    (CAS trains on them). ``fid_samples``: generated images scored for FID and precision / recall against as many
    scored images (0: none; needs ``--inception``). ``refiner_epochs``: the autoencoder codecs' refiner (0: none).
    ``fresh_codecs``: train autoencoders in a temporary folder, so that ``codec (s)`` times their training.
    ``select_from``: the validation results file (under the results folder) a test grid takes its choice from.
    ``gan_batch_size`` and ``gan_epochs``: the DP-SGD GAN's (its settings are not the flows'). ``runs``: generation
    runs per cell (seeds ``seed``, ``seed + 1``, ...; one fit): a cell's scores are their means, each run's kept in
    its ``runs``. ``public_images`` and ``private_images``: at most that many public images train an autoencoder and
    private images are released (the first of the seeded split; omitted: all). ``figures``: write sample grids and
    FID / CAS against epsilon beside the results (``paper_protocol``; each row named by its generator and its
    setting's label, which must tell the rows apart)."""

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
    runs: int = 1
    public_images: int | None = None
    private_images: int | None = None
    figures: bool = False
    dpsgd: dict[str, Any] = dataclasses.field(default_factory=dict)
    """The ``dpae`` codecs' other ``PrivateAutoencoderSettings`` (``batch_size``, ``clip``, ``learning_rate``,
    ``replace_one_sampling``, ``decode_temperature``)."""
    description: str = ""

    def __post_init__(self) -> None:
        positive = ("samples", "gan_batch_size", "runs", "public_images", "private_images")
        for key in ("samples", "seed", "fid_samples", "refiner_epochs", "gan_batch_size", "runs", "public_images",
                    "private_images"):
            value = getattr(self, key)
            if value is None and key.endswith("_images"):
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value < (1 if key in positive else 0):
                raise ValueError(f"{key} must be an integer >= {1 if key in positive else 0}, got {value!r}.")
        if not isinstance(self.figures, bool):
            raise ValueError(f"figures must be true or false, got {self.figures!r}.")
        if not self.codecs or not self.generators or not self.neighbourings or not self.epsilons or not self.settings:
            raise ValueError("codecs, generators, neighbourings, epsilons and settings each need at least one entry.")
        if any(not epsilon > 0 for epsilon in self.epsilons):
            raise ValueError(f"epsilons must be positive (\"inf\": no noise), got {list(self.epsilons)}.")
        unknown_adjacency = sorted(set(self.neighbourings) - {"replace_one", "add_remove"})
        if unknown_adjacency:
            raise ValueError(f"unknown neighbourings {unknown_adjacency}; choose among ['replace_one', 'add_remove'].")
        if "dpsgd_gan" in self.generators and "add_remove" in self.neighbourings:
            raise ValueError("the DP-SGD GAN is accounted under replace-one only: drop add_remove, or the GAN.")
        shares = [choice.codec_share for choice in self.settings if not 0 < choice.codec_share < 1]
        if shares:
            raise ValueError(f"a setting's codec_share must lie in (0, 1), got {shares}.")
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
            for neighbouring in self.neighbourings:  # checks the spec (codec_kind) first
                check_public_split(codec_fields(spec, self)["codec"], neighbouring)
        if "dpsgd_gan" in self.generators and any(spec.startswith("pca:") for spec in self.codecs):
            raise ValueError("the DP-SGD GAN is run with public codecs only (its budget is not split with a private codec).")
        if self.fid_samples > self.samples:
            raise ValueError(f"fid_samples ({self.fid_samples}) exceeds samples ({self.samples}).")
        for choice in self.settings:
            check_setting(self, choice)
        if self.figures:  # pictures name a row by its generator and setting label (paper_protocol.method_label)
            names = [method_label({"generator": name, "setting": choice.stored(), "neighbouring": neighbouring, "codec": spec},
                                  len(self.codecs) > 1)
                     for spec in self.codecs for choice in self.settings if choice.convention == "sound"
                     for name in row_generators(self, choice) for neighbouring in self.neighbourings]
            if len(set(names)) != len(names):
                raise ValueError("figures name each row by its generator and setting label: label the settings so that "
                                 f"no two rows share a name, got {names}.")


def check_setting(grid: ImageGrid, choice: FlowChoice) -> None:
    """Refuse a setting the grid cannot run, before any data is read: unknown names, the paper's use of each release
    once with a one-shot generator, the paper's convention outside its projected replace-one releases; the package
    checks the rest when each of its flows is built (release kind, batches, passes)."""
    unknown = sorted(set(choice.generators) - set(GENERATORS))
    if unknown:
        raise ValueError(f"setting {choice}: unknown flows {unknown} in its generators; choose among {list(GENERATORS)}.")
    if any(not epsilon > 0 for epsilon in choice.epsilons):
        raise ValueError(f"setting {choice}: epsilons must be positive, got {list(choice.epsilons)}.")
    if choice.reuse not in ("pooled", "once") or choice.convention not in ("sound", "paper", "noiseless"):
        raise ValueError(f"setting {choice}: reuse is 'pooled' or 'once', convention 'sound', 'paper' or 'noiseless'.")
    if choice.convention == "noiseless" and grid.split != "validation":
        raise ValueError(f"setting {choice}: the noiseless convention (not private) is a diagnostic for validation "
                         "grids; a test grid's rows are reported as private.")
    if choice.convention == "noiseless" and "dpsgd_gan" in grid.generators and choice == grid.settings[0]:
        raise ValueError(f"setting {choice}: the noiseless convention is the flows' diagnostic; the DP-SGD GAN runs "
                         "beside the grid's first setting, so put another setting first.")
    if choice.release not in MECHANISMS or MECHANISMS[choice.release].takes_level_codes:
        raise ValueError(f"setting {choice}: release must be a kind on records, one of "
                         f"{sorted(name for name, kind in MECHANISMS.items() if not kind.takes_level_codes)}.")
    flows = [name for name in grid.generators if name in GENERATORS and choice.runs_with(name)]
    one_shot = [name for name in flows if not GENERATORS[name].per_step]
    if choice.reuse == "once" and one_shot:
        raise ValueError(f"setting {choice}: reuse 'once' needs per-step releases, and {one_shot} makes one release; "
                         "restrict the setting with generators = [...].")
    if choice.convention == "paper" and (choice.release != "projected" or grid.neighbourings != ("replace_one",)
                                         or any(spec.startswith("pca:") for spec in grid.codecs)):
        raise ValueError(f"setting {choice}: the paper's convention is stated for its projected releases under "
                         "replace-one, with a public codec: set release = \"projected\" and drop add_remove and pca codecs.")
    for name in flows:
        for neighbouring in grid.neighbourings:
            build_model(grid, name, cell_config(grid, grid.codecs[0], name, choice, neighbouring, 1.0, "cpu"), choice.reuse)


def codec_kind(spec: str) -> tuple[str, list[int]]:
    """The kind and numbers of a codec spec (``ae:LATENT:EPOCHS``, ``other:LATENT:EPOCHS``, ``dct:K``, ``pca:K``,
    ``dpae:LATENT:WIDTH:EPOCHS``: the DP-SGD autoencoder, its other settings the grid's ``dpsgd``)."""
    kind, *numbers = spec.split(":")
    arity = {"ae": 2, "other": 2, "dct": 1, "pca": 1, "dpae": 3}
    if kind not in arity or len(numbers) != arity[kind] or not all(number.isdigit() and int(number) > 0 for number in numbers):
        raise ValueError(f"codec spec must be ae:LATENT:EPOCHS, other:LATENT:EPOCHS, dct:K, pca:K or "
                         f"dpae:LATENT:WIDTH:EPOCHS with positive integers, got {spec!r}.")
    return kind, [int(number) for number in numbers]


def load_grid(path: Path, overrides: tuple[str, ...] | list[str] = ()) -> ImageGrid:
    """The grid of a TOML config, with ``KEY=VALUE`` ``overrides`` (TOML values: ``samples=500``,
    ``epsilons=[10]``, ``codecs=["dct:12"]``). Epsilons may be ``"inf"`` (the same flow without noise)."""
    values = read_config(path, overrides, {field.name for field in dataclasses.fields(ImageGrid)})
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
        and sound_convention(row)  # the paper's rows spend a larger epsilon, noiseless rows are not private
    ]
    if not scored:
        raise ValueError(f"the validation results hold no row of codecs {list(specs)} at epsilon {key} with {samples} "
                         "samples: run the validation grid with those codecs, epsilons and samples first.")
    best, row = max(scored, key=lambda item: item[0])
    if row.get("setting"):  # a key the row does not store had the value of RELEASE_DEFAULTS when it ran
        return row["codec"], FlowChoice(**{**RELEASE_DEFAULTS, **row["setting"]}), best
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
    """The released private images of codec ``spec`` under the grid's split (at most ``private_images`` of them, and
    at most ``public_images`` public ones), and what they are scored on."""
    images, labels = IMAGE_LOADERS[grid.dataset](data_root, train=True)
    public, private = split_training_set("public-half" if spec.startswith("ae:") else "dct", len(images), grid.seed)
    if grid.split == "validation":
        held, private = private[:VALIDATION], private[VALIDATION:]
        scoring = Scoring(images[held], labels[held])
    else:
        scoring = Scoring(*IMAGE_LOADERS[grid.dataset](data_root, train=False))
    public, private = public[: grid.public_images], private[: grid.private_images]
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
    if kind == "dpae":
        settings = PrivateAutoencoderSettings(numbers[0], numbers[1], float(numbers[2]), **grid.dpsgd)
        return {"codec": "private-autoencoder", "private_autoencoder": settings}
    return {"codec": "private-pca", "pca_components": numbers[0]}


def public_data(spec: str, dataset: str) -> str:
    """The public data codec ``spec`` assumes, in the results' words."""
    kind, _ = codec_kind(spec)
    if kind == "ae":
        return f"the public half of {DATASET_NAMES[dataset]}"
    if kind == "other":
        return f"{DATASET_NAMES[OTHER_DATASET[dataset]]}'s training set"
    return "no public data"


def build_model(grid: ImageGrid, generator: str, config: ImageRunConfig, reuse: str = "pooled") -> Generator:
    """The generator of one cell: a flow with its cell's settings (``cell_config``) and its use of per-step releases
    (``reuse``, set before fitting: DPSWgen trains on them), or the DP-SGD GAN with the grid's batch size and epochs."""
    if generator == "dpsgd_gan":
        if config.neighbouring != "replace_one":
            raise ValueError("the DP-SGD GAN is accounted under replace-one only; drop add_remove from neighbourings.")
        n_classes = DATASET_CLASSES[grid.dataset]
        return DPSGDGAN(batch_size=grid.gan_batch_size, epochs=grid.gan_epochs, n_classes=n_classes,
                        label_weight=LabelledCodec(n_classes).label_weight, seed=grid.seed, device=config.device)
    model = build_generator(config, progress=False)
    model.settings = dataclasses.replace(model.settings, reuse=reuse)  # type: ignore[arg-type]
    return model


def cell_config(grid: ImageGrid, spec: str, generator: str, choice: FlowChoice, neighbouring: str, epsilon: float,
                device: str) -> ImageRunConfig:
    """``dpswf images``' configuration of one cell: its codec, budget split, release and flow settings."""
    return ImageRunConfig(
        # The GAN runs with public codecs only (ImageGrid refuses pca with it): any flow's name gives its budget.
        dataset=grid.dataset, generator=generator if generator in GENERATORS else ImageRunConfig.generator,
        release=choice.release, batch_size=choice.batch_size, passes=choice.passes,
        neighbouring=neighbouring, epsilon=epsilon, delta=DELTA, n_release_directions=choice.directions,
        n_bins=choice.bins, n_steps=choice.steps, step_size=choice.step_size, flow_directions=choice.flow_directions,
        count_estimator=choice.estimator, labelling=choice.labelling, codec_share=choice.codec_share, seed=grid.seed,
        device=device, **codec_fields(spec, grid),
    )


def score(grid: ImageGrid, scoring: Scoring, generated: torch.Tensor, labels: torch.Tensor, device: str) -> dict[str, float]:
    """CAS of both classifiers and, with FID, FID and precision / recall of ``fid_samples`` generated images."""
    scores = classification_accuracies(generated, labels, scoring.images, scoring.labels, grid.seed, device=device)
    if scoring.network is not None and scoring.features is not None:
        fid, precision, recall = fid_precision_recall(scoring.features, generated[: grid.fid_samples], scoring.network)
        scores.update(fid=fid, precision=precision, recall=recall)
    return scores


def row_generators(grid: ImageGrid, choice: FlowChoice) -> list[str]:
    """The generators of the grid that run with setting ``choice``: the flows it names (all without a list), and the
    GAN, which takes no flow setting, beside the grid's first setting alone (at every epsilon of the plan)."""
    return [name for name in grid.generators if (choice == grid.settings[0] if name == "dpsgd_gan" else choice.runs_with(name))]


def generation_seeds(grid: ImageGrid) -> list[int]:
    """The seeds of a cell's generation runs: ``seed``, ``seed + 1``, ... (one run: the grid's seed alone)."""
    return [grid.seed + run for run in range(grid.runs)]


def fit_model(choice: FlowChoice, config: ImageRunConfig, model: Generator, plan: ImagePlan,
              device: str) -> tuple[Generator, dict[str, float]]:
    """The cell's generator ``model`` fitted on the plan's encoded private set: a flow by the plan (``fit_releases``:
    its release plan and noise, the private codec as its accountant's prior), the GAN (public codecs only) at the whole
    budget, under the paper's convention with the noise that convention adds (``paper_protocol``), or under the
    noiseless one released without noise (epsilon inf) through the plan's codec, private or not; returns it and what
    the row states about that noise (nothing under the sound convention)."""
    if choice.convention == "sound" and isinstance(model, SlicedGenerator):
        return fit_releases(model, plan), {}
    budget = plan.budget
    if choice.convention == "noiseless":
        latents, labels = plan.records.to(device), plan.labels.to(device)
        return model.fit(latents, math.inf, budget.release_delta, labels=labels, n_classes=plan.n_classes), {"flow_noise": "none"}
    if budget.prior is not None:  # the grids refuse it (check_setting); a spent codec would be left out of the report
        raise ValueError("the GAN and the paper's convention take public codecs only: a private codec's release is not "
                         "in their accounting.")
    latents, labels = plan.records.to(device), plan.labels.to(device)
    if choice.convention == "sound":
        return model.fit(latents, budget.epsilon, budget.release_delta, labels=labels, n_classes=plan.n_classes), {}
    assert isinstance(model, SlicedGenerator)  # check_setting gives the paper's convention to the flows alone
    multiplier, facts = paper_noise_multiplier(model, latents.shape[0], latents.shape[1], plan.n_classes, config.epsilon)
    model.fit(latents, None, budget.release_delta, labels=labels, n_classes=plan.n_classes, noise_multiplier=multiplier)
    assert model.pool_ is not None
    return model, {**facts, "noise_multiplier": multiplier, "mean_noise_std": float(model.pool_.noise_std.mean())}


def generation_runs(grid: ImageGrid, model: Generator, codec: ImageCodec, scoring: Scoring, device: str,
                    show: Callable[[torch.Tensor, torch.Tensor], Any] | None = None) -> dict[str, Any]:
    """A fitted cell's scores: ``grid.runs`` runs of ``grid.samples`` generated pairs (``generation_seeds``), decoded
    and scored; the means of their scores and sampling seconds, and, with more than one run, each run's in ``runs``.
    ``show`` gets the first run's images and labels."""
    runs: list[dict[str, Any]] = []
    for seed in generation_seeds(grid):
        started = time.perf_counter()
        generated, labels = model.sample_labelled(grid.samples, seed=seed)
        seconds = time.perf_counter() - started
        images, labels = codec.decode(generated.detach().cpu()), labels.cpu()
        if show is not None and not runs:
            show(images, labels)
        runs.append({**score(grid, scoring, images, labels, device), "sample_seconds": seconds, "seed": seed})
    means = {key: sum(run[key] for run in runs) / len(runs) for key in runs[0] if key != "seed"}
    return {**means, "runs": runs} if len(runs) > 1 else means


def run_codec(grid: ImageGrid, spec: str, choice: FlowChoice, epsilons: list[float], data_root: Path,
              inception: Path | None, device: str, cache: Path, grids: SampleGrids | None = None,
              ceilings: dict[str, dict[str, float]] | None = None) -> Iterator[dict[str, Any]]:
    """The rows of one codec and setting, one per generator and adjacency it runs with, each yielded as soon as it is
    measured (a run stopped by a time limit keeps the rows it finished): the codec's ceiling (computed once; per
    epsilon for the private codec, released anew in each cell's plan at its share: ``plan_images``) and each
    generator's scores at every epsilon of the setting. ``grids`` gets the first generation run of each row of the
    sound convention. ``ceilings`` keeps the grid's ceiling scores by a digest of the decoded images and their labels,
    so that two generators through one codec (a DP-SGD codec loaded from the cache) score its ceiling once: the scores
    are a function of those images and labels and of the grid's scoring, fixed for the grid."""
    data = private_set(grid, spec, data_root, inception, device, cache)
    kind, numbers = codec_kind(spec)
    paid = paid_codec(codec_fields(spec, grid)["codec"])  # released anew at each epsilon, from its budget
    shown = min(grid.samples, len(data.private))
    private_images, private_labels = data.images[data.private], data.labels[data.private]

    ceilings = {} if ceilings is None else ceilings

    def ceiling_of(codec: ImageCodec, latents: torch.Tensor) -> dict[str, float]:
        images, labels = codec.decode(latents[:shown]), private_labels[:shown]
        digest = hashlib.sha256()
        for tensor in (images, labels):
            digest.update(tensor.detach().cpu().contiguous().numpy().tobytes())
        key = digest.hexdigest()
        if key not in ceilings:
            ceilings[key] = score(grid, data.scoring, images, labels, device)
        return dict(ceilings[key])

    def order_at(config: ImageRunConfig, folder: str) -> CodecOrder:
        other = load_other_training_set(grid.dataset, data_root) if kind == "other" else None
        return codec_order(config, data.images, data.public, data.private, Path(folder) if grid.fresh_codecs else cache,
                           False, other)

    def plan_at(config: ImageRunConfig, model: Generator, public_codec: ImageCodec | None) -> ImagePlan:
        """The cell's image plan, through the public codec built once or the private codec released anew; the GAN,
        which has no release plan, takes the budget of the plan of its config's flow (``cell_config``)."""
        planner = model if isinstance(model, SlicedGenerator) else build_generator(config, progress=False)
        with tempfile.TemporaryDirectory() as fresh:
            codec = public_codec if public_codec is not None else order_at(config, fresh)
            return plan_images(private_images, private_labels, DATASET_CLASSES[grid.dataset], run_budget(config),
                               planner, codec)

    started = time.perf_counter()
    public_codec = None
    if not paid:
        config = cell_config(grid, spec, grid.generators[0], choice, grid.neighbourings[0], math.inf, device)
        with tempfile.TemporaryDirectory() as fresh:
            public_codec = order_at(config, fresh).build(private_images, run_budget(config))
        latents = public_codec.encode(private_images)
        description, dim = public_codec.public_description, int(latents.shape[1])
    elif kind == "pca":
        dim = numbers[0]
        description = (f"the top {dim} eigenvectors of the private images' second moment, released with "
                       f"{choice.codec_share:g} of the budget's mu^2 (privacy.md, \"A private image codec\")")
    else:
        dim = numbers[0]
        description = (f"a convolutional autoencoder (latent {dim}, width {numbers[1]}, {numbers[2]} epochs, "
                       f"{grid.dpsgd or 'default'} DP-SGD settings) trained by DP-SGD on the private images with "
                       f"{choice.codec_share:g} of the budget's mu^2 (privacy.md, \"A private image codec trained by DP-SGD\")")
    codec_seconds = time.perf_counter() - started
    common: dict[str, Any] = {
        "codec": spec, "public": public_data(spec, grid.dataset), "description": description, "dim": dim, "pixels": pixels_of(spec),
        "codec_seconds": codec_seconds, "n_released": len(data.private), "n_scored": len(data.scoring.images),
        "directions": choice.directions, "bins": choice.bins, "steps": choice.steps, "setting": choice.stored(),
        "samples": grid.samples, "fid_samples": grid.fid_samples, "refiner_epochs": grid.refiner_epochs if kind in ("ae", "other") else 0,
        "seed": grid.seed, "generation_runs": grid.runs, "public_images": grid.public_images,
        "private_images": grid.private_images, "device": device, "ceiling": None,
    }
    if kind == "dpae":  # decoding's logit temperature (post-processing, not part of the codec's training)
        common["decode_temperature"] = codec_fields(spec, grid)["private_autoencoder"].decode_temperature
    if public_codec is not None:
        common["ceiling"] = ceiling_of(public_codec, latents)
        print(f"[{spec}] d = {dim}, codec {codec_seconds:.0f} s, ceiling {common['ceiling']}", flush=True)
    for generator in row_generators(grid, choice):
        cell_epsilons = epsilons if generator == "dpsgd_gan" else choice.epsilons_of(epsilons)
        for neighbouring in grid.neighbourings if cell_epsilons else ():
            row = {**common, "generator": generator, "neighbouring": neighbouring, "epsilons": {}}
            if kind == "dpae" and neighbouring == "replace_one":  # how the codec's DP-SGD drew its batches
                row["codec_sampling"] = codec_fields(spec, grid)["private_autoencoder"].replace_one_sampling
            if generator == "dpsgd_gan":
                row.update(directions=None, bins=None, steps=None, setting=None,
                           gan={"batch_size": grid.gan_batch_size, "epochs": grid.gan_epochs})
            for epsilon in cell_epsilons:
                extra: dict[str, Any] = {}
                config = cell_config(grid, spec, generator, choice, neighbouring, epsilon, device)
                model = build_model(grid, generator, config, choice.reuse)
                released = time.perf_counter()
                plan = plan_at(config, model, public_codec)  # a private codec's own release at this epsilon
                codec = plan.codec
                if paid:
                    extra["codec_seconds"] = time.perf_counter() - released
                    extra["ceiling"] = ceiling_of(codec, plan.records)
                    extra["codec"] = codec.public_description  # its own budget, and for DP-SGD its steps and z
                    extra["codec_training_seconds"] = codec.training_seconds  # 0 for a codec trained on nothing
                started = time.perf_counter()
                model, facts = fit_model(choice, config, model, plan, device)
                fit_seconds = time.perf_counter() - started
                show = None
                if grids is not None and choice.convention == "sound":
                    show = functools.partial(grids.add, epsilon, method_label(row, with_codec=len(grid.codecs) > 1))
                scores = generation_runs(grid, model, codec, data.scoring, device, show)
                # The generator's report, composed with the private codec's release when the codec is one.
                report = composed_report(model.privacy_report, plan.paid)
                row["epsilons"][str(finite_or_text(epsilon))] = {
                    **scores, "seconds": fit_seconds + scores["sample_seconds"], "fit_seconds": fit_seconds,
                    "reported_epsilon": finite_or_text(report.epsilon), "sampling": report.sampling.split(":")[0],
                    **facts, **extra,
                }
                means = {key: value for key, value in scores.items() if key != "runs"}
                print(f"[{spec}] {generator} {neighbouring} {choice} epsilon {epsilon:g}: {means} {facts} {extra}, "
                      f"fit + sample {fit_seconds + scores['sample_seconds']:.0f} s", flush=True)
            yield row


def plan_of(grid: ImageGrid, out: Path) -> dict[tuple[str, FlowChoice], list[float]]:
    """Which epsilons each (codec, setting) runs: the whole grid, or with ``select_from`` the validation choice at
    each epsilon."""
    if grid.select_from is None:
        whole = {(spec, choice): list(grid.epsilons) for spec in grid.codecs for choice in grid.settings}
        check_plan_runs(grid, whole)
        return whole
    validation = json.loads((out / f"{grid.select_from}.json").read_text())
    plan: dict[tuple[str, FlowChoice], list[float]] = {}
    for epsilon in grid.epsilons:
        spec, choice, best = select_settings(validation, grid.codecs, epsilon, grid.dataset, grid.samples,
                                             grid.generators, grid.neighbourings)
        print(f"epsilon {epsilon:g}: {spec} {choice} chosen (validation mean CAS {best:.1%})", flush=True)
        plan.setdefault((spec, choice), []).append(epsilon)
    check_plan_runs(grid, plan)
    return plan


def check_plan_runs(grid: ImageGrid, plan: dict[tuple[str, FlowChoice], list[float]]) -> None:
    """Raise ``ValueError`` when ``plan`` holds no cell: no setting runs with any of the grid's generators at any of
    its epsilons (a ``--set generators=...`` that every setting's own ``generators`` list excludes), which would
    otherwise run nothing, write nothing and exit 0."""
    for (_, choice), epsilons in plan.items():
        for generator in row_generators(grid, choice):
            if epsilons if generator == "dpsgd_gan" else choice.epsilons_of(epsilons):  # as run_codec's cell epsilons
                return
    restricted = sorted({f"{choice}: {list(choice.generators) or 'all'}, epsilons {list(choice.epsilons) or 'all'}"
                         for choice in grid.settings})
    raise ValueError(f"the grid {grid.name} runs no cell: its generators {list(grid.generators)} at epsilons "
                     f"{list(grid.epsilons)} match none of its settings' own generators and epsilons ({'; '.join(restricted)}). "
                     "Override the settings too (--set 'settings=[...]'), or name a generator a setting runs with.")


def run_grid(grid: ImageGrid, data_root: Path, out: Path, inception: Path | None = None, device: str = "cpu",
             cache: Path | None = None, config_file: str = "", overrides: tuple[str, ...] | list[str] = ()) -> dict[str, Any]:
    """Run every cell of ``grid``; each row is added to ``out/<name>.json`` (and its table) as soon as it is measured,
    recording the config file and the ``--set`` overrides it was run with. The file is read again before each write,
    so that grids sharing a results file may run side by side. With ``figures``: the run's sample grids
    (``out/<name>_eps<epsilon>.png``) as its rows come, and at the end FID / CAS against epsilon of every row of the
    file (``out/<name>_fid_cas.png``)."""
    cache = cache or Path(__file__).resolve().parent / ".cache"
    path = out / f"{grid.name}.json"
    payload: dict[str, Any] = {"rows": []}
    grids = SampleGrids(out / grid.name, f"{DATASET_NAMES[grid.dataset]} ({grid.name})") if grid.figures else None
    ceilings: dict[str, dict[str, float]] = {}  # one codec's ceiling scored once across the grid's settings
    for (spec, choice), epsilons in plan_of(grid, out).items():
        for row in run_codec(grid, spec, choice, epsilons, data_root, inception, device, cache, grids, ceilings):
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
    if grid.figures:
        fid_cas_figure(payload, out / f"{grid.name}_fid_cas.png")
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

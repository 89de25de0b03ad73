"""``dpswf images``: private image generation through a public autoencoder (the paper's Sec. 5).

The training set is halved: the public half trains the autoencoder (or a checkpoint trained on exactly this
public half is loaded; one of another split is refused), the
private half is encoded to unit latents, each with its label (one record = one (image, label) pair,
released per class by the default projected-histogram release), and is the only data the generator touches. Samples are decoded to images and
scored with FID (against the test set) and CAS (an MLP trained on generated pairs, tested on real ones).
"""

from __future__ import annotations

import dataclasses
import json
import math
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from synthcity_dpswf.adapters.image_latent import ImageLatentAdapter, PublicSplit
from synthcity_dpswf.datasets import load_fashion_mnist, load_mnist, public_private_split
from synthcity_dpswf.evaluation import classification_accuracy, frechet_inception_distance, save_labelled_grid
from synthcity_dpswf.models import DPSWFlow, DPSWFlowR, DPSWGen, FlowSettings, SlicedGenerator
from synthcity_dpswf.privacy import PrivacyReport

LOADERS = {"mnist": load_mnist, "fashion_mnist": load_fashion_mnist}
GENERATORS = {"dpswflow_r": DPSWFlowR, "dpswflow": DPSWFlow, "dpswgen": DPSWGen}


@dataclass(frozen=True)
class ImageRunConfig:
    """Public settings of one run (all stated in the results).

    Defaults: one class-conditional projected-histogram release (DPSWflow, L = 500 directions, G = 16 bins)
    and the plain flow (h = 1, 1,500 steps), chosen on a validation split of the MNIST training set
    (docs/flows.md, "Flow settings for histogram releases"). ``None`` for ``n_release_directions`` and
    ``batch_size`` takes the generator's defaults. With ``release="record"``, h = 3 and 3,000 steps measured
    best (CAS 59.4% at epsilon = 10 against 25.7% at h = 1).
    """

    dataset: str = "mnist"
    generator: str = "dpswflow"
    release: str = "projected_histogram"
    labelling: str = "conditional"
    epsilon: float = 10.0
    delta: float = 1e-5
    feature_weight: float = 0.7
    autoencoder_epochs: int = 5
    n_release_directions: int | None = None
    n_bins: int = 16
    batch_size: int | None = None
    passes: float = 10.0
    n_steps: int = 1500
    step_size: float = 1.0
    flow_batch_size: int = 4000
    n_samples: int = 10000
    fid_samples: int = 1000
    start: str = "gaussian"
    seed: int = 0


@dataclass(frozen=True)
class ImageRunResult:
    """What a run measured, and where it wrote its files."""

    fid: float | None
    cas: float
    report: PrivacyReport
    grid: Path
    seconds: dict[str, float]


def build_generator(config: ImageRunConfig, progress: bool) -> SlicedGenerator:
    """The generator of ``config`` with its release kind and flow settings."""
    settings = FlowSettings(n_steps=config.n_steps, step_size=config.step_size, batch_size=config.flow_batch_size)
    if config.generator not in GENERATORS:
        raise ValueError(f"generator must be one of {sorted(GENERATORS)}, got {config.generator!r}.")
    common: dict[str, object] = dict(
        release=config.release, n_release_directions=config.n_release_directions, n_bins=config.n_bins,
        labelling=config.labelling, feature_weight=config.feature_weight, settings=settings, seed=config.seed,
        progress=progress,
    )
    if config.generator == "dpswflow":
        return DPSWFlow(**common)  # type: ignore[arg-type]
    return GENERATORS[config.generator](batch_size=config.batch_size, passes=config.passes, **common)  # type: ignore[arg-type]


def load_or_train_autoencoder(
    checkpoint: Path, public_images: torch.Tensor, public_split: PublicSplit, epochs: int, seed: int, description: str,
    progress: bool,
) -> ImageLatentAdapter:
    """Load ``checkpoint`` if it exists, else train the MNIST autoencoder on the public images and save it.

    The checkpoint is bound to ``public_split`` (the split ``public_images`` come from): one trained on another
    split, or recording none, raises ``ValueError`` rather than encode private records it was trained on.
    """
    if checkpoint.exists():
        return ImageLatentAdapter.load(checkpoint, public_split=public_split)
    adapter = ImageLatentAdapter("mnist", channels=public_images.shape[1], progress=progress)
    adapter.fit(public_images, epochs=epochs, seed=seed, description=description, public_split=public_split)
    checkpoint.parent.mkdir(parents=True, exist_ok=True)
    adapter.save(checkpoint)
    return adapter


def run_images(
    config: ImageRunConfig,
    data_root: Path,
    out: Path,
    inception: Path | None,
    progress: bool = True,
) -> ImageRunResult:
    """The whole pipeline; writes the grid, the autoencoder checkpoint and ``results_*.json`` under ``out``."""
    if config.dataset not in LOADERS:
        raise ValueError(f"dataset must be one of {sorted(LOADERS)}, got {config.dataset!r}.")
    if config.start not in ("gaussian", "public"):
        raise ValueError(f"start must be 'gaussian' or 'public', got {config.start!r}.")
    seconds: dict[str, float] = {}
    images, labels = LOADERS[config.dataset](data_root, train=True)
    test_images, test_labels = LOADERS[config.dataset](data_root, train=False)
    public, private = public_private_split(len(images), 0.5, config.seed)
    started = time.perf_counter()
    adapter = load_or_train_autoencoder(
        out / f"autoencoder_{config.dataset}.pt", images[public], PublicSplit.of(config.dataset, len(images), public),
        config.autoencoder_epochs, config.seed,
        f"the public half of the {config.dataset} training set", progress,
    )
    seconds["autoencoder"] = time.perf_counter() - started
    latents = adapter.encode(images[private])

    started = time.perf_counter()
    model = build_generator(config, progress).fit(latents, config.epsilon, config.delta, labels=labels[private], n_classes=10)
    seconds["fit"] = time.perf_counter() - started
    started = time.perf_counter()
    if config.start == "public" and not isinstance(model, DPSWGen):
        chosen = torch.randperm(len(public), generator=torch.Generator().manual_seed(config.seed))[: config.n_samples]
        init = (adapter.encode(images[public][chosen]), labels[public][chosen])
        generated_latents, generated_labels = model.sample_labelled(len(chosen), init=init)
    else:
        generated_latents, generated_labels = model.sample_labelled(config.n_samples)
    generated = adapter.decode(generated_latents.cpu())
    seconds["generate"] = time.perf_counter() - started

    started = time.perf_counter()
    cas = classification_accuracy(generated, generated_labels, test_images, test_labels, seed=config.seed)
    seconds["cas"] = time.perf_counter() - started
    fid = None
    if inception is not None and config.fid_samples > 0:
        started = time.perf_counter()
        fid = frechet_inception_distance(test_images[: config.fid_samples], generated[: config.fid_samples], inception)
        seconds["fid"] = time.perf_counter() - started

    tag = f"{config.dataset}_{config.generator}_{config.release}_eps{config.epsilon:g}_{config.start}"
    rows = {f"label {digit}": generated[generated_labels == digit][:10] for digit in range(10)}
    grid = save_labelled_grid(
        rows, [f"sample {index + 1}" for index in range(10)], out / f"grid_{tag}.png",
        title=f"{config.generator}, {config.release} release, epsilon = {config.epsilon:g}",
    )
    report = model.privacy_report
    report = dataclasses.replace(report, public=report.public + (f"the autoencoder, trained on {adapter.public_description}",))
    result = ImageRunResult(fid, cas, report, grid, seconds)
    payload = {
        "config": asdict(config), "fid": fid, "cas": cas, "epsilon": report.epsilon if math.isfinite(report.epsilon) else "inf",
        "noise_multiplier": report.noise_multiplier, "seconds": seconds, "public": adapter.public_description,
        "autoencoder_training_seconds": adapter.training_seconds, "torch": torch.__version__,
    }
    (out / f"results_{tag}.json").write_text(json.dumps(payload, indent=2) + "\n")
    return result

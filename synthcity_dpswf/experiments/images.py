"""``dpswf images``: private image generation through a public codec (the paper's Sec. 5).

The private images (the seeded private half of the training set, or all of it when the codec needs none of it)
are encoded to unit latents, each with its label (one record = one (image, label) pair, released per class by
the default projected-histogram release): the only data the generator touches. What encodes it is the run's ``codec``, each a different public-data
assumption, named in the report and the results:

- ``"public-half"`` (the paper's): an autoencoder trained on the other half of the same training set (or a
  checkpoint trained on exactly that half; one of another split is refused);
- ``"other-dataset"``: the same autoencoder trained on the whole training set of the other dataset
  (FashionMNIST for MNIST and the other way round), so that no image of the private distribution outside
  the private set is used;
- ``"dct"``: a fixed DCT codec, trained on nothing: no public data at all;
- ``"private-pca"``: a linear codec learned from the private images and paid for (the top eigenvectors of their
  noisy second moment, ``codec_share`` of the budget; privacy.md, "A private image codec"): no public data.

The first codec releases the seeded private half; the others, which need no image of the training set, release
the whole training set (``split_training_set``). Samples are decoded to images and scored with FID and precision / recall (Inception features, against
the test set) and CAS (an MLP and a small CNN, each trained on the generated pairs and tested on real ones).
"""

from __future__ import annotations

import dataclasses
import json
import math
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from synthcity_dpswf.datasets import DATASET_CLASSES, IMAGE_LOADERS
from synthcity_dpswf.evaluation import (
    InceptionFeatures,
    cached_inception_features,
    classification_accuracies,
    fid_precision_recall,
    save_labelled_grid,
)
from synthcity_dpswf.models import DPSWGen
from synthcity_dpswf.privacy import PrivacyReport
from synthcity_dpswf.recipes.images import (
    ImageRunConfig,
    build_generator,
    check_public_split,
    codec_assumption,
    codec_entry,
    codec_order,
    composed_report,
    fit_releases,
    load_other_training_set,
    plan_images,
    resolved_device,
    run_budget,
    split_training_set,
    uses_other_dataset,
    uses_public_split,
)


@dataclass(frozen=True)
class ImageRunResult:
    """What a run measured, and where it wrote its files: ``cas`` holds one accuracy per classifier of
    ``CLASSIFIERS``; ``fid``, ``precision`` and ``recall`` are ``None`` without an Inception file."""

    fid: float | None
    precision: float | None
    recall: float | None
    cas: dict[str, float]
    report: PrivacyReport
    grid: Path
    seconds: dict[str, float]


def run_images(
    config: ImageRunConfig,
    data_root: Path,
    out: Path,
    inception: Path | None,
    progress: bool = True,
    download: bool = False,
) -> ImageRunResult:
    """The whole pipeline; writes the grid, ``results_*.json`` and (autoencoder codecs) the checkpoint under ``out``.
    ``download``: fetch the datasets into ``data_root`` with torchvision when they are not there (off by default).

    Checks the configuration, and that the other dataset's files are there for ``codec="other-dataset"``,
    before it reads the private dataset. The files of a ``codec`` other than ``"public-half"`` carry its name.
    """
    if config.dataset not in IMAGE_LOADERS:
        raise ValueError(f"dataset must be one of {sorted(IMAGE_LOADERS)}, got {config.dataset!r}.")
    codec_entry(config.codec)  # a codec the registry has, or ValueError naming those there are
    if inception is not None and config.fid_samples > config.n_samples:
        raise ValueError(
            f"FID scores fid_samples = {config.fid_samples} generated images but n_samples is {config.n_samples}: "
            "raise n_samples, lower fid_samples, or set it to 0 (no FID)."
        )
    if config.codec_share is not None and not 0 < config.codec_share < 1:
        raise ValueError(f"codec_share must lie in (0, 1), got {config.codec_share!r}.")
    if config.refiner_epochs < 0:
        raise ValueError(f"refiner_epochs must be 0 (no refiner) or a positive integer, got {config.refiner_epochs!r}.")
    if config.pca_components < 1:
        raise ValueError(f"pca_components must be a positive integer, got {config.pca_components!r}.")
    if config.start not in ("gaussian", "public"):
        raise ValueError(f"start must be 'gaussian' or 'public', got {config.start!r}.")
    if config.device not in ("auto", "cpu") and not config.device.startswith("cuda"):
        raise ValueError(f"device must be 'auto', 'cpu' or 'cuda' (or 'cuda:N'), got {config.device!r}.")
    if config.device.startswith("cuda") and not torch.cuda.is_available():
        raise ValueError(f"device {config.device!r} was asked for but torch sees no CUDA device: use 'auto' or 'cpu'.")
    check_public_split(config.codec, config.neighbouring)
    config = dataclasses.replace(config, device=resolved_device(config.device))
    if config.start == "public" and not uses_public_split(config.codec):
        raise ValueError(
            f"start 'public' draws the particles from public images of {config.dataset}, and codec {config.codec!r} "
            "assumes none: use start 'gaussian', or codec 'public-half'."
        )
    seconds: dict[str, float] = {}
    other = load_other_training_set(config.dataset, data_root, download) if uses_other_dataset(config.codec) else None
    images, labels = IMAGE_LOADERS[config.dataset](data_root, train=True, download=download)
    test_images, test_labels = IMAGE_LOADERS[config.dataset](data_root, train=False, download=download)
    public, private = split_training_set(config.codec, len(images), config.seed)
    model = build_generator(config, progress)
    started = time.perf_counter()
    order = codec_order(config, images, public, private, out, progress, other)
    plan = plan_images(images[private], labels[private], DATASET_CLASSES[config.dataset], run_budget(config), model,
                       order)
    codec = plan.codec
    seconds["autoencoder"] = time.perf_counter() - started

    started = time.perf_counter()
    model = fit_releases(model, plan)
    seconds["fit"] = time.perf_counter() - started
    started = time.perf_counter()
    if config.start == "public" and not isinstance(model, DPSWGen):
        chosen = torch.randperm(len(public), generator=torch.Generator().manual_seed(config.seed))[: config.n_samples]
        init = (codec.encode(images[public][chosen]).to(config.device), labels[public][chosen].to(config.device))
        generated_latents, generated_labels = model.sample_labelled(len(chosen), init=init)
    else:
        generated_latents, generated_labels = model.sample_labelled(config.n_samples)
    generated, generated_labels = codec.decode(generated_latents.cpu()), generated_labels.cpu()
    seconds["generate"] = time.perf_counter() - started

    started = time.perf_counter()
    cas = classification_accuracies(generated, generated_labels, test_images, test_labels, seed=config.seed,
                                    device=config.device)
    seconds["cas"] = time.perf_counter() - started
    fid = precision = recall = None
    if inception is not None and config.fid_samples > 0:
        started = time.perf_counter()
        network = InceptionFeatures(inception).to(config.device)
        count = config.fid_samples
        real_features = cached_inception_features(test_images[:count], network, inception, out / f"inception_{config.dataset}_test_{count}.pt")
        fid, precision, recall = fid_precision_recall(real_features, generated[:count], network)
        seconds["fid"] = time.perf_counter() - started

    suffix = "" if config.codec == ImageRunConfig.codec else "_" + config.codec.replace("-", "_")  # the default: none
    suffix += "" if config.neighbouring.n_is_public else "_add_remove"
    tag = f"{config.dataset}_{config.generator}_{config.release}_eps{config.epsilon:g}_{config.start}{suffix}"
    rows = {f"label {label}": generated[generated_labels == label][:10] for label in range(plan.n_classes)}
    grid = save_labelled_grid(
        rows, [f"sample {index + 1}" for index in range(10)], out / f"grid_{tag}.png",
        title=f"{config.generator}, {config.release} release, epsilon = {config.epsilon:g}, codec {config.codec}",
    )
    assumption = codec_assumption(config.codec, config.dataset)
    public_line = f"{assumption} ({codec.public_description})"
    report = composed_report(model.privacy_report, plan.paid)
    report = dataclasses.replace(report, public=report.public + (public_line,))
    result = ImageRunResult(fid, precision, recall, cas, report, grid, seconds)
    payload = {
        "config": asdict(config), "codec": config.codec, "assumption": assumption, "cas": cas,
        "fid": fid, "fid_images": config.fid_samples, "precision": precision, "recall": recall,
        "epsilon": report.epsilon if math.isfinite(report.epsilon) else "inf",
        "noise_multiplier": report.noise_multiplier, "neighbouring": report.neighbouring,
        "other_adjacency": None if report.other is None else str(report.other), "seconds": seconds, "public": public_line,
        "autoencoder_training_seconds": codec.training_seconds, "torch": torch.__version__,
    }
    (out / f"results_{tag}.json").write_text(json.dumps(payload, indent=2) + "\n")
    return result

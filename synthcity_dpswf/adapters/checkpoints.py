"""Autoencoder checkpoints: one naming, and load-or-train bound to the public images they were trained on.

``dpswf images`` and every image benchmark keep their autoencoders through ``autoencoder_checkpoint`` and
``load_or_train_autoencoder``, so a checkpoint trained once (on a public split, with its refiner) is found again by
any of them, and one of another split is refused (``PublicSplit``) rather than encode private records it saw.
"""

from __future__ import annotations

from pathlib import Path

import torch

from synthcity_dpswf.adapters.image_latent import (
    MNIST_LATENT_DIM, REFINER_ADVERSARIAL_WEIGHT, AutoencoderCodec, PublicSplit, RefinerSettings, refiner_adversarial_weight,
)
from synthcity_dpswf.datasets import DATASET_NAMES


def autoencoder_checkpoint(folder: Path, images: str, n_images: int, latent_dim: int, epochs: int, seed: int) -> Path:
    """The file under ``folder`` of the autoencoder trained on ``n_images`` images of ``images`` (a dataset name,
    or ``"<dataset>_whole_training_set"``) with latent size ``latent_dim``, ``epochs`` epochs and ``seed``:
    ``autoencoder_<images>_<n_images>_latent<latent_dim>_<epochs>ep_seed<seed>.pt``. Its refiner, if any, is kept
    inside it."""
    return Path(folder) / f"autoencoder_{images}_{n_images}_latent{latent_dim}_{epochs}ep_seed{seed}.pt"


def load_or_train_autoencoder(
    checkpoint: Path, public_images: torch.Tensor, public_split: PublicSplit, epochs: int, seed: int, description: str,
    progress: bool, device: str | torch.device | None = None, latent_dim: int = MNIST_LATENT_DIM,
    refiner_epochs: int = 0, refiner_weight: float = REFINER_ADVERSARIAL_WEIGHT,
) -> AutoencoderCodec:
    """Load ``checkpoint`` if it exists, else train the MNIST autoencoder (``latent_dim``) on the public images
    and save it; with ``refiner_epochs`` > 0 its refiner too (``AutoencoderCodec.fit_refiner`` at its defaults
    but for the adversarial weight ``refiner_weight``, on the same public images; kept in the checkpoint, and
    trained again when the kept one was trained otherwise: ``RefinerSettings``), with 0 none is used.

    The checkpoint is bound to ``public_split`` (the split ``public_images`` come from): one trained on another
    split, or recording none, raises ``ValueError`` rather than encode private records it was trained on. One
    with another latent size raises ``ValueError`` too.
    """
    if checkpoint.exists():
        codec = AutoencoderCodec.load(checkpoint, device=device, public_split=public_split)
        if codec.latent_dim != latent_dim:
            raise ValueError(
                f"the autoencoder checkpoint {checkpoint} has latent size {codec.latent_dim}, not the {latent_dim} "
                "asked for; delete it, or point to another output folder."
            )
    else:
        codec = AutoencoderCodec(
            "mnist", latent_dim=latent_dim, channels=public_images.shape[1], device=device, progress=progress
        )
        codec.fit(public_images, epochs=epochs, seed=seed, description=description, public_split=public_split)
        checkpoint.parent.mkdir(parents=True, exist_ok=True)
        codec.save(checkpoint)
    if refiner_epochs == 0:
        codec.refiner, codec.refiner_settings, codec.refiner_description = None, None, ""
    elif codec.refiner is None or codec.refiner_settings != RefinerSettings(refiner_epochs, refiner_weight):
        codec.progress = progress
        codec.fit_refiner(public_images, epochs=refiner_epochs, adversarial_weight=refiner_weight, seed=seed)
        codec.save(checkpoint)
    return codec


def public_half_autoencoder(
    folder: Path, dataset: str, images: torch.Tensor, public: torch.Tensor, epochs: int, seed: int, progress: bool,
    device: str | torch.device | None = None, latent_dim: int = MNIST_LATENT_DIM, refiner_epochs: int = 0,
) -> AutoencoderCodec:
    """The autoencoder of ``load_or_train_autoencoder`` on the public images ``images[public]`` of ``dataset``'s
    training set ``images``, kept under ``folder`` by ``autoencoder_checkpoint`` and bound to that split; its
    refiner at ``dataset``'s adversarial weight (``refiner_adversarial_weight``)."""
    checkpoint = autoencoder_checkpoint(folder, dataset, len(public), latent_dim, epochs, seed)
    return load_or_train_autoencoder(
        checkpoint, images[public], PublicSplit.of(dataset, len(images), public), epochs, seed,
        f"the public half of the {dataset} training set", progress, device, latent_dim, refiner_epochs,
        refiner_adversarial_weight(dataset),
    )


def whole_training_set_autoencoder(
    folder: Path, dataset: str, images: torch.Tensor, epochs: int, seed: int, progress: bool,
    device: str | torch.device | None = None, latent_dim: int = MNIST_LATENT_DIM, refiner_epochs: int = 0,
) -> AutoencoderCodec:
    """The autoencoder of ``load_or_train_autoencoder`` on the whole training set ``images`` of ``dataset`` (the
    ``"other-dataset"`` codec of a run on another dataset), bound to that set: a checkpoint of any public half is
    refused. Its refiner at ``dataset``'s adversarial weight (``refiner_adversarial_weight``)."""
    split = PublicSplit.of(dataset, len(images), torch.arange(len(images)))
    checkpoint = autoencoder_checkpoint(folder, f"{dataset}_whole_training_set", len(images), latent_dim, epochs, seed)
    return load_or_train_autoencoder(
        checkpoint, images, split, epochs, seed, f"the whole {DATASET_NAMES.get(dataset, dataset)} training set", progress, device, latent_dim,
        refiner_epochs, refiner_adversarial_weight(dataset),
    )

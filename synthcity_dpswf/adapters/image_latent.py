r"""Images <-> unit-sphere latents through an autoencoder trained on public images.

The flows run in the latent space of an autoencoder fitted on a public split (the paper's Sec. 5.4):
:math:`y = E(x) / \|E(x)\|` lies on the unit sphere (radius 1, so the record release has
:math:`\Delta = 2`), and generated latents are decoded by :math:`D(y / \|y\|)`. The autoencoder is trained
with the same normalisation between encoder and decoder, on images in [0, 1]. Training on private images
would break the guarantee: ``fit`` must only ever see public ones.

Image ranges are explicit: the autoencoder works in [0, 1]; synthcity's ``ImageDataLoader`` yields [-1, 1]
(``from_synthcity_range`` / ``to_synthcity_range``).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Callable

import torch
from torch import nn
from tqdm.auto import tqdm

from synthcity_dpswf.adapters.autoencoders import dcgan_autoencoder, mnist_autoencoder
from synthcity_dpswf.math.checks import check_positive, check_positive_int

ARCHITECTURES: dict[str, Callable[..., tuple[nn.Module, nn.Module]]] = {
    "mnist": mnist_autoencoder,
    "dcgan": dcgan_autoencoder,
}


def from_synthcity_range(images: torch.Tensor) -> torch.Tensor:
    """synthcity's [-1, 1] images to the autoencoder's [0, 1]."""
    return ((images + 1) / 2).clamp(0, 1)


def to_synthcity_range(images: torch.Tensor) -> torch.Tensor:
    """[0, 1] images to synthcity's [-1, 1]."""
    return images * 2 - 1


def check_images(images: torch.Tensor) -> None:
    """Raise ``ValueError`` unless ``images`` is a finite float ``(n, C, H, W)`` tensor in [0, 1]."""
    if not isinstance(images, torch.Tensor) or images.ndim != 4 or not images.is_floating_point():
        raise ValueError("images must be a float tensor of shape (n, channels, height, width).")
    if images.shape[0] == 0:
        raise ValueError("images is empty; pass at least one image.")
    if not bool(torch.isfinite(images).all()) or float(images.min()) < 0 or float(images.max()) > 1:
        raise ValueError(
            "images must lie in [0, 1]; convert synthcity's [-1, 1] images with from_synthcity_range()."
        )


class ImageLatentAdapter:
    """An autoencoder between images in [0, 1] and unit-norm latents.

    Args:
        architecture: ``"mnist"`` (conv, 32 x 32, latent 8) or ``"dcgan"`` (64 x 64, latent 48), or ``None``
            when ``modules`` is given.
        latent_dim: latent size (default: 8 for "mnist", 48 for "dcgan").
        channels: image channels.
        modules: any ``(encoder, decoder)`` pair of ``nn.Module`` instead of a named architecture.
        device: where training and coding run (default: CUDA when present).
        progress: show progress bars.
    """

    def __init__(
        self,
        architecture: str | None = "mnist",
        latent_dim: int | None = None,
        channels: int = 1,
        modules: tuple[nn.Module, nn.Module] | None = None,
        device: str | torch.device | None = None,
        progress: bool = False,
    ) -> None:
        custom = modules is not None
        if modules is None:
            if architecture not in ARCHITECTURES:
                raise ValueError(f"architecture must be one of {sorted(ARCHITECTURES)} or pass modules=(encoder, decoder).")
            latent_dim = latent_dim or (8 if architecture == "mnist" else 48)
            modules = ARCHITECTURES[architecture](latent_dim=latent_dim, channels=channels)
        elif latent_dim is None:
            raise ValueError("with custom modules, pass latent_dim (the encoder's output size).")
        self.architecture = None if custom else architecture
        self.latent_dim = int(latent_dim)  # type: ignore[arg-type]
        self.channels = channels
        self.device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
        self.encoder, self.decoder = (module.to(self.device) for module in modules)
        self.progress = progress
        self.training_seconds = 0.0
        self.public_description = "not trained"

    @property
    def dim(self) -> int:
        """The record dimension: the latent size."""
        return self.latent_dim

    def _latents(self, images: torch.Tensor) -> torch.Tensor:
        return nn.functional.normalize(self.encoder(images), dim=1)

    def fit(
        self,
        public_images: torch.Tensor,
        epochs: int = 10,
        batch_size: int = 128,
        learning_rate: float = 1e-3,
        seed: int = 0,
        description: str = "public images",
    ) -> "ImageLatentAdapter":
        """Train the autoencoder (MSE, Adam) on PUBLIC images in [0, 1], latents normalised in between."""
        check_images(public_images)
        check_positive_int("epochs", epochs)
        check_positive_int("batch_size", batch_size)
        check_positive("learning_rate", learning_rate)
        started = time.perf_counter()
        parameters = list(self.encoder.parameters()) + list(self.decoder.parameters())
        optimiser = torch.optim.Adam(parameters, lr=learning_rate)
        generator = torch.Generator().manual_seed(seed)
        self.encoder.train()
        self.decoder.train()
        bar = tqdm(range(epochs), disable=None if self.progress else True, desc="autoencoder")
        for _ in bar:
            order = torch.randperm(len(public_images), generator=generator)
            for start in range(0, len(order), batch_size):
                batch = public_images[order[start : start + batch_size]].to(self.device)
                loss = nn.functional.mse_loss(self.decoder(self._latents(batch)), batch)
                optimiser.zero_grad()
                loss.backward()
                optimiser.step()
            bar.set_postfix(mse=float(loss))
        self.encoder.eval()
        self.decoder.eval()
        self.training_seconds = time.perf_counter() - started
        self.public_description = f"{description} ({len(public_images)} images, {epochs} epochs)"
        return self

    @torch.no_grad()
    def encode(self, images: torch.Tensor, batch_size: int = 1024) -> torch.Tensor:
        """Unit-norm latents ``(n, latent_dim)`` of images in [0, 1], on CPU."""
        check_images(images)
        self.encoder.eval()
        parts = [self._latents(images[i : i + batch_size].to(self.device)).cpu() for i in range(0, len(images), batch_size)]
        return torch.cat(parts)

    @torch.no_grad()
    def decode(self, latents: torch.Tensor, batch_size: int = 1024) -> torch.Tensor:
        """Images in [0, 1] from latents (normalised first: the flow's output need not be unit-norm), on CPU."""
        if latents.ndim != 2 or latents.shape[1] != self.latent_dim:
            raise ValueError(f"latents must have shape (n, {self.latent_dim}), got {tuple(latents.shape)}.")
        self.decoder.eval()
        unit = nn.functional.normalize(latents.float(), dim=1)
        return torch.cat([self.decoder(unit[i : i + batch_size].to(self.device)).cpu() for i in range(0, len(unit), batch_size)])

    def save(self, path: str | Path) -> None:
        """Checkpoint the trained autoencoder (weights and description; no data)."""
        torch.save(
            {
                "architecture": self.architecture, "latent_dim": self.latent_dim, "channels": self.channels,
                "encoder": self.encoder.state_dict(), "decoder": self.decoder.state_dict(),
                "public_description": self.public_description, "training_seconds": self.training_seconds,
            },
            path,
        )

    @classmethod
    def load(cls, path: str | Path, device: str | torch.device | None = None) -> "ImageLatentAdapter":
        """Load a checkpoint written by ``save`` (named architectures only)."""
        state = torch.load(path, map_location="cpu", weights_only=False)
        if state["architecture"] is None:
            raise ValueError("this checkpoint holds custom modules: rebuild them and load their state dicts.")
        adapter = cls(state["architecture"], state["latent_dim"], state["channels"], device=device)
        adapter.encoder.load_state_dict(state["encoder"])
        adapter.decoder.load_state_dict(state["decoder"])
        adapter.encoder.eval()
        adapter.decoder.eval()
        adapter.public_description = state["public_description"]
        adapter.training_seconds = state["training_seconds"]
        return adapter

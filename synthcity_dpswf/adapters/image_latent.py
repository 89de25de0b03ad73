r"""Images <-> unit-sphere latents through an autoencoder trained on public images.

The flows run in the latent space of an autoencoder fitted on a public split (the paper's Sec. 5.4):
:math:`y = E(x) / \|E(x)\|` lies on the unit sphere (radius 1, so the record release has
:math:`\Delta = 2`), and generated latents are decoded by :math:`D(y / \|y\|)`. The autoencoder is trained
with the same normalisation between encoder and decoder, on images in [0, 1]. Training on private images
would break the guarantee: ``fit`` must only ever see public ones.

A checkpoint can record the public split it was trained on (``PublicSplit``); loading with the expected split
refuses a checkpoint of any other split, whose training images would partly be private records of the run.

Image ranges are explicit: the autoencoder works in [0, 1]; synthcity's ``ImageDataLoader`` yields [-1, 1]
(``from_synthcity_range`` / ``to_synthcity_range``).
"""

from __future__ import annotations

import copy
import hashlib
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Callable, Mapping

import torch
from torch import nn
from tqdm.auto import tqdm

from synthcity_dpswf.adapters.autoencoders import dcgan_autoencoder, mnist_autoencoder, patch_discriminator, refiner_network
from synthcity_dpswf.math.checks import check_non_negative, check_positive, check_positive_int

MNIST_LATENT_DIM = 16
"""Latent size the package trains for 32 x 32 images when none is given (``dpswf images``, the image plugins):
with 10 epochs it was chosen on a validation split of MNIST's training set by the CAS of the reconstructions, over
the paper's latent 8 and 5 epochs.
``AutoencoderCodec("mnist")`` alone keeps the paper's 8."""

REFINER_EPOCHS = 5
REFINER_ADVERSARIAL_WEIGHT = 0.2
REFINER_LATENT_NOISE = 0.0
REFINER_AVERAGE_DECAY = 0.99
"""The refiner's training (``AutoencoderCodec.fit_refiner``), chosen on public images only: refined on 25,000 of
MNIST's public half, scored by FID against the other 5,000. Weight 0.2: a lower FID of refined reconstructions than
at 0.05 or without a refiner. Decay 0.99 (weights averaged over about the last 100 steps): a lower FID of decoded
flow samples than with the last weights, on each of two training seeds; latent noise (0.05 tried) was worse on
average over the seeds and is left off (``benchmarks/studies/refiner_validation.py``,
``benchmarks/results/refiner_validation.md``)."""

REFINER_ADVERSARIAL_WEIGHTS: Mapping[str, float] = MappingProxyType({"mnist": REFINER_ADVERSARIAL_WEIGHT, "fashion_mnist": 0.05})
"""The refiner's adversarial weight per dataset its public images come from (``refiner_adversarial_weight``), each
chosen on that dataset's public half only (25,000 refining images, 5,000 held out, the flow's decoded samples
scored by FID; ``benchmarks/studies/refiner_validation.py --dataset``). FashionMNIST: 0.05 gives a lower FID and a
higher recall than 0.2 on each of two training seeds, at the same CNN CAS
(``benchmarks/results/refiner_validation_fashion_mnist.md``). MNIST at 0.05 stays within its training seeds' spread
of 0.2, so it keeps 0.2 (``benchmarks/results/refiner_validation.md``)."""


def refiner_adversarial_weight(dataset: str) -> float:
    """The refiner's adversarial weight for public images of ``dataset`` (``REFINER_ADVERSARIAL_WEIGHTS``), and
    ``REFINER_ADVERSARIAL_WEIGHT`` (chosen on MNIST) for a dataset none was chosen on."""
    return REFINER_ADVERSARIAL_WEIGHTS.get(dataset, REFINER_ADVERSARIAL_WEIGHT)


@dataclass(frozen=True)
class RefinerSettings:
    """How a refiner was trained (``AutoencoderCodec.fit_refiner``'s arguments that shape it): kept in the
    checkpoint, so that one trained otherwise than asked is trained again (``load_or_train_autoencoder``)."""

    epochs: int = REFINER_EPOCHS
    adversarial_weight: float = REFINER_ADVERSARIAL_WEIGHT
    latent_noise: float = REFINER_LATENT_NOISE
    average_decay: float = REFINER_AVERAGE_DECAY


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


def is_public_autoencoder(codec: object) -> bool:
    """Whether ``codec`` is an ``AutoencoderCodec``: a codec a user trains on public images, which a run pays nothing
    for (a codec released from private images, such as ``PrivatePCAImageCodec``, is not one)."""
    return isinstance(codec, AutoencoderCodec)


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


@dataclass(frozen=True)
class PublicSplit:
    """Which images of a training set are public: the ones an autoencoder checkpoint may be trained on.

    An autoencoder is public only for a run whose public split it was trained on: with another split (another
    seed), part of its training images are private records of that run, and encoding them through it spends
    privacy that no report accounts for. ``sha256`` hashes the dataset name, the number of training images and
    the sorted public indices, so two splits have equal hashes exactly when they name the same images.

    Build one with ``PublicSplit.of``.
    """

    dataset: str
    n_images: int
    n_public: int
    sha256: str

    @classmethod
    def of(cls, dataset: str, n_images: int, public_indices: torch.Tensor) -> "PublicSplit":
        """The split whose public images are ``public_indices`` (any order) of the ``n_images`` of ``dataset``."""
        check_positive_int("n_images", n_images)
        indices = torch.sort(torch.as_tensor(public_indices).flatten().long()).values
        if len(indices) == 0 or int(indices[0]) < 0 or int(indices[-1]) >= n_images:
            raise ValueError(f"public_indices must be a non-empty set of indices in 0..{n_images - 1}.")
        if bool((indices[1:] == indices[:-1]).any()):
            raise ValueError("public_indices has repeated indices; pass each public image once.")
        digest = hashlib.sha256(f"{dataset}\n{n_images}\n".encode())
        digest.update(indices.numpy().astype("<i8").tobytes())
        return cls(dataset, n_images, len(indices), digest.hexdigest())

    def __str__(self) -> str:
        return f"{self.n_public} of the {self.n_images} {self.dataset} training images, sha256 {self.sha256[:12]}"


def check_public_split(path: str | Path, found: PublicSplit | None, expected: PublicSplit) -> None:
    """Raise ``ValueError`` unless the checkpoint at ``path``, trained on ``found``, was trained on ``expected``."""
    if found is None:
        raise ValueError(
            f"the autoencoder checkpoint {path} does not record the public split it was trained on (it predates "
            f"that record), so nothing shows it was trained on this run's public split ({expected}); retrain it: "
            "delete the file (or point to another checkpoint; dpswf images: another --out) and run again."
        )
    if found != expected:
        differing = [
            f"{name} {getattr(found, name)!r} instead of {getattr(expected, name)!r}"
            for name in ("dataset", "n_images", "n_public") if getattr(found, name) != getattr(expected, name)
        ]
        what = ", ".join(differing) if differing else "other public indices of the same images"
        raise ValueError(
            f"the autoencoder checkpoint {path} was trained on another public split than this run's ({what}; "
            f"sha256 {found.sha256[:12]} instead of {expected.sha256[:12]}), so its training images may include "
            "private records of this run. Delete the file to retrain on this split, point to another checkpoint "
            "(dpswf images: another --out), or use the split that wrote it (dpswf images: the same --seed)."
        )


class AutoencoderCodec:
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
        self.trained_on = "not trained"
        self.public_split: PublicSplit | None = None
        self.refiner: nn.Module | None = None
        self.refiner_settings: RefinerSettings | None = None
        self.refiner_description = ""

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
        public_split: PublicSplit | None = None,
    ) -> "AutoencoderCodec":
        """Train the autoencoder (MSE, Adam) on PUBLIC images in [0, 1], latents normalised in between.

        ``public_split`` names the split the images come from; ``save`` stores it, so that ``load`` can refuse
        the checkpoint for a run with another split.
        """
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
        self.trained_on = f"{description} ({len(public_images)} images, {epochs} epochs)"
        self.public_split = public_split
        return self

    def fit_refiner(
        self,
        public_images: torch.Tensor,
        epochs: int = REFINER_EPOCHS,
        adversarial_weight: float = REFINER_ADVERSARIAL_WEIGHT,
        latent_noise: float = REFINER_LATENT_NOISE,
        average_decay: float = REFINER_AVERAGE_DECAY,
        batch_size: int = 128,
        learning_rate: float = 2e-4,
        seed: int = 0,
    ) -> "AutoencoderCodec":
        r"""Train a refiner on PUBLIC images that sharpens what the trained autoencoder decodes.

        For a public image :math:`x` and its reconstruction :math:`y = \mathrm{dec}(\mathrm{enc}(x))`, the refiner
        :math:`R` (``refiner_network``) outputs :math:`\hat x = \mathrm{clip}_{[0, 1]}(y + R(y))` and minimises
        :math:`\|\hat x - x\|_1 + \lambda\, \mathrm{softplus}(-D(\hat x))` against a discriminator :math:`D`
        (``patch_discriminator``) that minimises :math:`\mathrm{softplus}(-D(x)) + \mathrm{softplus}(D(\hat x))`
        (the non-saturating GAN loss); Adam, both at ``learning_rate``, betas (0.5, 0.999). ``decode`` then returns
        :math:`\hat x`. Only public images and the public autoencoder are read, so decoding generated latents
        through the refiner stays post-processing. Defaults: ``REFINER_EPOCHS`` and the constants beside it.

        ``latent_noise`` :math:`s > 0` decodes :math:`\mathrm{dec}(\mathrm{normalize}(\mathrm{enc}(x) + s\,\xi))`,
        :math:`\xi \sim N(0, I)` fresh each step, instead of :math:`\mathrm{dec}(\mathrm{enc}(x))`: inputs as far
        from the public latents as a flow's samples are. ``average_decay`` :math:`\beta > 0` decodes through the
        bias-corrected exponential average of the weights :math:`R_1, \dots, R_T` after each of the :math:`T` steps,
        :math:`\bar R = \frac{1 - \beta}{1 - \beta^T} \sum_{t=1}^{T} \beta^{T - t} R_t` (0: the last weights).
        """
        check_images(public_images)
        check_positive_int("epochs", epochs)
        check_positive("adversarial_weight", adversarial_weight)
        check_non_negative("latent_noise", latent_noise)
        if not 0 <= average_decay < 1:
            raise ValueError(f"average_decay must lie in [0, 1) (0: the last weights, no average), got {average_decay!r}.")
        if self.trained_on == "not trained":
            raise ValueError("train the autoencoder first (fit), then its refiner on the same public images.")
        started = time.perf_counter()
        latents = self.encode(public_images)
        reconstructions = self._decoded(latents) if latent_noise == 0 else None
        generator = torch.Generator().manual_seed(seed)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            refiner, critic = refiner_network(self.channels).to(self.device), patch_discriminator(self.channels).to(self.device)
        refiner_optimiser = torch.optim.Adam(refiner.parameters(), lr=learning_rate, betas=(0.5, 0.999))
        averaged = copy.deepcopy(refiner)  # conv + ReLU only: its parameters are its whole state
        with torch.no_grad():
            for kept in averaged.parameters():
                kept.zero_()
        steps = 0
        critic_optimiser = torch.optim.Adam(critic.parameters(), lr=learning_rate, betas=(0.5, 0.999))
        for _ in tqdm(range(epochs), disable=None if self.progress else True, desc="refiner"):
            order = torch.randperm(len(public_images), generator=generator)
            for start in range(0, len(order), batch_size):
                batch = order[start : start + batch_size]
                real = public_images[batch].to(self.device)
                if reconstructions is None:
                    noise = torch.randn(len(batch), self.latent_dim, generator=generator)
                    decoded = self._decoded(latents[batch] + latent_noise * noise).to(self.device)
                else:
                    decoded = reconstructions[batch].to(self.device)
                refined = (decoded + refiner(decoded)).clamp(0, 1)
                critic_loss = (nn.functional.softplus(-critic(real)).mean()
                               + nn.functional.softplus(critic(refined.detach())).mean())
                critic_optimiser.zero_grad()
                critic_loss.backward()
                critic_optimiser.step()
                loss = (refined - real).abs().mean() + adversarial_weight * nn.functional.softplus(-critic(refined)).mean()
                refiner_optimiser.zero_grad()
                loss.backward()
                refiner_optimiser.step()
                steps += 1
                with torch.no_grad():
                    for kept, current in zip(averaged.parameters(), refiner.parameters()):
                        kept.mul_(average_decay).add_(current, alpha=1 - average_decay)
        with torch.no_grad():
            for kept in averaged.parameters():
                kept.div_(1 - average_decay**steps)
        self.refiner = averaged.eval()
        self.training_seconds += time.perf_counter() - started
        self.refiner_settings = RefinerSettings(epochs, adversarial_weight, latent_noise, average_decay)
        noise = f", latent noise {latent_noise:g}" if latent_noise > 0 else ""
        average = f", weights averaged with decay {average_decay:g}" if average_decay > 0 else ""
        self.refiner_description = (f"refined by a network trained on the same public images (L1 + adversarial, "
                                    f"weight {adversarial_weight:g}{noise}{average}, {epochs} epochs)")
        return self

    @torch.no_grad()
    def encode(self, images: torch.Tensor, batch_size: int = 1024) -> torch.Tensor:
        """Unit-norm latents ``(n, latent_dim)`` of images in [0, 1], on CPU."""
        check_images(images)
        self.encoder.eval()
        parts = [self._latents(images[i : i + batch_size].to(self.device)).cpu() for i in range(0, len(images), batch_size)]
        return torch.cat(parts)

    @torch.no_grad()
    def _decoded(self, latents: torch.Tensor, batch_size: int = 1024) -> torch.Tensor:
        """The decoder's images of latents (normalised first), on CPU, without the refiner."""
        if latents.ndim != 2 or latents.shape[1] != self.latent_dim:
            raise ValueError(f"latents must have shape (n, {self.latent_dim}), got {tuple(latents.shape)}.")
        self.decoder.eval()
        unit = nn.functional.normalize(latents.float(), dim=1)
        return torch.cat([self.decoder(unit[i : i + batch_size].to(self.device)).cpu() for i in range(0, len(unit), batch_size)])

    @torch.no_grad()
    def decode(self, latents: torch.Tensor, batch_size: int = 1024) -> torch.Tensor:
        """Images in [0, 1] from latents (normalised first: the flow's output need not be unit-norm), on CPU, through
        the refiner when one was trained (``fit_refiner``)."""
        images = self._decoded(latents, batch_size)
        if self.refiner is None:
            return images
        return torch.cat([
            (part + self.refiner(part)).clamp(0, 1).cpu()
            for part in (images[i : i + batch_size].to(self.device) for i in range(0, len(images), batch_size))
        ])

    @property
    def public_description(self) -> str:
        """What the codec was trained on (``trained_on``), and its refiner if any: the report's public line."""
        return self.trained_on + (f"; {self.refiner_description}" if self.refiner is not None else "")

    def save(self, path: str | Path) -> None:
        """Checkpoint the trained autoencoder (weights, description and public split; no data)."""
        torch.save(
            {
                "architecture": self.architecture, "latent_dim": self.latent_dim, "channels": self.channels,
                "encoder": self.encoder.state_dict(), "decoder": self.decoder.state_dict(),
                "public_description": self.trained_on, "training_seconds": self.training_seconds,
                "public_split": None if self.public_split is None else asdict(self.public_split),
                "refiner": None if self.refiner is None else self.refiner.state_dict(),
                "refiner_description": self.refiner_description,
                "refiner_settings": None if self.refiner_settings is None else asdict(self.refiner_settings),
            },
            path,
        )

    @classmethod
    def load(
        cls, path: str | Path, device: str | torch.device | None = None, public_split: PublicSplit | None = None
    ) -> "AutoencoderCodec":
        """Load a checkpoint written by ``save`` (named architectures only).

        With ``public_split`` (what a pipeline that splits the data itself must pass), a checkpoint trained on
        another split, or that records none, is refused with a ``ValueError``. Without it, the checkpoint is
        taken as public on the caller's word, as for a codec the caller trained on their own public data.
        """
        state = torch.load(path, map_location="cpu", weights_only=False)
        found = None if state.get("public_split") is None else PublicSplit(**state["public_split"])
        if public_split is not None:
            check_public_split(path, found, public_split)
        if state["architecture"] is None:
            raise ValueError("this checkpoint holds custom modules: rebuild them and load their state dicts.")
        codec = cls(state["architecture"], state["latent_dim"], state["channels"], device=device)
        codec.encoder.load_state_dict(state["encoder"])
        codec.decoder.load_state_dict(state["decoder"])
        codec.encoder.eval()
        codec.decoder.eval()
        codec.trained_on = state["public_description"]
        codec.training_seconds = state["training_seconds"]
        codec.public_split = found
        if state.get("refiner") is not None:
            codec.refiner = refiner_network(codec.channels).to(codec.device)
            codec.refiner.load_state_dict(state["refiner"])
            codec.refiner.eval()
            codec.refiner_description = state["refiner_description"]
            settings = state.get("refiner_settings")  # absent from checkpoints written before it was recorded
            codec.refiner_settings = None if settings is None else RefinerSettings(**settings)
        return codec

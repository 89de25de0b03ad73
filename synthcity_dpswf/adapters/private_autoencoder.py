r"""A convolutional autoencoder learned from the private images by DP-SGD and paid from the run's budget: the
``"private-autoencoder"`` codec (privacy.md, "A private image codec trained by DP-SGD").

The encoder maps a ``(C, H, W)`` image (H and W multiples of 8: MNIST's padded 32 x 32) to :math:`u = e(x) / \|e(x)\|` on the unit sphere of :math:`\mathbb{R}^d`
(:math:`e_1` when :math:`e(x) = 0`), the decoder maps a unit code back to pixels (a sigmoid); one record's loss is the
binary cross-entropy of its reconstruction through the sphere, :math:`\ell(x) = \mathrm{BCE}(\sigma(\mathrm{dec}(u)),
x)`. Both are trained together by ``privacy.dpsgd.train_dpsgd`` on the private images only: the releases are the
noisy clipped gradient sums, and the network is post-processing of them. Encoding the private images for the flow's
release is then a per-record map onto the unit sphere (the flow's sensitivity assumes only that), and decoding
generated codes is post-processing: a pixel is :math:`\sigma(t \cdot \mathrm{dec}(u))`, the decoder's logit at
temperature t (``DECODE_TEMPERATURE``; t = 1 is the Bernoulli mean the loss trains).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any, Literal
from pathlib import Path

import torch
from torch import nn
from torch.nn import functional

from synthcity_dpswf.math.checks import check_positive, check_positive_int
from synthcity_dpswf.adapters.image_latent import check_images
from synthcity_dpswf.privacy import PrivacyPart, ReleaseAccountant, REPLACE_ONE_PLD, REPLACE_ONE_RDP, secret_generator
from synthcity_dpswf.privacy.budget import Budget
from synthcity_dpswf.privacy.dpsgd import CLIPPED_GRADIENT_RADIUS, DPSGDSchedule, steps_for, train_dpsgd
from synthcity_dpswf.privacy.neighbouring import Adjacency


DECODE_TEMPERATURE = 4.0
r"""The decoder's logit temperature t: a decoded pixel is :math:`\sigma(t \cdot \mathrm{dec}(u))`. At t = 1 it is
each pixel's Bernoulli mean, which the cross-entropy trains: grey wherever a stroke's place is uncertain, so decoded
digits are blurred; t > 1 sharpens them towards the near-binary strokes of the images. Post-processing (it never
touches the training), chosen among 1, 2, 4 and 8 by FID on MNIST's validation split, the test split unread
(``benchmarks/studies/decode_temperature.py``, ``benchmarks/results/decode_temperature.md``)."""


@dataclass(frozen=True)
class PrivateAutoencoderSettings:
    """The codec's public settings: its latent size d and width (channels of the first convolution), DP-SGD's
    expected passes over the images (``epochs``), batch size b (under add/remove the Poisson rate is ``sample_rate``
    and b the nominal size the sums are divided by), under replace-one how batches are drawn (``replace_one_sampling``:
    ``"poisson"``, every image with probability q = b / n, accounted by the antipodal pair at 0.45 of the noise of
    ``"fixed"`` at MNIST's numbers, exactly b images, accounted by the replace-one RDP bound; privacy.md, "A private image codec trained
    by DP-SGD"), clipping norm C and Adam's learning rate; and
    how generated codes are decoded (``decode_temperature``, ``DECODE_TEMPERATURE``), which is not part of the
    training: it is left out of the settings a checkpoint is bound to (``training``) and of the repr its cache name
    is hashed from.

    The defaults are those every measured row ran with (``dpae:32:16:5`` in the image benchmarks): latent 32, width
    16, 5 expected epochs, batch 512, clip 1, Adam at 2e-3, each of latent, batch, clip and budget share chosen on a
    validation split (``benchmarks/results/dpsgd_codec_*_validation.md``). Epochs and width stay where a training on
    the CPU takes a practical time, which grows with both (``benchmarks/studies/dpsgd_codec_speed.py``,
    ``benchmarks/results/dpsgd_codec_speed.md``)."""

    latent_dim: int = 32
    width: int = 16
    epochs: float = 5.0
    batch_size: int = 512
    clip: float = 1.0
    learning_rate: float = 2e-3
    sample_rate: float = 0.01
    replace_one_sampling: Literal["poisson", "fixed"] = "poisson"
    seed: int = 0
    decode_temperature: float = field(default=DECODE_TEMPERATURE, repr=False)

    def __post_init__(self) -> None:
        check_positive_int("latent_dim", self.latent_dim)
        check_positive_int("width", self.width)
        check_positive("epochs", self.epochs)
        check_positive_int("batch_size", self.batch_size)
        check_positive("clip", self.clip)
        check_positive("learning_rate", self.learning_rate)
        check_positive("decode_temperature", self.decode_temperature)
        if not 0 < self.sample_rate <= 1:
            raise ValueError(f"sample_rate must lie in (0, 1], got {self.sample_rate!r}.")
        if self.replace_one_sampling not in ("poisson", "fixed"):
            raise ValueError(f"replace_one_sampling must be 'poisson' or 'fixed', got {self.replace_one_sampling!r}.")

    def training(self) -> dict[str, Any]:
        """The settings the training reads (all but ``decode_temperature``): what a checkpoint is bound to."""
        return {key: value for key, value in asdict(self).items() if key != "decode_temperature"}

    def schedule(self, n_images: int, neighbouring: Adjacency | str, noise_multiplier: float) -> DPSGDSchedule:
        """The DP-SGD schedule for ``n_images`` private images (n read only under replace-one, where it is public)."""
        if Adjacency.of(neighbouring).n_is_public:
            batch = min(self.batch_size, n_images)
            rate = batch / n_images
            return DPSGDSchedule(neighbouring, steps_for(self.epochs, rate), self.clip, noise_multiplier, batch,
                                 n_records=n_images, sample_rate=rate if self.replace_one_sampling == "poisson" else None)
        return DPSGDSchedule(neighbouring, steps_for(self.epochs, self.sample_rate), self.clip, noise_multiplier,
                             self.batch_size, sample_rate=self.sample_rate)


def conv_autoencoder(latent_dim: int, width: int, shape: tuple[int, int, int]) -> tuple[nn.Module, nn.Module]:
    """For ``(C, H, W)`` images: encoder, three stride-2 4 x 4 convolutions (w, 2w, 4w channels, ELU) down to
    (H / 8, W / 8), then a linear layer to d; decoder, linear to (4w, H / 8, W / 8), three stride-2 transposed
    convolutions back to C channels of logits. No batch statistic anywhere (DP-SGD needs per-record gradients)."""
    w, (channels, height, width_px) = width, shape
    cells = (height // 8) * (width_px // 8)
    encoder = nn.Sequential(
        nn.Conv2d(channels, w, 4, 2, 1), nn.ELU(), nn.Conv2d(w, 2 * w, 4, 2, 1), nn.ELU(),
        nn.Conv2d(2 * w, 4 * w, 4, 2, 1), nn.ELU(), nn.Flatten(), nn.Linear(4 * w * cells, latent_dim),
    )
    decoder = nn.Sequential(
        nn.Linear(latent_dim, 4 * w * cells), nn.ELU(), nn.Unflatten(1, (4 * w, height // 8, width_px // 8)),
        nn.ConvTranspose2d(4 * w, 2 * w, 4, 2, 1), nn.ELU(), nn.ConvTranspose2d(2 * w, w, 4, 2, 1), nn.ELU(),
        nn.ConvTranspose2d(w, channels, 4, 2, 1),
    )
    return encoder, decoder


def on_sphere(codes: torch.Tensor) -> torch.Tensor:
    """Each row divided by its norm; a zero row becomes the fixed e_1 (a per-record map)."""
    norms = codes.norm(dim=1, keepdim=True)
    blind = norms <= 1e-12
    unit = codes / torch.where(blind, torch.ones_like(norms), norms)
    first = torch.zeros(codes.shape[1], dtype=codes.dtype, device=codes.device)
    first[0] = 1.0
    return torch.where(blind, first, unit)


class SphereAutoencoder(nn.Module):
    """Encoder and decoder through the unit sphere: ``forward`` gives the reconstruction's logits."""

    def __init__(self, latent_dim: int, width: int, shape: tuple[int, int, int]) -> None:
        super().__init__()
        self.encoder, self.decoder = conv_autoencoder(latent_dim, width, shape)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.decoder(on_sphere(self.encoder(images)))


def record_loss(module: nn.Module, parameters: dict[str, torch.Tensor], image: torch.Tensor) -> torch.Tensor:
    """One image's loss: the binary cross-entropy of its reconstruction (summed over pixels)."""
    logits = torch.func.functional_call(module, parameters, (image.unsqueeze(0),))
    return functional.binary_cross_entropy_with_logits(logits, image.unsqueeze(0), reduction="sum")


def dpsgd_noise_multiplier(schedule: DPSGDSchedule, epsilon: float, delta: float) -> float:
    """The smallest z (to the calibration's tolerance) at which ``schedule``'s releases alone are (epsilon, delta)-DP
    (``schedule_accountant``)."""
    return schedule_accountant(schedule).calibrate(epsilon, delta, schedule.steps)


def schedule_accountant(schedule: DPSGDSchedule) -> ReleaseAccountant:
    """The accountant of a DP-SGD schedule alone (``dpsgd_noise_multiplier``; privacy.md, "A private image codec trained
    by DP-SGD"): under replace-one the antipodal pair for Poisson batches, the replace-one RDP bound for fixed-size
    ones; Opacus' RDP for Poisson batches under add/remove."""
    if schedule.neighbouring.n_is_public and schedule.poisson:
        return ReleaseAccountant.poisson(schedule.rate, REPLACE_ONE_PLD, n_records=schedule.n_records,
                                         contribution_norm=CLIPPED_GRADIENT_RADIUS)
    if schedule.neighbouring.n_is_public:
        return ReleaseAccountant(schedule.n_records, schedule.batch_size, REPLACE_ONE_RDP)
    return ReleaseAccountant.poisson(schedule.rate, "rdp")


class PrivateAutoencoderCodec:
    """The ``"private-autoencoder"`` codec: ``SphereAutoencoder`` trained by DP-SGD on the private
    ``(n, C, H, W)`` images at ``(epsilon, delta)`` (its own part of the run's budget), or loaded from a checkpoint
    of the same public data key, settings and privacy parameters (``load``). A release, listed in the run's report as
    ``privacy_part`` and spent from its budget by ``spend``. ``secret`` seeds the batches and the noise (tests and
    audits only: a checkpoint of a seeded run is never loaded)."""

    def __init__(self, images: torch.Tensor, settings: PrivateAutoencoderSettings, epsilon: float, delta: float,
                 neighbouring: Adjacency | str, progress: bool = False, secret: torch.Generator | None = None) -> None:
        check_sphere_images(images)
        neighbouring = Adjacency.of(neighbouring)
        self.settings, self.epsilon, self.delta, self.neighbouring = settings, float(epsilon), float(delta), neighbouring
        self.shape, self.seeded = tuple(images.shape[1:]), secret is not None
        planned = settings.schedule(len(images), neighbouring, 1.0)
        z = 0.0 if math.isinf(epsilon) else dpsgd_noise_multiplier(planned, epsilon, delta)  # inf: exact, NOT private
        self.schedule = settings.schedule(len(images), neighbouring, z)
        with torch.random.fork_rng(devices=[]):  # the initial weights from a public seed, torch's global state untouched
            torch.manual_seed(settings.seed)
            self.network = SphereAutoencoder(settings.latent_dim, settings.width, self.shape)  # type: ignore[arg-type]
        bar = _progress_bar(self.schedule.steps) if progress else None
        self.training_seconds = train_dpsgd(
            self.network, record_loss, images.float(), self.schedule, secret or secret_generator(), settings.learning_rate,
            progress=None if bar is None else lambda step: bar.update(1),
        )
        if bar is not None:
            bar.close()
        self.network.eval()

    @property
    def noise_multiplier(self) -> float:
        return self.schedule.noise_multiplier

    @property
    def public_description(self) -> str:
        s = self.settings
        return (f"a convolutional autoencoder (latent {s.latent_dim}, width {s.width}) trained by DP-SGD on the private "
                f"images at epsilon = {self.epsilon:.4g}, delta = {self.delta:.3g} ({self.schedule.steps} steps on "
                f"{'Poisson' if self.schedule.poisson else 'fixed-size'} batches, "
                f"clip {s.clip:g}, z = {self.noise_multiplier:.3g}), decoded at logit temperature "
                f"{s.decode_temperature:g}; no public image")

    @property
    def privacy_part(self) -> PrivacyPart:
        """The codec's training with its own guarantee alone."""
        s = self.schedule
        return PrivacyPart(
            "private codec", self.epsilon, self.delta,
            f"DP-SGD, {s.steps} releases of clipped gradient sums (C = {s.clip:g}, Delta = "
            f"{s.noise_std / s.noise_multiplier if s.noise_multiplier else 0:.3g}, z = {s.noise_multiplier:.3g}) on "
            f"{'Poisson' if s.poisson else 'fixed-size'} batches at q = {s.rate:.3g} (privacy.md, \"A private image codec trained by DP-SGD\")",
        )

    def spend(self, budget: Budget) -> Budget:
        """``budget`` after this codec's training: its schedule one more entry of the releases' accountant (a codec
        trained without noise, at epsilon = inf, only into a budget of epsilon = inf)."""
        if self.noise_multiplier == 0:
            if not math.isinf(budget.epsilon):
                raise ValueError("this codec was trained without noise (epsilon = inf): it cannot be spent from a finite "
                                 "budget; train it at the run's share.")
            return budget
        return budget.spend_schedule(self.schedule.history())

    @torch.no_grad()
    def encode(self, images: torch.Tensor) -> torch.Tensor:
        """Unit-norm codes ``(n, d)`` of ``(n, C, H, W)`` images in [0, 1] of the training images' shape."""
        check_sphere_images(images)
        if tuple(images.shape[1:]) != self.shape:
            raise ValueError(f"the codec was trained on {self.shape} images, got {tuple(images.shape[1:])}.")
        return torch.cat([on_sphere(self.network.encoder(images[start:start + 1000].float()))
                          for start in range(0, len(images), 1000)]) if len(images) else torch.zeros(0, self.settings.latent_dim)

    @torch.no_grad()
    def decode(self, latents: torch.Tensor) -> torch.Tensor:
        """Images ``(n, C, H, W)`` in [0, 1] from codes (put on the sphere first, as the decoder was trained), each pixel
        the decoder's logit at the settings' temperature through a sigmoid (``DECODE_TEMPERATURE``)."""
        latents = latents.detach().cpu().float()
        temperature = self.settings.decode_temperature
        return torch.cat([torch.sigmoid(temperature * self.network.decoder(on_sphere(latents[start:start + 1000])))
                          for start in range(0, len(latents), 1000)])

    def save(self, path: Path, data_key: str) -> None:
        """Write the weights (post-processing of the releases), the public settings, the privacy parameters and the
        schedule, bound to ``data_key``: a public name of the private image set (dataset, split, seed), never a
        statistic of the images."""
        if self.seeded:
            raise ValueError("a codec trained with a known seed is for tests and audits: it is never saved for reuse.")
        path.parent.mkdir(parents=True, exist_ok=True)
        torch.save({"state": self.network.state_dict(), "settings": self.settings.training(), "epsilon": self.epsilon,
                    "delta": self.delta, "neighbouring": self.neighbouring.value, "data_key": data_key,
                    "schedule": {**asdict(self.schedule), "neighbouring": self.schedule.neighbouring.value}, "shape": list(self.shape),
                    "training_seconds": self.training_seconds}, path)

    @classmethod
    def load(cls, path: Path, data_key: str, settings: PrivateAutoencoderSettings, epsilon: float, delta: float,
             neighbouring: Adjacency | str) -> "PrivateAutoencoderCodec":
        """The codec saved at ``path``, refused with ``ValueError`` unless it was saved for ``data_key`` with these
        training settings (``PrivateAutoencoderSettings.training``; it decodes at ``settings``' temperature), epsilon,
        delta and adjacency, and its stored schedule alone is (epsilon, delta)-DP (never reused
        silently for another run's budget or image set)."""
        neighbouring = Adjacency.of(neighbouring)
        stored = torch.load(path, map_location="cpu", weights_only=True)
        wanted = {"settings": settings.training(), "epsilon": float(epsilon), "delta": float(delta),
                  "neighbouring": neighbouring, "data_key": data_key}
        differs = [key for key, value in wanted.items() if stored.get(key) != value]
        if differs:
            raise ValueError(f"the private codec at {path} was trained with other {', '.join(differs)} than this run's; "
                             "delete it to retrain, or point the cache elsewhere.")
        schedule = DPSGDSchedule(**stored["schedule"])
        stated = schedule_accountant(schedule).epsilon(schedule.noise_multiplier, delta, schedule.steps).epsilon
        if not math.isinf(epsilon) and stated > epsilon * (1 + 1e-6):
            raise ValueError(f"the private codec at {path} was trained at z = {schedule.noise_multiplier:.4g}, which "
                             f"gives epsilon = {stated:.4g} above its stated {epsilon:.4g}: retrain it.")
        codec = cls.__new__(cls)
        codec.settings, codec.epsilon, codec.delta, codec.neighbouring = settings, float(epsilon), float(delta), neighbouring
        codec.shape, codec.seeded, codec.schedule = tuple(stored["shape"]), False, schedule
        codec.network = SphereAutoencoder(settings.latent_dim, settings.width, codec.shape)  # type: ignore[arg-type]
        codec.network.load_state_dict(stored["state"])
        codec.network.eval()
        codec.training_seconds = float(stored["training_seconds"])  # what its training took, where it was trained
        return codec


def check_sphere_images(images: torch.Tensor) -> None:
    """Raise ``ValueError`` unless ``images`` are ``(n, C, H, W)`` in [0, 1] with H and W multiples of 8 (the
    architecture's three halvings; MNIST's padded 32 x 32), finite."""
    check_images(images)
    if images.ndim != 4 or images.shape[2] % 8 or images.shape[3] % 8 or images.shape[2] == 0 or images.shape[3] == 0:
        raise ValueError(f"the private autoencoder takes (n, C, H, W) images with H and W multiples of 8 (MNIST padded "
                         f"to 32 x 32), got {tuple(images.shape)}.")


def _progress_bar(total: int):  # type: ignore[no-untyped-def]
    from tqdm.auto import tqdm

    return tqdm(total=total, desc="DP-SGD codec", unit="step")

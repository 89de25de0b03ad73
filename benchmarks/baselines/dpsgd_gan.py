"""The DP-SGD baseline: a small GAN on the same records (unit-ball latents) whose discriminator is trained with
Opacus' per-sample clipping and Gaussian noise (Abadi et al. 2016; Xie et al. 2018, DPGAN), accounted exactly
like the flows' releases.

One discriminator step is one release of a noisy sum of clipped per-sample gradients, so the privacy contract
of ``docs/privacy.md`` carries over unchanged: a uniformly random subset of exactly b of the n records per
step, replace-one neighbours, sensitivity Delta = 2C (replacing one record changes one clipped gradient of
norm <= C), noise std s = z Delta, z calibrated with the same ``ReleaseAccountant`` (Opacus RDP). The generator
only sees the discriminator's output: its updates are post-processing.

With ``n_classes`` the records end in a label block (``LabelledCodec``: ``label_weight`` times a one-hot; ``fit``
with ``labels=`` appends it, ``sample_labelled`` reads it back) and the GAN is conditional (DP-CGAN, Torkzadehmahani et al. 2019): the generator gets a label drawn uniformly (a public
assumption) and outputs the feature block, to which the label block is appended. An unconditional GAN on
labelled records collapsed onto one class in our runs.
"""

from __future__ import annotations

import math
import time

import torch
from opacus import GradSampleModule
from opacus.optimizers import DPOptimizer
from torch import nn
from torch.nn import functional
from tqdm.auto import tqdm

from synthcity_dpswf.adapters import LabelledCodec
from synthcity_dpswf.math.checks import check_matrix, check_positive, check_positive_int
from synthcity_dpswf.privacy.budget import check_privacy_target
from synthcity_dpswf.models.state import release_steps
from synthcity_dpswf.privacy import PrivacyReport, ReleaseAccountant, bound_records, sample_batch, secret_generator


def into_ball(x: torch.Tensor, radius: float) -> torch.Tensor:
    """x / max(1, ||x|| / r) row-wise: the generator's outputs live where the records do."""
    return x / (x.norm(dim=1, keepdim=True) / radius).clamp(min=1.0)


def noise_generator(device: str | torch.device, secret: torch.Generator) -> torch.Generator:
    """The generator of the gradient noise: on ``device``, seeded with 63 bits drawn from ``secret``.

    Opacus draws the noise with ``torch.normal(..., device=parameter.device, generator=...)``, which refuses a
    generator on another device, so the noise generator must live where the discriminator does (the CPU
    ``secret`` of the batches fails on CUDA). Seeding it from ``secret`` keeps its semantics: unpredictable
    when ``secret`` comes from OS entropy, reproducible (and removable) exactly when a release seed was given.
    """
    seed = int(torch.randint(2**63 - 1, (1,), dtype=torch.int64, generator=secret))
    return torch.Generator(device=torch.device(device)).manual_seed(seed)


class DPSGDGAN:
    """A GAN with a DP-SGD discriminator (Opacus ``GradSampleModule`` + ``DPOptimizer``).

    Args:
        batch_size: b, private records per discriminator step (with b generated ones).
        epochs: K = ceil(epochs * n / b) discriminator steps.
        max_grad_norm: C, the per-sample clipping norm.
        learning_rate: Adam's learning rate of both networks.
        noise_dim: size of the generator's Gaussian input.
        n_classes: C > 0: the last C columns of each record are ``label_weight`` times a one-hot label and the
            GAN is conditional; 0: unconditional.
        label_weight: the scale of the label block (``LabelledCodec.label_weight``); needed when C > 0.
        hidden: width of the two hidden layers of each network.
        seed: public seed of the networks' initialisation, the generator's inputs and sampling.
        release_seed: seed of the batches and the gradient noise; ``None`` (default) draws it from OS entropy.
        device: where the networks train.
        progress: show a progress bar.
    """

    name = "dpsgd_gan"

    def __init__(
        self,
        *,
        batch_size: int = 250,
        epochs: float = 30.0,
        max_grad_norm: float = 1.0,
        learning_rate: float = 2e-4,
        noise_dim: int = 16,
        n_classes: int = 0,
        label_weight: float | None = None,
        hidden: int = 128,
        seed: int = 0,
        release_seed: int | None = None,
        device: str | torch.device = "cpu",
        progress: bool = False,
    ) -> None:
        check_positive_int("batch_size", batch_size)
        check_positive("epochs", epochs)
        check_positive("max_grad_norm", max_grad_norm)
        check_positive("learning_rate", learning_rate)
        check_positive_int("noise_dim", noise_dim)
        check_positive_int("hidden", hidden)
        if isinstance(n_classes, bool) or not isinstance(n_classes, int) or n_classes < 0:
            raise ValueError(f"n_classes must be an integer >= 0, got {n_classes!r}.")
        if n_classes > 0 and (label_weight is None or not 0 < label_weight < 1):
            raise ValueError(f"with n_classes > 0, label_weight must lie in (0, 1) (LabelledCodec.label_weight), got {label_weight!r}.")
        self.n_classes = n_classes
        self.label_weight = label_weight
        self.batch_size = batch_size
        self.epochs = float(epochs)
        self.max_grad_norm = float(max_grad_norm)
        self.learning_rate = learning_rate
        self.noise_dim = noise_dim
        self.hidden = hidden
        self.seed = seed
        self.release_seed = release_seed
        self.device = torch.device(device)
        self.progress = progress
        self.generator_: nn.Module | None = None
        self.report_: PrivacyReport | None = None
        self.training_seconds = 0.0

    def _networks(self, dim: int) -> tuple[nn.Module, nn.Module]:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(self.seed)
            generator = nn.Sequential(
                nn.Linear(self.noise_dim + self.n_classes, self.hidden), nn.ReLU(), nn.Linear(self.hidden, self.hidden), nn.ReLU(),
                nn.Linear(self.hidden, dim - self.n_classes),
            )
            discriminator = nn.Sequential(
                nn.Linear(dim, self.hidden), nn.LeakyReLU(0.2), nn.Linear(self.hidden, self.hidden), nn.LeakyReLU(0.2),
                nn.Linear(self.hidden, 1),
            )
        return generator.to(self.device), discriminator.to(self.device)

    def _generate(self, generator: nn.Module, count: int, inputs: torch.Generator) -> torch.Tensor:
        """Records from the generator: unconditional into the unit ball, or features (norm <= sqrt(1 - w^2))
        followed by w times the one-hot of a uniformly drawn label."""
        noise = torch.randn(count, self.noise_dim, generator=inputs)
        if self.n_classes == 0:
            return into_ball(generator(noise.to(self.device)), 1.0)
        assert self.label_weight is not None
        one_hot = functional.one_hot(torch.randint(self.n_classes, (count,), generator=inputs), self.n_classes).float()
        features = generator(torch.cat([noise, one_hot], dim=1).to(self.device))
        return torch.cat([into_ball(features, math.sqrt(1 - self.label_weight**2)), self.label_weight * one_hot.to(self.device)], dim=1)

    def fit(
        self, records: torch.Tensor, epsilon: float, delta: float, *, labels: torch.Tensor | None = None,
        n_classes: int | None = None,
    ) -> "DPSGDGAN":
        """Train on ``records`` (``(n, d)``, mapped into the unit ball) with the noise calibrated to (epsilon, delta).

        With ``labels`` (in ``0..n_classes-1``, ``n_classes`` the GAN's own), each record is first joined with its
        label (``label_codec``); without, ``records`` already end in the label block of a conditional GAN."""
        check_matrix("records", records)
        if labels is not None:
            records = self.label_codec(n_classes).encode(records.detach().cpu().float(), labels.cpu())
        check_privacy_target(epsilon, delta, records.shape[0])
        started = time.perf_counter()
        bounded = bound_records(records.detach().to("cpu", torch.float32), 1.0, "ball")
        n_records, dim = bounded.shape
        if dim <= self.n_classes:
            raise ValueError(f"records have {dim} columns, not more than n_classes={self.n_classes}; check n_classes.")
        if self.batch_size > n_records:
            raise ValueError(f"batch_size={self.batch_size} exceeds the {n_records} records; lower it.")
        steps = release_steps(n_records, self.batch_size, self.epochs)
        accountant = ReleaseAccountant(n_records, self.batch_size)
        noise_multiplier = 0.0 if math.isinf(epsilon) else accountant.calibrate(float(epsilon), float(delta), steps)
        secret = secret_generator(self.release_seed)
        generator, discriminator = self._networks(dim)
        private_discriminator = GradSampleModule(discriminator, loss_reduction="sum")
        optimiser_g = torch.optim.Adam(generator.parameters(), lr=self.learning_rate, betas=(0.5, 0.999))
        # Opacus adds N(0, (multiplier * C)^2) to the sum of clipped gradients; replace-one needs s = z * 2C.
        optimiser_d = DPOptimizer(
            torch.optim.Adam(private_discriminator.parameters(), lr=self.learning_rate, betas=(0.5, 0.999)),
            noise_multiplier=2 * noise_multiplier, max_grad_norm=self.max_grad_norm,
            expected_batch_size=2 * self.batch_size, loss_reduction="sum", generator=noise_generator(self.device, secret),
        )
        inputs = torch.Generator().manual_seed(self.seed + 1)
        labels = torch.cat([torch.ones(self.batch_size, 1), torch.zeros(self.batch_size, 1)]).to(self.device)
        for _ in tqdm(range(steps), desc="DP-SGD GAN", disable=not self.progress):
            real = bounded[sample_batch(n_records, self.batch_size, secret)].to(self.device)
            with torch.no_grad():
                fake = self._generate(generator, self.batch_size, inputs)
            optimiser_d.zero_grad(set_to_none=True)
            logits = private_discriminator(torch.cat([real, fake]))
            functional.binary_cross_entropy_with_logits(logits, labels, reduction="sum").backward()
            optimiser_d.step()

            optimiser_g.zero_grad(set_to_none=True)
            logits = private_discriminator(self._generate(generator, self.batch_size, inputs))
            functional.binary_cross_entropy_with_logits(logits, torch.ones_like(logits)).backward()
            optimiser_g.step()
            optimiser_d.zero_grad(set_to_none=True)  # drop the per-sample gradients of the generator step
        del bounded
        self.generator_ = generator.eval()
        self.training_seconds = time.perf_counter() - started
        self.report_ = self._report(accountant, noise_multiplier, float(delta), steps, dim)
        return self

    def _report(self, accountant: ReleaseAccountant, noise_multiplier: float, delta: float, steps: int, dim: int) -> PrivacyReport:
        sensitivity = 2 * self.max_grad_norm
        common = dict(
            delta=delta,
            mechanism=f"DP-SGD on the discriminator: noisy sum of per-sample gradients clipped to C = {self.max_grad_norm:g}, "
            f"Delta = 2C",
            sampling=f"uniform subsets of exactly b = {self.batch_size} of n = {accountant.n_records} records, "
            f"independent across the {steps} steps",
            sample_rate=accountant.sample_rate, steps=steps, sensitivity=sensitivity, radius=1.0,
            stored="the generator network (post-processing of the noisy gradients)",
            public=(f"n = {accountant.n_records} records, d = {dim}", f"the seed {self.seed} of the networks and inputs"),
        )
        if noise_multiplier == 0:
            return PrivacyReport(
                epsilon=math.inf, noise_multiplier=0.0, noise_std=0.0, accountant="none", conservative_epsilon=None,
                **common,  # type: ignore[arg-type]
            )
        accounting = accountant.epsilon(noise_multiplier, delta, steps)
        return PrivacyReport(
            epsilon=accounting.epsilon, noise_multiplier=noise_multiplier, noise_std=noise_multiplier * sensitivity,
            accountant=accounting.method, conservative_epsilon=accountant.conservative_epsilon(noise_multiplier, delta, steps),
            **common,  # type: ignore[arg-type]
        )

    def label_codec(self, n_classes: int | None) -> LabelledCodec:
        """The ``LabelledCodec`` whose label block this conditional GAN's records end in (``label_weight``)."""
        if self.n_classes == 0 or n_classes != self.n_classes:
            raise ValueError(f"labels need a conditional GAN of the same n_classes: the GAN has n_classes={self.n_classes}, "
                             f"the labels {n_classes!r}; build DPSGDGAN(n_classes=..., label_weight=...).")
        assert self.label_weight is not None
        feature_weight = math.sqrt(1 - self.label_weight**2)
        return LabelledCodec(self.n_classes, feature_weight=feature_weight)

    @property
    def privacy_report(self) -> PrivacyReport:
        """The privacy report of the trained model."""
        if self.report_ is None:
            raise RuntimeError("DPSGDGAN is not fitted; call fit(records, epsilon, delta) first.")
        return self.report_

    @torch.no_grad()
    def sample(self, count: int, *, seed: int | None = None) -> torch.Tensor:
        """``count`` synthetic records from the trained generator (post-processing)."""
        check_positive_int("count", count)
        if self.generator_ is None:
            raise RuntimeError("DPSGDGAN is not fitted; call fit(records, epsilon, delta) first.")
        inputs = torch.Generator().manual_seed((self.seed if seed is None else seed) + 2)
        return self._generate(self.generator_, count, inputs)

    def sample_labelled(self, count: int, *, seed: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """``count`` synthetic (record, label) pairs of a conditional GAN: ``sample`` with its label block read back
        (``label_codec``; post-processing)."""
        return self.label_codec(self.n_classes).decode(self.sample(count, seed=seed).detach().cpu())

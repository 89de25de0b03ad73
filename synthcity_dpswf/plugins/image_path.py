"""Images through a plugin: synthcity's image loader in, the image plan (``recipes.images.plan_images``: the codec,
the records, the budget and the releases' noise) out as ``PreparedData``, and generated images decoded back through
synthcity's image sampler. One record per (image, label) pair. The codec is one of the registry's (``image_codec``:
by default ``"private-pca"``, learned from the private images and paid from the same budget as the flow's releases;
``"public-autoencoder"``, trained on public images the user gives) or an autoencoder the user trained on public
images; no image passed to ``fit`` is ever taken as public."""

from __future__ import annotations

import math
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import torch
from synthcity.plugins.core.dataloader import DataLoader, create_from_info
from synthcity.plugins.core.dataset import TensorDataset
from synthcity.plugins.core.schema import Schema

from synthcity_dpswf.adapters.image_latent import AutoencoderCodec, from_synthcity_range
from synthcity_dpswf.models import SlicedGenerator
from synthcity_dpswf.models.base import GeneratorSpec
from synthcity_dpswf.notices import DPSWFWarning
from synthcity_dpswf.plugins.paths import Codec, FitInputs, GenerationContext, LoaderPath, PreparedData, draw_seed
from synthcity_dpswf.plugins.options import ImageOptions
from synthcity_dpswf.privacy import MECHANISMS
from synthcity_dpswf.recipes.images import CodecOrder, check_labels, flow_defaults, plan_images

RESERVOIR_IMAGES = 1000
"""Flowed latents an image plugin keeps (with the fitted model, so after ``save`` / ``load`` too), from which calls of
at most this many images draw (``ImagePath.draw``): a flow's cost is nearly all in its steps, not its particles (a
flow of 2,000 costs under one and a half times one of 10: ``benchmarks/studies/image_generate_speed.py``), so small
calls take kept particles."""
MIN_DPSGD_STEPS = 100
"""Below this many noisy steps the DP-SGD codec has not learned: on 800 MNIST images (8 steps at its default batch)
the flow's images came out uniform grey."""


def integer_labels(labels: torch.Tensor) -> torch.Tensor:
    """``labels`` as integers, or ``ValueError`` where one is not a whole number (a float label such as 2.5 names no
    class)."""
    if labels.is_floating_point():
        whole = torch.isfinite(labels) & (labels == torch.round(labels))
        if not bool(whole.all()):
            raise ValueError("image labels must be integers (class indices 0..n_classes - 1); some are not whole "
                             "numbers.")
    return labels.long()


class ImagePath:
    """An ``ImageDataLoader``: the plugin's arguments become the image plan's values (``recipes.images.plan_images``);
    after the fit, a reservoir of flowed (latent, label) pairs (``fill``) that small generations draw from (``draw``).
    """

    default_release = "projected_histogram"
    """Class-conditional histograms of the latents' projections: one release, its settings chosen by CAS on a
    validation split of MNIST (``benchmarks/results/archive/histogram_settings_mnist.md``)."""

    def __init__(self) -> None:
        self.reservoir: tuple[torch.Tensor, torch.Tensor] | None = None
        """Flowed latents and their labels not yet returned, in random order (post-processing of the releases)."""

    def fill(self, generator: SlicedGenerator, seed: int) -> None:
        """Flow ``RESERVOIR_IMAGES`` (latent, label) pairs of ``generator`` (labels in the released class shares) into
        the reservoir, after what it still holds."""
        latents, labels = generator.sample_labelled(RESERVOIR_IMAGES, seed=seed)
        if self.reservoir is not None:
            latents, labels = torch.cat([self.reservoir[0], latents.cpu()]), torch.cat([self.reservoir[1], labels.cpu()])
        self.reservoir = (latents.cpu(), labels.cpu())

    def take(self, count: int, labels: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor] | None:
        """``count`` pairs out of the reservoir (with ``labels``: one of each label asked for, in order), removed from
        it; ``None`` where it holds too few (of some class)."""
        if self.reservoir is None:
            return None
        latents, kept_labels = self.reservoir
        if labels is None:
            if len(latents) < count:
                return None
            chosen = torch.arange(count)
        else:
            chosen_list: list[int] = []
            by_class = {int(c): (kept_labels == c).nonzero().flatten().tolist() for c in torch.unique(labels)}
            for label in labels.tolist():
                if not by_class[label]:
                    return None
                chosen_list.append(by_class[label].pop(0))
            chosen = torch.tensor(chosen_list, dtype=torch.long)
        left = torch.ones(len(latents), dtype=torch.bool)
        left[chosen] = False
        self.reservoir = (latents[left], kept_labels[left])
        return latents[chosen], kept_labels[chosen]

    def draw(self, generator: SlicedGenerator, count: int, labels: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
        """``count`` generated (latent, label) pairs: from the reservoir where it holds them, refilled first where a
        call of at most ``RESERVOIR_IMAGES`` pairs not asked by label finds it short; else flowed now. Pairs not asked
        by label come in the classes' released shares, as a fresh flow gives them (``Sampling.label_counts``), in
        random order."""
        wanted = labels
        counts = generator.label_counts(count) if labels is None else None
        if counts is not None:
            order = torch.randperm(count, generator=torch.Generator().manual_seed(draw_seed()))
            wanted = torch.repeat_interleave(torch.arange(len(counts)), counts)[order]
        taken = self.take(count, wanted)
        if taken is None and labels is None and count <= RESERVOIR_IMAGES:
            self.fill(generator, draw_seed())
            taken = self.take(count, wanted)
        if taken is not None:
            return taken
        return generator.sample_labelled(count, seed=draw_seed(), labels=labels)

    def flow_defaults(self, codec: str | None, generator: str, release: str) -> dict[str, int]:
        """The registry entry's settings measured for ``generator``'s ``release`` through ``codec``
        (``recipes.images.flow_defaults``); none for a given autoencoder."""
        return {} if codec is None else flow_defaults(codec, generator, release)

    def prepare(self, inputs: FitInputs, X: DataLoader, loader: LoaderPath, spec: GeneratorSpec) -> PreparedData:
        """Refuse what images cannot take, settle the codec (a given autoencoder, or the registry's order that the
        plan builds and pays for), and hand the private images to the image plan, whose release plan is ``spec``'s."""
        release, options = inputs.release, inputs.image
        assert options is not None
        if release is not None and MECHANISMS[release].takes_level_codes:
            raise ValueError(f"the {release} release is for tables (it counts level codes); leave release=None "
                             "(projected histograms) for images.")
        images, labels = X.unpack().tensors()
        images, labels = from_synthcity_range(images.float()), integer_labels(labels)
        check_labels(labels, options.n_classes)  # before a codec reads any image
        codec: AutoencoderCodec | CodecOrder
        if options.given_autoencoder:
            given = options.image_codec
            codec = AutoencoderCodec.load(given) if isinstance(given, (str, Path)) else given  # type: ignore[assignment]
        else:
            codec = self.codec_order(inputs, options, len(images))
        plan = plan_images(images, labels, options.n_classes, inputs.budget, spec, codec)
        return PreparedData(
            records=plan.records, labels=plan.labels, budget=plan.budget, noise_multiplier=plan.noise_multiplier,
            plan=plan.release_plan, n_public=plan.n_public, codec=plan.codec, layout=None, schema=Schema(domain={}),
            info=loader.public_info(X, None), paid=plan.paid, n_classes=options.n_classes,
        )

    @staticmethod
    def codec_order(inputs: FitInputs, options: ImageOptions, n_images: int) -> CodecOrder:
        """The registry's codec ``image_codec`` with its options, every image private: a codec that releases a
        statistic of the images takes its share of mu^2 of the run's Gaussian budget (z_c = z / sqrt(s), z the
        analytic Gaussian multiplier at (epsilon, delta)) and is the releases' accountant's prior (privacy.md, "A
        private image codec": through a plugin). A codec trained in sampled noisy steps (DP-SGD) that would take fewer
        than ``MIN_DPSGD_STEPS`` of them warns: under replace-one naming the images it needs (n is public), under
        add/remove, where its steps do not depend on n, naming no count of images."""
        entry = options.entry()
        if entry.paid and math.isinf(inputs.budget.epsilon):
            raise ValueError(f"image_codec={options.image_codec!r} is paid from the budget, and epsilon = inf leaves "
                             "no noise to share; give a finite epsilon or image_codec='dct'.")
        request = options.request(inputs.budget.neighbouring)
        if entry.planned_schedule is not None:
            steps = entry.planned_schedule(n_images, request).steps
            if steps < MIN_DPSGD_STEPS and inputs.budget.neighbouring.n_is_public:
                needed = int(np.ceil(MIN_DPSGD_STEPS * n_images / steps))
                warnings.warn(f"the {options.image_codec} codec takes {steps} noisy steps on {n_images} images; below "
                              f"{MIN_DPSGD_STEPS} it learns nothing. Give at least {needed} images, more epochs or a "
                              "smaller batch_size in codec_options, or image_codec='private-pca'.", DPSWFWarning,
                              stacklevel=4)
            elif steps < MIN_DPSGD_STEPS:  # add/remove: the steps are epochs / sample_rate, n is neither read nor named
                warnings.warn(f"the {options.image_codec} codec takes {steps} noisy steps (epochs / sample_rate); below "
                              f"{MIN_DPSGD_STEPS} it learns nothing: raise epochs or sample_rate in codec_options, or "
                              "use image_codec='private-pca'.", DPSWFWarning, stacklevel=4)
        return CodecOrder(entry, request, options.share)

    def generate(self, context: GenerationContext, generator: SlicedGenerator, codec: Codec, count: int,
                 syn_schema: Schema, cond: Any = None) -> DataLoader:
        """``count`` generated (image, label) pairs (``draw``), decoded by the codec, through synthcity's image sampler;
        the labels follow the released class shares, or with ``cond`` are those given (one integer label per image,
        in order: each image flowed with its class's particles; ``labelling="conditional"`` only)."""
        labels = None
        if cond is not None:
            labels = integer_labels(torch.as_tensor(np.asarray(cond).reshape(-1)))
            if len(labels) != count:
                raise ValueError(f"cond holds {len(labels)} labels; give one per image asked for (count={count}).")
            check_labels(labels, generator.n_classes_)
        latents, drawn = self.draw(generator, count, labels)
        return create_from_info(TensorDataset(images=codec.decode(latents.cpu()), targets=drawn), context.data_info)

    def generate_parquet(self, generator: SlicedGenerator, codec: Codec, folder: Path, count: int, chunk_size: int,
                         seed: int) -> int:
        raise ValueError("generate_parquet writes tables; for images use generate() or the model's sample_chunks.")

    def public_line(self, codec: Codec) -> str:
        description = codec.public_description
        if isinstance(codec, AutoencoderCodec):
            return f"the autoencoder, trained on {description}"
        return f"the image codec: {description}"

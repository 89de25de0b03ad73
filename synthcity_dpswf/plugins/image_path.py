"""Images through a plugin: synthcity's image loader in, the image plan (``recipes.images.plan_images``: the codec,
the records, the budget and the releases' noise) out as ``PreparedData``, and generated images decoded back through
synthcity's image sampler. One record per (image, label) pair. The codec is an autoencoder (given, or trained here on a
public share of the images passed to ``fit``, as the paper does) or, with no public image, one of the registry's
(``image_codec="dct"``: a fixed map; ``"private-pca"``, ``"private-autoencoder"``: learned from the private images,
paid from the same budget as the flow's releases)."""

from __future__ import annotations

import math
from typing import Any
from pathlib import Path

import torch
from synthcity.plugins.core.dataloader import DataLoader
from synthcity.plugins.core.dataset import TensorDataset
from synthcity.plugins.core.schema import Schema

from synthcity_dpswf.adapters.image_codecs import CodecRequest
from synthcity_dpswf.adapters.image_latent import MNIST_LATENT_DIM, AutoencoderCodec, from_synthcity_range
from synthcity_dpswf.datasets import public_private_split
from synthcity_dpswf.extensions import image_codecs
from synthcity_dpswf.models import SlicedGenerator
from synthcity_dpswf.models.base import GeneratorSpec
from synthcity_dpswf.plugins.paths import Codec, FittingPlugin, LoaderPath, PreparedData, draw_seed
from synthcity_dpswf.privacy import MECHANISMS
from synthcity_dpswf.recipes.images import CodecOrder, check_labels, flow_defaults, plan_images


class ImagePath:
    """An ``ImageDataLoader``: the plugin's arguments become the image plan's values (``recipes.images.plan_images``)."""

    default_release = "projected_histogram"
    """Class-conditional histograms of the latents' projections (docs/flows.md, "Flow settings for histogram releases")."""

    def flow_defaults(self, image_codec: str | None, generator: str, release: str) -> dict[str, int]:
        """The registry entry's settings measured for ``generator``'s ``release`` through ``image_codec``
        (``recipes.images.flow_defaults``); none for an autoencoder."""
        return {} if image_codec is None else flow_defaults(image_codec, generator, release)

    def prepare(self, plugin: FittingPlugin, X: DataLoader, loader: LoaderPath, spec: GeneratorSpec) -> PreparedData:
        """Refuse what images cannot take, settle the codec (an autoencoder here, or the registry's order that the plan
        builds and pays for), and hand the private images to the image plan, whose release plan is ``spec``'s."""
        release, options = plugin.flow_options.release, plugin.image_options
        if release is not None and MECHANISMS[release].takes_level_codes:
            raise ValueError(f"the {release} release is for tables (it counts level codes); leave release=None "
                             "(projected histograms) for images.")
        if not plugin.budget.neighbouring.n_is_public and options.image_autoencoder is None and options.image_codec is None:
            raise ValueError(
                "under add/remove the public half drawn from the images passed to fit depends on their number (one image "
                "more redraws the split); pass image_autoencoder, an autoencoder trained on public images, or "
                "image_codec='dct', 'private-pca' or 'private-autoencoder', which need no public image."
            )
        images, labels = X.unpack().tensors()
        images, labels = from_synthcity_range(images.float()), labels.long()
        check_labels(labels, options.n_classes)  # before an autoencoder is trained on any of them
        codec: AutoencoderCodec | CodecOrder
        if options.image_codec is not None:
            codec = self.codec_order(plugin)
        else:
            codec, private = self.autoencoder(plugin, images)
            images, labels = images[private], labels[private]
        plan = plan_images(images, labels, options.n_classes, plugin.budget, spec, codec)
        return PreparedData(
            records=plan.records, labels=plan.labels, budget=plan.budget, noise_multiplier=plan.noise_multiplier,
            plan=plan.release_plan, n_public=plan.n_public, codec=plan.codec, layout=None, schema=Schema(domain={}),
            info=loader.public_info(X, None), paid=plan.paid,
        )

    @staticmethod
    def codec_order(plugin: FittingPlugin) -> CodecOrder:
        """The registry's codec ``image_codec``, every image private: a codec that releases a statistic of the images
        takes ``codec_share`` of mu^2 of the run's Gaussian budget (z_c = z / sqrt(s), z the analytic Gaussian
        multiplier at (epsilon, delta)) and is the releases' accountant's prior (privacy.md, "A private image codec":
        through a plugin)."""
        options = plugin.image_options
        entry = image_codecs()[options.image_codec]  # type: ignore[index]
        if entry.paid and math.isinf(plugin.budget.epsilon):
            raise ValueError(f"image_codec={options.image_codec!r} is paid from the budget, and epsilon = inf leaves "
                             "no noise to share; give a finite epsilon or image_codec='dct'.")
        request = CodecRequest(0.0, 0.0, plugin.budget.neighbouring, options.dct_frequencies, options.pca_components)
        return CodecOrder(entry, request, options.codec_share)

    @staticmethod
    def autoencoder(plugin: FittingPlugin, images: torch.Tensor) -> tuple[AutoencoderCodec, torch.Tensor]:
        """The plugin's ``image_autoencoder`` (every image private), or one trained on a random ``public_fraction`` of
        ``images`` (the rest private), as the paper does, with its refiner on the same images."""
        options = plugin.image_options
        if isinstance(options.image_autoencoder, AutoencoderCodec):
            return options.image_autoencoder, torch.arange(len(images))
        if options.image_autoencoder is not None:
            return AutoencoderCodec.load(options.image_autoencoder), torch.arange(len(images))
        public, private = public_private_split(len(images), options.public_fraction, plugin.random_state)
        architecture = "mnist" if images.shape[-1] == 32 else "dcgan"
        latent_dim = options.latent_dim
        if latent_dim is None and architecture == "mnist":
            latent_dim = MNIST_LATENT_DIM
        autoencoder = AutoencoderCodec(architecture, latent_dim=latent_dim, channels=images.shape[1])
        autoencoder.fit(
            images[public], epochs=options.autoencoder_epochs, seed=plugin.random_state,
            description=f"a random {options.public_fraction:.0%} of the images passed to fit, public by assumption",
        )
        if options.refiner_epochs > 0:
            autoencoder.fit_refiner(images[public], epochs=options.refiner_epochs,
                                    adversarial_weight=options.refiner_weight, seed=plugin.random_state)
        return autoencoder, private

    def generate(self, plugin: FittingPlugin, generator: SlicedGenerator, codec: Codec, count: int,
                 syn_schema: Schema, cond: Any = None) -> DataLoader:
        """``count`` generated (image, label) pairs, decoded by the autoencoder, through synthcity's image sampler;
        the labels follow the released class shares (``cond`` is refused)."""
        if cond is not None:
            raise ValueError("generate(cond=...) conditions a table's rows on its named target; images are generated "
                             "with labels in the released class shares: drop cond.")
        def sample_images(n: int) -> TensorDataset:
            latents, labels = generator.sample_labelled(n, seed=draw_seed())
            return TensorDataset(images=codec.decode(latents.cpu()), targets=labels)

        return plugin._safe_generate_images(sample_images, count, syn_schema)

    def generate_parquet(self, generator: SlicedGenerator, codec: Codec, folder: Path, count: int, chunk_size: int,
                         seed: int) -> int:
        raise ValueError("generate_parquet writes tables; for images use generate() or the model's sample_chunks.")

    def public_line(self, codec: Codec) -> str:
        description = codec.public_description
        if isinstance(codec, AutoencoderCodec):
            return f"the autoencoder, trained on {description}"
        return f"the image codec: {description}"

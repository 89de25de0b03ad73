"""Images through a plugin: codes of an image codec with their labels, one record per (image, label) pair, and
generated images decoded back. The codec is an autoencoder (given, or trained on a public share of the images passed
to ``fit``, as the paper does) or, with no public image, one of the registry's (``image_codec="dct"``: a fixed map;
``"private-pca"``: learned from the private images, paid from the same budget as the flow's releases)."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import torch
from synthcity.plugins.core.dataloader import DataLoader
from synthcity.plugins.core.dataset import TensorDataset
from synthcity.plugins.core.schema import Schema

from synthcity_dpswf.adapters.image_codecs import CodecRequest, ImageCodec, ImageCodecEntry
from synthcity_dpswf.adapters.image_latent import MNIST_LATENT_DIM, AutoencoderCodec, from_synthcity_range
from synthcity_dpswf.datasets import public_private_split
from synthcity_dpswf.extensions import image_codecs
from synthcity_dpswf.models import SlicedGenerator
from synthcity_dpswf.models.spec import GeneratorSpec
from synthcity_dpswf.plugins.loaders import LoaderPath
from synthcity_dpswf.plugins.paths import Codec, FittingPlugin, PreparedData, draw_seed
from synthcity_dpswf.privacy import MECHANISMS, PrivacyPart



class ImagePath:
    """An ``ImageDataLoader``: the whole budget goes to the generator's releases (the autoencoder is public)."""

    default_release = "projected_histogram"
    """Class-conditional histograms of the latents' projections (docs/flows.md, "Flow settings for histogram releases")."""

    def flow_defaults(self, image_codec: str | None, generator: str, release: str) -> dict[str, int]:
        """The registry entry's settings measured for ``generator``'s ``release`` through ``image_codec``
        (``ImageCodecEntry.flow_defaults``); none for an autoencoder."""
        if image_codec is None:
            return {}
        return dict(image_codecs()[image_codec].flow_defaults.get((generator, release), {}))

    def prepare(self, plugin: FittingPlugin, X: DataLoader, loader: LoaderPath, spec: GeneratorSpec) -> PreparedData:
        """Refuse what images cannot take, settle the codec (paying for it where it is learned from the private
        images), calibrate the releases' noise to ``spec``'s plan (computed once, here) and encode the private
        images."""
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
        if bool((labels < 0).any()) or bool((labels >= options.n_classes).any()):
            raise ValueError(f"labels must lie in 0..{options.n_classes - 1}; set n_classes for this data.")
        if options.image_codec is not None:
            return self.private_codec(plugin, X, loader, images, labels, image_codecs()[options.image_codec], spec)
        autoencoder, private = self.autoencoder(plugin, images)
        n_public = plugin.budget.neighbouring.public_size(len(private))
        budget = plugin.budget.for_records(n_public)
        plan = spec.plan(n_public, None)
        return PreparedData(
            records=autoencoder.encode(images[private]), labels=labels[private], budget=budget,
            noise_multiplier=budget.noise_multiplier(*plan), plan=plan, n_public=n_public, codec=autoencoder,
            layout=None, schema=Schema(domain={}), info=loader.public_info(X, None),
        )

    @staticmethod
    def private_codec(plugin: FittingPlugin, X: DataLoader, loader: LoaderPath, images: torch.Tensor,
                      labels: torch.Tensor, entry: ImageCodecEntry, spec: GeneratorSpec) -> PreparedData:
        """Every image private, encoded by the registry's codec ``entry``; a codec that releases a statistic of the
        images takes ``codec_share`` of mu^2 of the run's Gaussian budget (z_c = z / sqrt(s), z the analytic Gaussian
        multiplier at (epsilon, delta)) and is the releases' accountant's prior (privacy.md, "A private image
        codec": through a plugin)."""
        options = plugin.image_options
        n_public = plugin.budget.neighbouring.public_size(len(images))
        budget = plugin.budget.for_records(n_public)
        request = CodecRequest(0.0, 0.0, plugin.budget.neighbouring, options.dct_frequencies, options.pca_components)
        paid = None
        if entry.paid:
            if math.isinf(budget.epsilon):
                raise ValueError(f"image_codec={options.image_codec!r} is paid from the budget, and epsilon = inf leaves "
                                 "no noise to share; give a finite epsilon or image_codec='dct'.")
            epsilon, delta = budget.share_guarantee(entry.share(options.codec_share))
            request = dataclasses.replace(request, epsilon=epsilon, delta=delta)
        codec: ImageCodec = entry.build(images, request)
        if entry.paid:
            part: PrivacyPart = codec.privacy_part  # type: ignore[attr-defined]
            paid, budget = dataclasses.replace(part, accounted=True), codec.spend(budget)  # type: ignore[attr-defined]
        plan = spec.plan(n_public, budget.prior)
        return PreparedData(
            records=codec.encode(images), labels=labels, budget=budget, noise_multiplier=budget.noise_multiplier(*plan),
            plan=plan, n_public=n_public, codec=codec, layout=None, schema=Schema(domain={}),
            info=loader.public_info(X, None), paid=paid,
        )

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
                 syn_schema: Schema) -> DataLoader:
        """``count`` generated (image, label) pairs, decoded by the autoencoder, through synthcity's image sampler."""
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

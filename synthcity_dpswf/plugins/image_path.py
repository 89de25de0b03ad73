"""Images through a plugin: latents of an autoencoder (given, or trained on a public share of the images passed to
``fit``) with their labels, one record per (image, label) pair, and generated images decoded back."""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch
from synthcity.plugins.core.dataloader import DataLoader
from synthcity.plugins.core.dataset import TensorDataset
from synthcity.plugins.core.schema import Schema

from synthcity_dpswf.adapters.image_latent import MNIST_LATENT_DIM, ImageLatentAdapter, from_synthcity_range
from synthcity_dpswf.datasets import public_private_split
from synthcity_dpswf.models import SlicedGenerator
from synthcity_dpswf.models.base import check_privacy_target
from synthcity_dpswf.plugins.loaders import LoaderPath
from synthcity_dpswf.plugins.paths import Codec, PreparedData
from synthcity_dpswf.privacy import MECHANISMS
from synthcity_dpswf.privacy.budget import default_delta

if TYPE_CHECKING:
    from synthcity_dpswf.plugins.base import SlicedFlowPlugin


class ImagePath:
    """An ``ImageDataLoader``: the whole budget goes to the generator's releases (the autoencoder is public)."""

    default_release = "projected_histogram"
    """Class-conditional histograms of the latents' projections (docs/flows.md, "Flow settings for histogram releases")."""

    def prepare(self, plugin: "SlicedFlowPlugin", X: DataLoader, loader: LoaderPath) -> PreparedData:
        """Refuse what images cannot take, settle the autoencoder and encode the private images."""
        if plugin.release is not None and MECHANISMS[plugin.release].takes_level_codes:
            raise ValueError(f"the {plugin.release} release is for tables (it counts level codes); leave release=None "
                             "(projected histograms) for images.")
        if plugin.neighbouring == "add_remove" and plugin.image_adapter is None:
            raise ValueError(
                "under add/remove the public half drawn from the images passed to fit depends on their number (one image "
                "more redraws the split); pass image_adapter, an autoencoder trained on public images."
            )
        images, labels = X.unpack().tensors()
        images, labels = from_synthcity_range(images.float()), labels.long()
        if bool((labels < 0).any()) or bool((labels >= plugin.n_classes).any()):
            raise ValueError(f"labels must lie in 0..{plugin.n_classes - 1}; set n_classes for this data.")
        adapter, private = self.autoencoder(plugin, images)
        n_public = plugin.public_size(len(private))
        delta = default_delta(n_public) if plugin.delta is None else plugin.delta
        check_privacy_target(plugin.epsilon, delta, n_public)
        return PreparedData(
            records=adapter.encode(images[private]), labels=labels[private], epsilon=plugin.epsilon, delta=delta,
            codec=adapter, layout=None, schema=Schema(domain={}), info=loader.public_info(X, None),
        )

    @staticmethod
    def autoencoder(plugin: "SlicedFlowPlugin", images: torch.Tensor) -> tuple[ImageLatentAdapter, torch.Tensor]:
        """The plugin's ``image_adapter`` (every image private), or one trained on a random ``public_fraction`` of
        ``images`` (the rest private), as the paper does, with its refiner on the same images."""
        if isinstance(plugin.image_adapter, ImageLatentAdapter):
            return plugin.image_adapter, torch.arange(len(images))
        if plugin.image_adapter is not None:
            return ImageLatentAdapter.load(plugin.image_adapter), torch.arange(len(images))
        public, private = public_private_split(len(images), plugin.public_fraction, plugin.random_state)
        architecture = "mnist" if images.shape[-1] == 32 else "dcgan"
        latent_dim = plugin.latent_dim
        if latent_dim is None and architecture == "mnist":
            latent_dim = MNIST_LATENT_DIM
        adapter = ImageLatentAdapter(architecture, latent_dim=latent_dim, channels=images.shape[1])
        adapter.fit(
            images[public], epochs=plugin.autoencoder_epochs, seed=plugin.random_state,
            description=f"a random {plugin.public_fraction:.0%} of the images passed to fit, public by assumption",
        )
        if plugin.refiner_epochs > 0:
            adapter.fit_refiner(images[public], epochs=plugin.refiner_epochs, adversarial_weight=plugin.refiner_weight,
                                seed=plugin.random_state)
        return adapter, private

    def generate(self, plugin: "SlicedFlowPlugin", generator: SlicedGenerator, codec: Codec, count: int,
                 syn_schema: Schema) -> DataLoader:
        """``count`` generated (image, label) pairs, decoded by the autoencoder, through synthcity's image sampler."""
        assert isinstance(codec, ImageLatentAdapter)

        def sample_images(n: int) -> TensorDataset:
            latents, labels = generator.sample_labelled(n, seed=plugin.draw_seed())
            return TensorDataset(images=codec.decode(latents.cpu()), targets=labels)

        return plugin._safe_generate_images(sample_images, count, syn_schema)

    def public_line(self, codec: Codec) -> str:
        assert isinstance(codec, ImageLatentAdapter)
        return f"the autoencoder, trained on {codec.public_description}"

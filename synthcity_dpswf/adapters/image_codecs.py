"""Image codecs for the image pipeline: one-channel ``(n, 1, H, W)`` images in [0, 1] <-> unit-sphere records.

``ImageCodec`` is what the pipeline (the image plugins, ``dpswf images``) needs of a codec. Every codec is an entry of
one registry (``extensions.image_codecs``: an ``ImageCodecEntry``, built from the private images and a
``CodecRequest``), which says what public images it trains on (``public_images``): an autoencoder
(``AutoencoderCodec``) trained on a public half of the training set (``"public-half"``) or on the other dataset's
training set (``"other-dataset"``), or one of the two linear codecs that need no public image, ``FixedDCTCodec``
(``"dct"``: trained on nothing) and ``PrivatePCAImageCodec`` (``"private-pca"``: learned from the private images and
paid for; privacy.md, "A private image codec"). The plugins (``image_codec=``, the codecs that need no public image)
and ``dpswf images`` (``--codec``) read the same registry, so an extension's codec reaches both.
"""

from __future__ import annotations

import hashlib
import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal, Protocol, runtime_checkable

import torch

from synthcity_dpswf.adapters.checkpoints import public_half_autoencoder, whole_training_set_autoencoder
from synthcity_dpswf.adapters.codec import Codec
from synthcity_dpswf.adapters.dct import DCTTransform
from synthcity_dpswf.adapters.image_latent import (
    MNIST_LATENT_DIM, REFINER_ADVERSARIAL_WEIGHT, REFINER_EPOCHS, AutoencoderCodec, check_images,
)
from synthcity_dpswf.adapters.private_autoencoder import PrivateAutoencoderCodec, PrivateAutoencoderSettings
from synthcity_dpswf.adapters.private_pca import PrivatePCABasis
from synthcity_dpswf.math.checks import check_fraction, check_non_negative_int, check_positive, check_positive_int
from synthcity_dpswf.privacy import PrivacyPart, secret_generator
from synthcity_dpswf.privacy.budget import Budget
from synthcity_dpswf.privacy.gaussian import SampledGaussian
from synthcity_dpswf.privacy.neighbouring import Adjacency

DCT_FREQUENCIES = 12
"""K of the ``"dct"`` codec (u + v < 12: 77 features of a 32 x 32 image): the K of the best CAS on MNIST without
public data among those tried; fewer frequencies lower the codec's own ceiling (real images through it), more raise
it but leave the flow more features to fit from the same noisy releases, and its CAS falls."""
PCA_COMPONENTS = 30
"""K of the ``"private-pca"`` codec: the top 30 eigenvectors, chosen over 50 by the mean CAS of the MLP and the CNN
on the validation split of MNIST at epsilon = 10 and at epsilon = 1
(``benchmarks/results/image_codecs_mnist_validation.md``)."""
PCA_FLOW_SETTINGS: Mapping[str, int] = MappingProxyType({"n_release_directions": 2000, "n_bins": 16, "n_steps": 3000})
"""DPSWflow's release and flow settings for the ``"private-pca"`` codec, chosen on the validation split of MNIST by
the mean CAS of the MLP and the CNN: G = 16 bins ties G = 32 at epsilon = 10 and beats it at epsilon = 1; more
directions, steps or bins gained nothing, the flow's own resolution being what is left under the codec's ceiling
(``benchmarks/results/image_codecs_mnist_validation.md``, ``benchmarks/results/pca_flow_settings_mnist_validation.md``).
FashionMNIST's own validation split preferred G = 32 at epsilon = 10
(``benchmarks/results/image_codecs_fashion_mnist_validation.md``): pass ``--bins 32`` there. The generator's own
defaults, chosen for the public autoencoder, score lower on this codec (``benchmarks/results/image_cpu_costs.md``)."""
CODEC_SHARE = 0.2
"""The ``"private-pca"`` codec's share of the budget: of mu^2 in Gaussian DP, its release an entry of the generator's
accounting (the prior) for every generator, through a plugin and ``dpswf images`` alike (privacy.md, "A private image
codec")."""
AUTOENCODER_CODEC_SHARE = 0.5
"""The ``"private-autoencoder"`` codec's share of mu^2: chosen over 0.2 on MNIST's validation split at epsilon 10 by the
mean CAS of both classifiers (``benchmarks/results/dpsgd_codec_mnist_validation.md``); its schedule an entry of the
same accounting (privacy.md, "A private image codec trained by DP-SGD")."""
AUTOENCODER_FLOW_SETTINGS: Mapping[str, int] = MappingProxyType({"n_release_directions": 4000, "n_bins": 16, "n_steps": 3000})
"""DPSWflow's release and flow settings for the ``"private-autoencoder"`` codec, chosen by CAS on MNIST's validation
split at epsilon 10 (``benchmarks/results/dpsgd_codec_mnist_validation.md``; four fits of it in
``benchmarks/results/dpsgd_flow_replicates_mnist_validation_spread.md``). The generator's own defaults (L = 500, 1,500
steps), chosen for the public autoencoder, score 2.5 / 0.9 points lower (MLP / CNN) at epsilon 10 on this codec and
within one fit's spread at epsilon 1, where no flow setting moves the CNN beyond it
(``benchmarks/results/dpsgd_flow_replicates_mnist_validation_spread.md``). 32 bins gave a lower FID at epsilon 10
(``benchmarks/results/dpsgd_flow_settings.md``) but one fit of it a lower MLP CAS, and none was run at epsilon 1: pass
``n_bins=32`` for images to look at."""


class ImageCodec(Codec, Protocol):
    """The codec protocol (``adapters.codec.Codec``) on images: ``(n, C, H, W)`` images in [0, 1] <-> unit-sphere
    records, with the seconds its training took (0 for a codec trained on nothing)."""

    training_seconds: float

    def encode(self, images: torch.Tensor) -> torch.Tensor:
        """Unit-norm records ``(n, d)`` of the images, on CPU."""

    def decode(self, latents: torch.Tensor) -> torch.Tensor:
        """Images in [0, 1] from records (generated ones need not be unit-norm), on CPU."""


@runtime_checkable
class PaidImageCodec(ImageCodec, Protocol):
    """What a codec that releases a statistic of the private images (an entry with ``paid=True``) provides besides the
    codec: its release as a part of the budget (``privacy_part``, its own guarantee), the multiplier it was released at,
    and the budget left after it (``spend``: its release one more entry of the accounting)."""

    privacy_part: PrivacyPart
    noise_multiplier: float

    def spend(self, budget: Budget) -> Budget:
        """``budget`` after this codec's release."""


def check_one_channel(images: torch.Tensor, codec: str) -> None:
    """Raise ``ValueError`` unless ``images`` are ``(n, 1, H, W)`` in [0, 1]: the linear codecs work per pixel."""
    check_images(images)
    if images.shape[1] != 1:
        raise ValueError(f"the {codec} codec takes one-channel images (n, 1, H, W), got {images.shape[1]} channels.")


class FixedDCTCodec:
    """A ``DCTTransform`` on one-channel ``(n, 1, H, W)`` images.

    A fixed map that uses no statistic of any image, so a run through it needs no public data; decoding puts each
    image on [0, 1] (``adapters.pixel_range``), post-processing of the generated records.
    """

    training_seconds = 0.0

    def __init__(self, codec: DCTTransform, n_frequencies: int) -> None:
        self.codec = codec
        self.public_description = (
            f"the {codec.dim} lowest 2-D DCT frequencies (u + v < {n_frequencies}, mean dropped) of each image, "
            "on the unit sphere; trained on no image"
        )

    def encode(self, images: torch.Tensor) -> torch.Tensor:
        """Unit-norm DCT features ``(n, dim)`` (a constant image: the fixed record e_1)."""
        check_one_channel(images, "DCT")
        return self.codec.encode(images[:, 0])

    def decode(self, latents: torch.Tensor) -> torch.Tensor:
        """Images ``(n, 1, H, W)`` in [0, 1] from features (inverse DCT, then ``adapters.pixel_range``)."""
        return self.codec.decode(latents.cpu()).unsqueeze(1)


class PrivatePCAImageCodec:
    """``PrivatePCABasis`` fitted on the private one-channel ``(n, 1, H, W)`` images at ``(epsilon, delta)``: a
    release, listed in the run's report as ``privacy_part`` (noise multiplier ``noise_multiplier``), then a fixed
    map like the DCT codec."""

    training_seconds = 0.0

    def __init__(self, images: torch.Tensor, n_components: int, epsilon: float, delta: float,
                 neighbouring: Adjacency | str) -> None:
        check_one_channel(images, "private PCA")
        self.codec = PrivatePCABasis.fit(images[:, 0], n_components, epsilon, delta, secret_generator(), neighbouring)
        release = self.codec.release
        if release is None:
            raise RuntimeError("PrivatePCABasis.fit returned a codec without its release; it must keep it.")
        self.noise_multiplier = release.noise_multiplier
        self.public_description = (
            f"the top {n_components} eigenvectors of the private images' second moment, released at epsilon = "
            f"{epsilon:.4g}, delta = {delta:.3g}; no public image"
        )
        self.privacy_part = PrivacyPart(
            "private codec", epsilon, delta,
            f"Gaussian second moment of the unit-norm private images (z = {release.noise_multiplier:.3g}, "
            f"Delta = {release.sensitivity:.3g}; privacy.md, \"A private image codec\")",
            release.other_adjacency(),
        )

    def spend(self, budget: Budget) -> Budget:
        """``budget`` after this codec's release: one more one-shot Gaussian mechanism at its multiplier."""
        return budget.spend(float(self.noise_multiplier))

    def encode(self, images: torch.Tensor) -> torch.Tensor:
        """Unit-norm codes ``(n, K)`` of one-channel images."""
        check_one_channel(images, "private PCA")
        return self.codec.encode(images[:, 0])

    def decode(self, latents: torch.Tensor) -> torch.Tensor:
        """Images ``(n, 1, H, W)`` in [0, 1] from codes (back-projection, then ``adapters.pixel_range``)."""
        return self.codec.decode(latents.cpu()).unsqueeze(1)


PublicImages = Literal["none", "training_half", "other_dataset", "given"]
"""The public images a codec trains on: none (it is built from the private images alone, or from nothing), a seeded
half of the run's training set (the rest private; under add/remove one image more or less would redraw it), the
whole training set of another dataset (every image of the run's own training set private), or images the user gives
as public (``GivenImagesAutoencoder``; every image passed to ``fit`` private)."""


@dataclass(frozen=True)
class PublicImageSet:
    """Public images for a codec: ``images[indices]`` of the training set ``images`` of ``dataset`` (the run's own
    dataset for a public half, the other dataset for ``"other_dataset"``), the set a checkpoint is bound to."""

    dataset: str
    images: torch.Tensor
    indices: torch.Tensor


@dataclass(frozen=True)
class AutoencoderRequest:
    """How a codec trains: for one trained on public images, where its checkpoint is kept (``adapters.checkpoints``;
    ``None``: not kept, the DP-SGD codec's only) and its settings; for every codec whether it shows its progress."""

    cache: Path | None
    epochs: int = 10
    latent_dim: int = MNIST_LATENT_DIM
    refiner_epochs: int = 0
    seed: int = 0
    progress: bool = False
    device: str | torch.device | None = None


@dataclass(frozen=True)
class GivenImagesAutoencoder:
    """The ``"public-autoencoder"`` codec's settings: the public ``images`` (``(m, C, H, W)`` in [0, 1]) its
    autoencoder trains on for ``epochs``, at latent size ``latent_dim`` (``None``: 16 for 32 x 32 images, 48 for the
    larger architecture), and its refiner's epochs (0: none) and adversarial weight (``AutoencoderCodec.fit_refiner``).
    ``seed`` seeds the training."""

    images: torch.Tensor | None = None
    epochs: int = 10
    latent_dim: int | None = None
    refiner_epochs: int = REFINER_EPOCHS
    refiner_weight: float = REFINER_ADVERSARIAL_WEIGHT
    seed: int = 0

    def __post_init__(self) -> None:
        if self.images is not None:
            check_images(self.images)
        check_positive_int("epochs", self.epochs)
        if self.latent_dim is not None:
            check_positive_int("latent_dim", self.latent_dim)
        check_non_negative_int("refiner_epochs (0: no refiner)", self.refiner_epochs)
        check_positive("refiner_weight", self.refiner_weight)


@dataclass(frozen=True)
class CodecRequest:
    """What building a codec may use besides the private images: the budget of a codec that releases a statistic of
    them (``epsilon``, ``delta``: its own part, already split from the run's; 0 for one that releases nothing), the
    run's adjacency, the built-in codecs' sizes, and for a codec trained on public images (``public_images`` other
    than ``"none"``) those images and how to train on them."""

    epsilon: float
    delta: float
    neighbouring: Adjacency = Adjacency.REPLACE_ONE
    dct_frequencies: int = DCT_FREQUENCIES
    pca_components: int = PCA_COMPONENTS
    public: PublicImageSet | None = None
    autoencoder: AutoencoderRequest | None = None
    private_autoencoder: PrivateAutoencoderSettings = field(default_factory=PrivateAutoencoderSettings)
    """The ``"private-autoencoder"`` codec's settings."""
    given_public: GivenImagesAutoencoder = field(default_factory=GivenImagesAutoencoder)
    """The ``"public-autoencoder"`` codec's settings and public images."""
    data_key: str | None = None
    """A public name of the private image set (dataset, split, seed), under which a codec trained on it may be kept in
    ``autoencoder.cache`` and found again (``None``: never kept); never a statistic of the images."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "neighbouring", Adjacency.of(self.neighbouring))


@dataclass(frozen=True)
class ImageCodecEntry:
    """An image codec as the registry lists it: ``build`` makes it from the private images and a ``CodecRequest``;
    ``public_images`` says which public images it trains on (the request's ``public``); ``paid`` whether it releases
    a statistic of the private images (then it takes a share of the run's budget, and the codec has ``privacy_part``
    and ``noise_multiplier``); ``assumption`` is what the run assumes public, in the results' words, with
    ``{dataset}`` and ``{other}`` standing for the run's dataset and the other one (``describe``); ``flow_defaults``
    the release and flow settings measured for it, per (generator, release kind); ``codec_share`` the share of mu^2 a
    paid codec takes when the run gives none (``share``); ``options`` the codec's own settings a plugin may give
    (``codec_options``: name -> what it sets) and ``configure`` how they set the request (``configured``)."""

    build: Callable[[torch.Tensor, CodecRequest], ImageCodec]
    paid: bool
    assumption: str
    flow_defaults: Mapping[tuple[str, str], Mapping[str, int]] = field(default_factory=lambda: MappingProxyType({}))
    public_images: PublicImages = "none"
    codec_share: float = CODEC_SHARE
    planned_schedule: Callable[[int, CodecRequest], SampledGaussian] | None = None
    """For a codec that spends a sampled schedule (DP-SGD): that schedule for n private images at multiplier 1, known
    before the codec reads an image, so that a release plan its accountant cannot compose with is refused before
    training (``recipes.images.plan_images``)."""
    options: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    configure: Callable[[CodecRequest, Mapping[str, Any]], CodecRequest] | None = None

    def accepted_options(self) -> tuple[str, ...]:
        """The names ``configured`` takes: the entry's ``options``, and ``"share"`` (of mu^2) for a paid codec."""
        return tuple(sorted(self.options)) + (("share",) if self.paid else ())

    def configured(self, name: str, request: CodecRequest, options: Mapping[str, Any]) -> CodecRequest:
        """``request`` with the codec's own ``options`` applied (``configure``; ``"share"`` is the caller's: the
        budget's split), or ``ValueError`` naming an option this codec (registered as ``name``) does not take, before
        any image is read."""
        unknown = sorted(set(options) - set(self.accepted_options()))
        if unknown:
            takes = ", ".join(map(repr, self.accepted_options())) or "none"
            raise ValueError(f"image codec {name!r} takes no option {', '.join(map(repr, unknown))} (its options: "
                             f"{takes}).")
        if "share" in options:
            check_fraction("codec_options['share']", options["share"])
        own = {key: value for key, value in options.items() if key != "share"}
        return request if not own or self.configure is None else self.configure(request, own)

    def share(self, given: float | None) -> float:
        """The codec's share of mu^2: ``given``, or where it is ``None`` the one chosen for this codec."""
        return self.codec_share if given is None else given

    def describe(self, dataset: str, other: str = "") -> str:
        """The public-data assumption of a run on ``dataset`` (its name as results print it; ``other``: the other
        dataset's)."""
        return self.assumption.format(dataset=dataset, other=other)


def fixed_dct_codec(images: torch.Tensor, request: CodecRequest) -> FixedDCTCodec:
    """The ``"dct"`` entry's codec for images of ``images``' size: a ``DCTTransform`` keeping K =
    ``request.dct_frequencies``; it reads nothing of the images but their shape."""
    height, width = images.shape[-2], images.shape[-1]
    return FixedDCTCodec(DCTTransform(height, width, n_frequencies=request.dct_frequencies, max_value=1.0),
                         request.dct_frequencies)


def count_option(option: str, field: str) -> Callable[[CodecRequest, Mapping[str, Any]], CodecRequest]:
    """A ``configure`` that sets the request's ``field`` to the positive integer given as ``option``."""

    def configure(request: CodecRequest, options: Mapping[str, Any]) -> CodecRequest:
        value = options.get(option, getattr(request, field))
        check_positive_int(f"codec_options[{option!r}]", value)
        return dataclasses.replace(request, **{field: value})

    return configure


FIXED_DCT = ImageCodecEntry(
    fixed_dct_codec, paid=False, assumption="a fixed DCT codec: no public data",
    options=MappingProxyType({"frequencies": f"K, the frequencies u + v < K kept (default {DCT_FREQUENCIES})"}),
    configure=count_option("frequencies", "dct_frequencies"),
)
"""The registry's ``"dct"`` entry (``extensions.BuiltinCodecs``)."""


def private_pca_codec(images: torch.Tensor, request: CodecRequest) -> PrivatePCAImageCodec:
    """The ``"private-pca"`` entry's codec: ``request.pca_components`` eigenvectors released at the request's
    budget."""
    return PrivatePCAImageCodec(images, request.pca_components, request.epsilon, request.delta, request.neighbouring)


PRIVATE_PCA = ImageCodecEntry(
    private_pca_codec, paid=True, assumption="a codec learned from the private images and paid for: no public data",
    flow_defaults=MappingProxyType({("dpswflow", "projected_histogram"): PCA_FLOW_SETTINGS}),
    options=MappingProxyType({"components": f"K, the eigenvectors kept (default {PCA_COMPONENTS})"}),
    configure=count_option("components", "pca_components"),
)
"""The registry's ``"private-pca"`` entry (``extensions.BuiltinCodecs``)."""


def private_autoencoder_codec(images: torch.Tensor, request: CodecRequest) -> PrivateAutoencoderCodec:
    """The ``"private-autoencoder"`` entry's codec: ``PrivateAutoencoderCodec`` trained by DP-SGD on the private
    images at the request's budget, or, with a ``data_key``, the checkpoint under ``request.autoencoder.cache`` saved
    for that key with exactly these settings and privacy parameters (its name is a hash of them, all public; ``load``
    checks them)."""
    settings, cache = request.private_autoencoder, None if request.autoencoder is None else request.autoencoder.cache
    progress = request.autoencoder is not None and request.autoencoder.progress
    path = None
    if cache is not None and request.data_key is not None:
        key = f"{settings}-{request.epsilon!r}-{request.delta!r}-{request.neighbouring}-{request.data_key}"
        path = cache / f"private_autoencoder_{hashlib.sha256(key.encode()).hexdigest()[:16]}.pt"
    if path is not None and path.exists():
        return PrivateAutoencoderCodec.load(path, request.data_key, settings, request.epsilon, request.delta,  # type: ignore[arg-type]
                                            request.neighbouring)
    codec = PrivateAutoencoderCodec(images, settings, request.epsilon, request.delta, request.neighbouring, progress)
    if path is not None:
        codec.save(path, request.data_key)  # type: ignore[arg-type]
    return codec


PRIVATE_AUTOENCODER_OPTIONS: Mapping[str, str] = MappingProxyType({
    "latent_dim": "latent size d", "width": "channels of the first convolution",
    "epochs": "DP-SGD's expected passes over the images", "batch_size": "DP-SGD's batch size b",
    "clip": "the per-image clipping norm C", "learning_rate": "Adam's learning rate",
    "sample_rate": "the Poisson rate under add/remove", "replace_one_sampling": "'poisson' or 'fixed' batches",
    "decode_temperature": "how generated codes are decoded",
})
"""The ``"private-autoencoder"`` codec's options: ``PrivateAutoencoderSettings``' fields, checked there."""


def _private_autoencoder_options(request: CodecRequest, options: Mapping[str, Any]) -> CodecRequest:
    """The DP-SGD settings given, where they apply under the request's adjacency: the Poisson rate is set under
    add/remove (under replace-one it is batch_size / n), the replace-one batches' kind under replace-one."""
    if request.neighbouring.n_is_public and "sample_rate" in options:
        raise ValueError("codec_options['sample_rate'] sets the DP-SGD codec's Poisson rate under add/remove; under "
                         "replace-one its rate is batch_size / n: give batch_size.")
    if not request.neighbouring.n_is_public and "replace_one_sampling" in options:
        raise ValueError("codec_options['replace_one_sampling'] applies under replace-one; under add/remove the DP-SGD "
                         "codec's batches are Poisson samples at sample_rate.")
    return dataclasses.replace(request, private_autoencoder=dataclasses.replace(request.private_autoencoder, **options))


PRIVATE_AUTOENCODER = ImageCodecEntry(
    private_autoencoder_codec, paid=True,
    assumption="a convolutional autoencoder trained by DP-SGD on the private images and paid for: no public data",
    codec_share=AUTOENCODER_CODEC_SHARE,
    flow_defaults=MappingProxyType({("dpswflow", "projected_histogram"): AUTOENCODER_FLOW_SETTINGS}),
    planned_schedule=lambda n, request: request.private_autoencoder.schedule(n, request.neighbouring, 1.0).history(),
    options=PRIVATE_AUTOENCODER_OPTIONS, configure=_private_autoencoder_options,
)
"""The registry's ``"private-autoencoder"`` entry (``extensions.BuiltinCodecs``)."""


def public_images_of(request: CodecRequest, codec: str) -> tuple[PublicImageSet, AutoencoderRequest]:
    """The request's public images and training settings, or ``ValueError`` naming what a codec trained on public
    images was not given."""
    if request.public is None or request.autoencoder is None:
        raise ValueError(f"the {codec} codec trains an autoencoder on public images: the request needs public (a "
                         "PublicImageSet) and autoencoder (an AutoencoderRequest).")
    return request.public, request.autoencoder


def public_half_codec(images: torch.Tensor, request: CodecRequest) -> AutoencoderCodec:
    """The ``"public-half"`` entry's codec: the autoencoder (and its refiner) trained on the public half of the run's
    training set, kept under the request's cache and bound to that split (``checkpoints.public_half_autoencoder``);
    it reads no private image."""
    public, settings = public_images_of(request, "public-half")
    return public_half_autoencoder(
        settings.cache, public.dataset, public.images, public.indices, settings.epochs, settings.seed, settings.progress,
        device=settings.device, latent_dim=settings.latent_dim, refiner_epochs=settings.refiner_epochs,
    )


def other_dataset_codec(images: torch.Tensor, request: CodecRequest) -> AutoencoderCodec:
    """The ``"other-dataset"`` entry's codec: the autoencoder (and its refiner) trained on the other dataset's whole
    training set (``checkpoints.whole_training_set_autoencoder``); it reads no private image."""
    public, settings = public_images_of(request, "other-dataset")
    return whole_training_set_autoencoder(
        settings.cache, public.dataset, public.images[public.indices], settings.epochs, settings.seed, settings.progress,
        device=settings.device, latent_dim=settings.latent_dim, refiner_epochs=settings.refiner_epochs,
    )


PUBLIC_HALF = ImageCodecEntry(
    public_half_codec, paid=False, assumption="autoencoder trained on the public half of {dataset}",
    public_images="training_half",
)
"""The registry's ``"public-half"`` entry: the paper's protocol, ``dpswf images``' default."""
OTHER_DATASET = ImageCodecEntry(
    other_dataset_codec, paid=False,
    assumption="autoencoder trained on {other}'s training set: no {dataset} image outside the private set",
    public_images="other_dataset",
)
"""The registry's ``"other-dataset"`` entry."""


def given_images_codec(images: torch.Tensor, request: CodecRequest) -> AutoencoderCodec:
    """The ``"public-autoencoder"`` entry's codec: an ``AutoencoderCodec`` (the paper's architecture for 32 x 32
    images, the larger one otherwise) trained on the public images the request gives, with its refiner on the same
    images; it reads no private image but their size."""
    given = request.given_public
    if given.images is None:
        raise ValueError("the public-autoencoder codec trains on public images: give them as codec_options={'images': "
                         "...} (an ImageDataLoader or (m, C, H, W) images in synthcity's [-1, 1] range).")
    if tuple(given.images.shape[1:]) != tuple(images.shape[1:]):
        raise ValueError(f"the public images are {tuple(given.images.shape[1:])} and the private ones "
                         f"{tuple(images.shape[1:])}: give public images of the private images' shape.")
    architecture = "mnist" if images.shape[-1] == 32 else "dcgan"
    latent_dim = given.latent_dim
    if latent_dim is None and architecture == "mnist":
        latent_dim = MNIST_LATENT_DIM
    autoencoder = AutoencoderCodec(architecture, latent_dim=latent_dim, channels=images.shape[1])
    autoencoder.fit(given.images, epochs=given.epochs, seed=given.seed,
                    description=f"{len(given.images)} public images given with the codec")
    if given.refiner_epochs > 0:
        autoencoder.fit_refiner(given.images, epochs=given.refiner_epochs, adversarial_weight=given.refiner_weight,
                                seed=given.seed)
    return autoencoder


def _given_images_options(request: CodecRequest, options: Mapping[str, Any]) -> CodecRequest:
    return dataclasses.replace(request, given_public=dataclasses.replace(request.given_public, **options))


PUBLIC_AUTOENCODER = ImageCodecEntry(
    given_images_codec, paid=False, assumption="an autoencoder trained on public images the user gave",
    public_images="given",
    options=MappingProxyType({
        "images": "the public images (required)", "epochs": "the autoencoder's epochs (default 10)",
        "latent_dim": "its latent size (default 16 for 32 x 32 images)",
        "refiner_epochs": f"its refiner's epochs (0: none; default {REFINER_EPOCHS})",
        "refiner_weight": f"the refiner's adversarial weight (default {REFINER_ADVERSARIAL_WEIGHT}, chosen on MNIST)",
    }),
    configure=_given_images_options,
)
"""The registry's ``"public-autoencoder"`` entry: the images a plugin user passes as public
(``codec_options={"images": ...}``), never any image passed to ``fit``."""

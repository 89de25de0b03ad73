"""Image sets become fitted generators, with no synthcity here: a run's configuration (``ImageRunConfig``), the
codec each public-data assumption builds (``build_codec``) at its share of the run's ``Budget`` (``codec_release``), the
generator (``build_generator``) fitted at what the codec leaves (``fit_releases``) and the report
(``composed_report``). ``dpswf images``
(``experiments.images``) and the benchmarks' image runner run them; the codecs are described there."""

from __future__ import annotations

import dataclasses
import hashlib
import math
from dataclasses import dataclass, field
from pathlib import Path

import torch

from synthcity_dpswf.adapters.image_codecs import (
    DCT_FREQUENCIES,
    PCA_COMPONENTS,
    AutoencoderRequest,
    CodecRequest,
    ImageCodec,
    ImageCodecEntry,
    PublicImageSet,
)
from synthcity_dpswf.adapters.image_latent import MNIST_LATENT_DIM, REFINER_EPOCHS
from synthcity_dpswf.adapters.private_autoencoder import PrivateAutoencoderSettings
from synthcity_dpswf.datasets import DATASET_NAMES, IMAGE_LOADERS, OTHER_DATASET, DatasetUnavailable, public_private_split
from synthcity_dpswf.extensions import image_codecs
from synthcity_dpswf.models import DPSWFlow, DPSWFlowR, DPSWGen, FlowSettings, SlicedGenerator
from synthcity_dpswf.privacy import Adjacency, PrivacyReport
from synthcity_dpswf.privacy.budget import Budget

GENERATORS = {"dpswflow_r": DPSWFlowR, "dpswflow": DPSWFlow, "dpswgen": DPSWGen}


def codec_names() -> tuple[str, ...]:
    """Every codec ``dpswf images`` takes: the registry's (``extensions.image_codecs``), the built-in ones first
    (``"public-half"``, the paper's protocol and the default, ``"other-dataset"``, ``"dct"``, ``"private-pca"``), then
    any extension's."""
    return tuple(image_codecs())


def codec_entry(codec: str) -> ImageCodecEntry:
    """The registry's entry of ``codec``, or ``ValueError`` listing the names there are."""
    entry = image_codecs().get(codec)
    if entry is None:
        raise ValueError(f"codec must be one of {list(codec_names())}, got {codec!r}.")
    return entry


FULL_FID_SAMPLES = 10000
"""``fid_samples`` of the image literature's FID protocol: Inception pool3 features of 10,000 generated samples
against the 10,000 test images, torchmetrics' Frechet distance. The quick default (1,000 against the first 1,000)
is biased upwards and compares only with itself."""


@dataclass(frozen=True)
class ImageRunConfig:
    """Public settings of one run (all stated in the results).

    Defaults: one class-conditional projected-histogram release (DPSWflow, L = 500 directions, G = 16 bins)
    and the plain flow (h = 1, 1,500 steps), chosen on a validation split of the MNIST training set
    (docs/flows.md, "Flow settings for histogram releases") with the public autoencoder; the ``"private-pca"``
    codec has its own (``PCA_FLOW_SETTINGS``, applied by ``flow_defaults`` and ``dpswf images``). ``None`` for
    ``n_release_directions`` and ``batch_size`` takes the generator's defaults. With ``release="record"``, h = 3
    and 3,000 steps measured best (CAS 59.4% at epsilon = 10 against 25.7% at h = 1). ``codec`` is one of ``codec_names()`` (each registry entry's
    ``assumption`` says what it assumes public); ``latent_dim`` and ``autoencoder_epochs`` shape its autoencoder:
    latent 16 and 10 epochs were chosen on the same validation split (docs/flows.md, "A stronger public
    autoencoder": CAS of the reconstructions 94.9% against 86.9% for the paper's latent 8 and 5 epochs), and
    ``private_autoencoder`` the ``"private-autoencoder"`` codec's DP-SGD settings. ``refiner_epochs`` the autoencoders' refiner, trained on the same public images (``AutoencoderCodec.fit_refiner``; 0: none;
    docs/flows.md, "A refiner for the public autoencoder").
    ``flow_directions`` (directions per flow step) and ``count_estimator`` are the flow's ``FlowSettings``.
    ``fid_samples``: generated images scored against as many test images (``FULL_FID_SAMPLES`` for the
    literature's protocol; 0: no FID). ``dct_frequencies``: K of the ``"dct"`` codec (the frequencies u + v < K;
    without public data, K = 16 with L = 8,000, G = 32 and 5,000 steps measured best at epsilon = 10 on the
    validation split, K = 12 with L = 4,000, G = 32, 3,000 steps at epsilon = 1: docs/flows.md). ``device``:
    where the autoencoder trains, the flow runs and the CAS classifiers train: ``"auto"`` (CUDA when torch sees
    it, else the CPU), ``"cpu"`` or ``"cuda"``. ``neighbouring``: the adjacency the releases are calibrated for
    (``"replace_one"``, the default, or ``"add_remove"``: Poisson-sampled per-step releases accounted with Opacus'
    RDP; privacy.md, "Add/remove neighbours").
    """

    dataset: str = "mnist"
    codec: str = "public-half"
    generator: str = "dpswflow"
    release: str = "projected_histogram"
    labelling: str = "conditional"
    epsilon: float = 10.0
    delta: float = 1e-5
    neighbouring: Adjacency = Adjacency.REPLACE_ONE
    feature_weight: float = 0.7
    autoencoder_epochs: int = 10
    latent_dim: int = MNIST_LATENT_DIM
    refiner_epochs: int = REFINER_EPOCHS
    n_release_directions: int | None = None
    n_bins: int = 16
    batch_size: int | None = None
    passes: float = 10.0
    n_steps: int = 1500
    step_size: float = 1.0
    flow_batch_size: int = 4000
    flow_directions: int = 70
    count_estimator: str = "simplex"
    n_samples: int = 10000
    fid_samples: int = 1000
    start: str = "gaussian"
    dct_frequencies: int = DCT_FREQUENCIES
    pca_components: int = PCA_COMPONENTS
    codec_share: float | None = None
    private_autoencoder: PrivateAutoencoderSettings = field(default_factory=PrivateAutoencoderSettings)
    device: str = "auto"
    seed: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "neighbouring", Adjacency.of(self.neighbouring))


def resolved_device(device: str) -> str:
    """``device`` with ``"auto"`` resolved: CUDA when torch sees it, else the CPU."""
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return device


def flow_defaults(codec: str, generator: str, release: str = "projected_histogram") -> dict[str, int]:
    """The ``ImageRunConfig`` fields that ``dpswf images`` sets when none is given: the registry entry's
    ``flow_defaults`` for the (generator, release) where they were measured (``adapters.image_codecs.
    PCA_FLOW_SETTINGS``: DPSWflow's projected-histogram release through the ``"private-pca"`` codec), else none
    (``ImageRunConfig``'s defaults apply)."""
    entry = codec_entry(codec)
    if generator not in GENERATORS:
        raise ValueError(f"generator must be one of {sorted(GENERATORS)}, got {generator!r}.")
    return dict(entry.flow_defaults.get((generator, release), {}))


def build_generator(config: ImageRunConfig, progress: bool, release_seed: int | None = None) -> SlicedGenerator:
    """The generator of ``config`` with its release kind and flow settings, on ``config.device`` (``"auto"``: CUDA
    when torch sees it, else the CPU). ``release_seed`` seeds the releases' noise (``None``: from OS entropy, as
    private data need; a seed only for public data, as in a validation that compares runs on the same release)."""
    settings = FlowSettings(
        n_steps=config.n_steps, step_size=config.step_size, flow_batch_size=config.flow_batch_size,
        n_directions=config.flow_directions, count_estimator=config.count_estimator,  # type: ignore[arg-type]
    )
    if config.generator not in GENERATORS:
        raise ValueError(f"generator must be one of {sorted(GENERATORS)}, got {config.generator!r}.")
    common: dict[str, object] = dict(
        release=config.release, n_release_directions=config.n_release_directions, n_bins=config.n_bins,
        labelling=config.labelling, feature_weight=config.feature_weight, settings=settings, seed=config.seed,
        neighbouring=config.neighbouring, progress=progress, device=resolved_device(config.device),
        release_seed=release_seed,
    )
    if config.generator == "dpswflow":
        return DPSWFlow(**common)  # type: ignore[arg-type]
    return GENERATORS[config.generator](batch_size=config.batch_size, passes=config.passes, **common)  # type: ignore[arg-type]


def run_budget(config: ImageRunConfig) -> Budget:
    """The run's ``Budget``: ``config``'s (epsilon, delta) under its adjacency, checked once, here."""
    return Budget(config.epsilon, config.delta, config.neighbouring)


def codec_release(config: ImageRunConfig, budget: Budget) -> tuple[float, float]:
    r"""The (epsilon, delta) of the codec's own release at ``budget``: a paid codec takes ``codec_share`` s of
    :math:`\mu^2`, :math:`z_c = z / \sqrt{s}` (``Budget.share``), stated as the analytic Gaussian epsilon of z_c at
    delta; an exact codec at epsilon = inf (no noise anywhere: not private); (0, 0) for a codec that releases
    nothing. The generator's releases then take the rest with the codec as their accountant's prior (``fit_releases``;
    privacy.md, "A private image codec")."""
    if not paid_codec(config.codec):
        return 0.0, 0.0
    if math.isinf(budget.epsilon):
        return math.inf, budget.release_delta
    return budget.share_guarantee(codec_entry(config.codec).share(config.codec_share))


def fit_releases(model: SlicedGenerator, latents: torch.Tensor, labels: torch.Tensor, budget: Budget) -> SlicedGenerator:
    """Fit ``model`` on the private codes at what ``budget`` leaves: the releases' noise calibrated once from the
    model's schedule, with the spent codec as the accountant's prior (``Budget.noise_multiplier``), as the plugins do."""
    n_public = budget.neighbouring.public_size(latents.shape[0])
    plan = model.plan(n_public, budget.prior)
    return model.fit(latents, None, budget.release_delta, labels=labels, n_classes=10,
                     noise_multiplier=budget.noise_multiplier(*plan), prior=budget.prior, plan=plan)


def paid_codec(codec: str) -> bool:
    """Whether ``codec`` releases a statistic of the private images, paid from the run's budget (its registry entry's
    ``paid``: ``"private-pca"``)."""
    return codec_entry(codec).paid


def spent(budget: Budget, config: ImageRunConfig, codec: ImageCodec) -> Budget:
    """``budget`` after ``codec``'s release when ``config.codec`` is paid (the codec's ``spend``: its one-shot Gaussian
    mechanism, or its DP-SGD schedule); unchanged for a codec that releases nothing, or at epsilon = inf."""
    if not paid_codec(config.codec) or math.isinf(budget.epsilon):
        return budget
    return codec.spend(budget)  # type: ignore[attr-defined]


def build_codec(
    config: ImageRunConfig, images: torch.Tensor, public: torch.Tensor, private: torch.Tensor, budget: Budget,
    cache: Path, progress: bool, other: tuple[str, torch.Tensor] | None = None,
) -> ImageCodec:
    """The codec of ``config.codec``, built by its registry entry from the private images ``images[private]`` of the
    training set ``images`` (split into ``public`` and ``private`` indices by ``split_training_set``) and the public
    images its entry trains on (``public_images``): the public half ``images[public]``, or ``other`` = (name, whole
    training set of the other dataset; ``load_other_training_set``); an autoencoder is kept under ``cache``. A paid
    codec is released at ``budget``'s codec share (``codec_release``)."""
    entry = codec_entry(config.codec)
    public_set = None
    if entry.public_images == "training_half":
        public_set = PublicImageSet(config.dataset, images, public)
    elif entry.public_images == "other_dataset":
        if other is None:
            raise ValueError(f"codec {config.codec!r} trains on the other dataset's training set: pass "
                             "load_other_training_set's as other.")
        name, other_images = other
        public_set = PublicImageSet(name, other_images, torch.arange(len(other_images)))
    training = AutoencoderRequest(cache, config.autoencoder_epochs, config.latent_dim, config.refiner_epochs, config.seed,
                                  progress, config.device)
    request = CodecRequest(*codec_release(config, budget), config.neighbouring,
                           dct_frequencies=config.dct_frequencies, pca_components=config.pca_components,
                           public=public_set, autoencoder=training, private_autoencoder=config.private_autoencoder,
                           data_key=private_set_key(config.dataset, private))
    return entry.build(images[private], request)


def private_set_key(dataset: str, private: torch.Tensor) -> str:
    """A public name of a run's private image set: the dataset and a hash of the private indices, which a public seed
    draws (``split_training_set``); no statistic of an image (privacy.md, "A private image codec trained by DP-SGD")."""
    return f"{dataset}-{len(private)}-{hashlib.sha256(private.to(torch.int64).numpy().tobytes()).hexdigest()[:16]}"


def composed_report(report: PrivacyReport, codec: ImageCodec | None) -> PrivacyReport:
    """The generator's report with the release of ``codec``, a codec learned from the private images (``None``: the
    codec released nothing): its Gaussian mechanism is inside the generator's accounting as the prior
    (``fit_releases``), so the report lists it as an accounted part; at epsilon = inf (nothing private) it is
    composed as a part of its own."""
    if codec is None:
        return report
    if report.is_private:
        return report.include(dataclasses.replace(codec.privacy_part, accounted=True))  # type: ignore[attr-defined]
    return report.compose(codec.privacy_part)  # type: ignore[attr-defined]


def codec_assumption(codec: str, dataset: str) -> str:
    """The public-data assumption of ``codec`` for a run on ``dataset``, as reports and results name it."""
    return codec_entry(codec).describe(DATASET_NAMES[dataset], DATASET_NAMES[OTHER_DATASET[dataset]])


def uses_public_split(codec: str) -> bool:
    """Whether ``codec`` is trained on a seeded half of the training set (its entry's ``public_images``)."""
    return codec_entry(codec).public_images == "training_half"


def uses_other_dataset(codec: str) -> bool:
    """Whether ``codec`` is trained on the other dataset's whole training set (``load_other_training_set``)."""
    return codec_entry(codec).public_images == "other_dataset"


def check_public_split(codec: str, neighbouring: Adjacency | str) -> None:
    """Refuse a public half drawn from the training set (``codec="public-half"``) under add/remove neighbours: one
    image more or less redraws the seeded split, so the guarantee would hold only for neighbours of the private half
    with the split fixed, not for the training set's add/remove neighbours that the report would name (the image
    plugins refuse the same without ``image_autoencoder``: privacy.md, "Add/remove neighbours")."""
    if uses_public_split(codec) and not Adjacency.of(neighbouring).n_is_public:
        others = ", ".join(repr(name) for name in codec_names() if not uses_public_split(name))
        raise ValueError(
            f"codec {codec!r} under add/remove: the public half is drawn from the training set, so one image more or "
            "less redraws it, and add/remove would hold only for neighbours of the private half with the split fixed; "
            f"use replace_one, or a codec that takes no half of the training set ({others})."
        )


def load_other_training_set(dataset: str, data_root: Path, download: bool = False) -> tuple[str, torch.Tensor]:
    """The name and the whole training set of ``dataset``'s other dataset: the ``"other-dataset"`` codec's
    public images. Raises ``DatasetUnavailable`` (a ``FileNotFoundError``) when they are not under ``data_root`` (and
    ``download`` is off, or fails)."""
    other = OTHER_DATASET[dataset]
    try:
        images, _ = IMAGE_LOADERS[other](data_root, train=True, download=download)
    except DatasetUnavailable as error:
        raise DatasetUnavailable(
            error.dataset, error.root, error.downloading, error.reason,
            f"codec 'other-dataset' trains the {DATASET_NAMES[dataset]} run's autoencoder on {DATASET_NAMES[other]}'s "
            "training set; or choose codec 'public-half' or 'dct'",
        ) from error
    return other, images


def split_training_set(codec: str, n_images: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The (public, private) indices of a training set of ``n_images`` under ``codec``.

    ``"public-half"``: the seeded halves of ``public_private_split``. The codecs that use no image of the training
    set outside the private set (``"other-dataset"``, ``"dct"``) make the whole training set private (public
    empty; the private indices in a seeded order, so that a prefix is a random subset): a user without public
    data keeps every record, as the no-public-data literature does.
    """
    if uses_public_split(codec):
        return public_private_split(n_images, 0.5, seed)
    return torch.zeros(0, dtype=torch.long), torch.randperm(n_images, generator=torch.Generator().manual_seed(seed))

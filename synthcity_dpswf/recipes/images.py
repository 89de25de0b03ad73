"""Image sets made ready for their generator, with no synthcity here: one plan (``plan_images``) takes the private
images, their labels and public class count, the run's ``Budget``, the generator's release plan (``ReleasePlanner``)
and the codec (one built from public images, or a ``CodecOrder`` it builds from the private images at its share of
the budget), and returns all a fit needs (``ImagePlan``: codec, records, the budget after the codec's release, its
accounted part, the release plan and its noise); ``fit_releases`` fits a generator by it and ``composed_report``
states the whole. The plugins' image path, ``dpswf images`` (``experiments.images``, configured by
``ImageRunConfig``) and the benchmarks' image runner are its three callers; the codecs are described there."""

from __future__ import annotations

import dataclasses
import hashlib
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Protocol

import torch

from synthcity_dpswf.adapters.image_codecs import (
    DCT_FREQUENCIES,
    PCA_COMPONENTS,
    AutoencoderRequest,
    CodecRequest,
    ImageCodec,
    ImageCodecEntry,
    PaidImageCodec,
    PublicImageSet,
)
from synthcity_dpswf.adapters.image_latent import MNIST_LATENT_DIM, REFINER_EPOCHS
from synthcity_dpswf.adapters.private_autoencoder import PrivateAutoencoderSettings
from synthcity_dpswf.datasets import DATASET_NAMES, IMAGE_LOADERS, OTHER_DATASET, DatasetUnavailable, public_private_split
from synthcity_dpswf.extensions import image_codecs
from synthcity_dpswf.math.checks import check_positive_int
from synthcity_dpswf.models import DPSWFlow, DPSWFlowR, DPSWGen, FlowSettings, SlicedGenerator
from synthcity_dpswf.models.state import ReleasePlan
from synthcity_dpswf.privacy import Adjacency, PrivacyPart, PrivacyReport
from synthcity_dpswf.privacy.budget import Budget
from synthcity_dpswf.privacy.gaussian import Prior, PriorLike

GENERATORS = {"dpswflow_r": DPSWFlowR, "dpswflow": DPSWFlow, "dpswgen": DPSWGen}


def codec_names() -> tuple[str, ...]:
    """Every codec ``dpswf images`` takes: the registry's (``extensions.image_codecs``), the built-in ones first
    (``"public-half"``, the paper's protocol and the default, ``"other-dataset"``, ``"dct"``, ``"private-pca"``), then
    any extension's; not those trained on public images a plugin user gives (``"public-autoencoder"``), which a run on
    a dataset does not have."""
    return tuple(name for name, entry in image_codecs().items() if entry.public_images != "given")


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
    and the plain flow (h = 1, 1,500 steps), chosen by CAS on a validation split of the MNIST training set
    (``benchmarks/results/archive/histogram_settings_mnist.md``) with the public autoencoder; the
    ``"private-pca"`` and ``"private-autoencoder"`` codecs have their own (``PCA_FLOW_SETTINGS``,
    ``AUTOENCODER_FLOW_SETTINGS``, applied by ``flow_defaults`` and ``dpswf images``). ``None`` for
    ``n_release_directions`` and ``batch_size`` takes the generator's defaults. With ``release="record"``, h = 3
    and 3,000 steps measured best (CAS 59.4% at epsilon = 10 against 25.7% at h = 1:
    ``benchmarks/results/images_mnist.md``). ``codec`` is one of ``codec_names()`` (each registry entry's
    ``assumption`` says what it assumes public); ``latent_dim`` and ``autoencoder_epochs`` shape its autoencoder:
    latent 16 and 10 epochs were chosen on the same validation split (CAS of the reconstructions 94.9% against
    86.9% for the paper's latent 8 and 5 epochs), and ``private_autoencoder`` the ``"private-autoencoder"`` codec's
    DP-SGD settings. ``refiner_epochs`` the autoencoders' refiner, trained on the same public images
    (``AutoencoderCodec.fit_refiner``; 0: none; it sharpens the decoder's images at no privacy cost:
    ``benchmarks/results/refiner_validation.md``).
    ``flow_directions`` (directions per flow step) and ``count_estimator`` are the flow's ``FlowSettings``.
    ``fid_samples``: generated images scored against as many test images (``FULL_FID_SAMPLES`` for the
    literature's protocol; 0: no FID). ``dct_frequencies``: K of the ``"dct"`` codec (the frequencies u + v < K;
    without public data, K = 16 with L = 8,000, G = 32 and 5,000 steps measured best at epsilon = 10 on the
    validation split, K = 12 with L = 4,000, G = 32, 3,000 steps at epsilon = 1:
    ``benchmarks/results/gpu_codecs/codecs/image_codecs_mnist_validation.md``). ``device``:
    where the autoencoder trains, the flow runs and the CAS classifiers train: ``"auto"`` (CUDA when torch sees
    it, else the CPU), ``"cpu"`` or ``"cuda"``. ``neighbouring``: the adjacency the releases are calibrated for
    (``"replace_one"``, the default, or ``"add_remove"``: n private too, per-step releases accounted with Opacus'
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
    codec_options: Mapping[str, Any] = field(default_factory=dict)
    """The codec's own settings as its registry entry takes them (``ImageCodecEntry.configured``), applied over the
    fields above (``dpswf images --codec-option``)."""
    device: str = "auto"
    seed: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "neighbouring", Adjacency.of(self.neighbouring))

    @property
    def share(self) -> float | None:
        """A paid codec's share of mu^2 as given (``codec_options["share"]`` or ``codec_share``; ``None``: its own)."""
        return self.codec_options.get("share", self.codec_share)

    def codec_request(self) -> CodecRequest:
        """The codec's request of this run's settings, its ``codec_options`` applied by its registry entry (which
        refuses one it does not take); its budget and public images are set where it is built (``codec_order``)."""
        request = CodecRequest(0.0, 0.0, self.neighbouring, dct_frequencies=self.dct_frequencies,
                               pca_components=self.pca_components, private_autoencoder=self.private_autoencoder)
        return codec_entry(self.codec).configured(self.codec, request, self.codec_options)


def resolved_device(device: str) -> str:
    """``device`` with ``"auto"`` resolved: CUDA when torch sees it, else the CPU."""
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return device


def flow_defaults(codec: str, generator: str, release: str = "projected_histogram") -> dict[str, int]:
    """The ``ImageRunConfig`` fields that ``dpswf images`` sets when none is given: the registry entry's
    ``flow_defaults`` for the (generator, release) where they were measured (``adapters.image_codecs.
    PCA_FLOW_SETTINGS`` and ``AUTOENCODER_FLOW_SETTINGS``: DPSWflow's projected-histogram release through the
    ``"private-pca"`` and ``"private-autoencoder"`` codecs), else none (``ImageRunConfig``'s defaults apply)."""
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


def codec_guarantee(entry: ImageCodecEntry, share: float | None, budget: Budget) -> tuple[float, float]:
    r"""The (epsilon, delta) of the codec ``entry``'s own release at ``budget``: a paid codec takes ``share`` s of
    :math:`\mu^2` (``None``: the entry's own, ``ImageCodecEntry.share``), :math:`z_c = z / \sqrt{s}` (``Budget.share``),
    stated as the analytic Gaussian epsilon of z_c at delta; an exact codec at epsilon = inf (no noise anywhere: not
    private); (0, 0) for a codec that releases nothing. The generator's releases then take the rest with the codec as
    their accountant's prior (``plan_images``; privacy.md, "A private image codec")."""
    if not entry.paid:
        return 0.0, 0.0
    if math.isinf(budget.epsilon):
        return math.inf, budget.release_delta
    return budget.share_guarantee(entry.share(share))


def codec_release(config: ImageRunConfig, budget: Budget) -> tuple[float, float]:
    """The (epsilon, delta) of ``config.codec``'s own release at ``budget``, at its share (``ImageRunConfig.share``,
    ``codec_guarantee``)."""
    return codec_guarantee(codec_entry(config.codec), config.share, budget)


def paid_codec(codec: str) -> bool:
    """Whether ``codec`` releases a statistic of the private images, paid from the run's budget (its registry entry's
    ``paid``: ``"private-pca"``)."""
    return codec_entry(codec).paid


@dataclass(frozen=True)
class CodecOrder:
    """A codec to build from the private images: the registry's ``entry``, the ``request`` of its public settings and
    public images (its (epsilon, delta) set by ``build``) and a paid codec's ``share`` of mu^2 (``None``: the entry's
    own)."""

    entry: ImageCodecEntry
    request: CodecRequest
    share: float | None = None

    def build(self, images: torch.Tensor, budget: Budget) -> ImageCodec:
        """The codec of the private ``images``, a paid one released at its share of ``budget`` (``codec_guarantee``)."""
        epsilon, delta = codec_guarantee(self.entry, self.share, budget)
        return self.entry.build(images, dataclasses.replace(self.request, epsilon=epsilon, delta=delta))


def codec_order(
    config: ImageRunConfig, images: torch.Tensor, public: torch.Tensor, private: torch.Tensor, cache: Path,
    progress: bool, other: tuple[str, torch.Tensor] | None = None,
) -> CodecOrder:
    """The order of ``config.codec`` for the private images ``images[private]`` of the training set ``images`` (split
    into ``public`` and ``private`` indices by ``split_training_set``), with the public images its entry trains on
    (``public_images``): the public half ``images[public]``, or ``other`` = (name, whole training set of the other
    dataset; ``load_other_training_set``); an autoencoder is kept under ``cache``."""
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
    request = dataclasses.replace(config.codec_request(), public=public_set, autoencoder=training,
                                  data_key=private_set_key(config.dataset, private))
    return CodecOrder(entry, request, config.share)


class ReleasePlanner(Protocol):
    """What a plan asks of the generator it is made for: the accountant and number of its releases for ``n_public``
    records after ``prior`` (``models.base.GeneratorSpec.plan``, or a built ``SlicedGenerator``'s ``plan``)."""

    def plan(self, n_public: int | None, prior: PriorLike = None, /) -> ReleasePlan: ...


@dataclass(frozen=True)
class ImagePlan:
    """What fitting a generator on an image set needs, settled once before its releases (``plan_images``): only
    ``records`` and ``labels`` are private; the rest is public or released."""

    codec: ImageCodec
    records: torch.Tensor
    """The private images encoded by ``codec``: the only data the generator touches."""
    labels: torch.Tensor
    n_classes: int
    """The public number of classes (the dataset's, or the plugin's ``n_classes``): labels lie in 0..n_classes-1."""
    n_public: int | None
    """The number of private images where it is public (replace-one), ``None`` under add/remove."""
    budget: Budget
    """The run's budget for these records, with a paid codec's release spent (its mechanism the releases' prior)."""
    paid: PrivacyPart | None
    """A paid codec's release: inside the releases' accounting (``accounted``), or at epsilon = inf a part of its own;
    ``None``: the codec released nothing."""
    release_plan: ReleasePlan
    """The releases' accountant and number (``ReleasePlanner.plan``), computed once, here."""
    noise_multiplier: float
    """The releases' noise, calibrated to ``release_plan`` with what ``budget`` leaves (``Budget.noise_multiplier``)."""


def check_labels(labels: torch.Tensor, n_classes: int) -> None:
    """Refuse labels outside the public range 0..n_classes-1, before anything is built or paid for."""
    check_positive_int("n_classes", n_classes)
    if bool((labels < 0).any()) or bool((labels >= n_classes).any()):
        raise ValueError(f"labels must lie in 0..{n_classes - 1}; set n_classes for this data.")


def plan_images(
    images: torch.Tensor, labels: torch.Tensor, n_classes: int, budget: Budget, spec: ReleasePlanner,
    codec: ImageCodec | CodecOrder,
) -> ImagePlan:
    """The plan of a fit on the private ``images`` (``(n, C, H, W)`` in [0, 1]) and their ``labels``: ``budget`` for
    their public n, the ``codec`` (one built from public images only, or a ``CodecOrder`` built here from the private
    images; a paid one released at its share of the budget and spent from it, privacy.md, "A private image codec"),
    the releases' plan of ``spec`` with the spent codec as its prior, and their noise calibrated once to what is left
    (privacy.md, "One budget"). It calls nothing above ``recipes``."""
    check_labels(labels, n_classes)
    n_public = budget.neighbouring.public_size(len(images))
    budget = budget.for_records(n_public)
    paid = None
    if isinstance(codec, CodecOrder):
        if codec.entry.planned_schedule is not None and math.isfinite(budget.epsilon):  # refused before training
            spec.plan(n_public, Prior(None, (codec.entry.planned_schedule(len(images), codec.request),)))
        built = codec.build(images, budget)
        if codec.entry.paid:
            if not isinstance(built, PaidImageCodec):
                raise TypeError(f"a paid codec's build must return a PaidImageCodec (privacy_part, noise_multiplier, "
                                f"spend), got a {type(built).__name__}.")
            if math.isinf(budget.epsilon):  # an exact codec, with releases of no noise: composed as a part of its own
                paid = built.privacy_part
            else:
                paid, budget = dataclasses.replace(built.privacy_part, accounted=True), built.spend(budget)
        codec = built
    release_plan = spec.plan(n_public, budget.prior)
    return ImagePlan(codec, codec.encode(images), labels, n_classes, n_public, budget, paid, release_plan,
                     budget.noise_multiplier(*release_plan))


def fit_releases(model: SlicedGenerator, plan: ImagePlan) -> SlicedGenerator:
    """Fit ``model`` (the generator ``plan`` was made for) on the plan's records by its release plan and noise, the
    spent codec as the accountant's prior, as the plugins do."""
    return model.fit(plan.records, None, plan.budget.release_delta, labels=plan.labels, n_classes=plan.n_classes,
                     noise_multiplier=plan.noise_multiplier, prior=plan.budget.prior, plan=plan.release_plan)


def private_set_key(dataset: str, private: torch.Tensor) -> str:
    """A public name of a run's private image set: the dataset and a hash of the private indices, which a public seed
    draws (``split_training_set``); no statistic of an image (privacy.md, "A private image codec trained by DP-SGD")."""
    return f"{dataset}-{len(private)}-{hashlib.sha256(private.to(torch.int64).numpy().tobytes()).hexdigest()[:16]}"


def composed_report(report: PrivacyReport, paid: PrivacyPart | None) -> PrivacyReport:
    """The generator's report with a paid codec's release (``ImagePlan.paid``; ``None``: the codec released nothing):
    listed as a part inside the accounting, where it was the releases' prior, or at epsilon = inf (nothing private)
    composed as a part of its own (privacy.md, "A private image codec")."""
    if paid is None:
        return report
    return report.include(paid) if paid.accounted else report.compose(paid)


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
    plugins draw no such split: privacy.md, "Add/remove neighbours")."""
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

"""The plugins' arguments, grouped by what they are for, each group checked where it is built: the plugin's
constructor, so at ``Plugins().get``. A bad argument is refused there with a message that names it and what it
accepts; only what needs the data waits for ``fit`` (delta against 1/n, the domain against the table).

synthcity hands the plugins flat keyword arguments (``Plugins().get(name, **kwargs)``); the plugins build these once
from them: ``SlicedFlowPlugin`` the budget (``privacy.budget.Budget``), ``FlowOptions`` and ``SynthcityOptions``
(synthcity's own, which its ``Plugin`` keeps as attributes), the modalities ``TableOptions`` (``TablePlugin``) or
``ImageOptions`` (``ImagePlugin``), and the per-step mixins ``BatchOptions`` (``dpswflow_r``, ``dpswgen``) and
``NetworkOptions`` (``dpswgen``). The data paths get them as values (``paths.FitInputs``).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import InitVar, dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Mapping, Sequence, get_args

import torch

from synthcity_dpswf.adapters.codec import Codec
from synthcity_dpswf.adapters.image_codecs import AutoencoderRequest, CodecRequest, GivenImagesAutoencoder, ImageCodecEntry
from synthcity_dpswf.adapters.image_latent import AutoencoderCodec, is_public_autoencoder
from synthcity_dpswf.adapters.table_domain import DomainSpec, TabularDomain
from synthcity_dpswf.extensions import image_codecs, load_accountants
from synthcity_dpswf.math.checks import (
    check_choice, check_flag, check_fraction, check_positive, check_positive_int,
)
from synthcity_dpswf.models import FlowSettings
from synthcity_dpswf.models.base import Labelling
from synthcity_dpswf.models.state import ReleaseSchedule
from synthcity_dpswf.privacy import ACCOUNTANTS, MECHANISMS, Adjacency
from synthcity_dpswf.privacy.accountant import check_accountant
from synthcity_dpswf.recipes.tables import PAIR_SELECTIONS, TableChoices

TARGET_TABLES = ("pairs", "per_value", "none")
"""What the marginal release measures of a named target (``TableOptions.target_tables``)."""


DEFAULT_BINS = 16
"""Bins per direction of a histogram release when neither the plugin nor the image codec sets them: the generators'
own default (``models.base``)."""


FLOW_OPTION_DEFAULTS: Mapping[str, Any] = MappingProxyType(
    {"radius": 1.0, "accountant": "rdp", "entropy": 0.0, "smoothing": None, "reuse": "pooled"})
"""The less used settings of the release and the flow, given as one value (``flow_options``), with their defaults."""


@dataclass(frozen=True)
class FlowOptions:
    """How the records are released, accounted and flowed.

    Attributes:
        release: the release kind: ``None`` takes the data path's (``"marginal"`` for tables: noisy one- and two-way
            tables of the level-coded rows; ``"projected_histogram"`` for images); ``"record"``, ``"projected"`` and
            ``"projected_histogram"`` encode table rows into the unit ball instead.
        radius: records are encoded into the ball of this radius.
        n_release_directions: directions per release (``None``: the image codec's measured value, else the
            generator's default for the kind).
        n_bins: bins per direction of histogram releases (``None``: the image codec's measured value, else
            ``DEFAULT_BINS``).
        accountant: ``"rdp"``, ``"replace_one_rdp"`` or an extension's name (``"gdp"`` and ``"prv"`` are refused:
            privacy.md, "Accountants"); under add/remove, one proven for Poisson sampling.
        n_steps: flow steps (for DPSWgen the network's training steps); ``None``: the image codec's measured value,
            else the release kind's default (``models.kinds.KINDS``).
        n_directions, step_size, entropy, smoothing, flow_batch_size, reuse: ``FlowSettings``.

    The plugins take ``radius``, ``accountant``, ``entropy``, ``smoothing`` and ``reuse`` as one dict,
    ``flow_options`` (``of``).
    """

    release: str | None
    radius: float
    n_release_directions: int | None
    n_bins: int | None
    accountant: str
    n_steps: int | None
    n_directions: int
    step_size: float
    entropy: float
    smoothing: float | None
    flow_batch_size: int | None
    reuse: str
    neighbouring: InitVar[Adjacency]
    """The budget's adjacency, which the accountant must be proven for."""

    @classmethod
    def of(cls, release: str | None, n_release_directions: int | None, n_bins: int | None, n_steps: int | None,
           n_directions: int, step_size: float, flow_batch_size: int | None, flow_options: Mapping[str, Any] | None,
           neighbouring: Adjacency) -> "FlowOptions":
        """The options from a plugin's arguments: the flat ones, and ``flow_options`` (a dict of
        ``FLOW_OPTION_DEFAULTS``' names) for the rest."""
        given = {} if flow_options is None else flow_options
        if not isinstance(given, Mapping):
            raise ValueError(f"flow_options must be a dict of {sorted(FLOW_OPTION_DEFAULTS)}, got {flow_options!r}.")
        unknown = sorted(set(given) - set(FLOW_OPTION_DEFAULTS))
        if unknown:
            raise ValueError(f"flow_options takes {sorted(FLOW_OPTION_DEFAULTS)}, not {unknown}.")
        rest = {**FLOW_OPTION_DEFAULTS, **given}
        return cls(release, rest["radius"], n_release_directions, n_bins, rest["accountant"], n_steps, n_directions,
                   step_size, rest["entropy"], rest["smoothing"], flow_batch_size, rest["reuse"],
                   neighbouring=neighbouring)

    def __post_init__(self, neighbouring: Adjacency) -> None:
        if self.n_steps is not None:
            check_positive_int("n_steps", self.n_steps)
        self.settings(1, None)  # checks n_directions, step_size, entropy, smoothing, flow_batch_size and reuse
        if self.release is not None:
            check_choice("release", self.release, [None, *sorted(MECHANISMS)])
        check_positive("radius", self.radius)
        if self.n_release_directions is not None:
            check_positive_int("n_release_directions", self.n_release_directions)
        if self.n_bins is not None:
            check_positive_int("n_bins", self.n_bins)
        load_accountants()  # an extension's accountant is selectable by name from here on
        check_accountant(self.accountant)
        if not neighbouring.n_is_public and not ACCOUNTANTS[self.accountant].poisson_proven:
            raise ValueError(f"accountant {self.accountant!r} is not proven for add/remove with Poisson sampling; use "
                             "'rdp' (or neighbouring='replace_one').")

    @property
    def steps(self) -> int | None:
        """The flow steps as given (``None``: not given)."""
        return self.n_steps

    def settings(self, default_steps: int, flow_particles: int | None, step_particles: int | None = None,
                 rows_per_particle: int | None = None) -> FlowSettings:
        """The ``FlowSettings`` of a fit: ``default_steps`` where no steps were given, with the kind's
        ``flow_particles``, ``step_particles`` and ``rows_per_particle`` (``models.kinds.KindSpec``)."""
        return FlowSettings(
            n_steps=default_steps if self.steps is None else self.steps, step_size=self.step_size,
            entropy=self.entropy, smoothing=self.smoothing, flow_batch_size=self.flow_batch_size,
            n_directions=self.n_directions, reuse=self.reuse, flow_particles=flow_particles,  # type: ignore[arg-type]
            step_particles=step_particles, rows_per_particle=rows_per_particle,
        )

    def bins(self, flow_defaults: Mapping[str, int]) -> int:
        """``n_bins``, or where it is ``None`` the codec's measured value (else ``DEFAULT_BINS``)."""
        if self.n_bins is not None:
            return self.n_bins
        return flow_defaults.get("n_bins", DEFAULT_BINS)

    def release_directions(self, flow_defaults: Mapping[str, int]) -> int | None:
        """``n_release_directions``, or where it is ``None`` the codec's measured value (``None``: the kind's)."""
        if self.n_release_directions is not None:
            return self.n_release_directions
        return flow_defaults.get("n_release_directions")


def check_time_horizons(time_horizons: Sequence[float] | None) -> None:
    """Declared time horizons must be finite numbers."""
    if time_horizons is None:
        return
    values = list(time_horizons)
    if not values or not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in values):
        raise ValueError(f"time_horizons must be a non-empty list of finite numbers (declared public), got {time_horizons!r}.")


@dataclass(frozen=True)
class TableOptions:
    """How a table is described, encoded and tabulated.

    Attributes:
        domain: a public ``TabularDomain``, description dict (one-line form ``{"age": (17, 90), "sex": ["F", "M"]}``;
            ``(17, 90, None)`` or ``["F", "M", None]`` for a column that may be missing) or JSON path, for all the
            columns or some of them; the columns it leaves out get a DP domain, paid with ``domain_epsilon_share`` of
            one budget; ``None``: a DP domain for every column. Parsed once, here (``declared``).
        domain_epsilon_share: the DP domain's (and value histograms') share s of one budget with the releases: of
            mu^2 in Gaussian DP, z_D = z / sqrt(s), the releases accounted with it (privacy.md, "One budget"); ``None``:
            ``default_domain_share`` (from n, the column counts and epsilon).
        numeric_histograms: release the value histograms of declared float columns and wide integer ranges, at whose
            quantiles the codecs place their levels (paid, within the domain share); ``False`` (and epsilon = inf):
            levels of equal width over the declared ranges, nothing paid.
        max_one_hot: with a ``{name: n_levels}`` domain, wider columns are encoded as ordinal integers.
        time_horizons: for a ``SurvivalAnalysisDataLoader``, the time horizons its outputs carry (declared public);
            ``None``: three points evenly inside the domain's time range (never the loader's own, which synthcity
            computes from the private times: privacy.md, "synthcity loaders").
        coarse_bins, fine_bins, max_pairs: the marginal release's tables (``MarginalTableCodec``,
            ``MarginalLayout.build``): levels per column in the two-way tables, levels of a wide numeric column in the
            one-way tables (``None``: ``table_resolution``, which follows n and the flow's budget), and the number of
            column pairs (all pairs up to it; beyond, a random subset from ``random_state``, which reads no data).
        pair_selection: ``"adaptive"``: on tables of at least 7 columns whose two-way tables noise would coarsen
            (``recipes.tables.noise_limited``: few rows for the budget) the release measures 1.5 d pairs (at most
            ``max_pairs``), chosen by a paid look at every pair (a spanning forest of the most dependent, then the most
            dependent left), 0.3 of the mu^2 the DP domain leaves (privacy.md, "Paid pair selection"); ``"public"``,
            or any other table: the pairs as ``max_pairs`` says, nothing paid.
        target_column: the target column the marginal release counts every table per class of (privacy.md, "Tables
            conditioned on a named target"); ``None``: the loader's ``target_column`` when ``fit`` is given a
            DataLoader (synthcity's loaders always name one, the last column by default), none for a DataFrame.
        target_tables: what the marginal release measures of a named target: ``"pairs"`` (the default), every pair
            with it; ``"per_value"``, every table counted per value of a target of 2 to ``recipes.tables.
            TARGET_CLASSES`` values (its dependence on two columns at once kept; a target of more values: its pairs),
            each class's particles flowed as a group (DPSWflow and DPSWflow-r); ``"none"``, a loader's target is not
            read (privacy.md, "Tables conditioned on a named target").
        declared: ``domain`` parsed (``TabularDomain.parse``); ``None`` without one.
    """

    domain: DomainSpec
    domain_epsilon_share: float | None
    numeric_histograms: bool
    max_one_hot: int
    time_horizons: list[float] | None
    coarse_bins: int | None
    fine_bins: int | None
    max_pairs: int | None
    pair_selection: str
    target_column: str | None = None
    target_tables: str = "pairs"
    declared: TabularDomain | None = field(init=False)

    def __post_init__(self) -> None:
        for name, bins in (("coarse_bins", self.coarse_bins), ("fine_bins", self.fine_bins),
                           ("max_pairs", self.max_pairs)):
            if bins is not None:
                check_positive_int(name, bins)
        check_choice("pair_selection", self.pair_selection, PAIR_SELECTIONS)
        if self.domain_epsilon_share is not None:
            check_fraction("domain_epsilon_share", self.domain_epsilon_share)
        check_flag("numeric_histograms", self.numeric_histograms)
        check_positive_int("max_one_hot", self.max_one_hot)
        declared = None if self.domain is None else TabularDomain.parse(self.domain, self.max_one_hot)
        object.__setattr__(self, "declared", declared)
        check_time_horizons(self.time_horizons)
        check_choice("target_tables", self.target_tables, TARGET_TABLES)
        if self.target_column is not None and (not isinstance(self.target_column, str) or not self.target_column):
            raise ValueError(f"target_column must be a column name or None, got {self.target_column!r}.")
        if self.target_column is not None and self.target_tables == "none":
            raise ValueError(f"target_column={self.target_column!r} names a target that target_tables='none' would not "
                             "use; give one or the other.")

    def named_target(self, loader: Any, named_by_loader: bool, release: str) -> str | None:
        """The target column a fit conditions on: ``target_column``; else, where ``fit`` was given a DataLoader and the
        release is the marginal one, the loader's ``target_column``; ``None`` with ``target_tables="none"``."""
        if self.target_tables == "none":
            return None
        if self.target_column is not None:
            return self.target_column
        column = getattr(loader, "target_column", None)
        if not named_by_loader or not MECHANISMS[release].takes_level_codes or column not in list(loader.columns):
            return None
        return str(column)

    def choices(self, release: str, random_state: int, target: str | None = None) -> TableChoices:
        """The public choices of a table fit with the ``release`` kind and the named ``target``
        (``recipes.tables.settle_table``)."""
        return TableChoices(release, self.declared, self.domain_epsilon_share, self.numeric_histograms,
                            self.fine_bins, self.coarse_bins, self.max_pairs, random_state, self.pair_selection, target,
                            self.target_tables == "per_value")


DEFAULT_IMAGE_CODEC = "private-pca"
"""The image plugins' codec when none is given: it needs no public image (every image passed to ``fit`` private), and
among those that need none its images trained the better classifiers at 10,000 MNIST images (CNN CAS 89.2% against
78.2% for ``"private-autoencoder"``, at about an eighth of the cost) and within a point of them at 60,000 (94.3%
against 94.0% at epsilon 10; docs/guide.md, "Which of the two private codecs")."""


def public_images_tensor(images: Any) -> torch.Tensor:
    """Public images as the ``"public-autoencoder"`` codec takes them, ``(m, C, H, W)`` in [0, 1]: from an
    ``ImageDataLoader`` or a tensor in synthcity's [-1, 1] range, as the images passed to ``fit``."""
    if hasattr(images, "unpack") and getattr(images, "data_type", None) == "images":
        images = images.unpack().tensors()[0]
    if not isinstance(images, torch.Tensor) or images.dim() != 4:
        raise ValueError("codec_options['images'] must be an ImageDataLoader or an (m, C, H, W) tensor in synthcity's "
                         f"[-1, 1] range, got {type(images).__name__}.")
    pixels = images.float()
    if bool((pixels < -1).any()) or bool((pixels > 1).any()):
        raise ValueError("codec_options['images'] must lie in synthcity's [-1, 1] range, as the images passed to fit.")
    return (pixels + 1) / 2


@dataclass(frozen=True)
class ImageOptions:
    """How images are encoded, and how their labels are generated.

    Attributes:
        image_codec: the codec between images and records: a name of the registry (``extensions.image_codecs``) of a
            codec that needs no public image, ``"private-pca"`` (the default, ``DEFAULT_IMAGE_CODEC``: the top
            eigenvectors of the images' noisy second moment), ``"private-autoencoder"`` (a convolutional autoencoder
            trained by DP-SGD), ``"dct"`` (a fixed map: nothing learned, nothing paid) or an extension's; or
            ``"public-autoencoder"``, an autoencoder trained on public images the user gives (``codec_options=
            {"images": ...}``); or an ``AutoencoderCodec`` trained on public images, or the path of its checkpoint.
            Every image passed to ``fit`` is private: a paid codec takes its share of mu^2 of the run's budget and is
            accounted with the releases (privacy.md, "A private image codec"), and its measured release and flow
            settings apply where ``n_release_directions``, ``n_bins`` and ``n_steps`` are left ``None`` (DPSWflow
            through ``"private-pca"``: L = 2,000 directions, 16 bins, 3,000 steps, ``PCA_FLOW_SETTINGS``).
        codec_options: the codec's own settings, one value checked by its registry entry
            (``ImageCodecEntry.options``): ``{"frequencies": K}`` for ``"dct"``, ``{"components": K}`` for
            ``"private-pca"``, ``PrivateAutoencoderSettings``' fields for ``"private-autoencoder"`` (``"epochs"``,
            ``"batch_size"``, ``"latent_dim"``, ...), ``{"images": ..., "epochs": ..., "latent_dim": ...,
            "refiner_epochs": ..., "refiner_weight": ...}`` for ``"public-autoencoder"``; a paid codec's
            ``"share"`` of mu^2 (default: the entry's own, ``ImageCodecEntry.codec_share``).
        n_classes: number of image classes (public); labels are integers in 0..n_classes - 1, generated with the
            images, per class for releases that support it (``labelling="conditional"``), else joined into the record.
        labelling: ``"conditional"`` or ``"joint"`` (see ``SlicedGenerator``).
        feature_weight: weight of the latent beside the scaled one-hot label in a joint record.
        random_state: seeds a codec's training on public images.
    """

    image_codec: str | AutoencoderCodec | Path
    codec_options: Mapping[str, Any] | None
    n_classes: int
    labelling: str
    feature_weight: float
    random_state: int = 0
    neighbouring: Adjacency = Adjacency.REPLACE_ONE
    """The budget's adjacency, under which the codec's options must apply (``ImageCodecEntry.configured``)."""

    def __post_init__(self) -> None:
        if self.codec_options is not None and not isinstance(self.codec_options, Mapping):
            raise ValueError(f"codec_options must be a dict of the codec's settings, got {self.codec_options!r}.")
        options = dict(self.codec_options or {})
        if not all(isinstance(key, str) for key in options):
            raise ValueError(f"codec_options must be a dict of the codec's settings, got {self.codec_options!r}.")
        object.__setattr__(self, "codec_options", options)
        if self.given_autoencoder:
            if options:
                raise ValueError("codec_options set a codec of the registry; a given autoencoder has its own settings: "
                                 "drop codec_options.")
        else:
            self.request(self.neighbouring)  # checks the name and the options before any image is read
        check_positive_int("n_classes", self.n_classes)
        check_choice("labelling", self.labelling, get_args(Labelling))
        check_fraction("feature_weight", self.feature_weight)

    @property
    def given_autoencoder(self) -> bool:
        """Whether ``image_codec`` is an ``AutoencoderCodec`` or the path of its checkpoint (a ``Path``, or a string
        ending in ``.pt`` that names no registry codec), not a registry codec."""
        if isinstance(self.image_codec, str):
            return self.image_codec not in image_codecs() and Path(self.image_codec).suffix == ".pt"
        if isinstance(self.image_codec, Path) or is_public_autoencoder(self.image_codec):
            return True
        paid = " (a codec learned from private images is paid for: give its registry name, 'private-pca' or " \
            "'private-autoencoder')" if hasattr(self.image_codec, "privacy_part") else ""
        raise ValueError("image_codec must be a codec's name, an AutoencoderCodec trained on public images or the path "
                         f"of its checkpoint, got a {type(self.image_codec).__name__}{paid}.")

    @property
    def registry_name(self) -> str | None:
        """The codec's registry name (``None``: a given autoencoder)."""
        return None if self.given_autoencoder else str(self.image_codec)

    def entry(self) -> ImageCodecEntry:
        """The registry entry of ``image_codec``, or ``ValueError`` naming the codecs a plugin takes."""
        usable = sorted(name for name, entry in image_codecs().items() if entry.public_images in ("none", "given"))
        if not isinstance(self.image_codec, str) or self.image_codec not in usable:
            known = self.image_codec in image_codecs() if isinstance(self.image_codec, str) else False
            why = (" (it trains on part of a dataset's own training set, which a plugin is not given: pass your public "
                   "images with 'public-autoencoder')") if known else ""
            raise ValueError(f"image_codec must be one of {usable}, an AutoencoderCodec or the path of its checkpoint; "
                             f"got {self.image_codec!r}{why}.")
        return image_codecs()[self.image_codec]

    def request(self, neighbouring: Adjacency) -> CodecRequest:
        """The registry codec's request under ``neighbouring``, its options applied (``ImageCodecEntry.configured``)."""
        entry = self.entry()
        request = CodecRequest(0.0, 0.0, neighbouring, autoencoder=AutoencoderRequest(None, progress=True),
                               given_public=GivenImagesAutoencoder(seed=self.random_state))
        options = dict(self.codec_options or {})
        if "images" in options:
            options["images"] = public_images_tensor(options["images"])
        return entry.configured(str(self.image_codec), request, options)

    @property
    def share(self) -> float | None:
        """A paid codec's share of mu^2 as given (``None``: the entry's own)."""
        return (self.codec_options or {}).get("share")


IMAGE_ARGUMENTS = ("image_codec", "codec_options", "n_classes", "labelling", "feature_weight")
"""The image plugins' own arguments (``ImageOptions``), refused by the table plugins with the plugin to use."""
TABLE_ARGUMENTS = ("domain", "domain_epsilon_share", "numeric_histograms", "max_one_hot", "time_horizons",
                   "coarse_bins", "fine_bins", "max_pairs", "pair_selection", "target_column", "target_tables")
"""The table plugins' own arguments (``TableOptions``), refused by the image plugins with the plugin to use."""


@dataclass(frozen=True)
class SynthcityOptions:
    """synthcity's own arguments, checked here (synthcity would fail later, or read a flag given as a string as true)
    and handed to its ``Plugin``, which keeps them as attributes that its generation reads.

    Attributes:
        device: ``"cpu"``, ``"cuda"``, ``"cuda:<index>"`` or a ``torch.device``.
        random_state: numpy's seed range, [0, 2**32).
        workspace: a folder path (a string is taken as a ``Path``).
        sampling_patience, strict, compress_dataset: synthcity's.
    """

    device: Any
    random_state: int
    workspace: Path | str
    sampling_patience: int
    strict: bool
    compress_dataset: bool

    def __post_init__(self) -> None:
        try:
            torch.device(self.device)
        except (RuntimeError, TypeError) as error:
            raise ValueError("device must be 'cpu', 'cuda', 'cuda:<index>' or a torch.device, got "
                             f"{self.device!r}.") from error
        if isinstance(self.random_state, bool) or not isinstance(self.random_state, int) \
                or not 0 <= self.random_state < 2**32:
            raise ValueError(f"random_state must be an integer in [0, 2**32), got {self.random_state!r} (numpy's seed "
                             "range).")
        if not isinstance(self.workspace, (str, Path)):
            raise ValueError(f"workspace must be a folder path (str or Path), got a {type(self.workspace).__name__}.")
        object.__setattr__(self, "workspace", Path(self.workspace))
        check_positive_int("sampling_patience", self.sampling_patience)
        check_flag("strict", self.strict)
        check_flag("compress_dataset", self.compress_dataset)

    def keywords(self) -> dict[str, Any]:
        """The arguments of synthcity's ``Plugin.__init__``."""
        return {option.name: getattr(self, option.name) for option in dataclasses.fields(self)}


@dataclass(frozen=True)
class BatchOptions:
    """The per-step releases' batches (``dpswflow_r``, ``dpswgen``), as ``models.state.ReleaseSchedule`` takes them.

    Attributes:
        batch_size: b, records per release in batches of a fixed size (uniform subsets of exactly b, independent
            across releases); a given b is capped at n / 2 on small tables (the report states the b used).
            Replace-one only; ``None``: Poisson batches (``sample_rate``) for histograms and marginals, except at a
            default rate of 1 and after a DP-SGD codec trained on fixed-size batches, and
            ``models.state.default_batch_size(n)`` otherwise; after the DP-SGD codec's default Poisson batches a
            ``batch_size`` below n is refused.
        sample_rate: q, the Poisson rate of each release (every record independently): under add/remove ``None`` is
            0.1 (``models.state.DEFAULT_SAMPLE_RATE``); under replace-one ``None`` is the rate of
            ``models.state.default_batch_size(n)`` (0.1 from 10,000 rows; all rows below 1,000, which takes them
            all in every release), accounted by the antipodal pair (privacy.md, "Poisson batches under replace-one").
        passes: K = ceil(passes * n / b) releases (ceil(passes / q) under add/remove); the default 10 with the default
            b (n / 10 from 10,000 rows, all rows below 1,000: ``models.state.default_batch_size``) makes K = 100 on
            large data (the per-step histogram form as run on a validation split of MNIST; 35 passes at b = 250 is
            the paper's preset) and K = 10 on small tables.
    """

    batch_size: int | None
    sample_rate: float | None
    passes: float
    neighbouring: InitVar[Adjacency]
    """The budget's adjacency, which says whether a batch size may be given (replace-one only)."""

    def __post_init__(self, neighbouring: Adjacency) -> None:
        ReleaseSchedule(True, self.batch_size, self.sample_rate, self.passes)  # checks the three
        if self.batch_size is not None and not neighbouring.n_is_public:
            raise ValueError("under add/remove batches are Poisson samples: give sample_rate, not batch_size.")


@dataclass(frozen=True)
class NetworkOptions:
    """DPSWgen's generator network (``dpswgen``).

    Attributes:
        noise_dim: size of the network's Gaussian input.
        generator_batch: generated records per training step (at least 2).
        learning_rate: Adam's learning rate.
    """

    noise_dim: int
    generator_batch: int
    learning_rate: float

    def __post_init__(self) -> None:
        check_positive_int("noise_dim", self.noise_dim)
        if isinstance(self.generator_batch, bool) or not isinstance(self.generator_batch, int) or self.generator_batch < 2:
            raise ValueError(f"generator_batch must be an integer >= 2 (BatchNorm and the quantile grid need two "
                             f"records), got {self.generator_batch!r}.")
        check_positive("learning_rate", self.learning_rate)

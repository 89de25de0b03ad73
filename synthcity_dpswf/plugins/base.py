"""What the three synthcity plugins share: a DP-safe ``fit`` on a DataLoader, generation, the report.

synthcity's ``Plugin.fit`` infers a schema (min/max, categories, marginals) and fits encoders on the
private table before ``_fit``: statistics of private records that would be stored in the model and used to
filter its output. These plugins override ``fit``: the schema and the encoding come from a ``TabularDomain``
that is either public (``domain=...``) or released with a stated share of the budget
(``privacy.domain.release_domain``), and the generator only ever sees encoded records.
"""

from __future__ import annotations

import dataclasses
import json
import math
import warnings
from pathlib import Path
from typing import Any, Callable, ClassVar

import pandas as pd
import torch
from synthcity.plugins.core.constraints import Constraints
from synthcity.plugins.core.dataloader import DataLoader, GenericDataLoader, create_from_info
from synthcity.plugins.core.dataset import TensorDataset
from synthcity.plugins.core.distribution import (
    CategoricalDistribution,
    Distribution,
    FloatDistribution,
    IntegerDistribution,
)
from synthcity.plugins.core.plugin import Plugin
from synthcity.plugins.core.schema import Schema
from synthcity.utils.constants import DEVICE

from synthcity_dpswf.adapters import MarginalTableCodec, NumericColumn, TabularDomain, TabularEncoder
from synthcity_dpswf.adapters.image_latent import MNIST_LATENT_DIM, ImageLatentAdapter, from_synthcity_range
from synthcity_dpswf.adapters.resolution import FINE_LEVELS, needs_histogram, table_resolution
from synthcity_dpswf.adapters.tabular import output_categories
from synthcity_dpswf.datasets import public_private_split
from synthcity_dpswf.extensions import load_accountants
from synthcity_dpswf.models import KINDS, FlowSettings, SlicedGenerator
from synthcity_dpswf.models.base import check_privacy_target
from synthcity_dpswf.plugins.loaders import check_time_horizons, loader_path
from synthcity_dpswf.privacy import MECHANISMS, check_neighbouring
from synthcity_dpswf.privacy import MarginalLayout, PrivacyPart, PrivacyReport, release_domain, secret_generator
from synthcity_dpswf.privacy.budget import default_delta, default_domain_share
from synthcity_dpswf.privacy.validity import check_table
from synthcity_dpswf.privacy.domain import OTHER_CATEGORY, DomainRelease

DomainSpec = TabularDomain | dict | str | Path | None

def resolve_domain(domain: DomainSpec, max_one_hot: int) -> TabularDomain:
    """A ``TabularDomain`` from a domain object, a description dict, or a JSON file of either form
    (``{name: n_levels}`` as written by private-pgm, or ``{name: {"type": ...}}``)."""
    if isinstance(domain, TabularDomain):
        return domain
    if isinstance(domain, (str, Path)):
        domain = json.loads(Path(domain).read_text())
    if not isinstance(domain, dict):
        raise ValueError(f"domain must be a TabularDomain, a dict or a JSON path, got {type(domain).__name__}.")
    if all(isinstance(value, int) for value in domain.values()):
        return TabularDomain.from_levels(domain, max_one_hot)
    return TabularDomain.from_dict(domain)


class DomainCategorical(CategoricalDistribution):
    """synthcity's ``CategoricalDistribution`` whose constraints also state the dtype (and the range of
    numeric categories), so that ``Schema.from_constraints``, which ``Plugin.generate`` calls, can rebuild it:
    without a dtype rule synthcity 0.2.12 takes the column for a float without bounds and fails."""

    def as_constraint(self) -> Constraints:
        rules = [(self.name, "in", list(self.choices)), (self.name, "dtype", self.dtype())]
        if self.dtype() != "object":
            rules += [(self.name, "ge", min(self.choices)), (self.name, "le", max(self.choices))]
        return Constraints(rules=rules)


class NullableInteger(IntegerDistribution):
    """synthcity's ``IntegerDistribution`` of a column with missing entries: its dtype is pandas' nullable Int64 (the
    decoders' output). Its constraints state the bounds only (synthcity lets missing entries pass every bound): their
    dtype rule would read "int" in the column's description, which an Int64 column's lacks, and synthcity's
    ``Schema.from_constraints`` knows no "Int64" to say instead."""

    def dtype(self) -> str:
        return "Int64"

    def as_constraint(self) -> Constraints:
        return Constraints(rules=[(self.name, "ge", self.low), (self.name, "le", self.high)])


def synthcity_schema(domain: TabularDomain) -> Schema:
    """The synthcity ``Schema`` of a domain, built from its (public or released) ranges, never from data."""
    distributions: dict[str, Distribution] = {}
    for column in domain.columns:
        if isinstance(column, NumericColumn):
            if column.integer:
                integer = NullableInteger if column.missing else IntegerDistribution
                distributions[column.name] = integer(name=column.name, low=int(column.low), high=int(column.high))
            else:
                distributions[column.name] = FloatDistribution(name=column.name, low=column.low, high=column.high)
        else:
            distributions[column.name] = DomainCategorical(name=column.name, choices=list(output_categories(column)))
    return Schema(domain=distributions)


class SlicedFlowPlugin(Plugin):
    """Base of the dpswflow, dpswflow_r and dpswgen plugins (every argument has a default).

    Args:
        epsilon, delta: the total budget; ``delta=None`` uses ``default_delta(n)`` = min(1e-5, n^-1.1) (stated in the
            report).
        release: the release kind: ``None`` (default) takes ``"marginal"`` for tables (noisy one- and two-way
            tables of the level-coded rows) and ``"projected_histogram"`` for images; ``"record"``,
            ``"projected"`` and ``"projected_histogram"`` encode table rows into the unit ball instead.
        coarse_bins, fine_bins, max_pairs: the marginal release's tables (``MarginalTableCodec``,
            ``MarginalLayout.build``): levels per column in the two-way tables, levels of a wide numeric column in the
            one-way tables (``None``: ``table_resolution``, which follows n and the flow's budget), and the number of
            column pairs (all pairs up to it; beyond, a random subset from ``random_state``, which reads no data).
        radius: records are encoded into the ball of this radius.
        n_release_directions: directions per release (``None``: the generator's default for the kind).
        n_bins: bins per direction of histogram releases.
        n_directions, n_steps, step_size, entropy, smoothing, flow_batch_size, reuse: ``FlowSettings``;
            ``n_steps=None`` takes the release kind's default (``models.kinds.KINDS``).
        domain: a public ``TabularDomain``, description dict (one-line form ``{"age": (17, 90), "sex": ["F", "M"]}``)
            or JSON path, for all the columns or some of them; the columns it leaves out get a DP domain, paid with
            ``domain_epsilon_share`` of the budget; ``None``: a DP domain for every column.
        domain_epsilon_share: share of (epsilon, delta) spent on the DP domain (and value histograms); ``None``:
            ``default_domain_share`` (from n, the column counts and epsilon).
        numeric_histograms: release the value histograms of declared float columns and wide integer ranges, at whose
            quantiles the codecs place their levels (paid, within the domain share); ``False`` (and epsilon = inf):
            levels of equal width over the declared ranges, nothing paid.
        max_one_hot: with a ``{name: n_levels}`` domain, wider columns are encoded as ordinal integers.
        time_horizons: for a ``SurvivalAnalysisDataLoader``, the time horizons its outputs carry (declared public);
            ``None``: three points evenly inside the domain's time range (never the loader's own, which synthcity
            computes from the private times: privacy.md, "synthcity loaders").
        accountant: ``"rdp"``, ``"replace_one_rdp"`` or an extension's name (``"gdp"`` and ``"prv"`` are refused:
            privacy.md, "Accountants").
        neighbouring: ``"replace_one"`` (default, n public) or ``"add_remove"`` (n private: Poisson-sampled releases
            accounted with Opacus' RDP, the defaults that depend on n take their large-table values, and the row count
            synthcity generates by default is the released estimate of n; privacy.md, "Add/remove neighbours").
        image_adapter: for an ``ImageDataLoader``: an ``ImageLatentAdapter`` trained on public images, or the
            path of its checkpoint. ``None`` follows the paper: a random ``public_fraction`` of the images
            given to ``fit`` is treated as public and trains the autoencoder (``autoencoder_epochs``, latent
            size ``latent_dim``), the rest is the private data; the report states it.
        latent_dim: latent size of that autoencoder (unused with ``image_adapter``, which has its own); ``None``:
            16 for 32 x 32 images (with 10 epochs, chosen on a validation split of MNIST: docs/flows.md, "Images:
            a wider public autoencoder"; the paper used 8 and 5), 48 for the larger "dcgan" architecture.
        n_classes: number of image classes (public); labels are generated with the images, per class for
            releases that support it (``labelling="conditional"``), else joined into the record.
        labelling: ``"conditional"`` or ``"joint"`` (see ``SlicedGenerator``).
        feature_weight: weight of the latent beside the scaled one-hot label in a joint record.
        device, random_state, workspace, sampling_patience, strict, compress_dataset: synthcity's.
    """

    generator_class: ClassVar[type[SlicedGenerator]]

    def __init__(
        self,
        epsilon: float = 3.0,
        delta: float | None = None,
        release: str | None = None,
        radius: float = 1.0,
        n_release_directions: int | None = None,
        n_bins: int = 16,
        coarse_bins: int | None = None,
        fine_bins: int | None = None,
        max_pairs: int | None = 120,
        n_directions: int = 70,
        n_steps: int | None = None,
        step_size: float = 1.0,
        entropy: float = 0.0,
        smoothing: float | None = None,
        flow_batch_size: int | None = 4000,
        reuse: str = "pooled",
        domain: DomainSpec = None,
        domain_epsilon_share: float | None = None,
        numeric_histograms: bool = True,
        time_horizons: list[float] | None = None,
        max_one_hot: int = 20,
        accountant: str = "rdp",
        neighbouring: str = "replace_one",
        image_adapter: ImageLatentAdapter | str | Path | None = None,
        public_fraction: float = 0.5,
        autoencoder_epochs: int = 10,
        latent_dim: int | None = None,
        n_classes: int = 10,
        labelling: str = "conditional",
        feature_weight: float = 0.7,
        device: Any = DEVICE,
        random_state: int = 0,
        workspace: Path = Path("workspace"),
        sampling_patience: int = 500,
        strict: bool = True,
        compress_dataset: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(
            device=device, random_state=random_state, sampling_patience=sampling_patience, workspace=workspace,
            strict=strict, compress_dataset=compress_dataset, **kwargs,
        )
        if domain_epsilon_share is not None and not 0 < domain_epsilon_share < 1:
            raise ValueError(f"domain_epsilon_share must lie in (0, 1), got {domain_epsilon_share!r}.")
        if release is not None and release not in MECHANISMS:
            raise ValueError(f"release must be None or one of {sorted(MECHANISMS)}, got {release!r}.")
        self.epsilon = epsilon
        self.delta = delta
        self.release = release
        self.radius = radius
        self.n_release_directions = n_release_directions
        self.n_bins = n_bins
        self.coarse_bins = coarse_bins
        self.fine_bins = fine_bins
        self.max_pairs = max_pairs
        self.n_steps = n_steps
        self.settings = FlowSettings(
            n_steps=n_steps or KINDS["projected_histogram"].steps, step_size=step_size, entropy=entropy, smoothing=smoothing,
            batch_size=flow_batch_size, n_directions=n_directions, reuse=reuse,  # type: ignore[arg-type]
        )
        self.domain = domain
        self.domain_epsilon_share = domain_epsilon_share
        self.numeric_histograms = numeric_histograms
        check_time_horizons(time_horizons)
        self.time_horizons = time_horizons
        self.max_one_hot = max_one_hot
        self.accountant = accountant
        check_neighbouring(neighbouring)
        self.neighbouring = neighbouring
        self.image_adapter = image_adapter
        self.public_fraction = public_fraction
        self.autoencoder_epochs = autoencoder_epochs
        self.latent_dim = latent_dim
        self.n_classes = n_classes
        self.labelling = labelling
        self.feature_weight = feature_weight
        self.generator_: SlicedGenerator | None = None
        self.encoder_: TabularEncoder | MarginalTableCodec | ImageLatentAdapter | None = None
        self.layout_: MarginalLayout | None = None
        self.domain_part_: PrivacyPart | None = None
        self.domain_rows_: float | None = None

    @staticmethod
    def type() -> str:
        return "privacy"

    def release_for(self, data_type: str) -> str:
        """The release kind used for ``data_type`` ("images" or a table): ``release``, or the default for it."""
        if self.release is not None:
            return self.release
        return "projected_histogram" if data_type == "images" else "marginal"

    def generator_arguments(self, n_records: int) -> dict[str, Any]:
        """Arguments of the wrapped generator for a table of ``n_records`` rows (subclasses add theirs)."""
        release = self.release_for("images" if isinstance(self.encoder_, ImageLatentAdapter) else "table")
        spec = KINDS[release]
        settings = self.settings
        if self.n_steps is None:
            settings = dataclasses.replace(settings, n_steps=spec.steps)
        if settings.flow_particles is None:
            settings = dataclasses.replace(settings, flow_particles=spec.flow_particles)
        return {
            "release": release, "radius": self.radius, "n_release_directions": self.n_release_directions,
            "n_bins": self.n_bins, "marginals": self.layout_, "labelling": self.labelling,
            "feature_weight": self.feature_weight,
            "accountant": self.accountant, "neighbouring": self.neighbouring, "settings": settings, "seed": self.random_state,
            "device": "cuda" if str(self.device).startswith("cuda") and torch.cuda.is_available() else "cpu",
        }

    def fit(self, X: DataLoader | pd.DataFrame, *args: Any, **kwargs: Any) -> "SlicedFlowPlugin":
        """Fit on a tabular DataLoader (or DataFrame) or an ImageDataLoader, with no non-private statistic of it."""
        if isinstance(X, pd.DataFrame):
            X = GenericDataLoader(X)
        if kwargs.get("cond") is not None:
            raise ValueError(f"{self.name()} does not support conditional generation; drop `cond`.")
        path = loader_path(X, self.name(), self.time_horizons)
        load_accountants()
        if X.data_type == "images":
            return self._fit_images(X)
        frame = X.dataframe()
        check_table(frame)
        n_public = self._public_size(len(frame))
        delta = default_delta(n_public) if self.delta is None else self.delta
        check_privacy_target(self.epsilon, delta, n_public)
        # The loader's rules on declared columns are checked before any release (``_domain`` checks them first).
        public = None if self.domain is None else resolve_domain(self.domain, self.max_one_hot)
        declared = set() if public is None else set(public.names)
        if public is not None:
            path.public_domain(X, public, declared)
        domain = path.public_domain(X, self._domain(frame, self.epsilon, delta), declared)
        flow_epsilon, flow_delta = self.epsilon, delta
        if self.domain_part_ is not None:
            flow_epsilon -= self.domain_part_.epsilon
            flow_delta -= self.domain_part_.delta
        info = path.public_info(X, domain)
        self._schema = synthcity_schema(domain)
        self._training_schema = self._schema
        self._data_encoders = None
        unknown = "error" if self.domain_part_ is None else "first"  # a released domain drops rare categories
        if MECHANISMS[self.release_for("table")].takes_level_codes:
            fine_bins, coarse_bins = self._resolution(n_public, flow_epsilon, flow_delta, len(domain.columns))
            codec = MarginalTableCodec(domain, fine_bins, unknown)
            self.encoder_ = codec
            self.layout_ = MarginalLayout.build(codec.levels, coarse_bins, self.max_pairs, self.random_state, codec.missing)
        else:
            self.encoder_, self.layout_ = TabularEncoder(domain, unknown), None
        self._fit(X, flow_epsilon, flow_delta)
        self.data_info = self._released_info(info)
        self.fitted = True
        return self

    def _resolution(self, n_public: int | None, epsilon: float, delta: float, n_columns: int) -> tuple[int, int]:
        """``(fine_bins, coarse_bins)`` of the marginal release: the given ones, else ``table_resolution`` from the
        expected size (n, or under add/remove the DP domain's released estimate) and the noise of a pooled count of
        this plugin's schedule at the flow's budget (public numbers and released ones only)."""
        if self.fine_bins is not None and self.coarse_bins is not None:
            return self.fine_bins, self.coarse_bins
        size = n_public if n_public is not None else self.domain_rows_
        if size is None or math.isinf(epsilon):
            fine, coarse = table_resolution(None, 1.0)
        else:
            n_tables = n_columns + min(n_columns * (n_columns - 1) // 2, self.max_pairs or n_columns**2)
            probe_layout = MarginalLayout((2,) * n_columns, (2,) * n_columns, ())  # the noise needs no real layout
            probe = self.generator_class(**{**self.generator_arguments(n_public or 1), "marginals": probe_layout})
            unit = math.sqrt(2.0 if self.neighbouring == "replace_one" else 1.0)
            fine, coarse = table_resolution(size, probe.count_noise(n_public, epsilon, delta) * unit * math.sqrt(n_tables))
        return self.fine_bins or fine, self.coarse_bins or coarse

    def _public_size(self, n_records: int) -> int | None:
        """n where it is public (replace-one); ``None`` under add/remove, where no default may read it."""
        return n_records if self.neighbouring == "replace_one" else None

    def _released_info(self, info: dict[str, Any]) -> dict[str, Any]:
        """``info`` with its row count ("len", the count synthcity's ``generate()`` makes by default) replaced by the
        released estimate of n when n is private (add/remove; post-processing of the releases)."""
        if self.neighbouring == "replace_one":
            return info
        assert self.generator_ is not None
        return {**info, "len": max(1, round(self.generator_.released_size()))}

    def _fit_images(self, X: DataLoader) -> "SlicedFlowPlugin":
        """Images: latents of a public autoencoder with their labels, one record per (image, label) pair."""
        if self.release is not None and MECHANISMS[self.release].takes_level_codes:
            raise ValueError(f"the {self.release} release is for tables (it counts level codes); leave release=None "
                             "(projected histograms) for images.")
        if self.neighbouring == "add_remove" and self.image_adapter is None:
            raise ValueError(
                "under add/remove the public half drawn from the images passed to fit depends on their number (one image "
                "more redraws the split); pass image_adapter, an autoencoder trained on public images."
            )
        images, labels = X.unpack().tensors()
        images, labels = from_synthcity_range(images.float()), labels.long()
        if bool((labels < 0).any()) or bool((labels >= self.n_classes).any()):
            raise ValueError(f"labels must lie in 0..{self.n_classes - 1}; set n_classes for this data.")
        if isinstance(self.image_adapter, ImageLatentAdapter):
            adapter, private = self.image_adapter, torch.arange(len(images))
        elif self.image_adapter is not None:
            adapter, private = ImageLatentAdapter.load(self.image_adapter), torch.arange(len(images))
        else:
            public, private = public_private_split(len(images), self.public_fraction, self.random_state)
            architecture = "mnist" if images.shape[-1] == 32 else "dcgan"
            latent_dim = self.latent_dim
            if latent_dim is None and architecture == "mnist":
                latent_dim = MNIST_LATENT_DIM
            adapter = ImageLatentAdapter(architecture, latent_dim=latent_dim, channels=images.shape[1])
            adapter.fit(
                images[public], epochs=self.autoencoder_epochs, seed=self.random_state,
                description=f"a random {self.public_fraction:.0%} of the images passed to fit, public by assumption",
            )
        n_public = self._public_size(len(private))
        delta = default_delta(n_public) if self.delta is None else self.delta
        check_privacy_target(self.epsilon, delta, n_public)
        self._schema = Schema(domain={})
        self._training_schema = self._schema
        self._data_encoders = None
        self.encoder_ = adapter
        self.domain_part_, self.layout_ = None, None
        self._fit_generator(adapter.encode(images[private]), self.epsilon, delta, labels[private])
        self.data_info = self._released_info(loader_path(X, self.name()).public_info(X, None))
        self.fitted = True
        return self

    def _domain(self, frame: pd.DataFrame, epsilon: float, delta: float) -> TabularDomain:
        """The domain of ``frame``: the declared (public) one where given, a DP domain for the columns it leaves out
        and the value histograms of declared numeric columns that need them (``needs_histogram``, unless
        ``numeric_histograms=False``), paid with ``domain_epsilon_share`` of the budget; nothing paid when the
        declared domain covers everything."""
        declared = None if self.domain is None else resolve_domain(self.domain, self.max_one_hot)
        undeclared = [column for column in frame.columns if declared is None or column not in declared.names]
        histograms = {} if declared is None or not self.numeric_histograms or math.isinf(epsilon) else {
            column.name: (column.low, column.high, column.integer)
            for column in declared.columns if needs_histogram(column, FINE_LEVELS[1])
        }
        if declared is not None:  # a declared column's values must lie in it: refused before any release
            MarginalTableCodec(declared, FINE_LEVELS[1], "error").encode(frame)
        if not undeclared and not histograms:
            self.domain_part_, self.domain_rows_ = None, None
            assert declared is not None
            return declared
        if math.isinf(epsilon):
            raise ValueError("with epsilon = inf there is no budget to share with a DP domain; pass a domain that "
                             "declares every column.")
        share = self.domain_epsilon_share
        if share is None:
            share = default_domain_share(
                self._public_size(len(frame)), len(undeclared), len(histograms), epsilon, delta, self.neighbouring
            )
        share_epsilon, share_delta = share * epsilon, share * delta
        release = release_domain(
            frame[undeclared + list(histograms)], share_epsilon, share_delta, secret_generator(), self.neighbouring,  # type: ignore[arg-type]
            declared=histograms,
        )
        self._warn_about(release, share_epsilon)
        what = f"kinds, ranges, value histograms and category sets of {len(undeclared)} columns" if undeclared else ""
        if histograms:
            what += ("; " if what else "") + f"value histograms of {len(histograms)} declared numeric columns"
        self.domain_part_ = PrivacyPart(
            "DP domain", share_epsilon, share_delta,
            f"Gaussian counts ({what}; z = {release.noise_multiplier:.3g}"
            + (f", category threshold {release.threshold:.3g}: a category needs about {release.needed_rows:.0f} rows to be "
               "published)" if undeclared else ")"),
            release.other_adjacency(),
        )
        self.domain_rows_ = release.released_rows
        released = TabularDomain.from_release(release)
        return released if declared is None else declared.merged(released, list(frame.columns))

    def _warn_about(self, release: DomainRelease, epsilon: float) -> None:
        """Say what the DP domain could not place or publish (read from released counts: post-processing)."""
        hidden = [column for column, located in release.located.items() if not located]
        if hidden:
            warnings.warn(
                f"the DP domain could not place columns {hidden} above its noise at epsilon = {epsilon:.3g}: their "
                "ranges (or categories) are stated defaults. Declare them (domain={...}), or raise domain_epsilon_share.",
                stacklevel=4,
            )
        unsure = {column: rows for column, rows in release.hidden_missing.items() if rows > release.missing_std(column)}
        if unsure:
            listed = ", ".join(f"{column!r} (about {rows:.0f})" for column, rows in unsure.items())
            warnings.warn(
                f"the DP domain could not place the missing entries of {listed} above three noise stds: they are mapped "
                'to a stated default. Declare those columns with "missing": true (domain={...}) to keep them.',
                stacklevel=4,
            )
        if release.lost:
            lost = ", ".join(f"{column!r} (about {rows:.0f} rows)" for column, rows in release.lost.items())
            warnings.warn(
                f"the DP domain published no category below about {release.needed_rows:.0f} rows: the rarer categories of "
                f"{lost} are grouped as {OTHER_CATEGORY!r}. Declare those columns' categories (domain={{column: [...]}}) "
                "to keep them.",
                stacklevel=4,
            )

    def _fit(self, X: DataLoader, epsilon: float, delta: float) -> "SlicedFlowPlugin":
        """Encode the table with the domain's fixed map and fit the generator with what is left of the budget."""
        assert isinstance(self.encoder_, (TabularEncoder, MarginalTableCodec))
        self._fit_generator(self.encoder_.encode(X.dataframe()), epsilon, delta)
        return self

    def _fit_generator(self, records: torch.Tensor, epsilon: float, delta: float, labels: torch.Tensor | None = None) -> None:
        """Build the wrapped generator for these encoded records and fit it: the releases happen here."""
        self.generator_ = self.generator_class(**self.generator_arguments(len(records)))
        n_classes = None if labels is None else self.n_classes
        self.generator_.fit(records, epsilon, delta, labels=labels, n_classes=n_classes)

    def _generate(self, count: int, syn_schema: Schema, **kwargs: Any) -> DataLoader:
        if self.generator_ is None or self.encoder_ is None:
            raise RuntimeError("fit the plugin first")
        generator, encoder = self.generator_, self.encoder_
        if isinstance(encoder, ImageLatentAdapter):

            def sample_images(n: int) -> TensorDataset:
                seed = int(torch.randint(0, 2**31 - 1, (1,)))
                latents, labels = generator.sample_labelled(n, seed=seed)
                latents = latents.cpu()
                return TensorDataset(images=encoder.decode(latents), targets=labels)

            return self._safe_generate_images(sample_images, count, syn_schema)

        def sample(n: int) -> pd.DataFrame:
            seed = int(torch.randint(0, 2**31 - 1, (1,)))
            return encoder.decode(generator.sample(n, seed=seed))

        return self._constrained_rows(sample, count, syn_schema)

    def _constrained_rows(self, sample: Callable[[int], pd.DataFrame], count: int, syn_schema: Schema) -> DataLoader:
        """``count`` generated rows that meet ``syn_schema``'s constraints (with ``strict``), as synthcity's
        ``_safe_generate`` makes them but without its ``drop_duplicates``: a synthetic table may repeat rows (one of a
        few discrete columns has fewer distinct rows than are asked for, and synthcity then looped to its patience,
        flowing ``count`` rows each time). At most ``sampling_patience`` draws; rows that meet the constraints are
        kept in the order drawn."""
        # The rows' dtypes are the domain's by construction; synthcity's schema, rebuilt from constraints, would ask a
        # nullable integer column for "float" (``NullableInteger``): its dtype rules are left out.
        constraints = Constraints(rules=[rule for rule in syn_schema.as_constraints().rules if rule[1] != "dtype"])
        kept: list[pd.DataFrame] = []
        total = 0
        for _ in range(self.sampling_patience):
            rows = self.training_schema().adapt_dtypes(sample(count))
            if self.strict:
                rows = constraints.match(rows)
            kept.append(rows)
            total += len(rows)
            if total >= count:
                break
        frame = pd.concat(kept, ignore_index=True).head(count) if kept else pd.DataFrame(columns=self.training_schema().features())
        return create_from_info(self.training_schema().adapt_dtypes(frame), self.data_info)

    def privacy_report(self) -> PrivacyReport:
        """The privacy report of the fitted plugin: the releases, plus the DP domain if one was paid for."""
        if self.generator_ is None or self.encoder_ is None:
            raise RuntimeError("fit the plugin first")
        report = self.generator_.privacy_report
        if isinstance(self.encoder_, ImageLatentAdapter):
            public = f"the autoencoder, trained on {self.encoder_.public_description}"
        else:
            public = f"the column names; the domain (kinds, ranges, categories, hence dtypes): {self.encoder_.domain.source}"
        report = dataclasses.replace(report, public=report.public + (public,))
        return report if self.domain_part_ is None else report.compose(self.domain_part_)

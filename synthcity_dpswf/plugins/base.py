"""What the three synthcity plugins share: a DP-safe ``fit`` on a DataLoader, generation, the report.

synthcity's ``Plugin.fit`` infers a schema (min/max, categories, marginals) and fits encoders on the
private table before ``_fit``: statistics of private records that would be stored in the model and used to
filter its output. These plugins override ``fit``: the loader's kind of data picks a ``DataPath`` (``path_for``),
which settles the public schema and the encoding (for tables from a ``TabularDomain`` that is either public,
``domain=...``, or released with a stated share of the budget, ``privacy.domain.release_domain``), and the
generator only ever sees encoded records.
"""

from __future__ import annotations

import dataclasses
import difflib
import inspect
import warnings
from pathlib import Path
from typing import Any, ClassVar, Mapping

import pandas as pd
import torch
from pydantic import Field
from synthcity.plugins.core.constraints import Constraints
from synthcity.plugins.core.dataloader import DataLoader, GenericDataLoader
from synthcity.plugins.core.plugin import Plugin
from synthcity.plugins.core.schema import Schema
from synthcity.utils.constants import DEVICE

from synthcity_dpswf.adapters.image_codecs import DCT_FREQUENCIES, PCA_COMPONENTS
from synthcity_dpswf.adapters.tabular import DomainSpec
from synthcity_dpswf.adapters.partitioned import DaskCounts, computing, is_partitioned, read_partitioned
from synthcity_dpswf.adapters.image_latent import REFINER_ADVERSARIAL_WEIGHT, REFINER_EPOCHS, AutoencoderCodec
from synthcity_dpswf.extensions import load_accountants
from synthcity_dpswf.models import KINDS, SlicedGenerator
from synthcity_dpswf.models.base import GeneratorSpec
from synthcity_dpswf.notices import DPSWFWarning
from synthcity_dpswf.plugins.image_path import ImagePath
from synthcity_dpswf.plugins.paths import Codec, DataPath, PreparedData, loader_path
from synthcity_dpswf.plugins.options import FlowOptions, ImageOptions, SynthcityOptions, TableOptions
from synthcity_dpswf.plugins.table_path import TablePath
from synthcity_dpswf.privacy import MECHANISMS, Adjacency, MarginalLayout, PrivacyPart, PrivacyReport
from synthcity_dpswf.privacy.budget import Budget


def path_for(X: DataLoader) -> DataPath:
    """The ``DataPath`` of ``X``'s kind of data: images (an ``ImageDataLoader``) or a table (every other loader
    ``plugins.paths`` accepts)."""
    return ImagePath() if X.data_type == "images" else TablePath()


FITTED_STATE = ("path_", "generator_", "encoder_", "layout_", "domain_part_", "selection_part_", "domain_rows_",
                "_schema", "_training_schema", "_data_encoders", "data_info", "fitted", "expecting_conditional")
"""What a fit sets on the plugin: restored as it was when a fit fails (``SlicedFlowPlugin.fit``)."""


RENAMED: dict[str, str] = {"image_adapter": "image_autoencoder"}
"""Arguments renamed when the package gave one word, codec, to its maps between data and records: the old name is
refused with the new one."""


class GenerationSchema(Schema):
    """synthcity's generation schema (rebuilt from the training schema's and the user's constraints) that keeps the
    user's constraints as given: ``as_constraints`` returns the rebuilt schema's rules and those, so that a rule
    ``Schema.from_constraints`` drops ("<", ">") or widens ("in", merged with the column's categories) still filters
    the generated rows."""

    requested: Constraints = Field(default_factory=Constraints)

    @classmethod
    def of(cls, schema: Schema, requested: Constraints) -> "GenerationSchema":
        """``schema`` with ``requested`` kept beside its domain."""
        return cls(sampling_strategy=schema.sampling_strategy, protected_cols=schema.protected_cols,
                   random_state=schema.random_state, domain=schema.domain, requested=requested)

    def as_constraints(self) -> Constraints:
        return Constraints(rules=list(super().as_constraints().rules) + list(self.requested.rules))


class SlicedFlowPlugin(Plugin):
    """Base of the dpswflow, dpswflow_r and dpswgen plugins (every argument has a default).

    Args:
        epsilon, delta, neighbouring: the total budget (``privacy.budget.Budget``); ``delta=None`` uses
            ``default_delta(n)`` = min(1e-5, n^-1.1) (stated in the report); ``neighbouring``: ``"replace_one"``
            (default, n public) or ``"add_remove"`` (n private: per-step releases accounted with Opacus' RDP,
            the defaults that depend on n take their large-table values, and the row count synthcity generates by
            default is the released estimate of n; privacy.md, "Add/remove neighbours").
        release, radius, n_release_directions, n_bins, accountant, n_steps, n_iter, n_directions, step_size, entropy,
            smoothing, flow_batch_size, reuse: how records are released and flowed (``options.FlowOptions``).
        domain, domain_epsilon_share, numeric_histograms, max_one_hot, time_horizons, coarse_bins, fine_bins,
            max_pairs, pair_selection, target_column, target_tables: tables (``options.TableOptions``;
            ``target_tables="per_value"`` flows one group per class: DPSWflow and DPSWflow-r).
        image_autoencoder, image_codec, codec_share, dct_frequencies, pca_components, public_fraction,
            autoencoder_epochs, refiner_epochs, refiner_weight, latent_dim, n_classes, labelling, feature_weight:
            images and their labels (``options.ImageOptions``).
        device, random_state, workspace, sampling_patience, strict, compress_dataset: synthcity's
            (``options.SynthcityOptions``); ``device="cuda"`` where torch sees no CUDA device warns and runs on the CPU.

    Every argument is checked here, where it is given (``Plugins().get``), by the group it is built into, except what
    needs the data: delta against 1/n, and the domain against the table.
    """

    generator_class: ClassVar[type[SlicedGenerator]]
    small_batches: ClassVar[bool] = False
    """Whether a given replace-one batch size is capped at half of a smaller table's n (``GeneratorSpec``)."""

    def __init__(
        self,
        epsilon: float = 3.0,
        delta: float | None = None,
        release: str | None = None,
        radius: float = 1.0,
        n_release_directions: int | None = None,
        n_bins: int | None = None,
        coarse_bins: int | None = None,
        fine_bins: int | None = None,
        max_pairs: int | None = 120,
        pair_selection: str = "adaptive",
        target_column: str | None = None,
        target_tables: str = "pairs",
        n_directions: int = 70,
        n_steps: int | None = None,
        n_iter: int | None = None,
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
        neighbouring: Adjacency | str = Adjacency.REPLACE_ONE,
        image_autoencoder: AutoencoderCodec | str | Path | None = None,
        image_codec: str | None = None,
        codec_share: float | None = None,
        dct_frequencies: int = DCT_FREQUENCIES,
        pca_components: int = PCA_COMPONENTS,
        public_fraction: float = 0.5,
        autoencoder_epochs: int = 10,
        refiner_epochs: int = REFINER_EPOCHS,
        refiner_weight: float = REFINER_ADVERSARIAL_WEIGHT,
        latent_dim: int | None = None,
        n_classes: int = 10,
        labelling: str = "conditional",
        feature_weight: float = 0.7,
        device: Any = DEVICE,
        random_state: int = 0,
        workspace: Path | str = Path("workspace"),
        sampling_patience: int = 500,
        strict: bool = True,
        compress_dataset: bool = False,
        **kwargs: Any,
    ) -> None:
        self.check_keywords(kwargs)
        budget = Budget(epsilon, delta, neighbouring)
        flow = FlowOptions(release, radius, n_release_directions, n_bins, accountant, n_steps, n_iter, n_directions,
                           step_size, entropy, smoothing, flow_batch_size, reuse, neighbouring=budget.neighbouring)
        if target_column is not None and release is not None and not MECHANISMS[release].takes_level_codes:
            raise ValueError(f"target_column={target_column!r} shapes the marginal release's tables; release={release!r} "
                             "has none: leave release=None (the marginal release for tables) or name no target.")
        if target_tables == "per_value" and not self.generator_class.conditions_on_target:
            raise ValueError(f"{self.name()} trains one network for every row and cannot count its tables per value "
                             "of a target: use target_tables='pairs', or dpswflow / dpswflow_r.")
        table = TableOptions(domain, domain_epsilon_share, numeric_histograms, max_one_hot, time_horizons, coarse_bins,
                             fine_bins, max_pairs, pair_selection, target_column, target_tables)
        image = ImageOptions(image_autoencoder, image_codec, codec_share, dct_frequencies, pca_components,
                             public_fraction, autoencoder_epochs, refiner_epochs, refiner_weight, latent_dim, n_classes,
                             labelling, feature_weight)
        synthcity = SynthcityOptions(device, random_state, workspace, sampling_patience, strict, compress_dataset)
        super().__init__(**synthcity.keywords(), **kwargs)
        if str(device).startswith("cuda") and not torch.cuda.is_available():
            warnings.warn(f"device={str(device)!r} was asked for but torch sees no CUDA device: running on the CPU.",
                          DPSWFWarning, stacklevel=2)
            self.device = torch.device("cpu")
        self.budget = budget
        self.flow_options = flow
        self.table_options = table
        self.image_options = image
        self.path_: DataPath | None = None
        self.generator_: SlicedGenerator | None = None
        self.encoder_: Codec | None = None
        self.layout_: MarginalLayout | None = None
        self.domain_part_: PrivacyPart | None = None
        self.selection_part_: PrivacyPart | None = None
        self.domain_rows_: float | None = None

    @property
    def epsilon(self) -> float:
        """The budget's epsilon (``budget``; setting it builds a new ``Budget``, checked there)."""
        return self.budget.epsilon

    @epsilon.setter
    def epsilon(self, epsilon: float) -> None:
        self.budget = dataclasses.replace(self.budget, epsilon=epsilon)

    @property
    def delta(self) -> float | None:
        """The budget's delta as given (``None``: chosen from n at fit)."""
        return self.budget.delta

    @delta.setter
    def delta(self, delta: float | None) -> None:
        self.budget = dataclasses.replace(self.budget, delta=delta)

    @property
    def neighbouring(self) -> Adjacency:
        """The budget's adjacency."""
        return self.budget.neighbouring

    @neighbouring.setter
    def neighbouring(self, neighbouring: Adjacency | str) -> None:
        budget = dataclasses.replace(self.budget, neighbouring=neighbouring)
        self.check_adjacency(budget.neighbouring)  # refused here, before any fit releases anything
        self.budget = budget

    def check_adjacency(self, neighbouring: Adjacency) -> None:
        """Refuse an adjacency the options do not hold under (an accountant not proven for Poisson sampling; subclasses
        add theirs), as their construction does."""
        dataclasses.replace(self.flow_options, neighbouring=neighbouring)

    @classmethod
    def check_keywords(cls, given: dict[str, Any]) -> None:
        """Refuse a keyword that neither this plugin nor synthcity's ``Plugin`` takes, naming the closest ones it
        does (synthcity's own message names neither the plugin nor an alternative)."""
        accepted = {name for klass in cls.__mro__ if "__init__" in vars(klass)
                    for name, parameter in inspect.signature(vars(klass)["__init__"]).parameters.items()
                    if parameter.kind is not inspect.Parameter.VAR_KEYWORD and name != "self"}
        for name in sorted(set(given) - accepted):
            if name in RENAMED:
                raise TypeError(f"{cls.name()} has no argument {name!r}: it is now {RENAMED[name]!r} (same meaning).")
            close = difflib.get_close_matches(name, sorted(accepted), n=3)
            hint = f"; did you mean {' or '.join(map(repr, close))}?" if close else f"; it takes {sorted(accepted)}."
            raise TypeError(f"{cls.name()} has no argument {name!r}{hint}")

    @staticmethod
    def type() -> str:
        return "privacy"

    def generator_arguments(self, release: str, flow_defaults: Mapping[str, int]) -> dict[str, Any]:
        """Arguments of the wrapped generator for the ``release`` kind, with the codec's measured ``flow_defaults``
        where the plugin's own are ``None`` (subclasses add theirs; the marginal release's layout is given when it
        is built: ``GeneratorSpec.build``)."""
        kind, flow, image = KINDS[release], self.flow_options, self.image_options
        return {
            "release": release, "radius": flow.radius, "n_release_directions": flow.release_directions(flow_defaults),
            "n_bins": flow.bins(flow_defaults), "labelling": image.labelling, "feature_weight": image.feature_weight,
            "accountant": flow.accountant, "neighbouring": self.neighbouring,
            "settings": flow.settings(flow_defaults.get("n_steps", kind.steps), kind.flow_particles, kind.step_particles,
                                      kind.rows_per_particle),
            "seed": self.random_state,
            "device": "cuda" if str(self.device).startswith("cuda") and torch.cuda.is_available() else "cpu",
        }

    def generator_spec(self, path: DataPath) -> GeneratorSpec:
        """The generator a fit on ``path``'s data builds, resolved once from the arguments: its class, the release kind
        (``release``, or the path's default) and the codec's flow defaults (``DataPath.flow_defaults``), so its
        schedule (``GeneratorSpec.plan``)."""
        given = self.flow_options.release
        release = given if given is not None else path.default_release
        flow_defaults = path.flow_defaults(self.image_options.image_codec, self.name(), release)
        return GeneratorSpec(self.generator_class, self.generator_arguments(release, flow_defaults),
                             small_batches=self.small_batches)

    def fit(self, X: Any, *args: Any, **kwargs: Any) -> "SlicedFlowPlugin":
        """Fit on a tabular DataLoader (or DataFrame) or an ImageDataLoader, with no non-private statistic of it; or
        on a table beyond one process, a Dask DataFrame or the path of a Parquet dataset (DPSWflow: counted partition
        by partition, on the running Dask client or a local cluster started for the call; privacy.md, "Tables on
        Dask"). A fit that fails leaves the plugin as it was (an earlier fit stays usable)."""
        if kwargs.get("cond") is not None:
            raise ValueError(f"{self.name()} takes no cond at fit: name the target column instead "
                             "(GenericDataLoader(df, target_column=...) or target_column=...); generate(count, cond=...) "
                             "then draws rows for given values of it.")
        load_accountants()
        kept = {name: getattr(self, name, None) for name in FITTED_STATE}
        try:
            if is_partitioned(X) or isinstance(X, (str, Path)):
                self._fit_partitioned(read_partitioned(X))
            else:
                self._fit_in_memory(GenericDataLoader(X) if isinstance(X, pd.DataFrame) else X,
                                    named_target=not isinstance(X, pd.DataFrame))
        except BaseException:
            for name, value in kept.items():
                setattr(self, name, value)
            raise
        return self

    def _fit_in_memory(self, X: DataLoader, named_target: bool) -> None:
        """Fit on a loader: the generator resolved once (``generator_spec``), its data path prepares the records and
        the plan their noise is calibrated to, the generator releases them by that plan. ``named_target``: whether
        the loader's target column was named by the caller (a DataLoader given), not by wrapping a DataFrame."""
        path = path_for(X)
        spec = self.generator_spec(path)
        target = self.table_options.named_target(X, named_target, spec.release)
        loader = loader_path(X, self.name(), self.table_options.time_horizons, target)
        prepared = path.prepare(self, X, loader, spec)
        self.path_ = path
        self._keep(prepared)
        assert prepared.records is not None
        budget = prepared.budget
        self.generator_ = spec.build(prepared.n_public, prepared.layout)
        n_classes = None if prepared.labels is None else self.image_options.n_classes
        self.generator_.fit(prepared.records, None, budget.release_delta, labels=prepared.labels, n_classes=n_classes,
                            noise_multiplier=prepared.noise_multiplier, prior=budget.prior, plan=prepared.plan)
        self._finish(prepared, float(len(prepared.records)))

    def _fit_partitioned(self, frame: Any) -> None:
        """Fit on a Dask DataFrame: the table path's domain and codec from summed counts, then one release summed
        from the partitions' level codes, its noise added once (``SlicedGenerator.fit_total``)."""
        path = TablePath()
        spec = self.generator_spec(path)
        with computing():
            prepared = path.prepare_partitioned(self, DaskCounts(frame), spec)
            self.path_ = path
            self._keep(prepared)
            self.generator_ = spec.build(prepared.n_public, prepared.layout)
            statistic = prepared.partitioned.marginal_statistic(prepared.codec, self.generator_.mechanism)
        n_records = prepared.n_public
        self.generator_.fit_total(statistic, len(prepared.codec.domain.columns), None, prepared.budget.release_delta,
                                  n_records=n_records, noise_multiplier=prepared.noise_multiplier,
                                  prior=prepared.budget.prior, plan=prepared.plan)
        self._finish(prepared, None if n_records is None else float(n_records))

    def _keep(self, prepared: PreparedData) -> None:
        """What the plugin keeps of a prepared table or image set: the public schema, the codec and layout, the
        domain's part of the budget."""
        self._schema = prepared.schema
        self._training_schema = self._schema
        self._data_encoders = None
        self.encoder_, self.layout_ = prepared.codec, prepared.layout
        self.domain_part_, self.domain_rows_ = prepared.paid, prepared.released_rows
        self.selection_part_ = prepared.selection_part
        # synthcity's flag that lets generate(cond=...) through: the data path answers it (a fit conditioned on a
        # named target: TablePath.generate_conditioned) or refuses it saying why, instead of synthcity's "mismatch"
        self.expecting_conditional = True

    def _finish(self, prepared: PreparedData, n_records: float | None) -> None:
        """After the release: the DP domain's one-way counts joined to a marginal release (counting n where it is
        public, else the domain's released estimate of it), and synthcity's loader info."""
        counted = n_records if self.neighbouring.n_is_public else prepared.released_rows
        if prepared.one_way and counted:
            self.generator_.add_one_way(prepared.one_way, counted)  # type: ignore[union-attr]
        self.data_info = self.released_info(prepared.info)
        self.fitted = True

    def released_info(self, info: dict[str, Any]) -> dict[str, Any]:
        """``info`` with its row count ("len", the count synthcity's ``generate()`` makes by default) replaced by the
        released estimate of n when n is private (add/remove; post-processing of the releases)."""
        if self.neighbouring.n_is_public:
            return info
        assert self.generator_ is not None
        return {**info, "len": max(1, round(self.generator_.released_size()))}

    def _fit(self, X: DataLoader, *args: Any, **kwargs: Any) -> "SlicedFlowPlugin":
        """synthcity's hook, never reached: ``fit`` is overridden so that no private statistic is computed outside
        the releases."""
        raise NotImplementedError("SlicedFlowPlugin fits through fit(); _fit is not used.")

    def generate(self, count: int | None = None, constraints: Constraints | None = None,
                 random_state: int | None = None, **kwargs: Any) -> DataLoader:
        """synthcity's ``generate``, with ``constraints`` handed to the data path as given (``GenerationSchema``):
        synthcity hands ``_generate`` a schema rebuilt from them (``Schema.from_constraints``), which drops "<" and ">"
        rules and widens "in" ones, so the rows drawn did not meet them and synthcity's own last check then raised
        "failed to meet the synthetic constraints". Where the generator rarely meets them, fewer rows come back with a
        warning (``TablePath.generate``). Post-processing of the releases."""
        return super().generate(count, constraints, random_state, requested=constraints, **kwargs)

    def _generate(self, count: int, syn_schema: Schema, requested: Constraints | None = None, cond: Any = None,
                  **kwargs: Any) -> DataLoader:
        """``cond``: the named target's value of every row (``TablePath.generate``)."""
        if self.generator_ is None or self.encoder_ is None or self.path_ is None:
            raise RuntimeError("fit the plugin first")
        schema = syn_schema if requested is None else GenerationSchema.of(syn_schema, requested)
        return self.path_.generate(self, self.generator_, self.encoder_, count, schema, cond)

    def generate_parquet(self, path: str | Path, count: int | None = None, chunk_size: int = 100_000,
                         seed: int | None = None) -> int:
        """Generate ``count`` table rows (default: the row count synthcity's ``generate`` makes) into the Parquet
        dataset at ``path`` (a folder of ``part-<i>.parquet`` files), one Dask task per chunk of ``chunk_size`` rows on
        the running Dask client or a local cluster started for the call: chunk i is flowed with its own seed from
        ``seed`` (default ``random_state``), so the rows do not depend on the number of workers, and each task's
        memory is bounded by the chunk size. Output dtypes are the domain's: ``pd.read_parquet(path)`` gives
        ``generate``'s (object for categories), while Dask's reader, under its ``dataframe.convert-string`` option
        (its default), gives ``string[pyarrow]`` for a category column of strings (guide.md). synthcity's
        constraints are not applied (``generate`` applies them). Post-processing of the releases. Returns the rows
        written."""
        if self.generator_ is None or self.encoder_ is None or self.path_ is None:
            raise RuntimeError("fit the plugin first")
        total = int(self.data_info["len"] if count is None else count)
        return self.path_.generate_parquet(self.generator_, self.encoder_, Path(path), total, chunk_size,
                                           self.random_state if seed is None else seed)

    def released_domain(self) -> pd.DataFrame:
        """The domain a fitted table plugin generates from, one row per column (``TabularDomain.summary``): kind, range
        or categories, output dtype, whether it may be missing and whether the DP domain placed it. Public or
        released facts only."""
        codec = self.encoder_
        domain = getattr(codec, "domain", None)
        if domain is None:
            raise RuntimeError("fit the plugin on a table first")
        return domain.summary()

    def privacy_report(self) -> PrivacyReport:
        """The privacy report of the fitted plugin: the releases, with the DP domain inside their accounting if one was
        paid for (privacy.md, "One budget")."""
        if self.generator_ is None or self.encoder_ is None or self.path_ is None:
            raise RuntimeError("fit the plugin first")
        report = self.generator_.privacy_report
        report = dataclasses.replace(report, public=report.public + (self.path_.public_line(self.encoder_),))
        for part in (self.domain_part_, self.selection_part_):
            if part is not None:
                report = report.include(part) if part.accounted else report.compose(part)
        return report

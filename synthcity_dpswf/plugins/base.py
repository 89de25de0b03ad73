"""What the plugins of both modalities share: a DP-safe ``fit``, generation, the report.

synthcity's ``Plugin.fit`` infers a schema (min/max, categories, marginals) and fits encoders on the private data
before ``_fit``: statistics of private records that would be stored in the model and used to filter its output. These
plugins override ``fit``: the plugin's modality picks a ``DataPath`` (tables: ``plugins.table_plugin``; images:
``plugins.image_plugin``), which settles the public schema and the encoding (for tables from a ``TabularDomain``
that is either public, ``domain=...``, or released with a stated share of the budget,
``privacy.domain.release_domain``; for images from a codec of the registry), and the generator only ever sees encoded
records.
"""

from __future__ import annotations

import dataclasses
import difflib
import inspect
import warnings
from pathlib import Path
from typing import Any, ClassVar, Mapping

import torch
from pydantic import Field
from synthcity.plugins.core.constraints import Constraints
from synthcity.plugins.core.dataloader import DataLoader
from synthcity.plugins.core.distribution import CategoricalDistribution, Distribution, FloatDistribution, IntegerDistribution
from synthcity.plugins.core.plugin import Plugin
from synthcity.plugins.core.schema import Schema
from synthcity.utils.constants import DEVICE

from synthcity_dpswf.extensions import load_accountants
from synthcity_dpswf.models import KINDS, SlicedGenerator
from synthcity_dpswf.models.base import GeneratorSpec
from synthcity_dpswf.notices import DPSWFWarning
from synthcity_dpswf.plugins.paths import (
    Codec, DataPath, FitInputs, GenerationContext, LoaderPath, PreparedData, check_data_kind, loader_path,
)
from synthcity_dpswf.plugins.options import FLOW_OPTION_DEFAULTS, FlowOptions, SynthcityOptions
from synthcity_dpswf.privacy import Adjacency, MarginalLayout, PrivacyPart, PrivacyReport
from synthcity_dpswf.privacy.budget import Budget


def flow_space() -> list[Distribution]:
    """The flow's hyperparameters, for synthcity's tuners (``hyperparameter_space``)."""
    return [
        IntegerDistribution(name="n_steps", low=200, high=2000, step=200),
        FloatDistribution(name="step_size", low=0.1, high=3.0),
        CategoricalDistribution(name="n_bins", choices=[16, 32, 64]),
        CategoricalDistribution(name="n_directions", choices=[30, 70, 150]),
        CategoricalDistribution(name="flow_batch_size", choices=[1000, 2000, 4000]),
    ]


FITTED_STATE = ("path_", "generator_", "encoder_", "layout_", "domain_part_", "selection_part_", "domain_rows_",
                "_schema", "_training_schema", "_data_encoders", "data_info", "fitted", "expecting_conditional")
"""What a fit sets on the plugin: restored as it was when a fit fails (``SlicedFlowPlugin.fit``)."""


MOVED_IMAGE_ARGUMENTS: dict[str, str] = {
    "image_adapter": "image_codec=<an AutoencoderCodec or the path of its checkpoint>",
    "image_autoencoder": "image_codec=<an AutoencoderCodec or the path of its checkpoint>",
    "public_fraction": "image_codec='public-autoencoder', codec_options={'images': <your public images>} (no image "
                       "passed to fit is ever taken as public)",
    "dct_frequencies": "image_codec='dct', codec_options={'frequencies': K}",
    "pca_components": "image_codec='private-pca', codec_options={'components': K}",
    "codec_share": "codec_options={'share': s} (a paid codec's share of mu^2)",
    "autoencoder_epochs": "codec_options={'epochs': ...} (image_codec='public-autoencoder' or 'private-autoencoder')",
    "latent_dim": "codec_options={'latent_dim': ...} (image_codec='public-autoencoder' or 'private-autoencoder')",
    "refiner_epochs": "codec_options={'refiner_epochs': ...} (image_codec='public-autoencoder')",
    "refiner_weight": "codec_options={'refiner_weight': ...} (image_codec='public-autoencoder')",
}
"""Image arguments of earlier versions, refused with what to give instead: the image codec's own settings are one
value, ``codec_options``, checked by its registry entry."""
MOVED: dict[str, str] = {
    "n_iter": "n_steps (the flow's steps; DPSWgen's training steps)",
    **{name: f"flow_options={{{name!r}: ...}}" for name in FLOW_OPTION_DEFAULTS},
    **MOVED_IMAGE_ARGUMENTS,
}
"""Arguments of earlier versions, refused with what to give instead."""


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
    """Base of the plugins, tables' (``plugins.table_plugin.TablePlugin``) and images' (``plugins.image_plugin.
    ImagePlugin``): the budget, the release and the flow, synthcity's glue (every argument has a default).

    Args:
        epsilon, delta, neighbouring: the total budget (``privacy.budget.Budget``); ``delta=None`` uses
            ``default_delta(n)`` = min(1e-5, n^-1.1) (stated in the report); ``neighbouring``: ``"replace_one"``
            (default, n public) or ``"add_remove"`` (n private: per-step releases accounted with Opacus' RDP,
            the defaults that depend on n take their large-table values, and the row count synthcity generates by
            default is the released estimate of n; privacy.md, "Add/remove neighbours").
        release, n_release_directions, n_bins, n_steps, n_directions, step_size, flow_batch_size: how records are
            released and flowed (``options.FlowOptions``); ``flow_options``, a dict of the less used ones:
            ``"radius"``, ``"accountant"``, ``"entropy"``, ``"smoothing"``, ``"reuse"`` (``FLOW_OPTION_DEFAULTS``).
        device, random_state, workspace, sampling_patience, strict, compress_dataset: synthcity's
            (``options.SynthcityOptions``); ``device="cuda"`` where torch sees no CUDA device warns and runs on the CPU.

    Every argument is checked here, where it is given (``Plugins().get``), by the group it is built into, except what
    needs the data: delta against 1/n, and the domain against the table.
    """

    generator_class: ClassVar[type[SlicedGenerator]]
    small_batches: ClassVar[bool] = False
    """Whether a given replace-one batch size is capped at half of a smaller table's n (``GeneratorSpec``)."""
    modality: ClassVar[str]
    """``"tables"`` or ``"images"``: what the plugin fits (its ``DataPath``), named in refusals of the other."""
    foreign: ClassVar[Mapping[str, str]] = {}
    """The other modality's arguments, each with the refusal's hint (the plugin to use instead)."""

    def __init__(
        self,
        epsilon: float = 3.0,
        delta: float | None = None,
        neighbouring: Adjacency | str = Adjacency.REPLACE_ONE,
        release: str | None = None,
        n_release_directions: int | None = None,
        n_bins: int | None = None,
        n_steps: int | None = None,
        n_directions: int = 70,
        step_size: float = 1.0,
        flow_batch_size: int | None = 4000,
        flow_options: Mapping[str, Any] | None = None,
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
        flow = FlowOptions.of(release, n_release_directions, n_bins, n_steps, n_directions, step_size, flow_batch_size,
                              flow_options, neighbouring=budget.neighbouring)
        synthcity = SynthcityOptions(device, random_state, workspace, sampling_patience, strict, compress_dataset)
        super().__init__(**synthcity.keywords(), **kwargs)
        if str(device).startswith("cuda") and not torch.cuda.is_available():
            warnings.warn(f"device={str(device)!r} was asked for but torch sees no CUDA device: running on the CPU.",
                          DPSWFWarning, stacklevel=2)
            self.device = torch.device("cpu")
        self.budget = budget
        self.flow_options = flow
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
        """Refuse a keyword that neither this plugin nor synthcity's ``Plugin`` takes: an argument of the other
        modality's plugins names them (``foreign``), an earlier version's says what replaced it (``MOVED``), any other
        names the closest ones it takes (synthcity's own message names neither the plugin nor an alternative)."""
        accepted = {name for klass in cls.__mro__ if "__init__" in vars(klass)
                    for name, parameter in inspect.signature(vars(klass)["__init__"]).parameters.items()
                    if parameter.kind is not inspect.Parameter.VAR_KEYWORD and name != "self"}
        for name in sorted(set(given) - accepted):
            if name in cls.foreign:
                raise TypeError(f"{cls.name()} fits {cls.modality} and has no argument {name!r}: {cls.foreign[name]}.")
            if name in MOVED:
                raise TypeError(f"{cls.name()} has no argument {name!r}: give {MOVED[name]}.")
            close = difflib.get_close_matches(name, sorted(accepted), n=3)
            hint = f"; did you mean {' or '.join(map(repr, close))}?" if close else f"; it takes {sorted(accepted)}."
            raise TypeError(f"{cls.name()} has no argument {name!r}{hint}")

    def data_path(self) -> DataPath:
        """The ``DataPath`` of the plugin's modality."""
        raise NotImplementedError

    def codec_name(self) -> str | None:
        """The registry name of the codec whose measured flow settings apply (``DataPath.flow_defaults``); ``None``:
        none (tables, or a given autoencoder)."""
        return None

    def loader_for(self, X: DataLoader, named_target: bool, release: str) -> LoaderPath:
        """What the plugin does with ``X``'s loader type (``paths.loader_path``), conditioned on nothing: the table
        plugins name a target."""
        return loader_path(X, self.name())

    def fit_inputs(self) -> FitInputs:
        """The values a data path prepares data with (the modality adds its argument group)."""
        return FitInputs(self.budget, self.random_state, self.flow_options.release)

    def generation_context(self) -> GenerationContext:
        """The values a data path generates with: the fit's schema, synthcity's info and settings, the layout."""
        return GenerationContext(self.training_schema(), self.data_info, self.sampling_patience, self.strict,
                                 self.layout_)

    def generator_arguments(self, release: str, flow_defaults: Mapping[str, int]) -> dict[str, Any]:
        """Arguments of the wrapped generator for the ``release`` kind, with the codec's measured ``flow_defaults``
        where the plugin's own are ``None`` (subclasses add theirs; the marginal release's layout is given when it
        is built: ``GeneratorSpec.build``)."""
        kind, flow = KINDS[release], self.flow_options
        return {
            "release": release, "radius": flow.radius, "n_release_directions": flow.release_directions(flow_defaults),
            "n_bins": flow.bins(flow_defaults), "accountant": flow.accountant, "neighbouring": self.neighbouring,
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
        flow_defaults = path.flow_defaults(self.codec_name(), self.generator_class.name, release)
        return GeneratorSpec(self.generator_class, self.generator_arguments(release, flow_defaults),
                             small_batches=self.small_batches)

    def fit(self, X: Any, *args: Any, **kwargs: Any) -> "SlicedFlowPlugin":
        """Fit on the plugin's kind of data (``fit_data``), with no non-private statistic of it. A fit that fails
        leaves the plugin as it was (an earlier fit stays usable)."""
        if kwargs.get("cond") is not None:
            raise ValueError(f"{self.name()} takes no cond at fit: {self.cond_hint}")
        load_accountants()
        kept = {name: getattr(self, name, None) for name in FITTED_STATE}
        try:
            self.fit_data(X)
        except BaseException:
            for name, value in kept.items():
                setattr(self, name, value)
            raise
        return self

    cond_hint: ClassVar[str] = ""
    """What ``fit(cond=...)``'s refusal tells the user to do instead."""

    def fit_data(self, X: Any) -> None:
        """Fit on ``X``, of the plugin's modality (each modality's plugin says which inputs it takes)."""
        raise NotImplementedError

    def _fit_in_memory(self, X: DataLoader, named_target: bool) -> None:
        """Fit on a loader: the generator resolved once (``generator_spec``), its data path prepares the records and
        the plan their noise is calibrated to, the generator releases them by that plan. ``named_target``: whether
        the loader's target column was named by the caller (a DataLoader given), not by wrapping a DataFrame."""
        path = self.data_path()
        check_data_kind(X, self.modality, self.name())
        spec = self.generator_spec(path)
        loader = self.loader_for(X, named_target, spec.release)
        prepared = path.prepare(self.fit_inputs(), X, loader, spec)
        self.path_ = path
        self._keep(prepared)
        assert prepared.records is not None
        budget = prepared.budget
        self.generator_ = spec.build(prepared.n_public, prepared.layout)
        self.generator_.fit(prepared.records, None, budget.release_delta, labels=prepared.labels,
                            n_classes=prepared.n_classes, noise_multiplier=prepared.noise_multiplier,
                            prior=budget.prior, plan=prepared.plan)
        self._finish(prepared, float(len(prepared.records)))

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
        return self.path_.generate(self.generation_context(), self.generator_, self.encoder_, count, schema, cond)

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

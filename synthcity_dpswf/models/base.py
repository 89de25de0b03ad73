"""``SlicedGenerator``: what the three generators (DPSWflow, DPSWflow-r, DPSWgen) share, and ``GeneratorSpec``: which
of them a fit builds.

The constructor checks the public arguments once; the generator's jobs live one to a module and reach the class as
its bases:

- releasing (``models.releasing``): ``fit(records, epsilon, delta)`` bounds the records, makes the releases (the
  subclass's schedule, the release kind of ``privacy.mechanisms``) and keeps only them and their report
  (``release_report``);
- sampling (``models.sampling``): ``sample(count)`` (or ``sample_labelled`` for records fitted with labels) is
  post-processing of the pool, at no budget, with generation-time settings that can be changed per call;
  ``sample_chunks(count, chunk_size)`` streams any number of rows in independent chunks (``models.chunks``);
- persistence (``models.persistence``): ``save`` / ``load`` of the public parameters, the pool and the report.

A ``GeneratorSpec`` is resolved once before any record is read (privacy.md, "Sampling and composition"): the class,
its constructor's arguments (the release kind among them) and so its release schedule. ``GeneratorSpec.plan`` is the
one place a fit computes its schedule's accountant and number of releases, from public numbers only; the noise is
calibrated to that plan (``privacy.budget.Budget.noise_multiplier``), the tables it decides are laid out, and the
generator ``GeneratorSpec.build`` makes is fitted with the same plan (``SlicedGenerator.fit``'s ``plan``), so what is
released is what was calibrated.
"""

from __future__ import annotations

from abc import ABC
from dataclasses import dataclass, field
from typing import Any, Mapping

import torch

from synthcity_dpswf.math import LabelledCodec
from synthcity_dpswf.math.checks import check_positive_int
from synthcity_dpswf.models.kinds import kind_spec
from synthcity_dpswf.models.persistence import Persistence
from synthcity_dpswf.models.releasing import Releasing
from synthcity_dpswf.models.sampling import Sampling
from synthcity_dpswf.models.state import FlowSettings, Labelling, ReleasePlan, ReleaseSchedule
from synthcity_dpswf.privacy import ACCOUNTANTS, MECHANISMS, Adjacency, MarginalLayout, ReleaseOptions, create_mechanism
from synthcity_dpswf.privacy.accountant import check_accountant
from synthcity_dpswf.privacy.gaussian import PriorLike
from synthcity_dpswf.privacy.mechanisms.base import Boundary


class SlicedGenerator(Releasing, Sampling, Persistence, ABC):
    """Base class of DPSWFlow, DPSWFlowR and DPSWGen.

    Args:
        release: the release kind (``privacy.MECHANISMS``): ``"projected_histogram"`` (default: noisy counts of
            the projections in fixed bins), ``"record"`` (noisy records), ``"projected"`` (the paper's) or
            ``"marginal"`` (noisy one- and two-way tables of level-coded records; needs ``marginals``).
        radius: r, records are mapped onto the ball (or sphere) of this radius before any release.
        boundary: ``"ball"`` (project records with norm > r onto the ball) or ``"sphere"`` (normalise all).
        n_release_directions: directions per release (projected kinds); ``None`` takes the generator's
            kind's default (``models.kinds.KINDS``: one-shot or per-step).
        n_bins: G, bins over [-r, r] per direction (histogram releases); the default was chosen by CAS on a
            validation split of MNIST; few records per class want fewer.
        marginals: the public tables of ``release="marginal"`` (``privacy.MarginalLayout``: levels per column,
            coarse levels, pairs); records are then level codes (``adapters.MarginalTableCodec``) and samples
            continuous level positions whose floor is the code.
        labelling: with labels passed to ``fit``: ``"conditional"`` (one release per class, for kinds that
            support it: exact labels) or ``"joint"`` (the label joined into each record by ``LabelledCodec``;
            always used by kinds without class-conditional releases).
        feature_weight: the features' weight in a joint record (``LabelledCodec``).
        accountant: ``"rdp"`` (Opacus' RDP), ``"replace_one_rdp"``, ``"replace_one_pld"`` or an extension's name,
            composes the releases; the schedule overrides it where privacy.md proves another (per-step histograms and
            marginals: ``"replace_one_pld"`` on Poisson batches, ``"replace_one_rdp"`` on fixed-size ones under
            replace-one; after a replace-one DP-SGD codec, ``"replace_one_pld"`` after its Poisson batches, one release of
            all records included, and ``"replace_one_rdp"`` after fixed-size ones); ``"gdp"`` and ``"prv"`` are refused
            (privacy.md, "Accountants").
        neighbouring: ``"replace_one"`` (default: n public; per-step batches Poisson samples for histograms and
            marginals, of a fixed size otherwise) or ``"add_remove"`` (n private, Poisson-sampled batches, Opacus'
            sampled-Gaussian RDP; only for kinds whose release is a sum of per-record contributions: privacy.md,
            "Add/remove neighbours").
        n_levels: points of the quantile grid of the flow targets.
        settings: generation-time ``FlowSettings``.
        seed: public seed of the directions and of generation (never of the release noise).
        release_seed: seed of the batches and noise of the releases; ``None`` (default) draws it from OS
            entropy and keeps it nowhere. Pass one only in tests: it makes the noise removable.
        device: where the flow runs (``"cpu"``, ``"cuda"``); releases are made and stored on CPU.
        progress: show progress bars.
    """

    def __init__(
        self,
        *,
        release: str = "projected_histogram",
        radius: float = 1.0,
        boundary: Boundary = "ball",
        n_release_directions: int | None = None,
        n_bins: int = 16,
        marginals: MarginalLayout | None = None,
        labelling: Labelling = "conditional",
        feature_weight: float = 0.7,
        accountant: str = "rdp",
        neighbouring: Adjacency | str = Adjacency.REPLACE_ONE,
        n_levels: int = 1000,
        settings: FlowSettings | None = None,
        seed: int = 0,
        release_seed: int | None = None,
        device: str | torch.device = "cpu",
        progress: bool = False,
    ) -> None:
        if release not in MECHANISMS:
            raise ValueError(f"release must be one of {sorted(MECHANISMS)}, got {release!r}.")
        if boundary not in ("ball", "sphere"):
            raise ValueError(f"boundary must be 'ball' or 'sphere', got {boundary!r}.")
        if n_release_directions is not None:
            check_positive_int("n_release_directions", n_release_directions)
        if labelling not in ("conditional", "joint"):
            raise ValueError(f"labelling must be 'conditional' or 'joint', got {labelling!r}.")
        check_accountant(accountant)
        if isinstance(n_levels, bool) or not isinstance(n_levels, int) or n_levels < 2:
            raise ValueError(f"n_levels must be an integer >= 2, got {n_levels!r}.")
        if MECHANISMS[release].takes_level_codes != (marginals is not None):
            raise ValueError(f"release={release!r}: a kind on level codes needs marginals=MarginalLayout(...) (the public "
                             "tables), and only such a kind takes them.")
        spec = kind_spec(release)
        directions = n_release_directions or (spec.per_step_directions if self.per_step else spec.one_shot_directions)
        self.mechanism = create_mechanism(release, ReleaseOptions(float(radius), directions, n_bins, marginals))
        neighbouring = self.mechanism.check_neighbouring(neighbouring)
        if not neighbouring.n_is_public and not ACCOUNTANTS[accountant].poisson_proven:
            raise ValueError(f"accountant {accountant!r} is not proven for add/remove with Poisson sampling; use 'rdp'.")
        self.codec = LabelledCodec(2, feature_weight)  # validates feature_weight; rebuilt for the class count at fit
        self.release = release
        self.radius = float(radius)
        self.boundary = boundary
        self.n_release_directions = n_release_directions
        self.n_bins = n_bins
        self.marginals = marginals
        self.labelling = labelling
        self.feature_weight = feature_weight
        self.accountant = accountant
        self.neighbouring = neighbouring
        self.n_levels = n_levels
        self.settings = settings if settings is not None else FlowSettings()
        self.seed = seed
        self.release_seed = release_seed
        self.device = torch.device(device)
        self.progress = progress
        self.pool_ = None
        self.report_ = None
        self.labels_ = None
        self.n_classes_ = None

    def __repr__(self) -> str:
        fitted = "fitted" if self.pool_ is not None else "not fitted"
        return f"{type(self).__name__}({fitted}, release={self.release!r}, settings={self.settings})"


@dataclass(frozen=True)
class GeneratorSpec:
    """A generator class and its constructor's ``arguments`` (all but the marginal release's ``marginals``, laid out
    after the noise is known: ``build``). ``small_batches``: a fixed batch size given for replace-one per-step releases
    is capped at half of a smaller table's public n (the plugins' rule: a batch of every record would be one release
    of all of them, repeated)."""

    generator_class: type[SlicedGenerator]
    arguments: Mapping[str, Any] = field(default_factory=dict)
    small_batches: bool = False

    @property
    def name(self) -> str:
        """The generator's name (``"dpswflow"``, ``"dpswflow_r"``, ``"dpswgen"``)."""
        return self.generator_class.name

    @property
    def release(self) -> str:
        """The release kind (``privacy.MECHANISMS``)."""
        return str(self.arguments["release"])

    @property
    def neighbouring(self) -> Adjacency:
        """The adjacency the releases are calibrated for."""
        return Adjacency.of(self.arguments.get("neighbouring", Adjacency.REPLACE_ONE))

    def arguments_for(self, n_public: int | None) -> dict[str, Any]:
        """The constructor's arguments for data of ``n_public`` records (``None``: n private, never read)."""
        arguments = dict(self.arguments)
        batch_size = arguments.get("batch_size")
        if self.small_batches and batch_size is not None and self.neighbouring.n_is_public and n_public is not None:
            arguments["batch_size"] = min(batch_size, max(1, n_public // 2))
        return arguments

    def schedule(self, n_public: int | None) -> ReleaseSchedule:
        """The releases' schedule for ``n_public`` records (``SlicedGenerator.schedule_of``)."""
        return self.generator_class.schedule_of(self.arguments_for(n_public))

    def plan(self, n_public: int | None, prior: PriorLike = None) -> ReleasePlan:
        """The accountant of the releases and their number for ``n_public`` records (``None`` under add/remove), with
        ``prior`` spent before them (``ReleaseSchedule.accountant``): computed once per fit, here (a table's before its
        budget is spent, its prior added where the noise is calibrated: ``privacy.budget.Budget.release_terms``)."""
        return self.schedule(n_public).accountant(n_public, self.neighbouring, self.arguments["accountant"],
                                                  self.release, prior)

    def build(self, n_public: int | None, layout: MarginalLayout | None = None) -> SlicedGenerator:
        """The generator for ``n_public`` records, with the marginal release's ``layout`` where it has one."""
        return self.generator_class(**self.arguments_for(n_public), marginals=layout)

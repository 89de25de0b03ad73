"""``SlicedGenerator``: what the three generators (DPSWflow, DPSWflow-r, DPSWgen) share.

The constructor checks the public arguments once; the generator's jobs live one to a module and reach the class as
its bases:

- releasing (``models.releasing``): ``fit(records, epsilon, delta)`` bounds the records, makes the releases (the
  subclass's schedule, the release kind of ``privacy.mechanisms``) and keeps only them and their report
  (``release_report``);
- sampling (``models.sampling``): ``sample(count)`` (or ``sample_labelled`` for records fitted with labels) is
  post-processing of the pool, at no budget, with generation-time settings that can be changed per call;
  ``sample_chunks(count, chunk_size)`` streams any number of rows in independent chunks (``models.chunks``);
- persistence (``models.persistence``): ``save`` / ``load`` of the public parameters, the pool and the report.
"""

from __future__ import annotations

from abc import ABC

import torch

from synthcity_dpswf.math import LabelledCodec
from synthcity_dpswf.math.checks import check_positive_int
from synthcity_dpswf.models.kinds import kind_spec
from synthcity_dpswf.models.persistence import Persistence
from synthcity_dpswf.models.releasing import Releasing
from synthcity_dpswf.models.sampling import Sampling
from synthcity_dpswf.models.settings import FlowSettings
from synthcity_dpswf.models.state import Labelling
from synthcity_dpswf.privacy import ACCOUNTANTS, MECHANISMS, Adjacency, MarginalLayout, ReleaseOptions, create_mechanism
from synthcity_dpswf.privacy.accountant import check_accountant
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
        n_bins: G, bins over [-r, r] per direction (histogram releases); the default was chosen on a validation
            split of MNIST (docs/flows.md); few records per class want fewer.
        marginals: the public tables of ``release="marginal"`` (``privacy.MarginalLayout``: levels per column,
            coarse levels, pairs); records are then level codes (``adapters.MarginalTableCodec``) and samples
            continuous level positions whose floor is the code.
        labelling: with labels passed to ``fit``: ``"conditional"`` (one release per class, for kinds that
            support it: exact labels) or ``"joint"`` (the label joined into each record by ``LabelledCodec``;
            always used by kinds without class-conditional releases).
        feature_weight: the features' weight in a joint record (``LabelledCodec``).
        accountant: ``"rdp"`` (Opacus' RDP), ``"replace_one_rdp"`` or an extension's name, composes the releases;
            ``"gdp"`` and ``"prv"`` are refused (privacy.md, "Accountants").
        neighbouring: ``"replace_one"`` (default: n public, batches of a fixed size) or ``"add_remove"`` (n private,
            Poisson-sampled batches, Opacus' sampled-Gaussian RDP; only for kinds whose release is a sum of per-record
            contributions: privacy.md, "Add/remove neighbours").
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


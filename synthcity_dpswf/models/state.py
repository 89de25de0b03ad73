"""What a sliced generator holds: its public parameters and, once fitted, its pool of releases and their report.

``SlicedGenerator`` (``models.base``) sets these in its constructor; its three jobs read them, each in its module:
releasing (``models.releasing``), sampling (``models.sampling``) and persistence (``models.persistence``). Nothing
here is derived from private records but the pool and the report, which hold only releases (privacy.md, "What a
fitted model stores").
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar, Literal

import torch

from synthcity_dpswf.math import LabelledCodec
from synthcity_dpswf.models.pool import ReleasePool
from synthcity_dpswf.models.settings import FlowSettings
from synthcity_dpswf.privacy import Adjacency, MarginalLayout, PrivacyReport, ReleaseMechanism
from synthcity_dpswf.privacy.mechanisms.base import Boundary

Labelling = Literal["conditional", "joint"]
"""How labels passed to ``fit`` are released: one release per class, or joined into each record."""


class GeneratorState:
    """The attributes every job of a sliced generator reads (``SlicedGenerator``'s arguments document them), and the
    accessors of its fitted state."""

    name: ClassVar[str]
    per_step: ClassVar[bool] = False
    """Whether the generator makes per-step releases (then the kind's ``per_step_directions`` default applies,
    else its ``one_shot_directions``: ``models.kinds.KindSpec``)."""
    conditions_on_target: ClassVar[bool] = True
    """Whether generation can flow one group per class of a named target (``MarginalLayout.condition``)."""

    mechanism: ReleaseMechanism
    codec: LabelledCodec
    release: str
    radius: float
    boundary: Boundary
    n_release_directions: int | None
    n_bins: int
    marginals: MarginalLayout | None
    labelling: Labelling
    feature_weight: float
    accountant: str
    neighbouring: Adjacency
    n_levels: int
    settings: FlowSettings
    seed: int
    release_seed: int | None
    device: torch.device
    progress: bool
    pool_: ReleasePool | None
    """The releases, once fitted (all that ``fit`` keeps)."""
    report_: PrivacyReport | None
    """Their privacy report, once fitted."""
    labels_: Labelling | None
    """How the labels were released (``None``: fitted without labels)."""
    n_classes_: int | None
    """The public class count of a fit with labels."""

    @property
    def privacy_report(self) -> PrivacyReport:
        """The privacy report of the fitted model."""
        if self.report_ is None:
            raise RuntimeError(f"{type(self).__name__} is not fitted; call fit(records, epsilon, delta) first.")
        return self.report_

    def _pool(self) -> ReleasePool:
        if self.pool_ is None:
            raise RuntimeError(f"{type(self).__name__} is not fitted; call fit(records, epsilon, delta) first.")
        return self.pool_

    @property
    def dim(self) -> int:
        """d, the dimension of the records the flow generates (with a joint label: features and label block)."""
        return self._pool().dim

    def get_parameters(self) -> dict[str, Any]:
        """The constructor arguments (public), for saving and for ``repr``."""
        return {
            "release": self.release, "radius": self.radius, "boundary": self.boundary,
            "n_release_directions": self.n_release_directions, "n_bins": self.n_bins, "marginals": self.marginals,
            "labelling": self.labelling,
            "feature_weight": self.feature_weight, "accountant": self.accountant, "neighbouring": self.neighbouring,
            "n_levels": self.n_levels,
            "settings": dataclasses.asdict(self.settings), "seed": self.seed, "device": str(self.device),
            "progress": self.progress,
        }

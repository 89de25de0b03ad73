"""What a sliced generator holds: its public parameters and, once fitted, its pool of releases and their report.

``SlicedGenerator`` (``models.base``) sets these in its constructor (``GeneratorState``); its three jobs read them,
each in its module: releasing (``models.releasing``), sampling (``models.sampling``) and persistence
(``models.persistence``). The pool (``ReleasePool``) holds only released (noisy) payloads, their public directions
and noise levels, and the public parameters of their kind: everything built from it is post-processing and costs no
budget. Nothing here is derived from private records but the pool and the report, which hold only releases
(privacy.md, "What a fitted model stores").
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

import torch

from synthcity_dpswf.math import LabelledCodec
from synthcity_dpswf.models.settings import FlowSettings
from synthcity_dpswf.privacy import (
    MECHANISMS,
    Adjacency,
    MarginalLayout,
    PrivacyReport,
    ReleaseMechanism,
    ReleaseOptions,
)
from synthcity_dpswf.privacy.mechanisms.base import Boundary


@dataclass
class ReleasePool:
    """K releases of one kind.

    Attributes:
        kind: the release kind's name (``privacy.MECHANISMS``).
        options: its public parameters (radius, directions per release, bins).
        releases: the released payloads, stacked: ``(K, b, d)`` noisy records, ``(K, b, L)`` noisy projections,
            or ``(K, C, L, G)`` noisy counts.
        noise_std: the noise standard deviation s of each release, ``(K,)``.
        directions: the public directions of each release, ``(K, d, L)`` (``None`` for record releases).
        dim: d, the dimension of the records.
        n_classes: C for class-conditional releases (``None`` otherwise).
        one_way: for marginal releases, another release's measurements of some columns' one-way tables (a DP
            domain's: ``SlicedGenerator.add_one_way``): ``{column: (noisy counts (K_j,), their noise stds (K_j,),
            the records they count)}``, combined with the pool's own tables by ``models.marginal_target``.
        selection: for marginal releases, a paid pair selection's measurement of the same tables (``(noisy counts
            (cells,), their noise std, the records they count)``: ``SlicedGenerator.add_selection``), combined likewise.
        cache: post-processing computed once from the releases: the marginal estimates and the quantile grids of
            their slices (``models.marginal_target``). Left out of ``state_dict`` (``SlicedGenerator.save``), but pickled
            with the model by a plugin's ``save()`` (synthcity serialises the whole plugin): it holds only
            functions of the releases, public like them, no private record.
    """

    kind: str
    options: ReleaseOptions
    releases: torch.Tensor
    noise_std: torch.Tensor
    directions: torch.Tensor | None
    dim: int
    n_classes: int | None = None
    one_way: dict[int, tuple[torch.Tensor, torch.Tensor, float]] = field(default_factory=dict)
    selection: tuple[torch.Tensor, float, float] | None = None
    cache: dict[Any, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def n_releases(self) -> int:
        return self.releases.shape[0]

    def describe(self) -> str:
        """The stored size, for the privacy report."""
        n_bytes = self.releases.numel() * self.releases.element_size()
        if self.directions is not None:
            n_bytes += self.directions.numel() * self.directions.element_size()
        shape = " x ".join(str(size) for size in self.releases.shape[1:])
        return f"{self.n_releases} release(s) of {shape} {MECHANISMS[self.kind].stored_as}, {n_bytes / 2**20:.2f} MiB"

    def state_dict(self) -> dict[str, object]:
        return {
            "kind": self.kind, "options": dataclasses.asdict(self.options), "releases": self.releases,
            "noise_std": self.noise_std, "directions": self.directions, "dim": self.dim, "n_classes": self.n_classes,
            "one_way": self.one_way, "selection": self.selection,
        }

    @classmethod
    def from_state_dict(cls, state: dict[str, object]) -> "ReleasePool":
        return cls(
            kind=state["kind"],  # type: ignore[arg-type]
            options=ReleaseOptions.from_dict(state["options"]),  # type: ignore[arg-type]
            releases=state["releases"],  # type: ignore[arg-type]
            noise_std=state["noise_std"],  # type: ignore[arg-type]
            directions=state.get("directions"),  # type: ignore[arg-type]
            dim=int(state["dim"]),  # type: ignore[arg-type]
            n_classes=state.get("n_classes"),  # type: ignore[arg-type]
            one_way=dict(state.get("one_way") or {}),  # type: ignore[call-overload]
            selection=state.get("selection"),  # type: ignore[arg-type]
        )


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

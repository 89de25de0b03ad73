"""The pool of releases a fitted generator keeps.

A pool holds only released (noisy) payloads, their public directions and noise levels, and the public
parameters of their kind: everything built from it is post-processing and costs no budget (privacy.md,
"What a fitted model stores").
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

import torch

from synthcity_dpswf.privacy import MECHANISMS, ReleaseOptions


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

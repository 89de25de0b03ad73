"""The pool of releases a fitted generator keeps, and the flow targets read from it.

A pool holds only released (noisy) matrices, the public directions of projected releases, and the public
noise levels: everything built from it is post-processing and costs no budget (privacy.md, "What a fitted
model stores").
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import torch

from synthcity_dpswf.math import TargetSlice, quantile_levels, smoothed_quantiles
from synthcity_dpswf.math.checks import check_non_negative, check_positive_int

ReleaseKind = Literal["record", "projected"]
Reuse = Literal["pooled", "once"]


@dataclass
class ReleasePool:
    """K releases of b rows each.

    Attributes:
        kind: ``"record"`` (rows are noisy records, ``(K, b, d)``) or ``"projected"`` (rows are noisy
            projections, ``(K, b, L)``, with their directions ``(K, d, L)``).
        releases: the released matrices, stacked.
        noise_std: the noise standard deviation s of each release, ``(K,)``.
        directions: the directions of projected releases (``None`` for record releases).
    """

    kind: ReleaseKind
    releases: torch.Tensor
    noise_std: torch.Tensor
    directions: torch.Tensor | None = None

    @property
    def n_releases(self) -> int:
        return self.releases.shape[0]

    @property
    def dim(self) -> int:
        """Dimension d of the records."""
        return self.releases.shape[2] if self.directions is None else self.directions.shape[1]

    def describe(self) -> str:
        """The stored size, for the privacy report."""
        k, b, width = self.releases.shape
        n_bytes = self.releases.numel() * self.releases.element_size()
        if self.directions is not None:
            n_bytes += self.directions.numel() * self.directions.element_size()
        what = "noisy records" if self.kind == "record" else "noisy projections (with their directions)"
        return f"{k} release(s) of {b} x {width} {what}, {n_bytes / 2**20:.2f} MiB"

    def state_dict(self) -> dict[str, object]:
        state: dict[str, object] = {"kind": self.kind, "releases": self.releases, "noise_std": self.noise_std}
        if self.directions is not None:
            state["directions"] = self.directions
        return state

    @classmethod
    def from_state_dict(cls, state: dict[str, object]) -> "ReleasePool":
        return cls(
            kind=state["kind"],  # type: ignore[arg-type]
            releases=state["releases"],  # type: ignore[arg-type]
            noise_std=state["noise_std"],  # type: ignore[arg-type]
            directions=state.get("directions"),  # type: ignore[arg-type]
        )


class ProjectedReleaseTarget:
    r"""Flow target over projected releases :math:`R_k = Y_{B_k} \Theta_k + Z_k`.

    Step k uses one release (in order with ``order="sequential"``, the paper's way; uniformly at random with
    ``"random"``), a random subset of ``n_directions`` of its columns (the paper's :math:`M_\theta` among
    :math:`N_\theta`, redrawn every step), optionally a batch of its rows, and tops its noise up to
    ``smoothing`` (``None``: each release's own noise).
    """

    def __init__(
        self,
        pool: ReleasePool,
        n_directions: int | None = None,
        smoothing: float | None = None,
        n_levels: int = 1000,
        batch_size: int | None = None,
        order: Literal["random", "sequential"] = "random",
        seed: int = 0,
        device: torch.device | str = "cpu",
    ) -> None:
        if pool.kind != "projected" or pool.directions is None:
            raise ValueError("ProjectedReleaseTarget needs a pool of projected releases.")
        available = pool.directions.shape[2]
        self.n_directions = available if n_directions is None else n_directions
        check_positive_int("n_directions", self.n_directions)
        if self.n_directions > available:
            raise ValueError(f"n_directions={self.n_directions} exceeds the {available} released directions; lower it.")
        largest = float(pool.noise_std.max())
        if smoothing is not None:
            check_non_negative("smoothing", smoothing)
            if smoothing < largest:
                raise ValueError(
                    f"smoothing={smoothing:.6g} is below the release noise ({largest:.6g}); raise it or pass None."
                )
        if batch_size is not None:
            check_positive_int("batch_size", batch_size)
        if order not in ("random", "sequential"):
            raise ValueError(f"order must be 'random' or 'sequential', got {order!r}.")
        self.pool = pool
        self.smoothing = smoothing
        self.batch_size = batch_size
        self.order = order
        self.device = torch.device(device)
        self.levels = quantile_levels(n_levels, pool.releases.dtype, self.device)
        self._generator = torch.Generator().manual_seed(seed)

    @property
    def dim(self) -> int:
        return self.pool.dim

    def target_slice(self, step: int) -> TargetSlice:
        assert self.pool.directions is not None
        k = step % self.pool.n_releases
        if self.order == "random":
            k = int(torch.randint(self.pool.n_releases, (1,), generator=self._generator))
        columns = torch.randperm(self.pool.directions.shape[2], generator=self._generator)[: self.n_directions]
        rows = self.pool.releases[k][:, columns]
        if self.batch_size is not None and self.batch_size < rows.shape[0]:
            rows = rows[torch.randperm(rows.shape[0], generator=self._generator)[: self.batch_size]]
        release_noise = float(self.pool.noise_std[k])
        total = release_noise if self.smoothing is None else self.smoothing
        added = math.sqrt(max(total**2 - release_noise**2, 0.0))
        # The released projections are (b, M): quantiles of each column, i.e. "samples" with identity directions.
        identity = torch.eye(self.n_directions, dtype=rows.dtype)
        quantiles = smoothed_quantiles(rows, identity, added, self.levels.cpu(), self._generator)
        directions = self.pool.directions[k][:, columns]
        return TargetSlice(directions.to(self.device), quantiles.to(self.device), total)

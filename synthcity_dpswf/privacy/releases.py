r"""Releases: the only place where private records are touched (privacy.md).

A release turns a batch of b bounded records into a noisy matrix:

- noisy-record release (default): :math:`R = Y_B + Z`, :math:`Z_{ij} \sim \mathcal{N}(0, s^2)`, shape ``(b, d)``;
- projected release (the paper's): :math:`R = Y_B \Theta + Z`, shape ``(b, L)``.

with :math:`s = z \Delta` (``sensitivity``). Batches are uniformly random subsets of exactly b indices, drawn
independently at every step (``sample_batch``): the sampling that the subsampled-Gaussian accountant assumes.

The batch indices and the noise must stay secret (an adversary who could regenerate the noise would
subtract it; one who knew the batches would defeat the amplification by subsampling), so they are drawn
from ``secret_generator``: seeded from the operating system's entropy, never stored, unless a caller asks
for a reproducible seed in a test.
"""

from __future__ import annotations

import secrets
import warnings
from typing import Literal

import torch

from synthcity_dpswf.math.checks import check_matrix, check_non_negative, check_positive, check_positive_int

Boundary = Literal["ball", "sphere"]


def secret_generator(seed: int | None = None) -> torch.Generator:
    """A CPU generator for batch indices and release noise, seeded from OS entropy (``secrets``).

    Passing ``seed`` makes the releases reproducible, and removable by anyone who knows the seed: it warns,
    and is meant for tests and audits only.
    """
    if seed is None:
        return torch.Generator().manual_seed(secrets.randbits(63))
    warnings.warn(
        "release noise seeded with a known seed: anyone who knows it can remove the noise; use only for tests.",
        stacklevel=2,
    )
    return torch.Generator().manual_seed(seed)


def bound_records(records: torch.Tensor, radius: float = 1.0, boundary: Boundary = "ball") -> torch.Tensor:
    r"""Map each record onto the ball (``boundary="ball"``: :math:`y \mapsto y \min(1, r / \|y\|)`) or the sphere
    (``"sphere"``: :math:`y \mapsto r\, y / \|y\|`, for normalised latents) of radius r.

    The map acts on each record alone, so it needs no budget; how many records it changed is not reported.
    A zero record has no direction: on the sphere it is rejected.
    """
    check_matrix("records", records)
    check_positive("radius", radius)
    norms = records.norm(dim=1, keepdim=True)
    if boundary == "ball":
        return records * (radius / norms.clamp(min=radius))
    if boundary == "sphere":
        if bool((norms == 0).any()):
            raise ValueError("a record is the zero vector and has no direction on the sphere; use boundary='ball'.")
        return records * (radius / norms)
    raise ValueError(f"boundary must be 'ball' or 'sphere', got {boundary!r}.")


def sample_batch(n_records: int, batch_size: int, generator: torch.Generator) -> torch.Tensor:
    """A uniformly random subset of exactly ``batch_size`` of the ``n_records`` indices (without replacement)."""
    check_positive_int("n_records", n_records)
    check_positive_int("batch_size", batch_size)
    if batch_size > n_records:
        raise ValueError(f"batch_size={batch_size} exceeds the {n_records} records; lower it.")
    return torch.randperm(n_records, generator=generator)[:batch_size]


def _gaussian(shape: tuple[int, ...], noise_std: float, generator: torch.Generator, like: torch.Tensor) -> torch.Tensor:
    check_non_negative("noise_std", noise_std)
    noise = torch.randn(shape, generator=generator, dtype=torch.float64) * noise_std
    return noise.to(dtype=like.dtype, device=like.device)


def record_release(batch: torch.Tensor, noise_std: float, generator: torch.Generator) -> torch.Tensor:
    r"""Noisy-record release :math:`R = Y_B + Z`, :math:`Z \sim \mathcal{N}(0, s^2 I)` (``batch`` already bounded)."""
    return batch + _gaussian(tuple(batch.shape), noise_std, generator, batch)


def projected_release(batch: torch.Tensor, directions: torch.Tensor, noise_std: float, generator: torch.Generator) -> torch.Tensor:
    r"""Projected release :math:`R = Y_B \Theta + Z`, shape ``(b, L)``, ``directions`` drawn independently of the data."""
    projections = batch @ directions.to(batch)
    return projections + _gaussian(tuple(projections.shape), noise_std, generator, projections)

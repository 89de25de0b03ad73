r"""Releases: the only place where private records are touched (privacy.md).

A release turns a batch of b bounded records into a noisy statistic (the kinds are in ``mechanisms``:
noisy records, the paper's noisy projections, noisy histograms of projections), with Gaussian noise of
standard deviation :math:`s = z \Delta` from ``gaussian_noise``. Batches are drawn independently at every step: under
replace-one, uniformly random subsets of exactly b indices (``sample_batch``); under add/remove, Poisson samples of
rate q (``poisson_batch``): the sampling that each adjacency's subsampled-Gaussian accountant assumes.

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
from synthcity_dpswf.notices import DPSWFWarning

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
        DPSWFWarning,
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
    wide = records.to(torch.float64)  # float32 norms lose precision for tiny or huge entries
    norms = wide.norm(dim=1, keepdim=True)
    if boundary == "ball":
        bounded = wide * (radius / norms.clamp(min=radius))
    elif boundary == "sphere":
        if bool((norms == 0).any()):
            raise ValueError("a record is the zero vector and has no direction on the sphere; use boundary='ball'.")
        bounded = wide * (radius / norms)
    else:
        raise ValueError(f"boundary must be 'ball' or 'sphere', got {boundary!r}.")
    # Rounding back to the input dtype may leave a norm a hair above r: scale those rows in once more.
    bounded = bounded.to(records.dtype)
    final = bounded.to(torch.float64).norm(dim=1, keepdim=True)
    return torch.where(final > radius, bounded * (radius / final).to(records.dtype) * (1 - 1e-6), bounded)


def sample_batch(n_records: int, batch_size: int, generator: torch.Generator) -> torch.Tensor:
    """A uniformly random subset of exactly ``batch_size`` of the ``n_records`` indices (without replacement)."""
    check_positive_int("n_records", n_records)
    check_positive_int("batch_size", batch_size)
    if batch_size > n_records:
        raise ValueError(f"batch_size={batch_size} exceeds the {n_records} records; lower it.")
    return torch.randperm(n_records, generator=generator)[:batch_size]


def poisson_batch(n_records: int, sample_rate: float, generator: torch.Generator) -> torch.Tensor:
    """Poisson sampling: every one of the ``n_records`` indices independently with probability q = ``sample_rate``
    (the sampling of add/remove per-step releases, privacy.md, "Add/remove neighbours"); the batch's size varies and
    is never released."""
    check_positive_int("n_records", n_records)
    if not 0 < sample_rate <= 1:
        raise ValueError(f"sample_rate must lie in (0, 1], got {sample_rate!r}.")
    return torch.nonzero(torch.rand(n_records, generator=generator, dtype=torch.float64) < sample_rate).reshape(-1)


def gaussian_noise(shape: tuple[int, ...], noise_std: float, generator: torch.Generator, like: torch.Tensor) -> torch.Tensor:
    r"""i.i.d. :math:`\mathcal{N}(0, s^2)` of ``shape``, drawn in float64 on CPU from the secret ``generator`` and
    returned with ``like``'s dtype and device: the one source of release noise (records, projections, counts)."""
    check_non_negative("noise_std", noise_std)
    noise = torch.randn(shape, generator=generator, dtype=torch.float64) * noise_std
    return noise.to(dtype=like.dtype, device=like.device)

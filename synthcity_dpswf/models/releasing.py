"""Release schedules: the per-step releases of DPSWflow-r and DPSWgen, and the one release of DPSWflow
(``batch_size = n``, one step: all records, in a random order).

These functions are the models layer's only contact with private records: each turns bounded records
into a ``ReleasePool`` through ``synthcity_dpswf.privacy.releases`` and returns nothing else derived from them.
"""

from __future__ import annotations

import torch

from synthcity_dpswf.math import random_directions
from synthcity_dpswf.models.pool import ReleaseKind, ReleasePool
from synthcity_dpswf.privacy import (
    projected_release,
    projected_sensitivity,
    record_release,
    record_sensitivity,
    sample_batch,
)


def release_batches(
    records: torch.Tensor,
    *,
    kind: ReleaseKind,
    batch_size: int,
    steps: int,
    noise_multiplier: float,
    radius: float,
    n_directions: int,
    directions_generator: torch.Generator,
    secret: torch.Generator,
) -> ReleasePool:
    r"""``steps`` releases, each of a uniformly random batch of exactly ``batch_size`` records drawn
    independently of the other steps (``sample_batch``), with noise :math:`s_k = z \Delta_k`.

    Record releases have :math:`\Delta = 2r`; projected releases draw fresh public directions
    :math:`\Theta_k` from ``directions_generator`` and have :math:`\Delta_k = 2r \|\Theta_k\|_2`, so that every
    step is a Gaussian mechanism with the same multiplier z. Batches and noise come from ``secret``.
    """
    n, dim = records.shape
    releases, noise_std, directions = [], [], []
    for _ in range(steps):
        batch = records[sample_batch(n, batch_size, secret)]
        if kind == "record":
            noise = noise_multiplier * record_sensitivity(radius)
            releases.append(record_release(batch, noise, secret))
        else:
            theta = random_directions(dim, n_directions, directions_generator, dtype=records.dtype)
            noise = noise_multiplier * projected_sensitivity(theta, radius)
            releases.append(projected_release(batch, theta, noise, secret))
            directions.append(theta)
        noise_std.append(noise)
    return ReleasePool(
        kind=kind,
        releases=torch.stack(releases),
        noise_std=torch.tensor(noise_std, dtype=torch.float64),
        directions=torch.stack(directions) if directions else None,
    )


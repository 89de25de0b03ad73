"""Release schedules: the per-step releases of DPSWflow-r and DPSWgen, and the one release of DPSWflow
(``batch_size = n``, one step: all records).

These functions are the models layer's only contact with private records: ``release_batches`` turns bounded
records into a ``ReleasePool`` through a release kind of ``synthcity_dpswf.privacy.mechanisms``, ``release_total``
the exact statistic of all records summed elsewhere (a partitioned table's partitions: privacy.md, "Tables on
Dask"), and they return nothing else derived from them.
"""

from __future__ import annotations

import torch

from synthcity_dpswf.models.pool import ReleasePool
from synthcity_dpswf.privacy import Adjacency, ReleaseMechanism, poisson_batch, sample_batch


def release_batches(
    records: torch.Tensor,
    *,
    mechanism: ReleaseMechanism,
    steps: int,
    noise_multiplier: float,
    directions_generator: torch.Generator,
    secret: torch.Generator,
    batch_size: int | None = None,
    sample_rate: float | None = None,
    labels: torch.Tensor | None = None,
    n_classes: int = 1,
    neighbouring: Adjacency | str = Adjacency.REPLACE_ONE,
) -> ReleasePool:
    r"""``steps`` releases, each of a batch drawn independently of the other steps: a uniformly random subset of
    exactly ``batch_size`` records (``sample_batch``, replace-one) or a Poisson sample of rate ``sample_rate``
    (``poisson_batch``, add/remove), with fresh public directions :math:`\Theta_k` from ``directions_generator`` for
    kinds that project, and noise :math:`s_k = z \Delta_k` (the sensitivity under ``neighbouring``), so that every
    step is a Gaussian mechanism with the same multiplier z. Batches and noise come from ``secret``. ``labels``
    (class-conditional kinds) are the private class of every record, in the public range ``0..n_classes-1``.
    """
    if (batch_size is None) == (sample_rate is None):
        raise ValueError("give exactly one of batch_size (fixed-size batches) and sample_rate (Poisson sampling).")
    n, dim = records.shape
    payloads, noise_std, directions = [], [], []
    for _ in range(steps):
        index = sample_batch(n, batch_size, secret) if batch_size is not None else poisson_batch(n, sample_rate, secret)  # type: ignore[arg-type]
        theta = mechanism.draw_directions(dim, directions_generator, records.dtype)
        release = mechanism.release(
            records[index], theta, noise_multiplier, secret, None if labels is None else labels[index], n_classes,
            neighbouring,
        )
        payloads.append(release.values)
        noise_std.append(release.noise_std)
        if theta is not None:
            directions.append(theta)
    return ReleasePool(
        kind=mechanism.name,
        options=mechanism.options,
        releases=torch.stack(payloads),
        noise_std=torch.tensor(noise_std, dtype=torch.float64),
        directions=torch.stack(directions) if directions else None,
        dim=dim,
        n_classes=n_classes if labels is not None else None,
    )


def release_total(
    statistic: torch.Tensor,
    *,
    mechanism: ReleaseMechanism,
    noise_multiplier: float,
    secret: torch.Generator,
    dim: int,
    neighbouring: Adjacency | str = Adjacency.REPLACE_ONE,
) -> ReleasePool:
    """One release of all records (q = 1, one step) from their exact ``statistic``, summed outside this process
    (partition by partition), with the noise of ``mechanism.noised`` added once, here: the pool ``release_batches``
    makes of the same records at ``batch_size = n``, one step, for a kind whose statistic is a sum of per-record
    contributions and that draws no directions."""
    if not mechanism.sums_contributions or mechanism.uses_directions:
        raise ValueError(f"a summed statistic is released only by kinds that sum per-record contributions and draw no "
                         f"directions ('marginal'); got {mechanism.name!r}.")
    release = mechanism.noised(statistic.to(torch.float64), None, noise_multiplier, secret, neighbouring)
    return ReleasePool(
        kind=mechanism.name, options=mechanism.options, releases=release.values.unsqueeze(0),
        noise_std=torch.tensor([release.noise_std], dtype=torch.float64), directions=None, dim=dim, n_classes=None,
    )

"""DPSWflow (the paper's Algorithm 2): one private release of all records; every flow step is post-processing."""

from __future__ import annotations

import math
from typing import Any

import torch

from synthcity_dpswf.models.base import SlicedGenerator
from synthcity_dpswf.models.pool import ReleasePool
from synthcity_dpswf.models.releasing import release_batches
from synthcity_dpswf.privacy import PrivacyReport, ReleaseAccountant


class DPSWFlow(SlicedGenerator):
    """DPSWflow: a single Gaussian release of all n records (q = 1, K = 1), accounted by the exact analytic
    Gaussian mechanism (or RDP, whichever is tighter), then any number of flow steps over it.

    Record release (default): each flow step projects a batch of the released noisy records on fresh
    directions. Projected release (``release="projected"``, the paper's): the release is
    :math:`Y\\Theta + Z` for ``n_release_directions`` (N_theta) directions and each step subsamples
    ``settings.n_directions`` (M_theta) of them.

    Args:
        **kwargs: the ``SlicedGenerator`` arguments (release, radius, settings, seed, ...).
    """

    name = "dpswflow"

    def _release(
        self,
        records: torch.Tensor,
        epsilon: float,
        delta: float,
        directions_generator: torch.Generator,
        secret: torch.Generator,
    ) -> tuple[ReleasePool, PrivacyReport]:
        n = records.shape[0]
        accountant = ReleaseAccountant(n, n, self.accountant)
        noise_multiplier = 0.0 if math.isinf(epsilon) else accountant.calibrate(epsilon, delta, 1)
        pool = release_batches(
            records, kind=self.release, batch_size=n, steps=1, noise_multiplier=noise_multiplier,
            radius=self.radius, n_directions=self.n_release_directions,
            directions_generator=directions_generator, secret=secret,
        )
        sampling = f"none: one release of all n = {n} records (q = 1, one step)"
        return pool, self._report(pool, epsilon, delta, accountant, noise_multiplier, 1, sampling)

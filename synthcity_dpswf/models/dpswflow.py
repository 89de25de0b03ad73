"""DPSWflow (the paper's Algorithm 2): one private release of all records; every flow step is post-processing."""

from __future__ import annotations

from synthcity_dpswf.models.base import SlicedGenerator


class DPSWFlow(SlicedGenerator):
    """DPSWflow: a single Gaussian release of all n records (q = 1, K = 1), accounted by the exact analytic
    Gaussian mechanism (or RDP, whichever is tighter; after a DP-SGD codec's sampled schedule, composed with it by its
    accountant: privacy.md, "A private image codec trained by DP-SGD"), then any number of flow steps over it.

    Record release (default): each flow step projects a batch of the released noisy records on fresh
    directions. Projected release (``release="projected"``, the paper's): the release is
    :math:`Y\\Theta + Z` for ``n_release_directions`` (N_theta) directions and each step subsamples
    ``settings.n_directions`` (M_theta) of them.

    Args:
        **kwargs: the ``SlicedGenerator`` arguments (release, radius, settings, seed, ...).
    """

    name = "dpswflow"

r"""The paper's projected release: :math:`R = Y_B \Theta + Z`, shape ``(b, L)``, :math:`\Delta = 2r\|\Theta\|_2`.

Replacing one record moves one row by :math:`(y - y')\Theta`, whose norm is at most :math:`2r\|\Theta\|_2`
(spectral norm of the drawn directions, computed exactly), attained by :math:`y = -y' = r u_1` with
:math:`u_1` the top left-singular vector of :math:`\Theta`. Kept so that the paper can be reproduced.
"""

from __future__ import annotations

import torch

from synthcity_dpswf.math import project
from synthcity_dpswf.math.checks import check_positive
from synthcity_dpswf.privacy.mechanisms.base import ReleaseMechanism
from synthcity_dpswf.privacy.neighbouring import Adjacency


def projected_sensitivity(directions: torch.Tensor, radius: float) -> float:
    r"""Replace-one sensitivity :math:`\Delta = 2r \|\Theta\|_2` of the projected release with ``directions``
    ``(d, L)`` (spectral norm in float64 of the very tensor released with)."""
    check_positive("radius", radius)
    spectral_norm = torch.linalg.matrix_norm(directions.detach().to(torch.float64).cpu(), ord=2)
    return 2.0 * radius * float(spectral_norm)


class ProjectedRelease(ReleaseMechanism):
    """The noisy projections of the batch on L public directions (privacy.md, release 2)."""

    name = "projected"
    stored_as = "noisy projections (with their directions)"
    uses_directions = True

    def statistic(
        self, batch: torch.Tensor, directions: torch.Tensor | None, labels: torch.Tensor | None = None, n_classes: int = 1
    ) -> torch.Tensor:
        assert directions is not None
        return project(batch, directions.to(batch)).T

    def sensitivity(self, directions: torch.Tensor | None) -> float:
        assert directions is not None
        return projected_sensitivity(directions, self.options.radius)

    def describe(self, neighbouring: Adjacency | str = Adjacency.REPLACE_ONE) -> str:
        return (
            f"projected release R = Y_B Theta_k + N(0, s_k^2), L = {self.options.n_release_directions}, "
            "Delta_k = 2r ||Theta_k||_2 (exact spectral norm), s_k = z Delta_k (largest shown)"
        )

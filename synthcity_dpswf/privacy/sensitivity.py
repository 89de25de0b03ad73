r"""Exact replace-one L2 sensitivities of the two releases (privacy.md, "The only place private data is touched").

Records are bounded to the ball of radius r, so two records differ by at most 2r: :math:`\|y - y'\| \le 2r`.
"""

from __future__ import annotations

import torch

from synthcity_dpswf.math.checks import check_positive


def record_sensitivity(radius: float) -> float:
    r"""Noisy-record release :math:`R = Y_B + Z`: replacing one record moves one row by at most
    :math:`\Delta = 2r`."""
    check_positive("radius", radius)
    return 2.0 * radius


def projected_sensitivity(directions: torch.Tensor, radius: float) -> float:
    r"""Projected release :math:`R = Y_B \Theta + Z`: replacing one record moves one row by
    :math:`(y - y')\Theta`, whose norm is at most :math:`\Delta = 2r \|\Theta\|_2` (spectral norm of the drawn
    ``directions``, ``(d, L)``, computed in float64 from the very tensor that is released with); equality holds
    for :math:`y = -y' = r u_1` with :math:`u_1 \in \mathbb{R}^d` the top left-singular vector of :math:`\Theta`."""
    check_positive("radius", radius)
    spectral_norm = torch.linalg.matrix_norm(directions.detach().to(torch.float64).cpu(), ord=2)
    return 2.0 * radius * float(spectral_norm)

r"""The noisy-record release (the previous default): :math:`R = Y_B + Z`, shape ``(b, d)``, :math:`\Delta = 2r`.

Replacing one record moves one row of the bounded batch by :math:`\|y - y'\| \le 2r`, attained by
:math:`y' = -y` on the sphere. Any projection of R is post-processing: :math:`\langle y + z, \theta\rangle =
\langle y, \theta\rangle + \mathcal{N}(0, s^2)`.
"""

from __future__ import annotations

import torch

from synthcity_dpswf.math.checks import check_positive
from synthcity_dpswf.privacy.mechanisms.base import ReleaseMechanism
from synthcity_dpswf.privacy.neighbouring import Adjacency


def record_sensitivity(radius: float) -> float:
    r"""Replace-one sensitivity of the noisy-record release: :math:`\Delta = 2r`."""
    check_positive("radius", radius)
    return 2.0 * radius


class RecordRelease(ReleaseMechanism):
    """Each record of the batch plus i.i.d. Gaussian noise (privacy.md, release 1)."""

    name = "record"
    stored_as = "noisy records"

    def statistic(
        self, batch: torch.Tensor, directions: torch.Tensor | None, labels: torch.Tensor | None = None, n_classes: int = 1
    ) -> torch.Tensor:
        return batch

    def sensitivity(self, directions: torch.Tensor | None) -> float:
        return record_sensitivity(self.options.radius)

    def describe(self, neighbouring: Adjacency | str = Adjacency.REPLACE_ONE) -> str:
        return "noisy-record release R = Y_B + N(0, s^2 I), Delta = 2r"

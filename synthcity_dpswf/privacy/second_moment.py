r"""The noisy second moment of unit vectors (Analyze Gauss; privacy.md, "A private image codec").

For private rows :math:`u_1, \dots, u_n` of norm 1 (the caller normalises), the release is the upper triangle,
diagonal included, of :math:`S = \sum_i u_i u_i^\top` plus independent :math:`N(0, \sigma^2)` per entry, mirrored
into a symmetric matrix. With :math:`T(A)` the vector of :math:`A`'s upper-triangle entries,
:math:`\|T(A)\|_2 \le \|A\|_F` for a symmetric :math:`A`, so

.. math:: \Delta_{RO} = \max_{u, v} \|T(u u^\top - v v^\top)\|_2 = \sqrt{2}, \qquad
          \Delta_{AR} = \max_u \|T(u u^\top)\|_2 = 1,

both attained by standard basis vectors, and :math:`\sigma = z\Delta` with :math:`z` from the analytic Gaussian
mechanism at :math:`(\varepsilon, \delta)`: one release of all rows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from synthcity_dpswf.privacy.gaussian import analytic_gaussian_epsilon, analytic_gaussian_noise_multiplier
from synthcity_dpswf.privacy.neighbouring import Adjacency
from synthcity_dpswf.privacy.report import OtherAdjacency

UNIT_TOLERANCE = 1e-5
"""How far from 1 a row's norm may be (float rounding of the caller's normalisation)."""


def second_moment_sensitivity(neighbouring: Adjacency | str) -> float:
    r"""The exact L2 sensitivity of the upper triangle of :math:`\sum_i u_i u_i^\top` over unit rows:
    :math:`\sqrt{2}` under replace-one, 1 under add/remove (module docstring)."""
    return math.sqrt(2.0) if Adjacency.of(neighbouring).n_is_public else 1.0


def upper_triangle(matrix: torch.Tensor) -> torch.Tensor:
    """The entries of a square matrix on and above its diagonal, row by row (the released vector ``T``)."""
    rows, columns = torch.triu_indices(matrix.shape[0], matrix.shape[1])
    return matrix[rows, columns]


@dataclass(frozen=True)
class SecondMomentRelease:
    """What the release made public: the noisy symmetric matrix and the parameters of its Gaussian mechanism."""

    matrix: torch.Tensor
    epsilon: float
    delta: float
    noise_multiplier: float
    sensitivity: float
    neighbouring: Adjacency

    @property
    def noise_std(self) -> float:
        """sigma = z Delta, per released entry."""
        return self.noise_multiplier * self.sensitivity

    def other_adjacency(self) -> OtherAdjacency:
        """The same release under the other adjacency: the Gaussian at ``Adjacency.other_multiplier(z)`` (the basis
        pairs attain both sensitivities, :math:`\\Delta_{RO} = \\sqrt{2}\\,\\Delta_{AR}`), at the same delta."""
        if self.noise_multiplier == 0:
            return OtherAdjacency(self.neighbouring.other.label, math.inf, self.delta, "no noise: not private")
        multiplier = self.neighbouring.other_multiplier(self.noise_multiplier)
        epsilon = analytic_gaussian_epsilon(multiplier, self.delta)
        return OtherAdjacency(self.neighbouring.other.label, epsilon, self.delta, "the same second moment")


def release_second_moment(
    rows: torch.Tensor, epsilon: float, delta: float, secret: torch.Generator, neighbouring: Adjacency | str = Adjacency.REPLACE_ONE
) -> SecondMomentRelease:
    """Release the noisy second moment of ``rows`` ``(n, d)``, each of norm 1, at (epsilon, delta) under
    ``neighbouring`` (epsilon = inf: the exact moment, not private, for ceilings). ``secret``
    (``privacy.secret_generator``) draws the noise. Rows off the unit sphere are refused
    (the sensitivity assumes norm 1): normalise them first, a per-record map."""
    if not (isinstance(epsilon, (int, float)) and epsilon > 0):
        raise ValueError(f"epsilon must be a number > 0 (inf: no noise), got {epsilon!r}.")
    neighbouring = Adjacency.of(neighbouring)
    if rows.ndim != 2 or rows.shape[0] == 0:
        raise ValueError(f"rows must be a non-empty (n, d) tensor, got shape {tuple(rows.shape)}.")
    rows = rows.detach().cpu().to(torch.float64)
    if bool(((rows.norm(dim=1) - 1).abs() > UNIT_TOLERANCE).any()):
        raise ValueError("every row must have norm 1 (the sensitivity assumes unit rows); normalise them first.")
    z = 0.0 if math.isinf(epsilon) else analytic_gaussian_noise_multiplier(epsilon, delta)  # inf: exact, NOT private
    sensitivity = second_moment_sensitivity(neighbouring)
    dim = rows.shape[1]
    moment = rows.T @ rows
    noise = torch.randn(dim * (dim + 1) // 2, generator=secret, dtype=torch.float64) * (z * sensitivity)
    upper_rows, upper_columns = torch.triu_indices(dim, dim)
    released = torch.zeros(dim, dim, dtype=torch.float64)
    released[upper_rows, upper_columns] = moment[upper_rows, upper_columns] + noise
    symmetric = released + torch.triu(released, diagonal=1).T
    return SecondMomentRelease(symmetric, float(epsilon), float(delta), z, sensitivity, neighbouring)

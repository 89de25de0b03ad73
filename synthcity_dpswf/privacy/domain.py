r"""A differentially private domain: numeric bounds and category sets of a table, for when none is public.

Fitting an encoding on private records (min/max, category lists) leaks them. When the user has no public
domain description, this release estimates one with a stated share of the budget:

- every numeric column is counted in fixed, data-independent bins on a signed log scale
  (:math:`\pm[2^k, 2^{k+1})`, ``k`` from ``LOG2_MIN`` to ``LOG2_MAX``, and one bin around zero);
- every categorical column is counted per observed category;
- all counts of all columns form one vector, released with Gaussian noise. Replacing one record changes at
  most two counts by one in each column, so the L2 sensitivity is :math:`\sqrt{2C}` for C columns, and the
  noise is :math:`s = z \sqrt{2C}` with z from the analytic Gaussian mechanism at
  :math:`(\varepsilon, \delta/2)`;
- a category is kept when its noisy count exceeds :math:`\tau = 1 + s\,\Phi^{-1}(1 - \delta_\tau)`: a category
  held by one record in D and none in D' is the only one whose presence differs, and it passes with
  probability at most :math:`\delta_\tau = \delta / (2 C_{cat})` per column (stability-based histograms,
  Korolova et al. 2009; Wilson et al. 2020), so the whole release is :math:`(\varepsilon, \delta)`-DP;
- numeric bins are all released (their set is fixed), so choosing among them is post-processing: a bin is
  kept when its noisy count exceeds :math:`s\,\Phi^{-1}(1 - 0.001 / B)` for B bins (an empty bin passes
  with probability 0.1% / B, so noise alone stretches a column's bounds in at most 0.1% of columns), and if none
  does, the bin with the largest noisy count is (a coarse range: pass a public domain for small tables).

Numeric bounds are the edges of the lowest and highest kept bins (within a factor of 2 of the data's
extent, which is enough to scale it); categories are the kept ones.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch
from scipy.stats import norm

from synthcity_dpswf.privacy.analytic_gaussian import analytic_gaussian_noise_multiplier

LOG2_MIN = -16
LOG2_MAX = 48


def log_bin_edges() -> np.ndarray:
    """The fixed signed log-scale bin edges: -2^48 .. -2^-16, 2^-16 .. 2^48 (the middle bin holds zero)."""
    magnitudes = 2.0 ** np.arange(LOG2_MIN, LOG2_MAX + 1)
    return np.concatenate([-magnitudes[::-1], magnitudes])


@dataclass(frozen=True)
class DomainRelease:
    """What the release made public: bounds per numeric column, kept categories per categorical column, and
    the parameters of the mechanism."""

    bounds: dict[str, tuple[float, float]]
    categories: dict[str, tuple[object, ...]]
    epsilon: float
    delta: float
    noise_multiplier: float
    noise_std: float
    threshold: float


def release_domain(
    frame: pd.DataFrame,
    numeric: list[str],
    categorical: list[str],
    epsilon: float,
    delta: float,
    secret: torch.Generator,
) -> DomainRelease:
    """Release numeric bounds and category sets of ``frame`` with (epsilon, delta)-DP (module docstring).

    Raises ``ValueError`` when a column keeps no bin or category at this budget (too few records): the
    caller should then pass a public domain.
    """
    n_columns = len(numeric) + len(categorical)
    if n_columns == 0:
        raise ValueError("release_domain needs at least one column.")
    z = analytic_gaussian_noise_multiplier(epsilon, delta / 2)
    noise_std = z * math.sqrt(2 * n_columns)
    tail = delta / (2 * max(len(categorical), 1))
    threshold = 1.0 + noise_std * float(norm.isf(tail))

    def noisy(counts: np.ndarray) -> np.ndarray:
        noise = torch.randn(len(counts), generator=secret, dtype=torch.float64).numpy()
        return counts + noise_std * noise

    edges = log_bin_edges()
    bounds: dict[str, tuple[float, float]] = {}
    for column in numeric:
        values = frame[column].to_numpy(dtype=float)
        index = np.clip(np.searchsorted(edges, values, side="right") - 1, 0, len(edges) - 2)
        counts = noisy(np.bincount(index, minlength=len(edges) - 1).astype(float))
        kept = np.flatnonzero(counts > noise_std * float(norm.isf(0.001 / len(counts))))
        if len(kept) == 0:
            kept = np.array([int(np.argmax(counts))])
        bounds[column] = (float(edges[kept[0]]), float(edges[kept[-1] + 1]))
    categories: dict[str, tuple[object, ...]] = {}
    for column in categorical:
        counts = frame[column].value_counts(dropna=False)
        kept_values = counts.index[noisy(counts.to_numpy(dtype=float)) > threshold]
        if len(kept_values) == 0:
            raise ValueError(
                f"column {column!r}: no category stands out of the noise at epsilon = {epsilon:g}; pass a public "
                "domain (bounds and categories) or a larger budget."
            )
        categories[column] = tuple(sorted(kept_values.tolist(), key=str))
    return DomainRelease(bounds, categories, epsilon, delta, z, noise_std, threshold)

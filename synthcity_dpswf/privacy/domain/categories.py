"""A categorical column of the DP domain, read from its released counts (privacy.md, "The DP domain"): its stated
default categories, and the estimate of its rows in categories below the key threshold (``calibration``).

The rows of a categorical column in categories below the threshold are estimated from released counts (its rows
with an entry, from its own type counts and from the other columns' type totals less its estimated missing entries,
combined by inverse variance, minus its published categories' counts: ``unpublished_estimate``, post-processing);
where the estimate exceeds ``OTHER_LEVEL`` of its noise standard deviations the column gets one more category,
``OTHER_CATEGORY``, to which the encoders map every unpublished value (``DomainRelease.lost``). A column left with its
published categories only keeps that estimate (``DomainRelease.unpublished``), which the plugins' warning prints for
a column left with one.
"""

from __future__ import annotations

import math

import numpy as np

NO_CATEGORY = "(no category released)"
"""The category of a categorical column none of whose categories passed the threshold."""
OTHER_CATEGORY = "(other categories)"
"""The extra category of a categorical column whose unpublished categories hold a released share of its rows."""
OTHER_LEVEL = 3.0
"""A categorical column gets ``OTHER_CATEGORY`` when its estimated rows in unpublished categories
(``unpublished_estimate``) exceed this many of the estimate's noise stds: a column whose categories were all
published gets it in 0.13% of releases. Set on the validation tables (fair, the stand-in; docs/privacy.md, "The DP
domain"): at 2 stds fully published columns got a level no row has."""


def category_value(key: tuple[str, object]) -> object:
    """The published category of a key (``category_key``): a bool, an int or float, or the entry itself."""
    return key[1]


def unpublished_estimate(
    present: float, other_totals: list[float], missing: float, count_std: float, category_std: float,
    published: np.ndarray,
) -> tuple[float, float]:
    """A categorical column's estimated rows in unpublished categories, and its noise std: its rows with an entry,
    estimated twice from independent noisy counts and combined by inverse variance (its own type counts' sum
    ``present``, variance 3 ``count_std``^2; the other typed columns' mean total ``other_totals`` (each counts every row
    once: variance 4 ``count_std``^2 / C') less its estimated missing entries ``missing`` (``missing_level``'s), less
    its published categories' counts (``category_std`` each). With many columns the second is the sharper (docs/privacy.md,
    "The DP domain", has a measured case). Post-processing of released counts."""
    missing_variance = 1 / (1 / count_std**2 + 1 / category_std**2)
    estimates, variances = [present], [3 * count_std**2]
    if other_totals:
        estimates.append(float(np.mean(other_totals)) - missing)
        variances.append(4 * count_std**2 / len(other_totals) + missing_variance)
    weights = 1 / np.array(variances)
    rows = float(np.dot(weights, estimates) / weights.sum())
    return rows - float(np.sum(published)), math.sqrt(1 / weights.sum() + len(published) * category_std**2)

r"""A differentially private domain: each column's kind, numeric bounds and category sets, for when none is
public.

Fitting an encoding on private records (min/max, category lists, even pandas dtypes, which one record with 1.5 in
an integer column or one string in a numeric column changes) leaks them. When the user has no public domain
description, this release decides every column from noisy counts, with a stated share of the budget, in two
Gaussian releases with the same noise std s:

1. *Type counts*: per column, the numbers of integer-valued finite numbers, other finite numbers, and anything
   else (a string, a bool, ...), scaled by w = ``TYPE_WEIGHT`` before the noise (the kind decision needs them
   only within a margin of about n, so they take a small part of the sensitivity). The column is categorical
   when its noisy "anything else" count exceeds the sum of the two numeric ones, else integer when its
   integer-valued count exceeds the other numbers' (post-processing).
2. *Value counts*, in the partition of the kind just released: an integer column's numbers in fixed bins with
   one bin per integer from -16 to 16, then [16.5, 32) and signed octaves up to :math:`2^{48}`
   (``integer_bin_edges``), a float column's in
   signed octaves :math:`\pm[2^k, 2^{k+1})` and a bin around zero (``log_bin_edges``), other entries not
   counted; a categorical column's entries per observed value (a category).

Replacing one record moves at most one count by -1 and one by +1 in each partition of each column, so the
first release has L2 sensitivity :math:`w\sqrt{2C}` and the second, whatever kinds the first chose,
:math:`\sqrt{2C}` for C columns. Gaussian mechanisms composed adaptively are one Gaussian mechanism with the
combined sensitivity (Dong, Roth & Su 2022, Corollary 3.3: :math:`\mu = \sqrt{\mu_1^2 + \mu_2^2}`), here
:math:`\Delta = \sqrt{C (2 + 2 w^2)}`, and :math:`s = z \Delta` with z from the analytic Gaussian mechanism at
:math:`(\varepsilon, \delta/2)`. Then:

- the observed categories are private (counted by ``category_key``, so that 1, 1.0 and True are told apart
  by kind, not merged in the order the records come). A category is published only when its noisy count
  exceeds :math:`\tau = s\,\Phi^{-1}(1 - \eta)`, :math:`\eta = \delta / (2C(1 + e^\varepsilon))`. Proof: let
  :math:`\tilde M` count every category observed in D *or* D' (zero where unobserved) and threshold them all;
  :math:`\tilde M(D)` and :math:`\tilde M(D')` are the Gaussian release above followed by post-processing,
  so :math:`(\varepsilon, \delta/2)`-indistinguishable. With shared noise, the real release M(D) equals
  :math:`\tilde M(D)` unless one of the at most C categories unobserved in D (one per column: replace-one adds
  at most one new category to a column) passes :math:`\tau` with count 0, probability at most :math:`C\eta`;
  the same for D'. Hence :math:`P[M(D) \in S] \le e^\varepsilon (P[M(D') \in S] + C\eta) + \delta/2 + C\eta
  \le e^\varepsilon P[M(D') \in S] + \delta`;
- the bins are a fixed set given the kind, all released, so a numeric column's bounds are post-processing
  (``numeric_bounds``): the *anchor* is the window of ``WINDOW`` consecutive bins with the largest noisy sum
  (the records of a column sit in a few neighbouring bins, so a window gathers their counts while its noise
  grows only as :math:`\sqrt{W}`); a bin is kept when its noisy count exceeds :math:`s\,\Phi^{-1}(1 - 0.001 /
  B)` anywhere (an empty bin passes with probability 0.1% / B), or when it is in the *run* (inside the anchor window) around the anchor's
  fullest bin: that bin, if above :math:`s\,\Phi^{-1}(1 - 0.01 / W)`, and its neighbours on either side while
  their counts exceed :math:`3s` (a false neighbour, 0.13% per side, stretches a range by one bin). Isolated
  bins inside the anchor at the same level are not kept: on iris' integer target (n = 150, epsilon = 0.9) they
  widened the range in 1.4% of releases (an extra class, which synthcity's classifier evaluation scores 0).
  If no bin is kept, the anchor's central bins are (``located`` is then False: the release could not place the
  column at this budget, and the caller says so).

Numeric bounds are the edges of the lowest and highest kept bins (within a factor of 2 of the data's extent
between :math:`2^{-16}` and :math:`2^{48}` in magnitude, which is enough to scale it; values beyond fall in the
end bins; for an integer column, the integers inside them, widened to [k, k + 1] when only k is); categories are the kept ones.
Where no category of a categorical column passes, it gets the single placeholder category ``NO_CATEGORY`` (a
stated default, never an error: an error would be an output that one record can change). Output dtypes follow
the kinds (int64, float64, the categories' own type). Values of a column that do not fit its released kind (a
string in a numeric column, a rare category) are mapped to a stated default by the encoders, one record at a
time.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd
import torch
from scipy.stats import norm

from synthcity_dpswf.privacy.analytic_gaussian import analytic_gaussian_epsilon, analytic_gaussian_noise_multiplier
from synthcity_dpswf.privacy.neighbouring import (
    NEIGHBOURINGS,
    Neighbouring,
    check_neighbouring,
    one_shot_other_multiplier,
    other,
)
from synthcity_dpswf.privacy.report import OtherAdjacency

LOG2_MIN = -16
LOG2_MAX = 48
WINDOW = 8
"""Bins per anchor window in ``numeric_bounds``."""
TYPE_WEIGHT = 0.5
"""Scale of the type counts in the released vector: their noise is s / 0.5 = 2s, and the decision between
kinds has a margin of n / 2 on a column of one kind, while the sensitivity grows only by sqrt(2.5 / 2) = 1.12."""
NO_CATEGORY = "(no category released)"
"""The category of a categorical column none of whose categories passed the threshold."""

Kind = Literal["integer", "float", "categorical"]


def log_bin_edges() -> np.ndarray:
    """The bins of a float column: -2^48 .. -2^-16, 2^-16 .. 2^48 (signed octaves; the middle bin holds zero)."""
    magnitudes = 2.0 ** np.arange(LOG2_MIN, LOG2_MAX + 1)
    return np.concatenate([-magnitudes[::-1], magnitudes])


def integer_bin_edges() -> np.ndarray:
    """The bins of an integer column: -2^48 .. -32, then -16.5, -15.5, .., 16.5 (one bin per integer of -16..16),
    then 32 .. 2^48."""
    magnitudes = 2.0 ** np.arange(5, LOG2_MAX + 1)
    return np.concatenate([-magnitudes[::-1], np.arange(-16.5, 17.0), magnitudes])


@dataclass(frozen=True)
class DomainRelease:
    """What the release made public: each column's kind, bounds per numeric column, kept categories per
    categorical column, and the parameters of the mechanism."""

    kinds: dict[str, Kind]
    bounds: dict[str, tuple[float, float]]
    categories: dict[str, tuple[object, ...]]
    located: dict[str, bool]
    epsilon: float
    delta: float
    noise_multiplier: float
    noise_std: float
    threshold: float
    neighbouring: Neighbouring = "replace_one"

    def other_adjacency(self) -> OtherAdjacency:
        r"""This release under the other adjacency: its counts (Gaussian, :math:`\Delta_{RO} = \sqrt{2}\Delta_{AR}`
        exactly) at the multiplier ``one_shot_other_multiplier(z)`` and delta / 2, plus the threshold's part, whose
        proof holds with :math:`e^{\varepsilon'}` in place of :math:`e^{\varepsilon}`: :math:`C\eta(1 + e^{\varepsilon'}) =
        \delta (1 + e^{\varepsilon'}) / (2 (1 + e^{\varepsilon}))` (privacy.md, "Both adjacencies in the report")."""
        multiplier = one_shot_other_multiplier(self.noise_multiplier, self.neighbouring)
        epsilon = analytic_gaussian_epsilon(multiplier, self.delta / 2)
        ratio = float(np.exp(np.logaddexp(0.0, epsilon) - np.logaddexp(0.0, self.epsilon)))  # (1 + e^eps') / (1 + e^eps)
        threshold_delta = self.delta / 2 * ratio
        return OtherAdjacency(NEIGHBOURINGS[other(self.neighbouring)], epsilon, self.delta / 2 + threshold_delta, "the same counts")


def is_finite_number(value: object) -> bool:
    """Whether one entry is a finite number (an int or float, numpy's included, not a bool)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:  # an int beyond float range
        return False


def number_mask(values: pd.Series) -> np.ndarray:
    """Which entries are finite numbers (``is_finite_number``): a per-record test (numeric dtypes take a
    vectorised path with the same result)."""
    if pd.api.types.is_bool_dtype(values) or isinstance(values.dtype, pd.CategoricalDtype):
        return np.array([is_finite_number(value) for value in values.to_numpy(dtype=object)], dtype=bool)
    if pd.api.types.is_numeric_dtype(values):
        return np.isfinite(values.to_numpy(dtype=float))
    return np.array([is_finite_number(value) for value in values], dtype=bool)


def category_key(value: object) -> tuple[str, object]:
    """The key a category is counted and looked up by: its kind and canonical value, so that 1, 1.0, True and
    numpy's 1 (equal under Python's ``==`` and hash) are told apart by kind (bool vs number) and merged only where
    they are the same number, whichever record comes first."""
    if isinstance(value, (bool, np.bool_)):
        return ("bool", bool(value))
    if is_finite_number(value):
        number = float(value)
        return ("number", int(number) if number.is_integer() else number)
    return (type(value).__name__, value)


def category_value(key: tuple[str, object]) -> object:
    """The published category of a key (``category_key``): a bool, an int or float, or the entry itself."""
    return key[1]


def noisy_counts(counts: np.ndarray, noise_std: float, secret: torch.Generator, weight: float = 1.0) -> np.ndarray:
    """The domain's one source of noise: ``weight * counts + N(0, s^2)`` per entry (the released vector), read back
    on the count scale (divided by ``weight``)."""
    noise = torch.randn(len(counts), generator=secret, dtype=torch.float64).numpy()
    return (weight * counts + noise_std * noise) / weight


def release_domain(
    frame: pd.DataFrame, epsilon: float, delta: float, secret: torch.Generator, neighbouring: Neighbouring = "replace_one"
) -> DomainRelease:
    """Release every column's kind, numeric bounds and category set of ``frame`` with (epsilon, delta)-DP under
    ``neighbouring`` (module docstring; under add/remove one record adds one unit per partition instead of moving
    one, so :math:`\Delta = \sqrt{C (1 + w^2)}`).

    Never raises on the data: a column that the noise hides gets the stated defaults (module docstring) and
    ``located[column] = False`` (read from the released counts: saying so is post-processing).
    """
    n_columns = frame.shape[1]
    if n_columns == 0:
        raise ValueError("release_domain needs at least one column.")
    check_neighbouring(neighbouring)
    z = analytic_gaussian_noise_multiplier(epsilon, delta / 2)
    moved = 2 if neighbouring == "replace_one" else 1  # units moved per partition by one neighbour
    noise_std = z * math.sqrt(n_columns * (moved + moved * TYPE_WEIGHT**2))
    threshold = noise_std * float(norm.isf(delta / (2 * n_columns * (1 + math.exp(min(epsilon, 700.0))))))

    kinds: dict[str, Kind] = {}
    bounds: dict[str, tuple[float, float]] = {}
    categories: dict[str, tuple[object, ...]] = {}
    located: dict[str, bool] = {}
    for column in frame.columns:
        values = frame[column]
        is_number = number_mask(values)
        numbers = values[is_number].to_numpy(dtype=float)
        is_integer = numbers == np.round(numbers)
        type_counts = np.array([is_integer.sum(), (~is_integer).sum(), (~is_number).sum()], dtype=float)
        integer_count, float_count, other_count = noisy_counts(type_counts, noise_std, secret, TYPE_WEIGHT)
        # The kind is read from the released type counts; the value counts then use that kind's partition (an
        # adaptive composition of Gaussian mechanisms, accounted as one with the combined sensitivity).
        if other_count > integer_count + float_count:
            kinds[column] = "categorical"
            observed = pd.Series([category_key(value) for value in values.to_numpy(dtype=object)]).value_counts()
            kept = [category_value(key) for key in observed.index[noisy_counts(observed.to_numpy(dtype=float), noise_std, secret) > threshold]]
            located[column] = len(kept) > 0
            # Only categories above the threshold may be published (an observed category is private): where none
            # passed, the column gets a placeholder, a function of the (empty) released set. The order is a total
            # one on the published values, never the order of their counts.
            categories[column] = tuple(sorted(kept, key=lambda v: (str(v), type(v).__name__))) if kept else (NO_CATEGORY,)
            continue
        kinds[column] = "integer" if integer_count > float_count else "float"
        edges = integer_bin_edges() if kinds[column] == "integer" else log_bin_edges()
        index = np.clip(np.searchsorted(edges, numbers, side="right") - 1, 0, len(edges) - 2)
        counts = noisy_counts(np.bincount(index, minlength=len(edges) - 1).astype(float), noise_std, secret)
        bounds[column], located[column] = numeric_bounds(counts, edges[:-1], edges[1:], noise_std)
    return DomainRelease(kinds, bounds, categories, located, epsilon, delta, z, noise_std, threshold, neighbouring)


def numeric_bounds(
    counts: np.ndarray, lower: np.ndarray, upper: np.ndarray, noise_std: float
) -> tuple[tuple[float, float], bool]:
    """Bounds of one numeric column from the noisy counts of bins ``[lower[i], upper[i])`` in increasing order
    (module docstring), and whether any bin stood out of the noise. Post-processing of the released counts."""
    n_bins = len(counts)
    width = min(WINDOW, n_bins)
    window_sums = np.convolve(counts, np.ones(width), mode="valid")
    start = int(np.argmax(window_sums))
    strong = counts > noise_std * float(norm.isf(0.001 / n_bins))
    # The run of neighbours of the anchor's fullest bin whose counts exceed three noise standard deviations: a
    # column's bins are neighbours, and a false neighbour (0.13% per side) stretches the range by one bin only.
    peak = start + int(np.argmax(counts[start : start + width]))
    low, high = peak, peak
    while low - 1 >= start and counts[low - 1] > 3 * noise_std:
        low -= 1
    while high + 1 < start + width and counts[high + 1] > 3 * noise_std:
        high += 1
    run = np.zeros(n_bins, dtype=bool)
    run[low : high + 1] = counts[peak] > noise_std * float(norm.isf(0.01 / width))
    kept = np.flatnonzero(strong | run)
    located = len(kept) > 0
    if not located:
        kept = np.arange(start + width // 2 - 1, start + width // 2 + 1)
    return (float(lower[kept[0]]), float(upper[kept[-1]])), located

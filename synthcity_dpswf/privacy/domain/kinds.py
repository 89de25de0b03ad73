"""Stage 1 of the DP domain, read back: a typed column's kind from its noisy type counts, and whether it gets a
missing level from its two noisy missing counts (privacy.md, "The DP domain", stages 1 and 2). Post-processing of
released counts; the margins are priors in noise stds, so that noise alone rarely changes a column's kind or gives it
a level it does not need."""

from __future__ import annotations

import math
from typing import Literal

import numpy as np

Kind = Literal["integer", "float", "categorical"]
"""A typed column's kind, decided from its stage-1 counts (``decide_kind``)."""

KIND_MARGIN = 1.5
"""A typed column is categorical only when its noisy "anything else" count exceeds the sum of its two numeric counts
by this many noise stds of that difference (``decide_kind``): a prior for numbers, so that noise does not type a float
column categorical (without it, noise did on tables of many float columns: docs/privacy.md, "The DP domain", has the
rates), while a string column with about as many rows as one category needs to be published
(``DomainRelease.needed_rows``) or more is still categorical."""
FLOAT_MARGIN = 4.0
"""A numeric column is a float column when its noisy count of non-integer numbers exceeds its integer count, or this
many noise stds (``decide_kind``): a clear share of non-integer numbers (rainfall, mostly exact zeros) keeps a float
column float; an integer column becomes float with probability 0.003% (at 3 stds, 0.13%: often enough for an
integer target to change dtype family now and then in a suite of runs)."""
MIXED_MARGIN = 5.0
"""A column whose noisy counts of numbers and of other entries both exceed this many of their noise stds mixes
kinds (``DomainRelease.mixed``): the entries of the kind it was not given are mapped to a stated default, and the
plugins say so. At 3 stds a column without other entries is named in 0.13% of releases, often enough for a suite of
runs to warn about a column of numbers only; at 5, 3e-7."""
MISSING_THRESHOLD = 4.0
"""A typed column gets a missing level when its estimated missing entries (two noisy counts, ``missing_level``)
exceed this many of their noise stds: a column without missing entries gets the level with probability 0.003% (a
level it does not need lets the flow emit missing entries where the real column has none; at 3 stds, 0.13% per
column, often enough for a label column to come back with missing entries, which synthcity's evaluators refuse); the
estimates of the others are kept, unwarned (``DomainRelease.hidden_missing``)."""


def decide_kind(integer_count: float, float_count: float, other_count: float, count_std: float) -> Kind:
    """A typed column's kind from its noisy type counts (each of noise std ``count_std``; post-processing):
    categorical when the "anything else" count exceeds the numeric ones by ``KIND_MARGIN`` stds of the difference,
    else float when the non-integer count exceeds the integer count or ``FLOAT_MARGIN`` stds, else integer."""
    if other_count - (integer_count + float_count) > KIND_MARGIN * math.sqrt(3.0) * count_std:
        return "categorical"
    if float_count > integer_count or float_count > FLOAT_MARGIN * count_std:
        return "float"
    return "integer"


def missing_level(first: float, first_std: float, second: float, second_std: float) -> tuple[bool, float]:
    """Whether a column gets a missing level, and the estimated missing entries: the inverse-variance mean of its two
    noisy missing counts (stage 1's type cell and stage 2's missing cell), above ``MISSING_THRESHOLD`` of its noise
    stds (post-processing)."""
    weights = np.array([1 / first_std**2, 1 / second_std**2])
    estimate = float(np.dot(weights, [first, second]) / weights.sum())
    return estimate > MISSING_THRESHOLD / math.sqrt(weights.sum()), estimate

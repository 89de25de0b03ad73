"""The DP domain's fixed partitions (privacy.md, "The DP domain", stages 2 and 3): a numeric column's stage-2 bins
(signed octaves for a float column, unit bins around zero for an integer one) and the value-histogram cells inside a
released or declared range. Public functions of the kind and the range, fixed before any count."""

from __future__ import annotations

import numpy as np

from synthcity_dpswf.privacy.domain.kinds import Kind

LOG2_MIN = -16
"""The finest octave of the stage-2 bins: magnitudes below 2^-16 fall in the bin around zero."""
LOG2_MAX = 48
"""The coarsest octave: magnitudes beyond 2^48 fall in the end bins."""
SUB_BINS = 8
"""Sub-bins per stage-2 bin in a value histogram (stage 3): a float column's octave in eighths (9% wide)."""


def log_bin_edges() -> np.ndarray:
    """The bins of a float column: -2^48 .. -2^-16, 2^-16 .. 2^48 (signed octaves; the middle bin holds zero)."""
    magnitudes = 2.0 ** np.arange(LOG2_MIN, LOG2_MAX + 1)
    return np.concatenate([-magnitudes[::-1], magnitudes])


def integer_bin_edges() -> np.ndarray:
    """The bins of an integer column: -2^48 .. -32, then -16.5, -15.5, .., 16.5 (one bin per integer of -16..16),
    then 32 .. 2^48."""
    magnitudes = 2.0 ** np.arange(5, LOG2_MAX + 1)
    return np.concatenate([-magnitudes[::-1], np.arange(-16.5, 17.0), magnitudes])


def stage_two_edges(kind: Kind) -> np.ndarray:
    """The stage-2 bins of a numeric column of ``kind`` (``integer_bin_edges`` or ``log_bin_edges``)."""
    return integer_bin_edges() if kind == "integer" else log_bin_edges()


def histogram_edges(low: float, high: float, integer: bool) -> np.ndarray:
    """The edges of a value histogram over [low, high] (stage 3): the kind's stage-2 bins inside the range, each split
    into ``SUB_BINS`` sub-bins, geometric where the bin lies on one side of zero, linear where it touches zero; an
    integer column's unit bins stay whole. A float range that holds zero (across it, or from it as a declared
    ``(0, 60)``) has the octaves within 1/64 of its largest magnitude merged into one bin beside zero, split
    linearly, and keeps zero's atom, the bins between 0 and +-2^-16 (``adapters.table_columns.snapped_to_zero``: the
    exact zeros of an amount). A public function of the (released or declared) range. Without the merge, a declared
    range from zero would keep every octave down to 2^-16, most of its cells below 1, where no value of a count, a
    duration or an amount lies: cells of pure noise (docs/flows.md)."""
    edges = integer_bin_edges() if integer else log_bin_edges()
    inner = edges[(edges > low) & (edges < high)]
    finest = 2.0**LOG2_MIN
    atom = not integer and low <= 0 <= high and max(abs(low), abs(high)) > finest
    if atom:
        inner = inner[np.abs(inner) >= max(abs(low), abs(high)) / 64]
        inner = np.concatenate([inner, [edge for edge in (-finest, 0.0, finest) if low < edge < high]])
    outer = np.unique(np.concatenate([[low], inner, [high]]))
    pieces = [outer[:1]]
    for start, stop in zip(outer[:-1], outer[1:]):
        nearest = min(abs(start), abs(stop))
        if (integer and stop - start <= 1.0 + 1e-9) or (atom and nearest == 0 and max(abs(start), abs(stop)) <= finest):
            pieces.append(np.array([stop]))  # a unit bin, or zero's atom: whole
        elif (start > 0 or stop < 0) and nearest > finest * (1 + 1e-9):
            sign, a, b = (1.0, start, stop) if start > 0 else (-1.0, -start, -stop)
            pieces.append(sign * np.geomspace(a, b, SUB_BINS + 1)[1:])
        else:
            pieces.append(np.linspace(start, stop, SUB_BINS + 1)[1:])
    return np.unique(np.concatenate(pieces))

"""The resolution of the tables' codecs: how many levels a column gets, from the table's size and the noise of the
release that measures it (public or released numbers only; privacy.md, "Aggregate releases: marginals")."""

from __future__ import annotations

import math

from synthcity_dpswf.adapters.table_columns import NumericColumn


def needs_histogram(column: object, bins: int) -> bool:
    """Whether a declared column's levels need its released value histogram: a float column (fine levels at its
    quantiles), or an integer range of more than ``bins`` integers: fine levels at its quantiles where ``bins`` is the
    fine levels' most, coarse levels at them where it is the coarse levels' most (a named target's:
    ``MarginalTableCodec.equal_mass_runs``). Narrower integer ranges get one level per integer, categories their own."""
    if not isinstance(column, NumericColumn) or column.histogram is not None:
        return False
    return not column.integer or math.floor(column.high) - math.ceil(column.low) + 1 > bins


CELL_SIGNAL = 1.0
"""A measured cell's expected count should reach this many noise standard deviations (``table_resolution``). Chosen
on data we do not report: synthcity's XGB performance of DPSWflow at epsilon = 3 on iris and wine (means of 6 fits)
and the 2-way TV of a synthetic 4,000 x 20 stand-in of a user's table at epsilon = 1 (docs/flows.md, "Tables as
users bring them"): of 0.1, 0.25, 0.5, 1 and 2 stds, 1 was the best on wine, near the best on iris and among the
best on the stand-in (a smaller signal keeps levels whose counts are noise, a larger one fewer levels than the data
need)."""
FINE_LEVELS = (8, 100)
COARSE_LEVELS = (2, 16)
SMALL_TABLE_COARSE = 8


def table_resolution(n_records: float | None, count_noise: float) -> tuple[int, int]:
    """Fine and coarse levels per column for the marginal release, from the expected table size n (public, or
    released under add/remove) and the noise std of a measured count (``count_noise``, sensitivity included): a
    fine one-way cell of n / K records and a two-way cell of n / K^2 should hold ``CELL_SIGNAL`` noise stds, within
    ``FINE_LEVELS`` and ``COARSE_LEVELS``; below 1,000 rows at most ``SMALL_TABLE_COARSE`` coarse levels (chosen on
    iris and wine, synthcity's XGB performance of DPSWflow at epsilon = 3 over 4, 8 and 16 levels: 8 the best on wine
    and as good as 4 on iris, 16 worse on both). Unknown n (add/remove with every column declared): the most.

    On Adult (48,842 rows, 15 columns, epsilon = 1) the rule keeps 100 fine and 16 coarse levels, the settings chosen
    on raw Adult's training split (docs/flows.md, "Tables"); on 4,000 rows of 20 columns at epsilon = 0.5 it measures
    2-way tables of 5 x 5 cells, each holding about 160 records against noise of about 150.
    """
    if n_records is None:
        return FINE_LEVELS[1], COARSE_LEVELS[1]
    ratio = n_records / (CELL_SIGNAL * count_noise)
    fine = int(min(max(math.floor(ratio), FINE_LEVELS[0]), FINE_LEVELS[1]))
    coarse = int(min(max(math.floor(math.sqrt(ratio)), COARSE_LEVELS[0]), COARSE_LEVELS[1]))
    if n_records < 1000:
        coarse = min(coarse, SMALL_TABLE_COARSE)
    return fine, coarse

"""How a run's budget is set from public numbers: the default delta, and the share a DP domain takes
(privacy.md, "The DP domain")."""

from __future__ import annotations

import math

from synthcity_dpswf.privacy.domain import rows_needed


def default_delta(n_records: int | None) -> float:
    """The delta used when none is given: min(1e-5, n^-1.1), well below the 1/n that a mechanism publishing one
    random record would meet (1e-5 up to about 35,000 rows, then n^-1.1: 6.9e-6 for Adult's 48,842); 1e-5 when n is
    private (``None``, add/remove)."""
    return 1e-5 if n_records is None else min(1e-5, n_records**-1.1)


HISTOGRAM_SHARE = 0.05
"""The budget share of the value histograms alone, when a public domain declares every column and some numeric ones
need their quantiles (``needs_histogram``)."""


def default_domain_share(
    n_records: int | None, n_undeclared: int, n_histograms: int, epsilon: float, delta: float, neighbouring: str
) -> float:
    """The share of the budget a DP domain gets when none is given, from public numbers only.

    - Only value histograms of declared columns: ``HISTOGRAM_SHARE``.
    - Below 1,000 rows: 0.5. Chosen on iris, wine and diabetes (sklearn; 150-442 rows) at epsilon = 3: with 0.1
      the numeric ranges were placed for 31-62% of their columns, with 0.3 for 98-100% (delta = 0.1 / n then);
      at the default delta (1e-5), iris' integer target (three classes of 50) got exactly its three levels in 32%
      of 3,000 releases with 0.3, 85% with 0.4 and 99% with 0.5 (benchmarks/dp_domain.py; docs/flows.md).
    - Else the smallest of 0.1, 0.2, .., 0.5 at which a category holding 10% of the rows is published with
      probability 95% (``privacy.domain.rows_needed``) when half the undeclared columns are categorical (their kinds
      are private until released); 0.5 if none is.
    - n private (add/remove): 0.3.
    """
    if n_undeclared == 0:
        return HISTOGRAM_SHARE
    if n_records is None:
        return 0.3
    if n_records < 1000:
        return 0.5
    categorical = math.ceil(n_undeclared / 2)
    for share in (0.1, 0.2, 0.3, 0.4):
        needed = rows_needed(share * epsilon, share * delta, categorical, n_undeclared - categorical, n_histograms, neighbouring)  # type: ignore[arg-type]
        if needed <= 0.1 * n_records:
            return share
    return 0.5

"""The domain of valid datasets (privacy.md, "The domain of valid datasets"): a table is checked before any private
computation, and refused as a whole with a message that names the column, the reason and at most the column's dtype
and the Python types of its entries outside the domain, never an entry's value."""

from __future__ import annotations

import numpy as np
import pandas as pd

from synthcity_dpswf.privacy.counts import all_strings, is_finite_number, is_missing


class TableRefusal(ValueError):
    """A table refused before any release (outside the domain of valid datasets, or outside a domain's columns,
    categories or ranges): its message names the column and the reason, never an entry's value, so that it may be
    shown wherever it is raised (a Dask worker's log, the command line)."""


def is_valid_entry(value: object) -> bool:
    """An entry inside the domain of valid datasets (privacy.md): a string, a bool, a finite number or missing."""
    return isinstance(value, (str, bool, np.bool_)) or is_finite_number(value) or is_missing(value)


def check_table(frame: pd.DataFrame, min_rows: int = 2) -> None:
    """Reject a table outside the domain of valid datasets (privacy.md) before any private computation: fewer than
    ``min_rows`` rows (0 for one partition of a partitioned table, whose size is the total's), no columns or
    duplicated names, a column of a type no domain describes, infinite values, entries that are not strings, bools,
    finite numbers or missing. The message names the column and the reason, never a value."""
    if frame.shape[1] == 0:
        raise TableRefusal("the table has no columns; pass a table with at least one column.")
    if len(frame) < min_rows:
        raise TableRefusal(f"the table has {len(frame)} row(s); differential privacy over fewer than 2 rows is meaningless.")
    duplicated = sorted({str(name) for name in frame.columns[frame.columns.duplicated()]})
    if duplicated:
        raise TableRefusal(f"the table has duplicated column names {duplicated}; rename them.")
    for column in frame.columns:
        values = frame[column]
        kind = values.dtype.kind
        if kind in "mMcV":  # datetimes, timedeltas, complex, raw bytes
            raise TableRefusal(
                f"column {column!r} has dtype {values.dtype}, which no domain describes; convert it to numbers (a "
                "datetime to a decimal year: `s.dt.year + (s.dt.dayofyear - 1) / 365.25`) or to categories."
            )
        if kind in "iuf" and bool(np.isinf(values.to_numpy(dtype=float, na_value=np.nan)).any()):
            raise TableRefusal(f"column {column!r} has infinite values; clip or drop them before fitting.")
        if (kind == "O" and not all_strings(values)) or isinstance(values.dtype, pd.CategoricalDtype):
            odd = {type(value).__name__ for value in values.to_numpy(dtype=object) if not is_valid_entry(value)}
            if odd:
                raise TableRefusal(
                    f"column {column!r} holds entries of type {sorted(odd)}; a record's entries must be strings, bools "
                    "or finite numbers: convert or drop them before fitting."
                )

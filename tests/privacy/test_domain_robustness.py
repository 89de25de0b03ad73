"""Issue 35, item 4: the DP domain and the validity checks on tables as users pass them (nullable dtypes, pandas' NA,
kinds that noise could flip, columns it cannot place). No synthcity needed."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from pandas._libs import lib
from pandas.core.arrays.masked import BaseMaskedArray

from synthcity_dpswf.privacy import release_domain, secret_generator
from synthcity_dpswf.privacy.validity import check_table


@pytest.fixture
def pandas_2_1_to_numpy(monkeypatch: pytest.MonkeyPatch) -> None:
    """pandas 2.1's ``to_numpy`` of a nullable array (allowed by synthcity's pins): a float dtype without ``na_value``
    raises where the array holds pandas' NA (pandas 2.2 returns NaN instead)."""
    original = BaseMaskedArray.to_numpy

    def strict(self: BaseMaskedArray, dtype: object = None, copy: bool = False, na_value: object = lib.no_default) -> np.ndarray:
        if na_value is lib.no_default and self._hasna and dtype is not None and np.dtype(dtype).kind == "f":
            raise ValueError("cannot convert to 'float64'-dtype NumPy array with missing values. Specify an "
                             "appropriate 'na_value' for this dtype.")
        return original(self, dtype=dtype, copy=copy, na_value=na_value)

    monkeypatch.setattr(BaseMaskedArray, "to_numpy", strict)


def nullable_table(n: int = 400) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    ints = pd.array(rng.integers(0, 50, n), dtype="Int64")
    floats = pd.array(rng.normal(10.0, 2.0, n), dtype="Float64")
    ints[3], floats[5] = pd.NA, pd.NA  # one record decides whether the column holds NA
    return pd.DataFrame({"count": ints, "level": floats})


def test_the_emulated_pandas_raises_without_na_value(pandas_2_1_to_numpy: None) -> None:
    with pytest.raises(ValueError, match="na_value"):
        nullable_table()["count"].to_numpy(dtype=float)


def test_one_na_in_a_nullable_column_never_raises(pandas_2_1_to_numpy: None) -> None:
    frame = nullable_table()
    check_table(frame)
    release = release_domain(frame, 2.0, 1e-5, secret_generator(), declared={})
    assert set(release.kinds) == {"count", "level"}
    declared = release_domain(frame[["level"]], 2.0, 1e-5, secret_generator(), declared={"level": (0.0, 20.0, False)})
    assert "level" in declared.histograms

r"""Tables <-> records in the unit ball, from a domain description that is public or paid for.

A ``TabularDomain`` lists each column as numeric (bounds, integer or not) or categorical (its categories).
``TabularEncoder`` maps a row to

.. math:: y = \frac{1}{\sqrt{m + c}} \big(u_1, \dots, u_m, e^{(1)}, \dots, e^{(c)}\big), \qquad
          u_i = 2 \frac{\mathrm{clip}(x_i) - \mathrm{low}_i}{\mathrm{high}_i - \mathrm{low}_i} - 1 \in [-1, 1],

with :math:`e^{(j)}` the one-hot vector of the j-th categorical column (zero for a category outside the
domain), so that :math:`\|y\| \le 1` for every row: the map is fixed by the domain, acts on each row alone,
and needs no budget. Decoding clips, rounds integer columns, takes the argmax of each one-hot block and
restores the column order and dtypes.

Where the domain comes from decides the guarantee: ``TabularDomain.from_dict`` / ``from_levels`` read a
public description; ``TabularDomain.from_release`` uses a ``privacy.domain.DomainRelease`` (paid budget).
Never build a domain from the private table itself.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Union

import numpy as np
import pandas as pd
import torch

from synthcity_dpswf.privacy.domain import DomainRelease


@dataclass(frozen=True)
class NumericColumn:
    """A numeric column with public bounds; ``integer`` columns are rounded when decoded."""

    name: str
    low: float
    high: float
    integer: bool = False

    def __post_init__(self) -> None:
        if not (math.isfinite(self.low) and math.isfinite(self.high)) or self.low >= self.high:
            raise ValueError(f"column {self.name!r}: bounds must be finite with low < high, got {self.low}, {self.high}.")


@dataclass(frozen=True)
class CategoricalColumn:
    """A categorical column with its public list of categories (one-hot encoded)."""

    name: str
    categories: tuple[Any, ...]

    def __post_init__(self) -> None:
        if len(self.categories) == 0:
            raise ValueError(f"column {self.name!r}: a categorical column needs at least one category.")


Column = Union[NumericColumn, CategoricalColumn]


@dataclass(frozen=True)
class TabularDomain:
    """The columns of a table, in order, with their public (or privately released) ranges."""

    columns: tuple[Column, ...]
    source: str = "public domain description"

    @property
    def names(self) -> list[str]:
        return [column.name for column in self.columns]

    @classmethod
    def from_dict(cls, description: dict[str, dict[str, Any]]) -> "TabularDomain":
        """From ``{name: {"type": "numeric", "low": .., "high": .., "integer": bool}}`` or
        ``{name: {"type": "categorical", "categories": [..]}}`` entries, in column order."""
        columns: list[Column] = []
        for name, spec in description.items():
            kind = spec.get("type")
            if kind == "numeric":
                columns.append(NumericColumn(name, float(spec["low"]), float(spec["high"]), bool(spec.get("integer", False))))
            elif kind == "categorical":
                columns.append(CategoricalColumn(name, tuple(spec["categories"])))
            else:
                raise ValueError(f"column {name!r}: type must be 'numeric' or 'categorical', got {kind!r}.")
        return cls(tuple(columns))

    @classmethod
    def from_levels(cls, levels: dict[str, int] | str | Path, max_one_hot: int = 20) -> "TabularDomain":
        """From a private-pgm style domain ``{name: number of levels}`` (integer codes 0..k-1; a dict or a JSON
        file). Columns with at most ``max_one_hot`` levels are categorical, wider ones ordinal integers."""
        if not isinstance(levels, dict):
            levels = json.loads(Path(levels).read_text())
        columns: list[Column] = []
        for name, count in levels.items():
            if count <= max_one_hot:
                columns.append(CategoricalColumn(name, tuple(range(int(count)))))
            else:
                columns.append(NumericColumn(name, 0.0, float(count - 1), integer=True))
        return cls(tuple(columns))

    @classmethod
    def from_release(cls, release: DomainRelease, frame_columns: list[str], integer: set[str]) -> "TabularDomain":
        """From a differentially private ``DomainRelease`` (budget paid), in the table's column order."""
        columns: list[Column] = []
        for name in frame_columns:
            if name in release.bounds:
                low, high = release.bounds[name]
                if name in integer:  # integers in the bins [low, high) lie in [ceil(low), ceil(high) - 1]
                    low, high = math.ceil(low), math.ceil(high) - 1
                columns.append(NumericColumn(name, low, high if high > low else low + 1, name in integer))
            else:
                columns.append(CategoricalColumn(name, release.categories[name]))
        source = f"differentially private domain (epsilon = {release.epsilon:.4g}, delta = {release.delta:.3g})"
        return cls(tuple(columns), source)


class TabularEncoder:
    """Encode rows of a table into unit-ball records and decode records back (module docstring)."""

    def __init__(self, domain: TabularDomain) -> None:
        self.domain = domain
        self.numeric = [c for c in domain.columns if isinstance(c, NumericColumn)]
        self.categorical = [c for c in domain.columns if isinstance(c, CategoricalColumn)]
        self.scale = 1.0 / math.sqrt(len(self.numeric) + len(self.categorical))

    @property
    def dim(self) -> int:
        """Record dimension: one per numeric column plus one per category."""
        return len(self.numeric) + sum(len(c.categories) for c in self.categorical)

    def encode(self, frame: pd.DataFrame) -> torch.Tensor:
        """Records ``(n, dim)`` with norm <= 1 for the rows of ``frame`` (which must hold the domain's columns)."""
        missing = [name for name in self.domain.names if name not in frame.columns]
        if missing:
            raise ValueError(f"the table lacks the domain's columns {missing}; pass a domain for this table.")
        blocks = []
        for column in self.numeric:
            values = pd.to_numeric(frame[column.name], errors="coerce").to_numpy(dtype=float)
            if np.isnan(values).any():
                raise ValueError(f"column {column.name!r} has missing or non-numeric values; impute them first.")
            unit = (np.clip(values, column.low, column.high) - column.low) / (column.high - column.low)
            blocks.append((2 * unit - 1)[:, None])
        for column in self.categorical:
            lookup = {category: index for index, category in enumerate(column.categories)}
            one_hot = np.zeros((len(frame), len(column.categories)))
            index = frame[column.name].map(lookup)
            rows = np.flatnonzero(index.notna().to_numpy())
            one_hot[rows, index.to_numpy()[rows].astype(int)] = 1.0
            blocks.append(one_hot)
        return torch.tensor(np.hstack(blocks) * self.scale, dtype=torch.float32)

    def decode(self, records: torch.Tensor, dtypes: dict[str, Any] | None = None) -> pd.DataFrame:
        """A table from records: clipped, rounded (integer columns), argmax categories, the domain's column
        order, and ``dtypes`` when given (e.g. the training table's)."""
        values = records.detach().cpu().double().numpy() / self.scale
        decoded: dict[str, Any] = {}
        position = 0
        for column in self.numeric:
            unit = np.clip((values[:, position] + 1) / 2, 0.0, 1.0)
            number = column.low + unit * (column.high - column.low)
            decoded[column.name] = np.round(number).astype(np.int64) if column.integer else number
            position += 1
        for column in self.categorical:
            block = values[:, position : position + len(column.categories)]
            decoded[column.name] = [column.categories[i] for i in block.argmax(axis=1)]
            position += len(column.categories)
        frame = pd.DataFrame({name: decoded[name] for name in self.domain.names})
        if dtypes is not None:
            for name, dtype in dtypes.items():
                if name in frame.columns:
                    frame[name] = frame[name].astype(dtype)
        return frame

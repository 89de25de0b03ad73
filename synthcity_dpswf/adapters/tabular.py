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


class MarginalTableCodec:
    r"""Rows <-> level codes for the marginal release (``privacy.mechanisms.marginal``), fixed by the domain.

    Column j gets :math:`K_j` fine levels: a categorical column its categories; an integer column one level per
    integer when its range holds at most ``fine_bins`` of them, else ``fine_bins`` equal bins of
    :math:`[\mathrm{low}, \mathrm{high} + 1)`; a float column ``fine_bins`` equal bins of
    :math:`[\mathrm{low}, \mathrm{high}]`. Values outside a numeric range are clipped to it (a per-row map).
    Categories outside a categorical column's list are an error with ``unknown="error"`` (a public domain:
    the table is outside it), and the column's first category with ``unknown="first"`` (a released domain,
    which drops rare categories by design).

    Decoding reads continuous level positions (``MarginalParticleSpace.to_records``): the floor is the level, the
    fraction places a number inside its bin. Output dtypes come from the domain, never from the private table:
    int64 for integer columns, float64 for float columns, the categories' own type for categorical ones.
    """

    def __init__(self, domain: TabularDomain, fine_bins: int = 100, unknown: str = "error") -> None:
        if isinstance(fine_bins, bool) or not isinstance(fine_bins, int) or fine_bins < 1:
            raise ValueError(f"fine_bins must be an integer >= 1, got {fine_bins!r}.")
        if unknown not in ("error", "first"):
            raise ValueError(f"unknown must be 'error' or 'first', got {unknown!r}.")
        self.domain = domain
        self.fine_bins = fine_bins
        self.unknown = unknown
        levels = []
        for column in domain.columns:
            if isinstance(column, CategoricalColumn):
                levels.append(len(column.categories))
            elif column.integer:
                span = math.floor(column.high) - math.ceil(column.low) + 1
                levels.append(max(1, min(span, fine_bins)))
            else:
                levels.append(fine_bins)
        self.levels: tuple[int, ...] = tuple(levels)

    def _numeric_range(self, column: NumericColumn) -> tuple[float, float]:
        """The interval the column's fine levels split evenly: [low, high + 1) for integers, [low, high] else."""
        if column.integer:
            return float(math.ceil(column.low)), float(math.floor(column.high) + 1)
        return column.low, column.high

    def encode(self, frame: pd.DataFrame) -> torch.Tensor:
        """Level codes ``(n, d)`` (float32 holding integers) of the rows of ``frame``."""
        missing = [name for name in self.domain.names if name not in frame.columns]
        if missing:
            raise ValueError(f"the table lacks the domain's columns {missing}; pass a domain for this table.")
        codes = np.zeros((len(frame), len(self.domain.columns)), dtype=np.float64)
        for position, (column, n_levels) in enumerate(zip(self.domain.columns, self.levels)):
            if isinstance(column, CategoricalColumn):
                lookup = {category: index for index, category in enumerate(column.categories)}
                index = frame[column.name].map(lookup)
                if bool(index.isna().any()):
                    if self.unknown == "error":
                        raise ValueError(
                            f"column {column.name!r} holds values outside the domain's categories; add them to the "
                            "domain or map them before fitting."
                        )
                    index = index.fillna(0)
                codes[:, position] = index.to_numpy(dtype=float)
            else:
                values = pd.to_numeric(frame[column.name], errors="coerce").to_numpy(dtype=float)
                if not np.isfinite(values).all():
                    raise ValueError(f"column {column.name!r} has missing, infinite or non-numeric values; clean them first.")
                low, high = self._numeric_range(column)
                clipped = np.clip(values, column.low, column.high)
                codes[:, position] = np.clip(np.floor((clipped - low) * n_levels / (high - low)), 0, n_levels - 1)  # exact for integers
        return torch.tensor(codes, dtype=torch.float32)

    def decode(self, positions: torch.Tensor) -> pd.DataFrame:
        """A table from continuous level positions ``(n, d)`` (floor = level), with the domain's dtypes."""
        values = positions.detach().cpu().double().numpy()
        decoded: dict[str, Any] = {}
        for position, (column, n_levels) in enumerate(zip(self.domain.columns, self.levels)):
            level = np.clip(np.floor(values[:, position]), 0, n_levels - 1)
            if isinstance(column, CategoricalColumn):
                decoded[column.name] = pd.Series(np.asarray(column.categories, dtype=object)[level.astype(int)]).infer_objects()
                continue
            fraction = np.clip(values[:, position] - level, 0.0, 1.0)
            low, high = self._numeric_range(column)
            number = low + (level + fraction) * (high - low) / n_levels  # product first: exact for one level per integer
            if column.integer:
                decoded[column.name] = np.clip(np.floor(number), low, high - 1).astype(np.int64)
            else:
                decoded[column.name] = np.clip(number, column.low, column.high).astype(np.float64)
        return pd.DataFrame({name: decoded[name] for name in self.domain.names})

r"""Tables <-> records in the unit ball, from a domain description that is public or paid for.

A ``TabularDomain`` lists each column as numeric (bounds, integer or not) or categorical (its categories).
``TabularEncoder`` maps a row to

.. math:: y = \frac{1}{\sqrt{m + c}} \big(u_1, \dots, u_m, e^{(1)}, \dots, e^{(c)}\big), \qquad
          u_i = 2 \frac{\mathrm{clip}(x_i) - \mathrm{low}_i}{\mathrm{high}_i - \mathrm{low}_i} - 1 \in [-1, 1],

with :math:`e^{(j)}` the one-hot vector of the j-th categorical column (zero for a category outside the
domain), so that :math:`\|y\| \le 1` for every row: the map is fixed by the domain, acts on each row alone,
and needs no budget. Decoding clips, rounds integer columns, takes the argmax of each one-hot block and
restores the column order, with dtypes from the domain (never from the private table).

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

from synthcity_dpswf.privacy.domain import DomainRelease, category_key, number_mask


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
    def from_release(cls, release: DomainRelease) -> "TabularDomain":
        """From a differentially private ``DomainRelease`` (budget paid): its columns in order, with the kinds,
        bounds and categories it released."""
        columns: list[Column] = []
        for name, kind in release.kinds.items():
            if kind == "categorical":
                columns.append(CategoricalColumn(name, release.categories[name]))
                continue
            low, high = release.bounds[name]
            if kind == "integer":  # integers in the bins [low, high) lie in [ceil(low), ceil(high) - 1]
                low, high = math.ceil(low), math.ceil(high) - 1
            columns.append(NumericColumn(name, low, high if high > low else low + 1, kind == "integer"))
        source = f"differentially private domain (epsilon = {release.epsilon:.4g}, delta = {release.delta:.3g})"
        return cls(tuple(columns), source)


class TabularEncoder:
    """Encode rows of a table into unit-ball records and decode records back (module docstring).

    ``unknown`` says what to do with a value the domain does not describe (a category outside a categorical
    column's list, a missing or non-numeric entry of a numeric column): ``"error"`` for a public domain (the
    table lies outside it, which ``fit`` reports before any release), ``"first"`` for a released domain, which
    drops rare categories and decides kinds by noisy counts: the category gets the zero one-hot block, the number
    the column's lower bound (a per-record map, never an error that one record could cause).
    """

    def __init__(self, domain: TabularDomain, unknown: str = "error") -> None:
        if unknown not in ("error", "first"):
            raise ValueError(f"unknown must be 'error' or 'first', got {unknown!r}.")
        self.domain = domain
        self.unknown = unknown
        self.numeric = [c for c in domain.columns if isinstance(c, NumericColumn)]
        self.categorical = [c for c in domain.columns if isinstance(c, CategoricalColumn)]
        self.scale = 1.0 / math.sqrt(len(self.numeric) + len(self.categorical))

    @property
    def dim(self) -> int:
        """Record dimension: one per numeric column plus one per category."""
        return len(self.numeric) + sum(len(c.categories) for c in self.categorical)

    def encode(self, frame: pd.DataFrame) -> torch.Tensor:
        """Records ``(n, dim)`` with norm <= 1 for the rows of ``frame`` (which must hold the domain's columns)."""
        check_columns(self.domain, frame)
        blocks = []
        for column in self.numeric:
            values = numeric_values(frame[column.name], column, self.unknown)
            unit = (np.clip(values, column.low, column.high) - column.low) / (column.high - column.low)
            blocks.append((2 * unit - 1)[:, None])
        for column in self.categorical:
            index = category_index(frame[column.name], column, self.unknown)
            one_hot = np.zeros((len(frame), len(column.categories)))
            rows = np.flatnonzero(index >= 0)
            one_hot[rows, index[rows]] = 1.0
            blocks.append(one_hot)
        return torch.tensor(np.hstack(blocks) * self.scale, dtype=torch.float32)

    def decode(self, records: torch.Tensor) -> pd.DataFrame:
        """A table from records: clipped, rounded (integer columns), argmax categories, the domain's column
        order and dtypes (int64 for integer columns, float64 for float ones, the categories' own type), never
        the private table's."""
        values = records.detach().cpu().double().numpy() / self.scale
        decoded: dict[str, Any] = {}
        position = 0
        for column in self.numeric:
            unit = np.clip((values[:, position] + 1) / 2, 0.0, 1.0)
            number = column.low + unit * (column.high - column.low)
            decoded[column.name] = np.round(number).astype(np.int64) if column.integer else number.astype(np.float64)
            position += 1
        for column in self.categorical:
            block = values[:, position : position + len(column.categories)]
            decoded[column.name] = category_values(column, block.argmax(axis=1))
            position += len(column.categories)
        return pd.DataFrame({name: decoded[name] for name in self.domain.names})


def check_columns(domain: TabularDomain, frame: pd.DataFrame) -> None:
    """Refuse a table that lacks some of the domain's columns (its column names are public)."""
    missing = [name for name in domain.names if name not in frame.columns]
    if missing:
        raise ValueError(f"the table lacks the domain's columns {missing}; pass a domain for this table.")


def numeric_values(values: pd.Series, column: NumericColumn, unknown: str) -> np.ndarray:
    """The numbers of a numeric column; a missing or non-numeric entry is an error (``unknown="error"``) or the
    column's lower bound (``"first"``)."""
    mask = number_mask(values)
    if pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values):
        numbers = values.to_numpy(dtype=float)
    else:
        numbers = np.array([float(v) if ok else np.nan for v, ok in zip(values.to_numpy(dtype=object), mask)], dtype=float)
    bad = ~mask
    if bad.any():
        if unknown == "error":
            raise ValueError(
                f"column {column.name!r} has missing or non-numeric values, outside its domain; clean them or "
                "describe the column as categorical."
            )
        numbers[bad] = column.low
    return numbers


def category_index(values: pd.Series, column: CategoricalColumn, unknown: str) -> np.ndarray:
    """Each entry's position in the column's categories, matched by ``category_key`` (1 and True are different
    categories); an entry outside them is an error (``unknown="error"``) or -1 (``"first"``: the encoders' stated
    default)."""
    lookup = {category_key(category): index for index, category in enumerate(column.categories)}
    index = np.array([lookup.get(category_key(value), -1) for value in values.to_numpy(dtype=object)], dtype=np.int64)
    if unknown == "error" and bool((index < 0).any()):
        raise ValueError(
            f"column {column.name!r} holds values outside the domain's categories; add them to the domain or map "
            "them before fitting."
        )
    return index


def category_values(column: CategoricalColumn, index: np.ndarray) -> pd.Series:
    """The categories at positions ``index``, with the type pandas infers from the categories themselves."""
    return pd.Series(np.asarray(column.categories, dtype=object)[index]).infer_objects()


class MarginalTableCodec:
    r"""Rows <-> level codes for the marginal release (``privacy.mechanisms.marginal``), fixed by the domain.

    Column j gets :math:`K_j` fine levels: a categorical column its categories; an integer column one level per
    integer when its range holds at most ``fine_bins`` of them, else ``fine_bins`` equal bins of
    :math:`[\mathrm{low}, \mathrm{high} + 1)`; a float column ``fine_bins`` equal bins of
    :math:`[\mathrm{low}, \mathrm{high}]`. Values outside a numeric range are clipped to it (a per-row map).
    Categories outside a categorical column's list, and missing or non-numeric entries of a numeric column, are
    an error with ``unknown="error"`` (a public domain: the table is outside it), and the column's first level
    with ``unknown="first"`` (a released domain, which drops rare categories and decides kinds by noisy counts).

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
        check_columns(self.domain, frame)
        codes = np.zeros((len(frame), len(self.domain.columns)), dtype=np.float64)
        for position, (column, n_levels) in enumerate(zip(self.domain.columns, self.levels)):
            if isinstance(column, CategoricalColumn):
                codes[:, position] = np.maximum(category_index(frame[column.name], column, self.unknown), 0)
            else:
                values = numeric_values(frame[column.name], column, self.unknown)
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
                decoded[column.name] = category_values(column, level.astype(int))
                continue
            fraction = np.clip(values[:, position] - level, 0.0, 1.0)
            low, high = self._numeric_range(column)
            number = low + (level + fraction) * (high - low) / n_levels  # product first: exact for one level per integer
            if column.integer:
                decoded[column.name] = np.clip(np.floor(number), low, high - 1).astype(np.int64)
            else:
                decoded[column.name] = np.clip(number, column.low, column.high).astype(np.float64)
        return pd.DataFrame({name: decoded[name] for name in self.domain.names})

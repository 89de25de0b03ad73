"""Tables' domains in synthcity's terms: a domain from what a user passes, and the synthcity ``Schema`` built from a
(public or released) domain, never from data."""

from __future__ import annotations

from typing import Any

import numpy as np

from synthcity.plugins.core.constraints import Constraints
from synthcity.plugins.core.distribution import (
    CategoricalDistribution,
    Distribution,
    FloatDistribution,
    IntegerDistribution,
)
from synthcity.plugins.core.schema import Schema

from synthcity_dpswf.adapters import NumericColumn, TabularDomain
from synthcity_dpswf.adapters.table_domain import output_categories

class DomainCategorical(CategoricalDistribution):
    """synthcity's ``CategoricalDistribution`` whose constraints also state the dtype (and the range of
    numeric categories), so that ``Schema.from_constraints``, which ``Plugin.generate`` calls, can rebuild it:
    without a dtype rule synthcity 0.2.12 takes the column for a float without bounds and fails."""

    nullable: bool = False
    """Whether the column may hold missing entries (a missing level, or not placed): then a bool column is object."""
    categorical_dtype: Any = None
    """A declared pandas ``CategoricalDtype``: the column's dtype (``Schema.adapt_dtypes`` keeps it)."""

    def dtype(self) -> Any:
        """synthcity's dtype of the choices, except that published True / False stay bool (synthcity says "int", and
        ``Schema.adapt_dtypes`` would cast them to 0 / 1) unless the column may be missing (object: NaN beside
        bools)."""
        if self.categorical_dtype is not None:
            return self.categorical_dtype
        if self.choices and all(isinstance(choice, (bool, np.bool_)) for choice in self.choices):
            return "object" if self.nullable else "bool"
        return super().dtype()

    def as_constraint(self) -> Constraints:
        rules = [(self.name, "in", list(self.choices))]
        if self.categorical_dtype is not None:
            return Constraints(rules=rules + [(self.name, "dtype", "category")])
        if self.dtype() != "bool":  # synthcity's Schema.from_constraints knows no "bool": bounds say it is no float
            rules.append((self.name, "dtype", self.dtype()))
        if self.dtype() != "object":
            rules += [(self.name, "ge", min(self.choices)), (self.name, "le", max(self.choices))]
        return Constraints(rules=rules)


class NullableInteger(IntegerDistribution):
    """synthcity's ``IntegerDistribution`` of a column with missing entries: its dtype is pandas' nullable Int64 (the
    decoders' output). Its constraints state the bounds only (synthcity lets missing entries pass every bound): their
    dtype rule would read "int" in the column's description, which an Int64 column's lacks, and synthcity's
    ``Schema.from_constraints`` knows no "Int64" to say instead."""

    def dtype(self) -> str:
        return "Int64"

    def as_constraint(self) -> Constraints:
        return Constraints(rules=[(self.name, "ge", self.low), (self.name, "le", self.high)])


def synthcity_schema(domain: TabularDomain) -> Schema:
    """The synthcity ``Schema`` of a domain, built from its (public or released) ranges, never from data."""
    distributions: dict[str, Distribution] = {}
    for column in domain.columns:
        if isinstance(column, NumericColumn):
            if column.integer:
                integer = NullableInteger if column.missing or not column.placed else IntegerDistribution
                distributions[column.name] = integer(name=column.name, low=int(column.low), high=int(column.high))
            else:
                distributions[column.name] = FloatDistribution(name=column.name, low=column.low, high=column.high)
        else:
            distributions[column.name] = DomainCategorical(
                name=column.name, choices=list(output_categories(column)), nullable=column.missing or not column.placed,
                categorical_dtype=column.dtype,
            )
    return Schema(domain=distributions)

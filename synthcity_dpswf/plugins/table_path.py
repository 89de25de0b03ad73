"""Tables through a plugin: synthcity's loaders in, the valid-table checks, the recipe that settles the domain, budget
and codec (``recipes.tables``), and generated rows back under synthcity's constraints: the synthcity ``Schema`` of the
table, built from its (public or released) domain, never from data (``synthcity_schema``)."""

from __future__ import annotations

import dataclasses
import math
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch
from synthcity.plugins.core.constraints import Constraints
from synthcity.plugins.core.dataloader import DataLoader, GenericDataLoader, create_from_info
from synthcity.plugins.core.distribution import (
    CategoricalDistribution,
    Distribution,
    FloatDistribution,
    IntegerDistribution,
)
from synthcity.plugins.core.schema import Schema

from synthcity_dpswf.adapters import CategoricalColumn, MarginalTableCodec, NumericColumn, TabularDomain
from synthcity_dpswf.adapters.partitioned import DaskCounts, computing, generate_parquet
from synthcity_dpswf.adapters.table_domain import output_categories
from synthcity_dpswf.models import DPSWGen, SlicedGenerator
from synthcity_dpswf.models.base import GeneratorSpec
from synthcity_dpswf.notices import DPSWFWarning
from synthcity_dpswf.plugins.paths import (
    Codec, FitInputs, GenerationContext, LoaderPath, PreparedData, draw_seed, loader_path,
)
from synthcity_dpswf.privacy import MECHANISMS
from synthcity_dpswf.privacy.counts import FrameCounts, check_table
from synthcity_dpswf.recipes.tables import Table, count_ahead, settle_table

CONSTRAINT_PROBE_DRAWS = 3
"""Draws ``TablePath.generate`` makes before judging whether the constraints can be met."""
CONSTRAINT_MAX_DRAWS = 30
"""The most rows ``TablePath.generate`` spends on constraints the generator rarely meets, in multiples of the count
asked for: once the rate of kept rows says ``count`` rows would take more, it stops with what it has and a warning
(synthcity's ``sampling_patience``, 500 draws of ``count`` rows each, can run a rare constraint for a long time with
neither a result nor an error)."""
DRAW_ROWS = 200_000
"""The most rows one later draw of ``TablePath.generate`` decodes at once (beyond ``count``), bounding its memory."""


RARE_CLASS_SHARE = 0.01
"""Below this released share of the rows, ``generate(cond=...)`` warns that a value's rows come from tables that hold
little but noise."""


def check_target_values(codec: MarginalTableCodec, position: int, values: pd.Series) -> None:
    """Refuse ``cond`` values outside the target column's domain: a category not in it (``column_codes``), a number
    outside an integer target's integers, a missing value where the column has no missing level."""
    column = codec.domain.columns[position]
    if isinstance(column, CategoricalColumn):
        return  # column_codes refuses a category outside the domain
    numbers = pd.to_numeric(values, errors="coerce").to_numpy(dtype=float)
    missing = values.isna().to_numpy()
    low, high = column.span
    bad = (~missing & (~np.isfinite(numbers) | (numbers < low) | (numbers >= high) | (numbers != np.floor(numbers))))
    bad |= missing & (not column.missing)
    if bad.any():
        raise ValueError(f"cond holds values outside the target {column.name!r}'s domain (the integers {low:g} to "
                         f"{high - 1:g}{', or missing' if column.missing else ''}): {sorted(set(map(str, values[bad])))[:5]}.")


class ConstraintsWarning(DPSWFWarning):
    """``generate`` returns fewer rows than asked for: the generator rarely (or never) meets the constraints (shown in a
    synthcity process as every ``DPSWFWarning``: ``notices``)."""


class TablePath:
    """A table (a ``GenericDataLoader`` or ``SurvivalAnalysisDataLoader``): records are the rows, encoded by a fixed
    map of the domain (levels for the marginal release, the unit ball for the others)."""

    default_release = "marginal"
    """Noisy one- and two-way tables of the level-coded rows, the statistics MST and AIM measure (McKenna et al.): on
    tables their 2-way TV is far below the record releases'."""

    def flow_defaults(self, codec: str | None, generator: str, release: str) -> dict[str, int]:
        """None: a table's flow settings are the release kind's (``models.KINDS``)."""
        return {}

    def prepare(self, inputs: FitInputs, X: DataLoader, loader: LoaderPath, spec: GeneratorSpec) -> PreparedData:
        """Check the table, settle its domain (a DP domain, accounted with the releases, where columns are
        undeclared) and the releases' noise (``spec``'s plan), and encode it."""
        frame = X.dataframe()
        check_table(frame)
        table = FrameCounts(frame)  # one factorization of each column of strings, for the counts and the codes
        prepared = self.settle(inputs, X, loader, table, len(frame), spec)
        return dataclasses.replace(prepared, records=table.encode(prepared.codec))

    def prepare_partitioned(self, inputs: FitInputs, table: DaskCounts, spec: GeneratorSpec) -> PreparedData:
        """A partitioned table (privacy.md, "Tables on Dask"): the same checks, domain and codec as ``prepare``, from
        counts summed over the partitions; no record is encoded here (the generator's release is summed from the
        partitions' level codes: ``DaskCounts.marginal_statistic``). DPSWflow with the marginal release only. n is
        the partitions' row counts summed under replace-one, and not read under add/remove."""
        if spec.generator_class.per_step:
            raise ValueError(f"{spec.name} releases fresh batches at every step, drawn from all records, which a "
                             "partitioned table does not give; fit it with dpswflow (one release, summed partition by "
                             "partition: privacy.md, \"Tables on Dask\").")
        if not MECHANISMS[spec.release].takes_level_codes:
            raise ValueError(f"a partitioned table is released as summed counts: leave release=None (the marginal "
                             f"release), not {spec.release!r}.")
        X = GenericDataLoader(pd.DataFrame(columns=table.columns))  # the column names only: no row, no dtype
        assert inputs.table is not None
        target = inputs.table.named_target(X, False, spec.release)  # a frame of names: only target_column
        loader = loader_path(X, spec.name, target=target)
        # the first pass counts what the domain will ask that no release chooses (the declared domain's check, ...)
        count_ahead(table, inputs.table.choices(spec.release, inputs.random_state, loader.target), inputs.budget.epsilon)
        n_records = table.n_rows() if inputs.budget.neighbouring.n_is_public else None  # n private: never read
        if n_records is not None and n_records < 2:
            raise ValueError(f"the table has {n_records} row(s); differential privacy over fewer than 2 rows is meaningless.")
        prepared = self.settle(inputs, X, loader, table, n_records, spec)
        info = dict(prepared.info, len=n_records or 0)
        return dataclasses.replace(prepared, info=info, partitioned=table)

    def settle(self, inputs: FitInputs, X: DataLoader, loader: LoaderPath, table: Table,
               n_records: int | None, spec: GeneratorSpec) -> PreparedData:
        """The domain, codec and layout of a table (a frame, or a partitioned table's counts) of ``n_records`` rows
        (``None``: not read, add/remove), with the part of the budget the domain paid and the releases' noise
        (``recipes.tables.settle_table``), in synthcity's schema and info; no record encoded."""
        assert inputs.table is not None
        n_public = None if n_records is None else inputs.budget.neighbouring.public_size(n_records)
        choices = inputs.table.choices(spec.release, inputs.random_state, loader.target)
        settled = settle_table(table, n_public, inputs.budget.for_records(n_public), choices, spec,
                               loader.public_rules(X))
        return PreparedData(
            records=None, labels=None, budget=settled.budget, noise_multiplier=settled.noise_multiplier,
            plan=settled.plan, n_public=n_public,
            codec=settled.codec, layout=settled.layout, schema=synthcity_schema(settled.domain),
            info=loader.public_info(X, settled.domain), paid=settled.paid, released_rows=settled.released_rows,
            one_way=settled.one_way, selection_part=settled.selection_part,
        )

    def generate(self, context: GenerationContext, generator: SlicedGenerator, codec: Codec, count: int,
                 syn_schema: Schema, cond: Any = None) -> DataLoader:
        """``count`` generated rows that meet ``syn_schema``'s constraints (with ``strict``; the user's as given:
        ``plugins.base.GenerationSchema``), as synthcity's ``_safe_generate`` makes them but without its ``drop_duplicates``: a synthetic table may repeat
        rows (one of a few discrete columns has fewer distinct rows than are asked for, and synthcity then looped to
        its patience, flowing ``count`` rows each time). Rows that meet the constraints are kept in the order drawn.

        The first draw is ``count`` rows, as without constraints. Where the constraints drop rows, each later draw
        asks for the rows still missing at the rate kept so far (20% more; with none kept yet, 2, then 4 times
        ``count``), drawn from one flow of at most ``count`` particles (``FlowSettings.flow_particles``: the marginal
        release redraws rows from flowed particles, ``ParticleSpace.resample``) rather than one flow per ``count``
        rows. At most ``sampling_patience`` draws and ``CONSTRAINT_MAX_DRAWS`` x ``count`` rows; fewer rows, with a
        warning, where after ``CONSTRAINT_PROBE_DRAWS`` draws the rate of kept rows says ``count`` would take more.

        ``cond`` (``count`` values of the named target, synthcity's ``generate(count, cond=...)``): rows conditioned on
        them (``generate_conditioned``)."""
        if cond is not None:
            return self.generate_conditioned(context, generator, codec, count, syn_schema, cond)
        # The rows' dtypes are the domain's by construction; synthcity's schema, rebuilt from constraints, would ask a
        # nullable integer column for "float" (``NullableInteger``): its dtype rules are left out.
        constraints = Constraints(rules=[rule for rule in syn_schema.as_constraints().rules if rule[1] != "dtype"])
        schema = context.schema
        limit = CONSTRAINT_MAX_DRAWS * count
        flowed = generator.settings.flowed(count)
        kept: list[pd.DataFrame] = []
        total = drawn = draw = 0
        size = count
        while draw < context.sampling_patience:
            draw += 1
            # DPSWGen draws rows from its trained network: no flow to reuse, and it takes no settings override
            overrides = {} if draw == 1 or isinstance(generator, DPSWGen) else {"flow_particles": flowed, "rows_per_particle": None}
            rows = schema.adapt_dtypes(codec.decode(generator.sample(size, seed=draw_seed(), **overrides)))
            drawn += len(rows)
            if context.strict:
                rows = constraints.match(rows)
            kept.append(rows)
            total += len(rows)
            rate = total / drawn
            if total >= count or drawn >= limit or (draw >= CONSTRAINT_PROBE_DRAWS and count - total > rate * (limit - drawn)):
                break
            wanted = math.ceil(1.2 * (count - total) / rate) if total else count * 2 ** draw
            size = min(wanted, limit - drawn, max(count, DRAW_ROWS))
        if total < count:
            warnings.warn(
                f"the constraints kept {total} of the {drawn} rows generated in {draw} draws, fewer than the {count} "
                f"asked for (at most {CONSTRAINT_MAX_DRAWS} x {count} rows are drawn), so generate returns {total} "
                "rows. The generator rarely (or never) produces rows that meet these constraints: loosen them, or "
                "ask for fewer rows.",
                ConstraintsWarning,
                stacklevel=8,  # the caller of generate (through synthcity's and pydantic's frames)
            )
        frame = pd.concat(kept, ignore_index=True).head(count) if kept else pd.DataFrame(columns=schema.features())
        return create_from_info(schema.adapt_dtypes(frame), context.data_info)

    def generate_conditioned(self, context: GenerationContext, generator: SlicedGenerator, codec: Codec, count: int,
                             syn_schema: Schema, cond: Any) -> DataLoader:
        """``count`` rows whose named target is ``cond`` (one value per row, in order): each row drawn from the class of
        its value (``Sampling.sample``'s ``class_sizes``: class c's particles flow to class c's tables), its target the
        value itself. A fit conditioned on a named target only; a value outside the target's domain is refused (a
        value of an integer target must be one of its integers). Rows that miss synthcity's constraints are dropped with
        a warning (redrawing them would change the values asked for); the rows kept keep ``cond``'s order."""
        layout = context.layout
        if layout is None or layout.condition is None or not isinstance(codec, MarginalTableCodec):
            raise ValueError("generate(cond=...) draws rows for given values of a named target whose tables are counted "
                             "per value: fit with target_tables='per_value' on a loader that names it "
                             "(GenericDataLoader(df, target_column=...)) or with target_column=..., or drop cond.")
        values = pd.Series(np.asarray(cond, dtype=object).reshape(-1))
        if len(values) != count:
            raise ValueError(f"cond holds {len(values)} values; give one per row asked for (count={count}).")
        check_target_values(codec, layout.condition, values)
        codes = torch.as_tensor(codec.column_codes(layout.condition, values, "error"), dtype=torch.long)
        classes = layout.coarse(codes, layout.condition)
        sizes = torch.bincount(classes, minlength=layout.classes)
        shares = generator.class_shares()
        rare = sorted({str(value) for value, label in zip(values, classes.tolist())
                       if shares is not None and float(shares[label]) < RARE_CLASS_SHARE})
        if rare:
            warnings.warn(f"cond asks for values {rare} of the target whose released share of the rows is below "
                          f"{RARE_CLASS_SHARE:.0%}: their rows are drawn from tables that hold little but noise at this "
                          "epsilon.", DPSWFWarning, stacklevel=8)
        records = generator.sample(count, seed=draw_seed(), class_sizes=sizes)
        rows = codec.decode(records)  # class after class: row i answers the i-th value of cond in class order
        rows.index = torch.argsort(classes, stable=True).numpy()
        rows = rows.sort_index()
        rows[codec.domain.names[layout.condition]] = values.to_numpy()
        schema = context.schema
        rows = schema.adapt_dtypes(rows)
        if context.strict:
            constraints = Constraints(rules=[rule for rule in syn_schema.as_constraints().rules if rule[1] != "dtype"])
            kept = constraints.match(rows)
            if len(kept) < count:
                warnings.warn(f"the constraints kept {len(kept)} of the {count} rows drawn for the values of cond; the "
                              "others are dropped (redrawing them would change the values asked for).",
                              ConstraintsWarning, stacklevel=8)
            rows = kept
        return create_from_info(schema.adapt_dtypes(rows.reset_index(drop=True)), context.data_info)

    def public_line(self, codec: Codec) -> str:
        return codec.public_description

    def generate_parquet(self, generator: SlicedGenerator, codec: Codec, folder: Path, count: int, chunk_size: int,
                         seed: int) -> int:
        """``count`` rows of a table fitted with the marginal release written chunk by chunk on Dask
        (``adapters.partitioned.generate_parquet``)."""
        if not isinstance(codec, MarginalTableCodec):
            raise ValueError("generate_parquet writes tables fitted with the marginal release; leave release=None.")
        with computing():
            return generate_parquet(generator, codec, count, chunk_size, seed, folder)


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

"""Tables through a plugin: the valid-table checks, the domain (declared, released, or both), the codec that the
release kind takes, and generated rows back under synthcity's constraints."""

from __future__ import annotations

import dataclasses
import math
import warnings
from pathlib import Path

import pandas as pd
from synthcity.plugins.core.constraints import Constraints
from synthcity.plugins.core.dataloader import DataLoader, GenericDataLoader, create_from_info
from synthcity.plugins.core.schema import Schema

from synthcity_dpswf.adapters import MarginalTableCodec, TabularDomain, TabularEncoder
from synthcity_dpswf.adapters.partitioned import DaskCounts, computing, generate_parquet
from synthcity_dpswf.adapters.resolution import FINE_LEVELS, needs_histogram, table_resolution
from synthcity_dpswf.models import SlicedGenerator
from synthcity_dpswf.models.schedule import pooled_count_noise
from synthcity_dpswf.plugins.loaders import LoaderPath, loader_path
from synthcity_dpswf.plugins.paths import Codec, FittingPlugin, PreparedData
from synthcity_dpswf.plugins.schema import resolve_domain, synthcity_schema
from synthcity_dpswf.privacy import MECHANISMS, MarginalLayout, PrivacyPart, secret_generator
from synthcity_dpswf.privacy.budget import Budget, TableBudget, default_domain_share
from synthcity_dpswf.privacy.domain import release_domain_at
from synthcity_dpswf.privacy.domain import OTHER_CATEGORY, DomainRelease
from synthcity_dpswf.privacy.validity import check_table



CONSTRAINT_PROBE_DRAWS = 3
"""Draws ``TablePath.generate`` makes before judging whether the constraints can be met."""
CONSTRAINT_MAX_DRAWS = 30
"""The most draws ``TablePath.generate`` spends on constraints the generator rarely meets: once the rate of kept rows
says ``count`` rows would take more, it stops with what it has and a warning (synthcity's ``sampling_patience``, 500
draws of ``count`` rows each, ran a rare constraint for 15 minutes with neither a result nor an error)."""


class TablePath:
    """A table (a ``GenericDataLoader`` or ``SurvivalAnalysisDataLoader``): records are the rows, encoded by a fixed
    map of the domain (levels for the marginal release, the unit ball for the others)."""

    default_release = "marginal"
    """Noisy one- and two-way tables of the level-coded rows (docs/flows.md: ahead of the record releases on tables)."""

    def prepare(self, plugin: FittingPlugin, X: DataLoader, loader: LoaderPath) -> PreparedData:
        """Check the table, settle its domain (a DP domain, accounted with the releases, where columns are
        undeclared) and encode it."""
        frame = X.dataframe()
        check_table(frame)
        prepared = self.settle(plugin, X, loader, frame, len(frame))
        return dataclasses.replace(prepared, records=prepared.codec.encode(frame))

    def prepare_partitioned(self, plugin: FittingPlugin, table: DaskCounts) -> PreparedData:
        """A partitioned table (privacy.md, "Tables on Dask"): the same checks, domain and codec as ``prepare``, from
        counts summed over the partitions; no record is encoded here (the generator's release is summed from the
        partitions' level codes: ``DaskCounts.marginal_statistic``). DPSWflow with the marginal release only. n is
        the partitions' row counts summed under replace-one, and not read under add/remove."""
        if plugin.generator_class.per_step:
            raise ValueError(f"{plugin.name()} releases fresh batches at every step, drawn from all records, which a "
                             "partitioned table does not give; fit it with dpswflow (one release, summed partition by "
                             "partition: privacy.md, \"Tables on Dask\").")
        if not MECHANISMS[plugin.release_kind()].takes_level_codes:
            raise ValueError(f"a partitioned table is released as summed counts: leave release=None (the marginal "
                             f"release), not {plugin.release_kind()!r}.")
        n_records = table.n_rows() if plugin.neighbouring == "replace_one" else None
        if n_records is not None and n_records < 2:
            raise ValueError(f"the table has {n_records} row(s); differential privacy over fewer than 2 rows is meaningless.")
        X = GenericDataLoader(pd.DataFrame(columns=table.columns))  # the column names only: no row, no dtype
        prepared = self.settle(plugin, X, loader_path(X, plugin.name()), table, n_records)
        info = dict(prepared.info, len=n_records or 0)
        return dataclasses.replace(prepared, info=info, partitioned=table)

    def settle(self, plugin: FittingPlugin, X: DataLoader, loader: LoaderPath, table: pd.DataFrame | DaskCounts,
               n_records: int | None) -> PreparedData:
        """The domain, codec and layout of a table (a frame, or a partitioned table's counts) of ``n_records`` rows
        (``None``: not read, add/remove), with the part of the budget the domain paid and the releases' noise,
        calibrated once to what it leaves; no record encoded."""
        n_public = None if n_records is None else plugin.public_size(n_records)
        budget = plugin.budget.for_records(n_public)
        # The loader's rules on declared columns are checked before any release (``table_domain`` checks them first).
        public = None if plugin.domain is None else resolve_domain(plugin.domain, plugin.max_one_hot)
        declared = set() if public is None else set(public.names)
        if public is not None:
            loader.public_domain(X, public, declared)
        domain, paid, release, budget = table_domain(plugin, table, public, n_public, budget)
        released_rows = None if release is None else release.released_rows
        domain = loader.public_domain(X, domain, declared)
        info = loader.public_info(X, domain)
        accountant, steps = plugin.release_plan(n_public, budget.prior)
        noise_multiplier = budget.noise_multiplier(accountant, steps)
        unknown = "error" if paid is None else "first"  # a released domain drops rare categories
        codec: TabularEncoder | MarginalTableCodec
        layout, one_way = None, {}
        if MECHANISMS[plugin.release_kind()].takes_level_codes:
            count_noise = pooled_count_noise(accountant, steps, noise_multiplier)
            fine_bins, coarse_bins = marginal_resolution(plugin, n_public, released_rows, count_noise, len(domain.columns))
            codec = MarginalTableCodec(domain, fine_bins, unknown)
            layout = MarginalLayout.build(codec.levels, coarse_bins, plugin.max_pairs, plugin.random_state, codec.missing)
            if release is not None and released_rows:
                one_way = codec.one_way_measurements(release)
        else:
            codec = TabularEncoder(domain, unknown)
        return PreparedData(
            records=None, labels=None, budget=budget, noise_multiplier=noise_multiplier, codec=codec, layout=layout,
            schema=synthcity_schema(domain), info=info, paid=paid, released_rows=released_rows, one_way=one_way,
        )

    def generate(self, plugin: FittingPlugin, generator: SlicedGenerator, codec: Codec, count: int,
                 syn_schema: Schema) -> DataLoader:
        """``count`` generated rows that meet ``syn_schema``'s constraints (with ``strict``), as synthcity's
        ``_safe_generate`` makes them but without its ``drop_duplicates``: a synthetic table may repeat rows (one of a
        few discrete columns has fewer distinct rows than are asked for, and synthcity then looped to its patience,
        flowing ``count`` rows each time). At most ``sampling_patience`` draws; rows that meet the constraints are
        kept in the order drawn; fewer, with a warning, where the rate of kept rows says that ``count`` would take more
        than ``CONSTRAINT_MAX_DRAWS`` draws."""
        # The rows' dtypes are the domain's by construction; synthcity's schema, rebuilt from constraints, would ask a
        # nullable integer column for "float" (``NullableInteger``): its dtype rules are left out.
        constraints = Constraints(rules=[rule for rule in syn_schema.as_constraints().rules if rule[1] != "dtype"])
        schema = plugin.training_schema()
        kept: list[pd.DataFrame] = []
        total = drawn = 0
        for draw in range(1, plugin.sampling_patience + 1):
            rows = schema.adapt_dtypes(codec.decode(generator.sample(count, seed=plugin.draw_seed())))
            drawn += len(rows)
            if plugin.strict:
                rows = constraints.match(rows)
            kept.append(rows)
            total += len(rows)
            if total >= count:
                break
            if draw >= CONSTRAINT_PROBE_DRAWS and draw + (count - total) / max(total / draw, 1e-12) > CONSTRAINT_MAX_DRAWS:
                warnings.warn(
                    f"the constraints kept {total} of the {drawn} rows generated in {draw} draws: at that rate {count} "
                    f"rows would take more than {CONSTRAINT_MAX_DRAWS} draws, so generate stops here with {total} "
                    "rows. The generator rarely (or never) produces rows that meet these constraints: loosen them, or "
                    "ask for fewer rows.",
                    stacklevel=4,
                )
                break
        frame = pd.concat(kept, ignore_index=True).head(count) if kept else pd.DataFrame(columns=schema.features())
        return create_from_info(schema.adapt_dtypes(frame), plugin.data_info)

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


def table_domain(
    plugin: FittingPlugin, table: pd.DataFrame | DaskCounts, declared: TabularDomain | None, n_public: int | None,
    budget: Budget,
) -> tuple[TabularDomain, PrivacyPart | None, DomainRelease | None, Budget]:
    """The domain of ``table``, the part of the budget it is (``None``: nothing paid), the DP domain's release and
    ``budget`` with that part spent: the ``declared`` (public, parsed) domain where given, a DP domain for the columns
    it leaves out and the value histograms of declared numeric columns that need them (``needs_histogram``, unless
    ``numeric_histograms=False``), with ``domain_epsilon_share`` of mu^2 of the one budget (privacy.md, "One budget");
    nothing paid when the declared domain covers everything."""
    epsilon = budget.epsilon
    undeclared = [column for column in table.columns if declared is None or column not in declared.names]
    histograms = {} if declared is None or not plugin.numeric_histograms or math.isinf(epsilon) else {
        column.name: (column.low, column.high, column.integer)
        for column in declared.columns if needs_histogram(column, FINE_LEVELS[1])
    }
    if declared is not None:  # a declared column's values must lie in it: refused before any release
        check_encodes(table, MarginalTableCodec(declared, FINE_LEVELS[1], "error"))
    if not undeclared and not histograms:
        assert declared is not None
        return declared, None, None, budget
    if math.isinf(epsilon):
        raise ValueError("with epsilon = inf there is no budget to share with a DP domain; pass a domain that "
                         "declares every column.")
    share = plugin.domain_epsilon_share
    if share is None:
        share = default_domain_share(n_public, len(undeclared), len(histograms), epsilon, budget.resolved_delta,
                                     budget.neighbouring)
    split = TableBudget(epsilon, budget.resolved_delta, share, typed=bool(undeclared))
    release = release_domain_at(
        columns_of(table, undeclared + list(histograms)), split.domain(), secret_generator(), budget.neighbouring,  # type: ignore[arg-type]
        declared=histograms,
    )
    warn_about(release, epsilon, share)
    what = f"kinds, ranges, value histograms and category sets of {len(undeclared)} columns" if undeclared else ""
    if histograms:
        what += ("; " if what else "") + f"value histograms of {len(histograms)} declared numeric columns"
    paid = PrivacyPart(
        "DP domain", release.epsilon, release.delta,
        f"Gaussian counts ({what}; z = {release.noise_multiplier:.3g}, {share:.3g} of mu^2"
        + (f", category threshold {release.threshold:.3g}: a category needs about {release.needed_rows:.0f} rows to be "
           "published)" if undeclared else ")"),
        release.other_adjacency(), threshold_delta=split.threshold_delta, threshold_epsilon=epsilon, accounted=True,
    )
    released = TabularDomain.from_release(release)
    domain = released if declared is None else declared.merged(released, list(table.columns))
    return domain, paid, release, budget.spend(split.domain().noise_multiplier, split.threshold_delta)


def check_encodes(table: pd.DataFrame | DaskCounts, codec: MarginalTableCodec) -> None:
    """Raise unless every row of ``table`` lies in ``codec``'s (declared) domain: before any release."""
    if isinstance(table, pd.DataFrame):
        codec.encode(table)
    else:
        table.check_encodes(codec)


def columns_of(table: pd.DataFrame | DaskCounts, columns: list[str]) -> pd.DataFrame | DaskCounts:
    """The counts the DP domain reads of ``columns`` of ``table`` (a frame's columns, or a partitioned table's)."""
    return table[columns] if isinstance(table, pd.DataFrame) else table.select(columns)


def marginal_resolution(
    plugin: FittingPlugin, n_public: int | None, released_rows: float | None, count_noise: float, n_columns: int,
) -> tuple[int, int]:
    """``(fine_bins, coarse_bins)`` of the marginal release: the plugin's where given, else ``table_resolution`` from
    the expected size (``n_public``, or under add/remove the DP domain's ``released_rows``) and the noise of a pooled
    count of the releases (``count_noise``, ``models.schedule.pooled_count_noise`` of the run's calibrated noise: public
    numbers and released ones only)."""
    if plugin.fine_bins is not None and plugin.coarse_bins is not None:
        return plugin.fine_bins, plugin.coarse_bins
    size = n_public if n_public is not None else released_rows
    if size is None or count_noise == 0:
        fine, coarse = table_resolution(None, 1.0)
    else:
        n_tables = n_columns + min(n_columns * (n_columns - 1) // 2, plugin.max_pairs or n_columns**2)
        unit = math.sqrt(2.0 if plugin.neighbouring == "replace_one" else 1.0)
        fine, coarse = table_resolution(size, count_noise * unit * math.sqrt(n_tables))
    return plugin.fine_bins or fine, plugin.coarse_bins or coarse


def warn_about(release: DomainRelease, epsilon: float, share: float | None = None) -> None:
    """Say what the DP domain could not place or publish, read from released counts and public numbers
    (post-processing). A noisy estimate is printed as one, with its noise std, never as a count. No warning names a
    column's missing entries: a column without any has an estimate between one and four stds in 16% of releases, so
    such a warning would mostly name columns with none (privacy.md, "Missing values")."""
    rough = [column for column, located in release.located.items() if not located and release.placed.get(column, True)]
    if rough:
        warnings.warn(
            f"the DP domain could not place the ranges of columns {rough} above its noise at the run's epsilon = {epsilon:.3g}: "
            "each is the densest window of its noisy bins, a rough range (plugin.released_domain() shows it). Declare "
            "them (domain={...}), or raise domain_epsilon_share.",
            stacklevel=5,
        )
    hidden = [column for column, placed in release.placed.items() if not placed]
    if hidden:
        kinds = {release.kinds[column] for column in hidden}
        needs = []
        if kinds - {"categorical"}:
            needs.append(
                f"a numeric column about {release.placement_rows:.0f} rows within one octave of values (k times as many "
                "spread over k octaves)"
            )
        if "categorical" in kinds:
            needs.append(f"a category about {release.needed_rows:.0f} rows")
        warnings.warn(
            f"the DP domain could not place columns {hidden} above its noise at the run's epsilon = {epsilon:.3g}: no range or "
            "category was released for them, so their synthetic values are missing entries only (the released domain, "
            f"per column: plugin.released_domain()). At this budget {' and '.join(needs)} to be placed with probability "
            f"95%. Declaring the columns (domain={{...}}: a range, categories) needs none of these rows, and declaring "
            "every column gives the flow the share of the budget the DP domain takes"
            + ("" if share is None else f" ({share:.0%} of mu^2, privacy.md \"One budget\")") + "; or raise "
            "domain_epsilon_share.",
            stacklevel=5,
        )
    if release.mixed:
        listed = ", ".join(
            f"{column!r} ({release.kinds[column]}; an estimated {100 * fraction:.0f}% of its entries, a noisy estimate, "
            f"are {'numbers' if release.kinds[column] == 'categorical' else 'not numbers'})"
            for column, fraction in release.mixed.items()
        )
        warnings.warn(
            f"the DP domain found columns that mix numbers and other entries: {listed}. Entries that do not fit a "
            "column's kind are mapped to a stated default (a numeric column's lower bound, a categorical column's "
            f"{OTHER_CATEGORY!r}). Convert them before fitting, or declare the column (categories as strings).",
            stacklevel=5,
        )
    if release.lost:
        def spread(column: str) -> float:  # the estimate's noise std (privacy.md, "The DP domain")
            published = len(release.categories[column]) - 1
            return math.sqrt(3 * release.count_std**2 + published * release.category_std**2)

        lost = ", ".join(
            f"{column!r} (an estimated {rows:.0f} rows, noise std {spread(column):.0f})" for column, rows in release.lost.items()
        )
        warnings.warn(
            f"the DP domain published no category below about {release.needed_rows:.0f} rows: the rarer categories of "
            f"{lost} are grouped as {OTHER_CATEGORY!r}. Declare those columns' categories (domain={{column: [...]}}) "
            "to keep them.",
            stacklevel=5,
        )

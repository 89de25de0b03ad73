"""The table plugins' base: ``dpswflow``, ``dpswflow_r`` and ``dpswgen`` fit a table (a synthcity ``DataLoader``, a
DataFrame, or for DPSWflow a Dask DataFrame or Parquet dataset), through ``plugins.table_path.TablePath``."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pandas as pd
from synthcity.plugins.core.dataloader import DataLoader, GenericDataLoader

from synthcity_dpswf.adapters.partitioned import DaskCounts, computing, is_partitioned, read_partitioned
from synthcity_dpswf.adapters.tabular import DomainSpec
from synthcity_dpswf.plugins.base import MOVED_IMAGE_ARGUMENTS, SlicedFlowPlugin
from synthcity_dpswf.plugins.options import IMAGE_ARGUMENTS, TableOptions
from synthcity_dpswf.plugins.paths import DataPath, FitInputs, LoaderPath, loader_path
from synthcity_dpswf.plugins.table_path import TablePath


class TablePlugin(SlicedFlowPlugin):
    """A plugin on tables.

    Args:
        domain, domain_epsilon_share, numeric_histograms, max_one_hot, time_horizons, coarse_bins, fine_bins,
            max_pairs, pair_selection, target_column, target_tables: how the table is described, encoded and
            tabulated (``options.TableOptions``; ``target_tables="per_value"`` flows one group per class: DPSWflow
            and DPSWflow-r).
        **kwargs: the ``SlicedFlowPlugin`` arguments (epsilon, delta, neighbouring, the release and the flow,
            synthcity's).
    """

    modality = "tables"
    foreign = {name: "it is an argument of the image plugins (image_dpswflow, image_dpswflow_r, image_dpswgen)"
               for name in (*IMAGE_ARGUMENTS, *MOVED_IMAGE_ARGUMENTS)}
    cond_hint = ("name the target column instead (GenericDataLoader(df, target_column=...) or target_column=...); "
                 "generate(count, cond=...) then draws rows for given values of it.")

    def __init__(
        self,
        domain: DomainSpec = None,
        domain_epsilon_share: float | None = None,
        numeric_histograms: bool = True,
        max_one_hot: int = 20,
        time_horizons: list[float] | None = None,
        coarse_bins: int | None = None,
        fine_bins: int | None = None,
        max_pairs: int | None = 120,
        pair_selection: str = "adaptive",
        target_column: str | None = None,
        target_tables: str = "pairs",
        **kwargs: Any,
    ) -> None:
        if target_tables == "per_value" and not self.generator_class.conditions_on_target:
            raise ValueError(f"{self.name()} trains one network for every row and cannot count its tables per value "
                             "of a target: use target_tables='pairs', or dpswflow / dpswflow_r.")
        table = TableOptions(domain, domain_epsilon_share, numeric_histograms, max_one_hot, time_horizons, coarse_bins,
                             fine_bins, max_pairs, pair_selection, target_column, target_tables)
        super().__init__(**kwargs)
        if self.flow_options.release is not None:  # the table recipe's rules on a named target, asked early
            table.choices(self.flow_options.release, self.random_state, table.target_column)
        self.table_options = table

    @staticmethod
    def type() -> str:
        return "privacy"

    def data_path(self) -> DataPath:
        return TablePath()

    def fit_inputs(self) -> FitInputs:
        return dataclasses.replace(super().fit_inputs(), table=self.table_options)

    def loader_for(self, X: DataLoader, named_target: bool, release: str) -> LoaderPath:
        """The loader's path, conditioned on the named target (``TableOptions.named_target``)."""
        target = self.table_options.named_target(X, named_target, release)
        return loader_path(X, self.name(), self.table_options.time_horizons, target)

    def fit_data(self, X: Any) -> None:
        """Fit on a tabular DataLoader (or DataFrame), with no non-private statistic of it; or on a table beyond one
        process, a Dask DataFrame or the path of a Parquet dataset (DPSWflow: counted partition by partition, on the
        running Dask client or Dask's threaded scheduler for the call; privacy.md, "Tables on Dask")."""
        if is_partitioned(X) or isinstance(X, (str, Path)):
            self._fit_partitioned(read_partitioned(X))
        else:
            self._fit_in_memory(GenericDataLoader(X) if isinstance(X, pd.DataFrame) else X,
                                named_target=not isinstance(X, pd.DataFrame))

    def _fit_partitioned(self, frame: Any) -> None:
        """Fit on a Dask DataFrame: the table path's domain and codec from summed counts, then one release summed
        from the partitions' level codes, its noise added once (``SlicedGenerator.fit_total``)."""
        path = TablePath()
        spec = self.generator_spec(path)
        with computing():
            prepared = path.prepare_partitioned(self.fit_inputs(), DaskCounts(frame), spec)
            self.path_ = path
            self._keep(prepared)
            self.generator_ = spec.build(prepared.n_public, prepared.layout)
            statistic = prepared.partitioned.marginal_statistic(prepared.codec, self.generator_.mechanism)
        n_records = prepared.n_public
        self.generator_.fit_total(statistic, len(prepared.codec.domain.columns), None, prepared.budget.release_delta,
                                  n_records=n_records, noise_multiplier=prepared.noise_multiplier,
                                  prior=prepared.budget.prior, plan=prepared.plan)
        self._finish(prepared, None if n_records is None else float(n_records))

    def generate_parquet(self, path: str | Path, count: int | None = None, chunk_size: int = 100_000,
                         seed: int | None = None) -> int:
        """Generate ``count`` table rows (default: the row count synthcity's ``generate`` makes) into the Parquet
        dataset at ``path`` (a folder of ``part-<i>.parquet`` files), one Dask task per chunk of ``chunk_size`` rows on
        the running Dask client or Dask's threaded scheduler for the call: chunk i is flowed with its own seed from
        ``seed`` (default ``random_state``), so the rows do not depend on the number of workers, and each task's
        memory is bounded by the chunk size. Output dtypes are the domain's: ``pd.read_parquet(path)`` gives
        ``generate``'s (object for categories), while Dask's reader, under its ``dataframe.convert-string`` option
        (its default), gives ``string[pyarrow]`` for a category column of strings (guide.md). synthcity's
        constraints are not applied (``generate`` applies them). Post-processing of the releases. Returns the rows
        written."""
        if self.generator_ is None or self.encoder_ is None or self.path_ is None:
            raise RuntimeError("fit the plugin first")
        total = int(self.data_info["len"] if count is None else count)
        return self.path_.generate_parquet(self.generator_, self.encoder_, Path(path), total, chunk_size,
                                           self.random_state if seed is None else seed)

    def released_domain(self) -> pd.DataFrame:
        """The domain a fitted table plugin generates from, one row per column (``TabularDomain.summary``): kind, range
        or categories, output dtype, whether it may be missing and whether the DP domain placed it. Public or
        released facts only."""
        codec = self.encoder_
        domain = getattr(codec, "domain", None)
        if domain is None:
            raise RuntimeError("fit the plugin on a table first")
        return domain.summary()

"""Tables beyond one process: a Dask DataFrame (or a Parquet dataset read by Dask) counted partition by partition
(privacy.md, "Tables on Dask").

Each partition computes exact integer counts (the DP domain's stages through ``privacy.counts.FrameCounts``, the
marginal release's tables through the release kind's own ``statistic`` of the partition's level codes); Dask sums
them in a tree; the caller adds the noise once, to the totals. Nothing else of a partition leaves the worker that
reads it. Dask is an optional dependency (``pip install -e ".[dask]"``): this module imports it only when a
partitioned table is fitted.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import re
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
import pandas as pd
import torch

from synthcity_dpswf.adapters.tabular import MarginalTableCodec
from synthcity_dpswf.models.chunks import ChunkSpec, chunk_plan
from synthcity_dpswf.privacy.counts import FrameCounts, TableRefusal, ValueCounts, check_table
from synthcity_dpswf.privacy.mechanisms import ReleaseMechanism

if TYPE_CHECKING:
    import dask.dataframe as dd

    from synthcity_dpswf.models import SlicedGenerator

LOCAL_THREADS = 2
"""Threads of the local cluster started for a call when no Dask client is running: one worker in the calling process
(no process is started, so a plain script without an ``if __name__ == "__main__":`` guard works, and nothing is
imported again; worker processes count no faster than threads, and each must import the package before it
starts)."""

CLUSTER_LOG_LEVEL = logging.WARNING
"""The least level ``distributed``'s loggers emit while the local cluster started for a call runs (its INFO lines,
about 130 a fit, are not shown); a failed task's own record is dropped whatever its level (``TaskFailures``)."""

Total = TypeVar("Total")


def is_partitioned(data: object) -> bool:
    """Whether ``data`` is a Dask DataFrame (without importing Dask when it is not installed or not used)."""
    module = type(data).__module__
    return module.startswith("dask") and hasattr(data, "to_delayed") and hasattr(data, "npartitions")


def read_partitioned(source: object) -> "dd.DataFrame":
    """A Dask DataFrame as given, or the Parquet dataset at a path (a file or a folder of files), read by Dask."""
    if is_partitioned(source):
        return source  # type: ignore[return-value]
    if isinstance(source, (str, Path)):
        dd = import_dask()
        return dd.read_parquet(str(source))
    raise TypeError(f"a partitioned table is a Dask DataFrame or a path to a Parquet dataset, got {type(source).__name__}.")


def import_dask() -> Any:
    """``dask.dataframe``, or an error that says how to install it."""
    try:
        import dask.dataframe as dd
    except ImportError as error:
        raise ImportError("fitting a Dask DataFrame or a Parquet dataset needs Dask: pip install -e \".[dask]\" "
                          "(dask[dataframe], distributed, pyarrow).") from error
    return dd


class PartitionError(TableRefusal):
    """A partition of a table could not be read or counted. Its message names the column where it can be known and
    never holds a value of a record; it carries no chained exception (privacy.md, "Tables on Dask")."""


class TaskFailures(logging.Filter):
    """Drops the record a Dask worker logs when a task fails (``distributed.worker``'s ``execute``: "Compute
    Failed", with the task's exception text, which may quote an entry of a record, as Dask's CSV reader's does)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.funcName != "execute"


@contextlib.contextmanager
def quiet_cluster_logs() -> Iterator[None]:
    """While a local cluster started for a call runs: every ``distributed`` logger at ``CLUSTER_LOG_LEVEL`` at
    least, and no failed task's record (``TaskFailures``); the levels and filters are restored afterwards."""
    names = ["distributed", *(name for name in list(logging.root.manager.loggerDict) if name.startswith("distributed."))]
    raised = [(logger, logger.level) for logger in map(logging.getLogger, names)
              if logger.getEffectiveLevel() < CLUSTER_LOG_LEVEL]
    worker, failures = logging.getLogger("distributed.worker"), TaskFailures()
    for logger, _ in raised:
        logger.setLevel(CLUSTER_LOG_LEVEL)
    worker.addFilter(failures)
    try:
        yield
    finally:
        worker.removeFilter(failures)
        for logger, level in raised:
            logger.setLevel(level)


@contextlib.contextmanager
def computing() -> Iterator[None]:
    """The Dask client the counts run on: the running one (a multi-machine ``dask.distributed`` cluster needs no
    change; its logs are its own), else a local cluster of ``LOCAL_THREADS`` threads in this process, started for the
    call and closed after it, that logs nothing below warnings and no failed task (``quiet_cluster_logs``)."""
    from distributed import Client, LocalCluster, get_client

    try:
        get_client()
    except ValueError:  # no client: an embedded local cluster for this call (started outside this handler, so that
        running = False  # no error of the call carries this one as its context)
    else:
        running = True
    if running:
        yield
        return
    with quiet_cluster_logs(), LocalCluster(n_workers=1, threads_per_worker=LOCAL_THREADS, processes=False,
                                            dashboard_address=None, silence_logs=CLUSTER_LOG_LEVEL) as cluster:
        with Client(cluster):
            yield


def dask_delayed(function: Callable[..., Any]) -> Any:
    """``dask.delayed(function)``, importing Dask only when a partitioned table is used."""
    import dask

    return dask.delayed(function)


def tree_sum(parts: list[Any], merge: Callable[[Total, Total], Total]) -> Total:
    """The sum of delayed per-partition results, merged pairwise in a balanced tree of delayed tasks, computed once:
    every partition's counts are in the total before anything is returned (a failed task fails the whole)."""
    import dask

    if not parts:
        raise ValueError("the partitioned table has no partitions.")
    level = parts
    while len(level) > 1:
        paired = [dask.delayed(merge)(level[i], level[i + 1]) for i in range(0, len(level) - 1, 2)]
        level = paired + ([level[-1]] if len(level) % 2 else [])
    (total,) = dask.compute(level[0])
    return total  # type: ignore[no-any-return]


def checked(part: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    """A partition with exactly the table's columns, in order, and inside the domain of valid datasets (its size
    aside: a partition may be empty or hold one row; the table's size is checked on the total)."""
    if list(part.columns) != columns:
        raise TableRefusal(f"a partition has columns {list(part.columns)} where the table has {columns}; every partition "
                         "must hold the same columns in the same order.")
    check_table(part, min_rows=0)
    return part


def merge_arrays(first: dict[str, np.ndarray], second: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    return {column: first[column] + second[column] for column in first}


def merge_values(first: dict[str, ValueCounts], second: dict[str, ValueCounts]) -> dict[str, ValueCounts]:
    merged = {}
    for column, one in first.items():
        other = second[column]
        categories = None
        if one.categories is not None and other.categories is not None:
            keys = dict(one.categories)
            for key, count in other.categories.items():
                keys[key] = keys.get(key, 0) + count
            categories = keys
        bins = None if one.bins is None or other.bins is None else one.bins + other.bins
        merged[column] = ValueCounts(categories, bins, one.missing + other.missing)
    return merged


def merge_atoms(first: dict[str, dict[float, int]], second: dict[str, dict[float, int]]) -> dict[str, dict[float, int]]:
    """Two partitions' atom counts summed value by value, keys in increasing order (as one frame's)."""
    merged = {}
    for column, one in first.items():
        total = dict(one)
        for value, count in second[column].items():
            total[value] = total.get(value, 0) + count
        merged[column] = dict(sorted(total.items()))
    return merged


def in_partition(function: Callable[..., Total]) -> Callable[..., Total]:
    """A partition's counting task whose failure leaves it as a ``PartitionError`` with no value of a record: the
    package's refusal of a table (``TableRefusal``, whose messages never hold a value) keeps its message; any other
    error (a library's or Python's, whose message may quote an entry) is named by its type only. Nothing is chained, so a worker's log of the failure holds no value either."""

    @functools.wraps(function)
    def counted(part: pd.DataFrame, *arguments: Any) -> Total:
        try:
            return function(part, *arguments)
        except Exception as error:  # every failure is re-raised below, without its text unless a refusal of ours
            message = str(error) if isinstance(error, TableRefusal) else (
                f"counting a partition failed with {type(error).__name__} (its message is not shown: it may quote an "
                "entry of a record); check that every column holds strings, bools, numbers or missing entries.")
        raise PartitionError(message)

    return counted


MISMATCHED_ROW = re.compile(r"^\|\s*(.*?)\s*\|\s*(.*?)\s*\|\s*(.*?)\s*\|\s*$")
"""A row of the table Dask's CSV reader prints of the columns whose dtype differs from the inferred one."""


def unreadable(error: Exception, columns: list[str]) -> PartitionError:
    """The error of a partition Dask could not read (a late block of a CSV file whose entries do not fit the dtype
    Dask inferred from the first rows): its type, the columns Dask's message names (only names of the table's columns
    are taken from it), what to do; none of its text otherwise. (A Parquet dataset whose files give a column other
    types is read file by file and fits: its entries are typed one by one, and the DP domain's warning names the
    column as mixing kinds.)"""
    named = [match.group(1) for match in map(MISMATCHED_ROW.match, str(error).splitlines())
             if match is not None and match.group(1) in columns and match.group(2) != "Found"]
    where = f" (column {', '.join(map(repr, dict.fromkeys(named)))})" if named else ""
    return PartitionError(
        f"Dask could not read a partition of the table{where}: {type(error).__name__}, its message not shown as it "
        "may quote an entry of a record. Dask types each column from the first rows it reads and fails on a later "
        "block whose entries do not fit: declare the dtypes when reading (dd.read_csv(path, dtype={...}); a numeric "
        "column holding some text as dtype 'object', then frame[column] = dd.to_numeric(frame[column], "
        "errors='coerce'), which makes that text a missing entry), or give every file of a Parquet dataset one "
        "schema (privacy.md, \"Tables on Dask\").")


@in_partition
def _type_counts(part: pd.DataFrame, table: list[str], columns: list[str]) -> dict[str, np.ndarray]:
    return FrameCounts(checked(part, table)).type_counts(columns)


@in_partition
def _rows_and_types(part: pd.DataFrame, table: list[str]) -> tuple[int, dict[str, np.ndarray]]:
    return len(part), FrameCounts(checked(part, table)).type_counts(table)


def merge_rows_and_types(first: tuple[int, dict[str, np.ndarray]],
                         second: tuple[int, dict[str, np.ndarray]]) -> tuple[int, dict[str, np.ndarray]]:
    return first[0] + second[0], merge_arrays(first[1], second[1])


@in_partition
def _value_counts(part: pd.DataFrame, table: list[str], plan: Mapping[str, np.ndarray | None]) -> dict[str, ValueCounts]:
    return FrameCounts(checked(part, table)).value_counts(plan)


@in_partition
def _histogram_counts(part: pd.DataFrame, table: list[str], plan: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    return FrameCounts(checked(part, table)).histogram_counts(plan)


@in_partition
def _atom_counts(part: pd.DataFrame, table: list[str], plan: Mapping[str, tuple[float, float]]) -> dict[str, dict[float, int]]:
    return FrameCounts(checked(part, table)).atom_counts(plan)


@in_partition
def _decimal_counts(part: pd.DataFrame, table: list[str], columns: list[str]) -> dict[str, np.ndarray]:
    return FrameCounts(checked(part, table)).decimal_counts(columns)


@in_partition
def _encodes(part: pd.DataFrame, table: list[str], codec: MarginalTableCodec) -> bool:
    codec.encode(checked(part, table))
    return True


@in_partition
def _marginal_statistic(part: pd.DataFrame, table: list[str], codec: MarginalTableCodec,
                        mechanism: ReleaseMechanism) -> torch.Tensor:
    codes = codec.encode(checked(part, table))
    return mechanism.statistic(mechanism.prepare(codes, "ball"), None)


class DaskCounts:
    """``privacy.counts.TableCounts`` of a Dask DataFrame: each stage one pass over the partitions (of the columns it
    counts: a Parquet dataset's other columns are not read), their exact counts summed by ``tree_sum`` (the sum over
    partitions is the sum over records: the same totals as one frame's, whatever the partitioning). A stage with
    nothing to count reads nothing; n and stage 1's counts of every column are read in one pass (``n_rows``).
    ``passes`` names the passes read so far, in order (shared with the ``select``-ed tables)."""

    def __init__(self, frame: "dd.DataFrame", passes: list[str] | None = None,
                 stage_one: dict[str, np.ndarray] | None = None) -> None:
        self.frame = frame
        self._columns = [str(column) for column in frame.columns]
        self.passes: list[str] = [] if passes is None else passes
        self._stage_one = stage_one
        """Stage 1's exact counts of every column, where ``n_rows`` has read them (``None``: not read)."""

    @property
    def columns(self) -> list[str]:
        return list(self._columns)

    def _each(self, function: Callable[..., Any], *arguments: Any, columns: list[str] | None = None) -> list[Any]:
        """``function(partition, its columns, *arguments)`` per partition of ``columns`` (default: all)."""
        import dask

        names = self._columns if columns is None else columns
        frame = self.frame if columns is None else self.frame[names]
        return [dask.delayed(function)(part, names, *arguments) for part in frame.to_delayed()]

    def _sum(self, parts: list[Any], merge: Callable[[Total, Total], Total], name: str) -> Total:
        """``tree_sum`` of partition tasks (pass ``name``) whose failure reaches the caller with no value of a record: a
        ``PartitionError`` of ours anew (without the remote traceback), a partition Dask could not read as
        ``unreadable``'s error; a failure of the cluster itself (``distributed``'s, a lost worker) as it is."""
        self.passes.append(name)
        try:
            return tree_sum(parts, merge)
        except PartitionError as error:
            failure = PartitionError(str(error))
        except Exception as error:
            if type(error).__module__.split(".")[0] == "distributed":
                raise
            failure = unreadable(error, self._columns)
        raise failure from None  # outside the handler: no __context__ either

    def type_counts(self, columns: list[str]) -> dict[str, np.ndarray]:
        if not columns:
            return {}
        if self._stage_one is not None:  # read with n (``n_rows``)
            return {column: self._stage_one[column] for column in columns}
        return self._sum(self._each(_type_counts, list(columns), columns=list(columns)), merge_arrays, "type_counts")

    def value_counts(self, plan: Mapping[str, np.ndarray | None]) -> dict[str, ValueCounts]:
        if not plan:
            return {}
        return self._sum(self._each(_value_counts, dict(plan), columns=list(plan)), merge_values, "value_counts")

    def histogram_counts(self, plan: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        if not plan:
            return {}
        return self._sum(self._each(_histogram_counts, dict(plan), columns=list(plan)), merge_arrays,
                         "histogram_counts")

    def atom_counts(self, plan: Mapping[str, tuple[float, float]]) -> dict[str, dict[float, int]]:
        if not plan:
            return {}
        return self._sum(self._each(_atom_counts, dict(plan), columns=list(plan)), merge_atoms, "atom_counts")

    def decimal_counts(self, columns: list[str]) -> dict[str, np.ndarray]:
        if not columns:
            return {}
        return self._sum(self._each(_decimal_counts, list(columns), columns=list(columns)), merge_arrays,
                         "decimal_counts")

    def n_rows(self) -> int:
        """n, the partitions' row counts summed: public under replace-one only (under add/remove never call it). Read in
        one pass with stage 1's exact counts of every column (``type_counts`` then reads no partition): the first pass
        of a fit under replace-one, before any release, as a separate pass would be."""
        rows, self._stage_one = self._sum(self._each(_rows_and_types), merge_rows_and_types, "n_rows")
        return int(rows)

    def marginal_statistic(self, codec: MarginalTableCodec, mechanism: ReleaseMechanism) -> torch.Tensor:
        """The marginal release's exact statistic of all records: each partition's level codes (``codec``) counted by
        ``mechanism.statistic``, summed (float64 holding integers, exact up to 2^53 records)."""
        return self._sum(self._each(_marginal_statistic, codec, mechanism), lambda first, second: first + second,
                         "marginal_statistic")

    def select(self, columns: list[str]) -> "DaskCounts":
        """The counts of some columns (a lazy column selection: nothing is read), sharing ``passes`` and stage 1's
        counts where read."""
        stage_one = None if self._stage_one is None else {column: self._stage_one[column] for column in columns}
        return DaskCounts(self.frame[columns], self.passes, stage_one)

    def check_encodes(self, codec: MarginalTableCodec) -> None:
        """Raise unless every partition's rows lie in ``codec``'s domain (``unknown="error"``): one pass, before any
        release (the first partition that refuses ends it, naming the column, never a value)."""
        self._sum(self._each(_encodes, codec), lambda first, second: first and second, "check_encodes")


def write_chunk(generator: "SlicedGenerator", codec: MarginalTableCodec, spec: ChunkSpec, folder: Path) -> int:
    """Chunk ``spec`` of a run: its rows flowed with the chunk's own seed, decoded with the domain's dtypes and written
    as ``part-<index>.parquet``; the number of rows written (post-processing of the releases: no private data)."""
    rows = codec.decode(generator.sample(spec.size, seed=spec.seed).cpu())
    rows.to_parquet(folder / f"part-{spec.index:06d}.parquet", index=False)
    return spec.size


def generate_parquet(generator: "SlicedGenerator", codec: MarginalTableCodec, count: int, chunk_size: int, seed: int,
                     folder: Path) -> int:
    """``count`` rows written to the Parquet dataset ``folder``, one Dask task per chunk of ``models.chunks.
    chunk_plan`` (chunk i flowed with ``chunk_seed(seed, i)``, so the rows do not depend on the number of workers),
    each task's memory bounded by the chunk size. Returns the rows written."""
    import dask

    folder.mkdir(parents=True, exist_ok=True)
    if any(folder.glob("part-*.parquet")):
        raise FileExistsError(f"{folder} already holds part-*.parquet files; write to an empty folder.")
    shared = dask.delayed(generator)  # one copy of the fitted model per worker, not one per task
    tasks = [dask.delayed(write_chunk)(shared, codec, spec, folder) for spec in chunk_plan(count, chunk_size, seed)]
    return int(tree_sum(tasks, lambda first, second: first + second))

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
import operator
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

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
"""Threads of Dask's threaded scheduler that runs a call's counts when no Dask client is running: in the calling
process, so that no process is started (a plain script without an ``if __name__ == "__main__":`` guard works, and
nothing is imported again) and no cluster either (an in-process ``distributed`` cluster cost about 0.25 s a pass of
40 partitions in scheduling alone, and logged about 130 INFO lines a fit: ``benchmarks/results/dask_floor.md``)."""

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


@contextlib.contextmanager
def computing() -> Iterator[None]:
    """Where the counts run: on the running ``dask.distributed`` client (a cluster of any size needs no change; its
    logs are its own), else on Dask's threaded scheduler with ``LOCAL_THREADS`` threads in this process, for the
    call (nothing started, so nothing to close and nothing logged)."""
    import dask

    try:
        from distributed import get_client

        get_client()
    except (ImportError, ValueError):  # no client (outside this handler: no error of the call carries this one)
        running = False
    else:
        running = True
    if running:
        yield
        return
    with dask.config.set(scheduler="threads", num_workers=LOCAL_THREADS):
        yield


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


Stage = Literal["rows", "type_counts", "value_counts", "histogram_counts", "atom_counts", "decimal_counts", "encodes",
                "marginal_statistic"]
"""What a pass counts: n (``"rows"``), a stage of the DP domain (a ``privacy.counts.TableCounts`` method), the check
that every row lies in a declared domain (``"encodes"``) or the marginal release's statistic."""

PER_COLUMN: tuple[Stage, ...] = ("type_counts", "value_counts", "histogram_counts", "atom_counts", "decimal_counts")
"""The DP domain's stages: a total per column, each column's its own (its plan entry's counts alone)."""


@dataclass(frozen=True)
class Request:
    """One total a pass computes: a stage of the DP domain of ``plan`` (per column: its edges, range, or None), n
    (``"rows"``, no plan), the check of a declared domain (``"encodes"``, plan: a codec whose ``unknown`` is
    ``"error"``) or the marginal release's statistic (``"marginal_statistic"``, plan: the codec and the mechanism)."""

    stage: Stage
    plan: Any = None

    def columns(self) -> list[str]:
        """The columns the request reads."""
        if self.stage in PER_COLUMN:
            return list(self.plan)
        if self.stage == "encodes":
            return list(self.plan.domain.names)
        if self.stage == "marginal_statistic":
            return list(self.plan[0].domain.names)
        return []


def partition_total(counts: FrameCounts, request: Request) -> Any:
    """``request``'s exact total over one partition (``counts``: the partition's ``FrameCounts``, shared by the
    pass's requests, so that a column of strings is factorized once a pass)."""
    if request.stage == "rows":
        return len(counts.frame)
    if request.stage == "encodes":
        counts.check_encodes(request.plan)  # raises a ``TableRefusal`` naming the column outside the declared domain
        return True
    if request.stage == "marginal_statistic":
        return counts.marginal_statistic(*request.plan)
    if request.stage in ("type_counts", "decimal_counts"):
        return getattr(counts, request.stage)(list(request.plan))
    return getattr(counts, request.stage)(request.plan)


@in_partition
def _counted(part: pd.DataFrame, table: list[str], requests: tuple[Request, ...]) -> tuple[Any, ...]:
    counts = FrameCounts(checked(part, table))
    return tuple(partition_total(counts, request) for request in requests)


MERGES: dict[Stage, Callable[[Any, Any], Any]] = {
    "rows": operator.add, "type_counts": merge_arrays, "value_counts": merge_values, "histogram_counts": merge_arrays,
    "atom_counts": merge_atoms, "decimal_counts": merge_arrays, "encodes": operator.and_,
    "marginal_statistic": operator.add,
}


def merge_totals(stages: tuple[Stage, ...], first: tuple[Any, ...], second: tuple[Any, ...]) -> tuple[Any, ...]:
    """Two partitions' totals of a pass's requests (of ``stages``), each summed by its stage's merge."""
    return tuple(MERGES[stage](one, other) for stage, one, other in zip(stages, first, second))


def same_plan(first: Any, second: Any) -> bool:
    """Whether two plan entries of one column ask for the same counts (edges, a range, or None)."""
    if first is None or second is None:
        return first is None and second is None
    if isinstance(first, np.ndarray) or isinstance(second, np.ndarray):
        return bool(np.array_equal(np.asarray(first, dtype=float), np.asarray(second, dtype=float)))
    return bool(first == second)


def uncovered(requests: list[Request], ahead: Request) -> Request | None:
    """``ahead`` less what ``requests`` already count (a column's equal plan entry at the same stage, the same domain's
    check, n): None where nothing is left."""
    same = [request for request in requests if request.stage == ahead.stage]
    if ahead.stage in PER_COLUMN:
        left = {column: entry for column, entry in ahead.plan.items()
                if not any(column in request.plan and same_plan(request.plan[column], entry) for request in same)}
        return Request(ahead.stage, left) if left else None
    if ahead.stage == "encodes":
        return None if any(request.plan.domain == ahead.plan.domain for request in same) else ahead
    return None if same and ahead.stage == "rows" else ahead


@dataclass
class CountMemory:
    """What the passes over a partitioned table have counted, shared by its ``select``-ed tables: each DP-domain
    stage's totals per column and plan entry, n, the declared domains checked, the requests announced for the next
    pass (``DaskCounts.count_ahead``) and the passes read so far, each named by its requests' stages."""

    passes: list[str] = field(default_factory=list)
    ahead: list[Request] = field(default_factory=list)
    totals: dict[tuple[str, str], list[tuple[Any, Any]]] = field(default_factory=dict)
    rows: int | None = None
    checked: list[Any] = field(default_factory=list)

    def recall(self, stage: Stage, column: str, entry: Any) -> Any | None:
        """The total of ``column`` for plan entry ``entry`` at ``stage``, where a pass has counted it."""
        for counted, total in self.totals.get((stage, column), []):
            if same_plan(counted, entry):
                return total
        return None

    def keep(self, request: Request, total: Any) -> None:
        if request.stage in PER_COLUMN:
            for column, entry in request.plan.items():
                self.totals.setdefault((request.stage, column), []).append((entry, total[column]))
        elif request.stage == "rows":
            self.rows = int(total)
        elif request.stage == "encodes" and request.plan.unknown == "error":
            self.checked.append(request.plan.domain)


class DaskCounts:
    """``privacy.counts.TableCounts`` of a Dask DataFrame: each pass reads the partitions once, of the columns its
    requests count (a Parquet dataset's other columns are not read), and sums their exact counts by ``tree_sum`` (the
    sum over partitions is the sum over records: the same totals as one frame's, whatever the partitioning). A pass
    counts what a stage asks for and what was announced for the next pass (``count_ahead``: n with stage 1's counts
    of every column, the declared domain's check and counts, the stage-2 counts the columns' dtypes make likely);
    a stage whose counts a pass already made reads nothing (privacy.md, "Passes over the data")."""

    def __init__(self, frame: "dd.DataFrame", memory: CountMemory | None = None,
                 columns: list[str] | None = None) -> None:
        self.frame = frame
        self._table = [str(column) for column in frame.columns]
        self._columns = list(self._table) if columns is None else list(columns)
        self.memory = CountMemory() if memory is None else memory

    @property
    def columns(self) -> list[str]:
        return list(self._columns)

    @property
    def passes(self) -> list[str]:
        """The passes read so far, in order, each named by its requests' stages."""
        return self.memory.passes

    @property
    def dtypes(self) -> dict[str, Any]:
        """The columns' dtypes in the frame's metadata (no partition is read): they choose what a pass counts ahead,
        never what is released."""
        return {column: self.frame.dtypes[column] for column in self._columns}

    def _each(self, function: Callable[..., Any], *arguments: Any, columns: list[str]) -> list[Any]:
        """``function(partition, its columns, *arguments)`` per partition of ``columns``."""
        import dask

        frame = self.frame if columns == self._table else self.frame[columns]
        shared = [dask.delayed(argument, traverse=False) for argument in arguments]  # one copy each, not one a task
        return [dask.delayed(function)(part, columns, *shared) for part in frame.to_delayed()]

    def _sum(self, parts: list[Any], merge: Callable[[Total, Total], Total], name: str) -> Total:
        """``tree_sum`` of partition tasks (pass ``name``) whose failure reaches the caller with no value of a record: a
        ``PartitionError`` of ours anew (without the remote traceback), a partition Dask could not read as
        ``unreadable``'s error; a failure of the cluster itself (``distributed``'s, a lost worker) as it is."""
        self.memory.passes.append(name)
        try:
            return tree_sum(parts, merge)
        except PartitionError as error:
            failure = PartitionError(str(error))
        except Exception as error:
            if type(error).__module__.split(".")[0] == "distributed":
                raise
            failure = unreadable(error, self._table)
        raise failure from None  # outside the handler: no __context__ either

    def _read(self, requests: list[Request]) -> tuple[Any, ...]:
        """One pass computing ``requests`` and the requests announced for it (``count_ahead``), all kept in
        ``memory``; ``requests``' totals, in order."""
        batch = tuple(requests + [left for left in map(functools.partial(uncovered, requests), self.memory.ahead)
                                  if left is not None])
        self.memory.ahead = []
        wanted = {column for request in batch for column in request.columns()}
        columns = [column for column in self._table if column in wanted] or self._table[:1]  # n alone: one column
        stages = tuple(request.stage for request in batch)
        totals = self._sum(self._each(_counted, batch, columns=columns), functools.partial(merge_totals, stages),
                           "+".join(stages))
        for request, total in zip(batch, totals):
            self.memory.keep(request, total)
        return totals[:len(requests)]

    def _per_column(self, stage: Stage, plan: Mapping[str, Any]) -> dict[str, Any]:
        """Stage ``stage``'s totals per column of ``plan``, reading only for the columns no pass has counted."""
        uncounted = {column: entry for column, entry in plan.items() if self.memory.recall(stage, column, entry) is None}
        if uncounted:
            self._read([Request(stage, uncounted)])
        return {column: self.memory.recall(stage, column, entry) for column, entry in plan.items()}

    def count_ahead(self, stage: Stage, plan: Any = None) -> None:
        """Announce counts a later call will likely ask for (with an equal plan entry per column): the next pass
        counts them besides its own. Announcing what is never asked for costs that pass time, nothing else: no count
        is released but where a stage asks for it, and its noise and order are the stage's."""
        if stage not in PER_COLUMN:
            self.memory.ahead.append(Request(stage, plan))
            return
        uncounted = {column: entry for column, entry in plan.items() if self.memory.recall(stage, column, entry) is None}
        if uncounted:
            self.memory.ahead.append(Request(stage, uncounted))

    def type_counts(self, columns: list[str]) -> dict[str, np.ndarray]:
        return self._per_column("type_counts", dict.fromkeys(columns))

    def value_counts(self, plan: Mapping[str, np.ndarray | None]) -> dict[str, ValueCounts]:
        return self._per_column("value_counts", plan)

    def histogram_counts(self, plan: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        return self._per_column("histogram_counts", plan)

    def atom_counts(self, plan: Mapping[str, tuple[float, float]]) -> dict[str, dict[float, int]]:
        return self._per_column("atom_counts", plan)

    def decimal_counts(self, columns: list[str]) -> dict[str, np.ndarray]:
        return self._per_column("decimal_counts", dict.fromkeys(columns))

    def n_rows(self) -> int:
        """n, the partitions' row counts summed: public under replace-one only (under add/remove never call it). Read in
        one pass with what was announced (``count_ahead``: a fit announces stage 1's counts of its typed columns), the
        first pass of a fit under replace-one, before any release."""
        if self.memory.rows is None:
            self._read([Request("rows")])
        assert self.memory.rows is not None
        return self.memory.rows

    def marginal_statistic(self, codec: MarginalTableCodec, mechanism: ReleaseMechanism) -> torch.Tensor:
        """The marginal release's exact statistic of all records: each partition's level codes (``codec``) counted by
        ``mechanism.statistic``, summed (float64 holding integers, exact up to 2^53 records)."""
        (statistic,) = self._read([Request("marginal_statistic", (codec, mechanism))])
        return statistic  # type: ignore[no-any-return]

    def select(self, columns: list[str]) -> "DaskCounts":
        """The counts of some columns (nothing is read), sharing ``memory``."""
        return DaskCounts(self.frame, self.memory, columns)

    def check_encodes(self, codec: MarginalTableCodec) -> None:
        """Raise unless every partition's rows lie in ``codec``'s domain (``unknown="error"``): before any release, in
        the first pass where announced (``count_ahead("encodes", codec)``), else in a pass of its own (the first
        partition that refuses ends it, naming the column, never a value)."""
        if codec.unknown != "error":
            raise ValueError("the check of a declared domain needs a codec that refuses unknown entries (unknown='error').")
        if codec.domain not in self.memory.checked:
            self._read([Request("encodes", codec)])


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

"""``dpswf table``: a synthetic copy of a CSV or Parquet table, and ``dpswf check``: what of it does not fit a schema.

``run_table`` reads the table, fits a table plugin (built by the command line from its options: ``dpswflow`` by
default), prints nothing itself but returns the privacy report, generates the rows and writes them, showing one
progress bar over those stages. The plugin is handed in (the plugins sit beside this module, not below it), so any
object with the plugins' ``fit``, ``generate`` and ``privacy_report`` serves.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import pandas as pd
from tqdm.auto import tqdm

from synthcity_dpswf.math.checks import check_positive_int
from synthcity_dpswf.privacy import PrivacyReport
from synthcity_dpswf.privacy.counts import TableRefusal

TABLE_FORMATS = {".csv": "CSV", ".parquet": "Parquet", ".pq": "Parquet"}
"""The file extensions ``read_table`` and ``write_table`` take, and their formats."""


class TablePlugin(Protocol):
    """What ``run_table`` asks of a plugin (the three plugins of ``synthcity_dpswf.plugins`` are such)."""

    def fit(self, X: Any) -> Any: ...

    def generate(self, count: int | None = None) -> Any: ...

    def privacy_report(self) -> PrivacyReport: ...


@dataclass(frozen=True)
class TableRun:
    """One ``dpswf table`` run: the privacy report, the rows written, where, and the seconds each stage took."""

    report: PrivacyReport
    rows: int
    out: Path
    seconds: dict[str, float]


def table_format(path: Path) -> str:
    """The format of ``path`` from its extension (``TABLE_FORMATS``), refused with the ones accepted otherwise."""
    suffix = path.suffix.lower()
    if suffix not in TABLE_FORMATS:
        raise ValueError(f"{path} is neither CSV nor Parquet: give a file ending in one of {sorted(TABLE_FORMATS)}.")
    return TABLE_FORMATS[suffix]


def read_table(path: Path) -> pd.DataFrame:
    """The table at ``path``, CSV or Parquet by its extension; a file the parser cannot read is refused with its error's
    type only (``TableRefusal``)."""
    kind = table_format(path)
    try:
        return pd.read_csv(path) if kind == "CSV" else pd.read_parquet(path)
    except (ValueError, UnicodeError) as error:  # a parser's message may quote the entry it stopped at
        failure = TableRefusal(f"{path} could not be read as {kind}: {type(error).__name__} (its message is not shown: "
                               "it may quote an entry of a record); check the file's encoding and format.")
    raise failure from None


def write_table(frame: pd.DataFrame, path: Path) -> None:
    """Write ``frame`` to ``path``, CSV or Parquet by its extension (no index column), creating its folder."""
    kind = table_format(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "CSV":
        frame.to_csv(path, index=False)
    else:
        frame.to_parquet(path, index=False)


def check_paths(source: Path, out: Path, rows: int | None) -> None:
    """Refuse, before anything is read, a source that is no CSV or Parquet file, an output of another format, or a
    row count that is not a positive integer (their messages name the user's own arguments)."""
    kind = table_format(source)
    if not source.is_file():
        raise ValueError(f"no table at {source}; give the path of a {kind} file.")
    table_format(out)
    if rows is not None:
        check_positive_int("rows", rows)


def run_table(source: Path, out: Path, plugin: TablePlugin, rows: int | None = None, progress: bool = True) -> TableRun:
    """Fit ``plugin`` on the table at ``source`` and write ``rows`` synthetic rows to ``out`` (``None``: the plugin's
    default count, the input's rows, or the released estimate of them under add/remove), with one progress bar over
    the stages (read, fit, generate, write). The paths and the count are checked first (``check_paths``); the
    output's format follows ``out``'s extension."""
    check_paths(source, out, rows)
    seconds: dict[str, float] = {}
    with tqdm(total=4, desc="dpswf table", unit="stage", disable=not progress) as bar:
        started = time.perf_counter()

        def stage(name: str) -> None:
            nonlocal started
            seconds[name] = time.perf_counter() - started
            started = time.perf_counter()
            bar.update(1)

        bar.set_postfix_str("reading")
        frame = read_table(source)
        stage("read")
        bar.set_postfix_str("fitting")  # never n: under add/remove it is private
        plugin.fit(frame)
        stage("fit")
        bar.set_postfix_str("generating")
        synthetic = plugin.generate(rows).dataframe()
        stage("generate")
        bar.set_postfix_str(f"writing {len(synthetic)} rows")
        write_table(synthetic, out)
        stage("write")
    return TableRun(plugin.privacy_report(), len(synthetic), out, seconds)

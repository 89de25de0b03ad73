"""Issue 44: a partitioned fit on the local cluster it starts quotes no value of a record in its error or its logs,
logs nothing of Dask's at INFO, runs from a plain script with no ``__main__`` guard, and its Parquet output reads back
with ``generate``'s dtypes (privacy.md, "Tables on Dask")."""

from __future__ import annotations

import logging
import subprocess
import sys
import textwrap
import traceback
import warnings
from pathlib import Path
from typing import Iterator

import numpy as np
import pandas as pd
import pytest

dask = pytest.importorskip("dask")
dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")

from synthcity.plugins import Plugins  # noqa: E402

import synthcity_dpswf  # noqa: E402,F401  (registers the plugins)
from synthcity_dpswf.adapters import partitioned  # noqa: E402
from synthcity_dpswf.adapters.partitioned import DaskCounts, PartitionError  # noqa: E402

PLANTED = "oops-planted-7731"
FAST = {"epsilon": 1.0, "n_steps": 50, "n_directions": 10}


class Records(logging.Handler):
    """Every record that reaches it, formatted with its traceback (the text a log would show)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def texts(self) -> list[str]:
        formatter = logging.Formatter()
        return [formatter.format(record) for record in self.records]


@pytest.fixture
def logs() -> Iterator[Records]:
    """A handler on the root and ``distributed`` loggers (Dask's own may not propagate), ``distributed`` at INFO
    as Dask's configuration sets it, and no Dask client running (the fit starts its own cluster)."""
    with pytest.raises(ValueError):
        distributed.get_client()
    handler, root, dask_logger = Records(), logging.getLogger(), logging.getLogger("distributed")
    level = dask_logger.level
    dask_logger.setLevel(logging.INFO)
    root.addHandler(handler)
    dask_logger.addHandler(handler)
    try:
        yield handler
    finally:
        root.removeHandler(handler)
        dask_logger.removeHandler(handler)
        dask_logger.setLevel(level)


def chain(error: BaseException) -> str:
    """The error's text, repr and formatted traceback, and those of every exception chained to it."""
    texts, seen = [], set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        texts += [str(error), repr(error), "".join(traceback.format_exception(error))]
        error = error.__cause__ or error.__context__  # type: ignore[assignment]
    return "\n".join(texts)


def late_stray_csv(path: Path) -> Path:
    """A CSV file whose float column ``x`` holds one string in its last rows, past the block Dask types it from."""
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"x": np.round(rng.normal(size=2000), 3).astype(object), "c": rng.choice(["a", "b"], 2000)})
    frame.loc[1900, "x"] = PLANTED
    frame.to_csv(path, index=False)
    return path


def test_a_stray_entry_dask_cannot_read_is_quoted_nowhere(logs: Records, tmp_path: Path) -> None:
    """Dask's reader fails on the late block ("could not convert string to float: '<entry>'"): the fit's error names
    the column and what to do, chains nothing, and no log record of the cluster it started holds the entry."""
    table = dd.read_csv(late_stray_csv(tmp_path / "late.csv"), blocksize=4_000)
    assert table.npartitions > 1 and table["x"].dtype == float
    with pytest.raises(PartitionError) as raised:
        Plugins().get("dpswflow", **FAST).fit(table)
    error = raised.value
    assert "column 'x'" in str(error) and "dtype=" in str(error) and "to_numeric" in str(error)
    assert error.__cause__ is None and error.__context__ is None
    assert PLANTED not in chain(error)
    assert not [text for text in logs.texts() if PLANTED in text]
    assert not [record for record in logs.records if record.name.startswith("distributed") and record.levelno <= logging.INFO]


def test_the_remedy_the_error_gives_fits_the_table(tmp_path: Path) -> None:
    """Read as the message says (dtype 'object', then ``dd.to_numeric(errors='coerce')``), the table fits: ``x``
    numeric, the stray entry a missing one."""
    table = dd.read_csv(late_stray_csv(tmp_path / "late.csv"), blocksize=4_000, dtype={"x": "object"})
    table["x"] = dd.to_numeric(table["x"], errors="coerce")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plugin = Plugins().get("dpswflow", **FAST).fit(table)
    assert plugin.released_domain().set_index("column").loc["x", "kind"] == "float"


def test_a_library_error_inside_a_partition_task_leaves_it_without_its_text(monkeypatch: pytest.MonkeyPatch) -> None:
    """A failure of pandas (or NumPy, torch) inside a counting task is re-raised in the task as a ``PartitionError``
    naming its type only, so a worker that logs the task's failure (a cluster the caller runs) logs no entry; this
    package's own refusals keep their message (the column and the reason)."""
    from synthcity_dpswf.privacy import counts

    def quoting(self: object, columns: list[str]) -> None:
        pd.to_numeric(pd.Series([PLANTED]))  # pandas: 'Unable to parse string "<entry>"'

    monkeypatch.setattr(counts.FrameCounts, "type_counts", quoting)
    frame = pd.DataFrame({"x": [1.0, 2.0, 3.0, 4.0]})
    with dask.config.set(scheduler="sync"), pytest.raises(PartitionError, match="failed with ValueError") as raised:
        DaskCounts(dd.from_pandas(frame, npartitions=2)).type_counts(["x"])
    assert PLANTED not in chain(raised.value) and raised.value.__context__ is None
    with pytest.raises(PartitionError, match=r"a partition has columns \['x'\] where the table has \['y'\]"):
        partitioned._counted(frame, ["y"], (partitioned.Request("type_counts", {"y": None}),))


def test_a_fit_and_a_parquet_run_log_nothing_at_info_and_restore_the_levels(logs: Records, tmp_path: Path) -> None:
    """Dask printed about 130 INFO lines a fit (its local cluster's start, workers, close); the cluster started for
    a fit or ``generate_parquet`` now logs none, and the loggers' levels are as they were after it."""
    rng = np.random.default_rng(1)
    frame = pd.DataFrame({"a": rng.integers(0, 5, 400), "b": rng.choice(["x", "y"], 400)})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plugin = Plugins().get("dpswflow", **FAST).fit(dd.from_pandas(frame, npartitions=3))
    plugin.generate_parquet(tmp_path / "rows", count=50)
    assert not [record.getMessage() for record in logs.records
                if record.name.startswith("distributed") and record.levelno <= logging.INFO]
    assert logging.getLogger("distributed").level == logging.INFO
    assert not logging.getLogger("distributed.worker").filters


def test_parquet_rows_read_back_with_generate_s_dtypes(tmp_path: Path) -> None:
    """pandas (pyarrow) reads ``generate_parquet``'s rows with ``generate``'s dtypes: object for categories (strings,
    bools, missing entries), Int64 for an integer column with missing entries. Dask types them from the Parquet
    schema: under its ``dataframe.convert-string`` option (its default) a category column of strings reads back as
    ``string``; with it off, the computed rows have ``generate``'s dtypes (privacy.md, "Tables on Dask")."""
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"age": rng.integers(18, 90, 600).astype(float), "income": np.round(rng.lognormal(10, 1, 600), 2),
                          "home": rng.choice(["own", "rent", "other"], 600).astype(object),
                          "flag": rng.choice([True, False], 600).astype(object)})
    frame.loc[:100, ["age", "home", "flag"]] = [np.nan, None, None]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plugin = Plugins().get("dpswflow", epsilon=5.0, n_steps=50, n_directions=10).fit(frame)
    plugin.generate_parquet(tmp_path / "rows", count=300, chunk_size=100, seed=3)  # three chunks on two threads
    expected = plugin.generate(50).dataframe().dtypes.to_dict()
    assert expected["home"] == object and str(expected["age"]) == "Int64"
    rows = pd.read_parquet(tmp_path / "rows")
    assert rows.dtypes.to_dict() == expected
    here = pd.concat([plugin.encoder_.decode(chunk.records) for chunk in plugin.generator_.sample_chunks(300, 100, seed=3)],
                     ignore_index=True)  # the threads share one model: the rows are still each chunk's own
    def missing_as_none(frame: pd.DataFrame) -> pd.DataFrame:  # Parquet gives None where decoding gives NaN
        return frame.astype(object).where(frame.notna(), None)

    assert missing_as_none(rows).equals(missing_as_none(here))
    with dask.config.set({"dataframe.convert-string": False}):
        assert dd.read_parquet(tmp_path / "rows").compute().dtypes.to_dict() == expected
    with dask.config.set({"dataframe.convert-string": True}):
        assert str(dd.read_parquet(tmp_path / "rows").dtypes["home"]).startswith("string")


PLAIN_SCRIPT = """
import numpy as np, pandas as pd
import dask.dataframe as dd
from synthcity_dpswf.adapters.partitioned import DaskCounts, computing
frame = pd.DataFrame({"a": np.arange(300) % 5, "b": np.where(np.arange(300) % 3, "x", "y")})
with computing():  # the cluster a fit or generate_parquet starts
    print("counted", DaskCounts(dd.from_pandas(frame, npartitions=2)).n_rows())
"""

PLAIN_PLUGIN_SCRIPT = """
import warnings
import numpy as np, pandas as pd
import dask.dataframe as dd
import synthcity_dpswf
from synthcity.plugins import Plugins
warnings.simplefilter("ignore")
frame = pd.DataFrame({"a": np.arange(300) % 5, "b": np.where(np.arange(300) % 3, "x", "y")})
plugin = Plugins().get("dpswflow", epsilon=1.0, n_steps=30, n_directions=8).fit(dd.from_pandas(frame, npartitions=2))
print("generated", len(plugin.generate(10).dataframe()))
"""


def run_plain(script: str, folder: Path) -> subprocess.CompletedProcess[str]:
    """``script`` run as a plain script (no ``if __name__ == "__main__":`` guard) in a fresh interpreter; it must
    succeed and print no INFO line of Dask's."""
    path = folder / "plain.py"
    path.write_text(textwrap.dedent(script))
    done = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=300, cwd=folder)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Nanny" not in done.stderr and ":INFO:" not in done.stderr and "INFO - " not in done.stderr
    return done


def test_a_plain_script_without_a_main_guard_counts_on_the_cluster_a_fit_starts(tmp_path: Path) -> None:
    """The local cluster started for a fit runs in the script's own process: no worker process imports the script
    again (which, unguarded, failed with Dask's "Nanny failed to start"), and it prints no INFO line of Dask's."""
    assert "counted 300" in run_plain(PLAIN_SCRIPT, tmp_path).stdout


@pytest.mark.slow
def test_a_plain_script_without_a_main_guard_fits_a_dask_table(tmp_path: Path) -> None:
    """The same through synthcity's API (about 20 s, most of it importing synthcity; the test above covers the
    cluster)."""
    assert "generated 10" in run_plain(PLAIN_PLUGIN_SCRIPT, tmp_path).stdout

"""Issue 37 through synthcity's API: DPSWflow fits a Dask DataFrame or a Parquet dataset on a two-worker local
cluster (privacy.md, "Tables on Dask"); the per-step generators refuse one; bad input ends the fit before any
release."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Iterator

import numpy as np
import pandas as pd
import pytest
import torch

dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")
dask_config = pytest.importorskip("dask").config

from synthcity.plugins import Plugins  # noqa: E402

import synthcity_dpswf  # noqa: E402,F401  (registers the plugins)
from synthcity_dpswf.adapters import partitioned  # noqa: E402
from synthcity_dpswf.privacy.domain import release as dp_domain  # noqa: E402


def survey(n: int = 3000, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "age": rng.integers(18, 90, n), "income": np.round(rng.lognormal(10, 1, n), 2),
        "home": rng.choice(["own", "rent", "other"], n, p=[0.5, 0.4, 0.1]), "flag": rng.choice([True, False], n),
    })


@pytest.fixture(scope="module")
def cluster() -> Iterator[None]:
    """One two-worker local cluster for the module (``adapters.partitioned.computing`` uses a running client)."""
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None) as local:
        with distributed.Client(local):
            yield


FAST = {"epsilon": 1.0, "n_steps": 100, "n_directions": 20}


def fitted(plugin: object, data: object) -> object:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return plugin.fit(data)  # type: ignore[attr-defined]


def test_dpswflow_fits_a_dask_dataframe_and_a_parquet_dataset(cluster: None, tmp_path: Path,
                                                            seeded_release_noise: None) -> None:
    frame = survey()
    plugin = fitted(Plugins().get("dpswflow", **FAST), dd.from_pandas(frame, npartitions=5))
    rows = plugin.generate(200).dataframe()
    assert len(rows) == 200 and list(rows.columns) == list(frame.columns)
    assert rows["age"].dtype.kind == "i" and rows["flag"].dtype == bool and set(rows["home"]) <= {"own", "rent", "other"}
    report = str(plugin.privacy_report())
    assert "one release of all n = 3000 records" in report and "DP domain" in report
    folder = tmp_path / "survey"
    folder.mkdir()
    for part, chunk in enumerate(np.array_split(frame, 3)):
        chunk.to_parquet(folder / f"part-{part}.parquet")
    from_path = fitted(Plugins().get("dpswflow", **FAST), str(folder))
    assert len(from_path.generate(50).dataframe()) == 50


def test_add_remove_reads_no_row_count(cluster: None, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(self: object) -> int:
        raise AssertionError("n was read under add/remove")

    monkeypatch.setattr(partitioned.DaskCounts, "n_rows", refuse)
    plugin = fitted(Plugins().get("dpswflow", neighbouring="add_remove", **FAST), dd.from_pandas(survey(), npartitions=3))
    assert "add/remove" in str(plugin.privacy_report()) and len(plugin.generate(20).dataframe()) == 20


@pytest.mark.parametrize("name", ["dpswflow_r", "dpswgen"])
def test_the_per_step_generators_refuse_a_partitioned_table(name: str) -> None:
    with pytest.raises(ValueError, match="fit it with dpswflow"):
        Plugins().get(name).fit(dd.from_pandas(survey(50), npartitions=2))


def test_values_outside_a_declared_domain_end_the_fit_before_any_release(
    cluster: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_noise(*args: object, **kwargs: object) -> None:
        raise AssertionError("a release was made")

    monkeypatch.setattr(dp_domain, "noisy_counts", no_noise)
    declared = {"age": (18, 90), "income": (0.0, 1e7), "home": ["own", "rent"], "flag": [True, False]}
    with pytest.raises(ValueError, match="home"):  # a category outside the declared list (a range clips instead)
        Plugins().get("dpswflow", domain=declared, **FAST).fit(dd.from_pandas(survey(), npartitions=4))


def test_generation_to_parquet_does_not_depend_on_the_workers(cluster: None, tmp_path: Path) -> None:
    """Rows written chunk by chunk on the cluster are the rows of the same chunks made in this process (chunk i flowed
    with its own seed), with the domain's dtypes; a folder that already holds parts is refused."""
    plugin = fitted(Plugins().get("dpswflow", **FAST), survey())
    written = plugin.generate_parquet(tmp_path / "rows", count=2500, chunk_size=1000, seed=7)
    rows = pd.read_parquet(tmp_path / "rows")
    assert written == len(rows) == 2500 and len(list((tmp_path / "rows").glob("part-*.parquet"))) == 3
    here = pd.concat([plugin.encoder_.decode(chunk.records) for chunk in plugin.generator_.sample_chunks(2500, 1000, seed=7)],
                     ignore_index=True)
    assert list(rows.dtypes) == list(here.dtypes)
    pd.testing.assert_frame_equal(rows, here, check_exact=False, atol=1e-6)
    with pytest.raises(FileExistsError, match="empty folder"):
        plugin.generate_parquet(tmp_path / "rows", count=10)


def test_a_fit_that_fails_after_the_domain_leaves_the_earlier_fit(cluster: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """A failure of the cluster after the DP domain was released (here: the marginal pass) ends the fit with the error
    and the plugin keeps nothing of it: its earlier fit, report and domain stay as they were."""
    plugin = fitted(Plugins().get("dpswflow", **FAST), survey())
    report, domain = str(plugin.privacy_report()), plugin.released_domain()

    def lost(*args: object) -> None:
        raise RuntimeError("worker lost")

    monkeypatch.setattr(partitioned.DaskCounts, "marginal_statistic", lost)
    with pytest.raises(RuntimeError, match="worker lost"):
        fitted(plugin, dd.from_pandas(survey(seed=1), npartitions=3))
    assert str(plugin.privacy_report()) == report
    pd.testing.assert_frame_equal(plugin.released_domain(), domain)
    assert len(plugin.generate(10).dataframe()) == 10


def killing_partition(marker: Path, every_time: bool) -> object:
    """A partition function that ends its worker's process (as a machine lost mid-fit would) when it computes
    partition 1: once (then a marker file says so) or every time. Nested, so it is pickled by value to the workers."""
    import os

    def kill(partition: pd.DataFrame, partition_info: dict | None = None) -> pd.DataFrame:
        if partition_info is not None and partition_info["number"] == 1 and (every_time or not marker.exists()):
            marker.touch()
            os._exit(1)
        return partition

    return kill


@pytest.mark.parametrize("every_time", [False, True])
def test_a_worker_lost_mid_fit_is_recomputed_or_ends_the_fit_before_any_release(
    every_time: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker process that dies while counting a partition: Dask recomputes the partition elsewhere and the fit
    counts every row (the report's n is the table's); a partition that kills every worker it meets ends the fit
    with Dask's error, before any release (the domain's noise is never drawn), never with a sum of some partitions."""
    frame = survey()
    table = dd.from_pandas(frame, npartitions=3).map_partitions(killing_partition(tmp_path / "killed", every_time),
                                                                meta=frame.iloc[:0])
    released: list[int] = []
    noisy_counts = dp_domain.noisy_counts

    def counted(*args: object, **kwargs: object) -> object:
        released.append(1)
        return noisy_counts(*args, **kwargs)

    monkeypatch.setattr(dp_domain, "noisy_counts", counted)
    with dask_config.set({"distributed.scheduler.allowed-failures": 1}):
        with distributed.LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None) as local:
            with distributed.Client(local):
                plugin = Plugins().get("dpswflow", **FAST)
                if every_time:
                    with pytest.raises(distributed.scheduler.KilledWorker):
                        fitted(plugin, table)
                    assert not released and not plugin.fitted
                    return
                fitted(plugin, table)
    assert (tmp_path / "killed").exists() and released  # a worker was lost, and the fit went on
    assert "one release of all n = 3000 records" in str(plugin.privacy_report())


ALL = ["age", "income", "home", "flag"]


LATER = [("histogram_counts+decimal_counts", ["age", "income"]), ("atom_counts", ["income"]), ("marginal_statistic", ALL)]


@pytest.mark.parametrize(("declared", "neighbouring", "expected"), [
    (False, "replace_one", [("rows+type_counts+value_counts+value_counts", ALL), *LATER]),
    (False, "add_remove", [("type_counts+value_counts+value_counts", ALL), *LATER]),  # no n, no request twice
    (True, "replace_one", [("rows+encodes+histogram_counts+atom_counts", ALL), ("marginal_statistic", ALL)]),
    (True, "add_remove", [("encodes+histogram_counts+atom_counts", ALL), ("marginal_statistic", ALL)]),
])
def test_a_fit_reads_the_partitions_in_the_passes_privacy_md_states(cluster: None, declared: bool, neighbouring: str,
                                                                    expected: list[tuple[str, list[str]]],
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """privacy.md ("Tables on Dask", the passes): with no schema, a first pass of n, stage 1's counts of every column
    and the stage-2 counts their dtypes make likely (the integer bins of an integer column, both kinds' bins of a float
    one, the categories of the others: two requests), which stage 2 then reads; stage 3 of the numeric columns with
    the float column's precision counts (fixed by stage 1's kinds); its atoms (their range is stage 3's); the marginal
    release. With every column declared, one pass of n, the domain check and the declared float column's value
    histogram and atoms (their plans are its declared range; no precision counts: its decimals are declared), then
    the release. Under add/remove the same passes without n, the first stage's own request counted once. Each pass once, in that order, reading only its columns: the tasks each pass
    computes are counted, one a partition."""
    passes: list[tuple[str, list[str]]] = []
    each, original_sum = partitioned.DaskCounts._each, partitioned.DaskCounts._sum

    def counted_each(self: partitioned.DaskCounts, function: object, *arguments: object,
                     columns: list[str] | None = None) -> list[object]:
        parts = each(self, function, *arguments, columns=columns)  # type: ignore[arg-type]
        passes.append(("", list(self.columns if columns is None else columns)))
        assert len(parts) == 4  # one task a partition
        return parts

    def counted_sum(self: partitioned.DaskCounts, parts: list[object], merge: object, name: str) -> object:
        passes[-1] = (name, passes[-1][1])
        return original_sum(self, parts, merge, name)  # type: ignore[arg-type]

    monkeypatch.setattr(partitioned.DaskCounts, "_each", counted_each)
    monkeypatch.setattr(partitioned.DaskCounts, "_sum", counted_sum)
    domain = {"age": (18, 89), "income": {"type": "numeric", "low": 0.0, "high": 1e6, "decimals": 2},
              "home": ["own", "rent", "other"], "flag": [True, False]} if declared else None
    fitted(Plugins().get("dpswflow", domain=domain, neighbouring=neighbouring, **FAST),
           dd.from_pandas(survey(), npartitions=4))
    assert passes == expected


def seeded_from_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every release of the next fit draws its noise from generators seeded 1, 2, ... (conftest's
    ``seeded_release_noise``, restarted)."""
    calls = iter(range(1, 10_000))
    for module in ("synthcity_dpswf.models.releasing", "synthcity_dpswf.recipes.tables"):
        monkeypatch.setattr(f"{module}.secret_generator",
                            lambda seed=None: torch.Generator().manual_seed(next(calls) if seed is None else seed))


@pytest.mark.parametrize("declared", [False, True], ids=["no schema", "declared"])
def test_counting_ahead_changes_no_release(cluster: None, declared: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """privacy.md ("Passes over the data"): what the first passes count ahead (the declared domain's check and
    counts, the stage-2 counts a column's dtype makes likely, the precision counts stage 1 fixes) is what the stages
    ask for, counted the same: with the same noise, the fit gives the same domain and releases, bit for bit, as one
    that counts each stage in a pass of its own, in fewer passes; a guess that misses (numbers stored as Python
    objects, guessed categorical, released integer) is counted when its stage asks."""
    frame = survey().assign(code=lambda table: pd.Series(table["age"] % 7, dtype=object))
    domain = {"age": (18, 89), "income": {"type": "numeric", "low": 0.0, "high": 1e6}, "home": ["own", "rent", "other"],
              "flag": [True, False]} if declared else None
    outcomes = []
    for ahead in (True, False):
        passes: list[str] = []
        original_sum = partitioned.DaskCounts._sum
        with monkeypatch.context() as patch:
            seeded_from_one(patch)
            patch.setattr(partitioned.DaskCounts, "_sum", lambda self, parts, merge, name:
                          passes.append(name) or original_sum(self, parts, merge, name))
            if not ahead:
                patch.setattr(partitioned.DaskCounts, "count_ahead", lambda self, stage, plan=None: None)
            with dask_config.set({"dataframe.convert-string": False}):  # the object column stays objects
                plugin = fitted(Plugins().get("dpswflow", domain=domain, **FAST), dd.from_pandas(frame, npartitions=4))
        pool = plugin.generator_._pool()
        outcomes.append((passes, plugin.released_domain(), pool.releases, pool.noise_std))
    (passes, domain_ahead, releases, stds), (alone, domain_alone, releases_alone, stds_alone) = outcomes
    pd.testing.assert_frame_equal(domain_ahead, domain_alone)
    assert torch.equal(releases, releases_alone) and torch.equal(stds, stds_alone)
    assert len(passes) < len(alone)
    if not declared:  # the object column's integer bins: a pass of their own (with the precision counts)
        assert passes[:2] == ["rows+type_counts+value_counts+value_counts", "value_counts+decimal_counts"]

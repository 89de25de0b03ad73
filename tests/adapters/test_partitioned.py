"""Issue 37: a table counted partition by partition on Dask gives exactly the in-memory counts, whatever the
partitioning, and its releases add the noise once (privacy.md, "Tables on Dask")."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import torch

dask = pytest.importorskip("dask")
dd = pytest.importorskip("dask.dataframe")

from synthcity_dpswf.adapters import MarginalTableCodec, TabularDomain  # noqa: E402
from synthcity_dpswf.adapters.partitioned import DaskCounts  # noqa: E402
from synthcity_dpswf.models import DPSWFlow  # noqa: E402
from synthcity_dpswf.privacy import MarginalLayout  # noqa: E402
from synthcity_dpswf.privacy.counts import FrameCounts  # noqa: E402
from synthcity_dpswf.privacy.domain.columns import histogram_edges, stage_two_edges  # noqa: E402


def survey(n: int = 400, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({
        "age": rng.integers(18, 90, n),
        "income": np.round(rng.lognormal(10, 1, n), 2),
        "home": rng.choice(["own", "rent", "other"], n, p=[0.5, 0.4, 0.1]),
        "flag": rng.choice([True, False], n),
    })
    frame.loc[frame.index[-25:], ["income", "home"]] = [np.nan, None]  # every missing entry in the last rows
    return frame


def partitioned(frame: pd.DataFrame, cuts: list[int]) -> "dd.DataFrame":
    """A Dask DataFrame of ``frame`` split at ``cuts`` (a repeated cut makes an empty partition)."""
    bounds = [0, *cuts, len(frame)]
    parts = [frame.iloc[start:stop] for start, stop in zip(bounds[:-1], bounds[1:])]
    return dd.from_delayed([dask.delayed(lambda part=part: part)() for part in parts], meta=frame.iloc[:0])


PARTITIONINGS = {
    "one": [],
    "three": [100, 250],
    "seventeen": list(range(20, 380, 23))[:16],
    "an empty one": [100, 100, 300],
    "every missing entry in one": [375],
}


@pytest.mark.parametrize("cuts", PARTITIONINGS.values(), ids=PARTITIONINGS.keys())
def test_the_domain_counts_equal_the_in_memory_ones_whatever_the_partitioning(cuts: list[int]) -> None:
    frame = survey()
    memory, spread = FrameCounts(frame), DaskCounts(partitioned(frame, cuts))
    with dask.config.set(scheduler="sync"):
        columns = list(frame.columns)
        for column, counts in memory.type_counts(columns).items():
            assert np.array_equal(spread.type_counts(columns)[column], counts), column
        plan = {"age": stage_two_edges("integer"), "income": stage_two_edges("float"), "home": None, "flag": None}
        exact, summed = memory.value_counts(plan), spread.value_counts(plan)
        for column in columns:
            assert summed[column].missing == exact[column].missing
            if exact[column].categories is not None:
                assert dict(summed[column].categories) == dict(exact[column].categories), column
            else:
                assert np.array_equal(summed[column].bins, exact[column].bins), column
        cells = {"age": histogram_edges(18, 89, True), "income": histogram_edges(0.0, 2e5, False)}
        for column, counts in memory.histogram_counts(cells).items():
            assert np.array_equal(spread.histogram_counts(cells)[column], counts), column
        ranges = {"age": (18.0, 89.0), "income": (0.0, 2e5)}  # stage 4: counts by exact value, in increasing order
        for column, counts in memory.atom_counts(ranges).items():
            assert list(spread.atom_counts(ranges)[column].items()) == list(counts.items()), column
        for column, counts in memory.decimal_counts(["age", "income"]).items():  # stage 4's precision partition
            assert np.array_equal(spread.decimal_counts(["age", "income"])[column], counts), column
        assert spread.n_rows() == len(frame)


@pytest.mark.parametrize("cuts", [[], [100, 250], [100, 100, 300]], ids=["one", "three", "an empty one"])
def test_the_marginal_statistic_equals_the_in_memory_one(cuts: list[int]) -> None:
    frame = survey()
    domain = TabularDomain.from_dict({"age": (18, 90), "income": (0.0, 2e5, None), "home": ["own", "rent", "other", None],
                                      "flag": [True, False]})
    codec = MarginalTableCodec(domain, 12)
    model = DPSWFlow(release="marginal", marginals=MarginalLayout.build(codec.levels, 4, missing=codec.missing))
    exact = model.mechanism.statistic(model.mechanism.prepare(codec.encode(frame), "ball"), None)
    with dask.config.set(scheduler="sync"):
        summed = DaskCounts(partitioned(frame, cuts)).marginal_statistic(codec, model.mechanism)
    assert torch.equal(summed, exact)


def test_a_partition_with_other_columns_ends_the_fit_before_any_release() -> None:
    frame = survey()
    odd = frame.iloc[200:].rename(columns={"flag": "flagged"})
    parts = [dask.delayed(lambda: frame.iloc[:200])(), dask.delayed(lambda: odd)()]
    table = dd.from_delayed(parts, meta=frame.iloc[:0], verify_meta=False)  # Dask's own check would stop it too
    with dask.config.set(scheduler="sync"), pytest.raises(ValueError, match="a partition has columns"):
        DaskCounts(table).type_counts(list(frame.columns))


def test_the_summed_release_adds_the_noise_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The release made from the sum of 17 partitions draws its noise in one call, of the single release's std z
    Delta (not once per partition, which would be sqrt(17) times it), with z calibrated as for the same records in
    memory; its report is the in-memory one."""
    from synthcity_dpswf.privacy.mechanisms import base

    frame = survey()
    domain = TabularDomain.from_dict({"age": (18, 90), "income": (0.0, 2e5, None), "home": ["own", "rent", "other", None],
                                      "flag": [True, False]})
    codec = MarginalTableCodec(domain, 12)
    layout = MarginalLayout.build(codec.levels, 4, missing=codec.missing)
    memory = DPSWFlow(release="marginal", marginals=layout).fit(codec.encode(frame), 1.0, 1e-5)
    spread = DPSWFlow(release="marginal", marginals=layout)
    with dask.config.set(scheduler="sync"):
        statistic = DaskCounts(partitioned(frame, PARTITIONINGS["seventeen"])).marginal_statistic(codec, spread.mechanism)
    draws: list[float] = []
    noise = base.gaussian_noise
    monkeypatch.setattr(base, "gaussian_noise", lambda shape, std, *rest: draws.append(std) or noise(shape, std, *rest))
    spread.fit_total(statistic, len(domain.columns), 1.0, 1e-5, n_records=len(frame))
    z = spread.privacy_report.noise_multiplier
    assert draws == [pytest.approx(z * math.sqrt(2 * layout.n_tables))]
    assert torch.equal(spread.pool_.noise_std, memory.pool_.noise_std)
    assert str(spread.privacy_report) == str(memory.privacy_report)


def test_a_string_and_numpy_s_str_are_one_category_whichever_path_counts_them() -> None:
    """One record must not re-key the others (the second reader's case): 50 'a' and 50 numpy str_ 'a' are 100 of
    one category with or without a number beside them, in one frame and split so that one partition holds only
    strings and the other the number."""
    strings = ["a"] * 50 + [np.str_("a")] * 50
    only = FrameCounts(pd.DataFrame({"c": pd.Series(strings, dtype=object)})).value_counts({"c": None})["c"]
    frame = pd.DataFrame({"c": pd.Series(strings + [5], dtype=object)})
    mixed = FrameCounts(frame).value_counts({"c": None})["c"]
    assert dict(only.categories) == {("str", "a"): 100}
    assert dict(mixed.categories) == {("str", "a"): 100, ("number", 5): 1}
    with dask.config.set({"scheduler": "sync", "dataframe.convert-string": False}):  # Dask would make 5 a "5"
        summed = DaskCounts(partitioned(frame, [60])).value_counts({"c": None})["c"]
    assert dict(summed.categories) == dict(mixed.categories)


def test_the_pair_selection_reads_the_same_statistic_from_partitions(monkeypatch: pytest.MonkeyPatch) -> None:
    """A 7-column table on Dask pays for a pair selection (privacy.md, "Paid pair selection") whose exact statistic is
    the in-memory one, and whose rounds and report part match the in-memory fit's."""
    from synthcity.plugins import Plugins

    from synthcity_dpswf.recipes import tables as table_recipe

    rng = np.random.default_rng(0)
    frame = pd.DataFrame({f"x{j}": rng.integers(0, 4, 300) for j in range(7)})
    domain = {f"x{j}": {"type": "numeric", "low": 0, "high": 3, "integer": True} for j in range(7)}
    made: list[tuple[torch.Tensor, object]] = []
    release = table_recipe.pair_rule.release_pair_selection
    monkeypatch.setattr(table_recipe.pair_rule, "release_pair_selection",
                        lambda statistic, *args, **kwargs: (made.append((statistic, release(statistic, *args, **kwargs))), made[-1][1])[1])
    memory = Plugins().get("dpswflow", epsilon=1.0, delta=1e-5, domain=domain).fit(frame)
    with dask.config.set(scheduler="sync"):
        spread = Plugins().get("dpswflow", epsilon=1.0, delta=1e-5, domain=domain).fit(partitioned(frame, [100, 250]))
    (exact, in_memory), (summed, from_parts) = made
    assert torch.equal(summed, exact) and in_memory.round_epsilon == from_parts.round_epsilon  # type: ignore[attr-defined]
    assert memory.selection_part_.epsilon == spread.selection_part_.epsilon  # type: ignore[union-attr]
    assert len(spread.layout_.pairs) == 10

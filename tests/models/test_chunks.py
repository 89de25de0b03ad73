"""Chunked generation: row counts, determinism, independence across chunks, sharding, early errors."""

from __future__ import annotations

import pytest
import torch

from synthcity_dpswf.models import DPSWFlow, FlowSettings, chunk_plan, chunk_seed

SETTINGS = FlowSettings(n_steps=5, n_directions=10)


@pytest.fixture(scope="module")
def model() -> DPSWFlow:
    records = torch.rand(400, 3, generator=torch.Generator().manual_seed(0)) - 0.5
    return DPSWFlow(n_release_directions=20, n_bins=8, settings=SETTINGS).fit(records, 5.0, 1e-5)


@pytest.fixture(scope="module")
def labelled() -> DPSWFlow:
    generator = torch.Generator().manual_seed(0)
    records, labels = torch.rand(400, 3, generator=generator) - 0.5, torch.randint(3, (400,), generator=generator)
    return DPSWFlow(n_release_directions=20, n_bins=8, settings=SETTINGS).fit(
        records, 5.0, 1e-5, labels=labels, n_classes=3
    )


def test_chunks_cover_the_requested_rows(model: DPSWFlow, labelled: DPSWFlow) -> None:
    chunks = list(model.sample_chunks(25, 10))
    assert [(chunk.index, chunk.start, len(chunk.records)) for chunk in chunks] == [(0, 0, 10), (1, 10, 10), (2, 20, 5)]
    assert all(chunk.labels is None and chunk.records.shape[1] == 3 for chunk in chunks)
    pairs = list(labelled.sample_chunks(25, 10))
    assert [len(chunk.labels) for chunk in pairs if chunk.labels is not None] == [10, 10, 5]
    assert all(chunk.records.shape == (len(chunk.labels), 3) for chunk in pairs if chunk.labels is not None)


def test_chunks_are_seeded_independent_flows(model: DPSWFlow) -> None:
    first, again = list(model.sample_chunks(20, 10, seed=3)), list(model.sample_chunks(20, 10, seed=3))
    for chunk, repeat in zip(first, again):
        torch.testing.assert_close(chunk.records, repeat.records)
    # chunk i is sample() of its size with its own hashed run seed, whichever call makes it
    torch.testing.assert_close(first[1].records, model.sample(10, seed=chunk_seed(3, 1)))
    assert not torch.allclose(first[0].records, first[1].records)  # fresh particles per chunk
    assert not torch.allclose(first[0].records, next(iter(model.sample_chunks(10, 10, seed=4))).records)
    assert len({chunk_seed(seed, index) for seed in range(20) for index in range(20)}) == 400


def test_shards_make_exactly_the_chunks_of_one_process(model: DPSWFlow) -> None:
    whole = {chunk.index: chunk.records for chunk in model.sample_chunks(35, 10)}
    shards = [list(model.sample_chunks(35, 10, rank=rank, world_size=2)) for rank in range(2)]
    assert [chunk.index for chunk in shards[0]] == [0, 2] and [chunk.index for chunk in shards[1]] == [1, 3]
    for chunk in shards[0] + shards[1]:
        torch.testing.assert_close(chunk.records, whole[chunk.index])
    assert [spec.size for spec in chunk_plan(35, 10, seed=0, rank=1, world_size=2)] == [10, 5]


def test_bad_arguments_fail_at_the_call_not_at_the_first_chunk(model: DPSWFlow) -> None:
    with pytest.raises(ValueError, match="chunk_size"):
        model.sample_chunks(10, 0)
    with pytest.raises(ValueError, match="rank must be an integer in 0..1"):
        model.sample_chunks(10, 5, rank=2, world_size=2)
    with pytest.raises(ValueError, match="n_steps"):
        model.sample_chunks(10, 5, n_steps=0)
    with pytest.raises(RuntimeError, match="not fitted"):
        DPSWFlow().sample_chunks(10, 5)

"""Chunked generation: any number of rows with memory bounded by the chunk size, shardable across processes.

Generation is post-processing of the stored releases, so a large run is cut into chunks that are independent
flows: chunk i has ``min(chunk_size, count - i * chunk_size)`` particles of its own, flowed to the same
stored target, with its own run seed ``chunk_seed(seed, i)``. Only one chunk is alive at a time, and chunk i
is the same whichever process makes it: ``chunk_plan(..., rank=r, world_size=W)`` gives process r the chunks
i = r, r + W, r + 2W, ..., so W processes together make exactly the rows of one (``examples/
distributed_generation.py`` runs it with ``torch.distributed``).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import torch

from synthcity_dpswf.math.checks import check_positive_int


@dataclass(frozen=True)
class ChunkSpec:
    """What one chunk is, before it is generated."""

    index: int
    """i, the chunk's place in the whole run (0-based)."""
    start: int
    """The position of its first row in the whole run: ``i * chunk_size``."""
    size: int
    """Its number of rows."""
    seed: int
    """The run seed its flow uses (``chunk_seed``)."""


@dataclass(frozen=True)
class SampleChunk:
    """One generated chunk: where it sits in the whole run, its records and (models fitted with labels) labels."""

    index: int
    start: int
    records: torch.Tensor
    labels: torch.Tensor | None


def chunk_seed(seed: int, index: int) -> int:
    """The run seed of chunk ``index`` of a run seeded by ``seed``: the first 63 bits of BLAKE2b("seed:index").

    A hash rather than ``seed + index``: a run uses the streams seed + 1 .. seed + 3, so consecutive seeds
    would share streams between chunks (and between runs with nearby seeds); hashed seeds are distinct with
    overwhelming probability.
    """
    digest = hashlib.blake2b(f"{seed}:{index}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") >> 1


def chunk_plan(count: int, chunk_size: int, seed: int, rank: int = 0, world_size: int = 1) -> list[ChunkSpec]:
    """The chunks of a run of ``count`` rows that process ``rank`` of ``world_size`` makes, in order.

    The whole run has ceil(count / chunk_size) chunks; process r takes chunks r, r + W, ... (round robin, so
    that every process gets about the same number of rows).
    """
    check_positive_int("count", count)
    check_positive_int("chunk_size", chunk_size)
    check_positive_int("world_size", world_size)
    if isinstance(rank, bool) or not isinstance(rank, int) or not 0 <= rank < world_size:
        raise ValueError(f"rank must be an integer in 0..{world_size - 1} (world_size={world_size}), got {rank!r}.")
    n_chunks = -(-count // chunk_size)
    return [
        ChunkSpec(index, index * chunk_size, min(chunk_size, count - index * chunk_size), chunk_seed(seed, index))
        for index in range(rank, n_chunks, world_size)
    ]

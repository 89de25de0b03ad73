"""Sharded generation with ``torch.distributed``: W processes (or GPUs) make the rows of one run between them.

Generation is post-processing of the stored releases, so it shards freely: the model is fitted once (the only
contact with private data, paid once), then each rank receives the fitted model from rank 0
(``broadcast_object_list``: releases and public parameters, no private record), makes its own chunks with
``sample_chunks(count, chunk_size, rank=rank, world_size=W)`` (chunks rank, rank + W, ...; chunk i is the same
in whichever process makes it) and writes them to ``OUT/shard_<rank>.pt``. A sum over ranks (``all_reduce``)
checks the row count; rank 0 writes ``OUT/manifest.json``. The W shards, ordered by chunk index, are exactly
the rows one process would make with the same seed and chunk size.

Run on CPU with 2 processes (gloo, started here with ``torch.multiprocessing.spawn``)::

    python examples/distributed_generation.py --world-size 2 --rows 20000 --chunk-size 5000 --out shards/

or under torchrun (one process per GPU with ``--device cuda``; ``--backend nccl`` is possible too)::

    torchrun --nproc-per-node 2 examples/distributed_generation.py --device cuda --rows 1000000 --out shards/

Without ``--model`` (a file written by ``model.save``), rank 0 fits DPSWflow at epsilon = 10 on scikit-learn's
8 x 8 digits as ``dpswf demo`` does (one class-conditional histogram release of their DCT features).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import time
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from synthcity_dpswf import models
from synthcity_dpswf.models import SlicedGenerator


def demo_model() -> SlicedGenerator:
    """DPSWflow on the digits' DCT features with their labels, as ``dpswf demo`` fits it (epsilon = 10)."""
    from synthcity_dpswf.adapters import DCTTransform
    from synthcity_dpswf.experiments.demo import BINS, DIRECTIONS, load_split

    images, labels, _, _ = load_split(seed=0)
    features = DCTTransform(8, 8, n_frequencies=5, max_value=16.0).encode(images)
    return models.DPSWFlow(n_release_directions=DIRECTIONS, n_bins=BINS).fit(features, 10.0, 1e-5, labels=labels, n_classes=10)


def model_state(path: Path | None) -> dict[str, Any]:
    """The fitted model to broadcast: read from ``path``, or fitted here on the digits."""
    if path is None:
        return demo_model().state_dict()
    return torch.load(path, weights_only=False)


def rebuild(state: dict[str, Any], device: torch.device) -> SlicedGenerator:
    """The model of ``state`` (any of the three generators) with its flow on ``device``."""
    state = {**state, "parameters": {**state["parameters"], "device": str(device)}}
    generator_class = getattr(models, state["class"], None)
    if not (isinstance(generator_class, type) and issubclass(generator_class, SlicedGenerator)):
        raise ValueError(f"the model file holds a {state['class']!r}, not one of DPSWFlow, DPSWFlowR, DPSWGen.")
    return generator_class.from_state_dict(state)


def worker(rank: int, world_size: int, args: argparse.Namespace, init_method: str) -> None:
    """One rank: join the group, receive the model, make and write this rank's chunks."""
    torch.set_num_threads(args.threads)
    dist.init_process_group(args.backend, init_method=init_method, rank=rank, world_size=world_size)
    try:
        if args.device == "cuda":
            device = torch.device("cuda", rank % torch.cuda.device_count())
            torch.cuda.set_device(device)
        else:
            device = torch.device("cpu")
        payload = [model_state(args.model) if rank == 0 else None]
        dist.broadcast_object_list(payload, src=0)
        model = rebuild(payload[0], device)
        overrides = {} if args.steps is None else {"n_steps": args.steps}
        started = time.perf_counter()
        indices, records, labels = [], [], []
        for chunk in model.sample_chunks(args.rows, args.chunk_size, seed=args.seed, rank=rank, world_size=world_size, **overrides):
            indices.append(chunk.index)
            records.append(chunk.records.cpu())  # off the GPU as it comes: device memory stays one chunk
            if chunk.labels is not None:
                labels.append(chunk.labels.cpu())
        seconds = time.perf_counter() - started
        args.out.mkdir(parents=True, exist_ok=True)
        torch.save({
            "rank": rank, "chunk_size": args.chunk_size, "chunks": indices,
            "records": torch.cat(records) if records else torch.empty(0, model.dim),
            "labels": torch.cat(labels) if labels else None,
        }, args.out / f"shard_{rank}.pt")
        reduce_on = device if args.backend == "nccl" else torch.device("cpu")  # nccl reduces GPU tensors only
        rows_made = torch.tensor([float(sum(len(part) for part in records))], device=reduce_on)
        dist.all_reduce(rows_made, op=dist.ReduceOp.SUM)
        slowest = torch.tensor([seconds], device=reduce_on)
        dist.all_reduce(slowest, op=dist.ReduceOp.MAX)
        if rank == 0:
            if int(rows_made[0]) != args.rows:
                raise RuntimeError(f"the ranks made {int(rows_made[0])} rows, not {args.rows}: a shard is missing.")
            manifest = {
                "rows": args.rows, "chunk_size": args.chunk_size, "seed": args.seed, "world_size": world_size,
                "backend": args.backend, "device": args.device, "seconds": float(slowest[0]),
                "rows_per_second": args.rows / float(slowest[0]), "shards": [f"shard_{r}.pt" for r in range(world_size)],
            }
            (args.out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
            print(f"{args.rows} rows in {world_size} shards under {args.out} in {float(slowest[0]):.1f} s "
                  f"({manifest['rows_per_second']:.0f} rows/s)")
    finally:
        dist.destroy_process_group()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--chunk-size", type=int, default=5_000)
    parser.add_argument("--world-size", type=int, default=2, help="processes to spawn (ignored under torchrun)")
    parser.add_argument("--model", type=Path, default=None, help="a fitted model written by model.save (default: fit the digits)")
    parser.add_argument("--steps", type=int, default=None, help="flow steps (default: the model's settings)")
    parser.add_argument("--seed", type=int, default=0, help="public seed of the generation run")
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument("--backend", choices=["gloo", "nccl"], default="gloo")
    parser.add_argument("--threads", type=int, default=1, help="torch threads per process")
    parser.add_argument("--out", type=Path, default=Path("shards"))
    args = parser.parse_args()
    for name in ("rows", "chunk_size", "world_size", "threads"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be a positive integer, got {getattr(args, name)}")
    if args.model is not None and not args.model.is_file():
        parser.error(f"--model {args.model} is not a file; write one with model.save(path)")
    if args.device == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda, but torch sees no CUDA device")
    if "RANK" in os.environ:  # started by torchrun: one process per rank, rendezvous from its variables
        worker(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]), args, "env://")
    else:
        mp.spawn(worker, args=(args.world_size, args, f"tcp://127.0.0.1:{free_port()}"), nprocs=args.world_size, join=True)


if __name__ == "__main__":
    main()

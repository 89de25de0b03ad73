"""examples/distributed_generation.py: 2 processes (gloo on localhost) make exactly the chunks of one process."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import torch

from synthcity_dpswf.models import DPSWFlow, FlowSettings

ROOT = Path(__file__).resolve().parents[2]


def test_two_gloo_processes_make_the_rows_of_one(tmp_path: Path) -> None:
    generator = torch.Generator().manual_seed(0)
    records, labels = torch.rand(500, 4, generator=generator) - 0.5, torch.randint(3, (500,), generator=generator)
    model = DPSWFlow(n_release_directions=20, n_bins=8, settings=FlowSettings(n_steps=5))
    model.fit(records, 5.0, 1e-5, labels=labels, n_classes=3).save(tmp_path / "model.pt")
    out = tmp_path / "shards"
    completed = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "distributed_generation.py"), "--model", str(tmp_path / "model.pt"),
         "--rows", "250", "--chunk-size", "100", "--world-size", "2", "--seed", "7", "--out", str(out)],
        capture_output=True, text=True, timeout=120,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["rows"] == 250 and manifest["world_size"] == 2 and manifest["backend"] == "gloo"
    shards = [torch.load(out / name, weights_only=False) for name in manifest["shards"]]
    assert [shard["chunks"] for shard in shards] == [[0, 2], [1]]

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as each rank ran
    try:
        expected = {chunk.index: chunk for chunk in DPSWFlow.load(tmp_path / "model.pt").sample_chunks(250, 100, seed=7)}
    finally:
        torch.set_num_threads(threads)
    for shard in shards:
        starts = [0]
        for index in shard["chunks"]:
            starts.append(starts[-1] + len(expected[index].records))
        for index, start, end in zip(shard["chunks"], starts, starts[1:]):
            torch.testing.assert_close(shard["records"][start:end], expected[index].records)
            torch.testing.assert_close(shard["labels"][start:end], expected[index].labels)

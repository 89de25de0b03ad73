"""The end-to-end DP peers in the table runner (benchmarks/peer_runs.py): a crash is recorded with the peer's own
message, a run past the cap is killed and recorded as a time-out, each peer gets one cell per mode, and the summary
compares ours only with the peers that finished. No peer environment is needed: the crash runs the real
run_peer.py with this environment's python (which has no peer installed), the time-out a stand-in that sleeps."""

from __future__ import annotations

import stat
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

import peer_runs
import table_runner


def environment_with(tmp_path: Path, peer: str, script: str) -> Path:
    """A stand-in environments folder whose ``peer``'s python is the shell ``script``."""
    binary = tmp_path / "envs" / peer / "bin"
    binary.mkdir(parents=True)
    target = binary / "python"
    target.write_text(script)
    target.chmod(target.stat().st_mode | stat.S_IEXEC)
    return tmp_path / "envs"


def small_table() -> peer_runs.PeerTable:
    train = pd.DataFrame({"a": [1.0, 2.0, 3.0, 4.0], "b": ["x", "y", "x", "y"]})
    schema = {"a": {"type": "numeric", "low": 0.0, "high": 5.0, "integer": False, "missing": False},
              "b": {"type": "categorical", "categories": ["x", "y"]}}
    return peer_runs.PeerTable("toy", train, schema)


def test_a_peer_crash_is_recorded_with_the_peers_own_message(tmp_path: Path) -> None:
    environments = environment_with(tmp_path, "dpmm", f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')  # no dpmm here
    table = small_table()
    try:
        with pytest.raises(peer_runs.PeerFailure, match="ModuleNotFoundError: No module named 'dpmm'"):
            peer_runs.run_peer("dpmm_mst", "end_to_end", table, 1.0, 1e-5, 0, 0.1, 60, environments)
    finally:
        table.cleanup()


def test_a_peer_past_the_cap_is_killed_and_recorded_as_a_time_out(tmp_path: Path) -> None:
    environments = environment_with(tmp_path, "snsynth", "#!/bin/sh\nsleep 30 & wait\n")
    table = small_table()
    started = time.perf_counter()
    try:
        with pytest.raises(peer_runs.PeerFailure, match="time-out after 1 s"):
            peer_runs.run_peer("snsynth_aim", "reference", table, 1.0, 1e-5, 0, 0.1, 1, environments)
    finally:
        table.cleanup()
    assert time.perf_counter() - started < 10  # the sleeping child was killed with its group


def test_a_grid_without_a_peers_environment_stops_before_running(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match="make_envs.sh snsynth"):
        peer_runs.check_environments(("dpswflow", "snsynth_mst"), tmp_path)


def test_each_peer_gets_one_cell_per_mode_and_the_summary_compares_with_finished_peers_only() -> None:
    grid = table_runner.TableGrid("x", ("fair",), "quantile_cells", ("dpswflow", "dpmm_mst", "snsynth_aim"), (1.0,))
    table = table_runner.load_table("fair", None)
    cells = table_runner.cells(grid, "fair", table, 1.0)
    assert [(cell.method, cell.mode) for cell in cells if cell.method in peer_runs.PEERS] == [
        ("dpmm_mst", "end_to_end"), ("dpmm_mst", "reference"), ("snsynth_aim", "end_to_end"), ("snsynth_aim", "reference")]
    labels = {cell.mode: cell.schema for cell in cells if cell.method == "dpmm_mst"}
    assert "bounds paid (0.1 of epsilon)" in labels["end_to_end"] and "read from data" in labels["reference"]

    def row(method: str, schema: str, tv2: float | None, mode: str | None = None, error: str = "") -> dict:
        out = {"table": "fair", "method": method, "schema": schema, "epsilon": 1.0, "adjacency": "add/remove"}
        out.update({"mode": mode} if mode else {}, **({"error": error} if error else {"scores": {"tv2": tv2}}))
        return out

    payload = {"tables": {"fair": {}}, "results": [
        row("dpswflow", "none", 0.20), row("dpswflow", "declared", 0.30),
        row("dpmm_mst", labels["end_to_end"], 0.25, "end_to_end"), row("dpmm_mst", labels["reference"], 0.28, "reference"),
        row("snsynth_aim", labels["end_to_end"], None, "end_to_end", error="time-out after 300 s (the grid's cap)"),
        row("snsynth_aim", labels["reference"], 0.10, "reference"),
    ]}
    summary = table_runner.peer_summary(payload)
    assert "failed: time-out" in summary
    assert "fair, dpswflow (none, add/remove): 0.200, met against dpmm MST 0.250; failed, out of the comparison: smartnoise AIM" in summary
    assert "fair, dpswflow (declared, add/remove): 0.300, missed against smartnoise AIM 0.100" in summary

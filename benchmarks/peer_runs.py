"""The end-to-end DP peers as methods of the table runner: each cell calls ``benchmarks/peers/run_peer.py`` with the
peer's own python (``benchmarks/.peers/<peer>/``, made by ``benchmarks/peers/make_envs.sh``) under the grid's cap,
on the training split the runner's other methods get (written to a temporary CSV) and the table's declared schema
(a JSON file), and reads back its rows and its record. A crash is a row with the peer's exception (type and first
line), a run past the cap is killed with its process group and is a row "time-out after N s".

Methods (``PEERS``): ``dpmm_privbayes``, ``dpmm_mst``, ``dpmm_aim`` (dpmm's pipelines) and ``snsynth_mst``,
``snsynth_aim`` (smartnoise-synth), each in the grid's ``peer_modes``:

  end_to_end  categories declared, numeric columns declared numeric only: their bounds (dpmm: also its PrivTree
              bins) paid by the peer's own DP preprocessing from ``peer_share`` x epsilon (0.1: the issue's trial)
  reference   the full declared schema given (bounds and categories), nothing paid for preprocessing
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

HERE = Path(__file__).resolve().parent
RUN_PEER = HERE / "peers" / "run_peer.py"
ENVIRONMENTS = HERE / ".peers"
"""Where ``benchmarks/peers/make_envs.sh`` puts one virtual environment per peer."""

PEERS: dict[str, tuple[str, str]] = {
    "dpmm_privbayes": ("dpmm", "privbayes"), "dpmm_mst": ("dpmm", "mst"), "dpmm_aim": ("dpmm", "aim"),
    "snsynth_mst": ("snsynth", "mst"), "snsynth_aim": ("snsynth", "aim"),
}
"""Runner method name: (peer environment, the peer's method)."""

PEER_MODES = ("end_to_end", "reference")

PEER_LABELS = {
    "dpmm_privbayes": "dpmm PrivBayes", "dpmm_mst": "dpmm MST", "dpmm_aim": "dpmm AIM",
    "snsynth_mst": "smartnoise MST", "snsynth_aim": "smartnoise AIM",
}

PEER_ADJACENCY = {
    "dpmm_privbayes": "mixed: replace-one structure, add/remove marginals",
    "dpmm_mst": "add/remove", "dpmm_aim": "add/remove", "snsynth_mst": "add/remove", "snsynth_aim": "add/remove",
}
"""The adjacency each peer's epsilon is stated under, as its code computes it: sensitivity 1 per measured marginal
(Gaussian, zCDP) and per count of dpmm's PrivTree and of both peers' DP bounds (Laplace); dpmm's PrivBayes chooses its
network with the exponential mechanism at PrivBayes' mutual-information sensitivity, the replace-one one with n read
from the table."""

DPMM_READS = ("the number of rows n (dpmm's 'auto' number of bins per numeric column), which columns hold missing "
              "values and one real value per such column (its placeholder before binning), and which columns are "
              "constant (dropped, their value kept)")
PEER_READS = {
    "dpmm_privbayes": DPMM_READS + "; n in PrivBayes' sensitivities",
    "dpmm_mst": DPMM_READS, "dpmm_aim": DPMM_READS,
    "snsynth_mst": "nothing beyond n (the rows sampled)", "snsynth_aim": "nothing beyond n (the rows sampled)",
}
"""What each peer reads off the private table without paying for it, with categories (and in the reference mode
the bounds) declared."""


def peer_schema_label(mode: str, read_from_data: bool, share: float) -> str:
    """A peer row's schema column: what the peer is given and what it pays for."""
    if mode == "end_to_end":
        return f"end-to-end: categories declared, bounds paid ({share:g} of epsilon)"
    return "reference: full schema given" + (" (some bounds read from data, not paid for)" if read_from_data else "")


def peer_python(method: str, environments: Path = ENVIRONMENTS) -> Path:
    """The python of ``method``'s peer environment."""
    return environments / PEERS[method][0] / "bin" / "python"


def check_environments(methods: tuple[str, ...] | list[str], environments: Path = ENVIRONMENTS) -> None:
    """Refuse to start a grid whose peers have no environment (a missing environment is not a peer's failure)."""
    absent = sorted({PEERS[method][0] for method in methods if method in PEERS
                     and not peer_python(method, environments).exists()})
    if absent:
        raise SystemExit(f"no environment for peers {absent} under {environments}: run "
                         f"bash benchmarks/peers/make_envs.sh {' '.join(absent)}")


class PeerFailure(RuntimeError):
    """A peer run that crashed (its exception's type and first line) or ran past the cap."""


@dataclass
class PeerRun:
    """A peer run's rows and its record (wall seconds, versions, the budget split and what it spent)."""

    synthetic: pd.DataFrame
    record: dict[str, Any]


class PeerTable:
    """A table's training split and declared schema, written once to a temporary folder for the peer runs."""

    def __init__(self, name: str, train: pd.DataFrame, schema: dict[str, dict[str, Any]]) -> None:
        self.name = name
        self.folder = Path(tempfile.mkdtemp(prefix=f"peers_{name}_"))
        self.train_csv = self.folder / "train.csv"
        self.schema_json = self.folder / "schema.json"
        train.to_csv(self.train_csv, index=False)
        self.schema_json.write_text(json.dumps(schema, default=float))
        self.rows = len(train)

    def cleanup(self) -> None:
        for path in self.folder.iterdir():
            path.unlink()
        self.folder.rmdir()


def last_record(log: Path) -> dict[str, Any] | None:
    lines = log.read_text().splitlines() if log.exists() else []
    return json.loads(lines[-1]) if lines else None


def run_peer(method: str, mode: str, table: PeerTable, epsilon: float, delta: float, seed: int, share: float, cap: int,
             environments: Path = ENVIRONMENTS) -> PeerRun:
    """One peer cell: ``run_peer.py`` in the peer's environment, killed (with its children) after ``cap`` seconds
    (0: no limit). Raises ``PeerFailure`` with the peer's own message on a crash, "time-out after N s" past the cap."""
    peer, peer_method = PEERS[method]
    tag = f"{method}_{mode}_eps{epsilon:g}"
    out, log = table.folder / f"{tag}.csv", table.folder / f"{tag}.jsonl"
    for path in (out, log):
        path.unlink(missing_ok=True)
    command = [str(peer_python(method, environments)), str(RUN_PEER), "--peer", peer, "--method", peer_method,
               "--train", str(table.train_csv), "--schema", str(table.schema_json), "--mode", mode,
               "--epsilon", repr(float(epsilon)), "--delta", repr(float(delta)), "--seed", str(seed),
               "--preprocessing-share", repr(float(share)), "--table", table.name, "--out", str(out), "--log", str(log)]
    started = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               start_new_session=True, env={**os.environ, "PYTHONNOUSERSITE": "1"})
    try:
        output, _ = process.communicate(timeout=cap if cap > 0 else None)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        raise PeerFailure(f"time-out after {cap} s (the grid's cap; killed at {time.perf_counter() - started:.0f} s)") from None
    record = last_record(log)
    if process.returncode != 0 or record is None or record.get("error_type"):
        if record is not None and record.get("error_type"):
            raise PeerFailure(f"{record['error_type']}: {record['error']}")
        tail = [line for line in (output or "").splitlines() if line.strip()][-1:] or ["no output"]
        raise PeerFailure(f"exit status {process.returncode}: {tail[0][:200]}")
    synthetic = pd.read_csv(out, float_precision="round_trip")
    if len(synthetic) != table.rows:
        raise PeerFailure(f"{len(synthetic)} rows written for {table.rows} asked")
    return PeerRun(synthetic, record)

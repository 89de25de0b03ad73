"""``benchmarks/seed_spread.py``: one grid's runs at several seeds, summarised and paired with a peer."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

import seed_spread


def run(seed: int, ours: dict[str, float], peer: dict[str, float], floor: float = 0.7) -> dict[str, Any]:
    """A results payload of one seed: ours without and with a schema, the peer end to end and by reference."""
    def scores(tstr: float) -> dict[str, float]:
        return {"tstr": tstr, "performance.xgb.syn_id": tstr - 0.01, "tv2": 0.1}

    return {
        "name": f"toy_seed_{seed}", "seed": seed, "tables": {"toy": {"floor": {"tstr": floor}}},
        "results": [
            {"table": "toy", "method": "dpswflow", "schema": "none", "target": "named", "neighbouring": "replace_one",
             "scores": scores(ours["none"])},
            {"table": "toy", "method": "dpswflow", "schema": "declared (public)", "target": "named",
             "neighbouring": "replace_one", "scores": scores(ours["declared"])},
            {"table": "toy", "method": "dpmm_mst", "schema": "end-to-end", "mode": "end_to_end", "target": "none (takes no target)",
             "neighbouring": None, "scores": scores(peer["none"])},
            {"table": "toy", "method": "dpmm_mst", "schema": "reference", "mode": "reference", "target": "none (takes no target)",
             "neighbouring": None, "scores": scores(peer["declared"])},
            {"table": "toy", "method": "dpmm_aim", "schema": "end-to-end", "mode": "end_to_end", "error": "time-out after 300 s"},
        ],
    }


def test_scores_are_averaged_over_seeds_and_paired_with_the_peer_of_the_same_schema_class(tmp_path: Path) -> None:
    payloads = [run(0, {"none": 0.66, "declared": 0.60}, {"none": 0.64, "declared": 0.62}, floor=0.72),
                run(1, {"none": 0.68, "declared": 0.61}, {"none": 0.65, "declared": 0.60}, floor=0.74),
                run(2, {"none": 0.67, "declared": 0.59}, {"none": 0.66, "declared": 0.61}, floor=0.73)]
    summary = seed_spread.spread(payloads, "dpmm_mst")
    rows = {(row["method"], row["schema"]): row for row in summary["rows"]}
    assert set(rows) == {("dpswflow", "none"), ("dpswflow", "declared"), ("dpmm_mst", "none"), ("dpmm_mst", "declared")}
    ours = rows["dpswflow", "none"]
    assert ours["tstr"]["mean"] == pytest.approx(0.67)
    assert ours["tstr"]["error"] == pytest.approx(0.01 / math.sqrt(3))
    assert ours["floor_tstr"]["mean"] == pytest.approx(0.73)
    # Paired per seed with the end-to-end row (0.02, 0.03, 0.01), the declared schema with the reference row.
    assert ours["tstr_minus_peer"]["values"] == pytest.approx([0.02, 0.03, 0.01])
    assert rows["dpswflow", "declared"]["tstr_minus_peer"]["values"] == pytest.approx([-0.02, 0.01, -0.02])
    assert "tstr_minus_peer" not in rows["dpmm_mst", "none"]
    page = seed_spread.markdown(summary)
    assert "| toy | dpswflow | none | named | 0.730 ± 0.006 | 0.670 ± 0.006 |" in page
    assert page.count("| above |") == 1 and page.count("| level |") == 1
    seed_spread.main([*(str(path) for path in write_runs(tmp_path, payloads)), "--out", str(tmp_path / "out")])
    assert (tmp_path / "out" / "fair_seeds.md").read_text() == page
    import report

    readme = report.seeds_headline(summary)  # the README's lines: ours beside the peer of the same schema class
    assert "| toy | none | DPSWflow | 0.730 ± 0.006 | 0.670 ± 0.006 | 0.650 ± 0.006 | 0.020 ± 0.006 | above |" in readme
    assert "| toy | declared | DPSWflow | 0.730 ± 0.006 | 0.600 ± 0.006 | 0.610 ± 0.006 | -0.010 ± 0.010 | level |" in readme


def test_runs_of_the_same_seed_are_refused() -> None:
    with pytest.raises(ValueError, match="differ in seed"):
        seed_spread.spread([run(1, {"none": 0.6, "declared": 0.6}, {"none": 0.6, "declared": 0.6})] * 2, "dpmm_mst")


def write_runs(folder: Path, payloads: list[dict[str, Any]]) -> list[Path]:
    """Each payload as ``folder/<name>.json``."""
    paths = [folder / f"{payload['name']}.json" for payload in payloads]
    for path, payload in zip(paths, payloads):
        path.write_text(json.dumps(payload))
    return paths

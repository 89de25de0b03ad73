"""``benchmarks/run_comparison.py``: two runs of one grid side by side, cell by cell, with the means over the cells both
scored."""

from __future__ import annotations

import json
from pathlib import Path

import run_comparison


def payload(scores: dict[tuple[str, str], float], peer: float | None = None) -> dict:
    rows = [{"table": "t", "method": method, "schema": schema, "target": "none", "adjacency": "replace-one",
             "scores": {"tv2": value}} for (method, schema), value in scores.items()]
    if peer is not None:
        rows.append({"table": "t", "method": "privbayes", "schema": "read from data", "target": "none",
                     "adjacency": "replace-one", "scores": {"tv2": peer}})
    return {"results": rows, "tables": {"t": {"floor": {"tv2": 0.05}}}}


def test_the_comparison_pairs_cells_by_their_labels_and_averages_the_cells_both_runs_scored(tmp_path: Path) -> None:
    before = payload({("dpswflow", "none"): 0.3, ("dpswflow", "declared"): 0.2})
    after = payload({("dpswflow", "none"): 0.2, ("dpswflow", "declared"): 0.1, ("dpswflow_r", "none"): 0.4}, peer=0.5)
    (tmp_path / "before.json").write_text(json.dumps(before))
    (tmp_path / "after.json").write_text(json.dumps(after))
    run_comparison.main([str(tmp_path / "before.json"), str(tmp_path / "after.json"), "--name", "c", "--scores", "tv2",
                         "--out", str(tmp_path)])
    result = json.loads((tmp_path / "c.json").read_text())
    assert result["means"]["tv2"] == [0.25, 0.15000000000000002, 2]  # dpswflow_r has no earlier cell
    cells = {tuple(cell["key"][1:3]): cell["tv2"] for cell in result["cells"]}
    assert cells[("dpswflow_r", "none")] == [None, 0.4] and cells[("dpswflow", "none")] == [0.3, 0.2]
    assert result["peers"][0]["tv2"] == 0.5
    text = (tmp_path / "c.md").read_text()
    assert "| dpswflow | none | none | replace-one | 0.3000 -> 0.2000 |" in text and "| real test split |" in text

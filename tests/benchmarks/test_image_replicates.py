"""``benchmarks/image_replicates.py``: an image results file's replicates pooled by setting."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import image_replicates


def row(directions: int, label: str, cells: dict[str, tuple[float, float]]) -> dict[str, Any]:
    """An image_runner row of DPSWflow through one codec at ``directions`` with CAS ``cells`` per epsilon."""
    return {"codec": "dpae:32:16:5", "generator": "dpswflow", "neighbouring": "replace_one",
            "setting": {"directions": directions, "bins": 16, "steps": 3000, "flow_directions": 70, "label": label},
            "epsilons": {epsilon: {"mlp": mlp, "cnn": cnn, "ceiling": {"mlp": 0.95, "cnn": 0.97}}
                         for epsilon, (mlp, cnn) in cells.items()}}


def test_replicates_pool_across_labels_and_keep_settings_and_epsilons_apart(tmp_path: Path) -> None:
    payload = {"name": "toy", "rows": [
        row(4000, "", {"10.0": (0.90, 0.94), "1.0": (0.78, 0.86)}),
        row(4000, "r2", {"10.0": (0.92, 0.93)}),
        row(4000, "r3", {"10.0": (0.91, 0.95)}),
        row(2000, "", {"10.0": (0.89, 0.92)}),
    ]}
    summary = image_replicates.summarise(payload)
    groups = {(entry["setting"]["directions"], entry["epsilon"]): entry for entry in summary}
    assert set(groups) == {(4000, 10.0), (4000, 1.0), (2000, 10.0)}
    pooled = groups[(4000, 10.0)]["cnn"]
    assert pooled["n"] == 3 and math.isclose(pooled["mean"], 0.94) and math.isclose(pooled["std"], 0.01)
    assert math.isclose(pooled["sem"], 0.01 / math.sqrt(3))
    assert groups[(2000, 10.0)]["cnn"] == {"n": 1, "mean": 0.92, "std": 0.0, "sem": 0.0}
    assert "label" not in groups[(4000, 10.0)]["setting"]

    source = tmp_path / "toy.json"
    source.write_text(json.dumps(payload))
    image_replicates.main([str(source), "--out", str(tmp_path)])
    page = (tmp_path / "toy_spread.md").read_text()
    assert "| dpae:32:16:5 | dpswflow | 10 | 4000, 16, 3000 | 3 | 91.00 / 94.00 | 1.00 / 1.00 |" in page
    assert "| 2000, 16, 3000 | 1 | 89.00 / 92.00 | - | - |" in page

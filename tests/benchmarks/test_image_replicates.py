"""``benchmarks/image_replicates.py``: an image results file's replicates pooled by setting."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import image_replicates


def row(directions: int, label: str, cells: dict[str, tuple[float, float]], **fields: Any) -> dict[str, Any]:
    """An image_runner row of DPSWflow through the DP-SGD codec at ``directions`` with CAS ``cells`` per epsilon."""
    setting = {"directions": directions, "bins": 16, "steps": 3000, "flow_directions": 70, "label": label,
               "codec_share": 0.5}
    setting.update(fields.pop("setting", {}))
    return {"codec": "dpae:32:16:5", "generator": "dpswflow", "neighbouring": "replace_one", "directions": directions,
            "bins": 16, "steps": 3000, "samples": 10000, "setting": setting, "decode_temperature": 1.0,
            "codec_sampling": "poisson", **fields,
            "epsilons": {epsilon: {"mlp": mlp, "cnn": cnn, "ceiling": {"mlp": 0.95, "cnn": 0.97}}
                         for epsilon, (mlp, cnn) in cells.items()}}


def test_replicates_pool_across_labels_and_keep_other_rows_apart(tmp_path: Path) -> None:
    payload = {"name": "toy", "rows": [
        row(4000, "", {"10.0": (0.90, 0.94), "1.0": (0.78, 0.86)}),
        row(4000, "r2", {"10.0": (0.92, 0.93)}),
        row(4000, "r3", {"10.0": (0.91, 0.95)}),
        row(2000, "", {"10.0": (0.89, 0.92)}),
        row(4000, "t4", {"10.0": (0.50, 0.50)}, decode_temperature=4.0),  # decoded otherwise: not a replicate
        row(4000, "add", {"10.0": (0.60, 0.60)}, neighbouring="add_remove"),  # another adjacency
        row(4000, "", {"10.0": (0.70, 0.70)}, setting={"flow_directions": 140}),  # another flow
        {"codec": "ae:16:10", "generator": "dpsgd_gan", "setting": None, "directions": None, "bins": 16, "steps": 0,
         "samples": 10000, "ceiling": {"mlp": 0.95, "cnn": 0.97}, "epsilons": {"10.0": {"mlp": 0.6, "cnn": 0.65}}},
    ]}
    summary = image_replicates.summarise(payload)
    assert len(summary) == 7
    pooled = [entry for entry in summary if entry["cnn"]["n"] == 3]
    assert len(pooled) == 1 and pooled[0]["epsilon"] == 10.0
    cnn = pooled[0]["cnn"]
    assert math.isclose(cnn["mean"], 0.94) and math.isclose(cnn["std"], 0.01) and math.isclose(cnn["sem"], 0.01 / math.sqrt(3))
    assert {entry["cnn"]["mean"] for entry in summary if entry["cnn"]["n"] == 1} == {0.86, 0.92, 0.5, 0.6, 0.7, 0.65}
    assert all(entry["cnn"]["std"] is None for entry in summary if entry["cnn"]["n"] == 1)
    gan = next(entry for entry in summary if entry["generator"] == "dpsgd_gan")
    assert gan["ceilings"] == [[0.95, 0.97]]  # a codec that releases nothing keeps its ceiling on the row

    source = tmp_path / "toy.json"
    source.write_text(json.dumps(payload))
    image_replicates.main([str(source), "--out", str(tmp_path)])
    page = (tmp_path / "toy_spread.md").read_text()
    shown = "4000, 16, 3000, codec share 0.5, decoded at t = 1, codec on Poisson batches"
    assert f"| dpae:32:16:5 | dpswflow | replace-one | 10 | {shown} | 3 | 91.00 / 94.00 | 1.00 / 1.00 |" in page
    assert f"| add/remove | 10 | {shown} | 1 | 60.00 / 60.00 | - | - |" in page
    assert f"| {shown}, flow directions 140 | 1 |" in page
    assert "| 4000, 16, 3000, codec share 0.5, decoded at t = 4, codec on Poisson batches | 1 | 50.00 / 50.00 |" in page

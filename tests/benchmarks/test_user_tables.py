"""The "tables as users bring them" benchmark (benchmarks/user_tables.py) runs end to end on a toy scale."""

from __future__ import annotations

import importlib.util
import json
import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def load_script() -> object:
    """The benchmark script as a module (it puts benchmarks/ on sys.path for its own imports)."""
    spec = importlib.util.spec_from_file_location("user_tables", ROOT / "benchmarks" / "user_tables.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_user_tables_scores_ours_without_and_with_a_declared_schema(tmp_path: Path) -> None:
    script = load_script()
    script.main(["--tables", "anes96", "--rows", "200", "--methods", "dpswflow", "--no-speed", "--out", str(tmp_path)])  # type: ignore[attr-defined]
    payload = json.loads((tmp_path / "user_tables.json").read_text())
    assert payload["tables"]["anes96"]["train_rows"] == 160 and payload["tables"]["anes96"]["test_rows"] == 40
    rows = {row["schema"]: row for row in payload["results"]}
    assert set(rows) == {"none", "declared"}
    for row in rows.values():
        assert row["method"] == "dpswflow" and "error" not in row, row.get("error")
        for name in ("tv1", "tv2", "tv3"):
            assert math.isfinite(row["scores"][name]) and 0 <= row["scores"][name] <= 1
        assert "speed_seconds" not in row
    markdown = (tmp_path / "user_tables.md").read_text()
    assert "| method | schema | adjacency | epsilon |" in markdown and "| dpswflow | declared | replace-one | 1 |" in markdown

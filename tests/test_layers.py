"""The house's layers (../shared/design/architecture.md): imports only go down a floor, and nothing below the plugins
imports synthcity, so the core (math, privacy, models, adapters, recipes) runs without it."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "synthcity_dpswf"

FLOORS = {
    "math": 0,
    "privacy": 1, "datasets": 1, "evaluation": 1,
    "models": 2,
    "adapters": 3,
    "extensions": 4,
    "recipes": 5,
    "plugins": 6, "experiments": 6,
    "cli": 7,
    "__init__": 8,
}
"""Each room's floor: a module may import its own room and rooms on lower floors only."""
SYNTHCITY_ROOMS = {"plugins"}
"""The rooms that may import synthcity (the plugins are synthcity glue)."""


def imports(path: Path) -> list[str]:
    modules = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            modules.append(node.module)
        elif isinstance(node, ast.Import):
            modules.extend(alias.name for alias in node.names)
    return modules


def room_of(path: Path) -> str:
    parts = path.relative_to(ROOT).parts
    return parts[0] if len(parts) > 1 else parts[0].removesuffix(".py")


def test_every_room_has_a_floor_and_imports_only_go_down() -> None:
    upward, synthcity = [], []
    for path in sorted(ROOT.rglob("*.py")):
        room = room_of(path)
        assert room in FLOORS, f"{path.relative_to(ROOT)}: room {room!r} has no floor in FLOORS"
        for module in imports(path):
            top, _, rest = module.partition(".")
            if top == "synthcity" and room not in SYNTHCITY_ROOMS:
                synthcity.append(f"{path.relative_to(ROOT)} imports {module}")
            if top == "synthcity_dpswf" and rest:
                target = rest.split(".")[0]
                if target != room and FLOORS[target] >= FLOORS[room]:
                    upward.append(f"{path.relative_to(ROOT)} ({room}, floor {FLOORS[room]}) imports {module} "
                                  f"(floor {FLOORS[target]})")
    assert not upward, f"imports that do not go down a floor: {upward}"
    assert not synthcity, f"synthcity imported below the plugins: {synthcity}"


def test_the_check_catches_an_upward_import(tmp_path: Path) -> None:
    """The check can fail: a models module importing the plugins is upward."""
    module = tmp_path / "bad.py"
    module.write_text("from synthcity_dpswf.plugins.base import SlicedFlowPlugin\nimport synthcity.plugins\n")
    found = imports(module)
    assert found == ["synthcity_dpswf.plugins.base", "synthcity.plugins"]
    assert FLOORS["plugins"] >= FLOORS["models"]

"""The house's layers (../shared/design/architecture.md): imports only go down a floor, and nothing below the plugins
imports synthcity, so the core (math, privacy, models, adapters, recipes) runs without it."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "synthcity_dpswf"

FLOORS = {
    "math": 0, "notices": 0,
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


def offences(root: Path) -> tuple[list[str], list[str]]:
    """The imports under ``root`` (a package laid out as ``synthcity_dpswf/``) that do not go down a floor, and its
    imports of synthcity below the plugins."""
    upward, synthcity = [], []
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root).parts
        room = parts[0] if len(parts) > 1 else parts[0].removesuffix(".py")
        assert room in FLOORS, f"{path.relative_to(root)}: room {room!r} has no floor in FLOORS"
        for module in imports(path):
            top, _, rest = module.partition(".")
            if top == "synthcity" and room not in SYNTHCITY_ROOMS:
                synthcity.append(f"{path.relative_to(root)} imports {module}")
            if top == "synthcity_dpswf" and rest:
                target = rest.split(".")[0]
                if target != room and FLOORS[target] >= FLOORS[room]:
                    upward.append(f"{path.relative_to(root)} ({room}, floor {FLOORS[room]}) imports {module} "
                                  f"(floor {FLOORS[target]})")
    return upward, synthcity


def test_every_room_has_a_floor_and_imports_only_go_down() -> None:
    upward, synthcity = offences(ROOT)
    assert not upward, f"imports that do not go down a floor: {upward}"
    assert not synthcity, f"synthcity imported below the plugins: {synthcity}"


def test_the_check_catches_an_upward_import_and_synthcity_below_the_plugins(tmp_path: Path) -> None:
    """A models module importing the plugins and synthcity is flagged twice; the same imports from the plugins are not."""
    (tmp_path / "models").mkdir()
    (tmp_path / "plugins").mkdir()
    line = "from synthcity_dpswf.recipes.tables import settle_table\nimport synthcity.plugins\n"
    (tmp_path / "models" / "bad.py").write_text(line)
    (tmp_path / "plugins" / "fine.py").write_text(line)
    upward, synthcity = offences(tmp_path)
    assert upward == ["models/bad.py (models, floor 2) imports synthcity_dpswf.recipes.tables (floor 5)"]
    assert synthcity == ["models/bad.py imports synthcity.plugins"]

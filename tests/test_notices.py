"""The package's warnings reach a synthcity user: importing synthcity ignores every warning, and ``synthcity_dpswf``
shows its own category (``notices.DPSWFWarning``) again (issue 44: a new user's binary columns came back constant with
no word, though the guide promised one)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "synthcity_dpswf"


def test_every_warning_of_the_package_has_its_category() -> None:
    """Each ``warnings.warn`` call passes a category (``DPSWFWarning`` or a subclass): one filter shows them all."""
    uncategorised = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "warn" \
                    and isinstance(node.func.value, ast.Name) and node.func.value.id == "warnings":
                category = node.args[1] if len(node.args) > 1 else next(
                    (keyword.value for keyword in node.keywords if keyword.arg == "category"), None)
                if not (isinstance(category, ast.Name) and category.id.endswith("Warning")
                        and category.id not in ("UserWarning", "RuntimeWarning")):
                    uncategorised.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert not uncategorised, f"warnings without the package's category: {uncategorised}"


def test_the_dp_domain_s_warning_reaches_a_synthcity_user() -> None:
    """A fresh process, as a user's (pytest resets the filters around each test): a table with a column of unique
    strings (an identifier: no category can be published, whatever the noise) is fitted through synthcity's
    ``Plugins``, and the DP domain's warning naming it is printed."""
    script = (
        "import numpy as np, pandas as pd, synthcity_dpswf\n"
        "from synthcity.plugins import Plugins\n"
        "rng = np.random.default_rng(0)\n"
        "frame = pd.DataFrame({'x': rng.normal(size=1000), 'id': [f'person-{i}' for i in range(1000)]})\n"
        "Plugins().get('dpswflow', epsilon=1.0, n_steps=5).fit(frame)\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "DPSWFWarning: the DP domain could not place columns ['id']" in result.stderr, result.stderr[-2000:]

"""``generate(constraints=...)`` on tables: synthcity's rules as given (its rebuilt schema drops "<" and ">" and widens
"in"), fewer rows with a warning where the generator rarely meets them, and later draws that reuse one flow of at most
``count`` particles instead of flowing ``count`` new ones per draw (docs/guide.md, "Generation")."""

from __future__ import annotations

import subprocess
import sys
import warnings

import numpy as np
import pandas as pd
import pytest
import synthcity_dpswf  # noqa: F401  (registers the plugins)
from synthcity.plugins import Plugins
from synthcity.plugins.core.constraints import Constraints

from synthcity_dpswf.plugins.base import SlicedFlowPlugin


@pytest.fixture(scope="module")
def plugin() -> SlicedFlowPlugin:
    """A fast fit on a table whose group follows its level (``a`` below 5, ``b`` above, mostly)."""
    rng = np.random.default_rng(0)
    level = rng.uniform(0.0, 10.0, 2000)
    group = np.where(rng.random(2000) < 0.9, np.where(level < 5, "a", "b"), np.where(level < 5, "b", "a"))
    frame = pd.DataFrame({"level": level, "group": group})
    return Plugins().get("dpswflow", epsilon=10.0, n_steps=20, domain={"level": (0.0, 10.0), "group": ["a", "b"]}).fit(frame)


def counted_flows(plugin: SlicedFlowPlugin, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The particles each later ``sample`` call flows (the first call: the rows it asks for, at most 10,000)."""
    flows: list[int] = []
    sample = plugin.generator_.sample

    def counting(count: int, **kwargs: object) -> object:
        flows.append(min(count, int(kwargs.get("flow_particles", 10_000))))  # type: ignore[call-overload]
        return sample(count, **kwargs)

    monkeypatch.setattr(plugin.generator_, "sample", counting)
    return flows


@pytest.mark.parametrize("rules", [
    [("level", "<", 2.0)],
    [("level", ">", 8.0), ("group", "==", "b")],
    [("group", "in", ["a"])],
], ids=["less-than", "greater-than-and-equal", "in"])
def test_rules_synthcity_s_schema_drops_are_met_without_an_error(plugin: SlicedFlowPlugin, rules: list) -> None:
    constraints = Constraints(rules=rules)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # every row asked for comes back
        generated = plugin.generate(300, constraints=constraints).dataframe()
    assert len(generated) == 300 and constraints.filter(generated).all()


def test_a_constraint_met_by_few_rows_reuses_one_flow_per_later_draw(plugin: SlicedFlowPlugin,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """About a fifth of the rows have level < 2: synthcity drew (and flowed) 300 rows at a time, five or more times;
    here the second draw asks for what is missing at that rate, from one flow of 300 particles."""
    reference = plugin.generate(3000).dataframe()
    flows = counted_flows(plugin, monkeypatch)
    generated = plugin.generate(300, constraints=Constraints(rules=[("level", "<", 2.0)])).dataframe()
    assert len(generated) == 300 and (generated["level"] < 2.0).all()
    assert len(flows) <= 3 and sum(flows) <= 3 * 300
    # The rows kept follow the generator's own conditional distribution: mostly group a, as its unfiltered rows.
    expected = (reference.loc[reference["level"] < 2.0, "group"] == "a").mean()
    assert abs((generated["group"] == "a").mean() - expected) < 0.15


def test_a_constraint_no_row_meets_returns_what_was_kept_with_a_warning(plugin: SlicedFlowPlugin,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    flows = counted_flows(plugin, monkeypatch)
    never = Constraints(rules=[("level", "<", 0.0)])
    with pytest.warns(UserWarning, match=r"the constraints kept 0 of the 700 rows generated in 3 draws, fewer than the "
                                         r"100 asked for.*loosen them"):
        generated = plugin.generate(100, constraints=never).dataframe()
    assert len(generated) == 0 and list(generated.columns) == ["level", "group"]
    assert flows == [100, 100, 100]  # three draws (100, 200 and 400 rows), each one flow of 100 particles


@pytest.mark.slow  # tests/test_notices.py shows every DPSWFWarning (ConstraintsWarning's class) the same way
def test_the_warning_is_shown_although_synthcity_s_import_ignores_every_warning() -> None:
    """synthcity's ``__init__`` (and fflows, which its plugin loader imports) calls ``warnings.simplefilter("ignore")``:
    the package puts a filter showing ``ConstraintsWarning`` in front of those once synthcity is imported. A fresh
    process, as a user's (pytest saves and restores the filters around collection and each test)."""
    script = ("import warnings, synthcity_dpswf\n"
              "from synthcity.plugins import Plugins\n"
              "from synthcity_dpswf.plugins.table_path import ConstraintsWarning\n"
              "warnings.warn('kept 0 rows', ConstraintsWarning)\n")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0 and "ConstraintsWarning: kept 0 rows" in result.stderr

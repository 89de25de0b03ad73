"""The table recipe (``recipes.tables``): a pandas frame becomes a fitted generator with no synthcity imported, and
its budget, noise and report are the plugin's."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pandas as pd
import pytest

from synthcity_dpswf.models import DPSWFlow, FlowSettings
from synthcity_dpswf.models.base import GeneratorSpec
from synthcity_dpswf.privacy.budget import Budget
from synthcity_dpswf.recipes.tables import TableChoices, settle_table

EPSILON, DELTA = 1.0, 1e-5


def survey(n: int = 600) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    return pd.DataFrame({"age": rng.integers(18, 90, n), "city": rng.choice(["a", "b", "c"], n),
                         "income": rng.lognormal(10, 1, n)})


SPEC = GeneratorSpec(DPSWFlow, {"release": "marginal", "accountant": "rdp", "neighbouring": "replace_one"})


def test_a_frame_becomes_a_fitted_generator_within_the_budget() -> None:
    frame = survey()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        settled = settle_table(frame, len(frame), Budget(EPSILON, DELTA).for_records(len(frame)),
                               TableChoices("marginal"), SPEC)
    assert settled.paid is not None and settled.budget.prior is not None  # a DP domain was released and spent
    assert settled.budget.release_delta < DELTA  # its category threshold took its delta
    model = DPSWFlow(release="marginal", marginals=settled.layout, settings=FlowSettings(n_steps=30))
    model.fit(settled.codec.encode(frame), None, settled.budget.release_delta, noise_multiplier=settled.noise_multiplier,
              prior=settled.budget.prior, plan=settled.plan)
    assert model.privacy_report.epsilon == pytest.approx(EPSILON, rel=1e-6)  # the domain and the release: the budget
    rows = settled.codec.decode(model.sample(200, seed=1))
    assert list(rows.columns) == list(frame.columns) and len(rows) == 200


def test_the_declared_domain_pays_nothing_and_leaves_the_whole_budget() -> None:
    frame = survey()
    declared = {"age": (18, 90), "city": ["a", "b", "c"], "income": (0.0, 1e7)}
    from synthcity_dpswf.adapters import TabularDomain

    settled = settle_table(frame, len(frame), Budget(EPSILON, DELTA).for_records(len(frame)),
                           TableChoices("marginal", TabularDomain.parse(declared), numeric_histograms=False), SPEC)
    assert settled.paid is None and settled.budget.prior is None and settled.budget.release_delta == DELTA


def test_the_recipe_imports_no_synthcity() -> None:
    script = textwrap.dedent("""
        import sys, warnings
        import numpy as np, pandas as pd
        from synthcity_dpswf.models import DPSWFlow
        from synthcity_dpswf.privacy.budget import Budget
        from synthcity_dpswf.models.base import GeneratorSpec
        from synthcity_dpswf.recipes.tables import TableChoices, settle_table
        frame = pd.DataFrame({"x": np.arange(300) % 7, "y": np.random.default_rng(0).normal(size=300)})
        spec = GeneratorSpec(DPSWFlow, {"release": "marginal", "accountant": "rdp", "neighbouring": "replace_one"})
        warnings.simplefilter("ignore")
        settle_table(frame, 300, Budget(3.0, 1e-5), TableChoices("marginal"), spec)
        print(sorted(name for name in sys.modules if name.split(".")[0] == "synthcity"))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert done.stdout.strip().splitlines()[-1] == "[]"


def test_a_frame_whose_columns_are_not_named_by_strings_settles() -> None:
    """A second reader's case: the recipe reads a frame's columns by their own labels (0 and 1 here), as pandas
    names them."""
    rng = np.random.default_rng(1)
    frame = pd.DataFrame({0: np.arange(300) % 7, 1: rng.choice(["a", "b"], 300)})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        settled = settle_table(frame, len(frame), Budget(3.0, DELTA).for_records(len(frame)), TableChoices("marginal"),
                               SPEC)
    assert settled.domain.names == [0, 1]

"""The run's ``Budget``: checked once where the user gives it, its spent parts composed exactly, and the releases'
noise calibrated once, from the generator class's schedule, before any generator is built (issue 36)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest
from synthcity.plugins import Plugins

import synthcity_dpswf  # noqa: F401  (registers the plugins)
from synthcity_dpswf.models import DPSWFlow, DPSWFlowR, ReleaseSchedule
from synthcity_dpswf.privacy.accountant import ReleaseAccountant
from synthcity_dpswf.privacy.gaussian import (
    analytic_gaussian_epsilon,
    analytic_gaussian_noise_multiplier,
    composed_multiplier,
)
from synthcity_dpswf.privacy.budget import Budget, default_delta

EPSILON, DELTA = 1.0, 1e-5


@pytest.mark.parametrize(("epsilon", "delta", "neighbouring", "message"), [
    ("1.0", None, "replace_one", "epsilon must be a number"),
    (True, None, "replace_one", "epsilon must be a number"),
    (0.0, None, "replace_one", "epsilon must be > 0"),
    (float("nan"), None, "replace_one", "epsilon must be > 0"),
    (1.0, 1.0, "replace_one", "delta must lie in"),
    (1.0, "1e-5", "replace_one", "delta must be a number"),
    (1.0, None, "swap", "neighbouring"),
])
def test_a_budget_is_refused_where_it_is_given(epsilon: object, delta: object, neighbouring: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Budget(epsilon, delta, neighbouring)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=message):  # the plugin's constructor builds it: refused at Plugins().get
        Plugins().get("dpswflow", epsilon=epsilon, delta=delta, neighbouring=neighbouring)


def test_delta_left_none_is_chosen_from_the_public_n_and_a_given_one_is_kept() -> None:
    assert Budget(EPSILON).for_records(50_000).delta == default_delta(50_000) == pytest.approx(50_000**-1.1)
    assert Budget(EPSILON, neighbouring="add_remove").for_records(None).delta == 1e-5  # n private: never read
    assert Budget(EPSILON, 1e-7).for_records(50_000).delta == 1e-7
    with pytest.raises(ValueError, match="for_records"):
        Budget(EPSILON).release_delta


def test_spent_parts_compose_to_exactly_the_budget() -> None:
    """A share s of mu^2 and a threshold's delta spent before one release of all records: the release gets
    z / sqrt(1 - s) at delta - delta_T, and the whole is (epsilon, delta_G)-DP exactly (Gaussian DP)."""
    budget = Budget(EPSILON, DELTA)
    threshold = DELTA / 4
    first = budget.share(0.2, threshold)
    spent = budget.spend(first, threshold)
    assert spent.prior == pytest.approx(first) and spent.release_delta == pytest.approx(DELTA - threshold)
    release = spent.noise_multiplier(ReleaseAccountant(500, 500, "rdp", prior=spent.prior), 1)
    z = analytic_gaussian_noise_multiplier(EPSILON, DELTA - threshold)
    assert first == pytest.approx(z / math.sqrt(0.2)) and release == pytest.approx(z / math.sqrt(0.8))
    assert analytic_gaussian_epsilon(composed_multiplier(release, first), spent.release_delta) == pytest.approx(EPSILON, rel=1e-6)
    # Two parts spent: their prior is their composition, and a factor-2 slip in either would move it.
    twice = spent.spend(4.0 * first)
    assert twice.prior == pytest.approx(1 / math.sqrt(1 / first**2 + 1 / (16 * first**2)))


def test_the_calibration_refuses_an_accountant_built_for_another_prior_and_no_noise_is_inf() -> None:
    spent = Budget(EPSILON, DELTA).spend(20.0)
    with pytest.raises(ValueError, match="prior"):
        spent.noise_multiplier(ReleaseAccountant(500, 500, "rdp"), 1)
    assert Budget(math.inf, DELTA).noise_multiplier(ReleaseAccountant(500, 500, "rdp"), 1) == 0.0
    with pytest.raises(ValueError, match="no noise to share"):
        Budget(math.inf, DELTA).share(0.1)


def test_a_generator_class_gives_its_schedule_before_it_is_built() -> None:
    arguments = {"batch_size": 250, "passes": 2.0}
    assert DPSWFlowR.schedule_of(arguments) == DPSWFlowR(**arguments).schedule == ReleaseSchedule(True, 250, None, 2.0)
    assert DPSWFlowR.schedule_of(arguments).batches(2000) == (250, 16)
    assert DPSWFlow.schedule_of({}).batches(2000) == (2000, 1)
    assert ReleaseSchedule(True).poisson() == (0.1, 100)
    with pytest.raises(ValueError, match="passes"):
        ReleaseSchedule(True, passes=0.0)


def small_table(n: int = 400) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    return pd.DataFrame({"age": rng.integers(18, 90, n), "city": rng.choice(["a", "b", "c"], n),
                         "income": rng.lognormal(10, 1, n)})


@pytest.mark.parametrize("name", ["dpswflow", "dpswflow_r"])
def test_a_plugin_fit_calibrates_the_noise_once(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """From the plugin's constructor to the noise: one calibration (the releases' schedule, with the DP domain as
    its prior), and the report's epsilon, recomputed from the noise it states, is the budget's."""
    calls: list[tuple[float, float, int]] = []
    calibrate = ReleaseAccountant.calibrate

    def counted(self: ReleaseAccountant, epsilon: float, delta: float, steps: int) -> float:
        calls.append((epsilon, delta, steps))
        return calibrate(self, epsilon, delta, steps)

    monkeypatch.setattr(ReleaseAccountant, "calibrate", counted)
    plugin = Plugins().get(name, epsilon=EPSILON, delta=DELTA, n_steps=20)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plugin.fit(small_table())
    assert len(calls) == 1 and calls[0][0] == EPSILON
    report = plugin.privacy_report()
    assert report.epsilon == pytest.approx(EPSILON, rel=1e-3) and report.epsilon <= EPSILON * (1 + 1e-9)


def test_a_given_delta_above_one_over_n_is_warned_about_once_with_the_users_delta() -> None:
    """n = 300, delta = 4e-3: the DP domain's threshold takes delta / 4, so the releases' delta (3e-3) is below 1/n
    while the user's is not; the warning names the user's delta, once; never under add/remove."""
    table = small_table(300)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        Plugins().get("dpswflow", epsilon=EPSILON, delta=4e-3, n_steps=20).fit(table)
    about_n = [str(warning.message) for warning in caught if "1/n" in str(warning.message)]
    assert len(about_n) == 1 and about_n[0].startswith("delta=0.004 >= 1/n")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        Plugins().get("dpswflow", epsilon=EPSILON, delta=4e-3, n_steps=20, neighbouring="add_remove").fit(table)
    assert not [warning for warning in caught if "1/n" in str(warning.message)]


def test_one_spent_part_is_the_prior_exactly() -> None:
    for z in np.random.default_rng(0).uniform(0.5, 50.0, 200):
        assert Budget(EPSILON, DELTA).spend(float(z)).prior == float(z)


def test_the_plugin_s_epsilon_delta_and_adjacency_are_its_budget_s() -> None:
    """Setting one of them builds a new Budget, checked there; a fit then uses it (no stale copy)."""
    plugin = Plugins().get("dpswflow", epsilon=2.0)
    plugin.epsilon, plugin.delta = 1.0, 1e-6
    assert plugin.budget == Budget(1.0, 1e-6, "replace_one") and plugin.epsilon == 1.0
    with pytest.raises(ValueError, match="epsilon must be > 0"):
        plugin.epsilon = -1.0
    plugin.neighbouring = "add_remove"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plugin.fit(small_table())
    assert "add/remove" in str(plugin.privacy_report()) and plugin.privacy_report().epsilon <= 1.0 + 1e-9

"""One budget for a table's DP domain and the generator's releases (privacy.md, "One budget"): the composed epsilon
is the budget, recomputed here from the stated multipliers with the libraries directly; the prior joins every
accountant exactly; the category threshold takes its delta from the whole."""

from __future__ import annotations

import math
import warnings

import dp_accounting
import numpy as np
import pandas as pd
import pytest
from opacus.accountants import RDPAccountant
from scipy.stats import norm
from synthcity.plugins import Plugins

import synthcity_dpswf  # noqa: F401  (registers the plugins)
from synthcity_dpswf.privacy import secret_generator
from synthcity_dpswf.privacy.accountant import RDP_ORDERS, ReleaseAccountant
from synthcity_dpswf.privacy.gaussian import (
    analytic_gaussian_epsilon,
    analytic_gaussian_noise_multiplier,
    composed_multiplier,
)
from synthcity_dpswf.privacy.budget import THRESHOLD_DELTA_SHARE, Budget
from synthcity_dpswf.privacy.domain import DomainCalibration, release_domain_at
from synthcity_dpswf.privacy.domain.calibration import stage_noise
from synthcity_dpswf.privacy.mechanisms.marginal import selected_pair_count

EPSILON, DELTA = 1.0, 1e-5
pytestmark = pytest.mark.filterwarnings("ignore:release noise seeded with a known seed")


def wide_table(n: int = 600) -> pd.DataFrame:
    """7 columns: 21 pairs, more than twice T = 10, so the plugins pay for a pair selection."""
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({f"x{j}": rng.integers(0, 5, n) for j in range(6)})
    frame["city"] = rng.choice(["a", "b", "c"], n)
    return frame


def small_table(n: int = 300) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    return pd.DataFrame({"age": rng.integers(18, 90, n), "city": rng.choice(["a", "b", "c"], n),
                         "income": rng.lognormal(10, 1, n)})


@pytest.mark.parametrize("share", [0.05, 0.3, 0.7])
def test_the_domain_and_one_release_compose_to_exactly_the_budget(share: float) -> None:
    budget = Budget(EPSILON, DELTA)
    domain = budget.domain_part(share)
    whole = analytic_gaussian_noise_multiplier(EPSILON, domain.gaussian_delta)  # z of the whole, at (epsilon, delta_G)
    assert domain.gaussian_delta + domain.threshold_delta == pytest.approx(DELTA)
    assert domain.threshold_delta == pytest.approx(THRESHOLD_DELTA_SHARE * DELTA)
    assert domain.noise_multiplier == pytest.approx(whole / math.sqrt(share))
    release = ReleaseAccountant(500, 500, "rdp", prior=domain.noise_multiplier).calibrate(EPSILON, domain.gaussian_delta, 1)
    assert release == pytest.approx(whole / math.sqrt(1 - share))
    assert budget.spend(domain.noise_multiplier, domain.threshold_delta).rest_multiplier() == pytest.approx(release)
    composed = 1 / math.sqrt(1 / release**2 + 1 / domain.noise_multiplier**2)
    assert analytic_gaussian_epsilon(composed, domain.gaussian_delta) == pytest.approx(EPSILON, rel=1e-6)
    # The point of it: the same split by basic composition needs more noise on both sides.
    basic_domain = analytic_gaussian_noise_multiplier(share * EPSILON, share * DELTA / 2)
    basic_release = analytic_gaussian_noise_multiplier((1 - share) * EPSILON, (1 - share) * DELTA)
    assert domain.noise_multiplier < basic_domain and release < basic_release


@pytest.mark.parametrize("per_step", [False, True])
def test_release_terms_spend_the_selection_then_calibrate_once(per_step: bool) -> None:
    """``Budget.release_terms``: the selection's share of what the domain left spent, the releases planned before any
    spending given the spent parts as their prior, and their noise calibrated to the rest: the same numbers as the
    steps taken one by one (the plan made with the prior). 20,000 records: the per-step plan's 100 batches of a tenth,
    whose calibration costs a third of what 2,000 records' 20 halves cost (fractional RDP orders converge slower there)."""
    from synthcity_dpswf.models.state import ReleaseSchedule
    from synthcity_dpswf.models.releasing import plan_key

    domain = Budget(EPSILON, DELTA).domain_part(0.2)
    budget = Budget(EPSILON, DELTA).spend(domain.noise_multiplier, domain.threshold_delta)
    schedule = ReleaseSchedule(per_step=per_step)
    terms = budget.release_terms(*schedule.accountant(20_000, "replace_one", "rdp", "marginal"), 0.3)
    selection = budget.share_of_rest(0.3)
    spent = budget.spend(selection)
    plan = schedule.accountant(20_000, "replace_one", "rdp", "marginal", spent.prior)
    assert terms.selection_multiplier == selection and terms.budget == spent
    assert plan_key(terms.plan) == plan_key(plan) and terms.noise_multiplier == spent.noise_multiplier(*plan)
    accountant, steps = plan
    assert terms.count_noise == terms.noise_multiplier / (math.sqrt(steps) * accountant.sample_rate)
    assert budget.release_terms(*schedule.accountant(20_000, "replace_one", "rdp", "marginal")).budget == budget


def test_a_domain_without_kinds_reserves_no_threshold_delta() -> None:
    domain = Budget(EPSILON, DELTA).domain_part(0.05, keyed=False)
    assert domain.threshold_delta == 0 and domain.gaussian_delta == DELTA


def test_the_prior_is_one_more_gaussian_entry_of_every_accountant() -> None:
    """Opacus' history [(z, q, K), (z_0, 1, 1)] and dp-accounting's composed events, computed here directly."""
    z, z0, steps = 3.0, 6.0, 50
    opacus = RDPAccountant()
    opacus.history = [(z, 0.1, steps), (z0, 1.0, 1)]
    expected = opacus.get_epsilon(delta=DELTA, alphas=RDP_ORDERS)
    assert ReleaseAccountant(1000, 100, "rdp", prior=z0).composed_epsilon(z, DELTA, steps) == pytest.approx(expected)
    assert ReleaseAccountant.poisson(0.1, "rdp", prior=z0).composed_epsilon(z, DELTA, steps) == pytest.approx(expected)
    event = dp_accounting.ComposedDpEvent([
        dp_accounting.SelfComposedDpEvent(dp_accounting.SampledWithoutReplacementDpEvent(1000, 100, dp_accounting.GaussianDpEvent(z)), steps),
        dp_accounting.GaussianDpEvent(z0),
    ])
    library = dp_accounting.rdp.RdpAccountant(RDP_ORDERS, neighboring_relation=dp_accounting.NeighboringRelation.REPLACE_ONE)
    library.compose(event)
    ours = ReleaseAccountant(1000, 100, "replace_one_rdp", prior=z0).conservative_epsilon(z, DELTA, steps)
    assert ours == pytest.approx(library.get_epsilon(DELTA))
    # Without the prior the same schedule is cheaper: the prior is not dropped anywhere.
    assert ReleaseAccountant(1000, 100, "rdp").composed_epsilon(z, DELTA, steps) < expected


def test_calibration_with_a_prior_is_the_smallest_multiplier_that_meets_the_budget() -> None:
    accountant = ReleaseAccountant(2000, 200, "rdp", prior=8.0)
    z = accountant.calibrate(EPSILON, DELTA, 100)
    assert accountant.composed_epsilon(z, DELTA, 100) <= EPSILON
    assert accountant.composed_epsilon(0.99 * z, DELTA, 100) > EPSILON
    with pytest.raises(ValueError, match="spends the whole budget"):
        ReleaseAccountant(2000, 2000, "rdp", prior=0.5 * analytic_gaussian_noise_multiplier(EPSILON, DELTA)).calibrate(EPSILON, DELTA, 1)
    # Within the analytic Gaussian's budget but beyond RDP's conversion: refused by the accountant itself
    with pytest.raises(ValueError, match="spends the whole budget"):
        ReleaseAccountant(2000, 200, "rdp", prior=1.02 * analytic_gaussian_noise_multiplier(EPSILON, DELTA)).calibrate(EPSILON, DELTA, 10)


def test_the_threshold_is_proved_for_the_whole_run() -> None:
    """eta = delta_T / (C_key (1 + e^epsilon)) with the run's epsilon, not the domain's own smaller one; C_key counts
    the categorical and the float columns (categories and atoms are private keys); the float columns' precision
    partitions take their own term of s_c."""
    calibration = Budget(EPSILON, DELTA).domain_part(0.2)
    release = release_domain_at(small_table(), calibration, secret_generator(1))
    kinds = list(release.kinds.values())
    n_categorical, n_float = kinds.count("categorical"), kinds.count("float")
    assert n_categorical == 1 and n_float >= 1
    eta = calibration.threshold_delta / ((n_categorical + n_float) * (1 + math.exp(EPSILON)))
    assert release.threshold == pytest.approx(release.category_std * norm.isf(eta))
    _, category_std = stage_noise(calibration.noise_multiplier, len(kinds), n_categorical, len(kinds) - n_categorical, 0,
                                  "replace_one", n_float, n_float)
    assert release.category_std == pytest.approx(category_std)  # the stages carry exactly z_D
    assert calibration.epsilon < EPSILON  # the domain alone: what its part prints
    assert calibration.threshold_delta_at(EPSILON) == pytest.approx(calibration.threshold_delta)
    assert calibration.threshold_delta_at(2 * EPSILON) > calibration.threshold_delta  # a larger epsilon' costs the threshold more
    alone = DomainCalibration.alone(EPSILON, DELTA)
    assert alone.epsilon == pytest.approx(EPSILON) and alone.delta == pytest.approx(DELTA)


def independent_epsilon(report: object, prior: float, delta: float) -> float:
    """The whole run's epsilon at delta_G from the report's numbers alone, with the libraries directly."""
    z, q, steps = report.noise_multiplier, report.sample_rate, report.steps  # type: ignore[attr-defined]
    if q == 1 and steps == 1:
        return analytic_gaussian_epsilon(composed_multiplier(z, prior), delta)
    if report.neighbouring.startswith("add/remove"):  # type: ignore[attr-defined]
        opacus = RDPAccountant()
        opacus.history = [(z, q, steps), (prior, 1.0, 1)]
        return opacus.get_epsilon(delta=delta, alphas=RDP_ORDERS)
    n = int(report.public[0].split("n = ")[1].split(" ")[0])  # type: ignore[attr-defined]
    event = dp_accounting.GaussianDpEvent(z)
    if q < 1:
        event = dp_accounting.SampledWithoutReplacementDpEvent(n, round(q * n), event)
    library = dp_accounting.rdp.RdpAccountant([o for o in RDP_ORDERS if o <= 128], neighboring_relation=dp_accounting.NeighboringRelation.REPLACE_ONE)
    library.compose(dp_accounting.ComposedDpEvent([dp_accounting.SelfComposedDpEvent(event, steps), dp_accounting.GaussianDpEvent(prior)]))
    return library.get_epsilon(delta)


def drawn_domain_multiplier(drawn: list[tuple[float, float]], neighbouring: str) -> float:
    """z_D recomputed from the noise the DP domain actually drew, never from its claim: each ``noisy_counts`` call
    releases one partition of one column (``weight`` times its counts plus N(0, s^2)), in which one neighbour moves at
    most m = 2 (replace-one) or 1 (add/remove) unit counts, so mu_D^2 = sum over calls of m w^2 / s^2 (Gaussian DP's
    composition) and z_D = 1 / mu_D."""
    moved = 2 if neighbouring == "replace_one" else 1
    return 1 / math.sqrt(sum(moved * weight**2 / std**2 for std, weight in drawn))


def fit_recording_domain_noise(name: str, neighbouring: str, frame: pd.DataFrame, monkeypatch: pytest.MonkeyPatch,
                               domain: dict[str, object] | None = None) -> tuple[object, list[tuple[float, float]]]:
    """A plugin fitted on ``frame`` with a DP domain for the columns ``domain`` leaves out, and the (std, weight) of
    every vector the domain drew noise for."""
    from synthcity_dpswf.privacy.domain import release as domain_module

    drawn: list[tuple[float, float]] = []
    draw = domain_module.noisy_counts

    def recorded(counts: np.ndarray, noise_std: float, secret: object, weight: float = 1.0) -> np.ndarray:
        drawn.append((float(noise_std), float(weight)))
        return draw(counts, noise_std, secret, weight)  # type: ignore[arg-type]

    monkeypatch.setattr(domain_module, "noisy_counts", recorded)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plugin = Plugins().get(name, epsilon=EPSILON, delta=DELTA, neighbouring=neighbouring, n_steps=5, domain=domain)
        plugin.fit(frame)
    return plugin, drawn


def coded_table(n: int = 300) -> pd.DataFrame:
    """``small_table`` with a coded float column (half-year ages), whose frequent values the domain counts as atoms."""
    return small_table(n).assign(age_years=lambda frame: frame["age"] + 0.5 * (frame.index % 2))


@pytest.mark.parametrize("neighbouring", ["replace_one", "add_remove"])
@pytest.mark.parametrize("name", ["dpswflow", "dpswflow_r", "dpswgen"])
def test_a_plugin_with_a_dp_domain_reports_exactly_its_budget(name: str, neighbouring: str,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """The domain's multiplier is recomputed from the standard deviations its noise was drawn at (every stage, atoms
    included), equals the one its part claims, and composes with the releases to the budget."""
    plugin, drawn = fit_recording_domain_noise(name, neighbouring, coded_table(), monkeypatch)
    report, part = plugin.privacy_report(), plugin.domain_part_
    assert part is not None and report.parts == (part,) and report.composition == "accounted"
    assert "float" in set(plugin.released_domain()["kind"])  # the atoms' stage drew noise too
    gaussian_delta = DELTA - part.threshold_delta
    assert part.threshold_delta == pytest.approx(THRESHOLD_DELTA_SHARE * DELTA) and report.delta == pytest.approx(DELTA)
    prior = drawn_domain_multiplier(drawn, neighbouring)
    assert prior == pytest.approx(analytic_gaussian_noise_multiplier(part.epsilon, gaussian_delta), rel=1e-6)
    assert 0.99 * EPSILON < independent_epsilon(report, prior, gaussian_delta) <= EPSILON * (1 + 1e-6)
    assert report.epsilon <= EPSILON * (1 + 1e-6)
    assert "exact: DP domain's releases are entries of the accounting above" in str(report)


@pytest.mark.parametrize("neighbouring", ["replace_one", "add_remove"])
def test_a_partial_schema_s_declared_columns_are_in_the_drawn_multiplier(neighbouring: str,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Declared numeric columns get a value histogram (stage 3) and a declared float column its atoms (stage 4) inside
    the DP domain's noise: the multiplier recomputed from what was drawn is the claim, and so is the whole epsilon (the
    second reader's mutant, the stages calibrated without the declared columns' term, fails here)."""
    declared = {"age": (18, 90), "income": (0.0, 2e6)}
    plugin, drawn = fit_recording_domain_noise("dpswflow", neighbouring, coded_table(), monkeypatch, declared)
    report, part = plugin.privacy_report(), plugin.domain_part_
    gaussian_delta = DELTA - part.threshold_delta
    prior = drawn_domain_multiplier(drawn, neighbouring)
    assert prior == pytest.approx(analytic_gaussian_noise_multiplier(part.epsilon, gaussian_delta), rel=1e-6)
    assert 0.99 * EPSILON < independent_epsilon(report, prior, gaussian_delta) <= EPSILON * (1 + 1e-6)


@pytest.mark.parametrize("left_out", ["n_atoms", "n_precision"])
def test_the_drawn_noise_catches_stage_four_left_out_of_the_calibration(left_out: str,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The mutants: the stages' noise calibrated without the atoms' term, or without the precision partitions'
    (``stage_noise`` told of no such column), still report the budget, but the noise drawn is below it: the
    recomputed multiplier is smaller than the claim and the whole run's epsilon exceeds the budget, which the test
    above would refuse."""
    from synthcity_dpswf.privacy.domain import release as domain_module

    calibrate = domain_module.stage_noise

    def mutant(*args: object) -> tuple[float, float]:
        counts = dict(zip(("n_atoms", "n_precision"), args[6:]))
        return calibrate(*args[:6], **{**counts, left_out: 0})  # type: ignore[arg-type]

    monkeypatch.setattr(domain_module, "stage_noise", mutant)
    plugin, drawn = fit_recording_domain_noise("dpswflow", "replace_one", coded_table(), monkeypatch)
    report, part = plugin.privacy_report(), plugin.domain_part_
    gaussian_delta = DELTA - part.threshold_delta
    prior = drawn_domain_multiplier(drawn, "replace_one")
    assert prior < 0.99 * analytic_gaussian_noise_multiplier(part.epsilon, gaussian_delta)
    assert independent_epsilon(report, prior, gaussian_delta) > EPSILON * (1 + 1e-3)


def test_the_other_adjacency_of_a_one_shot_run_composes_the_domain_and_its_threshold() -> None:
    """Replace-one DPSWflow restated under add/remove: the analytic Gaussian at sqrt(2) times the composed multiplier
    (z_R with z_D), plus the threshold's delta at that epsilon."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plugin = Plugins().get("dpswflow", epsilon=EPSILON, delta=DELTA, n_steps=5).fit(small_table())
    report, part = plugin.privacy_report(), plugin.domain_part_
    gaussian_delta = DELTA - part.threshold_delta
    prior = analytic_gaussian_noise_multiplier(part.epsilon, gaussian_delta)
    expected = analytic_gaussian_epsilon(math.sqrt(2) * composed_multiplier(report.noise_multiplier, prior), gaussian_delta)
    assert report.other.epsilon == pytest.approx(expected, rel=1e-4) and report.other.epsilon < EPSILON
    assert report.other.delta == pytest.approx(gaussian_delta + part.threshold_delta_at(expected))
    assert report.conservative_delta == pytest.approx(gaussian_delta + part.threshold_delta_at(report.conservative_epsilon))


@pytest.mark.parametrize("neighbouring", ["replace_one", "add_remove"])
@pytest.mark.parametrize("name", ["dpswflow", "dpswflow_r", "dpswgen"])
def test_a_plugin_with_a_domain_and_a_selection_reports_exactly_its_budget(name: str, neighbouring: str) -> None:
    """The three parts (domain, selection, releases) recomputed from what each was drawn at, recorded where they are
    made (not from the report): the selection's from the epsilon and sensitivity of every exponential-mechanism round
    as drawn (T rounds at epsilon_r, each 0.63 epsilon_r-GDP), compose to the budget, and the report prints that
    epsilon."""
    from synthcity_dpswf.privacy.mechanisms import marginal as mechanism_module

    rounds: list[tuple[float, float]] = []
    draw = mechanism_module.exponential_mechanism
    monkeypatch = pytest.MonkeyPatch()
    monkeypatch.setattr(mechanism_module, "exponential_mechanism",
                        lambda scores, epsilon, sensitivity, secret: (rounds.append((epsilon, sensitivity)),
                                                                     draw(scores, epsilon, sensitivity, secret))[1])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plugin = Plugins().get(name, epsilon=EPSILON, delta=DELTA, neighbouring=neighbouring, n_steps=5)
        try:
            plugin.fit(wide_table())
        finally:
            monkeypatch.undo()
    report, domain, selection = plugin.privacy_report(), plugin.domain_part_, plugin.selection_part_
    assert domain is not None and selection is not None and report.parts == (domain, selection)
    assert len(plugin.layout_.pairs) == selected_pair_count(7, 120) < 21 and report.delta == pytest.approx(DELTA)
    gaussian_delta = DELTA - domain.threshold_delta
    assert selection.delta == pytest.approx(gaussian_delta) and selection.threshold_delta == 0
    # stage A as drawn: T rounds at one epsilon_r, on the score's sensitivity under the run's adjacency
    assert len(rounds) == selected_pair_count(7, 120) and len(set(rounds)) == 1
    round_epsilon, sensitivity = rounds[0]
    assert sensitivity == pytest.approx(6.0 if neighbouring == "replace_one" else 6.0 / math.sqrt(2))
    drawn_multiplier = 1 / (0.63 * round_epsilon * math.sqrt(len(rounds)))
    assert selection.epsilon == pytest.approx(analytic_gaussian_epsilon(drawn_multiplier, gaussian_delta))
    prior = composed_multiplier(analytic_gaussian_noise_multiplier(domain.epsilon, gaussian_delta), drawn_multiplier)
    assert 0.99 * EPSILON < independent_epsilon(report, prior, gaussian_delta) <= EPSILON * (1 + 1e-6)
    assert report.epsilon == pytest.approx(EPSILON, abs=0.01)  # the report prints the whole, selection included
    assert "exact: pair selection's releases are entries of the accounting above" in str(report)
    if name == "dpswflow" and neighbouring == "replace_one":  # the other adjacency: sqrt(2) times the composed z
        expected = analytic_gaussian_epsilon(math.sqrt(2) * composed_multiplier(report.noise_multiplier, prior), gaussian_delta)
        assert report.other.epsilon == pytest.approx(expected, rel=1e-4)

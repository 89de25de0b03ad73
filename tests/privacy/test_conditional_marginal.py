"""The marginal release counted per class of a named target (privacy.md, "Tables conditioned on a named target"): its
sensitivity lemma on adversarial pairs, the Gaussian audit that passes it and fails factor-2 mistakes, and a fit
that keeps a target's dependence on two columns at once, which no one- or two-way table holds."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest
import torch

from synthcity_dpswf.privacy import MarginalLayout, ReleaseAccountant, ReleaseOptions, secret_generator
from synthcity_dpswf.privacy.audit import PrivacyAuditError, audit_gaussian_scores
from synthcity_dpswf.privacy.mechanisms import MarginalRelease
from synthcity_dpswf.privacy.mechanisms.marginal import block_statistic

pytestmark = pytest.mark.filterwarnings("ignore:release noise seeded with a known seed")

# Four columns; column 2 is the target, 5 fine levels in 4 classes (its coarse levels); no pair contains it.
LEVELS = (3, 12, 5, 2)
LAYOUT = MarginalLayout.build(LEVELS, coarse_bins=4, condition=2, classes=4)


def test_the_layout_counts_per_target_class_and_pairs_leave_the_target_out() -> None:
    assert LAYOUT.classes == 4 and LAYOUT.condition == 2
    assert all(2 not in pair for pair in LAYOUT.pairs) and len(LAYOUT.pairs) == 3
    assert LAYOUT.n_tables == 4 + 3  # m = d + P, per class
    with pytest.raises(ValueError, match="no pair may contain the condition column"):
        MarginalLayout(LEVELS, LAYOUT.coarse_levels, ((1, 2),), (), 2)
    # every fine level of the target lies in exactly one class
    assert torch.stack([LAYOUT.class_levels(c) for c in range(4)]).sum(dim=0).tolist() == [1] * 5


def _statistic(record: list[int]) -> torch.Tensor:
    return MarginalRelease(ReleaseOptions(layout=LAYOUT)).statistic(torch.tensor([record], dtype=torch.float32), None)


def test_the_sensitivity_bound_holds_on_random_pairs_and_is_attained_across_and_within_classes() -> None:
    bound = MarginalRelease(ReleaseOptions(layout=LAYOUT)).sensitivity(None)
    assert bound == pytest.approx(math.sqrt(2 * LAYOUT.n_tables))
    generator = torch.Generator().manual_seed(3)
    for _ in range(300):
        a, b = ([int(torch.randint(k, (1,), generator=generator)) for k in LEVELS] for _ in range(2))
        assert float((_statistic(a) - _statistic(b)).norm()) <= bound + 1e-9
    other_class = float((_statistic([0, 0, 0, 0]) - _statistic([1, 11, 4, 1])).norm())
    same_class = float((_statistic([0, 0, 0, 0]) - _statistic([2, 11, 1, 1])).norm())  # target levels 0, 1: class 0
    assert other_class == pytest.approx(bound) and same_class == pytest.approx(bound)
    add_remove = MarginalRelease(ReleaseOptions(layout=LAYOUT)).add_remove_sensitivity(None)
    assert float(_statistic([1, 5, 3, 0]).norm()) == pytest.approx(add_remove) == pytest.approx(math.sqrt(LAYOUT.n_tables))


def test_the_class_blocks_sum_to_the_unconditioned_tables() -> None:
    codes = torch.stack([torch.randint(k, (500,), generator=torch.Generator().manual_seed(k)) for k in LEVELS], dim=1)
    blocks = LAYOUT.blocks(MarginalRelease(ReleaseOptions(layout=LAYOUT)).statistic(codes.float(), None))
    assert blocks.shape == (4, sum(LAYOUT.sizes))
    assert torch.equal(blocks.sum(dim=0), block_statistic(LAYOUT.unconditioned(), codes))
    counted = MarginalRelease(ReleaseOptions(layout=LAYOUT)).counted_records(blocks.reshape(-1))
    assert float(counted) == pytest.approx(500)


AUDIT_EPSILON, AUDIT_DELTA, AUDIT_CONFIDENCE, AUDIT_RUNS = 2.0, 1e-5, 0.999, 1500


def _scores(monkeypatch: pytest.MonkeyPatch, mutation: str) -> tuple[np.ndarray, np.ndarray, float]:
    """Likelihood-ratio scores of one-shot releases on D = {c} and D' = {c'}, c and c' of different classes and
    different in every coarse level (the lemma's worst pair), with a mutation installed."""
    from synthcity_dpswf.privacy.mechanisms import base
    from synthcity_dpswf.privacy.mechanisms.base import gaussian_noise

    if mutation == "noise halved":
        monkeypatch.setattr(base, "gaussian_noise", lambda shape, std, gen, like: gaussian_noise(shape, std / 2, gen, like))
    elif mutation == "one block's sensitivity":  # the classes taken as separate releases, m / C tables each
        monkeypatch.setattr(MarginalRelease, "sensitivity",
                            lambda self, directions: math.sqrt(2 * self.layout.n_tables / self.layout.classes))
    accountant = ReleaseAccountant(1, 1)
    z = accountant.calibrate(AUDIT_EPSILON, AUDIT_DELTA, 1)
    mechanism = MarginalRelease(ReleaseOptions(layout=LAYOUT))
    canary, replacement = torch.tensor([[0.0, 0, 0, 0]]), torch.tensor([[1.0, 11, 4, 1]])
    gap = (mechanism.statistic(canary, None) - mechanism.statistic(replacement, None)).double()
    secret = secret_generator(11)
    scores = []
    for record in (canary, replacement):
        values = torch.stack([mechanism.release(record, None, z, secret).values for _ in range(AUDIT_RUNS)])
        scores.append((values.double() @ gap).numpy())
    return scores[0], scores[1], accountant.epsilon(z, AUDIT_DELTA, 1).epsilon


@pytest.mark.parametrize("mutation", ["sound", "noise halved", "one block's sensitivity"])
def test_the_gaussian_audit_passes_the_conditioned_release_and_fails_factor_2_mistakes(
    mutation: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    scores_in, scores_out, claimed = _scores(monkeypatch, mutation)
    if mutation != "sound":
        with pytest.raises(PrivacyAuditError, match="PRIVACY AUDIT FAILED"):
            audit_gaussian_scores(scores_in, scores_out, AUDIT_DELTA, claimed, AUDIT_CONFIDENCE)
        return
    result = audit_gaussian_scores(scores_in, scores_out, AUDIT_DELTA, claimed, AUDIT_CONFIDENCE)
    assert 0.6 * claimed < result.epsilon_lower_bound < claimed


def _xor_table(rows: int, seed: int) -> pd.DataFrame:
    """a and b uniform bits, the target their exclusive or (no one- or two-way table shows it), and a noise column."""
    rng = np.random.default_rng(seed)
    a, b = rng.integers(0, 2, rows), rng.integers(0, 2, rows)
    return pd.DataFrame({"a": a.astype(str), "b": b.astype(str), "noise": rng.integers(0, 3, rows).astype(str),
                         "y": (a ^ b).astype(str)})


def _xor_accuracy(frame: pd.DataFrame) -> float:
    """How often the rows' target is the exclusive or of a and b."""
    return float(((frame["a"].astype(int) ^ frame["b"].astype(int)) == frame["y"].astype(int)).mean())


XOR_DOMAIN = {"a": ["0", "1"], "b": ["0", "1"], "noise": ["0", "1", "2"], "y": ["0", "1"]}


def _fit_xor(train: pd.DataFrame, named: bool = True, **arguments: object) -> object:
    """DPSWflow at epsilon 5 on an exclusive-or table (``_xor_table``), given as a loader naming ``y`` or as a frame."""
    from synthcity.plugins import Plugins
    from synthcity.plugins.core.dataloader import GenericDataLoader

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plugin = Plugins().get("dpswflow", epsilon=5.0, delta=1e-5, domain=XOR_DOMAIN, random_state=0, **arguments)
        return plugin.fit(GenericDataLoader(train, target_column="y") if named else train)


def test_tables_per_value_keep_a_target_s_dependence_on_two_columns_at_once_and_pairs_do_not(
        seeded_release_noise: None) -> None:
    train = _xor_table(3000, 0)
    named = _fit_xor(train, target_tables="per_value")
    paired = _fit_xor(train)
    plain = _fit_xor(train, named=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        kept = named.generate(3000).dataframe()
        lost = paired.generate(3000).dataframe()
    assert named.layout_.condition == 3 and paired.layout_.condition is None and plain.layout_.condition is None
    assert {pair for pair in paired.layout_.pairs if 3 in pair} == {(0, 3), (1, 3), (2, 3)}
    assert _xor_accuracy(kept) > 0.9  # the real rows: 1.0
    assert abs(_xor_accuracy(lost) - 0.5) < 0.1  # two-way tables alone: independent bits
    assert abs((kept["y"] == "1").mean() - (train["y"] == "1").mean()) < 0.05
    assert "per class of the named target" in str(named.privacy_report())
    assert named.privacy_report().epsilon == pytest.approx(5.0, rel=1e-6)


def test_a_target_column_that_is_not_in_the_table_or_on_dpswgen_is_refused_before_any_release() -> None:
    from synthcity.plugins import Plugins

    train = _xor_table(200, 1)
    with pytest.raises(ValueError, match="not a column of the table"):
        Plugins().get("dpswflow", epsilon=1.0, target_column="z").fit(train)
    with pytest.raises(ValueError, match="cannot count its tables per value"):
        Plugins().get("dpswgen", epsilon=1.0, target_tables="per_value")
    with pytest.raises(ValueError, match="target_tables='none'"):
        Plugins().get("dpswflow", epsilon=1.0, target_column="y", target_tables="none")


def test_generate_with_cond_gives_each_row_its_target_value_drawn_from_that_class(seeded_release_noise: None) -> None:
    train = _xor_table(3000, 2)
    plugin = _fit_xor(train, target_tables="per_value")
    plain = _fit_xor(train, named=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cond = np.array(["1"] * 300 + ["0"] * 100 + ["1"] * 100)
        rows = plugin.generate(500, cond=cond).dataframe()
        with pytest.raises(ValueError, match="one per row"):
            plugin.generate(10, cond=["1"] * 9)
        with pytest.raises(ValueError, match="categor"):  # a value outside the target's domain
            plugin.generate(2, cond=["1", "2"])
        with pytest.raises(ValueError, match="names it"):
            plain.generate(2, cond=["1", "0"])
    assert rows["y"].tolist() == cond.tolist()
    assert _xor_accuracy(rows) > 0.9  # each row drawn from its own class's tables: a xor b matches its y


def _wide_table(rows: int, seed: int) -> pd.DataFrame:
    """Seven small categorical columns and a binary target y (the first two columns' exclusive or): wide enough for a
    paid pair selection, small enough for its tables to be noise-limited."""
    rng = np.random.default_rng(seed)
    columns = {f"c{j}": rng.integers(0, 3, rows).astype(str) for j in range(7)}
    columns["y"] = ((columns["c0"] == "1") ^ (columns["c1"] == "1")).astype(int).astype(str)
    return pd.DataFrame(columns)


@pytest.mark.parametrize("neighbouring", ["replace_one", "add_remove"])
@pytest.mark.parametrize("name", ["dpswflow", "dpswflow_r"])
def test_a_conditioned_fit_draws_the_reported_noise_and_composes_to_its_budget(
    name: str, neighbouring: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The DP domain's multiplier recomputed from the noise it drew, stage A's from its rounds as drawn (epsilon_r and
    the conditioned score's sensitivity, 8 under replace-one), the releases' from their noise (against the conditioned
    layout's sensitivity, computed here), and the whole composed with the libraries: the budget."""
    from synthcity.plugins import Plugins
    from synthcity.plugins.core.dataloader import GenericDataLoader
    from test_one_budget import DELTA, EPSILON, drawn_domain_multiplier, independent_epsilon

    from synthcity_dpswf.privacy.gaussian import composed_multiplier
    from synthcity_dpswf.privacy.domain import release as domain_module

    domain_drawn: list[tuple[float, float]] = []
    draw = domain_module.noisy_counts
    monkeypatch.setattr(domain_module, "noisy_counts", lambda counts, std, secret, weight=1.0: (
        domain_drawn.append((float(std), float(weight))), draw(counts, std, secret, weight))[1])
    marginal_drawn: list[tuple[MarginalLayout, float, float]] = []
    noised = MarginalRelease.noised

    def recorded(self: MarginalRelease, exact: torch.Tensor, directions: object, z: float, secret: object,
                 adjacency: object = "replace_one") -> object:
        release = noised(self, exact, directions, z, secret, adjacency)  # type: ignore[arg-type]
        marginal_drawn.append((self.layout, float(z), float(release.noise_std)))
        return release

    monkeypatch.setattr(MarginalRelease, "noised", recorded)
    from synthcity_dpswf.privacy.mechanisms import marginal as mechanism_module

    rounds: list[tuple[float, float]] = []
    pick = mechanism_module.exponential_mechanism
    monkeypatch.setattr(mechanism_module, "exponential_mechanism", lambda scores, epsilon, sensitivity, secret: (
        rounds.append((epsilon, sensitivity)), pick(scores, epsilon, sensitivity, secret))[1])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plugin = Plugins().get(name, epsilon=EPSILON, delta=DELTA, neighbouring=neighbouring, n_steps=5,
                               target_tables="per_value")
        plugin.fit(GenericDataLoader(_wide_table(600, 4), target_column="y"))
    report = plugin.privacy_report()
    assert plugin.layout_.condition == 7 and plugin.selection_part_ is not None and plugin.domain_part_ is not None
    releases = marginal_drawn
    assert all(layout == plugin.layout_ for layout, _, _ in releases)
    assert rounds and all(sensitivity == pytest.approx(8.0 if neighbouring == "replace_one" else 8.0 / math.sqrt(2))
                          for _, sensitivity in rounds)
    stage_a = 1 / (0.63 * math.sqrt(sum(epsilon**2 for epsilon, _ in rounds)))
    factor = 2 if neighbouring == "replace_one" else 1
    for layout, z, std in marginal_drawn:  # every block counted: the lemma's Delta, whatever the classes
        assert std == pytest.approx(z * math.sqrt(factor * layout.n_tables))
    assert releases[0][1] == pytest.approx(report.noise_multiplier)
    gaussian_delta = DELTA - plugin.domain_part_.threshold_delta
    prior = composed_multiplier(drawn_domain_multiplier(domain_drawn, neighbouring), stage_a)
    assert 0.99 * EPSILON < independent_epsilon(report, prior, gaussian_delta) <= EPSILON * (1 + 1e-6)
    assert report.epsilon <= EPSILON * (1 + 1e-6)


def test_a_target_of_many_values_is_not_conditioned_on_and_every_pair_with_it_is_measured() -> None:
    """A float target (or one of more values than ``TARGET_CLASSES``), even with ``target_tables="per_value"``: no class
    grouping several values, every pair with it in the layout, through the public choice within ``max_pairs`` and
    through the paid selection's choice."""
    from synthcity.plugins import Plugins
    from synthcity.plugins.core.dataloader import GenericDataLoader

    layout = MarginalLayout.build((3, 4, 5, 6, 7), coarse_bins=4, max_pairs=5, seed=1, anchor=2)
    assert {pair for pair in layout.pairs if 2 in pair} == {(0, 2), (1, 2), (2, 3), (2, 4)} and len(layout.pairs) == 5
    assert MarginalLayout.build((3, 4, 5, 6, 7), 4, 5, 1).pairs == MarginalLayout.build((3, 4, 5, 6, 7), 4, 5, 1, anchor=None).pairs
    table = _wide_table(600, 5).assign(y=lambda frame: np.random.default_rng(0).normal(size=len(frame)) + (frame["c0"] == "1"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for selection in ("adaptive", "public"):
            plugin = Plugins().get("dpswflow", epsilon=1.0, delta=1e-5, pair_selection=selection, target_tables="per_value")
            plugin.fit(GenericDataLoader(table, target_column="y"))
            assert plugin.layout_.condition is None
            assert {pair for pair in plugin.layout_.pairs if 7 in pair} == {(j, 7) for j in range(7)}
            assert (plugin.selection_part_ is not None) == (selection == "adaptive")


def test_a_dp_domain_s_one_way_counts_join_every_class_by_least_squares_and_leave_the_target_alone() -> None:
    """The classes' one-way tables of a column summed equal the inverse-variance combination of their sum with the
    domain's counts of it, each class moved by the same share; the target's table is not touched."""
    from synthcity_dpswf.models.conditional_target import one_way_corrections
    from synthcity_dpswf.models.marginal_target import combine_measurements
    from synthcity_dpswf.models.state import ReleasePool

    layout = MarginalLayout.build((3, 2), coarse_bins=4, condition=1, classes=4)  # column 1 the target, 2 classes
    values = torch.tensor([[40.0, 30.0, 30.0, 100.0, 0.0, 20.0, 25.0, 5.0, 0.0, 50.0]])  # class 0, then class 1
    measured = (torch.tensor([70.0, 50.0, 30.0], dtype=torch.float64), torch.full((3,), 2.0, dtype=torch.float64), 150.0)
    pool = ReleasePool("marginal", ReleaseOptions(layout=layout), values.double(), torch.tensor([3.0], dtype=torch.float64),
                       None, 2, one_way={0: measured, 1: measured})
    corrections = one_way_corrections(layout, layout.blocks(pool.releases), pool)
    summed = torch.tensor([60.0, 55.0, 35.0], dtype=torch.float64)
    expected, _ = combine_measurements(summed, 2 * 9.0, measured[0], measured[1] ** 2, 150.0 / 150.0)
    assert torch.allclose(corrections[0, :3], corrections[1, :3])  # the same share for each class
    assert torch.allclose(summed + corrections[:, :3].sum(dim=0), expected)
    assert torch.count_nonzero(corrections[:, 3:]) == 0  # the target's table


def test_cond_refuses_values_outside_an_integer_target_and_warns_of_a_class_with_almost_no_rows(
        seeded_release_noise: None) -> None:
    """The class of value 2 holds 0.2% of the rows; at epsilon 1 its released share exceeds 1% on a rare draw (CI
    drew one), so the noise is seeded."""
    from synthcity.plugins import Plugins
    from synthcity.plugins.core.dataloader import GenericDataLoader

    from synthcity_dpswf.notices import DPSWFWarning

    rng = np.random.default_rng(7)
    y = np.where(rng.random(2000) < 0.998, rng.integers(0, 2, 2000), 2)  # the value 2 in a handful of rows
    train = pd.DataFrame({"x": np.where(y == 1, "p", "q"), "y": y})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plugin = Plugins().get("dpswflow", epsilon=1.0, delta=1e-5, domain={"x": ["p", "q"], "y": (0, 2)},
                               target_tables="per_value").fit(GenericDataLoader(train, target_column="y"))
    assert plugin.layout_.condition == 1 and plugin.layout_.classes == 3
    for bad in ([7, 1], [1.5, 0], [None, 1]):
        with pytest.raises(ValueError, match="outside the target 'y'"):
            plugin.generate(2, cond=bad)
    with pytest.warns(DPSWFWarning, match="below 1%"):
        rows = plugin.generate(3, cond=[2, 1, 0]).dataframe()
    assert rows["y"].tolist() == [2, 1, 0]


def test_a_candidate_layout_beyond_its_cap_keeps_every_pair_of_the_anchor() -> None:
    from synthcity_dpswf.privacy.mechanisms.marginal import CANDIDATE_PAIRS, candidate_layout

    levels = (3,) * 60  # 1,770 pairs, above the cap
    layout = candidate_layout(levels, 4, 0, (), anchor=5)
    assert len(layout.pairs) == CANDIDATE_PAIRS and sum(5 in pair for pair in layout.pairs) == 59

"""privacy.md, "Add/remove neighbours": which kinds have an add/remove form and their exact sensitivity, the
accounting of Poisson-sampled releases (Opacus' sampled-Gaussian RDP in both orders), the one-shot audit under
add/remove, the other adjacency in the report, and that no add/remove path reads n."""

from __future__ import annotations

import ast
import json
import math
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from opacus.accountants.analysis.rdp import compute_rdp
from scipy.special import logsumexp
from scipy.stats import norm

import synthcity_dpswf  # noqa: F401  (registers the plugins)
from synthcity.plugins import Plugins
from synthcity_dpswf.models import DPSWFlow, DPSWFlowR, FlowSettings
from synthcity_dpswf.privacy import (
    MECHANISMS,
    Adjacency,
    MarginalLayout,
    PrivacyAuditError,
    ReleaseAccountant,
    ReleaseOptions,
    analytic_gaussian_epsilon,
    audit_gaussian_scores,
    create_mechanism,
    secret_generator,
)
from synthcity_dpswf.privacy.neighbouring import group_of_two

LAYOUT = MarginalLayout.build((3, 40, 2), coarse_bins=16)
SUM_KINDS = ["marginal", "projected_histogram"]
pytestmark = pytest.mark.filterwarnings("ignore:release noise seeded with a known seed")


def mechanism_of(kind: str, **options: object):
    return create_mechanism(kind, ReleaseOptions(**options, layout=LAYOUT if kind == "marginal" else None))  # type: ignore[arg-type]


def random_records(kind: str, count: int, generator: torch.Generator) -> torch.Tensor:
    if kind == "marginal":
        return torch.stack([torch.randint(k, (count,), generator=generator) for k in LAYOUT.levels], dim=1).float()
    return torch.nn.functional.normalize(torch.randn(count, 3, generator=generator), dim=1)


# ------------------------------------------------------------------------------------------ sensitivity
@pytest.mark.parametrize("kind", SUM_KINDS)
def test_every_record_moves_a_sum_kind_by_exactly_its_add_remove_sensitivity(kind: str) -> None:
    mechanism = mechanism_of(kind, n_release_directions=30, n_bins=8)
    generator = torch.Generator().manual_seed(0)
    directions = mechanism.draw_directions(3, generator)
    sensitivity = mechanism.add_remove_sensitivity(directions)
    assert sensitivity == pytest.approx(mechanism.sensitivity(directions) / math.sqrt(2))  # sqrt(L), sqrt(m)
    records = random_records(kind, 300, generator)
    base = mechanism.statistic(records[:100], directions)
    for record in records[100:]:  # adding one record to a batch moves the statistic by f(x), of norm Delta_AR
        added = mechanism.statistic(torch.cat([records[:100], record[None]]), directions)
        assert float((added - base).norm()) == pytest.approx(sensitivity, rel=1e-9)
    empty = mechanism.statistic(records[:0], directions)  # Poisson batches may be empty
    assert float(empty.abs().sum()) == 0 and empty.shape == base.shape
    counted = mechanism.counted_records(mechanism.statistic(records[:100], directions)[None])
    assert float(counted[0]) == pytest.approx(100)


@pytest.mark.parametrize("kind", ["record", "projected"])
def test_kinds_that_publish_rows_have_no_add_remove_form(kind: str) -> None:
    mechanism = mechanism_of(kind, n_release_directions=5)
    assert mechanism.add_remove_sensitivity(mechanism.draw_directions(3, torch.Generator())) is None
    with pytest.raises(ValueError, match="one noisy row per record.*'projected_histogram' or 'marginal'"):
        DPSWFlow(release=kind, neighbouring="add_remove")
    with pytest.raises(ValueError, match="not proven for add/remove"):
        DPSWFlowR(neighbouring="add_remove", accountant="replace_one_rdp")
    with pytest.raises(ValueError, match="give sample_rate, not batch_size"):
        DPSWFlowR(neighbouring="add_remove", batch_size=10)
    with pytest.raises(ValueError, match="Poisson batches under replace-one are proven for sums"):
        DPSWFlowR(release=kind, sample_rate=0.1)
    with pytest.raises(ValueError, match="not both"):
        DPSWFlowR(sample_rate=0.1, batch_size=10)
    with pytest.raises(ValueError, match="neighbouring must be one of"):
        DPSWFlow(neighbouring="add-remove")


# ------------------------------------------------------------------------------------------- accounting
def log_renyi(log_p: np.ndarray, log_q: np.ndarray, alpha: float, step: float) -> float:
    """D_alpha(P || Q) from log densities on a uniform grid (log-space: no overflow at large orders)."""
    return float(logsumexp(alpha * log_p + (1 - alpha) * log_q) + math.log(step)) / (alpha - 1)


@pytest.mark.parametrize("q", [0.01, 0.1, 0.5])
@pytest.mark.parametrize("z", [0.7, 1.0, 2.0, 5.0])
def test_opacus_sampled_gaussian_rdp_bounds_both_orders_of_the_poisson_pair(q: float, z: float) -> None:
    """N(0, z^2) against (1 - q) N(0, z^2) + q N(1, z^2), both orders, integrated on a fine grid: never above
    Opacus' value (the mixture-first order equals it)."""
    x = np.linspace(-60 * max(z, 1), 60 * max(z, 1), 400001)
    step = x[1] - x[0]
    log_base = norm.logpdf(x, 0, z)
    log_mixture = np.logaddexp(math.log1p(-q) + log_base, math.log(q) + norm.logpdf(x, 1, z))
    for alpha in (1.5, 2, 3.5, 8, 20, 64):
        opacus = float(compute_rdp(q=q, noise_multiplier=z, steps=1, orders=[alpha])[0])
        first, second = log_renyi(log_mixture, log_base, alpha, step), log_renyi(log_base, log_mixture, alpha, step)
        assert first <= opacus * (1 + 1e-5) + 1e-9 and second <= opacus * (1 + 1e-5) + 1e-9, (alpha, first, second, opacus)
        assert first == pytest.approx(opacus, rel=1e-2, abs=1e-9)  # the grid's error grows with the order


def test_poisson_accounting_calibrates_refuses_unproven_accountants_and_restates_under_replace_one() -> None:
    accountant = ReleaseAccountant.poisson(0.1)
    z = accountant.calibrate(3.0, 1e-5, 100)
    assert 2.97 <= accountant.epsilon(z, 1e-5, 100).epsilon <= 3.0 and accountant.n_records is None
    with pytest.raises(ValueError, match="not proven for Poisson sampling"):
        ReleaseAccountant.poisson(0.1, "replace_one_rdp")
    with pytest.raises(ValueError, match="needs fixed-size batches"):
        accountant.conservative_epsilon(z, 1e-5, 100)
    # Group privacy of 2: a delta' whose (1 + e^eps(delta')) delta' fits in delta, and twice its epsilon.
    epsilon_at = lambda at: accountant.epsilon(z, at, 100).epsilon  # noqa: E731
    doubled, inner = group_of_two(epsilon_at, 1e-5)
    assert (1 + math.exp(epsilon_at(inner))) * inner <= 1e-5 and inner > 1e-5 / (1 + math.exp(epsilon_at(inner))) * 0.9
    assert doubled == pytest.approx(2 * epsilon_at(inner)) and doubled > 2 * 3.0


def test_the_report_names_its_adjacency_and_gives_the_other_one() -> None:
    records = torch.nn.functional.normalize(torch.randn(3000, 4, generator=torch.Generator().manual_seed(0)), dim=1)
    settings = FlowSettings(n_steps=2)
    one_shot = DPSWFlow(neighbouring="add_remove", settings=settings).fit(records, 2.0, 1e-5).privacy_report
    assert one_shot.neighbouring == "add/remove (n private)" and "n = 3000" not in str(one_shot)
    assert one_shot.sensitivity == pytest.approx(math.sqrt(500))  # sqrt(L)
    restated = analytic_gaussian_epsilon(one_shot.noise_multiplier / math.sqrt(2), 1e-5)
    assert one_shot.other is not None and one_shot.other.epsilon == pytest.approx(restated) and restated > 2.0
    assert "other adjacency    replace-one (n public): (" in str(one_shot)
    same = DPSWFlow(settings=settings).fit(records, 2.0, 1e-5).privacy_report  # replace-one: the same release at z sqrt 2
    assert same.other is not None and same.other.epsilon == pytest.approx(analytic_gaussian_epsilon(same.noise_multiplier * math.sqrt(2), 1e-5))
    per_step = DPSWFlowR(neighbouring="add_remove", sample_rate=0.2, release_steps=20, settings=settings).fit(records, 2.0, 1e-5)
    report = per_step.privacy_report
    assert report.accountant.startswith("Opacus RDPAccountant") and "Poisson" in report.sampling and report.conservative_epsilon is None
    assert report.other is not None and report.other.epsilon > 2 * 2.0 and "group privacy of 2" in report.other.how
    assert per_step.released_size() == pytest.approx(3000, rel=0.1)
    fixed = DPSWFlowR(batch_size=300, release_steps=20, settings=settings).fit(records, 2.0, 1e-5).privacy_report
    assert fixed.other is not None and fixed.other.epsilon is None and "not derived" in str(fixed)


# ------------------------------------------------------------------------------------------------ audit
AUDIT_EPSILON, AUDIT_DELTA, AUDIT_CONFIDENCE = 2.0, 1e-5, 0.999
AUDIT_RUNS = {"projected_histogram": 20000, "marginal": 800}


def add_remove_scores(kind: str, runs: int, secret: torch.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Scores <R, f(c)> of one-shot add/remove releases on D = {c} and on D' = {} (an empty batch), at the multiplier
    calibrated to AUDIT_EPSILON (the analytic Gaussian, as a one-shot model reports it)."""
    z = ReleaseAccountant.poisson(1.0).calibrate(AUDIT_EPSILON, AUDIT_DELTA, 1)
    mechanism = mechanism_of(kind, n_release_directions=6, n_bins=4)
    directions = mechanism.draw_directions(3, torch.Generator().manual_seed(0))
    canary = random_records(kind, 1, torch.Generator().manual_seed(1))
    direction = mechanism.statistic(canary, directions).double().reshape(-1)
    scores = []
    for batch in (canary, canary[:0]):
        if kind == "projected_histogram":  # one class per run: independent blocks, the same noise std
            classes = torch.arange(runs) if len(batch) else torch.zeros(0, dtype=torch.long)
            records = batch.expand(runs, -1) if len(batch) else batch
            values = mechanism.release(records, directions, z, secret, classes, runs, "add_remove").values.reshape(runs, -1)
        else:
            values = torch.stack([mechanism.release(batch, directions, z, secret, neighbouring="add_remove").values.reshape(-1)
                                  for _ in range(runs)])
        scores.append((values.double() @ direction).numpy())
    return scores[0], scores[1]


@pytest.mark.parametrize("mutation", ["sound", "noise halved", "sensitivity halved"])
@pytest.mark.parametrize("kind", SUM_KINDS)
def test_one_shot_add_remove_releases_pass_the_audit_and_fail_factor_2_bugs(
    kind: str, mutation: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if mutation == "noise halved":
        from synthcity_dpswf.privacy.mechanisms import base
        from synthcity_dpswf.privacy.mechanisms.base import gaussian_noise

        monkeypatch.setattr(base, "gaussian_noise", lambda shape, std, generator, like: gaussian_noise(shape, std / 2, generator, like))
    elif mutation == "sensitivity halved":
        sensitivity = MECHANISMS[kind].add_remove_sensitivity
        monkeypatch.setattr(MECHANISMS[kind], "add_remove_sensitivity", lambda self, directions: sensitivity(self, directions) / 2)
    scores_in, scores_out = add_remove_scores(kind, AUDIT_RUNS[kind], secret_generator(17))
    if mutation != "sound":
        with pytest.raises(PrivacyAuditError, match="PRIVACY AUDIT FAILED"):
            audit_gaussian_scores(scores_in, scores_out, AUDIT_DELTA, AUDIT_EPSILON, AUDIT_CONFIDENCE)
        return
    result = audit_gaussian_scores(scores_in, scores_out, AUDIT_DELTA, AUDIT_EPSILON, AUDIT_CONFIDENCE)
    assert (0.5 if kind == "marginal" else 0.85) * AUDIT_EPSILON < result.epsilon_lower_bound < AUDIT_EPSILON


# ---------------------------------------------------------------------------------------- n stays private
def table(n: int) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    return pd.DataFrame({"a": rng.integers(0, 5, n), "b": rng.choice(["x", "y", "z"], n), "c": rng.uniform(0, 1, n)})


DOMAIN = {"a": {"type": "numeric", "low": 0, "high": 4, "integer": True},
          "b": {"type": "categorical", "categories": ["x", "y", "z"]}, "c": {"type": "numeric", "low": 0.0, "high": 1.0}}


@pytest.mark.parametrize("name", ["dpswflow", "dpswflow_r"])
def test_no_add_remove_path_reads_n(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """999 and 1,000 rows (where every default that reads n changes under replace-one): under add/remove the report,
    the layout, the generator's parameters, the noise and the directions, the DP domain's budget and the public info
    are the same; only the released values, and the row count estimated from them, differ."""
    from synthcity_dpswf.recipes import tables as table_recipe

    budgets = []
    release_domain = table_recipe.release_domain_at
    monkeypatch.setattr(table_recipe, "release_domain_at", lambda frame, *args, **kwargs: (
        budgets.append((args[0], *args[2:], tuple(kwargs.get("declared", {})))), release_domain(frame, *args, **kwargs))[1])
    seen = {}
    for n in (999, 1000):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            public = Plugins().get(name, epsilon=2.0, neighbouring="add_remove", domain=DOMAIN, n_steps=5).fit(table(n))
            Plugins().get(name, epsilon=2.0, neighbouring="add_remove", n_steps=5).fit(table(n))  # a DP domain
        pool = public.generator_.pool_
        seen[n] = (str(public.privacy_report()), public.layout_, public.generator_.get_parameters(), pool.noise_std,
                   pool.directions, pool.releases.shape, {k: v for k, v in public.data_info.items() if k != "len"})
    for first, second in zip(seen[999], seen[1000]):
        assert torch.equal(first, second) if isinstance(first, torch.Tensor) else first == second, (first, second)
    assert budgets[0] == budgets[2] and budgets[1] == budgets[3]  # the domain's share does not follow n
    assert budgets[0][1] == "add_remove" and budgets[0][-1] == ("c",)  # the declared float column's histogram
    replace_one = [Plugins().get(name, epsilon=2.0, domain=DOMAIN, n_steps=5).fit(table(n)) for n in (999, 1000)]
    assert str(replace_one[0].privacy_report()) != str(replace_one[1].privacy_report())  # the test can fail


def test_plugins_under_add_remove_generate_the_released_row_count_and_refuse_an_internal_image_split(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    plugin = Plugins().get("dpswflow", epsilon=5.0, neighbouring="add_remove", domain=DOMAIN, n_steps=5).fit(table(2000))
    assert abs(plugin.generator_.released_size() - 2000) < 50  # the released counts' estimate of n
    monkeypatch.setattr(DPSWFlow, "released_size", lambda self: 1234.4)  # the row count comes from it, not from n
    plugin = Plugins().get("dpswflow", epsilon=5.0, neighbouring="add_remove", domain=DOMAIN, n_steps=5).fit(table(2000))
    assert plugin.data_info["len"] == 1234 and len(plugin.generate().dataframe()) == 1234
    from synthcity.plugins.core.dataloader import ImageDataLoader

    images, labels = torch.rand(20, 1, 32, 32) * 2 - 1, torch.randint(2, (20,))
    plugin = Plugins().get("image_dpswflow", neighbouring="add_remove", n_classes=2, image_codec="dct", n_steps=5)
    plugin.fit(ImageDataLoader(data=(images, labels), height=32))  # no internal split: every image private
    assert plugin.data_info["len"] == round(plugin.generator_.released_size())


# ------------------------------------------------------------------------------------------ the Adjacency type
def test_adjacency_reads_a_users_string_and_answers_what_the_code_asks_of_it() -> None:
    replace_one, add_remove = Adjacency.of("replace_one"), Adjacency.of(Adjacency.ADD_REMOVE)
    assert replace_one is Adjacency.REPLACE_ONE and add_remove is Adjacency.ADD_REMOVE
    assert replace_one == "replace_one" and f"{add_remove}" == str(add_remove) == "add_remove"
    assert json.loads(json.dumps({"neighbouring": add_remove})) == {"neighbouring": "add_remove"}
    assert {"replace_one": 1}[replace_one] == 1  # hashed as its string
    assert replace_one.public_size(70) == 70 and add_remove.public_size(70) is None
    assert replace_one.other is add_remove and add_remove.other is replace_one
    assert (replace_one.one_hot_sensitivity, add_remove.one_hot_sensitivity) == (math.sqrt(2.0), 1.0)
    assert (replace_one.norm_sensitivity, add_remove.norm_sensitivity) == (2.0, 1.0)
    assert replace_one.other_multiplier(1.5) == pytest.approx(1.5 * math.sqrt(2.0))
    assert add_remove.other_multiplier(1.5) == pytest.approx(1.5 / math.sqrt(2.0))
    assert (replace_one.label, add_remove.label) == ("replace-one (n public)", "add/remove (n private)")
    with pytest.raises(ValueError, match=r"neighbouring must be one of \['add_remove', 'replace_one'\], got 'add-remove'"):
        Adjacency.of("add-remove")


def test_no_code_of_the_package_compares_an_adjacency_with_a_string() -> None:
    """issue 47: what the strings were compared for is asked of ``Adjacency``; a comparison with ``"replace_one"`` or
    ``"add_remove"`` anywhere in the package (outside the type's own module) fails this test."""
    names = {adjacency.value for adjacency in Adjacency}
    package = Path(synthcity_dpswf.__file__).parent
    found = []
    for path in sorted(package.rglob("*.py")):
        if path.name == "neighbouring.py" and path.parent.name == "privacy":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Compare):
                operands = [node.left, *node.comparators]
                if any(isinstance(operand, ast.Constant) and operand.value in names for operand in operands):
                    found.append(f"{path.relative_to(package)}:{node.lineno}")
    assert not found, found

"""The synthcity plugins, mirroring synthcity's own plugin tests, plus registration, privacy of the saved
model, Benchmarks.evaluate and the pluggy extension points."""

from __future__ import annotations

import math
import subprocess
import warnings
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pluggy
import pytest
import torch
from sklearn.datasets import load_iris

import synthcity_dpswf  # noqa: F401  (registers the plugins)
from synthcity.benchmark import Benchmarks
from synthcity.plugins import Plugins
from synthcity.plugins.core.constraints import Constraints
from synthcity.plugins.core.dataloader import GenericDataLoader, ImageDataLoader
from synthcity.utils.serialization import load as deserialize

from synthcity_dpswf import extensions
from synthcity_dpswf.models import DPSWFlowR, FlowSettings
from synthcity_dpswf.plugins import PLUGINS, register
from synthcity_dpswf.plugins.table_path import TablePath
from synthcity_dpswf.privacy import ACCOUNTANTS
from synthcity_dpswf.privacy.budget import SMALL_TABLE_SHARE, Budget
from synthcity_dpswf.privacy.domain import NO_CATEGORY

from conftest import private_rows_found

NAMES = ["dpswflow", "dpswflow_r", "dpswgen"]
IMAGE_NAMES = ["image_dpswflow", "image_dpswflow_r", "image_dpswgen"]
FAST = {"n_steps": 100, "n_directions": 30, "flow_batch_size": 1000, "epsilon": 10.0}
IRIS_DOMAIN = {
    "sepal length (cm)": {"type": "numeric", "low": 4.0, "high": 8.0},
    "sepal width (cm)": {"type": "numeric", "low": 2.0, "high": 4.5},
    "petal length (cm)": {"type": "numeric", "low": 1.0, "high": 7.0},
    "petal width (cm)": {"type": "numeric", "low": 0.0, "high": 2.5},
    "target": {"type": "categorical", "categories": [0, 1, 2]},
}


def iris() -> pd.DataFrame:
    X, y = load_iris(as_frame=True, return_X_y=True)
    X["target"] = y
    return X


@pytest.mark.parametrize("name", NAMES)
def test_sanity_name_and_type(name: str) -> None:
    plugin = Plugins().get(name)
    assert plugin.name() == name and plugin.type() == "privacy"
    assert name in Plugins(categories=["privacy"]).list()
    # synthcity's Serializable looks plugin modules up by file name inside synthcity: no clash allowed.
    assert plugin.module_relative_path is None


@pytest.mark.parametrize("name", IMAGE_NAMES)
def test_the_image_plugins_are_listed_where_synthcity_lists_its_image_generators(name: str) -> None:
    plugin = Plugins().get(name)
    assert plugin.name() == name and plugin.type() == "images"
    assert name in Plugins(categories=["images"]).list() and name not in Plugins(categories=["privacy"]).list()
    assert plugin.module_relative_path is None


# Import hygiene, checked in the same fresh processes: transformers' two "PyTorch was not found" notices (emitted
# when torch.onnx imports transformers on the way to synthcity.plugins) are dropped; every other message stays.
OTHER_MESSAGES = (
    "import logging, warnings; from synthcity_dpswf.privacy.budget import check_delta; "
    "logging.getLogger('transformers').warning('another transformers message'); "
    "warnings.simplefilter('always'); check_delta(0.5, 10)"
)


def test_registration_is_idempotent_and_works_in_a_fresh_process_without_the_transformers_notices() -> None:
    register()
    register()
    assert [Plugins().get_type(name) for name in NAMES + IMAGE_NAMES] == list(PLUGINS)
    # Either import order: the package first, or a plugin module first (which imports synthcity itself).
    for first in ("import synthcity_dpswf", "from synthcity_dpswf.plugins.base import SlicedFlowPlugin"):
        code = f"{first}; from synthcity.plugins import Plugins; print(Plugins().get('dpswflow_r').name()); {OTHER_MESSAGES}"
        result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, result.stderr[-2000:]
        assert result.stdout.strip().splitlines()[-1] == "dpswflow_r"
        printed = result.stdout + result.stderr
        assert "PyTorch was not found" not in printed and "Disabling PyTorch" not in printed, first
        assert "another transformers message" in printed, first  # the filter matches the two notices only
        assert "choose delta well below 1/n" in printed, first  # our own warnings.warn


@pytest.mark.parametrize("name", NAMES + IMAGE_NAMES)
def test_hyperparameter_space_samples_build_plugins(name: str) -> None:
    plugin_class = Plugins().get_type(name)
    assert len(plugin_class.hyperparameter_space()) > 0
    for _ in range(3):
        parameters = plugin_class.sample_hyperparameters()
        assert isinstance(plugin_class(**parameters), plugin_class)


@pytest.mark.parametrize("name", NAMES)
def test_fit_generate_schema_and_dtypes(name: str) -> None:
    data = iris()
    plugin = Plugins().get(name, domain=IRIS_DOMAIN, **FAST)
    plugin.fit(GenericDataLoader(data))
    for count in (10, 137):
        generated = plugin.generate(count).dataframe()
        assert len(generated) == count
        assert list(generated.columns) == list(data.columns)
        assert dict(generated.dtypes) == dict(data.dtypes)
        assert generated["target"].isin([0, 1, 2]).all()
        assert generated["sepal length (cm)"].between(4.0, 8.0).all()


def test_fit_out_of_the_box_spends_a_share_on_a_dp_domain() -> None:
    plugin = Plugins().get("dpswflow", **FAST)
    plugin.fit(GenericDataLoader(iris()))  # no domain: synthcity's own tests call it like this
    assert len(plugin.generate(20).dataframe()) == 20
    report = plugin.privacy_report()
    assert report.epsilon == pytest.approx(10.0)
    assert report.delta == pytest.approx(1e-5)  # the default delta, min(1e-5, n^-1.1)
    assert [part.name for part in report.parts] == ["DP domain"]
    # Below 1,000 rows the domain gets SMALL_TABLE_SHARE of mu^2, inside the releases' accounting (privacy.md, "One budget")
    alone = Budget(10.0, 1e-5).domain_part(SMALL_TABLE_SHARE)
    assert report.parts[0].epsilon == pytest.approx(alone.epsilon) and report.parts[0].threshold_delta == pytest.approx(2.5e-6)
    assert f"DP domain alone: ({alone.epsilon:.4g}, " in str(report)


@pytest.mark.parametrize("release", ["marginal", "projected_histogram"])
def test_output_dtypes_come_from_the_released_domain_not_from_the_private_frame(release: str) -> None:
    """One record with 1.5 in the integer target, or one string in a float column, turns the private frame's
    dtypes into float64 / object; the output's dtypes must not follow (they are the DP domain's decision, made
    from noisy counts with a margin of about n)."""
    clean = iris()
    with_float = clean.assign(target=clean["target"].astype(float))
    with_float.loc[0, "target"] = 1.5
    with_string = clean.astype({"sepal width (cm)": object})
    with_string.loc[0, "sepal width (cm)"] = "n/a"
    for frame in (clean, with_float, with_string):
        plugin = Plugins().get("dpswflow", release=release, **FAST)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            plugin.fit(GenericDataLoader(frame))
            output = plugin.generate(50).dataframe()
        # integers: int64, or pandas' nullable Int64 in the 0.003% of fits where the noise gives the column a
        # missing level (domain.py, MISSING_THRESHOLD); floats: float64 either way
        assert pd.api.types.is_integer_dtype(output["target"].dtype), frame.dtypes.to_dict()
        assert output["sepal width (cm)"].dtype == np.float64, frame.dtypes.to_dict()


@pytest.mark.parametrize("release", ["marginal", "projected_histogram"])
def test_data_dependent_conditions_give_a_model_not_an_error(release: str, seeded_release_noise: None) -> None:
    """A constant column, and a categorical column none of whose categories survives the noise (all values
    distinct), are inside the domain of valid datasets: fit must return a model (an error is an output one record
    can change); what the DP domain could not place is output as missing entries only, never a placeholder
    category or a range nobody released."""
    frame = iris().assign(constant=7.0, name=[f"id-{i}" for i in range(150)])
    plugin = Plugins().get("dpswflow", release=release, **FAST)
    with pytest.warns(UserWarning, match="could not place"):
        plugin.fit(GenericDataLoader(frame))
    output = plugin.generate(30).dataframe()
    assert list(output.columns) == list(frame.columns) and len(output) == 30
    assert output["name"].isna().all() and NO_CATEGORY not in set(output["name"])
    assert output["constant"].dropna().between(4.0, 16.0).all()  # the bins around 7 (at most a factor 2 out)


def test_strict_constraints_are_honoured() -> None:
    plugin = Plugins().get("dpswflow", domain=IRIS_DOMAIN, **FAST)
    plugin.fit(GenericDataLoader(iris()))
    constraints = Constraints(rules=[("target", "==", 1), ("petal length (cm)", ">=", 2.0)])
    generated = plugin.generate(30, constraints=constraints).dataframe()
    assert len(generated) == 30
    assert (generated["target"] == 1).all() and (generated["petal length (cm)"] >= 2.0).all()


@pytest.mark.parametrize("name", NAMES)
def test_save_load_round_trip_keeps_no_private_row(name: str) -> None:
    data = iris().astype(float)
    plugin = Plugins().get(name, domain=IRIS_DOMAIN, **FAST)
    plugin.fit(GenericDataLoader(data))
    buffer = plugin.save()
    loaded = Plugins().load(buffer)
    assert loaded.name() == name
    assert list(loaded.generate(15).dataframe().columns) == list(data.columns)
    assert str(loaded.privacy_report()) == str(plugin.privacy_report())
    assert not _holds_private_rows(buffer, data, plugin.encoder_)
    if name == "dpswflow":  # the search finds rows when they are there: without noise a record release is the data
        leaky = Plugins().get(name, domain=IRIS_DOMAIN, release="record", **{**FAST, "epsilon": math.inf})
        leaky.fit(GenericDataLoader(data))
        assert _holds_private_rows(leaky.save(), data, leaky.encoder_)


def _holds_private_rows(buffer: bytes, data: pd.DataFrame, encoder: object) -> bool:
    """Whether anything serialised in ``buffer`` contains a private row, raw or encoded."""
    state = deserialize(buffer)
    raw = torch.tensor(data.to_numpy(dtype=float))
    encoded = encoder.encode(data)  # type: ignore[attr-defined]
    return private_rows_found(state, raw) + private_rows_found(state, encoded) > 0


def test_public_adult_domain(shared_dir: Path) -> None:
    table = pd.read_csv(shared_dir / "data/adult/adult_discretized.csv").sample(2000, random_state=0)
    plugin = Plugins().get("dpswflow_r", domain=shared_dir / "data/adult/adult_discretized_domain.json", **FAST)
    plugin.fit(table)
    generated = plugin.generate(300).dataframe()
    assert list(generated.columns) == list(table.columns)
    assert (generated.dtypes == table.dtypes).all()
    assert generated["age"].between(0, 84).all() and generated["sex"].isin([0, 1]).all()
    # a public domain costs nothing, and 2,000 rows at epsilon 10 are not noise-limited: no pair selection either
    assert plugin.privacy_report().parts == ()


def test_benchmarks_evaluate_beside_dpgan(tmp_path: Path) -> None:
    data = GenericDataLoader(iris(), target_column="target")
    score = Benchmarks.evaluate(
        [
            ("ours", "dpswflow_r", {**FAST, "domain": IRIS_DOMAIN}),
            ("dpgan", "dpgan", {"n_iter": 10, "epsilon": 10.0}),
        ],
        data,
        metrics={"stats": ["jensenshannon_dist"]},
        repeats=1,
        workspace=tmp_path,
        synthetic_cache=False,
        use_metric_cache=False,
    )
    assert set(score) == {"ours", "dpgan"}
    ours = score["ours"]
    assert np.isfinite(ours.loc["stats.jensenshannon_dist.marginal", "mean"])


def test_bad_plugin_arguments_fail_clearly() -> None:
    with pytest.raises(ValueError, match="domain_epsilon_share"):
        Plugins().get("dpswflow", domain_epsilon_share=1.5)
    with pytest.raises(ValueError, match="epsilon must be > 0"):
        Plugins().get("dpswflow", epsilon=0.0, domain=IRIS_DOMAIN).fit(iris())
    with pytest.raises(ValueError, match="no budget to share"):
        Plugins().get("dpswflow", epsilon=math.inf).fit(iris())
    with pytest.raises(ValueError, match="takes no cond at fit: name the target column"):
        Plugins().get("dpswflow", domain=IRIS_DOMAIN).fit(GenericDataLoader(iris()), cond=iris()["target"])


@pytest.mark.parametrize(("arguments", "error", "message"), [
    ({"n_steps": 0}, ValueError, "n_steps must be a positive integer, got 0"),  # was 1,500 steps (`n_steps or ...`)
    ({"n_iter": 5}, TypeError, r"dpswflow has no argument 'n_iter': give n_steps \(the flow's steps"),
    ({"entropy": 0.1}, TypeError, r"dpswflow has no argument 'entropy': give flow_options=\{'entropy': ...\}"),
    ({"epsilon": "1.0"}, ValueError, r"epsilon must be a number .* got '1.0' \(str\)"),
    ({"epsilon": 0.0}, ValueError, "epsilon must be > 0"),
    ({"delta": 1.5}, ValueError, r"delta must lie in \(0, 1\), got 1.5"),
    ({"delta": "1e-5"}, ValueError, r"delta must be a number in \(0, 1\), got '1e-5' \(str\)"),
    ({"batch_size": 100}, TypeError, "dpswflow has no argument 'batch_size'; did you mean 'flow_batch_size'"),
    ({"image_adapter": "ae.pt"}, TypeError, "dpswflow fits tables and has no argument 'image_adapter'"),
])
def test_arguments_are_checked_where_they_are_given(arguments: dict[str, object], error: type[Exception],
                                                    message: str) -> None:
    """``Plugins().get`` refuses what ``fit`` could not use, naming the problem, before any data is seen."""
    with pytest.raises(error, match=message):
        Plugins().get("dpswflow", **arguments)


@pytest.mark.parametrize(("codec", "arguments", "expected"), [
    ("private-autoencoder", {}, (4000, 16, 3000)),  # the DP-SGD codec's settings, chosen on validation data
    ("private-autoencoder", {"n_bins": 32, "n_steps": 500}, (4000, 32, 500)),  # what is given wins
    ("private-pca", {}, (2000, 16, 3000)),
    ("dct", {}, (None, 16, 1500)),  # a codec without measured settings: the generator's and the kind's defaults
])
def test_an_image_codec_s_measured_flow_settings_fill_what_the_plugin_leaves_unset(
        codec: str, arguments: dict[str, int], expected: tuple[int | None, int, int]) -> None:
    from synthcity_dpswf.plugins.image_path import ImagePath

    spec = Plugins().get("image_dpswflow", image_codec=codec, **arguments).generator_spec(ImagePath()).arguments
    assert (spec["n_release_directions"], spec["n_bins"], spec["settings"].n_steps) == expected
    table = Plugins().get("dpswflow", **arguments).generator_spec(TablePath()).arguments
    assert table["n_bins"] == arguments.get("n_bins", 16)  # tables take no codec's settings


def test_a_cuda_device_that_is_not_there_warns_and_runs_on_the_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.warns(UserWarning, match="torch sees no CUDA device: running on the CPU"):
        plugin = Plugins().get("dpswflow", device="cuda")
    assert str(plugin.device) == "cpu" and plugin.generator_spec(TablePath()).arguments["device"] == "cpu"


# ------------------------------------------------------------------------------------------ extensions
class _DummyExtension:
    """What a third-party package would expose through its ``synthcity_dpswf`` entry point."""

    @extensions.hookimpl
    def dpswf_accountants(self) -> dict[str, object]:
        from opacus.accountants import RDPAccountant

        return {"dummy_rdp": (RDPAccountant, "a test accountant (Opacus RDP, default orders)")}


def test_extensions_contribute_accountants(monkeypatch: pytest.MonkeyPatch) -> None:
    manager = pluggy.PluginManager(extensions.PROJECT)
    manager.add_hookspecs(extensions.DPSWFSpec)
    manager.register(extensions.BuiltinCodecs(), name="builtin")
    # Entry points are discovered the same way for a real package; here the dummy is registered directly.
    assert manager.load_setuptools_entrypoints(extensions.PROJECT) == 0
    manager.register(_DummyExtension())
    assert set(extensions.image_codecs(manager)) == {"public-half", "other-dataset", "dct", "private-pca",
                                                     "private-autoencoder", "public-autoencoder"}  # the built-ins
    monkeypatch.setattr(extensions, "plugin_manager", lambda: manager)
    assert extensions.load_accountants() == ["dummy_rdp"]
    assert "dummy_rdp" in ACCOUNTANTS
    records = torch.rand(400, 3) - 0.5
    model = DPSWFlowR(batch_size=50, passes=2, release="record", accountant="dummy_rdp", settings=FlowSettings(n_steps=2))
    report = model.fit(records, 3.0, 1e-5).privacy_report
    assert 2.95 <= report.epsilon <= 3.0 and "a test accountant" in report.accountant


def test_a_refused_refit_leaves_the_earlier_fit_usable() -> None:
    plugin = Plugins().get("dpswflow", domain=IRIS_DOMAIN, **FAST).fit(iris())
    report = str(plugin.privacy_report())
    with pytest.raises(ValueError, match="fewer than 2 rows"):
        plugin.fit(iris().head(1))
    images = ImageDataLoader((torch.rand(6, 1, 32, 32) * 2 - 1, torch.tensor([0, 1, 2, 3, 4, 99])))
    with pytest.raises(ValueError, match="dpswflow fits tables, and a ImageDataLoader holds images: use "
                                         "Plugins\\(\\).get\\('image_dpswflow'\\)"):  # another kind of data, refused
        plugin.fit(images)
    assert len(plugin.generate(5).dataframe()) == 5 and str(plugin.privacy_report()) == report


def test_synthcity_s_metrics_refuse_image_loaders_as_the_guide_says() -> None:
    """docs/guide.md: ``Benchmarks.evaluate`` does not score images because synthcity 0.2.12's ``Metrics.evaluate``
    refuses an ``ImageDataLoader``, real against real too. When synthcity changes this, the guide must too."""
    from synthcity.metrics import Metrics

    generator = torch.Generator().manual_seed(0)
    images = ImageDataLoader(data=(torch.rand(40, 1, 32, 32, generator=generator) * 2 - 1,
                                   torch.randint(2, (40,), generator=generator)), height=32)
    with pytest.raises(ValueError, match="Invalid data type <class 'pandas.core.frame.DataFrame'>"):
        Metrics.evaluate(images, images, metrics={"stats": ["jensenshannon_dist"]}, task_type="classification",
                         use_cache=False)

"""privacy.md, "synthcity loaders": each synthcity loader type fitted with a canary record; no output, info(),
saved plugin or report may contain the canary's value (or give it back, as survival time horizons computed from the
private times did), and the loader types the contract does not cover are refused before any private computation."""

from __future__ import annotations

import dataclasses
import warnings
from typing import Any

import numpy as np
import pandas as pd
import pytest
import torch

import synthcity_dpswf  # noqa: F401  (registers the plugins)
from synthcity.plugins import Plugins
from synthcity.plugins.core.dataloader import (
    GenericDataLoader,
    ImageDataLoader,
    SurvivalAnalysisDataLoader,
    TimeSeriesDataLoader,
    TimeSeriesSurvivalDataLoader,
)
from synthcity.utils.serialization import load as deserialize

from synthcity_dpswf.adapters.image_latent import AutoencoderCodec
from synthcity_dpswf.adapters.table_domain import NumericColumn, TabularDomain
from synthcity_dpswf.plugins.paths import SurvivalPath

from conftest import numeric_parts, private_rows_found

CANARY, SMALLEST = 987.65, 1.01
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::FutureWarning")


def holds(state: Any, value: float) -> bool:
    return any(bool(((part - value).abs() < 1e-6).any()) for part in numeric_parts(state))


def table(n: int = 300) -> pd.DataFrame:
    """Times uniform on [2, 500] with the canary as the largest and 1.01 as the smallest, an event flag, features."""
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({
        "x": rng.normal(size=n), "group": rng.choice(["a", "b"], n), "T": rng.uniform(2.0, 500.0, n),
        "E": rng.integers(0, 2, n),
    })
    frame.loc[0, "T"], frame.loc[1, "T"] = CANARY, SMALLEST
    return frame


def fitted(loader: Any, **arguments: Any) -> Any:
    plugin = Plugins().get("dpswflow", epsilon=1.0, n_steps=20, **arguments)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plugin.fit(loader)
    return plugin


def assert_no_canary(plugin: Any) -> None:
    output = plugin.generate(50)
    assert not holds(output.info(), CANARY) and not holds(output.dataframe(), CANARY)
    assert not holds(plugin.data_info, CANARY) and not holds(deserialize(plugin.save()), CANARY)
    assert str(CANARY) not in str(plugin.privacy_report())


def test_a_generic_loader_keeps_only_public_info() -> None:
    plugin = fitted(GenericDataLoader(table(), target_column="E"))
    assert_no_canary(plugin)
    assert plugin.data_info["target_column"] == "E" and plugin.data_info["len"] == 300


def test_survival_horizons_come_from_the_released_time_range_never_from_the_private_times() -> None:
    # 1,000 rows: on 300 the DP domain leaves T unplaced in about 1 fit in 40 at epsilon 1 (the refusal below); on
    # 1,000, 0 fits in 800.
    loader = SurvivalAnalysisDataLoader(table(1000), time_to_event_column="T", target_column="E")
    leaked = loader.info()["time_horizons"]  # synthcity's: linspace(T.min, T.max, 5)[1:-1]
    step = leaked[1] - leaked[0]
    assert leaked[-1] + step == pytest.approx(CANARY) and leaked[0] - step == pytest.approx(SMALLEST)
    plugin = fitted(loader)
    assert_no_canary(plugin)
    horizons = plugin.generate(20).info()["time_horizons"]
    released = plugin.schema().domain["T"]
    np.testing.assert_allclose(horizons, np.linspace(released.low, released.high, 5)[1:-1])
    assert released.low > 0  # times are positive: synthcity rebuilds the output loader, which refuses T <= 0
    output = plugin.generate(200)
    assert isinstance(output, SurvivalAnalysisDataLoader) and bool((output.dataframe()["T"] > 0).all())
    step = horizons[1] - horizons[0]
    assert abs(horizons[-1] + step - CANARY) > 1 and abs(horizons[0] - step - SMALLEST) > 0.1


def test_the_survival_rules_on_a_released_time_column_refuse_it_unplaced_and_make_it_positive_and_present() -> None:
    loader = SurvivalAnalysisDataLoader(table(), time_to_event_column="T", target_column="E")
    rules = SurvivalPath().public_rules(loader)

    def with_time(column: NumericColumn) -> TabularDomain:
        return TabularDomain((NumericColumn("x", -4.0, 4.0), column), source="released")

    with pytest.raises(ValueError, match=r"could not place column 'T'.*domain=\{'T': \{'type': 'numeric'.*'integer'"):
        rules.apply(with_time(NumericColumn("T", 2.0**-16, 2.0**-14, placed=False)), declared=set())
    placed = with_time(NumericColumn("T", 1.0, 512.0))
    assert rules.apply(placed, declared=set()) == placed
    assert rules.apply(with_time(NumericColumn("T", 3.0, 512.0, missing=True)), declared=set()) == with_time(
        NumericColumn("T", 3.0, 512.0))  # a released missing level is noise: the loader refuses missing times
    assert rules.apply(with_time(NumericColumn("T", -8.0, 512.0)), declared=set()) == with_time(
        NumericColumn("T", 2.0**-16, 512.0))
    assert rules.apply(with_time(NumericColumn("T", -8.0, 0.0, integer=True)), declared=set()) == with_time(
        NumericColumn("T", 1.0, 2.0, integer=True))
    with pytest.raises(ValueError, match="declares column 'T' .*missing"):
        rules.apply(with_time(NumericColumn("T", 3.0, 512.0, missing=True)), declared={"T"})


@pytest.mark.parametrize("released", ["unplaced", "not positive"])
def test_a_fit_applies_the_survival_rules_to_the_released_domain(released: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The rules reach the domain the DP domain released (``recipes.tables.settle_table``), not only a declared one: a
    release that could not place T ends the fit; one whose T starts at or below 0 is fitted from 2^-16, and no
    generated time is missing or below it."""
    from synthcity_dpswf.recipes import tables as table_recipe

    release = table_recipe.table_domain

    def released_time(*args: Any, **kwargs: Any) -> Any:
        domain, paid, domain_release, budget = release(*args, **kwargs)
        time = next(column for column in domain.columns if column.name == "T")
        assert isinstance(time, NumericColumn)
        changed = dataclasses.replace(time, placed=False) if released == "unplaced" else dataclasses.replace(
            time, low=-5.0, integer=False, missing=True)
        columns = tuple(changed if column.name == "T" else column for column in domain.columns)
        return dataclasses.replace(domain, columns=columns), paid, domain_release, budget

    monkeypatch.setattr(table_recipe, "table_domain", released_time)
    loader = SurvivalAnalysisDataLoader(table(1000), time_to_event_column="T", target_column="E")
    if released == "unplaced":
        with pytest.raises(ValueError, match="could not place column 'T'"):
            fitted(loader)
        return
    plugin = fitted(loader)
    time = plugin.schema().domain["T"]
    assert time.low == 2.0**-16
    times = plugin.generate(200).dataframe()["T"]
    assert bool(times.notna().all()) and bool((times >= 2.0**-16).all())


def test_survival_takes_declared_horizons_and_refuses_a_declared_time_range_that_is_not_positive(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    loader = SurvivalAnalysisDataLoader(table(), time_to_event_column="T", target_column="E")
    # T's range declared (public, positive): on 300 rows at epsilon 1 the DP domain leaves T unplaced in about 1 fit
    # in 40, and the fit then stops (the test above); that draw is not this test's.
    declared_time = {"T": {"type": "numeric", "low": 1, "high": 1000}}
    assert fitted(loader, time_horizons=[30, 365], domain=declared_time).generate(10).info()["time_horizons"] == [30.0, 365.0]
    domain = {"x": {"type": "numeric", "low": -4, "high": 4}, "group": {"type": "categorical", "categories": ["a", "b"]},
              "T": {"type": "numeric", "low": 0, "high": 1000}, "E": {"type": "categorical", "categories": [0, 1]}}
    from synthcity_dpswf.models import releasing as model_releasing

    monkeypatch.setattr(model_releasing, "release_batches", lambda *args, **kwargs: pytest.fail("released before refusing"))
    with pytest.raises(ValueError, match="its values are positive .*refuses times that are not > 0"):
        fitted(loader, domain=domain)
    with pytest.raises(ValueError, match="time_horizons must be"):
        Plugins().get("dpswflow", time_horizons=[float("nan")])


@pytest.mark.parametrize("kind", ["time series", "time series survival"])
def test_time_series_loaders_are_refused_before_any_private_computation(kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from synthcity_dpswf.recipes import tables as table_recipe

    monkeypatch.setattr(table_recipe, "release_domain_at", lambda *args, **kwargs: pytest.fail("a private computation ran"))
    sequences = [pd.DataFrame({"a": [1.0, CANARY], "b": [0.5, 0.25]}) for _ in range(6)]
    times = [[0, 1]] * 6
    if kind == "time series":
        loader, name = TimeSeriesDataLoader(temporal_data=sequences, observation_times=times), "TimeSeriesDataLoader"
    else:
        loader = TimeSeriesSurvivalDataLoader(
            temporal_data=sequences, observation_times=times, T=pd.Series([3.0] * 5 + [CANARY]), E=pd.Series([1, 0] * 3)
        )
        name = "TimeSeriesSurvivalDataLoader"
    for plugin in ("dpswflow", "dpswflow_r", "dpswgen"):
        with pytest.raises(ValueError, match=f"does not accept a {name}: .*one row per time step.*one person per row"):
            Plugins().get(plugin).fit(loader)


@pytest.mark.parametrize("codec", ["given autoencoder", "private-pca"])
def test_an_image_loader_keeps_its_public_shape_and_no_private_image(codec: str) -> None:
    """The saved plugin (its reservoir of flowed pairs included) holds none of the private images as the plugin reads
    them (the loader's pixels mapped to [0, 1]) and none of their encoded records; the search finds a planted copy."""
    from synthcity_dpswf.adapters.image_latent import from_synthcity_range

    generator = torch.Generator().manual_seed(0)
    public = torch.rand(64, 1, 32, 32, generator=generator)
    images, labels = torch.rand(80, 1, 32, 32, generator=generator), torch.randint(2, (80,), generator=generator)
    if codec == "private-pca":
        arguments: dict[str, object] = {"codec_options": {"components": 8}}
    else:
        arguments = {"image_codec": AutoencoderCodec("mnist", latent_dim=4, device="cpu").fit(
            public, epochs=1, description="public noise")}
    plugin = Plugins().get("image_dpswflow", epsilon=1.0, n_classes=2, n_steps=5, n_directions=5, n_release_directions=50,
                           **arguments)
    loader = ImageDataLoader(data=(images, labels), height=32)
    plugin.fit(loader)
    assert plugin.data_info == {"data_type": "images", "len": 80, "train_size": 0.8, "height": 32, "width": 32,
                                "channels": 1, "random_state": 0}
    read = from_synthcity_range(loader.unpack().tensors()[0].float())  # the private images as the plugin reads them
    records = plugin.encoder_.encode(read)
    state = deserialize(plugin.save())
    assert private_rows_found(state, read.reshape(80, -1)) == 0 and private_rows_found(state, records) == 0
    planted = {"kept": [read[:3].clone(), records[3:5].clone()]}
    assert private_rows_found(planted, read.reshape(80, -1)) == 3 and private_rows_found(planted, records) == 2
    assert plugin.generate(4).info() == {**plugin.data_info, "len": 4}

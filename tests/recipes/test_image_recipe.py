"""The image plan (``recipes.images.plan_images``, issue 47): one plan, with no synthcity imported, for the plugins'
image path, ``dpswf images`` and the benchmarks' image runner: the plugin's fit is released by the plan the recipe
makes of the same images, a label outside the public classes is refused before a codec is paid for, and a paid codec
at epsilon = inf is a part of its own."""

from __future__ import annotations

import math
import warnings

import pytest
import torch
from sklearn.datasets import load_digits
from synthcity.plugins import Plugins
from synthcity.plugins.core.dataloader import ImageDataLoader

import synthcity_dpswf  # noqa: F401  (registers the plugins)
from synthcity_dpswf.adapters.image_codecs import CodecRequest, ImageCodec, ImageCodecEntry
from synthcity_dpswf.extensions import image_codecs
from synthcity_dpswf.models import DPSWFlow, DPSWFlowR
from synthcity_dpswf.models.releasing import plan_key
from synthcity_dpswf.models.base import GeneratorSpec
from synthcity_dpswf.privacy.budget import Budget
from synthcity_dpswf.recipes.images import CodecOrder, composed_report, fit_releases, plan_images

EPSILON, DELTA, CLASSES = 2.0, 1e-5, 3
FAST = {"n_steps": 5, "n_directions": 10, "flow_batch_size": 200}


def digits() -> tuple[torch.Tensor, torch.Tensor]:
    """200 of sklearn's 8 x 8 digits of classes 0..2, in [0, 1]."""
    images, labels = load_digits(n_class=CLASSES, return_X_y=True)
    return torch.tensor(images[:200], dtype=torch.float32).reshape(-1, 1, 8, 8) / 16.0, torch.tensor(labels[:200])


def pca_order(share: float | None = None) -> CodecOrder:
    return CodecOrder(image_codecs()["private-pca"], CodecRequest(0.0, 0.0, pca_components=6), share)


def test_the_plugin_releases_by_the_plan_the_recipe_makes_of_the_same_images() -> None:
    images, labels = digits()
    plugin = Plugins().get("image_dpswflow_r", epsilon=EPSILON, delta=DELTA, image_codec="private-pca",
                           n_classes=CLASSES, codec_options={"components": 6}, n_release_directions=40, batch_size=50,
                           **FAST)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plugin.fit(ImageDataLoader(data=(images * 2 - 1, labels), height=8))
    spec = GeneratorSpec(DPSWFlowR, {"release": "projected_histogram", "accountant": "rdp",
                                     "neighbouring": "replace_one", "batch_size": 50})
    plan = plan_images(images, labels, CLASSES, Budget(EPSILON, DELTA), spec, pca_order())
    report = plugin.privacy_report()
    assert plan.n_public == 200 and plan.records.shape == (200, 6) and plan.paid is not None and plan.paid.accounted
    assert plan_key(plan.release_plan) == plan_key(plugin.generator_.plan(200, plan.budget.prior))
    assert report.noise_multiplier == pytest.approx(plan.noise_multiplier, rel=1e-9)
    assert [part.name for part in report.parts] == [plan.paid.name]
    assert report.parts[0].epsilon == pytest.approx(plan.paid.epsilon, rel=1e-9)
    model = fit_releases(DPSWFlowR(release="projected_histogram", n_release_directions=40, batch_size=50), plan)
    assert composed_report(model.privacy_report, plan.paid).epsilon == pytest.approx(report.epsilon, rel=1e-9)


def test_labels_outside_the_public_classes_are_refused_before_a_codec_is_paid_for() -> None:
    images, labels = digits()
    built: list[torch.Tensor] = []

    def build(private: torch.Tensor, request: CodecRequest) -> ImageCodec:
        built.append(private)
        raise AssertionError("the codec was built")

    order = CodecOrder(ImageCodecEntry(build, paid=True, assumption="a stand-in"), CodecRequest(0.0, 0.0))
    spec = GeneratorSpec(DPSWFlow, {"release": "projected_histogram", "accountant": "rdp"})
    with pytest.raises(ValueError, match="labels must lie in 0..1; set n_classes for this data"):
        plan_images(images, labels, 2, Budget(EPSILON, DELTA), spec, order)
    assert not built


def test_a_paid_codec_at_epsilon_inf_is_a_part_of_its_own() -> None:
    """Nothing is private: the codec is exact, the budget is not spent and the report composes its part (not private
    either) instead of listing it inside an accounting that holds no noise."""
    images, labels = digits()
    spec = GeneratorSpec(DPSWFlow, {"release": "projected_histogram", "accountant": "rdp", "n_release_directions": 20})
    plan = plan_images(images, labels, CLASSES, Budget(math.inf, DELTA), spec, pca_order())
    assert plan.paid is not None and not plan.paid.accounted and plan.budget.prior is None
    assert plan.noise_multiplier == 0.0
    model = fit_releases(DPSWFlow(release="projected_histogram", n_release_directions=20), plan)
    report = composed_report(model.privacy_report, plan.paid)
    assert not report.is_private and [part.name for part in report.parts] == [plan.paid.name]

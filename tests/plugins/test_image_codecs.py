"""Issue 36, item 2: every image codec the README names is reachable from ``Plugins().get``: the registry's codecs
that need no public image (``image_codec="dct"``, ``"private-pca"``) fit and generate through synthcity, and a paid
codec is one more entry of the releases' accounting (privacy.md, "A private image codec": through a plugin)."""

from __future__ import annotations

import math
import warnings

import pytest
import torch
from sklearn.datasets import load_digits
from synthcity.plugins import Plugins
from synthcity.plugins.core.dataloader import ImageDataLoader

import synthcity_dpswf  # noqa: F401  (registers the plugins)
from synthcity_dpswf.extensions import image_codecs
from synthcity_dpswf.privacy import analytic_gaussian_noise_multiplier
from synthcity_dpswf.privacy.gaussian import composed_multiplier

FAST = {"n_steps": 20, "n_directions": 10, "n_release_directions": 40, "flow_batch_size": 300, "n_classes": 3,
        "pca_components": 8, "dct_frequencies": 6}


def digits(n: int = 300) -> ImageDataLoader:
    """sklearn's 8 x 8 digits of classes 0-2 (public data shipped with sklearn), in synthcity's [-1, 1]."""
    images, labels = load_digits(n_class=3, return_X_y=True)
    pixels = torch.tensor(images[:n], dtype=torch.float32).reshape(-1, 1, 8, 8) / 16.0
    return ImageDataLoader(data=(pixels * 2 - 1, torch.tensor(labels[:n])), height=8)


@pytest.mark.parametrize("codec", sorted(name for name, entry in image_codecs().items() if entry.public_images == "none"))
@pytest.mark.parametrize("name", ["dpswflow", "dpswflow_r"])
def test_each_registry_codec_fits_and_generates_through_synthcity(codec: str, name: str) -> None:
    data = digits()
    plugin = Plugins().get(name, epsilon=2.0, delta=1e-5, image_codec=codec, **FAST)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plugin.fit(data)
        images, labels = plugin.generate(30).unpack().tensors()
    assert images.shape[1:] == (1, 8, 8) and len(labels) == 30 and set(labels.tolist()) <= {0, 1, 2}
    report = plugin.privacy_report()
    assert report.epsilon <= 2.0 * 1.001, report.epsilon
    public = " ".join(report.public)
    if image_codecs()[codec].paid:  # the codec's release inside the accounting, listed with its own guarantee
        assert report.composition == "accounted" and report.parts[0].name == "private codec"
        assert report.epsilon > 2.0 * 0.99  # the whole budget, not the flow's share alone
        assert "private images" in public
    else:
        assert not report.parts and "DCT" in public


def test_the_paid_codec_and_dpswflow_compose_to_the_budget_exactly() -> None:
    """DPSWflow's one release and the codec are one Gaussian release of multiplier z (analytic Gaussian at (epsilon,
    delta)): the codec takes codec_share of mu^2 and the release the rest, recomputed here from the stated
    multipliers."""
    plugin = Plugins().get("dpswflow", epsilon=2.0, delta=1e-5, image_codec="private-pca", codec_share=0.3, **FAST)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plugin.fit(digits())
    z = analytic_gaussian_noise_multiplier(2.0, 1e-5)
    codec_z = plugin.encoder_.noise_multiplier
    assert math.isclose(codec_z, z / math.sqrt(0.3), rel_tol=1e-6)
    report = plugin.privacy_report()
    release_z = report.noise_multiplier  # type: ignore[attr-defined]
    assert math.isclose(composed_multiplier(codec_z, release_z), z, rel_tol=1e-3)
    assert math.isclose(report.epsilon, 2.0, rel_tol=1e-3)
    part = report.parts[0]  # the codec's own guarantee, as it was released
    assert math.isclose(analytic_gaussian_noise_multiplier(part.epsilon, part.delta), codec_z, rel_tol=1e-6)


def test_no_public_split_means_add_remove_is_allowed_and_every_image_is_private() -> None:
    data = digits(120)
    plugin = Plugins().get("dpswflow_r", epsilon=2.0, delta=1e-5, image_codec="dct", neighbouring="add_remove", **FAST)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plugin.fit(data)
    assert "add_remove" in str(plugin.privacy_report()) or "add/remove" in str(plugin.privacy_report())


def test_codec_arguments_are_refused_where_they_are_given() -> None:
    with pytest.raises(ValueError, match="image_codec must be None or a codec that needs no public image"):
        Plugins().get("dpswflow", image_codec="pca")
    with pytest.raises(ValueError, match="an autoencoder on public images: pass image_autoencoder"):
        Plugins().get("dpswflow", image_codec="public-half")  # in the registry, but it needs public images
    with pytest.raises(ValueError, match="not both"):
        Plugins().get("dpswflow", image_codec="dct", image_autoencoder="some/checkpoint.pt")
    with pytest.raises(ValueError, match="codec_share"):
        Plugins().get("dpswflow", image_codec="private-pca", codec_share=1.0)


def test_a_paid_codec_takes_its_own_share_unless_one_is_given() -> None:
    """``codec_share=None`` (the plugins', ``dpswf images``' and ``ImageRunConfig``'s default) is the share chosen for
    the codec on MNIST's validation split: 0.2 for the linear codec, 0.5 for the DP-SGD codec."""
    from synthcity_dpswf.privacy.budget import Budget
    from synthcity_dpswf.recipes.images import ImageRunConfig, codec_release

    codecs = image_codecs()
    assert codecs["private-pca"].share(None) == 0.2 and codecs["private-autoencoder"].share(None) == 0.5
    assert codecs["private-autoencoder"].share(0.3) == 0.3
    budget = Budget(10.0, 1e-5).for_records(1000)
    for codec, share in (("private-pca", 0.2), ("private-autoencoder", 0.5)):
        assert codec_release(ImageRunConfig(codec=codec), budget) == budget.share_guarantee(share)
        assert codec_release(ImageRunConfig(codec=codec, codec_share=0.3), budget) == budget.share_guarantee(0.3)


def test_a_release_plan_the_dpsgd_codec_cannot_compose_with_is_refused_before_training(
    monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under replace-one the DP-SGD codec draws Poisson batches, whose antipodal pair composes Poisson releases and
    releases of all records only: per-step record releases on batches of 50 of 300 are refused before any image is
    read by the training (privacy.md, "A private image codec trained by DP-SGD")."""
    from synthcity_dpswf.adapters import private_autoencoder

    monkeypatch.setattr(private_autoencoder, "train_dpsgd", lambda *args, **kwargs: pytest.fail("the codec was trained"))
    plugin = Plugins().get("dpswflow_r", epsilon=2.0, delta=1e-5, image_codec="private-autoencoder", release="record",
                           batch_size=50, **FAST)
    with pytest.raises(ValueError, match="cannot be composed with a DP-SGD codec trained on Poisson batches"):
        plugin.fit(digits())

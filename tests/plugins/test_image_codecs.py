"""Every image codec the README names is reachable from the image plugins (``Plugins().get("image_dpswflow", ...)``):
the registry's codecs that need no public image (``image_codec="dct"``, ``"private-pca"``, the default, and
``"private-autoencoder"``) fit and generate through synthcity with their own settings (``codec_options``), a paid
codec is one more entry of the releases' accounting (privacy.md, "A private image codec": through a plugin), and
public images are used only where the user gives them (``"public-autoencoder"``)."""

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

FAST = {"n_steps": 20, "n_directions": 10, "n_release_directions": 40, "flow_batch_size": 300, "n_classes": 3}
CODEC_OPTIONS = {"dct": {"frequencies": 6}, "private-pca": {"components": 8}, "private-autoencoder": {"latent_dim": 4}}
"""Each codec's own settings, small for the 8 x 8 digits."""


def digits(n: int = 300) -> ImageDataLoader:
    """sklearn's 8 x 8 digits of classes 0-2 (public data shipped with sklearn), in synthcity's [-1, 1]."""
    images, labels = load_digits(n_class=3, return_X_y=True)
    pixels = torch.tensor(images[:n], dtype=torch.float32).reshape(-1, 1, 8, 8) / 16.0
    return ImageDataLoader(data=(pixels * 2 - 1, torch.tensor(labels[:n])), height=8)


@pytest.mark.parametrize("codec", sorted(name for name, entry in image_codecs().items() if entry.public_images == "none"))
@pytest.mark.parametrize("name", ["image_dpswflow", "image_dpswflow_r"])
def test_each_registry_codec_fits_and_generates_through_synthcity(codec: str, name: str) -> None:
    data = digits()
    plugin = Plugins().get(name, epsilon=2.0, delta=1e-5, image_codec=codec, codec_options=CODEC_OPTIONS[codec], **FAST)
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
    plugin = Plugins().get("image_dpswflow", epsilon=2.0, delta=1e-5, codec_options={"components": 8, "share": 0.3},
                           **FAST)
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
    plugin = Plugins().get("image_dpswflow_r", epsilon=2.0, delta=1e-5, image_codec="dct", neighbouring="add_remove",
                           codec_options=CODEC_OPTIONS["dct"], **FAST)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plugin.fit(data)
    assert "add_remove" in str(plugin.privacy_report()) or "add/remove" in str(plugin.privacy_report())


def test_codec_arguments_are_refused_where_they_are_given() -> None:
    with pytest.raises(ValueError, match="image_codec must be one of"):
        Plugins().get("image_dpswflow", image_codec="pca")
    with pytest.raises(ValueError, match="pass your public images with 'public-autoencoder'"):
        Plugins().get("image_dpswflow", image_codec="public-half")  # in the registry, but bound to a dataset's split
    with pytest.raises(ValueError, match="a given autoencoder has its own settings: drop codec_options"):
        Plugins().get("image_dpswflow", image_codec="some/checkpoint.pt", codec_options={"components": 3})
    with pytest.raises(ValueError, match=r"codec_options\['share'\]"):
        Plugins().get("image_dpswflow", image_codec="private-pca", codec_options={"share": 1.0})
    with pytest.raises(ValueError, match="'private-autoencoder' takes no option 'epoch'"):
        Plugins().get("image_dpswflow", image_codec="private-autoencoder", codec_options={"epoch": 3})


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
    plugin = Plugins().get("image_dpswflow_r", epsilon=2.0, delta=1e-5, image_codec="private-autoencoder",
                           release="record", batch_size=50, **FAST)
    with pytest.raises(ValueError, match="cannot be composed with a DP-SGD codec trained on Poisson batches"):
        plugin.fit(digits())


def test_the_default_codec_takes_no_private_image_as_public() -> None:
    """``fit`` with default arguments: the linear codec learned from the private images and paid for; every image passed
    to ``fit`` is a private record (none trains a codec without noise)."""
    plugin = Plugins().get("image_dpswflow", epsilon=2.0, delta=1e-5, codec_options={"components": 8}, **FAST)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plugin.fit(digits(240))
    report = plugin.privacy_report()
    assert report.parts[0].name == "private codec" and "n = 240 records" in " ".join(report.public)
    assert "no public image" in " ".join(report.public)


def test_the_dpsgd_codec_s_settings_reach_it_and_too_few_images_warn_naming_the_images_needed(
    monkeypatch: pytest.MonkeyPatch
) -> None:
    """``codec_options`` set the DP-SGD codec's own settings (its schedule follows them); a schedule of fewer than
    ``MIN_DPSGD_STEPS`` noisy steps warns with the number of images that would give that many."""
    from synthcity_dpswf.adapters import private_autoencoder
    from synthcity_dpswf.plugins.image_path import MIN_DPSGD_STEPS

    seen = []

    def refuse_training(codec, images, settings, *args, **kwargs):  # type: ignore[no-untyped-def]
        seen.append(settings)
        raise RuntimeError("stop before training")

    monkeypatch.setattr(private_autoencoder.PrivateAutoencoderCodec, "__init__", refuse_training)
    plugin = Plugins().get("image_dpswflow", epsilon=2.0, delta=1e-5, image_codec="private-autoencoder",
                           codec_options={"epochs": 2.0, "batch_size": 100, "latent_dim": 4}, **FAST)
    with pytest.warns(UserWarning, match=f"takes 6 noisy steps on 300 images; below {MIN_DPSGD_STEPS} it learns "
                                         "nothing. Give at least 5000 images"):
        with pytest.raises(RuntimeError, match="stop before training"):
            plugin.fit(digits())
    assert (seen[0].epochs, seen[0].batch_size, seen[0].latent_dim) == (2.0, 100, 4)


def test_labels_must_be_integers_and_generate_takes_the_labels_asked_for() -> None:
    images, labels = digits(150).unpack().tensors()
    with pytest.raises(ValueError, match="image labels must be integers"):
        Plugins().get("image_dpswflow", **FAST).fit(ImageDataLoader(data=(images, labels + 0.5), height=8))
    plugin = Plugins().get("image_dpswflow", epsilon=2.0, codec_options={"components": 8}, **FAST)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plugin.fit(ImageDataLoader(data=(images, labels.double()), height=8))  # whole floats are labels
        asked = [2, 0, 1, 1, 2, 0, 0]
        generated, drawn = plugin.generate(7, cond=asked).unpack().tensors()
    assert drawn.tolist() == asked and generated.shape == (7, 1, 8, 8)
    with pytest.raises(ValueError, match="cond holds 2 labels; give one per image"):
        plugin.generate(3, cond=[0, 1])
    with pytest.raises(ValueError, match="labels must lie in 0..2"):
        plugin.generate(2, cond=[0, 5])


def test_public_images_train_the_codec_only_when_the_user_gives_them() -> None:
    """``"public-autoencoder"``: the autoencoder trains on the images given as public (the report says how many), and
    every image passed to ``fit`` is private."""
    images, labels = digits(300).unpack().tensors()
    public = torch.nn.functional.pad(images[:100], (12, 12, 12, 12), value=-1.0)  # 32 x 32, the paper's architecture
    private = torch.nn.functional.pad(images[100:], (12, 12, 12, 12), value=-1.0)
    plugin = Plugins().get("image_dpswflow", epsilon=2.0, image_codec="public-autoencoder",
                           codec_options={"images": public, "epochs": 1, "refiner_epochs": 0, "latent_dim": 4}, **FAST)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plugin.fit(ImageDataLoader(data=(private, labels[100:]), height=32))
    public_lines = " ".join(plugin.privacy_report().public)
    assert "100 public images given with the codec" in public_lines and "n = 200 records" in public_lines
    assert not plugin.privacy_report().parts  # nothing paid: the codec read no private image


def test_small_generations_after_load_draw_from_the_particles_flowed_at_fit(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fit flows ``RESERVOIR_IMAGES`` pairs, kept with the model: after ``save`` / ``load`` a small ``generate``
    (given labels too) runs no flow and never returns a kept pair twice; one the reservoir cannot serve flows."""
    from synthcity_dpswf.models.sampling import Sampling
    from synthcity_dpswf.plugins.image_path import RESERVOIR_IMAGES

    plugin = Plugins().get("image_dpswflow", epsilon=2.0, codec_options={"components": 8}, **FAST)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plugin.fit(digits(150))
    loaded = Plugins().load(plugin.save())
    flows = []
    original = Sampling.sample_labelled
    monkeypatch.setattr(Sampling, "sample_labelled",
                        lambda self, *args, **kwargs: flows.append(args) or original(self, *args, **kwargs))
    kept = loaded.path_.reservoir[0].clone()
    loaded.generate(10)
    _, labels = loaded.generate(4, cond=[2, 2, 0, 1]).unpack().tensors()
    assert not flows and labels.tolist() == [2, 2, 0, 1]
    assert len(loaded.path_.reservoir[0]) == RESERVOIR_IMAGES - 14
    remaining = {tuple(row.tolist()) for row in loaded.path_.reservoir[0]}
    flowed = {tuple(row.tolist()) for row in kept}
    # the 14 pairs returned left the reservoir, whichever they were (drawn by class, in random order: not the first 14)
    assert len(flowed) == RESERVOIR_IMAGES and remaining <= flowed and len(flowed - remaining) == 14
    loaded.generate(RESERVOIR_IMAGES + 1)  # more than it holds: flowed now, the reservoir kept
    assert len(flows) == 1 and len(loaded.path_.reservoir[0]) == RESERVOIR_IMAGES - 14


def test_a_paid_codec_is_not_taken_back_as_a_free_autoencoder() -> None:
    """A codec released from the private images (the default's ``encoder_``) given back as ``image_codec`` would enter
    a run unpaid: refused, naming the registry codecs."""
    plugin = Plugins().get("image_dpswflow", epsilon=2.0, codec_options={"components": 8}, **FAST)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plugin.fit(digits(150))
    with pytest.raises(ValueError, match="a codec learned from private images is paid for"):
        Plugins().get("image_dpswflow", image_codec=plugin.encoder_)


def test_dpsgd_options_that_do_not_apply_under_the_adjacency_are_refused() -> None:
    with pytest.raises(ValueError, match="under replace-one its rate is batch_size / n"):
        Plugins().get("image_dpswflow", image_codec="private-autoencoder", codec_options={"sample_rate": 0.1})
    with pytest.raises(ValueError, match="applies under replace-one"):
        Plugins().get("image_dpswflow", image_codec="private-autoencoder", neighbouring="add_remove",
                      codec_options={"replace_one_sampling": "fixed"})
    plugin = Plugins().get("image_dpswflow", image_codec="private-autoencoder", codec_options={"batch_size": 64})
    with pytest.raises(ValueError, match="applies under replace-one"):
        Plugins().get("image_dpswflow", image_codec="private-autoencoder", neighbouring="add_remove",
                      codec_options={"replace_one_sampling": "poisson"})
    plugin.neighbouring = "add_remove"  # batch_size applies under both
    assert plugin.neighbouring == "add_remove"


def test_under_add_remove_the_dpsgd_warning_names_no_count_of_images(monkeypatch: pytest.MonkeyPatch) -> None:
    """Under add/remove n is private: the few-steps warning names the settings, not n or a count derived from it
    (one image more must not change it)."""
    from synthcity_dpswf.adapters import private_autoencoder

    def refuse_training(codec, images, settings, *args, **kwargs):  # type: ignore[no-untyped-def]
        raise RuntimeError("stop before training")

    monkeypatch.setattr(private_autoencoder.PrivateAutoencoderCodec, "__init__", refuse_training)
    messages = []
    for n in (120, 121):
        plugin = Plugins().get("image_dpswflow", epsilon=2.0, delta=1e-5, image_codec="private-autoencoder",
                               neighbouring="add_remove", codec_options={"epochs": 0.5, "sample_rate": 0.01}, **FAST)
        images, labels = digits(n).unpack().tensors()
        with pytest.warns(UserWarning, match="noisy steps \\(epochs / sample_rate\\)") as caught:
            with pytest.raises(RuntimeError, match="stop before training"):
                plugin.fit(ImageDataLoader(data=(images, labels), height=8))
        messages.append([str(warning.message) for warning in caught if "noisy steps" in str(warning.message)])
    assert messages[0] == messages[1] and "120" not in messages[0][0]

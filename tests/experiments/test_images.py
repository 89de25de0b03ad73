"""Image-latent adapters, codecs and checkpoints, datasets, the image plugins and ``dpswf images``."""

from __future__ import annotations

import copy
import dataclasses
import json
import re
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from PIL import Image

from synthcity_dpswf.adapters.autoencoders import dcgan_autoencoder, mnist_autoencoder
from synthcity_dpswf.adapters.image_latent import AutoencoderCodec, from_synthcity_range, to_synthcity_range
from synthcity_dpswf.datasets import load_image_folder, load_mnist, public_private_split
from synthcity_dpswf.evaluation import InceptionFeatures

from conftest import blobs

INCEPTION = "weights/inception_fid_torchscript.pt"


def test_architectures_have_the_papers_shapes() -> None:
    encoder, decoder = mnist_autoencoder(latent_dim=8)
    images = torch.rand(3, 1, 32, 32)
    assert encoder(images).shape == (3, 8) and decoder(torch.randn(3, 8)).shape == (3, 1, 32, 32)
    encoder, decoder = dcgan_autoencoder(latent_dim=48, channels=3, width=8)
    assert encoder(torch.rand(2, 3, 64, 64)).shape == (2, 48)
    decoded = decoder(torch.randn(2, 48))
    assert decoded.shape == (2, 3, 64, 64) and float(decoded.min()) >= 0 and float(decoded.max()) <= 1


def test_adapter_trains_encodes_on_the_sphere_and_checkpoints(tmp_path: Path) -> None:
    images, _ = blobs(256)
    adapter = AutoencoderCodec("mnist", latent_dim=4, device="cpu")
    before = float(((adapter.decode(adapter.encode(images)) - images) ** 2).mean())
    adapter.fit(images, epochs=15, batch_size=64, description="synthetic blobs")
    after = float(((adapter.decode(adapter.encode(images)) - images) ** 2).mean())
    assert after < 0.5 * before
    latents = adapter.encode(images)
    torch.testing.assert_close(latents.norm(dim=1), torch.ones(256))
    assert "synthetic blobs (256 images, 15 epochs)" == adapter.public_description
    adapter.save(tmp_path / "ae.pt")
    loaded = AutoencoderCodec.load(tmp_path / "ae.pt", device="cpu")
    torch.testing.assert_close(loaded.encode(images), latents)
    torch.testing.assert_close(loaded.decode(latents), adapter.decode(latents))


def test_the_refiner_trains_on_public_images_sharpens_decoding_and_checkpoints(tmp_path: Path) -> None:
    """``fit_refiner`` needs a trained autoencoder, changes what ``decode`` returns (images stay in [0, 1]), names
    itself in the public description and survives ``save`` / ``load``; a refiner-less checkpoint loads without one."""
    images, _ = blobs(256)
    adapter = AutoencoderCodec("mnist", latent_dim=4, device="cpu")
    with pytest.raises(ValueError, match="train the autoencoder first"):
        adapter.fit_refiner(images, epochs=1)
    adapter.fit(images, epochs=5, batch_size=64, description="synthetic blobs")
    adapter.save(tmp_path / "plain.pt")
    latents = adapter.encode(images)
    plain = adapter.decode(latents)
    adapter.fit_refiner(images, epochs=3, batch_size=64)
    refined = adapter.decode(latents)
    assert float((refined - plain).abs().max()) > 1e-3 and 0 <= float(refined.min()) and float(refined.max()) <= 1
    assert adapter.public_description.startswith("synthetic blobs (256 images, 5 epochs); refined by a network trained "
                                                 "on the same public images (L1 + adversarial, weight 0.2, weights averaged with decay "
                                                 "0.99, 3 epochs)")
    adapter.save(tmp_path / "refined.pt")
    loaded = AutoencoderCodec.load(tmp_path / "refined.pt", device="cpu")
    torch.testing.assert_close(loaded.decode(latents), refined)
    assert loaded.public_description == adapter.public_description
    without = AutoencoderCodec.load(tmp_path / "plain.pt", device="cpu")
    assert without.refiner is None and without.public_description == "synthetic blobs (256 images, 5 epochs)"
    torch.testing.assert_close(without.decode(latents), plain)


def test_image_ranges_are_explicit() -> None:
    images = torch.rand(4, 1, 8, 8)
    torch.testing.assert_close(from_synthcity_range(to_synthcity_range(images)), images)
    adapter = AutoencoderCodec("mnist", device="cpu")
    with pytest.raises(ValueError, match=r"\[0, 1\]; convert synthcity's \[-1, 1\]"):
        adapter.encode(to_synthcity_range(torch.zeros(2, 1, 32, 32)))
    with pytest.raises(ValueError, match="custom modules, pass latent_dim"):
        AutoencoderCodec(modules=mnist_autoencoder(4))
    custom = AutoencoderCodec(modules=mnist_autoencoder(4), latent_dim=4, device="cpu")
    assert custom.encode(torch.rand(2, 1, 32, 32)).shape == (2, 4)


def test_mnist_loads_padded_from_a_torchvision_root(shared_dir: Path) -> None:
    images, labels = load_mnist(shared_dir / "data", train=False)
    assert images.shape == (10000, 1, 32, 32) and labels.shape == (10000,)
    assert float(images.min()) == 0 and float(images.max()) == 1
    assert float(images[:, :, :2].abs().max()) == 0 and float(images[:, :, :, -2:].abs().max()) == 0
    public, private = public_private_split(10000)
    assert len(public) == len(private) == 5000 and len(set(public.tolist()) & set(private.tolist())) == 0


def test_image_folder_is_center_cropped(tmp_path: Path) -> None:
    for index in range(3):
        array = np.zeros((40, 80, 3), dtype=np.uint8)
        array[:, 20:60] = 255  # a bright central square band survives the center crop
        Image.fromarray(array).save(tmp_path / f"{index}.png")
    images = load_image_folder(tmp_path, size=16)
    assert images.shape == (3, 3, 16, 16)
    assert float(images.mean()) > 0.9
    with pytest.raises(ValueError, match="no images"):
        load_image_folder(tmp_path / "empty", size=16)


# --------------------------------------------------------------------------------------------- plugins
@pytest.mark.parametrize("name", ["image_dpswflow_r", "image_dpswflow"])
def test_plugins_generate_labelled_images(name: str) -> None:
    from synthcity.plugins import Plugins
    from synthcity.plugins.core.dataloader import ImageDataLoader

    import synthcity_dpswf  # noqa: F401

    images, labels = blobs(600)
    loader = ImageDataLoader(data=(images, labels), height=32)
    public, _ = blobs(300, seed=7)
    plugin = Plugins().get(
        name, epsilon=10.0, n_classes=4, n_steps=30, n_directions=20, flow_batch_size=1000,
        image_codec="public-autoencoder",
        codec_options={"images": public * 2 - 1, "epochs": 3, "refiner_epochs": 1, "refiner_weight": 0.05},
    )
    plugin.fit(loader)
    generated = plugin.generate(24)
    assert isinstance(generated, ImageDataLoader) and len(generated) == 24
    generated_images, generated_labels = generated.unpack().tensors()
    assert generated_images.shape == (24, 1, 32, 32)
    assert float(generated_images.min()) >= -1 and float(generated_images.max()) <= 1
    assert set(generated_labels.tolist()) <= {0, 1, 2, 3}
    report = plugin.privacy_report()
    assert report.is_private and "autoencoder, trained on 300 public images given with the codec" in str(report)
    assert "n = 600 records" in str(report)  # every image passed to fit is private
    assert plugin.encoder_.latent_dim == 16  # the latent size chosen on MNIST validation data (MNIST_LATENT_DIM)
    assert plugin.encoder_.refiner_settings.adversarial_weight == 0.05 and "weight 0.05" in str(report)


def test_plugin_takes_a_pretrained_adapter() -> None:
    from synthcity.plugins import Plugins
    from synthcity.plugins.core.dataloader import ImageDataLoader

    import synthcity_dpswf  # noqa: F401

    public_images, _ = blobs(200, seed=5)
    adapter = AutoencoderCodec("mnist", device="cpu").fit(public_images, epochs=2, description="public blobs")
    images, labels = blobs(300)
    plugin = Plugins().get("image_dpswflow", epsilon=5.0, n_classes=4, image_codec=adapter, n_steps=10, n_directions=10)
    plugin.fit(ImageDataLoader(data=(images, labels), height=32))
    assert len(plugin.generate(8)) == 8
    assert "n = 300 records" in str(plugin.privacy_report()) and "public blobs" in str(plugin.privacy_report())
    with pytest.raises(ValueError, match="labels must lie in 0..1"):
        Plugins().get("image_dpswflow", n_classes=2, image_codec=adapter).fit(ImageDataLoader(data=(images, labels), height=32))


# ---------------------------------------------------------------------------------------------- the CLI
def test_images_command_end_to_end(shared_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from synthcity_dpswf.adapters.image_latent import PublicSplit
    from synthcity_dpswf.cli import main

    # A small public autoencoder checkpoint (with its refiner) in the output folder is loaded instead of training one:
    # trained on 500 images of the public half of seed 0, the split the run uses, and saying so.
    from synthcity_dpswf.adapters.checkpoints import autoencoder_checkpoint
    from synthcity_dpswf.recipes.images import ImageRunConfig

    images, _ = load_mnist(shared_dir / "data", train=True)
    public, _ = public_private_split(len(images), 0.5, 0)
    AutoencoderCodec("mnist", latent_dim=ImageRunConfig.latent_dim, device="cpu").fit(
        images[public[:500]], epochs=1, description="500 public digits",
        public_split=PublicSplit.of("mnist", len(images), public),
    ).fit_refiner(images[public[:500]], epochs=1).save(autoencoder_checkpoint(
        tmp_path, "mnist", len(public), ImageRunConfig.latent_dim, ImageRunConfig.autoencoder_epochs, ImageRunConfig.seed,
    ))
    code = main([
        "images", "--dataset", "mnist", "--data-root", str(shared_dir / "data"), "--epsilon", "10", "--out", str(tmp_path),
        "--inception", str(shared_dir / INCEPTION), "--samples", "300", "--fid-samples", "10", "--steps", "20", "--quiet",
        "--directions", "40", "--bins", "8", "--refiner-epochs", "1",
    ])
    assert code == 0
    printed = capsys.readouterr().out
    assert re.search(r"\((9\.9\d*|10), 1e-05\)-differentially private", printed) and "500 public digits" in printed
    assert "refined by a network trained on the same public images" in printed
    assert "FID " in printed and "precision" in printed and "(MLP) /" in printed and "wall time" in printed
    assert (tmp_path / "inception_mnist_test_10.pt").exists()  # the test set's features, computed once per --out
    assert "projected-histogram release" in printed and "one release per class" in printed
    assert list(tmp_path.glob("grid_mnist_dpswflow_projected_histogram_eps10_gaussian.png"))
    (results,) = tmp_path.glob("results_*.json")
    saved = json.loads(results.read_text())
    assert saved["config"]["n_release_directions"] == 40 and saved["config"]["n_bins"] == 8
    assert saved["config"]["latent_dim"] == 16 and set(saved["cas"]) == {"mlp", "cnn"} and saved["fid_images"] == 10
    # The per-step flow under add/remove: Poisson-sampled releases accounted with Opacus' RDP, n never printed. Not
    # with the public half, which one image more redraws (refused before any data is read), but with a fixed codec.
    add_remove = ["images", "--dataset", "mnist", "--data-root", str(shared_dir / "data"), "--epsilon", "10", "--out",
                  str(tmp_path), "--samples", "300", "--fid-samples", "0", "--steps", "20", "--quiet", "--directions", "40",
                  "--bins", "8", "--generator", "dpswflow_r", "--neighbouring", "add_remove"]
    with pytest.raises(SystemExit, match="codec 'public-half' under add/remove: .* neighbours of the private half"):
        main(add_remove)
    code = main(add_remove + ["--codec", "dct"])
    printed = capsys.readouterr().out
    assert code == 0 and "neighbouring       add/remove (n private)" in printed and "Poisson" in printed
    assert "Opacus RDPAccountant" in printed and "n = 60000" not in printed and "(n public): (" in printed
    saved = json.loads((tmp_path / "results_mnist_dpswflow_r_projected_histogram_eps10_gaussian_dct_add_remove.json").read_text())
    assert saved["neighbouring"] == "add/remove (n private)" and saved["config"]["neighbouring"] == "add_remove"


def test_autoencoder_checkpoint_is_bound_to_its_public_split(tmp_path: Path) -> None:
    from synthcity_dpswf.adapters.image_latent import PublicSplit
    from synthcity_dpswf.adapters.checkpoints import load_or_train_autoencoder

    images, _ = blobs(16)
    public, _ = public_private_split(16, 0.5, seed=0)
    other_public, _ = public_private_split(16, 0.5, seed=1)
    split, other = PublicSplit.of("blobs", 16, public), PublicSplit.of("blobs", 16, other_public)
    assert split == PublicSplit.of("blobs", 16, public.flip(0)) and split.sha256 != other.sha256
    assert split.sha256 != PublicSplit.of("blobs", 17, public).sha256 != PublicSplit.of("digits", 16, public).sha256
    with pytest.raises(ValueError, match="repeated"):
        PublicSplit.of("blobs", 16, torch.tensor([1, 1]))

    checkpoint = tmp_path / "autoencoder_blobs.pt"
    trained = load_or_train_autoencoder(checkpoint, images[public], split, 1, 0, "public blobs", False)
    loaded = load_or_train_autoencoder(checkpoint, images[public], split, 1, 0, "public blobs", False)
    assert loaded.public_split == split
    torch.testing.assert_close(loaded.encode(images), trained.encode(images))
    same_sizes = r"another public split than this run's \(other public indices of the same images; sha256 [0-9a-f]{12} "
    with pytest.raises(ValueError, match=same_sizes):
        load_or_train_autoencoder(checkpoint, images[other_public], other, 1, 0, "public blobs", False)
    with pytest.raises(ValueError, match=r"\(n_images 16 instead of 17; sha256"):
        AutoencoderCodec.load(checkpoint, public_split=PublicSplit.of("blobs", 17, public))
    with pytest.raises(ValueError, match=r"Delete the file .*another --out.*the same --seed"):
        AutoencoderCodec.load(checkpoint, public_split=other)
    # A caller who vouches for their own public adapter loads it without an expected split.
    assert AutoencoderCodec.load(checkpoint, device="cpu").public_split == split
    # A checkpoint that records no split (written before the record existed) is refused: retrain.
    AutoencoderCodec("mnist", device="cpu").fit(images[public], epochs=1).save(checkpoint)
    with pytest.raises(ValueError, match="does not record the public split.*retrain it: delete the file"):
        load_or_train_autoencoder(checkpoint, images[public], split, 1, 0, "public blobs", False)


def test_a_kept_refiner_trained_otherwise_than_asked_is_trained_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``load_or_train_autoencoder`` reuses the checkpoint's refiner only when ``RefinerSettings`` match what it
    would train (epochs asked, ``fit_refiner``'s defaults), so a changed default, ``--refiner-epochs`` or a checkpoint
    written before the record never decodes through a stale refiner; ``refiner_epochs=0`` drops the refiner and its
    record."""
    from synthcity_dpswf.adapters.checkpoints import load_or_train_autoencoder
    from synthcity_dpswf.adapters.image_latent import PublicSplit, RefinerSettings

    images, _ = blobs(64)
    split = PublicSplit.of("blobs", 64, torch.arange(64))
    checkpoint = tmp_path / "autoencoder_blobs.pt"

    def load_or_train(refiner_epochs: int) -> AutoencoderCodec:
        return load_or_train_autoencoder(checkpoint, images, split, 1, 0, "public blobs", False, "cpu", 4, refiner_epochs)

    first = load_or_train(1)
    assert first.refiner_settings == RefinerSettings(epochs=1)
    latents = first.encode(images)
    with monkeypatch.context() as patched:  # the kept refiner, not a new one
        patched.setattr(AutoencoderCodec, "fit_refiner", lambda *args, **kwargs: pytest.fail("trained again"))
        torch.testing.assert_close(load_or_train(1).decode(latents), first.decode(latents))
    AutoencoderCodec.load(checkpoint, device="cpu").fit_refiner(images, epochs=1, latent_noise=0.5).save(checkpoint)
    assert AutoencoderCodec.load(checkpoint, device="cpu").refiner_settings == RefinerSettings(1, 0.2, 0.5)
    retrained = load_or_train(1)
    assert retrained.refiner_settings == RefinerSettings(epochs=1)
    torch.testing.assert_close(retrained.decode(latents), first.decode(latents))  # the same seed trains the same refiner
    state = torch.load(checkpoint, weights_only=False)
    del state["refiner_settings"]  # as written before the record existed
    torch.save(state, checkpoint)
    assert AutoencoderCodec.load(checkpoint, device="cpu").refiner_settings is None
    assert load_or_train(1).refiner_settings == RefinerSettings(epochs=1)
    plain = load_or_train(0)
    assert plain.refiner is None and plain.refiner_settings is None and plain.public_description == plain.trained_on


def test_the_public_half_s_refiner_takes_its_dataset_s_adversarial_weight(tmp_path: Path) -> None:
    """``public_half_autoencoder`` trains the refiner at the weight chosen on that dataset's public half
    (``REFINER_ADVERSARIAL_WEIGHTS``: FashionMNIST 0.05, fact 70), MNIST's 0.2 where none was chosen, and a kept
    FashionMNIST refiner trained at MNIST's weight (the default before fact 70) is trained again."""
    from synthcity_dpswf.adapters.checkpoints import autoencoder_checkpoint, public_half_autoencoder
    from synthcity_dpswf.adapters.image_latent import RefinerSettings

    images, _ = blobs(64)
    public, _ = public_private_split(64, 0.5, seed=0)

    def trained(dataset: str) -> AutoencoderCodec:
        return public_half_autoencoder(tmp_path, dataset, images, public, 1, 0, False, "cpu", 4, refiner_epochs=1)

    assert trained("fashion_mnist").refiner_settings == RefinerSettings(1, 0.05)
    assert trained("mnist").refiner_settings == RefinerSettings(1, 0.2)
    assert trained("blobs").refiner_settings == RefinerSettings(1, 0.2)
    checkpoint = autoencoder_checkpoint(tmp_path, "fashion_mnist", 32, 4, 1, 0)
    AutoencoderCodec.load(checkpoint, device="cpu").fit_refiner(images[public], epochs=1).save(checkpoint)
    assert AutoencoderCodec.load(checkpoint, device="cpu").refiner_settings == RefinerSettings(1, 0.2)
    assert trained("fashion_mnist").refiner_settings == RefinerSettings(1, 0.05)
    assert AutoencoderCodec.load(checkpoint, device="cpu").refiner_settings == RefinerSettings(1, 0.05)


def test_the_refiner_s_latent_noise_and_weight_average(tmp_path: Path) -> None:
    """``fit_refiner``'s latent noise and weight average are checked, named, and each trains another refiner; the
    average is bias-corrected, (1 - beta) / (1 - beta^T) sum_t beta^(T - t) R_t: one step gives that step's weights
    whatever beta, and beta near 0 gives the last weights."""
    images, _ = blobs(64)
    adapter = AutoencoderCodec("mnist", latent_dim=4, device="cpu").fit(images, epochs=1, description="public blobs")

    def refiner_trained(batch_size: int = 8, **settings: float) -> AutoencoderCodec:
        return copy.deepcopy(adapter).fit_refiner(images, epochs=1, batch_size=batch_size, **settings)

    def largest_difference(one: AutoencoderCodec, other: AutoencoderCodec) -> float:
        pairs = zip(one.refiner.parameters(), other.refiner.parameters())  # type: ignore[union-attr]
        return max(float((a - b).abs().max()) for a, b in pairs)

    last, averaged = refiner_trained(average_decay=0.0), refiner_trained(average_decay=0.9)
    noisy = refiner_trained(average_decay=0.0, latent_noise=0.5)
    assert "latent noise 0.5, 1 epochs" in noisy.public_description
    assert "noise" not in last.public_description and "averaged" not in last.public_description
    assert "weights averaged with decay 0.9, 1 epochs" in averaged.public_description
    assert largest_difference(noisy, last) > 1e-4 and largest_difference(averaged, last) > 1e-4
    assert largest_difference(refiner_trained(average_decay=1e-9), last) < 1e-6  # 8 steps, beta ~ 0: the last weights
    one_step = refiner_trained(batch_size=64, average_decay=0.0)
    assert largest_difference(refiner_trained(batch_size=64, average_decay=0.99), one_step) < 1e-6
    with pytest.raises(ValueError, match="latent_noise must be a finite number >= 0"):
        adapter.fit_refiner(images, epochs=1, latent_noise=-0.1)
    with pytest.raises(ValueError, match=r"average_decay must lie in \[0, 1\)"):
        adapter.fit_refiner(images, epochs=1, average_decay=1.0)


def test_images_run_refuses_the_autoencoder_of_another_seeds_split(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from synthcity_dpswf.experiments import images as experiment

    def small_blobs(root: Path, train: bool = True, download: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
        return blobs(64 if train else 32, seed=0 if train else 1)

    monkeypatch.setitem(experiment.IMAGE_LOADERS, "mnist", small_blobs)
    config = experiment.ImageRunConfig(
        autoencoder_epochs=1, latent_dim=8, n_release_directions=10, n_steps=5, n_samples=40, fid_samples=0, seed=0,
    )
    experiment.run_images(config, tmp_path, tmp_path, None, progress=False)
    assert (tmp_path / "autoencoder_mnist_32_latent8_1ep_seed0.pt").exists()
    # Seed 1 splits the images otherwise: it trains its own checkpoint, under its own name ...
    experiment.run_images(dataclasses.replace(config, seed=1), tmp_path, tmp_path, None, progress=False)
    seed_one = tmp_path / "autoencoder_mnist_32_latent8_1ep_seed1.pt"
    assert seed_one.exists()
    # ... and seed 0's checkpoint put under that name is refused: about half of seed 1's private images trained it.
    shutil.copy(tmp_path / "autoencoder_mnist_32_latent8_1ep_seed0.pt", seed_one)
    with pytest.raises(ValueError, match="another public split"):
        experiment.run_images(dataclasses.replace(config, seed=1), tmp_path, tmp_path, None, progress=False)


# ------------------------------------------------------------------------------------------ the codecs
def _fake_datasets(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tiny stand-ins for MNIST and FashionMNIST (64 training and 32 test blobs each, FashionMNIST's inverted)."""
    from synthcity_dpswf.experiments import images as experiment

    def mnist(root: Path, train: bool = True, download: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
        return blobs(64 if train else 32, seed=0 if train else 1)

    def fashion_mnist(root: Path, train: bool = True, download: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
        images, labels = blobs(64 if train else 32, seed=2 if train else 3)
        return 1 - images, labels

    monkeypatch.setitem(experiment.IMAGE_LOADERS, "mnist", mnist)
    monkeypatch.setitem(experiment.IMAGE_LOADERS, "fashion_mnist", fashion_mnist)


TINY_RUN: dict[str, Any] = dict(
    autoencoder_epochs=1, refiner_epochs=1, latent_dim=8, n_release_directions=10, n_steps=5, n_samples=40, fid_samples=0,
    seed=0,
)


@pytest.mark.parametrize(
    ("codec", "assumption", "checkpoint", "n_private"),
    [
        ("public-half", "autoencoder trained on the public half of MNIST (the public half of the mnist training set "
         "(32 images", "autoencoder_mnist_32_latent8_1ep_seed0.pt", 32),
        ("other-dataset", "autoencoder trained on FashionMNIST's training set: no MNIST image outside the private set "
         "(the whole FashionMNIST training set (64 images", "autoencoder_fashion_mnist_whole_training_set_64_latent8_1ep_seed0.pt", 64),
        ("dct", "a fixed DCT codec: no public data (the 135 lowest 2-D DCT frequencies (u + v < 16", None, 64),
        ("private-pca", "a codec learned from the private images and paid for: no public data (the top 8 eigenvectors "
         "of the private images' second moment, released at epsilon = 3.85", None, 64),
        ("private-autoencoder", "a convolutional autoencoder trained by DP-SGD on the private images and paid for: no "
         "public data (a convolutional autoencoder (latent 32, width 16) trained by DP-SGD on the private images at "
         "epsilon = 6.57", None, 64),  # its own share, 0.5 (ImageCodecEntry.codec_share)
    ],
)
def test_each_codec_runs_end_to_end_and_names_its_assumption(
    codec: str, assumption: str, checkpoint: str | None, n_private: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from synthcity_dpswf.adapters.image_latent import PublicSplit
    from synthcity_dpswf.experiments import images as experiment

    _fake_datasets(monkeypatch)
    config = experiment.ImageRunConfig(codec=codec, dct_frequencies=16, pca_components=8, **TINY_RUN)  # K reaches the codec
    result = experiment.run_images(config, tmp_path, tmp_path, None, progress=False)
    if codec == "private-pca":  # the codec's release is the prior of the releases' accounting: exact for DPSWflow
        assert [part.name for part in result.report.parts] == ["private codec"]
        assert result.report.epsilon == pytest.approx(10.0, abs=1e-6) and result.report.epsilon <= 10.0
        assert 2.0 < result.report.parts[0].epsilon < 10.0 and "composition with the prior release, exact" in str(result.report)
    if codec == "private-autoencoder":  # its DP-SGD schedule is an entry of the releases' replace-one RDP accounting
        assert [part.name for part in result.report.parts] == ["private codec"] and "DP-SGD" in str(result.report)
        assert 0.98 * 10.0 <= result.report.epsilon <= 10.0 and "replace-one" in result.report.accountant
        assert len(list(tmp_path.glob("private_autoencoder_*.pt"))) == 1  # kept under its public data key
    # The public half's codec releases the private half; the others, which need no MNIST image, all 64 images.
    assert assumption in str(result.report) and f"n = {n_private} records" in str(result.report)
    # The autoencoder codecs decode through a refiner trained on the same public images; the linear codecs have none.
    assert ("refined by a network trained on the same public images" in str(result.report)) == (checkpoint is not None)
    assert set(result.cas) == {"mlp", "cnn"} and all(0 <= value <= 1 for value in result.cas.values())
    assert result.grid.exists()
    suffix = "" if codec == "public-half" else "_" + codec.replace("-", "_")
    saved = json.loads((tmp_path / f"results_mnist_dpswflow_projected_histogram_eps10_gaussian{suffix}.json").read_text())
    assert saved["codec"] == saved["config"]["codec"] == codec and saved["public"].startswith(saved["assumption"])
    assert [path.name for path in tmp_path.glob("autoencoder_*.pt")] == ([checkpoint] if checkpoint else [])
    if codec == "other-dataset":  # bound to the whole FashionMNIST training set
        loaded = AutoencoderCodec.load(tmp_path / checkpoint)
        assert loaded.public_split == PublicSplit.of("fashion_mnist", 64, torch.arange(64))


def test_public_half_and_other_dataset_checkpoints_are_not_interchangeable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from synthcity_dpswf.adapters.image_latent import PublicSplit
    from synthcity_dpswf.experiments import images as experiment

    _fake_datasets(monkeypatch)
    images, _ = blobs(64)
    public, _ = public_private_split(64, 0.5, 0)
    # The public half of MNIST under the other-dataset codec's file name: its images are MNIST images.
    AutoencoderCodec("mnist", device="cpu").fit(
        images[public], epochs=1, public_split=PublicSplit.of("mnist", 64, public)
    ).save(tmp_path / "autoencoder_fashion_mnist_whole_training_set_64_latent8_1ep_seed0.pt")
    config = experiment.ImageRunConfig(codec="other-dataset", **TINY_RUN)
    with pytest.raises(ValueError, match=r"another public split than this run's \(dataset 'mnist' instead of 'fashion_mnist'"):
        experiment.run_images(config, tmp_path, tmp_path, None, progress=False)
    # And the other way round: a whole-FashionMNIST checkpoint where the public half of MNIST is expected.
    AutoencoderCodec("mnist", device="cpu").fit(
        1 - images, epochs=1, public_split=PublicSplit.of("fashion_mnist", 64, torch.arange(64))
    ).save(tmp_path / "autoencoder_mnist_32_latent8_1ep_seed0.pt")
    with pytest.raises(ValueError, match=r"\(dataset 'fashion_mnist' instead of 'mnist', n_public 64 instead of 32"):
        experiment.run_images(dataclasses.replace(config, codec="public-half"), tmp_path, tmp_path, None, progress=False)


def test_codec_errors_come_before_any_private_data_is_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from synthcity_dpswf.datasets import load_fashion_mnist
    from synthcity_dpswf.experiments import images as experiment

    def private_data(root: Path, train: bool = True, download: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
        raise AssertionError("the private dataset was read before the configuration was checked")

    monkeypatch.setitem(experiment.IMAGE_LOADERS, "mnist", private_data)
    monkeypatch.setitem(experiment.IMAGE_LOADERS, "fashion_mnist", load_fashion_mnist)  # the real loader, on an empty root
    config = experiment.ImageRunConfig(**TINY_RUN)
    with pytest.raises(ValueError, match=r"codec must be one of \['public-half', 'other-dataset', 'dct', 'private-pca', 'private-autoencoder'\], got 'pca'"):
        experiment.run_images(dataclasses.replace(config, codec="pca"), tmp_path, tmp_path, None, progress=False)
    with pytest.raises(ValueError, match="codec 'dct' assumes none: use start 'gaussian', or codec 'public-half'"):
        experiment.run_images(dataclasses.replace(config, codec="dct", start="public"), tmp_path, tmp_path, None, progress=False)
    with pytest.raises(ValueError, match="device must be 'auto', 'cpu' or 'cuda'"):
        experiment.run_images(dataclasses.replace(config, device="tpu"), tmp_path, tmp_path, None, progress=False)
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="torch sees no CUDA device: use 'auto' or 'cpu'"):
            experiment.run_images(dataclasses.replace(config, device="cuda"), tmp_path, tmp_path, None, progress=False)
    missing = r"FashionMNIST is not under .*codec 'other-dataset' trains the MNIST run's .*choose codec 'public-half' or 'dct'"
    with pytest.raises(FileNotFoundError, match=missing):
        experiment.run_images(dataclasses.replace(config, codec="other-dataset"), tmp_path, tmp_path, None, progress=False)


def test_an_extension_s_dct_entry_replaces_the_built_in_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """The ``"dct"`` codec is read from the image codec registry (``extensions.image_codecs``, which the plugins and
    ``dpswf images`` read): an extension's entry under that name replaces the built-in one."""
    import pluggy

    from synthcity_dpswf import extensions
    from synthcity_dpswf.adapters import DCTTransform
    from synthcity_dpswf.adapters.image_codecs import CodecRequest, FixedDCTCodec, ImageCodecEntry

    class CoarseDCT(DCTTransform):
        """An extension's replacement: never more than 4 frequencies."""

        def __init__(self, height: int, width: int, n_frequencies: int, max_value: float = 1.0) -> None:
            super().__init__(height, width, min(n_frequencies, 4), max_value)

    def coarse_dct(images: torch.Tensor, request: CodecRequest) -> FixedDCTCodec:
        height, width = images.shape[-2:]
        return FixedDCTCodec(CoarseDCT(height, width, request.dct_frequencies), request.dct_frequencies)

    class Extension:
        @extensions.hookimpl
        def dpswf_image_codecs(self) -> dict[str, ImageCodecEntry]:
            return {"dct": ImageCodecEntry(coarse_dct, paid=False, assumption="a coarse DCT codec: no public data")}

    manager = pluggy.PluginManager(extensions.PROJECT)
    manager.add_hookspecs(extensions.DPSWFSpec)
    manager.register(extensions.BuiltinCodecs(), name="builtin")
    manager.register(Extension())
    images, _ = blobs(5)
    request = CodecRequest(0.0, 0.0)
    assert extensions.image_codecs()["dct"].build(images, request).codec.dim == 77  # the built-in, K = 12
    monkeypatch.setattr(extensions, "plugin_manager", lambda: manager)
    codec = extensions.image_codecs()["dct"].build(images, request)
    assert isinstance(codec.codec, CoarseDCT) and codec.encode(images).shape == (5, 9)
    decoded = codec.decode(codec.encode(images))
    assert decoded.shape == (5, 1, 32, 32) and float(decoded.min()) >= 0 and float(decoded.max()) <= 1
    with pytest.raises(ValueError, match="one-channel images"):
        codec.encode(images.repeat(1, 3, 1, 1))


def test_an_extension_s_codec_reaches_the_images_command_with_its_public_images(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every codec ``dpswf images`` takes is a registry entry: an extension's codec trained on the public half is
    offered by ``--codec``, receives that half (and only it) and names its assumption in the report."""
    import pluggy

    from synthcity_dpswf import extensions
    from synthcity_dpswf.adapters.image_codecs import CodecRequest, ImageCodecEntry, public_half_codec
    from synthcity_dpswf.cli import build_parser
    from synthcity_dpswf.experiments import images as experiment

    seen: list[CodecRequest] = []

    def build(images: torch.Tensor, request: CodecRequest) -> AutoencoderCodec:
        seen.append(request)
        return public_half_codec(images, request)

    class Extension:
        @extensions.hookimpl
        def dpswf_image_codecs(self) -> dict[str, ImageCodecEntry]:
            return {"my-autoencoder": ImageCodecEntry(build, paid=False, public_images="training_half",
                                                      assumption="my autoencoder on the public half of {dataset}")}

    manager = pluggy.PluginManager(extensions.PROJECT)
    manager.add_hookspecs(extensions.DPSWFSpec)
    manager.register(extensions.BuiltinCodecs(), name="builtin")
    manager.register(Extension())
    monkeypatch.setattr(extensions, "plugin_manager", lambda: manager)
    assert build_parser().parse_args(["images", "--data-root", ".", "--codec", "my-autoencoder"]).codec == "my-autoencoder"
    _fake_datasets(monkeypatch)
    config = experiment.ImageRunConfig(codec="my-autoencoder", **TINY_RUN)
    result = experiment.run_images(config, tmp_path, tmp_path, None, progress=False)
    assert len(seen) == 1 and seen[0].public is not None and seen[0].public.dataset == "mnist"
    public, private = experiment.split_training_set("my-autoencoder", 64, config.seed)
    assert torch.equal(seen[0].public.indices, public) and len(public) == 32  # the seeded half, the other half private
    assert "my autoencoder on the public half of MNIST" in str(result.report) and "n = 32 records" in str(result.report)
    with pytest.raises(ValueError, match="codec 'my-autoencoder' under add/remove"):
        experiment.run_images(dataclasses.replace(config, neighbouring="add_remove"), tmp_path, tmp_path, None, progress=False)


def test_download_reaches_the_dataset_loaders_only_when_asked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from synthcity_dpswf.experiments import images as experiment

    asked: list[bool] = []

    def mnist(root: Path, train: bool = True, download: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
        asked.append(download)
        return blobs(64 if train else 32, seed=0 if train else 1)

    monkeypatch.setitem(experiment.IMAGE_LOADERS, "mnist", mnist)
    config = experiment.ImageRunConfig(codec="dct", **TINY_RUN)
    experiment.run_images(config, tmp_path, tmp_path, None, progress=False)
    experiment.run_images(config, tmp_path, tmp_path, None, progress=False, download=True)
    assert asked == [False, False, True, True]  # training and test sets, each run


def test_the_flow_is_built_on_the_runs_device() -> None:
    """``build_generator`` hands ``config.device`` to the flow (before, a CUDA run fitted and sampled it on the CPU);
    ``"meta"`` stands in for a device this machine lacks."""
    from synthcity_dpswf.recipes.images import ImageRunConfig, build_generator

    for generator in ("dpswflow", "dpswflow_r", "dpswgen"):
        assert build_generator(ImageRunConfig(generator=generator, device="meta"), progress=False).device.type == "meta"
    assert build_generator(ImageRunConfig(device="auto"), progress=False).device.type == (
        "cuda" if torch.cuda.is_available() else "cpu")


def test_the_fid_network_runs_on_the_runs_device(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``run_images`` moves the Inception network to ``config.device``: left on the CPU, a GPU run's FID on 20,000
    images took minutes (benchmarks/results/gpu_table/NOTES.md)."""
    from synthcity_dpswf.experiments import images as experiment

    moved_to: list[str] = []

    class RecordingInception(InceptionFeatures):
        """A linear map as features, and a record of where the run moved the network."""

        def __init__(self, path: Path) -> None:
            torch.nn.Module.__init__(self)
            self.network = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(32 * 32, 2048))

        def to(self, device: str) -> "RecordingInception":  # type: ignore[override]
            moved_to.append(str(device))
            return self

        def forward(self, images: torch.Tensor) -> torch.Tensor:
            return self.network(images[:, :1]) + 0.01 * torch.randn(len(images), 2048)

    _fake_datasets(monkeypatch)
    monkeypatch.setattr(experiment, "InceptionFeatures", RecordingInception)
    inception = tmp_path / "inception.pt"
    inception.write_bytes(b"a stand-in: the recording network never reads it")
    config = experiment.ImageRunConfig(codec="dct", dct_frequencies=16, device="cpu", **{**TINY_RUN, "fid_samples": 20})
    result = experiment.run_images(config, tmp_path, tmp_path, inception, progress=False)
    assert moved_to == ["cpu"] and result.fid is not None


def test_a_per_step_generator_accounts_the_private_codec_as_its_prior(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """dpswf images with DPSWflow-r and the private codec: the codec takes its share of mu^2 (the same release as with
    DPSWflow, not a fifth of epsilon by basic composition) and the releases' RDP accounting holds it as its prior, so
    the whole is the budget (privacy.md, "A private image codec")."""
    from synthcity_dpswf.experiments import images as experiment

    _fake_datasets(monkeypatch)
    runs = {}
    for generator in ("dpswflow", "dpswflow_r"):
        config = experiment.ImageRunConfig(codec="private-pca", generator=generator, pca_components=8, **TINY_RUN)
        runs[generator] = experiment.run_images(config, tmp_path / generator, tmp_path, None, progress=False).report
    codec_part = runs["dpswflow_r"].parts[0]
    assert codec_part.name == "private codec" and codec_part.epsilon == pytest.approx(runs["dpswflow"].parts[0].epsilon)
    assert codec_part.epsilon > 3.0  # basic composition gave it 0.2 x 10
    assert runs["dpswflow_r"].epsilon <= 10.0 * (1 + 1e-9) and runs["dpswflow_r"].epsilon == pytest.approx(10.0, rel=2e-3)

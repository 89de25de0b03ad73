"""The evaluation metrics: CAS, FID and precision / recall, image grids."""

from __future__ import annotations

from pathlib import Path

import matplotlib
import pytest
import torch
from PIL import Image

from synthcity_dpswf.evaluation import (
    InceptionFeatures,
    classification_accuracy,
    frechet_distance,
    frechet_inception_distance,
    precision_recall,
    sample_space_frechet_distance,
    save_image_grid,
)
from synthcity_dpswf.evaluation.plots import labelled_grid_figure

from conftest import blobs, drawn_aspects

INCEPTION = "weights/inception_fid_torchscript.pt"


def test_classification_accuracy_and_grid(tmp_path: Path) -> None:
    images, labels = blobs(400)
    test_images, test_labels = blobs(200, seed=1)
    assert classification_accuracy(images, labels, test_images, test_labels, epochs=5) > 0.95
    small, small_labels = blobs(160)
    small_test, small_test_labels = blobs(80, seed=1)
    assert classification_accuracy(small, small_labels, small_test, small_test_labels, epochs=5, classifier="cnn") > 0.95
    # Labels shuffled against the images: nothing to learn, so the CNN is near chance (it cannot pass trivially).
    shuffled = small_labels[torch.randperm(160, generator=torch.Generator().manual_seed(0))]
    assert classification_accuracy(small, shuffled, small_test, small_test_labels, epochs=5, classifier="cnn") < 0.5
    with pytest.raises(ValueError, match="classifier must be one of"):
        classification_accuracy(images, labels, test_images, test_labels, classifier="svm")
    grid = save_image_grid(images[:20], tmp_path / "grid.png", per_row=10)
    assert Image.open(grid).size == (10 * 34 + 2, 2 * 34 + 2)


@pytest.mark.parametrize("setting", ["equal", "auto"])
def test_a_labelled_grid_names_its_rows_and_columns_and_keeps_each_image_s_aspect(setting: str) -> None:
    # The image runner's and dpswf images' grids: square MNIST-like images and a wide one, named rows and columns.
    rows = {"DPSWflow": torch.rand(3, 1, 28, 28), "wide": torch.rand(2, 3, 10, 30)}
    with matplotlib.rc_context({"image.aspect": setting}):
        figure = labelled_grid_figure(rows, ["label 0", "label 1", "label 2"], title="MNIST")
        aspects = drawn_aspects(figure)
    assert len(aspects) == 5
    for drawn, own in aspects:
        assert drawn == pytest.approx(own, rel=0.03)
    assert [ax.get_ylabel() for ax in figure.axes if ax.get_ylabel()] == ["DPSWflow", "wide"]
    assert [ax.get_title() for ax in figure.axes if ax.get_title()] == ["label 0", "label 1", "label 2"]


def test_fid_with_the_local_inception_file(shared_dir: Path) -> None:
    features = InceptionFeatures(shared_dir / INCEPTION)
    images, _ = blobs(24)
    assert features(images[:2]).shape == (2, 2048)
    same = frechet_inception_distance(images[:12], images[:12], features)
    other = frechet_inception_distance(images[:12], 1 - images[12:], features)
    assert abs(same) < 1e-2 and other > 10
    with pytest.raises(ValueError, match="DPSWF_INCEPTION"):
        InceptionFeatures("/nonexistent.pt")


def test_frechet_distance_and_precision_recall_on_features() -> None:
    generator = torch.Generator().manual_seed(0)
    real = torch.randn(400, 2048, generator=generator)
    same = torch.randn(400, 2048, generator=generator)
    shifted = same + 0.5  # the mean moves by 0.5 in each of 2048 coordinates: ||shift||^2 = 512
    assert frechet_distance(real, real) == pytest.approx(0.0, abs=1e-2)
    assert frechet_distance(real, shifted) - frechet_distance(real, same) == pytest.approx(512, rel=0.05)
    assert precision_recall(real, real) == (1.0, 1.0)
    assert precision_recall(real, same + 100.0) == (0.0, 0.0)
    # Fakes collapsed onto a few real points: precise, but they cover little of the real set.
    precision, recall = precision_recall(real, real[:5].repeat(80, 1))
    assert precision == 1.0 and recall < 0.1
    with pytest.raises(ValueError, match="2048"):
        frechet_distance(real[:, :10], real[:, :10])


def test_both_frechet_routes_agree_with_torchmetrics() -> None:
    """Few samples take the sample-space route, many take torchmetrics' own: the same number either way."""
    generator = torch.Generator().manual_seed(1)
    real = torch.rand(2048, 2048, generator=generator).square()  # non-negative and skewed, like pool3 features
    fake = torch.rand(2048, 2048, generator=generator).square() * 1.1 + 0.01
    torchmetrics_value = frechet_distance(real, fake)  # 2048^3 = d^3: torchmetrics' route
    assert sample_space_frechet_distance(real, fake) == pytest.approx(torchmetrics_value, rel=1e-5)
    assert frechet_distance(real[:300], fake[:200]) == sample_space_frechet_distance(real[:300], fake[:200])
    with pytest.raises(ValueError, match="at least 2 features"):
        frechet_distance(real[:1], fake[:5])


class LinearFeatures(InceptionFeatures):
    """A fixed linear map in place of Inception (the tests using it need no weights file); counts its calls."""

    def __init__(self) -> None:
        torch.nn.Module.__init__(self)
        self.network = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(32 * 32, 2048))
        torch.nn.init.normal_(self.network[1].weight, generator=torch.Generator().manual_seed(0))
        self.calls = 0

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        return self.network(images[:, :1])


def test_reference_features_are_cached_whole_and_recomputed_for_other_images(tmp_path: Path) -> None:
    """Runs side by side share one cache: it is renamed into place whole (no partial file is ever read or left)."""
    from synthcity_dpswf.evaluation.fid import cached_inception_features

    network, cache, inception = LinearFeatures(), tmp_path / "features.pt", tmp_path / "inception.pt"
    real, _ = blobs(60, seed=0)
    first = cached_inception_features(real, network, inception, cache)
    assert cache.exists() and [path.name for path in tmp_path.iterdir()] == ["features.pt"]
    calls = network.calls
    assert torch.equal(cached_inception_features(real, network, inception, cache), first) and network.calls == calls
    other, _ = blobs(60, seed=1)
    assert not torch.equal(cached_inception_features(other, network, inception, cache), first) and network.calls > calls


def test_fid_precision_recall_scores_images_against_reference_features() -> None:
    """One pass of features for FID and precision / recall together, the same numbers as each metric alone."""
    from synthcity_dpswf.evaluation import fid_precision_recall, inception_features

    network = LinearFeatures()
    real, _ = blobs(60, seed=0)
    generated, _ = blobs(50, seed=1)
    real_features = inception_features(real, network)
    fake_features = inception_features(generated, network)
    fid, precision, recall = fid_precision_recall(real_features, generated, network)
    assert fid == pytest.approx(frechet_distance(real_features, fake_features))
    assert (precision, recall) == precision_recall(real_features, fake_features)
    assert fid_precision_recall(real_features, real, network)[0] == pytest.approx(0.0, abs=1e-3)

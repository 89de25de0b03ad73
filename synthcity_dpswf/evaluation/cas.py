"""Classification accuracy score (CAS): a classifier trained on generated (input, label) pairs, tested on real ones."""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional

from synthcity_dpswf.math.checks import check_positive_int

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
    CUDA cuDNN's non-deterministic kernels move the CNN's accuracy a little between two runs on the same images
    (the DCT codec's ceiling, scored twice in ``benchmarks/results/gpu_codecs``).
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

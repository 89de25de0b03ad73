"""CUDA checks beyond the flow's (test_flow.py) and the DP-SGD baseline's (test_dpsgd_gan.py): one flow step on
CPU and CUDA, a model sampling on CUDA in chunks, the images command's flow on CUDA, a plugin fit and generate with
``device="cuda"``.

All are marked ``cuda`` (``pytest -m cuda``, what ``benchmarks/gpu.sh`` runs) and skipped without a CUDA device.
"""

from __future__ import annotations

import pytest
import torch

from synthcity_dpswf.math import (
    empirical_quantiles,
    grouped_sliced_drift,
    project,
    quantile_levels,
    random_directions,
    sliced_drift,
)
from synthcity_dpswf.models import DPSWFlow, FlowSettings

from conftest import requires_cuda

pytestmark = [requires_cuda, pytest.mark.cuda]


def test_one_flow_step_matches_on_cpu_and_cuda() -> None:
    generator = torch.Generator().manual_seed(0)
    particles = torch.randn(20_000, 8, generator=generator)
    target = torch.randn(5_000, 8, generator=generator) * 0.5 + 1
    directions = random_directions(8, 200, generator)
    quantiles = empirical_quantiles(project(target, directions), quantile_levels(1000))
    for particle_cdf in ("histogram", "sort"):
        on_cpu = sliced_drift(particles, directions, quantiles, particle_cdf=particle_cdf)
        on_cuda = sliced_drift(particles.cuda(), directions.cuda(), quantiles.cuda(), particle_cdf=particle_cdf).cpu()
        assert float((on_cpu - on_cuda).abs().median()) < 1e-4, particle_cdf
        assert float((on_cpu - on_cuda).abs().max()) < 1e-2, particle_cdf
    sizes = torch.tensor([12_000, 8_000])
    grouped_quantiles = torch.stack([quantiles, quantiles + 0.5])
    on_cpu = grouped_sliced_drift(particles, sizes, directions, grouped_quantiles)
    on_cuda = grouped_sliced_drift(particles.cuda(), sizes.cuda(), directions.cuda(), grouped_quantiles.cuda()).cpu()
    assert float((on_cpu - on_cuda).abs().median()) < 1e-4


def test_model_samples_on_cuda_in_chunks() -> None:
    generator = torch.Generator().manual_seed(0)
    records, labels = torch.rand(3000, 8, generator=generator) - 0.5, torch.randint(10, (3000,), generator=generator)
    model = DPSWFlow(settings=FlowSettings(n_steps=50), device="cuda").fit(records, 10.0, 1e-5, labels=labels, n_classes=10)
    samples, sample_labels = model.sample_labelled(2000)
    assert samples.device.type == "cuda" and samples.shape == (2000, 8) and sample_labels.shape == (2000,)
    chunks = list(model.sample_chunks(2500, 1000))
    assert [len(chunk.records) for chunk in chunks] == [1000, 1000, 500]
    assert all(chunk.records.device.type == "cuda" and torch.isfinite(chunk.records).all() for chunk in chunks)


def test_the_images_command_builds_its_flow_on_cuda() -> None:
    """``dpswf images --device cuda`` runs the flow there, not only the autoencoder and the classifiers."""
    from synthcity_dpswf.recipes.images import ImageRunConfig, build_generator

    for generator in ("dpswflow", "dpswflow_r", "dpswgen"):
        model = build_generator(ImageRunConfig(generator=generator, device="cuda"), progress=False)
        assert model.device.type == "cuda", generator


def test_plugin_fits_and_generates_on_cuda() -> None:
    try:  # synthcity's stack may be missing or broken on a GPU image that carries only the core's wheels
        from synthcity.plugins import Plugins

        import synthcity_dpswf  # noqa: F401  (registers the plugins)
    except Exception as error:  # noqa: BLE001 - any import failure means: no synthcity here
        pytest.skip(f"synthcity is not importable here: {type(error).__name__}: {error}")
    from sklearn.datasets import load_iris

    frame = load_iris(as_frame=True).frame
    domain = {column: {"type": "numeric", "low": 0.0, "high": 10.0} for column in frame.columns if column != "target"}
    domain["target"] = {"type": "categorical", "categories": [0, 1, 2]}
    plugin = Plugins().get("dpswflow", epsilon=10.0, n_steps=50, domain=domain, device="cuda")
    plugin.fit(frame)
    assert plugin.generator_.device.type == "cuda"
    generated = plugin.generate(200).dataframe()
    assert len(generated) == 200 and list(generated.columns) == list(frame.columns)
    assert generated["target"].isin([0, 1, 2]).all()

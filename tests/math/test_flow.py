"""The flow integrator and the sliced Wasserstein distance."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

from synthcity_dpswf.math import EmpiricalTarget, random_directions, run_flow, sliced_wasserstein, wasserstein_1d_squared

from conftest import requires_cuda


def _gaussian_target(n: int, seed: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    mean = torch.tensor([3.0, -2.0, 1.0, 0.5], dtype=torch.float64)
    scale = torch.tensor([0.5, 1.5, 1.0, 0.3], dtype=torch.float64)
    return (mean + scale * torch.randn(n, 4, generator=generator, dtype=torch.float64)).to(dtype)


def test_wasserstein_1d_matches_brute_force_for_equal_and_unequal_sizes() -> None:
    rng = np.random.default_rng(0)
    for n, m in [(6, 6), (3, 2), (5, 7)]:
        x, y = rng.normal(size=n), rng.normal(size=m) + 1
        # Brute force: replicate to a common size lcm(n, m); sorted matching is optimal in 1-D.
        size = np.lcm(n, m)
        expected = np.mean((np.sort(np.repeat(x, size // n)) - np.sort(np.repeat(y, size // m))) ** 2)
        got = wasserstein_1d_squared(torch.tensor(x)[None], torch.tensor(y)[None])
        np.testing.assert_allclose(float(got[0]), expected, rtol=1e-12)


def test_sliced_wasserstein_of_a_shift() -> None:
    x = torch.randn(2000, 3, dtype=torch.float64)
    shift = torch.tensor([1.0, -2.0, 2.0], dtype=torch.float64)
    assert sliced_wasserstein(x, x) == 0.0
    # E_theta <s, theta>^2 = |s|^2 / d for a pure translation.
    assert sliced_wasserstein(x, x + shift, n_directions=4000) == pytest.approx(3.0 / 3**0.5, rel=0.03)


def test_flow_converges_to_a_gaussian_target() -> None:
    target = _gaussian_target(4000, seed=0)
    holdout = _gaussian_target(4000, seed=1)
    start = torch.randn(4000, 4, generator=torch.Generator().manual_seed(2))
    source = EmpiricalTarget(target, n_directions=50, seed=3)
    final = run_flow(start, source, n_steps=150, step_size=1.0)
    before, after = sliced_wasserstein(start, holdout), sliced_wasserstein(final, holdout)
    assert after < 0.05 * before, (before, after)


def test_seeded_runs_are_bit_reproducible_on_cpu() -> None:
    target = _gaussian_target(500, seed=0)
    start = torch.randn(300, 4, generator=torch.Generator().manual_seed(1))

    def once() -> torch.Tensor:
        source = EmpiricalTarget(target, n_directions=20, smoothing=0.3, batch_size=200, seed=5)
        return run_flow(start, source, 30, entropy=0.01, generator=torch.Generator().manual_seed(9))

    assert torch.equal(once(), once())


@pytest.mark.parametrize("particle_cdf", ["sort", "histogram"])
def test_float32_and_float64_agree(particle_cdf: str) -> None:
    target = _gaussian_target(1000, seed=0, dtype=torch.float64)
    start = torch.randn(1000, 4, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    finals = []
    for dtype in (torch.float32, torch.float64):
        source = EmpiricalTarget(target.to(dtype), n_directions=30, seed=2)
        finals.append(run_flow(start.to(dtype), source, 40, particle_cdf=particle_cdf).double())  # type: ignore[arg-type]
    # Near-ties in a projection may swap order between precisions and send two particles to each other's
    # targets: agreement is judged on the distributions and the typical particle, not the worst one.
    # Both far below the sampling floor (SW between two fresh target samples of 1000 is about 0.05).
    assert sliced_wasserstein(finals[0], finals[1]) < 0.01
    assert float((finals[0] - finals[1]).abs().median()) < 5e-3


def test_callback_sees_every_step() -> None:
    seen: list[int] = []
    target = _gaussian_target(100, seed=0)
    run_flow(torch.zeros(50, 4), EmpiricalTarget(target, 5), 7, callback=lambda step, x: seen.append(step))
    assert seen == list(range(1, 8))


def test_flow_rejects_bad_arguments() -> None:
    target = _gaussian_target(100, seed=0)
    source = EmpiricalTarget(target, 5)
    with pytest.raises(ValueError, match="3 features but the target has 4"):
        run_flow(torch.zeros(10, 3), source, 5)
    with pytest.raises(ValueError, match="n_steps"):
        run_flow(torch.zeros(10, 4), source, 0)
    with pytest.raises(ValueError, match="step_size"):
        run_flow(torch.zeros(10, 4), source, 5, step_size=0.0)
    with pytest.raises(ValueError, match="entropy"):
        run_flow(torch.zeros(10, 4), source, 5, entropy=float("nan"))
    with pytest.raises(ValueError, match="batch_size"):
        EmpiricalTarget(target, 5, batch_size=101)
    with pytest.raises(ValueError, match="NaN or inf"):
        EmpiricalTarget(torch.full((3, 2), float("nan")), 5)


def _parity_flows(runs: tuple[tuple[str, torch.dtype], ...]) -> dict[tuple[str, torch.dtype, str], torch.Tensor]:
    """The same 25 steps (2,000 particles, 40 directions) on each (device, dtype), with both particle CDFs."""
    target = _gaussian_target(2000, seed=0, dtype=torch.float64)
    start = torch.randn(2000, 4, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    results = {}
    for (device, dtype), cdf in itertools.product(runs, ("sort", "histogram")):
        source = EmpiricalTarget(target.to(device, dtype), n_directions=40, seed=2)
        final = run_flow(start.to(device, dtype), source, 25, particle_cdf=cdf)  # type: ignore[arg-type]
        results[device, dtype, cdf] = final.cpu().float()
    return results


def test_float32_rounding_drift_of_the_flow_is_what_the_cuda_tolerance_assumes() -> None:
    """float32 against float64 on the CPU: the rounding drift the CUDA parity test scales its tolerance by
    (measured: SW 1.7e-4 with the sort CDF, 1.4e-3 with the histogram CDF, whose bin edges amplify rounding)."""
    results = _parity_flows((("cpu", torch.float64), ("cpu", torch.float32)))
    drift = {cdf: float(sliced_wasserstein(results["cpu", torch.float32, cdf], results["cpu", torch.float64, cdf]))
             for cdf in ("sort", "histogram")}
    assert 5e-5 < drift["sort"] < 5e-4 and 5e-4 < drift["histogram"] < 5e-3, drift


@requires_cuda
@pytest.mark.cuda
def test_cuda_matches_cpu() -> None:
    """25 steps on CUDA land where they land on the CPU, up to float32 rounding.

    The tolerance is measured, not guessed: float32 on the CPU against float64 on the CPU shows how far rounding
    alone moves these particles (the test above), and CUDA may differ from the CPU by at most three times that
    (the two float32 runs each sit within the rounding drift of the float64 one). A device bug (other directions,
    another generator) moves them by 0.1 or more.
    """
    results = _parity_flows((("cpu", torch.float64), ("cpu", torch.float32), ("cuda", torch.float32)))
    for cdf in ("sort", "histogram"):
        exact, cpu, cuda = (results[key + (cdf,)] for key in (("cpu", torch.float64), ("cpu", torch.float32), ("cuda", torch.float32)))
        rounding = float(sliced_wasserstein(cpu, exact))
        rounding_median = float((cpu - exact).abs().median())
        assert rounding < 5e-3, (cdf, rounding)  # the tolerance cannot grow past what rounding was measured to be
        assert float(sliced_wasserstein(cpu, cuda)) <= 3 * rounding + 1e-5, (cdf, rounding)
        assert float((cpu - cuda).abs().median()) <= 3 * rounding_median + 1e-5, (cdf, rounding_median)
    directions = random_directions(4, 10, torch.Generator().manual_seed(0), device="cuda")
    torch.testing.assert_close(directions.cpu(), random_directions(4, 10, torch.Generator().manual_seed(0)))


@pytest.mark.parametrize("threaded_work, expected", [(10**9, 1), (1, 2)])
def test_a_small_flow_runs_on_one_thread_and_restores_the_count(threaded_work: int, expected: int,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """Below ``THREADED_WORK`` particles x directions every step sees one thread (threads only wait on each other
    there: ``benchmarks/studies/flow_threads.py``); at or above it, torch's own count; after the flow, the count as it
    was."""
    from synthcity_dpswf.math import flow as flow_module

    monkeypatch.setattr(flow_module, "THREADED_WORK", threaded_work)
    target = EmpiricalTarget(torch.randn(200, 3, generator=torch.Generator().manual_seed(0)), 10)
    seen: list[int] = []
    kept = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        run_flow(torch.randn(50, 3), target, 3, callback=lambda step, x: seen.append(torch.get_num_threads()))
        assert seen == [expected] * 3 and torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(kept)

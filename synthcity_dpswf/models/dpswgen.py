"""DPSWgen: the paper's baseline, a generator network trained on the smoothed sliced loss against the same
per-step releases as DPSWflow-r (Rakotomamonjy & Ralaivola 2021; the paper's Sec. 5.2 and Appendix)."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn
from tqdm.auto import tqdm

from synthcity_dpswf.math import project, quantile_levels
from synthcity_dpswf.math.checks import check_positive, check_positive_int
from synthcity_dpswf.math.sliced import interpolate_sorted

from synthcity_dpswf.models.dpswflow_r import DPSWFlowR
from synthcity_dpswf.models.state import FlowSettings


def generator_network(noise_dim: int, dim: int) -> nn.Sequential:
    """The paper's generator: Linear(noise, 256) ReLU, Linear(256, 512) BatchNorm ReLU, Linear(512, 256) ReLU,
    Linear(256, d)."""
    return nn.Sequential(
        nn.Linear(noise_dim, 256), nn.ReLU(),
        nn.Linear(256, 512), nn.BatchNorm1d(512), nn.ReLU(),
        nn.Linear(512, 256), nn.ReLU(),
        nn.Linear(256, dim),
    )


def smoothed_sliced_loss(
    fake: torch.Tensor, directions: torch.Tensor, target_quantiles: torch.Tensor, smoothing: float, generator: torch.Generator
) -> torch.Tensor:
    r"""The smoothed sliced loss :math:`\frac{1}{L}\sum_j \mathcal{W}_2^2(P^{\theta_j}_\# \mu * \xi_\sigma,
    P^{\theta_j}_\# \nu * \xi_\sigma)` (eq. (dpsw defn)): the sorted smoothed projections of the ``m`` generated
    records against the target quantiles at levels ``i / (m - 1)``; differentiable in ``fake``."""
    projections = project(fake, directions)
    if smoothing > 0:
        noise = torch.randn(projections.shape, generator=generator, dtype=projections.dtype)
        projections = projections + smoothing * noise.to(projections.device)
    levels = quantile_levels(fake.shape[0], fake.dtype, fake.device)
    matched = interpolate_sorted(target_quantiles, levels)
    return ((torch.sort(projections, dim=1).values - matched) ** 2).mean()


class DPSWGen(DPSWFlowR):
    """DPSWgen: the releases of DPSWflow-r (same schedule, same accounting), then a generator network trained
    with Adam on ``smoothed_sliced_loss`` against the flow targets read from them (``settings.n_steps``
    training steps when pooled; one step per release with ``reuse="once"``). With class-conditional releases
    the network also takes the one-hot label, and each step trains one class (uniformly at random, public
    seed) against that class's target. Training and sampling are post-processing.

    Args:
        noise_dim: size of the network's Gaussian input.
        generator_batch: generated records per training step.
        learning_rate: Adam's learning rate (3e-4: the private loss is noisy, and on a 4-d mixture at epsilon = 10
            the larger 1e-3 barely moved the sliced distance where 3e-4 reduced it).
        **kwargs: the ``DPSWFlowR`` arguments (batch_size, passes, release, settings, ...).
    """

    name = "dpswgen"

    conditions_on_target = False  # one network for every row: no group per class of a named target

    def __init__(self, *, noise_dim: int = 16, generator_batch: int = 500, learning_rate: float = 3e-4, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        check_positive_int("noise_dim", noise_dim)
        check_positive_int("generator_batch", generator_batch)
        if generator_batch < 2:
            raise ValueError("generator_batch must be >= 2 (BatchNorm and the quantile grid need two records).")
        check_positive("learning_rate", learning_rate)
        self.noise_dim = noise_dim
        self.generator_batch = generator_batch
        self.learning_rate = learning_rate
        self.network_: nn.Sequential | None = None

    @property
    def _n_conditions(self) -> int:
        """Width of the one-hot label input: C for class-conditional releases, else 0."""
        return self.n_classes_ or 0 if self.labels_ == "conditional" else 0

    def _inputs(self, count: int, class_index: int, generator: torch.Generator) -> torch.Tensor:
        noise = torch.randn(count, self.noise_dim, generator=generator)
        if self._n_conditions:
            one_hot = torch.zeros(count, self._n_conditions)
            one_hot[:, class_index] = 1.0
            noise = torch.cat([noise, one_hot], dim=1)
        return noise.to(self.device)

    def _after_release(self) -> None:
        with torch.random.fork_rng(devices=[]):  # seed the initialisation without touching the caller's RNG
            torch.manual_seed(self.seed)
            network = generator_network(self.noise_dim + self._n_conditions, self.dim).to(self.device)
        optimiser = torch.optim.Adam(network.parameters(), lr=self.learning_rate)
        classes = max(self._n_conditions, 1)
        targets = [self.flow_target(self.settings, self.seed + 3, label) for label in range(classes)]
        noise_generator = torch.Generator().manual_seed(self.seed + 1)
        network.train()
        for step in tqdm(range(self._steps(self.settings)), disable=None if self.progress else True, desc="dpswgen", leave=False):
            label = int(torch.randint(classes, (1,), generator=noise_generator))
            slice_ = targets[label].target_slice(step)
            generated = network(self._inputs(self.generator_batch, label, noise_generator))
            loss = smoothed_sliced_loss(generated, slice_.directions, slice_.quantiles, slice_.smoothing, noise_generator)
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
        self.network_ = network.eval()

    def _sample_class(
        self, count: int, class_index: int, init: torch.Tensor | None, settings: FlowSettings, seed: int
    ) -> torch.Tensor:
        """``count`` records of ``class_index`` from the trained network (post-processing)."""
        if init is not None or settings != self.settings:
            raise ValueError("DPSWGen samples from its trained network: init and settings overrides do not apply.")
        if self.network_ is None:
            raise RuntimeError("DPSWGen is not fitted; call fit(records, epsilon, delta) first.")
        with torch.no_grad():
            return self.network_(self._inputs(count, class_index, torch.Generator().manual_seed(seed + 1)))

    def _sample_classes(
        self, sizes: torch.Tensor, init: torch.Tensor | None, settings: FlowSettings, seed: int
    ) -> torch.Tensor:
        """``sizes[c]`` records of each class c, class after class, from the conditional network."""
        parts = [self._sample_class(int(size), label, init, settings, seed + 10 * label)
                 for label, size in enumerate(sizes.tolist()) if size > 0]
        return torch.cat(parts) if parts else torch.empty(0, self.dim, device=self.device)

    def state_dict(self) -> dict[str, Any]:
        if self.network_ is None:
            raise RuntimeError("DPSWGen is not fitted; call fit(records, epsilon, delta) first.")
        return {**super().state_dict(), "network": self.network_.state_dict()}

    def _load_extra(self, state: dict[str, Any]) -> None:
        network = generator_network(self.noise_dim + self._n_conditions, self.dim)
        network.load_state_dict(state["network"])
        self.network_ = network.to(self.device).eval()

    def get_parameters(self) -> dict[str, Any]:
        return {
            **super().get_parameters(), "noise_dim": self.noise_dim, "generator_batch": self.generator_batch,
            "learning_rate": self.learning_rate,
        }

r"""DP-SGD: a network trained on the private records by releases of noisy clipped gradient sums (privacy.md, "A
private image codec trained by DP-SGD"; Abadi et al. 2016).

Step k draws a batch :math:`B_k` from the n private records (each record with probability q,
``mechanisms.base.poisson_batch``, under either adjacency, n public under replace-one; or, under replace-one without a
sample rate, exactly b of the public n without replacement, ``mechanisms.base.sample_batch``), computes each record's gradient :math:`g_i` of its own loss at the current
parameters, clips it to norm C, :math:`\bar g_i = g_i \min(1, C / \|g_i\|)`, and releases

.. math:: G_k = \sum_{i \in B_k} \bar g_i + \mathcal{N}(0, \sigma^2 I), \qquad \sigma = z \Delta, \quad
          \Delta_{RO} = 2C, \quad \Delta_{AR} = C,

the exact L2 sensitivities of the clipped sum on one batch (a replaced record moves it by :math:`\bar g - \bar g'`,
of norm at most 2C, attained by opposite gradients; an added one by :math:`\bar g`, at most C). The parameters then
take an Adam step on :math:`G_k / b` (b the public nominal batch size): post-processing of the releases. The K
releases are the history entry ``gaussian.SampledGaussian(z, q, K)``; under replace-one on Poisson batches its
antipodal pair has radius ``CLIPPED_GRADIENT_RADIUS`` = C / Delta_RO = 1/2 (privacy.md, "A private image codec trained
by DP-SGD": every clipped gradient, lifted to norm exactly C in one more coordinate, is a contribution of norm C).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import torch
from torch import nn
from torch.func import grad, vmap

from synthcity_dpswf.math.checks import check_positive, check_positive_int
from synthcity_dpswf.privacy.gaussian import SampledGaussian
from synthcity_dpswf.privacy.neighbouring import Adjacency
from synthcity_dpswf.privacy.mechanisms.base import gaussian_noise, poisson_batch, sample_batch

CLIPPED_GRADIENT_RADIUS = 0.5
"""C / Delta_RO of a clipped gradient sum: the antipodal pair's radius in the multiplier's units for DP-SGD on Poisson
batches under replace-one (``accountant.REPLACE_ONE_PLD``)."""

RecordLoss = Callable[[nn.Module, dict[str, torch.Tensor], torch.Tensor], torch.Tensor]
"""The loss of one record: ``(module, parameters, record) -> scalar``, with the parameters passed to
``torch.func.functional_call``."""


def clipped_sum_sensitivity(clip: float, neighbouring: Adjacency | str) -> float:
    """The exact L2 sensitivity of a sum of gradients clipped to norm ``clip``: 2C under replace-one, C under
    add/remove (module docstring; ``Adjacency.norm_sensitivity``)."""
    check_positive("clip", clip)
    return Adjacency.of(neighbouring).norm_sensitivity * clip


def clip_rows(gradients: torch.Tensor, clip: float) -> torch.Tensor:
    r"""Each row :math:`g` of ``gradients`` ``(b, P)`` as :math:`g \min(1, C' / \|g\|)`, :math:`C' = C (1 - 10^{-12})`
    in float64, so that rounding leaves every row within C; a row with a non-finite entry becomes 0 (a map of one
    record's gradient alone: the sensitivity holds whatever the input)."""
    wide = gradients.to(torch.float64)
    finite = torch.isfinite(wide).all(dim=1, keepdim=True)
    wide = torch.where(finite, wide, torch.zeros_like(wide))
    bound = clip * (1 - 1e-12)
    return wide * (bound / wide.norm(dim=1, keepdim=True)).clamp(max=1.0)  # a zero row: inf, clamped to 1


def noisy_clipped_sum(gradients: torch.Tensor, clip: float, noise_std: float, secret: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    r"""One release: :math:`\sum_i \bar g_i + \mathcal{N}(0, \sigma^2 I)` of the per-record gradients ``(b, P)``,
    with the exact clipped sum (for audits; never published). Returns ``(release, exact)`` in float64."""
    exact = clip_rows(gradients, clip).sum(dim=0)
    return exact + gaussian_noise(tuple(exact.shape), noise_std, secret, exact), exact


@dataclass(frozen=True)
class DPSGDSchedule:
    """A DP-SGD run's public numbers: the adjacency, the batches (Poisson at ``sample_rate``, under add/remove with n
    never read, under replace-one with the public ``n_records``; or, under replace-one without a ``sample_rate``,
    exactly ``batch_size`` of the public ``n_records``), the nominal ``batch_size`` b the sums are divided by, the
    number of ``steps``, the clipping norm and the noise multiplier z (0: no noise, not private)."""

    neighbouring: Adjacency
    steps: int
    clip: float
    noise_multiplier: float
    batch_size: int
    n_records: int | None = None
    sample_rate: float | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "neighbouring", Adjacency.of(self.neighbouring))
        check_positive_int("steps", self.steps)
        check_positive("clip", self.clip)
        check_positive_int("batch_size", self.batch_size)
        if self.noise_multiplier < 0:
            raise ValueError(f"noise_multiplier must be >= 0, got {self.noise_multiplier!r}.")
        if self.neighbouring.n_is_public and (self.n_records is None or self.batch_size > self.n_records):
            raise ValueError(f"replace-one batches take batch_size <= n_records, got {self.batch_size} of {self.n_records}.")
        if not self.neighbouring.n_is_public and self.sample_rate is None:
            raise ValueError("add/remove batches are Poisson: give sample_rate in (0, 1].")
        if not self.neighbouring.n_is_public and self.n_records is not None:
            raise ValueError("n is private under add/remove: give no n_records.")
        if self.sample_rate is not None and not 0 < self.sample_rate <= 1:
            raise ValueError(f"sample_rate must lie in (0, 1], got {self.sample_rate!r}.")

    @property
    def poisson(self) -> bool:
        """Whether every record is drawn independently (a ``sample_rate`` given)."""
        return self.sample_rate is not None

    @property
    def rate(self) -> float:
        """q: the Poisson rate, or b / n for fixed-size batches under replace-one."""
        return float(self.sample_rate) if self.poisson else self.batch_size / self.n_records  # type: ignore[arg-type, operator]

    @property
    def noise_std(self) -> float:
        """sigma = z Delta."""
        return self.noise_multiplier * clipped_sum_sensitivity(self.clip, self.neighbouring)

    def history(self) -> SampledGaussian:
        """The releases as one entry of an accountant's history."""
        if not self.neighbouring.n_is_public:
            return SampledGaussian(self.noise_multiplier, self.rate, self.steps)
        if self.poisson:
            return SampledGaussian(self.noise_multiplier, self.rate, self.steps, self.n_records,
                                   contribution_norm=CLIPPED_GRADIENT_RADIUS)
        return SampledGaussian(self.noise_multiplier, self.rate, self.steps, self.n_records, self.batch_size)

    def batches(self, n_records: int, secret: torch.Generator) -> Iterator[torch.Tensor]:
        """The ``steps`` batches' indices, drawn from ``secret``."""
        if self.neighbouring.n_is_public and n_records != self.n_records:
            raise ValueError(f"the schedule was planned for n = {self.n_records} records, got {n_records}.")
        for _ in range(self.steps):
            if self.poisson:
                yield poisson_batch(n_records, self.rate, secret)
            else:
                yield sample_batch(n_records, self.batch_size, secret)


def per_record_gradients(module: nn.Module, loss: RecordLoss, records: torch.Tensor) -> torch.Tensor:
    """The gradient of each record's own loss, flattened: ``(b, P)`` (``torch.func``: no record's gradient mixes
    another's; the module must hold no batch statistic, e.g. no BatchNorm)."""
    parameters = {name: value.detach() for name, value in module.named_parameters()}
    gradients = vmap(grad(lambda p, record: loss(module, p, record)), in_dims=(None, 0))(parameters, records)
    return torch.cat([gradients[name].reshape(records.shape[0], -1) for name in parameters], dim=1)


def mixes_records(layer: nn.Module) -> bool:
    """Whether ``layer`` reads several records at once in training: a batch norm of any kind (BatchNorm1d/2d/3d, their
    lazy forms, SyncBatchNorm: statistics over the batch), or any normalisation that tracks running statistics
    (InstanceNorm with ``track_running_stats``: buffers updated from the records, outside the releases)."""
    if isinstance(layer, nn.modules.batchnorm._BatchNorm):
        return True
    return isinstance(layer, nn.modules.batchnorm._NormBase) and bool(layer.track_running_stats)


StepObserver = Callable[[int, torch.Tensor, torch.Tensor, torch.Tensor], None]
"""Called after each release with (step, batch indices, per-record gradients, release): how audits read a run."""


def train_dpsgd(
    module: nn.Module,
    loss: RecordLoss,
    records: torch.Tensor,
    schedule: DPSGDSchedule,
    secret: torch.Generator,
    learning_rate: float = 1e-3,
    progress: Callable[[int], None] | None = None,
    observe: StepObserver | None = None,
) -> float:
    r"""Train ``module`` on the private ``records`` by ``schedule``'s releases (module docstring), in place; returns the
    wall seconds. ``secret`` (``mechanisms.base.secret_generator``) draws the batches and the noise. Nothing but the
    releases reaches the parameters: each update is Adam on :math:`G_k / b`."""
    check_positive("learning_rate", learning_rate)
    mixing = [type(layer).__name__ for layer in module.modules() if mixes_records(layer)]
    if mixing:
        raise ValueError(f"{', '.join(sorted(set(mixing)))} mixes the records of a batch or keeps running statistics "
                         "of them, which no release pays for: per-record gradients need a module without it (use "
                         "GroupNorm, LayerNorm, or InstanceNorm without track_running_stats).")
    started = time.perf_counter()
    optimiser = torch.optim.Adam(module.parameters(), lr=learning_rate)
    shapes = [(parameter, parameter.numel()) for parameter in module.parameters()]
    total = sum(size for _, size in shapes)
    for step, batch in enumerate(schedule.batches(records.shape[0], secret)):
        if len(batch) > 0:
            gradients = per_record_gradients(module, loss, records[batch])
        else:  # an empty Poisson batch releases noise alone
            gradients = records.new_zeros((0, total))
        release, _ = noisy_clipped_sum(gradients, schedule.clip, schedule.noise_std, secret)
        if observe is not None:
            observe(step, batch, gradients, release)
        update = (release / schedule.batch_size).to(torch.float32)
        offset = 0
        for parameter, size in shapes:
            parameter.grad = update[offset:offset + size].reshape(parameter.shape).clone()
            offset += size
        optimiser.step()
        if progress is not None:
            progress(step + 1)
    return time.perf_counter() - started


def steps_for(epochs: float, rate: float) -> int:
    """Releases for ``epochs`` expected passes over the records at batch rate q: ``ceil(epochs / q)``."""
    check_positive("epochs", epochs)
    return max(1, math.ceil(epochs / rate))

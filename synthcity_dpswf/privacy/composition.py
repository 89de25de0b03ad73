r"""Mechanisms released before a schedule on the same records, and how they join its accounting: one-shot Gaussian
mechanisms composed exactly in Gaussian DP (privacy.md, "A private image codec"), and sampled Gaussian schedules
(``SampledGaussian``, a DP-SGD training) as entries of the accountant's history (``Prior``; privacy.md, "A private
image codec trained by DP-SGD").

A Gaussian mechanism whose noise is :math:`z` times its exact L2 sensitivity is :math:`\mu`-GDP with
:math:`\mu = 1/z`; mechanisms composed adaptively, each with its :math:`\mu_i` fixed in advance, are
:math:`\sqrt{\sum_i \mu_i^2}`-GDP (Dong, Roth & Su 2022, Corollary 3.3), and :math:`\mu`-GDP is
:math:`(\varepsilon, \delta)`-DP exactly where the analytic Gaussian mechanism at :math:`z = 1/\mu` is. So a budget
:math:`(\varepsilon, \delta)` split as :math:`\mu_1^2 = s\mu^2`, :math:`\mu_2^2 = (1 - s)\mu^2` costs nothing: the two
releases together are :math:`(\varepsilon, \delta)`-DP, where basic composition of :math:`(s\varepsilon, s\delta)` and
:math:`((1 - s)\varepsilon, (1 - s)\delta)` would add noise to both. ``privacy.budget.Budget.share`` gives the first
release's multiplier :math:`z / \sqrt{s}`; the releases after it are calibrated with it as their prior.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Union

import dp_accounting


def composed_multiplier(*multipliers: float) -> float:
    r"""The multiplier of the composition: :math:`z = 1 / \sqrt{\sum_i 1 / z_i^2}`."""
    if not multipliers or any(not z > 0 for z in multipliers):
        raise ValueError(f"multipliers must be positive, got {multipliers!r}.")
    return 1.0 / math.sqrt(sum(1.0 / z**2 for z in multipliers))


def remaining_multiplier(total: float, prior: float) -> float:
    r"""The multiplier z of a Gaussian mechanism that, composed with one at ``prior`` :math:`z_0`, gives ``total``:
    :math:`z^{-2} = z_{total}^{-2} - z_0^{-2}` (``composed_multiplier``'s inverse); refused when the prior alone
    spends the budget."""
    left = 1.0 / total**2 - 1.0 / prior**2
    if left <= 0:
        raise ValueError(f"the prior release (z = {prior:.4g}) spends the whole budget (z = {total:.4g}); give it a "
                         "smaller share.")
    return 1.0 / math.sqrt(left)


@dataclass(frozen=True)
class SampledGaussian:
    r"""One entry of an accountant's history: ``steps`` Gaussian mechanisms at multiplier z (noise z times the exact
    sensitivity of each), each on a batch drawn afresh from the records: exactly ``batch_size`` of the public
    ``n_records`` without replacement (replace-one), or every record with probability ``sample_rate`` (Poisson,
    add/remove: ``n_records`` and ``batch_size`` are ``None``). A DP-SGD training is one (privacy.md, "A private image
    codec trained by DP-SGD")."""

    noise_multiplier: float
    sample_rate: float
    steps: int
    n_records: int | None = None
    batch_size: int | None = None

    def __post_init__(self) -> None:
        if not self.noise_multiplier > 0 or not 0 < self.sample_rate <= 1 or self.steps < 1:
            raise ValueError(f"a sampled Gaussian needs z > 0, 0 < q <= 1 and steps >= 1, got {self!r}.")
        if (self.n_records is None) != (self.batch_size is None):
            raise ValueError("give both n_records and batch_size (fixed-size batches) or neither (Poisson sampling).")
        if self.n_records is not None and abs(self.sample_rate - self.batch_size / self.n_records) > 1e-12:  # type: ignore[operator]
            raise ValueError(f"fixed-size batches have q = b / n = {self.batch_size}/{self.n_records}, got {self.sample_rate}.")

    @property
    def poisson(self) -> bool:
        return self.n_records is None

    def opacus_entry(self) -> tuple[float, float, int]:
        """The entry of Opacus' ``history``: (z, q, steps)."""
        return (self.noise_multiplier, self.sample_rate, self.steps)

    def dp_event(self) -> "dp_accounting.DpEvent":
        """The entry as dp-accounting's event: the Gaussian, sampled without replacement (fixed-size batches) or by
        Poisson, composed ``steps`` times."""
        event: dp_accounting.DpEvent = dp_accounting.GaussianDpEvent(self.noise_multiplier)
        if self.poisson and self.sample_rate < 1:
            event = dp_accounting.PoissonSampledDpEvent(self.sample_rate, event)
        elif not self.poisson and self.batch_size < self.n_records:  # type: ignore[operator]
            event = dp_accounting.SampledWithoutReplacementDpEvent(self.n_records, self.batch_size, event)
        return dp_accounting.SelfComposedDpEvent(event, self.steps)


@dataclass(frozen=True)
class Prior:
    r"""What was released of the same records before a schedule, as entries of its accountant's history: one-shot
    Gaussian mechanisms of all records composed into one multiplier ``gaussian`` (exact in Gaussian DP; ``None``: none)
    and sampled schedules (``schedules``: a DP-SGD codec's training). A bare float prior is ``Prior(gaussian=z)``."""

    gaussian: float | None = None
    schedules: tuple[SampledGaussian, ...] = ()

    @classmethod
    def of(cls, prior: "float | Prior | None") -> "Prior | None":
        """``prior`` as a ``Prior`` (a float: one one-shot Gaussian mechanism at that multiplier)."""
        if prior is None or isinstance(prior, Prior):
            return prior
        if not prior > 0:
            raise ValueError(f"a prior multiplier must be positive, got {prior!r}.")
        return cls(float(prior))

    @property
    def one_shot(self) -> bool:
        """Whether every entry is a one-shot Gaussian mechanism (then Gaussian DP composes it exactly)."""
        return not self.schedules

    def opacus_history(self) -> list[tuple[float, float, int]]:
        """The entries of Opacus' ``history``: each schedule's (z, q, steps), and (z_0, 1, 1) for the one-shot part."""
        return [schedule.opacus_entry() for schedule in self.schedules] + (
            [] if self.gaussian is None else [(self.gaussian, 1.0, 1)])

    def dp_events(self) -> list["dp_accounting.DpEvent"]:
        """The entries as dp-accounting's events."""
        return [schedule.dp_event() for schedule in self.schedules] + (
            [] if self.gaussian is None else [dp_accounting.GaussianDpEvent(self.gaussian)])

    def without_schedules(self) -> "Prior | None":
        """The one-shot part alone (a lower bracket for calibrations: removing entries can only lower epsilon)."""
        return None if self.gaussian is None else Prior(self.gaussian)


PriorLike = Union[float, Prior, None]
"""What accountants and budgets take as a prior: a one-shot multiplier, a ``Prior``, or ``None``."""

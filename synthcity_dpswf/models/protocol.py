"""``Generator``: what every private generator offers the pipelines and benchmarks, ours and the baselines alike.

A generator is fitted once on private records at a privacy target and then sampled as often as wanted; sampling
is post-processing of what the fit released. ``SlicedGenerator`` (DPSWflow, DPSWflow-r, DPSWgen) satisfies it, and
so does every baseline under ``benchmarks/baselines/``, so that a benchmark runs each the same way and never asks
which one it holds.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import torch

from synthcity_dpswf.privacy import PrivacyReport


@runtime_checkable
class Generator(Protocol):
    """A private generator of (record, label) pairs.

    ``fit(records, epsilon, delta, labels=..., n_classes=...)`` trains on ``(n, d)`` records with labels in
    ``0..n_classes-1`` at (epsilon, delta) and returns the fitted generator; ``sample_labelled(count, seed=...)``
    draws ``count`` synthetic (record, label) pairs; ``privacy_report`` states what the fit released and its
    epsilon. Check ``isinstance(model, Generator)`` on fitted generators: an unfitted one has no report yet, and
    reading it raises ``RuntimeError`` (which Python 3.11's ``isinstance`` lets through).
    """

    def fit(
        self, records: torch.Tensor, epsilon: float, delta: float, *, labels: torch.Tensor | None = None,
        n_classes: int | None = None,
    ) -> "Generator":
        """Train on the private ``records`` (and ``labels``) at (epsilon, delta)."""

    def sample_labelled(self, count: int, *, seed: int | None = None,
                        labels: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """``count`` synthetic (record, label) pairs (post-processing); ``labels``: those of the pairs, in order."""

    @property
    def privacy_report(self) -> PrivacyReport:
        """The privacy report of the fit."""

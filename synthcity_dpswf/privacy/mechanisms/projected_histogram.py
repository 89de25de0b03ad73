r"""The projected-histogram release: counts of the records' projections on L public directions, G fixed bins.

Public: the directions :math:`\theta_1..\theta_L` (public seed), the bins (``G`` equal bins over
:math:`[-r, r]`, ``math.histograms.bin_edges``), the class list. Released, per class c (one class when the
records carry no label):

.. math:: C[c, l, g] = \#\{i \in B : c_i = c,\ \langle y_i, \theta_l\rangle \in \text{bin } g\}
          + \mathcal{N}(0, s^2), \qquad \Delta = \sqrt{2L}.

Sensitivity (privacy.md, "Aggregate releases"): the statistic is a sum :math:`\sum_{i\in B} f(y_i, c_i)` where
:math:`f` puts exactly one 1 per direction (in the record's class and bin). Replacing one record changes the sum
by :math:`f(y, c) - f(y', c')`: per direction at most one -1 and one +1, so :math:`\|\cdot\|_2 \le \sqrt{2L}`,
with equality whenever the two records differ in class, or fall in different bins on every direction. Adding or
removing one record changes it by :math:`\pm f(y, c)`, of norm exactly :math:`\sqrt{L}` (add/remove).
The noise is fixed in counts while the counts grow with the batch: the released CDFs sharpen with n.
"""

from __future__ import annotations

import math

import torch

from synthcity_dpswf.math import project
from synthcity_dpswf.math.checks import check_positive_int
from synthcity_dpswf.math.histograms import bin_index
from synthcity_dpswf.privacy.mechanisms.base import ReleaseMechanism
from synthcity_dpswf.privacy.neighbouring import Adjacency


def histogram_sensitivity(n_release_directions: int) -> float:
    r"""Replace-one sensitivity of L directions' histograms (per class or not): :math:`\Delta = \sqrt{2L}`."""
    check_positive_int("n_release_directions", n_release_directions)
    return math.sqrt(2.0 * n_release_directions)


class ProjectedHistogramRelease(ReleaseMechanism):
    """Noisy histograms of the projections of the batch, one ``(L, G)`` count matrix per class: ``(C, L, G)``."""

    name = "projected_histogram"
    stored_as = "noisy class x direction x bin counts (with their directions)"
    uses_directions = True
    class_conditional = True
    # Three records can have pairwise distinct contributions at distance sqrt(2L) (an equilateral triangle),
    # for which the Poisson pair's per-order RDP is exceeded (privacy.md, "Per-step releases").
    opacus_pair_proven = False
    sums_contributions = True
    replace_one_contribution_norm = 1 / math.sqrt(2.0)  # every record: one count per direction, C = sqrt(L) = Delta / sqrt(2)

    def statistic(
        self, batch: torch.Tensor, directions: torch.Tensor | None, labels: torch.Tensor | None = None, n_classes: int = 1
    ) -> torch.Tensor:
        assert directions is not None
        check_positive_int("n_classes", n_classes)
        n_directions, n_bins = directions.shape[1], self.options.n_bins
        if labels is None:
            labels = torch.zeros(batch.shape[0], dtype=torch.long)
        if labels.shape != (batch.shape[0],) or bool((labels < 0).any()) or bool((labels >= n_classes).any()):
            raise ValueError(f"labels must be one integer in 0..{n_classes - 1} per record; check n_classes.")
        bins = bin_index(project(batch, directions.to(batch)), n_bins, self.options.radius)  # (L, b)
        # One flat cell per (class, direction, bin): each record adds exactly one 1 per direction.
        cells = (labels.long().to(bins.device).unsqueeze(0) * n_directions + torch.arange(n_directions).unsqueeze(1)) * n_bins + bins
        counts = torch.bincount(cells.reshape(-1), minlength=n_classes * n_directions * n_bins)
        return counts.reshape(n_classes, n_directions, n_bins).to(torch.float64)  # exact integers up to 2^53

    def sensitivity(self, directions: torch.Tensor | None) -> float:
        assert directions is not None
        return histogram_sensitivity(directions.shape[1])

    def add_remove_sensitivity(self, directions: torch.Tensor | None) -> float:
        r"""One record adds exactly one count per direction: :math:`\Delta_{AR} = \sqrt{L}`."""
        assert directions is not None
        return histogram_sensitivity(directions.shape[1]) / math.sqrt(2.0)

    def counted_records(self, values: torch.Tensor) -> torch.Tensor:
        """Estimated records counted in released payloads ``(..., C, L, G)``: every class's row sums averaged over the
        L directions, summed over classes (post-processing)."""
        return values.to(torch.float64).sum(dim=-1).mean(dim=-1).sum(dim=-1)

    def describe(self, neighbouring: Adjacency | str = Adjacency.REPLACE_ONE) -> str:
        return (
            f"projected-histogram release: per class and for each of L = {self.options.n_release_directions} directions, "
            f"the counts of the projections in G = {self.options.n_bins} bins over [-r, r] + N(0, s^2) per count, "
            f"Delta = {'sqrt(2L)' if Adjacency.of(neighbouring).n_is_public else 'sqrt(L)'}"
        )

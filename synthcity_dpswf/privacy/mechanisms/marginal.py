r"""The marginal release: noisy one-way tables of every column and two-way tables of chosen column pairs.

Public (``MarginalLayout``): the number of fine levels :math:`K_j` of every column (categories, integers or bins,
from the table's domain), the coarse levels :math:`\bar K_j` of the two-way tables (runs of fine levels,
``math.marginals.coarse_index``), and the list of pairs (all of them, or a subset drawn from a public seed:
the choice never looks at the data). Released, for a batch B of records given as fine level codes
:math:`a_{ij}`:

.. math:: M_j[a] = \#\{i \in B : a_{ij} = a\} + \mathcal{N}(0, s^2), \qquad
          M_{jk}[\bar a, \bar b] = \#\{i \in B : \bar a_{ij} = \bar a,\ \bar a_{ik} = \bar b\} + \mathcal{N}(0, s^2),

all tables in one vector, :math:`\Delta = \sqrt{2m}` for :math:`m = d + P` tables (privacy.md, "Aggregate
releases: marginals"). Every record adds exactly one 1 to each table; replacing it moves, in each table, at most
one unit out of one cell and into another: :math:`\|S(B) - S(B')\|_2^2 \le 2m`, with equality when the two
records differ in every column's coarse level. Adding or removing a record moves one count in each table:
:math:`\sqrt{m}` (add/remove).
"""

from __future__ import annotations

import math

import torch

from synthcity_dpswf.privacy.mechanisms.base import ReleaseMechanism
from synthcity_dpswf.privacy.mechanisms.layout import MarginalLayout
from synthcity_dpswf.privacy.neighbouring import Adjacency

def marginal_sensitivity(layout: MarginalLayout) -> float:
    r"""Replace-one sensitivity of all the layout's tables: :math:`\Delta = \sqrt{2m}`, m tables."""
    return math.sqrt(2.0 * layout.n_tables)


class MarginalRelease(ReleaseMechanism):
    """Noisy one-way (fine) and two-way (coarse) counts of a batch of level-coded records, one vector."""

    name = "marginal"
    stored_as = "noisy one-way and two-way counts"
    # Counts, like projected histograms: three records can form an equilateral triangle of contributions, which
    # the Poisson pair does not cover (privacy.md, "Per-step releases"); per-step marginals use the replace-one RDP.
    opacus_pair_proven = False
    sums_contributions = True
    takes_level_codes = True

    @property
    def layout(self) -> MarginalLayout:
        if self.options.layout is None:
            raise ValueError("the marginal release needs a MarginalLayout (the public levels and pairs); pass one.")
        return self.options.layout

    def prepare(self, records: torch.Tensor, boundary: str) -> torch.Tensor:
        """Check that records are level codes inside the layout (no clipping: a code outside is a caller's bug)."""
        layout = self.layout
        if records.ndim != 2 or records.shape[1] != layout.n_columns:
            raise ValueError(f"records must be (n, {layout.n_columns}) level codes, got {tuple(records.shape)}.")
        levels = torch.tensor(layout.levels, dtype=records.dtype)
        if bool((records != records.round()).any()) or bool((records < 0).any()) or bool((records >= levels).any()):
            raise ValueError("marginal records must be integer level codes 0..K_j-1 per column; encode the table first.")
        return records

    def statistic(
        self, batch: torch.Tensor, directions: torch.Tensor | None, labels: torch.Tensor | None = None, n_classes: int = 1
    ) -> torch.Tensor:
        layout = self.layout
        codes = batch.long()
        tables = [torch.bincount(codes[:, j], minlength=k) for j, k in enumerate(layout.levels)]
        coarse = torch.stack([layout.coarse(codes[:, j], j) for j in range(layout.n_columns)], dim=1)
        for j, k in layout.pairs:
            cells = coarse[:, j] * layout.coarse_levels[k] + coarse[:, k]
            tables.append(torch.bincount(cells, minlength=layout.coarse_levels[j] * layout.coarse_levels[k]))
        return torch.cat(tables).to(torch.float64)  # exact integers up to 2^53

    def sensitivity(self, directions: torch.Tensor | None) -> float:
        return marginal_sensitivity(self.layout)

    def add_remove_sensitivity(self, directions: torch.Tensor | None) -> float:
        r"""One record adds exactly one count to each of the m tables: :math:`\Delta_{AR} = \sqrt{m}`."""
        return math.sqrt(float(self.layout.n_tables))

    def counted_records(self, values: torch.Tensor) -> torch.Tensor:
        """Estimated records counted in released payloads ``(..., cells)``: the mean of the one-way tables' totals
        (post-processing)."""
        one_way, _ = self.layout.split(values.to(torch.float64))
        return torch.stack([table.sum(dim=-1) for table in one_way]).mean(dim=0)

    def describe(self, neighbouring: Adjacency | str = Adjacency.REPLACE_ONE) -> str:
        layout = self.layout
        sensitivity = "sqrt(2m)" if Adjacency.of(neighbouring).n_is_public else "sqrt(m)"
        return (
            f"marginal release: the {layout.n_columns} one-way tables (fine levels) and {len(layout.pairs)} two-way "
            f"tables (coarse levels) of the level-coded records + N(0, s^2) per count, Delta = {sensitivity}, "
            f"m = {layout.n_tables}"
        )

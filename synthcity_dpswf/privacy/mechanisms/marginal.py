r"""The marginal release: noisy one-way tables of every column and two-way tables of chosen column pairs.

Public (``MarginalLayout``): the number of fine levels :math:`K_j` of every column (categories, integers or bins,
from the table's domain), the coarse levels :math:`\bar K_j` of the two-way tables (runs of fine levels,
``math.histograms.coarse_index``), and the list of pairs (all of them, or a subset drawn from a public seed:
the choice never looks at the data). Released, for a batch B of records given as fine level codes
:math:`a_{ij}`:

.. math:: M_j[a] = \#\{i \in B : a_{ij} = a\} + \mathcal{N}(0, s^2), \qquad
          M_{jk}[\bar a, \bar b] = \#\{i \in B : \bar a_{ij} = \bar a,\ \bar a_{ik} = \bar b\} + \mathcal{N}(0, s^2),

all tables in one vector, :math:`\Delta = \sqrt{2m}` for :math:`m = d + P` tables (privacy.md, "Aggregate
releases: marginals"). Every record adds exactly one 1 to each table; replacing it moves, in each table, at most
one unit out of one cell and into another: :math:`\|S(B) - S(B')\|_2^2 \le 2m`, with equality when the two
records differ in every column's coarse level. Adding or removing a record moves one count in each table:
:math:`\sqrt{m}` (add/remove).

With a condition column t (a named target, ``MarginalLayout.condition``), the tables are counted per class c of t,
:math:`S = (S(B_0), \dots, S(B_{C-1}))` with :math:`B_c` the records of class c, and no pair contains t. A record
still adds one 1 to m tables, those of its class's block: replacing it moves m units out of its block and m into the
other record's (the same block, or another), so :math:`\Delta = \sqrt{2m}` and :math:`\sqrt{m}` unchanged
(privacy.md, "Tables conditioned on a named target").
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
        classes = layout.class_of(codes)
        return torch.cat([block_statistic(layout, codes[classes == label]) for label in range(layout.classes)])

    def sensitivity(self, directions: torch.Tensor | None) -> float:
        return marginal_sensitivity(self.layout)

    def add_remove_sensitivity(self, directions: torch.Tensor | None) -> float:
        r"""One record adds exactly one count to each of the m tables: :math:`\Delta_{AR} = \sqrt{m}`."""
        return math.sqrt(float(self.layout.n_tables))

    def counted_records(self, values: torch.Tensor) -> torch.Tensor:
        """Estimated records counted in released payloads ``(..., cells)``: the mean of the one-way tables' totals,
        summed over the classes' blocks (post-processing)."""
        one_way, _ = self.layout.split(self.layout.blocks(values.to(torch.float64)).sum(dim=-2))
        return torch.stack([table.sum(dim=-1) for table in one_way]).mean(dim=0)

    def describe(self, neighbouring: Adjacency | str = Adjacency.REPLACE_ONE) -> str:
        layout = self.layout
        sensitivity = "sqrt(2m)" if Adjacency.of(neighbouring).n_is_public else "sqrt(m)"
        per_class = "" if layout.condition is None else (
            f", each counted per class of the named target (column {layout.condition}, {layout.classes} classes)")
        return (
            f"marginal release: the {layout.n_columns} one-way tables (fine levels) and {len(layout.pairs)} two-way "
            f"tables (coarse levels) of the level-coded records{per_class} + N(0, s^2) per count, Delta = "
            f"{sensitivity}, m = {layout.n_tables}"
        )


def block_statistic(layout: MarginalLayout, codes: torch.Tensor) -> torch.Tensor:
    """One block of the release: the exact one-way (fine) and two-way (coarse) tables of ``codes`` ``(n, d)``, in the
    layout's order, float64 (exact integers up to 2^53)."""
    tables = [torch.bincount(codes[:, j], minlength=k) for j, k in enumerate(layout.levels)]
    coarse = torch.stack([layout.coarse(codes[:, j], j) for j in range(layout.n_columns)], dim=1)
    for j, k in layout.pairs:
        cells = coarse[:, j] * layout.coarse_levels[k] + coarse[:, k]
        tables.append(torch.bincount(cells, minlength=layout.coarse_levels[j] * layout.coarse_levels[k]))
    return torch.cat(tables).to(torch.float64)

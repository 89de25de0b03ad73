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

import itertools
import math
from dataclasses import dataclass

import torch

from synthcity_dpswf.math.checks import check_positive_int
from synthcity_dpswf.math.marginals import coarse_index
from synthcity_dpswf.privacy.mechanisms.base import ReleaseMechanism
from synthcity_dpswf.privacy.neighbouring import Neighbouring

Pair = tuple[int, int]


@dataclass(frozen=True)
class MarginalLayout:
    """Which tables a marginal release holds, all public: fine and coarse levels per column, and the pairs.

    Attributes:
        levels: :math:`K_j`, fine levels of each column (one-way tables).
        coarse_levels: :math:`\\bar K_j \\le K_j`, levels of each column in the two-way tables.
        pairs: the column pairs ``(j, k)``, ``j < k``, of the two-way tables.
    """

    levels: tuple[int, ...]
    coarse_levels: tuple[int, ...]
    pairs: tuple[Pair, ...]
    missing: tuple[bool, ...] = ()
    """Per column (empty: none): whether its last fine level holds the missing entries, alone in its last coarse
    level (``math.marginals.coarse_index``)."""

    def __post_init__(self) -> None:
        if not self.levels or len(self.levels) != len(self.coarse_levels):
            raise ValueError("levels and coarse_levels need one entry per column (and at least one column).")
        if self.missing and len(self.missing) != len(self.levels):
            raise ValueError("missing needs one entry per column (or none).")
        for column, (fine, coarse) in enumerate(zip(self.levels, self.coarse_levels)):
            check_positive_int(f"levels[{column}]", fine)
            check_positive_int(f"coarse_levels[{column}]", coarse)
            if coarse > fine:
                raise ValueError(f"column {column}: coarse_levels ({coarse}) exceeds levels ({fine}).")
        for pair in self.pairs:
            if len(pair) != 2 or not 0 <= pair[0] < pair[1] < len(self.levels):
                raise ValueError(f"pair {pair!r} must be two column indices j < k below {len(self.levels)}.")
        if len(set(self.pairs)) != len(self.pairs):
            raise ValueError("pairs must not repeat (a repeated table would double its weight in the sensitivity).")

    def has_missing(self, column: int) -> bool:
        """Whether ``column`` has a missing level."""
        return bool(self.missing) and self.missing[column]

    def coarse(self, codes: torch.Tensor, column: int) -> torch.Tensor:
        """The coarse levels of fine level codes of ``column`` (``math.marginals.coarse_index``)."""
        return coarse_index(codes, self.levels[column], self.coarse_levels[column], self.has_missing(column))

    @classmethod
    def build(
        cls,
        levels: tuple[int, ...],
        coarse_bins: int,
        max_pairs: int | None = None,
        seed: int = 0,
        missing: tuple[bool, ...] = (),
    ) -> "MarginalLayout":
        """Coarse levels ``min(K_j, coarse_bins)`` (a column with a missing level: ``min(K_j - 1, coarse_bins)`` for
        its values and one for its missing level); all pairs, or ``max_pairs`` of them chosen uniformly at random from
        the public ``seed`` when there are more (no data is read)."""
        check_positive_int("coarse_bins", coarse_bins)
        pairs = list(itertools.combinations(range(len(levels)), 2))
        if max_pairs is not None and len(pairs) > max_pairs:
            check_positive_int("max_pairs", max_pairs)
            chosen = torch.randperm(len(pairs), generator=torch.Generator().manual_seed(seed))[:max_pairs]
            pairs = sorted(pairs[i] for i in chosen.tolist())
        if missing and len(missing) != len(levels):
            raise ValueError("missing needs one entry per column (or none).")
        flags = tuple(missing) or (False,) * len(levels)
        coarse = tuple(min(k - 1, coarse_bins) + 1 if flag else min(k, coarse_bins) for k, flag in zip(levels, flags))
        return cls(tuple(levels), coarse, tuple(pairs), tuple(missing))

    @property
    def n_columns(self) -> int:
        return len(self.levels)

    @property
    def n_tables(self) -> int:
        """m = d one-way tables + P two-way tables."""
        return self.n_columns + len(self.pairs)

    @property
    def sizes(self) -> list[int]:
        """Cells of each table, one-way tables first, in the order of the released vector."""
        return list(self.levels) + [self.coarse_levels[j] * self.coarse_levels[k] for j, k in self.pairs]

    def split(self, values: torch.Tensor) -> tuple[list[torch.Tensor], dict[Pair, torch.Tensor]]:
        """The released vector ``(..., cells)`` as one-way tables ``(..., K_j)`` and two-way ``(..., K_j, K_k)``."""
        parts = torch.split(values, self.sizes, dim=-1)
        one_way = list(parts[: self.n_columns])
        two_way = {
            (j, k): part.reshape(*part.shape[:-1], self.coarse_levels[j], self.coarse_levels[k])
            for (j, k), part in zip(self.pairs, parts[self.n_columns :])
        }
        return one_way, two_way


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

    def describe(self, neighbouring: Neighbouring = "replace_one") -> str:
        layout = self.layout
        sensitivity = "sqrt(2m)" if neighbouring == "replace_one" else "sqrt(m)"
        return (
            f"marginal release: the {layout.n_columns} one-way tables (fine levels) and {len(layout.pairs)} two-way "
            f"tables (coarse levels) of the level-coded records + N(0, s^2) per count, Delta = {sensitivity}, "
            f"m = {layout.n_tables}"
        )

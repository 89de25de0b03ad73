r"""The marginal release: noisy one-way tables of every column and two-way tables of chosen column pairs, and the
paid selection that chooses the pairs.

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

**The paid pair selection** (``PairSelection``; privacy.md, "Paid pair selection"): which column pairs a table's
marginal release measures, chosen from a marginal release of every candidate pair's table. Stage A releases the
marginal statistic of the candidate layout :math:`L_A` (every pair) over all n records at multiplier :math:`z_A`; the
choice (post-processing) scores each pair by how far its noisy table stands from the product of its noisy margins
(``math.histograms.dependence_score``) and keeps T pairs: a maximum spanning forest by score, then the strongest left;
stage B, the generator's releases, measures those T pairs only, at sensitivity :math:`\sqrt{2(d + T)}` fixed before
stage A. Stage A is spent like the DP domain, as one more Gaussian mechanism in the releases' prior
(``privacy.budget.Budget.spend``), and its values of the chosen tables are combined with stage B's at generation
(``PairSelection.measurement``).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import torch

from synthcity_dpswf.math.histograms import coarsen, dependence_score, to_probabilities
from synthcity_dpswf.privacy.gaussian import analytic_gaussian_epsilon
from synthcity_dpswf.privacy.mechanisms.base import ReleaseMechanism, ReleaseOptions
from synthcity_dpswf.privacy.mechanisms.layout import MarginalLayout, Pair
from synthcity_dpswf.privacy.neighbouring import Adjacency
from synthcity_dpswf.privacy.report import OtherAdjacency


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
    replace_one_contribution_norm = 1 / math.sqrt(2.0)  # every record: one count per table, C = sqrt(m) = Delta / sqrt(2)

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


SELECTION_SHARE = 0.3
r"""The selection's share q of what the budget leaves after the DP domain, :math:`\mu_A^2 = q(\mu^2 - \mu_D^2)`:
chosen on the validation tables, fair and the stand-in, at T = d (``benchmarks/pair_selection.py``,
``benchmarks/results/pair_selection_stand_in.md`` and ``pair_selection_fair.md``; docs/flows.md, "Which pairs to
measure: a paid selection"): 0.2, 0.3 and 0.5 all beat the public choice's 2-way TV on the stand-in, with and
without a schema, and on fair's DPSWflow stayed within a run's spread of it; 0.3 is the middle."""

PAIRS_PER_COLUMN = 1.5
"""T / d, the pairs stage B measures per column: chosen on the validation tables with ``SELECTION_SHARE``
(``benchmarks/pair_selection.py``, ``benchmarks/results/pair_selection_fair_ratio.md`` and
``pair_selection_stand_in_ratio.md``; docs/flows.md, "Which pairs to measure: a paid selection"): against one per
column, 1.5 kept the 2-way TV and raised TSTR with no schema on both tables; half a pair per column lost both (these
runs kept the T pairs of largest score, before the spanning forest of ``pairs``)."""

CANDIDATE_PAIRS = 1000
"""The most candidate pairs stage A measures (every pair of up to 45 columns; beyond, a uniformly random subset of
this many, drawn from the public seed)."""


def selected_pair_count(n_columns: int, max_pairs: int | None) -> int:
    """T, the pairs stage B measures: ``PAIRS_PER_COLUMN`` per column, rounded down (at least one), at most
    ``max_pairs``."""
    count = max(1, math.floor(PAIRS_PER_COLUMN * n_columns))
    return count if max_pairs is None else min(count, max_pairs)


def selects_pairs(n_columns: int, max_pairs: int | None, epsilon: float) -> bool:
    """Whether a table may pay for a selection: epsilon finite, and more than 2T candidate pairs both at the default
    T and at ``max_pairs``' (so at least 7 columns), so that more than half of them are left out; below that the look
    costs more than it saves. (``recipes.tables.noise_limited`` then asks whether noise limits the tables.)"""
    pairs = n_columns * (n_columns - 1) // 2
    candidates = min(pairs, CANDIDATE_PAIRS)
    wide = pairs > 2 * selected_pair_count(n_columns, None)
    return epsilon < float("inf") and wide and candidates > 2 * selected_pair_count(n_columns, max_pairs)


def candidate_layout(levels: tuple[int, ...], coarse_bins: int, seed: int, missing: tuple[bool, ...],
                     condition: int | None = None, classes: int | None = None,
                     anchor: int | None = None, runs: dict[int, tuple[int, ...]] | None = None) -> MarginalLayout:
    """L_A: the marginal layout of every candidate pair (``MarginalLayout.build`` with ``CANDIDATE_PAIRS``), counted per
    class of the named target ``condition`` where there is one (no pair contains it), every pair of an ``anchor``
    column among the candidates."""
    return MarginalLayout.build(levels, coarse_bins, CANDIDATE_PAIRS, seed, missing, condition, classes, anchor, runs)


@dataclass(frozen=True)
class PairSelection:
    """Stage A's release and the pairs chosen from it (all public once released).

    Attributes:
        layout: L_A, the candidate layout.
        values: the released vector of L_A's tables, ``(cells,)``.
        noise_std: s_A, the noise std of every count.
        noise_multiplier: z_A.
        neighbouring: the adjacency of its sensitivity.
        count: T, fixed before the release.
        delta: the delta its own guarantee is stated at (the budget's Gaussian delta).
        share: q, its share of the mu^2 left after the DP domain (for the report).
        forced: pairs kept whatever the scores (every pair of a named target not conditioned on), public and fixed
            before the release, at most T of them.
    """

    layout: MarginalLayout
    values: torch.Tensor
    noise_std: float
    noise_multiplier: float
    neighbouring: Adjacency
    count: int
    delta: float
    share: float
    forced: tuple[Pair, ...] = ()

    @property
    def scores(self) -> dict[Pair, float]:
        """Every candidate pair's ``dependence_score`` from the released tables alone (post-processing); with a named
        target (``MarginalLayout.condition``), summed over the target's classes: the pair's dependence given the
        target."""
        block_layout = self.layout.unconditioned()
        mechanism = MarginalRelease(ReleaseOptions(layout=block_layout))
        scores: dict[Pair, float] = {pair: 0.0 for pair in block_layout.pairs}
        for block in self.layout.blocks(self.values.to(torch.float64)):
            one_way, two_way = block_layout.split(block)
            total = max(float(mechanism.counted_records(block)), 1.0)  # only noise makes it smaller
            margins = [
                coarsen(to_probabilities(table, total), block_layout.coarse_levels[column], block_layout.has_missing(column),
                        block_layout.starts(column))
                for column, table in enumerate(one_way)
            ]
            for (j, k), table in two_way.items():
                scores[(j, k)] += dependence_score(table, margins[j], margins[k], total, self.noise_std**2)
        return scores

    @property
    def pairs(self) -> tuple[Pair, ...]:
        """Stage B's T pairs, in pair order: the ``forced`` pairs, then a maximum spanning forest of the candidates by
        score (Kruskal: every column joined to the rest by its strongest link that closes no cycle, as MST does), then
        the pairs of largest score left, until T (ties broken by pair order)."""
        scores = self.scores
        ranked = sorted(scores, key=lambda pair: -scores[pair])  # stable: ties keep pair order
        root = list(range(self.layout.n_columns))

        def find(column: int) -> int:
            while root[column] != column:
                root[column] = root[root[column]]
                column = root[column]
            return column

        tree: list[Pair] = []
        for j, k in self.forced[: self.count]:
            if find(j) != find(k):
                root[find(j)] = find(k)
            tree.append((j, k))
        for j, k in ranked:
            if len(tree) == self.count:
                break
            if (j, k) not in tree and find(j) != find(k):
                root[find(j)] = find(k)
                tree.append((j, k))
        rest = [pair for pair in ranked if pair not in tree]
        return tuple(sorted(tree + rest[: self.count - len(tree)]))

    def chosen_layout(self) -> MarginalLayout:
        """L_B: the candidate layout's levels (and condition) with the chosen pairs only."""
        return dataclasses.replace(self.layout, pairs=self.pairs)

    def measurement(self, layout: MarginalLayout) -> torch.Tensor:
        """Stage A's values of ``layout``'s tables (its one-way tables and its pairs, all candidates), in ``layout``'s
        order (class block after class block with a named target): a measurement of the same counts as a release of
        ``layout`` over all records, at noise std s_A."""
        if (layout.levels, layout.coarse_levels, layout.runs) != (self.layout.levels, self.layout.coarse_levels, self.layout.runs):
            raise ValueError("the layout's levels differ from the selection's: it measured other tables.")
        if layout.condition != self.layout.condition:
            raise ValueError("the layout's condition differs from the selection's: it measured other tables.")
        missing = [pair for pair in layout.pairs if pair not in self.layout.pairs]
        if missing:
            raise ValueError(f"pairs {missing} were not candidates of the selection.")
        parts = []
        for block in self.layout.blocks(self.values):
            one_way, two_way = self.layout.unconditioned().split(block)
            parts += [*one_way, *(two_way[pair].reshape(-1) for pair in layout.pairs)]
        return torch.cat(parts)

    @property
    def epsilon(self) -> float:
        """Its own epsilon alone: the analytic Gaussian's at z_A and ``delta``."""
        return analytic_gaussian_epsilon(self.noise_multiplier, self.delta)

    def other_adjacency(self) -> OtherAdjacency:
        r"""This release alone under the other adjacency: a marginal release, :math:`\Delta_{RO} = \sqrt{2}\Delta_{AR}`
        exactly, at ``Adjacency.other_multiplier(z_A)``."""
        multiplier = self.neighbouring.other_multiplier(self.noise_multiplier)
        epsilon = analytic_gaussian_epsilon(multiplier, self.delta)
        return OtherAdjacency(self.neighbouring.other.label, epsilon, self.delta, "the same counts")

    def describe(self) -> str:
        """The report part's detail: what stage A released, at what noise, and how many pairs it chose."""
        return (f"Gaussian counts of the one-way tables and {len(self.layout.pairs)} candidate pairs' two-way tables "
                f"(z = {self.noise_multiplier:.3g}, Delta = sqrt({'2' if self.neighbouring.n_is_public else ''}m), "
                f"m = {self.layout.n_tables}, {self.share:g} of the mu^2 left after the DP domain, or of all of it when "
                f"there is none); the release measures {self.count} pairs chosen from it")


def release_pair_selection(
    statistic: torch.Tensor, layout: MarginalLayout, count: int, noise_multiplier: float, delta: float, share: float,
    secret: torch.Generator, neighbouring: Adjacency | str = Adjacency.REPLACE_ONE, forced: tuple[Pair, ...] = (),
) -> PairSelection:
    """Stage A: the exact marginal ``statistic`` of ``layout`` (all records; a frame's or a partitioned table's sum)
    plus the marginal release's noise at ``noise_multiplier`` (``MarginalRelease.noised``: the one place noise is
    added), with ``count`` (T) pairs to choose, ``forced`` among them (public); ``share`` is q, for the report."""
    if count < 1 or count > len(layout.pairs):
        raise ValueError(f"count must lie in 1..{len(layout.pairs)} (the candidate pairs), got {count!r}.")
    neighbouring = Adjacency.of(neighbouring)
    mechanism = MarginalRelease(ReleaseOptions(layout=layout))
    release = mechanism.noised(statistic.to(torch.float64), None, noise_multiplier, secret, neighbouring)
    unknown = [pair for pair in forced if pair not in layout.pairs]
    if unknown:
        raise ValueError(f"forced pairs {unknown} are not candidates of the layout.")
    return PairSelection(layout, release.values, float(release.noise_std), float(noise_multiplier), neighbouring, count,
                         delta, share, tuple(forced))

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
marginal release measures. Stage A runs T rounds of the exponential mechanism (``privacy.exponential``) over the
candidate pairs, each scored by its exact coarse table's L1 distance from the product of its margins
(``math.histograms.independence_distance``, sensitivity :math:`\Delta_u` = 6 under replace-one): a spanning forest
first, then the strongest left. Each round is :math:`0.63\,\varepsilon_r`-GDP, so the T rounds are one
:math:`\mu_A`-GDP mechanism, spent like the DP domain, as one more Gaussian mechanism in the releases' prior
(``privacy.budget.Budget.spend``). Stage B, the generator's releases, measures the forced pairs (a named target's)
and the T chosen, at sensitivity :math:`\sqrt{2(d + F + T)}` fixed before stage A.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import torch

from synthcity_dpswf.math.histograms import independence_distance
from synthcity_dpswf.privacy.exponential import (
    BOUNDED_RANGE_GDP, exponential_mechanism, exponential_rounds_epsilon, profile_dominated,
)
from synthcity_dpswf.privacy.gaussian import analytic_gaussian_epsilon
from synthcity_dpswf.privacy.mechanisms.base import ReleaseMechanism
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
        if layout.condition is None:  # one block, of every record
            return block_statistic(layout, batch)
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
    """One block of the release: the exact one-way (fine) and two-way (coarse) tables of ``codes`` ``(n, d)`` (level
    codes, of any dtype holding integers), in the layout's order, float64 (exact integers up to 2^53)."""
    # one contiguous row of 64-bit codes per column, in one copy: each table reads its columns in order
    columns = codes.T.to(torch.int64, memory_format=torch.contiguous_format)
    tables = [torch.bincount(columns[j], minlength=k) for j, k in enumerate(layout.levels)]
    # Each column's coarse levels by one lookup of its fine ones, in 32 bits: a pair's cell index is below 2^31, and
    # the pairs' products and counts read half the memory of 64-bit codes.
    coarse = torch.stack([layout.coarse_lookup(j).to(torch.int32)[columns[j]] for j in range(layout.n_columns)])
    for j, k in layout.pairs:
        cells = coarse[j] * layout.coarse_levels[k] + coarse[k]
        tables.append(torch.bincount(cells, minlength=layout.coarse_levels[j] * layout.coarse_levels[k]))
    return torch.cat(tables).to(torch.float64)


SELECTION_SHARE = 0.3
r"""The selection's share q of what the budget leaves after the DP domain, :math:`\mu_A^2 = q(\mu^2 - \mu_D^2)`:
chosen with ``PAIRS_PER_COLUMN`` on validation tables (``benchmarks/studies/pair_selection.py``,
``benchmarks/results/pair_selection*.md``)."""

PAIRS_PER_COLUMN = 1.5
"""T / d, the pairs stage B measures per column besides a named target's: chosen on validation tables with
``SELECTION_SHARE`` (``benchmarks/studies/pair_selection.py``, ``benchmarks/results/pair_selection*.md``)."""

CANDIDATE_PAIRS = 1000
"""The most candidate pairs stage A scores (every pair of up to 45 columns; beyond, a uniformly random subset of
this many, drawn from the public seed)."""

SCORE_SENSITIVITY = 6.0
r""":math:`\Delta_u` under replace-one of a pair's ``independence_distance`` (privacy.md, "Paid pair selection", the
score's lemma)."""

CONDITIONED_SCORE_SENSITIVITY = 8.0
r""":math:`\Delta_u` under replace-one of a pair's score summed over the classes of a condition column: a replaced
record may leave one class's block and join another's."""


SCORE_ROUNDING = 1e-6
r"""The relative excess of a round's bounded range over :math:`\varepsilon_r` that the stated Gaussian DP bound must
cover: float64 scores (``independence_distance``, each within :math:`n\,2^{-51}` of its exact value, tables below
:math:`2^{31}` records; a sum over a condition column's blocks within :math:`n\,2^{-50}`) move the range's width, at
most :math:`2\Delta_u`, by at most :math:`8n\,2^{-51} < 10^{-6} \cdot 2\Delta_u`."""


def check_rounding_covered(round_epsilon: float) -> None:
    r"""Raise unless a round, and the same round under the other adjacency (:math:`\sqrt 2\,\varepsilon_r` from an
    add/remove run, :math:`\varepsilon_r / \sqrt 2` from a replace-one run), is :math:`0.63\,\varepsilon`-GDP even when
    its bounded range exceeds :math:`\varepsilon` by ``SCORE_ROUNDING`` (``privacy.exponential.profile_dominated``;
    privacy.md, "Paid pair selection")."""
    for epsilon in (round_epsilon, math.sqrt(2.0) * round_epsilon, round_epsilon / math.sqrt(2.0)):
        if not profile_dominated((1.0 + SCORE_ROUNDING) * epsilon, BOUNDED_RANGE_GDP * epsilon):
            raise ValueError(f"the bounded-range bound is not verified at epsilon = {epsilon!r} with the scores' "
                             "rounding; fit with pair_selection=\"public\" (no paid selection), or another epsilon.")


def score_sensitivity(layout: MarginalLayout, neighbouring: Adjacency | str) -> float:
    r""":math:`\Delta_u` of the candidates' scores of ``layout``: ``SCORE_SENSITIVITY`` (``CONDITIONED_SCORE_SENSITIVITY``
    with a condition column) under replace-one, that divided by :math:`\sqrt 2` under add/remove (an upper bound of the
    add/remove sensitivity, below 4, chosen so that every part of a run rescales by :math:`\sqrt 2` between the
    adjacencies)."""
    replace_one = SCORE_SENSITIVITY if layout.condition is None else CONDITIONED_SCORE_SENSITIVITY
    return replace_one if Adjacency.of(neighbouring).n_is_public else replace_one / math.sqrt(2.0)


def selected_pair_count(n_columns: int, max_pairs: int | None) -> int:
    """T, the pairs stage A chooses: ``PAIRS_PER_COLUMN`` per column, rounded down (at least one), at most
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
    column among them (the forced pairs)."""
    return MarginalLayout.build(levels, coarse_bins, CANDIDATE_PAIRS, seed, missing, condition, classes, anchor, runs)


def pair_scores(statistic: torch.Tensor, layout: MarginalLayout) -> dict[Pair, float]:
    """Every pair's exact score from the exact marginal ``statistic`` of ``layout`` (private): its coarse table's
    ``independence_distance``, summed over the classes' blocks with a condition column."""
    scores: dict[Pair, float] = {pair: 0.0 for pair in layout.pairs}
    block_layout = layout.unconditioned()
    for block in layout.blocks(statistic.to(torch.float64)):
        _, two_way = block_layout.split(block)
        for pair, table in two_way.items():
            scores[pair] += independence_distance(table)
    return scores


@dataclass(frozen=True)
class PairSelection:
    """Stage A's output and what it was drawn at (all public once released).

    Attributes:
        layout: L_A, the candidate layout (the forced pairs among its pairs).
        chosen: the T pairs the rounds released, in the order drawn.
        forced: pairs measured whatever the rounds (every pair of a named target not conditioned on), public and
            fixed before the release.
        noise_multiplier: z_A = 1 / mu_A, the Gaussian multiplier the T rounds are dominated by together.
        round_epsilon: epsilon_r of each round.
        sensitivity: Delta_u of the scores.
        neighbouring: the adjacency of the sensitivity.
        delta: the delta its own guarantee is stated at (the budget's Gaussian delta).
        share: q, its share of the mu^2 left after the DP domain (for the report).
    """

    layout: MarginalLayout
    chosen: tuple[Pair, ...]
    forced: tuple[Pair, ...]
    noise_multiplier: float
    round_epsilon: float
    sensitivity: float
    neighbouring: Adjacency
    delta: float
    share: float

    @property
    def count(self) -> int:
        """T, the rounds."""
        return len(self.chosen)

    @property
    def pairs(self) -> tuple[Pair, ...]:
        """Stage B's pairs: the forced and the chosen ones, in pair order."""
        return tuple(sorted(self.forced + self.chosen))

    def chosen_layout(self) -> MarginalLayout:
        """L_B: the candidate layout's levels (and condition) with stage B's pairs only."""
        return dataclasses.replace(self.layout, pairs=self.pairs)

    @property
    def epsilon(self) -> float:
        """Its own epsilon alone: the analytic Gaussian's at z_A and ``delta`` (it is 1 / z_A-GDP)."""
        return analytic_gaussian_epsilon(self.noise_multiplier, self.delta)

    def other_adjacency(self) -> OtherAdjacency:
        r"""This stage alone under the other adjacency: :math:`\Delta_u` rescales by :math:`\sqrt 2` (an upper bound
        under add/remove), so it is the Gaussian at ``Adjacency.other_multiplier(z_A)``."""
        multiplier = self.neighbouring.other_multiplier(self.noise_multiplier)
        epsilon = analytic_gaussian_epsilon(multiplier, self.delta)
        return OtherAdjacency(self.neighbouring.other.label, epsilon, self.delta, "the same rounds")

    def describe(self) -> str:
        """The report part's detail: what stage A released, at what epsilon, and how many pairs it chose."""
        forced = f", besides the {len(self.forced)} pairs of the named target" if self.forced else ""
        return (f"{self.count} rounds of the exponential mechanism over {len(self.layout.pairs) - len(self.forced)} "
                f"candidate pairs' dependence (L1 distance of the coarse table from its margins' product, Delta_u = "
                f"{self.sensitivity:.3g}), epsilon_r = {self.round_epsilon:.3g} each, {BOUNDED_RANGE_GDP} epsilon_r-GDP "
                f"each (z = {self.noise_multiplier:.3g} together, {self.share:g} of the mu^2 left after the DP domain, "
                f"or of all of it when there is none); the release measures the {self.count} pairs chosen{forced}")


def release_pair_selection(
    statistic: torch.Tensor, layout: MarginalLayout, count: int, noise_multiplier: float, delta: float, share: float,
    secret: torch.Generator, neighbouring: Adjacency | str = Adjacency.REPLACE_ONE, forced: tuple[Pair, ...] = (),
) -> PairSelection:
    """Stage A: ``count`` (T) rounds of the exponential mechanism on the scores of ``layout``'s candidate pairs
    (``pair_scores`` of its exact marginal ``statistic``: all records, a frame's or a partitioned table's sum), the
    ``forced`` pairs (public) measured besides them; together dominated by the Gaussian mechanism at
    ``noise_multiplier`` (z_A), so each round at ``exponential_rounds_epsilon(1 / z_A, T)``. Round t draws among the
    pairs not chosen yet that join two components of the graph of the forced and chosen pairs while there are any,
    then among every pair not chosen yet. ``share`` is q, for the report."""
    unknown = [pair for pair in forced if pair not in layout.pairs]
    if unknown:
        raise ValueError(f"forced pairs {unknown} are not candidates of the layout.")
    open_pairs = [pair for pair in layout.pairs if pair not in forced]
    if count < 1 or count > len(open_pairs):
        raise ValueError(f"count must lie in 1..{len(open_pairs)} (the candidate pairs not forced), got {count!r}.")
    neighbouring = Adjacency.of(neighbouring)
    sensitivity = score_sensitivity(layout, neighbouring)
    round_epsilon = exponential_rounds_epsilon(1.0 / noise_multiplier, count)
    check_rounding_covered(round_epsilon)
    scores = pair_scores(statistic, layout)
    root = list(range(layout.n_columns))

    def find(column: int) -> int:
        while root[column] != column:
            root[column] = root[root[column]]
            column = root[column]
        return column

    for j, k in forced:
        root[find(j)] = find(k)
    chosen: list[Pair] = []
    for _ in range(count):
        joining = [pair for pair in open_pairs if find(pair[0]) != find(pair[1])]
        candidates = joining or open_pairs
        scored = torch.tensor([scores[pair] for pair in candidates], dtype=torch.float64)
        drawn = candidates[exponential_mechanism(scored, round_epsilon, sensitivity, secret)]
        chosen.append(drawn)
        open_pairs.remove(drawn)
        root[find(drawn[0])] = find(drawn[1])
    return PairSelection(layout, tuple(chosen), tuple(forced), float(noise_multiplier), round_epsilon, sensitivity,
                         neighbouring, delta, share)

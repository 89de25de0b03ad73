r"""The paid pair selection: which column pairs a table's marginal release measures, chosen from a Gaussian release of
every candidate pair's table (privacy.md, "Paid pair selection").

Stage A releases the marginal statistic of the candidate layout :math:`L_A` (every pair) over all n records at
multiplier :math:`z_A`; the choice (post-processing) scores each pair by how far its noisy table stands from the
product of its noisy margins (``math.histograms.dependence_score``) and keeps T pairs: a maximum spanning forest by
score, then the strongest left; stage B, the generator's releases, measures those T pairs only, at sensitivity :math:`\sqrt{2(d + T)}` fixed before stage A. Stage A is spent like the DP domain,
as one more Gaussian mechanism in the releases' prior (``budget.Budget.spend``), and its values of the chosen tables
are combined with stage B's at generation (``PairSelection.measurement``).
"""

from __future__ import annotations

import math
import dataclasses
from dataclasses import dataclass

import torch

from synthcity_dpswf.math.histograms import coarsen, dependence_score, to_probabilities
from synthcity_dpswf.privacy.gaussian import analytic_gaussian_epsilon
from synthcity_dpswf.privacy.mechanisms.layout import MarginalLayout, Pair
from synthcity_dpswf.privacy.mechanisms.marginal import MarginalRelease
from synthcity_dpswf.privacy.mechanisms.base import ReleaseOptions
from synthcity_dpswf.privacy.neighbouring import Adjacency
from synthcity_dpswf.privacy.report import OtherAdjacency

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

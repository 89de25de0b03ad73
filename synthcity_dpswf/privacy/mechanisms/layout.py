"""Which tables a marginal release holds (``MarginalLayout``): fine and coarse levels per column and the column
pairs, all public. Its own module because the release options (``mechanisms.base.ReleaseOptions``) carry a layout
and the marginal release (``mechanisms.marginal``) reads one: both import it, neither the other."""

from __future__ import annotations

import dataclasses
import itertools
from dataclasses import dataclass

import torch

from synthcity_dpswf.math.checks import check_positive_int
from synthcity_dpswf.math.histograms import check_starts, coarse_index

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
    level (``math.histograms.coarse_index``)."""
    condition: int | None = None
    """The named target's column t, or ``None``. With one, every table is counted per target class, the class of a
    record being its coarse level of t (``classes`` of them): the release holds ``classes`` blocks of the tables
    above, and no pair contains t (privacy.md, "Tables conditioned on a named target")."""
    runs: tuple[tuple[int, ...] | None, ...] = ()
    """Per column (empty: none): the first fine level of each of its coarse levels, where its coarse levels are runs of
    about equal released mass (``math.histograms.equal_mass_starts``, read from an earlier release: privacy.md, "Coarse
    levels at released quantiles"); ``None``: runs of equal length (``math.histograms.coarse_index``)."""

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
        if self.runs:
            if len(self.runs) != len(self.levels):
                raise ValueError("runs needs one entry per column (or none).")
            for column, starts in enumerate(self.runs):
                if starts is not None:
                    check_starts(starts, self.levels[column], self.coarse_levels[column], self.has_missing(column))
        if self.condition is not None:
            if not 0 <= self.condition < len(self.levels):
                raise ValueError(f"condition {self.condition!r} must be a column index below {len(self.levels)}.")
            if any(self.condition in pair for pair in self.pairs):
                raise ValueError(f"no pair may contain the condition column {self.condition}: every table is already "
                                 "counted per class of it.")

    def has_missing(self, column: int) -> bool:
        """Whether ``column`` has a missing level."""
        return bool(self.missing) and self.missing[column]

    def starts(self, column: int) -> tuple[int, ...] | None:
        """The first fine level of each coarse level of ``column`` where its runs are of equal mass, else ``None``."""
        return self.runs[column] if self.runs else None

    def coarse(self, codes: torch.Tensor, column: int) -> torch.Tensor:
        """The coarse levels of fine level codes of ``column`` (``math.histograms.coarse_index``)."""
        return coarse_index(codes, self.levels[column], self.coarse_levels[column], self.has_missing(column),
                            self.starts(column))

    def coarse_lookup(self, column: int) -> torch.Tensor:
        """The coarse level of each fine level of ``column`` (``(K_j,)`` long): ``coarse`` as a table, so that many
        codes are mapped by one gather."""
        return self.coarse(torch.arange(self.levels[column]), column)

    @property
    def classes(self) -> int:
        """The blocks of the release: the condition column's coarse levels, 1 without a condition."""
        return 1 if self.condition is None else self.coarse_levels[self.condition]

    def class_of(self, codes: torch.Tensor) -> torch.Tensor:
        """The class of each record ``(n, d)`` of level codes: its coarse level of the condition column (all 0 without
        one)."""
        if self.condition is None:
            return torch.zeros(codes.shape[0], dtype=torch.long)
        return self.coarse(codes[:, self.condition].long(), self.condition)

    def class_levels(self, label: int) -> torch.Tensor:
        """The condition column's fine levels whose coarse level is class ``label`` (``(K_t,)`` booleans): the only
        levels of t a record of that class can have."""
        if self.condition is None:
            raise ValueError("the layout has no condition column.")
        fine = torch.arange(self.levels[self.condition])
        return self.coarse(fine, self.condition) == label

    def unconditioned(self) -> "MarginalLayout":
        """The same tables without the condition: the layout of one class's block."""
        return dataclasses.replace(self, condition=None)

    def blocks(self, values: torch.Tensor) -> torch.Tensor:
        """A released vector ``(..., classes * cells)`` as ``(..., classes, cells)``, one block per class."""
        return values.reshape(*values.shape[:-1], self.classes, sum(self.sizes))

    @classmethod
    def build(
        cls,
        levels: tuple[int, ...],
        coarse_bins: int,
        max_pairs: int | None = None,
        seed: int = 0,
        missing: tuple[bool, ...] = (),
        condition: int | None = None,
        classes: int | None = None,
        anchor: int | None = None,
        runs: dict[int, tuple[int, ...]] | None = None,
    ) -> "MarginalLayout":
        """Coarse levels ``min(K_j, coarse_bins)`` (a column with a missing level: ``min(K_j - 1, coarse_bins)`` for
        its values and one for its missing level); all pairs, or ``max_pairs`` of them chosen uniformly at random from
        the public ``seed`` when there are more (no data is read). With a ``condition`` column t: no pair contains t,
        and t's coarse levels, its classes, are ``min(K_t, classes)`` whatever ``coarse_bins`` (its missing level one
        more). With an ``anchor``
        column (a named target not conditioned on): every pair containing it is kept within ``max_pairs``, the random
        subset drawn from the others. ``runs``: the first fine levels of the coarse levels of the columns whose runs are
        of equal released mass (``math.histograms.equal_mass_starts``, at most ``coarse_bins`` of them; a missing
        level's last run included): their coarse levels are those runs. Never for the condition column."""
        check_positive_int("coarse_bins", coarse_bins)
        if classes is not None:
            check_positive_int("classes", classes)
        pairs = [pair for pair in itertools.combinations(range(len(levels)), 2) if condition not in pair]
        if max_pairs is not None and len(pairs) > max_pairs:
            check_positive_int("max_pairs", max_pairs)
            anchored = [pair for pair in pairs if anchor in pair][:max_pairs]
            others = [pair for pair in pairs if pair not in anchored]
            chosen = torch.randperm(len(others), generator=torch.Generator().manual_seed(seed))[:max_pairs - len(anchored)]
            pairs = sorted(anchored + [others[i] for i in chosen.tolist()])
        if missing and len(missing) != len(levels):
            raise ValueError("missing needs one entry per column (or none).")
        flags = tuple(missing) or (False,) * len(levels)
        def coarse_of(column: int) -> int:
            bins = coarse_bins if column != condition or classes is None else classes
            k = levels[column]
            return min(k - 1, bins) + 1 if flags[column] else min(k, bins)

        runs = {column: starts for column, starts in (runs or {}).items() if column != condition}
        coarse = tuple(len(runs[column]) if column in runs else coarse_of(column) for column in range(len(levels)))
        per_column = tuple(runs.get(column) for column in range(len(levels))) if runs else ()
        return cls(tuple(levels), coarse, tuple(pairs), tuple(missing), condition, per_column)

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

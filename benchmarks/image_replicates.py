"""How far one image fit's CAS moves: the rows of an image results file grouped by setting, their replicates pooled.

``image_runner.py`` draws each fit's release noise afresh (OS entropy), so a setting run again under another
``label`` (``--set 'settings=[{..., label = "r2"}]'``) is a replicate: the same codec, release kind and flow settings,
new noise and a new CAS training. This script reads one results file (``image_runner.py``'s JSON), groups its rows by
what makes a row the row it is (``image_results.row_identity``) with the setting's label left out, and writes per
group and epsilon the number of
fits n, the mean and the sample standard deviation s of each classifier's CAS, and the standard error s / sqrt(n): a
difference between two settings smaller than a few of their standard errors is not an order.

Run: ``python benchmarks/image_replicates.py benchmarks/results/dpsgd_flow_replicates_mnist_validation.json`` (writes
``benchmarks/results/<its name>_spread.{json,md}``).
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
from pathlib import Path
from typing import Any

from common import RESULTS, results_page, write_results
from image_results import row_identity, setting_text

CLASSIFIERS = ("mlp", "cnn")
FLOW_DEFAULTS = {"flow_directions": 70, "step_size": 1.0, "estimator": "simplex", "labelling": "conditional"}
"""The flow's fields of a setting (``image_runner.FlowChoice``) that the image tables' setting column leaves out, with
their defaults: a group that differs in one says so in its line."""


def spread(values: list[float]) -> dict[str, float | int | None]:
    """n, mean, sample standard deviation and standard error of ``values`` (``None`` for one value: no spread)."""
    n = len(values)
    deviation = statistics.stdev(values) if n > 1 else None
    return {"n": n, "mean": statistics.fmean(values), "std": deviation,
            "sem": None if deviation is None else deviation / math.sqrt(n)}


def group_text(row: dict[str, Any]) -> str:
    """The setting of ``row``'s group as the image tables write it (``image_results.setting_text``), its label left
    out and the flow's fields beyond L, G and steps named where they differ from ``FLOW_DEFAULTS``."""
    setting = dict(row.get("setting") or {})
    setting.pop("label", None)
    text = setting_text({**row, "setting": setting})
    extra = [f"{key.replace('_', ' ')} {setting[key]}" for key, default in FLOW_DEFAULTS.items()
             if setting.get(key, default) != default]
    return ", ".join([text, *extra])


def summarise(payload: dict[str, Any]) -> list[dict[str, Any]]:
    """One entry per group and epsilon of ``payload``'s rows: rows of one ``image_results.row_identity`` but their
    label (codec, generator, adjacency, setting, sizes, seed, pixels, refiner weight, decode temperature, codec
    sampling), each classifier's ``spread`` of CAS, and the ceilings met (the cell's, else the row's)."""
    groups: dict[tuple[str, str], list[tuple[dict[str, Any], dict[str, Any]]]] = {}
    for row in payload["rows"]:
        for epsilon, cell in row["epsilons"].items():
            groups.setdefault((row_identity(row, with_label=False), epsilon), []).append((row, cell))
    summary = []
    for (_, epsilon), members in groups.items():
        row = members[0][0]
        ceilings = sorted({(ceiling["mlp"], ceiling["cnn"]) for ceiling in (cell.get("ceiling") or member.get("ceiling")
                                                                           for member, cell in members) if ceiling})
        summary.append({
            "codec": row["codec"], "generator": row.get("generator", "dpswflow"),
            "adjacency": "add/remove" if row.get("neighbouring") == "add_remove" else "replace-one",
            "setting": group_text(row), "epsilon": float(epsilon),
            **{name: spread([cell[name] for _, cell in members]) for name in CLASSIFIERS},
            "ceilings": [list(pair) for pair in ceilings],
        })
    return sorted(summary, key=lambda entry: (-entry["epsilon"], -entry["cnn"]["n"], -entry["cnn"]["mean"]))


def pair(entry: dict[str, Any], key: str, form: str = ".2f") -> str:
    """``key`` of both classifiers' spreads in percent (``-`` where it is ``None``)."""
    values = [entry[name][key] for name in CLASSIFIERS]
    return "-" if None in values else " / ".join(f"{100 * value:{form}}" for value in values)


def markdown(name: str, summary: list[dict[str, Any]]) -> str:
    """The results page: a line per group and epsilon, its n, mean, standard deviation and standard error."""
    description = (
        f"The rows of `{name}.json` grouped by what makes a row the row it is (`image_results.row_identity`: codec, "
        "generator, adjacency, setting, sizes, seed, decoding and the codec's sampling) but their labels, which only "
        "name replicates: n fits, each with its own release noise and CAS training; mean, sample standard deviation "
        "and standard error (s / sqrt(n)) of the CAS (MLP / CNN), in percent. `benchmarks/image_replicates.py`.")
    rows = [[entry["codec"], entry["generator"], entry["adjacency"], f"{entry['epsilon']:g}", entry["setting"],
             str(entry["cnn"]["n"]), pair(entry, "mean"), pair(entry, "std"), pair(entry, "sem"),
             "; ".join(f"{100 * a:.1f} / {100 * b:.1f}" for a, b in entry["ceilings"]) or "-"]
            for entry in summary]
    columns = [("codec", False), ("generator", False), ("adjacency", False), ("epsilon", True),
               ("setting (L, G, steps)", False), ("n", True), ("mean", True), ("std", True), ("standard error", True),
               ("ceiling", True)]
    return results_page(f"Replicates of `{name}`: how far one fit's CAS moves", description, columns, rows)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("results", type=Path, help="an image_runner.py results file (JSON)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    payload = json.loads(args.results.read_text())
    name = payload.get("name", args.results.stem)
    summary = summarise(payload)
    write_results(args.out, f"{name}_spread", {"source": args.results.name, "groups": summary}, markdown(name, summary))


if __name__ == "__main__":
    main()

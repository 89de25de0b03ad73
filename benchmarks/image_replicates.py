"""How far one image fit's CAS moves: the rows of an image results file grouped by setting, their replicates pooled.

``image_runner.py`` draws each fit's release noise afresh (OS entropy), so a setting run again under another
``label`` (``--set 'settings=[{..., label = "r2"}]'``) is a replicate: the same codec, release kind and flow settings,
new noise and a new CAS training. This script reads one results file (``image_runner.py``'s JSON), groups its rows by
codec, generator, adjacency and the setting with its label left out, and writes per group and epsilon the number of
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

CLASSIFIERS = ("mlp", "cnn")

GroupKey = tuple[str, str, str, str]
"""(codec, generator, adjacency, the setting's fields but its label, as sorted JSON)."""


def group_key(row: dict[str, Any]) -> GroupKey:
    """The group of ``row``: what stays when its label, which only names a replicate, is left out."""
    setting = {key: value for key, value in row["setting"].items() if key != "label"}
    return row["codec"], row.get("generator", "dpswflow"), row.get("neighbouring", "replace_one"), json.dumps(setting, sort_keys=True)


def spread(values: list[float]) -> dict[str, float]:
    """n, mean, sample standard deviation and standard error of ``values`` (0 for one value: the table shows "-")."""
    n = len(values)
    deviation = statistics.stdev(values) if n > 1 else 0.0
    return {"n": n, "mean": statistics.fmean(values), "std": deviation, "sem": deviation / math.sqrt(n)}


def summarise(payload: dict[str, Any]) -> list[dict[str, Any]]:
    """One entry per group and epsilon of ``payload``'s rows: each classifier's ``spread`` of CAS and the ceilings
    met (one per codec release, the same for every fit of a group that shares it)."""
    groups: dict[tuple[GroupKey, str], list[dict[str, Any]]] = {}
    for row in payload["rows"]:
        for epsilon, cell in row["epsilons"].items():
            groups.setdefault((group_key(row), epsilon), []).append(cell)
    summary = []
    for (key, epsilon), cells in groups.items():
        codec, generator, adjacency, setting = key
        ceilings = sorted({(cell["ceiling"]["mlp"], cell["ceiling"]["cnn"]) for cell in cells if cell.get("ceiling")})
        summary.append({
            "codec": codec, "generator": generator, "adjacency": adjacency, "setting": json.loads(setting),
            "epsilon": float(epsilon), **{name: spread([cell[name] for cell in cells]) for name in CLASSIFIERS},
            "ceilings": [list(pair) for pair in ceilings],
        })
    return sorted(summary, key=lambda entry: (-entry["epsilon"], -entry["cnn"]["n"], -entry["cnn"]["mean"]))


def setting_text(setting: dict[str, Any]) -> str:
    """The flow's settings as the image tables show them, with what differs from the runner's defaults."""
    directions = "default" if setting["directions"] is None else setting["directions"]  # the generator's own L
    text = f"{directions}, {setting['bins']}, {setting['steps']}"
    if setting.get("flow_directions", 70) != 70:
        text += f", {setting['flow_directions']} directions a step"
    return text


def markdown(name: str, summary: list[dict[str, Any]]) -> str:
    description = (
        f"The rows of `{name}.json` grouped by codec, generator, adjacency and setting, their labels (which only name "
        "replicates) left out: n fits, each with its own release noise and CAS training; mean, sample standard "
        "deviation and standard error (s / sqrt(n)) of the CAS (MLP / CNN), in percent. `benchmarks/image_replicates.py`.")
    rows = []
    for entry in summary:
        mlp, cnn = entry["mlp"], entry["cnn"]
        ceilings = "; ".join(f"{100 * a:.1f} / {100 * b:.1f}" for a, b in entry["ceilings"]) or "-"
        rows.append([entry["codec"], entry["generator"], f"{entry['epsilon']:g}", setting_text(entry["setting"]),
                     str(cnn["n"]), f"{100 * mlp['mean']:.2f} / {100 * cnn['mean']:.2f}",
                     *([f"{100 * mlp[key]:.2f} / {100 * cnn[key]:.2f}" for key in ("std", "sem")] if cnn["n"] > 1 else ["-", "-"]),
                     ceilings])
    columns = [("codec", False), ("generator", False), ("epsilon", True), ("setting (L, G, steps)", False), ("n", True),
               ("mean", True), ("std", True), ("standard error", True), ("ceiling", True)]
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

"""The image runner's results files (``benchmarks/image_runner.py``): what makes two rows the same row, merging rows
into a file, and the one Markdown table of a file (with, when it holds rows of the paper's convention, the paper's
FID table beside ours).

A file ``<name>.json`` holds ``name``, ``dataset``, ``split``, the grids' ``descriptions`` and ``rows``; a row holds a
codec, a generator, an adjacency and a setting (``setting``: the ``FlowChoice`` fields, those of ``RELEASE_DEFAULTS``
only where they differ), the sizes it was run at, the codec's ``ceiling`` and one cell per epsilon
(``epsilons["10.0"]``): CAS ``mlp`` and ``cnn``, with FID ``fid``, ``precision`` and ``recall`` (means over the
cell's generation runs, each run's in ``runs`` when there were several), seconds and the ``reported_epsilon``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from common import mean_std, refiner_weight_in, write_json
from paper_protocol import cell_values, paper_table

from synthcity_dpswf.adapters.pixel_range import DEFAULT_PIXEL_SCALING
from synthcity_dpswf.datasets import DATASET_NAMES
from synthcity_dpswf.recipes.images import GENERATORS

RELEASE_DEFAULTS: dict[str, Any] = {"release": "projected_histogram", "batch_size": None, "passes": 10.0,
                                    "reuse": "pooled", "convention": "sound", "codec_share": 0.2}
"""The release fields of a setting (and the private codec's share of the budget) and the values every row ran with
before the field existed: a row stores them only where they differ, so that those rows stay the same rows whatever
the package's defaults become."""


def statistic(scores: dict[str, Any], metric: str, form: str) -> str:
    """``metric`` of a cell (or ceiling) in format ``form``: its value, or with several generation runs their mean
    +- their sample std."""
    return mean_std(cell_values(scores, metric), form)


def percent_pair(scores: dict[str, Any]) -> str:
    """``MLP / CNN`` CAS in percent."""
    return f"{statistic(scores, 'mlp', '.1%')} / {statistic(scores, 'cnn', '.1%')}"


def scores_text(scores: dict[str, Any]) -> str:
    """Both CAS and, when measured, FID with precision / recall."""
    text = percent_pair(scores)
    if "fid" in scores:
        text += (f", FID {statistic(scores, 'fid', '.1f')} (P {statistic(scores, 'precision', '.2f')}, "
                 f"R {statistic(scores, 'recall', '.2f')})")
    return text


def setting_text(row: dict[str, Any]) -> str:
    """A row's setting column: its label, then L, G and steps of a histogram release, or the release kind, its
    batches (per-step generators) and the flow's steps and step size; the paper's and the noiseless conventions named."""
    generator = row.get("generator", "dpswflow")
    if generator == "dpsgd_gan":
        return "-"
    setting = {**RELEASE_DEFAULTS, **(row.get("setting") or {})}
    if setting["release"] == "projected_histogram":
        text = f"{row['directions'] if row['directions'] is not None else 'default'}, {row['bins']}, {row['steps']}"
    else:
        text = f"{setting['release']} release"
        if GENERATORS[generator].per_step:
            text += f"s of b = {setting['batch_size'] or 'default'}, {setting['passes']:g} passes"
        flow = "one step per release" if setting["reuse"] == "once" else f"{row['steps']} steps"
        text += f", {flow} of h = {setting.get('step_size', 1.0):g}"
    if setting["convention"] == "paper":
        text += ", the paper's convention"
    elif setting["convention"] == "noiseless":
        text += ", flow without noise (not private)"
    if setting["codec_share"] != RELEASE_DEFAULTS["codec_share"]:
        text += f", codec share {setting['codec_share']:g}"
    temperature = decode_temperature_of(row)
    if temperature is not None:
        text += f", decoded at t = {temperature:g}"
    if row.get("codec_sampling") == "poisson":  # a DP-SGD codec under replace-one on Poisson batches
        text += ", codec on Poisson batches"
    return (f"{setting['label']}: " if setting.get("label") else "") + text


def decode_temperature_of(row: dict[str, Any]) -> float | None:
    """The logit temperature a DP-SGD codec's row was decoded at (1 for rows written before it was recorded: the
    only decoding then); ``None`` for other codecs."""
    if not str(row.get("codec", "")).startswith("dpae:"):
        return None
    return float(row.get("decode_temperature", 1.0))


def markdown(payload: dict[str, Any]) -> str:
    """The results table of one grid's file: one line per row, one column per epsilon; then, when it holds rows of
    the paper's convention, the paper's FID table beside ours (``paper_protocol.paper_table``)."""
    epsilons = sorted({key for row in payload["rows"] for key in row["epsilons"]}, key=lambda key: -float(key))
    with_fid = any("fid" in cell for row in payload["rows"] for cell in row["epsilons"].values())
    configs = sorted({row["config_file"] for row in payload["rows"] if row.get("config_file")})
    scored = "the 5,000 held-out validation images" if payload["split"] == "validation" else "the test set"
    runs = sorted({row.get("generation_runs", 1) for row in payload["rows"]} - {1})
    paper = paper_table(payload)
    lines = [
        f"# Image benchmark `{payload.get('name', '')}`: {DATASET_NAMES[payload['dataset']]}, {payload['split']} split",
        "",
        f"CAS (MLP / CNN) of classifiers trained on generated (image, label) pairs and scored on {scored}"
        + (", then FID (with precision / recall) against as many scored images" if with_fid else "")
        + ". Ceiling: the released private images through the codec. Generators with their defaults besides the "
        "settings column: DPSWflow (one class-conditional projected-histogram release of L directions), DPSWflow-r "
        "(100 per-step releases of 50 directions each, q = 0.1: Poisson samples under add/remove; under replace-one "
        "fixed-size batches in every row measured before docs/flows.md's fact 132, Poisson batches after it, as the "
        "JSON's `sampling` entry of a cell says where it has one: privacy.md, \"Poisson batches under replace-one\"), "
        "DPSWgen (a generator network on the same releases), the DP-SGD GAN baseline "
        "(same sampling and accountant); delta = 1e-5; the adjacency column says which neighbours epsilon is stated "
        "for; epsilon inf is the same generator without noise: not private. Pixels: how a linear codec puts a "
        "decoded image on the pixel range (`adapters.pixel_range`: min_max, the rule before 2026-11-27, or clip). "
        + (f"Rows of {' or '.join(map(str, runs))} generation runs (one fit, seeds seed, seed + 1, ...): mean ± std "
           "over them. " if runs else "")
        + ("Rows of the paper's convention add the noise the paper adds for the column's epsilon; their cells give "
           "the sound epsilon of that noise (below). " if paper else "")
        + "".join(f"`{name}`: {text} " for name, text in payload.get("descriptions", {}).items())
        + "Written by `benchmarks/image_runner.py` from "
        + (", ".join(f"`configs/images/{name}`" for name in configs) if configs else "earlier scripts") + "; "
        + "the last column names each row's config (and `--set` overrides).",
        "",
        "| codec | public data | d | pixels | generator | adjacency | setting (L, G, steps) | ceiling | "
        + " | ".join(f"epsilon {key}" + (" (not private)" if key == "inf" else "") for key in epsilons)
        + " | codec (s) | device | config |",
        "|---|---|---:|---|---|---|---|---|" + "---|" * len(epsilons) + "---:|---|---|",
    ]
    for row in payload["rows"]:
        cells = []
        for key in epsilons:
            found = row["epsilons"].get(key)
            cell = "-" if found is None else scores_text(found)
            if found is not None and "ceiling" in found:  # a private codec: its ceiling at this epsilon
                cell += f" (ceiling {scores_text(found['ceiling'])})"
            if found is not None and "paper_sigma" in found:
                cell += f" (sound epsilon {found['reported_epsilon']:.3g})"
            cells.append(cell)
        ceiling = "per epsilon" if row["ceiling"] is None else scores_text(row["ceiling"])
        chosen = " (chosen on validation)" if "chosen_on" in row else ""
        adjacency = "add/remove" if row.get("neighbouring") == "add_remove" else "replace-one"
        run = row.get("config_file") or "-"
        if row.get("overrides"):
            run += " with " + ", ".join(f"`{override}`" for override in row["overrides"])
        lines.append(
            f"| {row['codec']} | {row['public']} | {row['dim']} | {row.get('pixels', pixels_of(row['codec'], True))} | "
            f"{row.get('generator', 'dpswflow')} | {adjacency} | {setting_text(row)}{chosen} | {ceiling} | "
            + " | ".join(cells) + f" | {row['codec_seconds']:.0f} | {row.get('device', 'cpu')} | {run} |"
        )
    return "\n".join(lines) + "\n" + (f"\n{paper}" if paper else "")


def pixels_of(spec: str, written_before: bool = False) -> str:
    """How codec ``spec`` puts decoded images on the pixel range: a linear codec's pixel scaling (``min_max`` for
    rows ``written_before`` the rows said it, the only rule then), ``-`` for an autoencoder (its decoder's sigmoid)."""
    if not spec.startswith(("dct:", "pca:")):
        return "-"
    return "min_max" if written_before else DEFAULT_PIXEL_SCALING


ROW_KEYS = {"codec": None, "directions": None, "bins": None, "steps": None, "samples": None, "generator": "dpswflow",
            "neighbouring": "replace_one", "setting": None, "refiner_epochs": 0, "seed": 0, "fid_samples": 0, "gan": None,
            "generation_runs": 1, "public_images": None, "private_images": None, "codec_sampling": "fixed"}
"""What makes two rows the same row, with the value a row written before the key existed had."""


def row_identity(row: dict[str, Any], with_label: bool = True) -> str:
    """What makes ``row`` the row it is, as sorted JSON: its ``ROW_KEYS``, pixel rule, refiner's adversarial weight
    (read from the codec's description) and a DP-SGD codec's decode temperature; ``with_label=False`` leaves out the
    setting's label, which only names a replicate (``image_replicates.py``)."""
    identity = {key: row.get(key, default) for key, default in ROW_KEYS.items()}
    if not with_label and identity["setting"] is not None:
        identity["setting"] = {key: value for key, value in identity["setting"].items() if key != "label"}
    identity.update(pixels=row.get("pixels", pixels_of(row["codec"], written_before=True)),
                    refiner_weight=refiner_weight_in(row.get("description", "")), temperature=decode_temperature_of(row))
    return json.dumps(identity, sort_keys=True)


def replace_row(rows: list[dict[str, Any]], row: dict[str, Any]) -> list[dict[str, Any]]:
    """``rows`` with ``row`` in place of any row of the same codec and settings (``row_identity``): the epsilons
    ``row`` measured replace theirs, the others are kept, and so are the ``--set`` overrides of both runs; the row is
    marked chosen on validation only if ``row`` was."""
    kept, merged = [], dict(row)
    for old in rows:
        if row_identity(old) != row_identity(row):
            kept.append(old)
            continue
        merged = {**old, **row, "epsilons": {**old["epsilons"], **row["epsilons"]}}
        earlier = list(old.get("overrides", []))
        overrides = earlier + [item for item in row.get("overrides", []) if item not in earlier]
        if overrides:  # each run's overrides stay named beside the cells it measured
            merged["overrides"] = overrides
        if "chosen_on" not in row:
            merged.pop("chosen_on", None)
    return kept + [merged]


def write(path: Path, payload: dict[str, Any]) -> None:
    """A grid's results: ``<name>.json`` and its table ``<name>.md``."""
    write_json(path, payload)
    path.with_suffix(".md").write_text(markdown(payload))


def merge_rows(source: dict[str, Any], out: Path) -> Path:
    """Add the rows of a results payload (e.g. a GPU run's) to ``out``'s file of the same name, with the descriptions
    of the configs that wrote them; each row keeps its own ``device`` and takes the source's ``environment`` (threads,
    hardware, versions) unless it has its own. Returns the JSON path written (the Markdown beside it is rewritten)."""
    name = source.get("name") or f"image_codecs_{source['dataset']}_{source['split']}"
    path = out / f"{name}.json"
    payload = json.loads(path.read_text()) if path.exists() else {
        "name": name, "dataset": source["dataset"], "split": source["split"], "rows": []}
    for row in source["rows"]:
        if "environment" in source:
            row = {"environment": source["environment"], **row}
        payload["rows"] = replace_row(payload["rows"], row)
    if source.get("descriptions"):
        payload["descriptions"] = {**payload.get("descriptions", {}), **source["descriptions"]}
    write(path, payload)
    print(f"{len(source['rows'])} row(s) merged into {path}")
    return path

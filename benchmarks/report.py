"""The README's headline tables and ``benchmarks/RESULTS.md``, from the committed benchmark results
(``benchmarks/results/*.json``).

``python benchmarks/report.py`` rewrites the README between the ``results:start`` / ``results:end`` markers (one
headline table per modality: ``headline()``) and writes ``benchmarks/RESULTS.md`` (those tables, then every summary
table: ``results_page()``); the runners write each results file's own tables and figures (``image_runner.py``,
``table_runner.py``).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from collections.abc import Sequence
from typing import Any

from common import METHOD_NAMES, RESULTS, refiner_weight_in, sound_convention

README = Path(__file__).resolve().parent.parent / "README.md"
RESULTS_PAGE = Path(__file__).resolve().parent / "RESULTS.md"
PUBLISHED = RESULTS / "published_image_baselines.json"
"""Figures published by papers (the DPSWF paper's FID table, GS-WGAN, DP-Sinkhorn, DPDM), with their sources and
metric definitions: printed beside our runs, marked published, never run here."""
DATASET_NAMES = {"mnist": "MNIST", "fashion_mnist": "FashionMNIST"}


def marginal_headline(payload: dict[str, Any]) -> str:
    """All Adult rows with the public domain (``configs/tables/marginals_adult_discretized.toml``): ours beside the
    reference MST and AIM, scored by the ``domain_marginals`` suite."""
    from table_runner import rows_table

    info = payload["tables"]["adult_discretized"]
    return (
        f"**Tables, adult_discretized (all {info['train_rows']:,} rows, public domain), delta = {payload['delta']:g}**: "
        "our plugins with their defaults (marginal release) and the reference MST and AIM (smartnoise-synth on "
        "private-pgm, own environment, same public domain, no budget on preprocessing; measured before the table "
        "runner, whose scores are the same code's), every synthetic table scored by the same code "
        "(`benchmarks/table_metrics.py`, `domain_marginals`): mean total variation over all two-way marginals "
        "(16 levels per wide column, and the domain's full resolution), over 100 three-way marginals, TSTR AUROC "
        "(gradient boosting trained on synthetic rows, tested on the real ones), detection AUC (0.5 is best). "
        "Full table: `benchmarks/results/marginals_adult_discretized.md`; synthcity's own metrics: "
        "`benchmarks/results/synthcity_metrics_quick.md`.\n\n"
        + rows_table(payload, "adult_discretized")
    )


def refiner_label(description: str) -> str:
    """How a row's codec decodes, from its public description (``AutoencoderCodec.public_description``): no refiner
    (empty), or the refiner at its adversarial weight (per dataset since docs/flows.md, fact 74) with its averaged
    weights (the default since fact 61) or its last weights (before)."""
    if "refined by" not in description:
        return ""
    weight = refiner_weight_in(description)
    refiner = f"refiner at weight {weight}" if weight else "refiner"
    return f"{refiner}, averaged weights" if "weights averaged" in description else f"{refiner}, last weights"


def image_headline(payload: dict[str, Any]) -> str:
    """MNIST test-split CAS of the package's image path (``benchmarks/image_runner.py``: ``public_half_mnist_test`` and
    ``codecs_mnist_test``): the public-half autoencoder with its refiner, both generators and adjacencies, and the
    private codec with no public data, chosen on the validation split at each epsilon. Only rows of the configs at
    their own sizes: a quick check with ``--set`` overrides, or rows of another size, stay in the full table."""
    rows = [row for row in payload["rows"] if row.get("samples") == 10000 and not row.get("overrides") and sound_convention(row)]
    rows = sorted(rows, key=lambda row: not row["codec"].startswith("ae:"))
    lines = ["| public data | codec | generator | adjacency | ceiling | epsilon 10 | epsilon 1 |",
             "|---|---|---|---|---:|---:|---:|"]
    for row in rows:
        cells = []
        for key in ("10.0", "1.0"):
            found = row["epsilons"].get(key)
            cell = "-" if found is None else f"{found['mlp']:.1%} / {found['cnn']:.1%}"
            if found is not None and "ceiling" in found:  # a codec paid at each epsilon: its ceiling there
                cell += f" (ceiling {found['ceiling']['mlp']:.1%} / {found['ceiling']['cnn']:.1%})"
            cells.append(cell)
        adjacency = "add/remove" if row.get("neighbouring") == "add_remove" else "replace-one"
        name = METHOD_NAMES[row.get("generator", "dpswflow")]
        ceiling = "per epsilon" if row["ceiling"] is None else f"{row['ceiling']['mlp']:.1%} / {row['ceiling']['cnn']:.1%}"
        refiner = f", {refiner_label(row['description'])}" if row.get("refiner_epochs") else ""
        lines.append(f"| {row['public']} | {row['codec']} (d = {row['dim']}{refiner}) | {name} | {adjacency} | "
                     f"{ceiling} | " + " | ".join(cells) + " |")
    measured_before = any(refiner_label(row.get("description", "")).endswith("last weights") for row in rows)
    last_weights = (" (last weights: measured before the refiner's weights were averaged, docs/flows.md fact 61)"
                    if measured_before else "")
    return (
        f"**Images, {DATASET_NAMES[payload['dataset']]} test set, delta = 1e-5**: CAS (MLP / CNN) of classifiers trained "
        "on 10,000 generated (image, label) pairs. Ceiling: the private images through the codec. Each row names its "
        "public data: `ae:16:10` is the package's autoencoder trained on the public half (only the other half is "
        f"private), decoding through its refiner trained on the same public images{last_weights}; `pca:k` is a codec learned from the "
        "private images and paid from the same budget (no public data, all 60,000 images private; k and the flow's "
        "settings chosen on a validation split at each epsilon). Full table: "
        "`benchmarks/results/image_codecs_mnist_test.md`; earlier codecs and decodings: `benchmarks/results/archive/`.\n\n"
        + "\n".join(lines) + "\n"
    )


METHOD_ORDER = ("DPSWflow", "DPSWflow-r", "DPSWgen", "DP-SGD GAN")


def gpu_rows(dataset: str, folders: Sequence[Path]) -> list[dict[str, Any]]:
    """The generator rows of ``table_<dataset>/`` in each results folder laid out as ``benchmarks/gpu.sh`` writes
    them (the table stage's, then the private stage's), a codec's ceiling left out: public-half rows first, then no public data, each by epsilon (10 before 1)
    and method."""
    from gpu_report import table_rows

    rows = [row for folder in folders if (folder / f"table_{dataset}").is_dir() for row in table_rows(folder / f"table_{dataset}")
            if not row["public"].endswith("ceiling") and row["epsilon"] != "-"]
    rank = {name: index for index, name in enumerate(METHOD_ORDER)}
    return sorted(rows, key=lambda row: (row["public"].startswith("none"), -float(row["epsilon"]), rank.get(row["method"], 9)))


def gpu_table_lines(rows: list[dict[str, Any]]) -> list[str]:
    lines = ["| public data | method | epsilon | FID | CAS MLP / CNN |", "|---|---|---:|---:|---:|"]
    for row in rows:
        fid = "-" if row["fid"] is None else f"{row['fid']:.1f}"
        lines.append(f"| {row['public']} | {row['method']} | {float(row['epsilon']):g} | {fid} | "
                     f"{100 * row['cas_mlp']:.1f}% / {100 * row['cas_cnn']:.1f}% |")
    return lines


def gpu_table_headline(folders: list[Path]) -> str:
    """Every generator and the DP-SGD baseline with FID on one GPU: the table stage's folder
    (``benchmarks/gpu.sh --stages table``) and the private stage's (``--stages private``: the no-public-data rows the
    table stage did not reach), MNIST and, where measured, FashionMNIST."""
    env = json.loads((folders[0] / "env.json").read_text())
    mnist = gpu_rows("mnist", folders)
    fashion = gpu_rows("fashion_mnist", folders)
    if any((folders[0] / "table_mnist").glob("full_table_*.json")):  # the image runner's grid: the package's codec
        public_half = ("the package's autoencoder (latent 16) and its refiner, trained on the public half "
                       "(`configs/images/full_table_mnist.toml`)")
    else:  # the run before the runner: images.py's paper protocol
        public_half = ("the paper's latent-8 autoencoder trained on the public half (`images.py --full`), decoded without "
                       "a refiner (measured before it existed; docs/flows.md, fact 48)")
    measured = {(dataset, row["public"].startswith("none"), row["method"], float(row["epsilon"]))
                for dataset, rows in (("mnist", mnist), ("fashion_mnist", fashion)) for row in rows}
    # The DP-SGD GAN is a baseline of the public-half codec only: no private-codec row is expected of it.
    expected = [(False, method) for method in METHOD_ORDER] + [(True, method) for method in METHOD_ORDER[:3]]
    missing = [f"{method} at epsilon {epsilon:g}{' with the private codec' if private else ''}"
               for private, method in expected for epsilon in (10.0, 1.0) if ("mnist", private, method, epsilon) not in measured]
    if not any(not private for dataset, private, _, _ in measured if dataset == "fashion_mnist"):
        missing.append("FashionMNIST's public-half rows")
    sources = ", ".join(f"`benchmarks/results/{folder.name}/`" for folder in folders)
    text = (
        f"**Images with FID, MNIST test set, one {env['device']}, replace-one, delta = 1e-5**: every generator with "
        f"{public_half} beside the DP-SGD GAN baseline (same codec, sampling and accountant), and every generator with no "
        "public data (the private codec, paid from the same budget); FID on 10,000 generated vs the 10,000 test images."
        + (f" Not measured for want of device time: {', '.join(missing)}." if missing else "")
        + f" Full tables and how they were run: {sources}.\n\n" + "\n".join(gpu_table_lines(mnist)) + "\n"
    )
    if fashion:
        text += ("\n**The same, FashionMNIST test set** (the private codec's K = 50, chosen on FashionMNIST's validation "
                 "split):\n\n" + "\n".join(gpu_table_lines(fashion)) + "\n")
    return text


def dpsgd_codec_headline(payload: dict[str, Any], gpu_folders: Sequence[Path], cpu_folders: Sequence[Path] = ()) -> str:
    """No public data, on the CPU: the DP-SGD codec's test rows (``dpsgd_codec_<dataset>_test``: its share of the
    budget chosen on the validation split) beside the linear codec's at equal epsilon and method: the GPU table's
    no-public-data rows, and for the (method, epsilon) pairs the GPU folders have none of, the same command's rows run
    on a CPU (``cpu_folders``, laid out as the GPU folders), FID on the same 10,000 vs 10,000 protocol. Full-size rows
    only (10,000 samples, every private image). Another dataset than MNIST takes MNIST's validation choice (its config
    says so)."""
    dataset = payload["dataset"]
    chosen_on = "the validation split" if dataset == "mnist" else "MNIST's validation split (not FashionMNIST's)"
    linear = {(row["method"], float(row["epsilon"])): row for row in gpu_rows(dataset, gpu_folders)
              if row["public"].startswith("none")}
    from_cpu: set[tuple[str, float]] = set()
    for row in gpu_rows(dataset, cpu_folders):
        key = (row["method"], float(row["epsilon"]))
        if row["public"].startswith("none") and key not in linear:
            linear[key] = row
            from_cpu.add(key)
    rows = [row for row in payload["rows"]
            if row.get("samples") == 10000 and row.get("private_images") is None and sound_convention(row)]
    lines = ["| public data | codec | method | flow (L, G, steps), decode t | epsilon | FID | CAS MLP / CNN | codec alone (ceiling) | "
             "linear codec, same epsilon: FID, CAS | device | seconds (codec + fit + sample) |",
             "|---|---|---|---|---:|---:|---:|---:|---:|---|---:|"]
    cells = sorted(((row, float(key), cell) for row in rows for key, cell in row["epsilons"].items()),
                   key=lambda item: (-item[1], METHOD_ORDER.index(METHOD_NAMES[item[0]["generator"]])))
    cpu_epsilons: set[float] = set()  # the epsilons of the CPU rows shown beside a DP-SGD row
    for row, epsilon, cell in cells:
        method = METHOD_NAMES[row["generator"]]
        fid = "-" if cell.get("fid") is None else f"{cell['fid']:.1f}"
        ceiling = cell.get("ceiling") or {}
        other = linear.get((method, epsilon))
        if (method, epsilon) in from_cpu:
            cpu_epsilons.add(epsilon)
        beside = "-" if other is None else (
            f"{'-' if other['fid'] is None else format(other['fid'], '.1f')}, "
            f"{100 * other['cas_mlp']:.1f}% / {100 * other['cas_cnn']:.1f}%")
        codec = cell.get("codec_training_seconds", cell.get("codec_seconds", 0.0))  # a cached codec: its own training
        seconds = codec + cell.get("fit_seconds", 0.0) + cell.get("sample_seconds", 0.0)
        setting = row["setting"]
        flow = (f"{setting.get('directions') or 'default'}, {setting['bins']}, {setting['steps']}, "
                f"{row.get('decode_temperature', 1.0):g}")  # rows written before it was recorded: t = 1
        batches = "Poisson" if row.get("codec_sampling") == "poisson" else "fixed-size"  # the codec's DP-SGD batches
        lines.append(f"| {row['public']} | {row['codec']} (d = {row['dim']}), {batches} | {method} | {flow} | {epsilon:g} | {fid} | "
                     f"{cell['mlp']:.1%} / {cell['cnn']:.1%} | "
                     + (f"{ceiling['mlp']:.1%} / {ceiling['cnn']:.1%}" if ceiling else "-")
                     + f" | {beside} | {row.get('device', 'cpu')} | {seconds:.0f} |")
    return (
        f"**Images without public data, a codec trained by DP-SGD on the CPU, {DATASET_NAMES[dataset]} test set, "
        "replace-one, delta = 1e-5**: a convolutional autoencoder trained on the private images by DP-SGD "
        "(`image_codec=\"private-autoencoder\"`; privacy.md, \"A private image codec trained by DP-SGD\") on fixed-size "
        "batches accounted by the replace-one RDP bound, or on Poisson batches accounted with the releases by the "
        "antipodal pair (the codec column says which; Poisson is the default since docs/flows.md's fact 136), its share of the "
        f"budget chosen on {chosen_on} at epsilon 10 and used at every epsilon, all 60,000 training images private, "
        "wall seconds on 2 CPU cores shared with other jobs; FID on 10,000 "
        "generated vs the 10,000 test images where measured, CAS of classifiers trained on 10,000 generated pairs. "
        "Beside each row, the linear private codec's (`private-pca`) at the same epsilon and method from the GPU table "
        "above" + (f" (epsilon {', '.join(f'{epsilon:g}' for epsilon in sorted(cpu_epsilons, reverse=True))}: the same "
                   "command on a CPU, "
                   + ", ".join(f"`benchmarks/results/{folder.name}/`" for folder in cpu_folders) + ")" if cpu_epsilons else "")
        + f". Full table: `benchmarks/results/{payload['name']}.md`.\n\n" + "\n".join(lines) + "\n"
    )


def cli_fid_headline(paths: list[Path]) -> str:
    """The ``dpswf images --fid-samples 10000`` runs kept in the results (``dpswf_images_*_fid10k.json``): FID on the
    literature's protocol with the package's defaults, on whatever machine ran them."""
    lines = ["| public data | method | adjacency | epsilon | delta | FID | precision / recall | CAS MLP / CNN | device | "
             "file |", "|---|---|---|---:|---:|---:|---|---:|---|---|"]
    for path in paths:
        run = json.loads(path.read_text())
        config = run["config"]
        adjacency = "add/remove" if config["neighbouring"] == "add_remove" else "replace-one"
        refiner = refiner_label(run["public"])
        lines.append(
            f"| {run['assumption']}{f' ({refiner})' if refiner else ''} | {METHOD_NAMES[config['generator']]} | "
            f"{adjacency} | {config['epsilon']:g} | {config['delta']:g} | {run['fid']:.1f} | {run['precision']:.2f} / {run['recall']:.2f} | "
            f"{100 * run['cas']['mlp']:.1f}% / {100 * run['cas']['cnn']:.1f}% | {config['device']} | `{path.stem}` |"
        )
    return (
        "**Images with FID, `dpswf images --fid-samples 10000`** (the command's defaults but for the options each "
        "file's `.txt` names in its first line, with the printed report; FID on 10,000 generated vs the 10,000 test "
        "images):\n\n" + "\n".join(lines) + "\n"
    )


USER_TABLE_COLUMNS = (("dpswflow", "none"), ("dpswflow", "schema"), ("dpswflow_r", "none"), ("dpswflow_r", "schema"))
SYNTHCITY_KEYS = ("performance.xgb.syn_id", "detection.detection_xgb.mean")
"""synthcity's own TSTR (XGBoost trained on synthetic rows, tested on real ones) and detection, beside the package's
(``table_metrics.QuantileCellMetrics.synthcity_scores``)."""


def summary_rows(payload: dict[str, Any], name: str) -> list[dict[str, Any]]:
    """The rows a summary table reads: one table's at epsilon 1, replace-one, fitted with ``fit(df)`` (a row with
    the target named is in the results file's full table)."""
    from table_runner import target_mode

    return [row for row in payload["results"] if row["table"] == name and row["epsilon"] == 1.0
            and row.get("neighbouring", "replace_one") == "replace_one" and target_mode(row) != "named"]


def synthcity_pair(scores: dict[str, Any] | None) -> str:
    """synthcity's TSTR xgb / detection xgb of a row's (or a floor's) scores; "-" for each one not measured (rows
    of runs before these metrics)."""
    from table_runner import number

    if scores is None:
        return "-"
    return " / ".join(number(scores.get(key)) for key in SYNTHCITY_KEYS)


def synthcity_cell(row: dict[str, Any] | None) -> str:
    if row is None:
        return "-"
    return "failed" if row.get("error") else synthcity_pair(row.get("scores"))


def synthcity_table(header: list[str], lines: list[str], payload: dict[str, Any]) -> str:
    """RESULTS.md's table of synthcity's own metrics beside a section's 2-way TV table (``header``: its columns, the
    first and the peers' left-aligned), or one line where no row or floor of ``payload`` holds them yet (results of
    runs before these metrics)."""
    measured = any(key in scores for key in SYNTHCITY_KEYS for scores in [
        *(info.get("floor", {}) for info in payload["tables"].values()),
        *(row.get("scores", {}) for row in payload["results"])])
    if not measured:
        return ("Beside them, synthcity's own TSTR xgb and detection xgb (`performance.xgb.syn_id`, "
                "`detection.detection_xgb.mean`): not measured yet for these results (runs before these metrics).\n")
    align = "|" + "".join("---|" if index == 0 or "peer" in column else "---:|" for index, column in enumerate(header))
    return (
        "Beside them, synthcity's own metrics of the same rows (`Metrics.evaluate`, the real test split as ground "
        "truth), TSTR xgb / detection xgb: `performance.xgb.syn_id` (XGBoost trained on the synthetic rows, AUROC of "
        "the target rule's label, or R^2 for a numeric target, on folds of the test split) / "
        "`detection.detection_xgb.mean` (0.5 is best); the real column scores the training split as if synthetic; "
        "\"-\": not measured (rows of runs before these metrics).\n\n"
        + "\n".join(["| " + " | ".join(header) + " |", align, *lines]) + "\n"
    )


def user_tables_headline(payload: dict[str, Any]) -> str:
    """Per table of ``configs/tables/user_tables.toml``: the 2-way TV of ours without and with a schema, and of the
    best of synthcity's DP plugins that finished (with its name; the others' fates are in the full table)."""
    from table_runner import SYNTHCITY, schema_class

    schema_of = {"none": "none", "schema": "declared"}  # USER_TABLE_COLUMNS' names
    lines = ["| table | rows x columns | real test split | DPSWflow, no schema | DPSWflow, schema | DPSWflow-r, no schema "
             "| DPSWflow-r, schema | best synthcity peer |", "|---|---|---:|---:|---:|---:|---:|---|"]
    synthcity_lines = []
    for name, info in payload["tables"].items():
        rows = summary_rows(payload, name)

        def found(method: str, schema: str) -> dict[str, Any] | None:
            return next((row for row in rows if row["method"] == method and schema_class(row["schema"]) == schema_of[schema]), None)

        def tv2(method: str, schema: str) -> str:
            row = found(method, schema)
            if row is None:
                return "-"
            return "failed" if row.get("error") else f"{row['scores']['tv2']:.3f}"

        peers = [row for row in rows if row["method"] in SYNTHCITY and not row.get("error")]
        best = min(peers, key=lambda row: row["scores"]["tv2"], default=None)
        peer = "none finished" if best is None else f"{best['scores']['tv2']:.3f} ({best['method']})"
        lines.append(f"| {name} | {info['train_rows'] + info['test_rows']:,} x {info['columns']} | "
                     f"{info['floor']['tv2']:.3f} | " + " | ".join(tv2(*column) for column in USER_TABLE_COLUMNS)
                     + f" | {peer} |")
        synthcity_lines.append(f"| {name} | {synthcity_pair(info['floor'])} | "
                               + " | ".join(synthcity_cell(found(*column)) for column in USER_TABLE_COLUMNS)
                               + f" | {'none finished' if best is None else synthcity_cell(best) + ' (' + best['method'] + ')'} |")
    synthcity_header = ["table", "real training split", "DPSWflow, no schema", "DPSWflow, schema", "DPSWflow-r, no schema",
                        "DPSWflow-r, schema", "the same synthcity peer"]
    return (
        "**Tables as users bring them, epsilon = 1, delta = 1e-5**: 2-way TV (16 quantile cells per numeric column of the "
        "real training split; lower is better) of `fit(df)` with no schema (ours pay for a DP domain) and with a "
        "schema (declared from the tables' documentation; where no document gives a bound, read from the data "
        "without paying, as synthcity's own plugins always do), against the best of synthcity's `pategan`, "
        "`privbayes`, `aim` and `dpgan` that finished within its time cap. `fair` is the validation table; "
        "TSTR, detection, wall times and every peer's row: `benchmarks/results/user_tables.md`.\n\n"
        + "\n".join(lines) + "\n\n" + synthcity_table(synthcity_header, synthcity_lines, payload)
    )


def fair_peers_headline(payload: dict[str, Any]) -> str:
    """Per table of ``configs/tables/fair_peers.toml``: the 2-way TV of ours with no schema and with the categories
    declared beside the end-to-end DP peers (categories declared, bounds paid), and ours with the schema beside the
    better of each peer's two modes; the best of each group that finished, named, and how many peer cells did not
    finish."""
    from peer_runs import PEER_LABELS
    from table_runner import schema_class

    def best_row(rows: list[dict[str, Any]]) -> dict[str, Any] | None:
        return min((row for row in rows if not row.get("error")), key=lambda row: row["scores"]["tv2"], default=None)

    def best(rows: list[dict[str, Any]]) -> str:
        row = best_row(rows)
        if row is None:
            return "none finished" if rows else "-"
        failed = sum(1 for row in rows if row.get("error"))
        label = PEER_LABELS.get(row["method"], row["method"])
        return f"{row['scores']['tv2']:.3f} ({label})" + (f"; {failed} did not finish" if failed else "")

    def best_synthcity(rows: list[dict[str, Any]]) -> str:
        row = best_row(rows)
        if row is None:
            return "none finished" if rows else "-"
        return f"{synthcity_cell(row)} ({PEER_LABELS.get(row['method'], row['method'])})"

    lines = ["| table | rows x columns | real test split | ours, no schema (DPSWflow / -r) | ours, categories declared "
             "(DPSWflow / -r) | best end-to-end peer | ours, schema (DPSWflow / -r) | best peer, either mode |",
             "|---|---|---:|---:|---:|---|---:|---|"]
    synthcity_lines = []
    for name, info in payload["tables"].items():
        rows = summary_rows(payload, name)

        def ours_rows(schema: str) -> dict[str, dict[str, Any]]:
            return {row["method"]: row for row in rows if row["method"] in ("dpswflow", "dpswflow_r")
                    and schema_class(row["schema"]) == schema}

        def ours(schema: str) -> str:
            found = ours_rows(schema)
            return " / ".join("-" if method not in found else "failed" if found[method].get("error")
                              else f"{found[method]['scores']['tv2']:.3f}" for method in ("dpswflow", "dpswflow_r"))

        end_to_end = [row for row in rows if row["method"] in PEER_LABELS and row["schema"].startswith("end-to-end")]
        either = [row for row in rows if row["method"] in PEER_LABELS]
        lines.append(f"| {name} | {info['train_rows'] + info['test_rows']:,} x {info['columns']} | {info['floor']['tv2']:.3f} "
                     f"| {ours('none')} | {ours('categories')} | {best(end_to_end)} | {ours('declared')} | {best(either)} |")
        synthcity_lines.append(
            f"| {name} | {synthcity_pair(info['floor'])} | "
            + " | ".join(synthcity_cell(ours_rows("none").get(method)) for method in ("dpswflow", "dpswflow_r"))
            + f" | {best_synthcity(end_to_end)} | "
            + " | ".join(synthcity_cell(ours_rows("declared").get(method)) for method in ("dpswflow", "dpswflow_r"))
            + f" | {best_synthcity(either)} |")
    synthcity_header = ["table", "real training split", "DPSWflow, no schema", "DPSWflow-r, no schema",
                        "the same end-to-end peer", "DPSWflow, schema", "DPSWflow-r, schema", "the same peer, either mode"]
    return (
        "**The fair suite: end-to-end DP pipelines, epsilon = 1, delta = 1e-5**: 2-way TV (the same code) of ours beside "
        "dpmm's PrivBayes, MST and AIM and smartnoise-synth's MST and AIM, each in its own environment, on every user "
        "table of at least 2,000 rows: ours with no schema (a DP domain paid from epsilon), and with the same "
        "categories declared (the other columns' kinds and bounds paid from epsilon), against the peers with "
        "categories declared and their bounds paid from a tenth of epsilon; ours with the schema (declared from the "
        "tables' documentation; where none gives a bound, read from the data without paying, as the peers' reference "
        "mode is given it too) against the better of each peer's two modes (its reference mode bins the documented "
        "ranges uniformly, which can lose to its paid bounds). A peer whose samples hold one class of the TSTR target "
        "scores AUROC 0.5 (a constant classifier). Each cell capped; crashes and time-outs are rows. `fair` is the validation "
        "table; every row, each peer's adjacency and what it reads without paying: `benchmarks/results/fair_peers.md`.\n\n"
        + "\n".join(lines) + "\n\n" + synthcity_table(synthcity_header, synthcity_lines, payload)
    )


def target_headline(payload: dict[str, Any]) -> str:
    """Per table of ``configs/tables/fair_peers.toml`` and adjacency: TSTR (the package's; synthcity's xgb in brackets) of
    ours with no schema fitted from a frame (``fit(df)``: no target) and from a loader naming the target, beside the real
    training split and, on the add/remove line (the adjacency every end-to-end peer states its epsilon for, PrivBayes'
    marginals included), the best end-to-end peer's (epsilon 1); "-" where a row is not in the results."""
    from peer_runs import PEER_LABELS
    from table_runner import number, target_mode

    def tstr(row: dict[str, Any] | None) -> str:
        if row is None:
            return "-"
        if row.get("error"):
            return "failed"
        scores = row["scores"]
        return f"{number(scores.get('tstr'))} ({number(scores.get('performance.xgb.syn_id'))})"

    def ours(name: str, method: str, target: str, neighbouring: str) -> dict[str, Any] | None:
        return next((row for row in payload["results"] if row["table"] == name and row["method"] == method
                     and row["schema"] == "none" and row["epsilon"] == 1.0 and target_mode(row) == target
                     and row.get("neighbouring", "replace_one") == neighbouring), None)

    lines = ["| table | target | adjacency | real training split | DPSWflow, fit(df) | DPSWflow, target named | "
             "DPSWflow-r, fit(df) | DPSWflow-r, target named | best end-to-end peer |",
             "|---|---|---|---:|---:|---:|---:|---:|---|"]
    for name, info in payload["tables"].items():
        peers = [row for row in payload["results"] if row["table"] == name and row["method"] in PEER_LABELS
                 and row["schema"].startswith("end-to-end") and not row.get("error")]
        best = max(peers, key=lambda row: row["scores"]["tstr"], default=None)
        floor = info["floor"]
        peer = "-" if best is None else f"{tstr(best)} ({PEER_LABELS[best['method']]})"
        for neighbouring, adjacency, compared in (("add_remove", "add/remove", peer), ("replace_one", "replace-one", "-")):
            cells = [tstr(ours(name, method, target, neighbouring)) for method in ("dpswflow", "dpswflow_r")
                     for target in ("none", "named")]
            lines.append(f"| {name} | {info['target_rule']} | {adjacency} | {number(floor.get('tstr'))} "
                         f"({number(floor.get('performance.xgb.syn_id'))}) | " + " | ".join(cells) + f" | {compared} |")
    return (
        "**A target named, the same suite**: TSTR (HistGradientBoosting trained on the synthetic rows, AUROC on the real "
        "test split; in brackets synthcity's `performance.xgb.syn_id` on the same rows) of ours with no schema at "
        "epsilon = 1, fitted from a frame (`fit(df)`: no target) and from `GenericDataLoader(df, target_column=...)` "
        "(every pair with the target measured: `target_tables=\"pairs\"`, the default), under each adjacency, beside "
        "the real training split's; the best end-to-end peer's (its TSTR) stands on the add/remove line, the adjacency "
        "its epsilon is stated for (PrivBayes: its marginals), as ours there; replace-one, the package's default, "
        "takes sqrt(2) times the noise for these counts and has no peer row. One run (seed 0) cannot order ours and "
        "the peer where they differ by less than the seeds' spread: the 6-seed table below does. Every row: "
        "`benchmarks/results/fair_peers.md`; the choices: docs/flows.md, \"A named target\".\n\n" + "\n".join(lines) + "\n"
    )


SEED_TABLES: tuple[tuple[str, str | None], ...] = (
    ("fair_seeds", None),
    ("flights_seeds", "Flights' level cell rerun at more seeds: DPSWflow-r with no schema under add/remove against "
                      "dpmm MST's end-to-end row, seeds added after the table above read it level (the added seeds "
                      "alone, a replication the decision did not see: `benchmarks/results/flights_seeds_new.md`)"),
)
"""The ``seed_spread.py`` summaries RESULTS.md shows (results file stem, and the lead of its paragraph; ``None``: the
whole suite's)."""


def seeds_headline(payload: dict[str, Any], source: str = "fair_seeds", lead: str | None = None) -> str:
    """``seed_spread.py``'s summary ``source``: per table, schema, flow and adjacency, TSTR over the seeds beside the
    peer's of the same schema class and the paired difference, mean ± standard error, under ``lead`` (default: the
    whole suite at its seeds)."""
    from peer_runs import PEER_LABELS
    from seed_spread import PEER_CLASS, order_of

    def cell(value: dict[str, Any] | None, form: str = ".3f") -> str:
        return "-" if value is None else f"{value['mean']:{form}} ± {value['error']:{form}}"

    peer = PEER_LABELS.get(payload["peer"], payload["peer"])
    flows = {"dpswflow": "DPSWflow", "dpswflow_r": "DPSWflow-r", "dpswgen": "DPSWgen"}
    peers = {(row["table"], row["schema"]): row for row in payload["rows"] if row["method"] == payload["peer"]}
    stated = {row["neighbouring"] for row in peers.values() if row["neighbouring"] != "-"}
    adjacencies = ("replace-one", "add/remove")
    lines = [f"| table | schema | method | adjacency | real training split | ours | {peer} | ours minus {peer} | order |",
             "|---|---|---|---|---:|---:|---:|---:|---|"]
    for row in payload["rows"]:
        if "tstr_minus_peer" not in row or row["target"] != "named" or row["neighbouring"] not in adjacencies:
            continue
        partner = peers.get((row["table"], PEER_CLASS[row["schema"]]))
        lines.append(f"| {row['table']} | {row['schema']} | {flows.get(row['method'], row['method'])} | "
                     f"{row['neighbouring']} | {cell(row.get('floor_tstr'))} | "
                     f"{cell(row['tstr'])} | {cell(None if partner is None else partner['tstr'])} | "
                     f"{cell(row['tstr_minus_peer'], '.4f')} | {order_of(row['tstr_minus_peer'], payload['confidence'])} |")
    seeds = ", ".join(str(seed) for seed in payload["seeds"])
    lead = lead or f"The same suite at {len(payload['seeds'])} seeds, where one run cannot order ours and {peer}"
    return (
        f"**{lead}**: TSTR with the target named over seeds {seeds}, each its own 80/20 split, noise and generation, mean ± standard error; ours "
        f"under each adjacency ({peer}'s epsilon is stated under {' and '.join(sorted(stated)) or 'none recorded'}; "
        "neither adjacency implies the other at one epsilon, and for these counts replace-one takes sqrt(2) times the "
        "noise); the peer's end-to-end row (categories declared, bounds paid) against ours with no schema "
        "and with the same categories declared, its reference row against ours with "
        "the declared schema, the difference paired per seed and read as an order beyond Student's t quantile "
        f"({payload['confidence']:.0%}, two-sided) times its standard error. "
        f"Every row: `benchmarks/results/{source}.md` (`benchmarks/seed_spread.py`).\n\n" + "\n".join(lines) + "\n"
    )


def link(path: str, root: str) -> str:
    """A Markdown link to the repository path ``path`` from a page ``root`` away from the repository root ("" for the
    README, "../" for ``benchmarks/RESULTS.md``)."""
    return f"[{path}]({root}{path})"


def fair_front_headline(payload: dict[str, Any], root: str = "") -> str:
    """The tables' headline: per table of ``configs/tables/fair_peers.toml`` at epsilon 1, DPSWflow fitted with
    ``fit(df)`` and no schema (its DP domain paid from the same epsilon) under each adjacency beside the best (by
    2-way TV) end-to-end DP peer that finished, named with the adjacency its epsilon is stated under; each cell 2-way
    TV / TSTR AUROC."""
    from peer_runs import PEER_LABELS
    from table_runner import number, target_mode

    def pair(row: dict[str, Any] | None) -> str:
        if row is None:
            return "-"
        if row.get("error"):
            return "failed"
        return f"{number(row['scores'].get('tv2'))} / {number(row['scores'].get('tstr'))}"

    def ours(name: str, neighbouring: str) -> dict[str, Any] | None:
        return next((row for row in payload["results"] if row["table"] == name and row["method"] == "dpswflow"
                     and row["schema"] == "none" and row["epsilon"] == 1.0 and target_mode(row) != "named"
                     and row.get("neighbouring", "replace_one") == neighbouring), None)

    lines = ["| table | rows x columns | real data | DPSWflow, replace-one (the default) | DPSWflow, add/remove | "
             "best end-to-end DP peer |", "|---|---|---:|---:|---:|---|"]
    for name, info in payload["tables"].items():
        peers = [row for row in payload["results"] if row["table"] == name and row["method"] in PEER_LABELS
                 and row["schema"].startswith("end-to-end") and row["epsilon"] == 1.0]
        finished = [row for row in peers if not row.get("error")]
        best = min(finished, key=lambda row: row["scores"]["tv2"], default=None)
        failed = len(peers) - len(finished)
        peer = ("none finished" if best is None else
                f"{pair(best)} ({PEER_LABELS[best['method']]}, {best['adjacency']})"
                + (f"; {failed} did not finish" if failed else ""))
        floor = info["floor"]
        lines.append(f"| {name} | {info['train_rows'] + info['test_rows']:,} x {info['columns']} | "
                     f"{number(floor.get('tv2'))} / {number(floor.get('tstr'))} | {pair(ours(name, 'replace_one'))} | "
                     f"{pair(ours(name, 'add_remove'))} | {peer} |")
    return (
        "**Tables: the fair suite, epsilon = 1, delta = 1e-5** (`benchmarks/configs/tables/fair_peers.toml`; every row: "
        f"{link('benchmarks/results/fair_peers.md', root)}). Every user table of at least 2,000 rows, one 80/20 split "
        "for all. Ours: `fit(df)` with no schema, the columns' kinds, bounds and categories paid from the same epsilon "
        "(the DP domain). The peers: the best, by 2-way TV, of the end-to-end DP pipelines that finished (dpmm's "
        "PrivBayes, MST and AIM, smartnoise-synth's MST and AIM, each in its own environment and capped per cell; "
        "categories declared, bounds paid from a tenth of epsilon), with the adjacency its epsilon is stated under. "
        "Each cell: 2-way TV (mean total variation over all two-way marginals, 16 quantile cells per numeric column; "
        "lower is better) / TSTR (AUROC on the real test split of gradient boosting trained on the synthetic rows; "
        "higher is better); real data: the real test split scored as if synthetic (TSTR trained on the real training "
        "split).\n\n" + "\n".join(lines) + "\n"
    )


def published_rows(published: dict[str, Any], key: str) -> list[dict[str, Any]]:
    return list(published.get(key, []))


def epsilon_key(value: Any) -> str:
    """An epsilon as the headline tables key it: ``inf`` or ``10``."""
    return "inf" if str(value) == "inf" else f"{float(value):g}"


PAPER_METHODS = ("DPSWgen", "DPSWflow-r", "DPSWflow")
"""The paper's FID table's rows, in its order."""
PAPER_EPSILON_KEYS = ("inf", "10", "5")


def paper_table_headline(published: dict[str, Any], runs: Sequence[tuple[Path, dict[str, Any]]], root: str = "") -> str:
    """The images' first headline: the DPSWF paper's FID table (MNIST and FashionMNIST at epsilon inf, 10 and 5) with
    ours beside each published figure where a committed run followed the paper's protocol: ``images.py --full``'s
    ``images_full.json`` of the GPU script's table stage (the paper's latent-8 autoencoder trained on the public
    half, the generators fitted on the private half with the package's releases); "-" where none did."""
    paper = {(row["dataset"], row["method"], epsilon_key(row["epsilon"])): row["fid"]
             for row in published_rows(published, "paper_fid")}
    ours: dict[tuple[str, str, str], float] = {}
    steps: dict[str, set[int]] = {}
    devices, generation_runs, fid_samples = set(), set(), set()
    for _, payload in runs:
        devices.add(payload["environment"].get("hardware") or payload["environment"]["device"])
        generation_runs.add(len(payload.get("generation_seeds", [])))
        fid_samples.add(payload["mode"]["fid_samples"])
        for row in payload["rows"]:
            fids = [run["fid"] for run in row.get("runs", []) if run.get("fid") is not None]
            ceiling = row["method"] == "autoencoder reconstruction"
            if fids and (ceiling or (row.get("convention") == "sound" and row["method"] in PAPER_METHODS)):
                key = (row["dataset"], row["method"], epsilon_key(row["target_epsilon"]))
                ours.setdefault(key, sum(fids) / len(fids))
                if not ceiling:
                    steps.setdefault(row["method"], set()).add(row["steps"])
    datasets = [dataset for dataset in DATASET_NAMES if any(key[0] == dataset for key in paper)]
    header = ["method", *(f"{DATASET_NAMES[dataset]}, ε {'∞' if key == 'inf' else key}"
                          for dataset in datasets for key in PAPER_EPSILON_KEYS)]
    lines = ["| " + " | ".join(header) + " |", "|---|" + "---:|" * (len(header) - 1)]

    def cell(value: float | None) -> str:
        return "-" if value is None else f"{value:.1f}"

    for method in PAPER_METHODS:
        lines.append(f"| {method} | " + " | ".join(
            f"{cell(ours.get((dataset, method, key)))} / {paper.get((dataset, method, key), '-')}"
            for dataset in datasets for key in PAPER_EPSILON_KEYS) + " |")
    lines.append("| the autoencoder alone (ceiling) | " + " | ".join(
        f"{cell(ours.get((dataset, 'autoencoder reconstruction', key)))} / -" for dataset in datasets
        for key in PAPER_EPSILON_KEYS) + " |")
    missing = []
    for dataset in datasets:
        keys = [key for key in PAPER_EPSILON_KEYS if not any((dataset, method, key) in ours for method in PAPER_METHODS)]
        if keys:
            missing.append(DATASET_NAMES[dataset] + ("" if len(keys) == len(PAPER_EPSILON_KEYS) else
                                                     " at ε " + " and ".join("∞" if key == "inf" else key for key in keys)))
    by_count: dict[tuple[int, ...], list[str]] = {}
    for method in ("DPSWflow", "DPSWflow-r", "DPSWgen"):
        if method in steps:
            by_count.setdefault(tuple(sorted(steps[method])), []).append(method)
    releases = ", ".join(f"{' and '.join(methods)} {' or '.join('one' if count == 1 else str(count) for count in counts)}"
                         for counts, methods in sorted(by_count.items()))  # e.g. "DPSWflow one, DPSWflow-r and DPSWgen 100"
    runs_text = " or ".join("one generation run" if count == 1 else f"{count} generation runs"
                            for count in sorted(generation_runs))
    folders = sorted({path.parent.parent.relative_to(RESULTS.parent.parent).as_posix() + "/" for path, _ in runs})
    samples = " or ".join(f"{count:,}" for count in sorted(fid_samples))
    source = published["sources"]["sebag_dpswf"]
    return (
        f"**Images: the paper's table** ({source['short']}): FID (lower is better), delta = 1e-5; each cell ours / "
        "published. Its protocol: its latent-8 autoencoder trained on the public half of the training set, the "
        f"generators fitted on the private half. Ours: the package's releases of projected histograms ({releases} per "
        f"fit), replace-one, the noise calibrated with each release's exact sensitivity, {runs_text} on one "
        f"{', '.join(sorted(devices))}, FID of {samples} generated against {samples} test images "
        f"({', '.join(link(folder, root) for folder in folders)}). Published: averaged over "
        f"{source.get('generation_runs', 'its')} generation runs, the paper's own autoencoder and FID code, its "
        "epsilon under its own noise convention (`benchmarks/paper_protocol.py`); source and quote: "
        f"{link('benchmarks/results/published_image_baselines.json', root)}."
        + (f" Not yet run under this protocol: {'; '.join(missing)}." if missing else "")
        + "\n\n" + "\n".join(lines) + "\n"
    )


def no_public_data_headline(published: dict[str, Any], dpsgd: dict[str, Any] | None, gpu_folders: Sequence[Path],
                            root: str = "") -> str:
    """The images' second headline: MNIST at epsilon 10 with no public data, DPSWflow through each codec learned from
    the private images and paid (the linear one: the GPU table's row; the DP-SGD one: its test row whose flow was
    chosen by FID on the validation split, on Poisson batches, the default) beside published GS-WGAN, DP-Sinkhorn and
    DPDM figures (``published_image_baselines.json``)."""
    lines = ["| method | FID | CAS / accuracy, CNN (MLP) | source |", "|---|---:|---:|---|"]
    for folder in gpu_folders:
        linear = next((row for row in gpu_rows("mnist", [folder]) if row["public"].startswith("none")
                       and row["method"] == "DPSWflow" and float(row["epsilon"]) == 10.0), None)
        if linear is not None:
            fid = "-" if linear["fid"] is None else f"{linear['fid']:.1f}"
            lines.append(f"| DPSWflow, linear codec (`private-pca`, the image plugins' default) | {fid} | "
                         f"{100 * linear['cas_cnn']:.1f}% ({100 * linear['cas_mlp']:.1f}%) | ours: "
                         f"{link(f'benchmarks/results/{folder.name}/', root)} |")
            break
    if dpsgd is not None:
        cells = [(row, row["epsilons"].get("10.0")) for row in dpsgd["rows"]
                 if row.get("generator") == "dpswflow" and row.get("codec_sampling") == "poisson"
                 and row.get("samples") == 10000 and row.get("private_images") is None and sound_convention(row)
                 and str(row.get("config_file", "")).endswith("_fid.toml")]
        cells = [(row, cell) for row, cell in cells if cell is not None and cell.get("fid") is not None]
        if cells:
            row, cell = cells[0]
            lines.append(f"| DPSWflow, convolutional codec trained by DP-SGD (`private-autoencoder`) | {cell['fid']:.1f} | "
                         f"{cell['cnn']:.1%} ({cell['mlp']:.1%}) | ours: "
                         f"{link('benchmarks/results/' + dpsgd['name'] + '.md', root)} |")
    for row in published_rows(published, "no_public_data"):
        lines.append(f"| {row['method']} | {row['fid']:g} | {row['acc_cnn']:g}% ({row['acc_mlp']:g}%) | "
                     f"published: {published['sources'][row['source']]['short']} |")
    return (
        "**Images without public data: MNIST, epsilon = 10, delta = 1e-5.** Ours: DPSWflow, replace-one, all 60,000 "
        "training images private, through a codec learned from them and paid from the same budget, settings chosen "
        "on a validation split; FID of 10,000 generated against the 10,000 test images (lower is better), CAS: "
        "accuracy on the test images of a CNN (and an MLP) trained on 10,000 generated (image, label) pairs. "
        "Published (not run here): each method's figures as the DPDM paper's Table 1 gives them, with their own FID "
        "code, sample counts, classifiers and accounting; sources, quotes and metric definitions: "
        f"{link('benchmarks/results/published_image_baselines.json', root)}.\n\n" + "\n".join(lines) + "\n"
    )


def headline(root: str = "") -> str:
    """The README's results section: one headline table for tables, the paper's table and the no-public-data table
    for images, from the committed results (links from a page ``root`` away from the repository root)."""
    parts = []
    fair = RESULTS / "fair_peers.json"
    if fair.exists():
        parts.append(fair_front_headline(json.loads(fair.read_text()), root))
    published = json.loads(PUBLISHED.read_text()) if PUBLISHED.exists() else {"sources": {}}
    runs = [(path, json.loads(path.read_text())) for path in sorted((RESULTS / "gpu_table").glob("table_*/images_full.json"))]
    if published.get("paper_fid"):
        parts.append(paper_table_headline(published, runs, root))
    gpu_folders = [RESULTS / name for name in ("gpu_table", "gpu_private") if (RESULTS / name / "env.json").exists()]
    dpsgd = RESULTS / "dpsgd_codec_mnist_test.json"
    if published.get("no_public_data"):
        parts.append(no_public_data_headline(published, json.loads(dpsgd.read_text()) if dpsgd.exists() else None,
                                             gpu_folders, root))
    return "\n".join(parts)


def summary_tables() -> str:
    """Every summary table of the committed results (the README's results section before it kept one headline per
    modality), as ``benchmarks/RESULTS.md`` shows them."""
    parts = []
    codecs = RESULTS / "image_codecs_mnist_test.json"
    if codecs.exists():
        parts.append(image_headline(json.loads(codecs.read_text())))
    gpu_folders = [RESULTS / name for name in ("gpu_table", "gpu_private") if (RESULTS / name / "env.json").exists()]
    if gpu_folders and (gpu_folders[0] / "table_mnist").is_dir():
        parts.append(gpu_table_headline(gpu_folders))
    cpu_folders = (RESULTS / "cpu_private",) if (RESULTS / "cpu_private").is_dir() else ()
    for dpsgd in sorted(RESULTS.glob("dpsgd_codec_*_test.json")):
        parts.append(dpsgd_codec_headline(json.loads(dpsgd.read_text()), gpu_folders, cpu_folders))
    cli_fid = sorted(RESULTS.glob("dpswf_images_*_fid10k.json"))
    if cli_fid:
        parts.append(cli_fid_headline(cli_fid))
    marginals = RESULTS / "marginals_adult_discretized.json"
    if marginals.exists():
        parts.append(marginal_headline(json.loads(marginals.read_text())))
    users = RESULTS / "user_tables.json"
    if users.exists():
        parts.append(user_tables_headline(json.loads(users.read_text())))
    fair = RESULTS / "fair_peers.json"
    if fair.exists():
        parts.append(fair_peers_headline(json.loads(fair.read_text())))
        parts.append(target_headline(json.loads(fair.read_text())))
    for source, lead in SEED_TABLES:
        seeds = RESULTS / f"{source}.json"
        if seeds.exists():
            parts.append(seeds_headline(json.loads(seeds.read_text()), source, lead))
    return "\n".join(parts)


def results_page() -> str:
    """``benchmarks/RESULTS.md``: the README's headline tables, then every summary table."""
    return (
        "# Results\n\n"
        "Generated by `python benchmarks/report.py` from the committed results in `benchmarks/results/` (do not edit by "
        "hand: rerun it). The README shows the headline tables; every table follows them here. Every command and suite "
        "is in [benchmarks/README.md](README.md), and the measured facts behind the defaults are in "
        "[docs/flows.md](../docs/flows.md). Under replace-one, the tables' DPSWflow-r and DPSWgen rows draw Poisson "
        "batches, the default since docs/flows.md's fact 132 (rerun: fact 133); the image rows of DPSWflow-r were "
        "measured on the fixed-size batches before it. The DP-SGD codec's own training draws Poisson batches under "
        "replace-one since fact 136 (0.45 of the noise; privacy.md, \"A private image codec trained by DP-SGD\"), and "
        "the releases after it with it; its table's codec column says which batches each row's codec drew.\n\n"
        "## Headline tables\n\n" + headline("../") + "\n## Every table\n\n" + summary_tables()
    )


def update_readme() -> None:
    text = README.read_text()
    start, end = "<!-- results:start -->", "<!-- results:end -->"
    if start not in text or end not in text:
        raise SystemExit(f"README.md needs the markers {start} and {end} around the results section.")
    body = f"{start}\n<!-- generated by `python benchmarks/report.py` from benchmarks/results/*.json -->\n\n{headline()}\n\n{end}"
    README.write_text(re.sub(re.escape(start) + ".*?" + re.escape(end), lambda _: body, text, flags=re.S))


def write_results_page() -> None:
    RESULTS_PAGE.write_text(results_page())


if __name__ == "__main__":
    update_readme()
    write_results_page()

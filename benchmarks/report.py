"""Tables and figures from the benchmark results (``benchmarks/results/*.json``), and the README's headline.

``python benchmarks/report.py`` rewrites the README between the ``results:start`` / ``results:end`` markers
from the newest results (full if present, else quick); the suites call the other functions themselves.
``python benchmarks/report.py --merge A.json B.json ...`` first joins runs of one suite split over
invocations (``--datasets`` / ``--tables``) into ``benchmarks/results/<suite>_<mode>.{json,md}``.
"""

from __future__ import annotations

import json
import math
import re
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import RESULTS, mean_std  # noqa: E402

README = Path(__file__).resolve().parent.parent / "README.md"
DATASET_NAMES = {"mnist": "MNIST", "fashion_mnist": "FashionMNIST"}
HEADLINE_EPSILON = "10"


def epsilon_key(value: Any) -> str:
    return "inf" if value in ("inf", math.inf) else f"{float(value):g}"


def epsilon_label(key: str) -> str:
    return "∞" if key == "inf" else key


def metric(row: dict[str, Any], name: str) -> list[float]:
    return [run[name] for run in row["runs"] if run.get(name) is not None]


def grid(rows: list[dict[str, Any]], name: str, methods: list[str], epsilons: list[str], scale: float = 1.0) -> str:
    """A Markdown table: methods down, epsilons across, "mean ± std" of ``scale`` times ``name`` over runs."""
    lines = ["| method | " + " | ".join(f"ε = {epsilon_label(e)}" for e in epsilons) + " |",
             "|---|" + "---:|" * len(epsilons)]
    for method in methods:
        cells = []
        for epsilon in epsilons:
            found = [r for r in rows if r["method"] == method and epsilon_key(r["target_epsilon"]) == epsilon]
            cells.append(mean_std([scale * value for value in metric(found[0], name)]) if found else "-")
        lines.append(f"| {method} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def image_tables(payload: dict[str, Any], dataset: str) -> dict[str, str]:
    rows = [r for r in payload["rows"] if r["dataset"] == dataset and r["convention"] != "paper"]
    methods = list(dict.fromkeys(r["method"] for r in rows))
    epsilons = sorted({epsilon_key(r["target_epsilon"]) for r in rows}, key=lambda e: -math.inf if e == "inf" else -float(e))
    names = ("fid", "cas", "cas_cnn", "precision", "recall")
    return {name: grid(rows, name, methods, epsilons, 100.0 if name.startswith("cas") else 1.0) for name in names}


def reproduction_table(payload: dict[str, Any], dataset: str) -> str:
    """The paper's FIDs beside ours under its convention and under the sound accountant."""
    rows = [r for r in payload["rows"] if r["dataset"] == dataset]

    def find(method: str, convention: str, epsilon: str) -> dict[str, Any] | None:
        found = [r for r in rows if r["method"] == method and r["convention"] == convention
                 and epsilon_key(r["target_epsilon"]) == epsilon]
        return found[0] if found else None

    sound_scheme = {"DPSWflow-r": "DPSWflow-r projected once", "DPSWgen": None, "DPSWflow": None}
    lines = ["| method | ε | paper FID | ours, paper's convention (sound ε of its noise) | ours, sound: paper's scheme | "
             "ours, sound: package default |", "|---|---:|---:|---:|---:|---:|"]
    for method, paper in payload["paper_fid"][dataset].items():
        for index, epsilon in enumerate(("inf", "10", "5")):
            if epsilon == "inf":  # no noise: the conventions coincide
                convention = find(sound_scheme[method] or method, "sound", epsilon)
            else:
                convention = find(method, "paper", epsilon)
            convention_cell = "-"
            if convention is not None:
                sound = convention.get("epsilon", "inf")
                convention_cell = f"{mean_std(metric(convention, 'fid'))} (ε = {epsilon_label(epsilon_key(sound)) if sound == 'inf' else f'{float(sound):.3g}'})"
            scheme = find(sound_scheme[method], "sound", epsilon) if sound_scheme[method] else None
            default = find(method, "sound", epsilon)
            lines.append(
                f"| {method} | {epsilon_label(epsilon)} | {paper[index]} | {convention_cell} | "
                f"{mean_std(metric(scheme, 'fid')) if scheme else '-'} | {mean_std(metric(default, 'fid')) if default else '-'} |"
            )
    return "\n".join(lines)


def run_header(payload: dict[str, Any], title: str) -> list[str]:
    """The title and the line that says where, when and with what a suite ran."""
    mode, env = payload["mode"], payload["environment"]
    versions = ", ".join(f"{name} {env['versions'][name]}" for name in ("torch", "opacus", "synthcity"))
    return [
        f"# {title} ({mode['name']} mode)\n",
        f"{env['device']} ({env['hardware']}, {env['cpu_threads']} CPU threads), {versions}, {env['date']}; "
        f"wall time {payload['wall_seconds'] / 60:.0f} min.",
    ]


def image_markdown(payload: dict[str, Any]) -> str:
    mode = payload["mode"]
    parts = run_header(payload, "Image benchmark") + [
        f"delta = {payload['delta']:g}. DPSWflow, DPSWflow-r, DPSWgen: the package defaults (class-conditional "
        f"projected-histogram releases; DPSWflow one release of L = 500 directions, G = 16 bins; DPSWflow-r and DPSWgen "
        f"K = 100 releases of b = n/10 records on M = 50 directions), plain flow of h = 1, "
        f"{mode.get('flow_steps', 1500)} steps. Rows named 'record' or 'projected': b = {payload['batch_size']}, "
        f"{mode['passes']:g} passes, {mode['n_steps']} steps of h = 3 (pooled unless 'once'). {mode['n_samples']} "
        f"samples per run; DP-SGD GAN: {mode['gan_epochs']:g} epochs. "
        f"Mean ± std over the generation runs of one fit (seeds {payload['generation_seeds']}; their number per "
        "dataset below). "
        f"FID and precision/recall (k = 3) on {mode['fid_samples']} generated vs {mode['fid_samples']} test images "
        "(FID is biased upwards at small N: compare within a table); CAS: an MLP trained on the "
        f"{mode['n_samples']} generated pairs, accuracy on {'the ' if mode.get('n_test') is None else 'the first '}"
        f"{mode.get('n_test') or 10_000:,} test images.",
        "Every private row reports an Opacus RDP epsilon at or below its target (values and the dp-accounting "
        "bound are in the JSON).\n",
    ]
    for dataset, info in payload["datasets"].items():
        tables = image_tables(payload, dataset)
        name = DATASET_NAMES[dataset]
        parts += [
            f"## {name}\n",
            f"**Public-data assumption: {info.get('assumption', 'autoencoder trained on the public half of ' + name)}.** "
            f"{info['n_private']} private records (d = {info['record_dim']}); codec: {info['autoencoder']}; "
            f"{info.get('mode', mode)['runs']} generation run(s) per method. "
            "The reconstruction row is the private images through the codec: the ceiling of every method.\n",
            f"### FID (lower is better)\n\n{tables['fid']}\n",
            f"### CAS, MLP classifier, % (higher is better; chance is 10%)\n\n{tables['cas']}\n",
            f"### CAS, CNN classifier, % (the literature's kind of classifier)\n\n{tables['cas_cnn']}\n",
            f"### Precision\n\n{tables['precision']}\n", f"### Recall\n\n{tables['recall']}\n",
        ]
        if dataset in payload["paper_fid"]:
            parts += [
                f"### {name}: the paper's table beside ours\n",
                "Paper's convention: sigma = Opacus' noise multiplier for the target (epsilon, q, K), used as the noise "
                "std of the projected release (Delta taken as 1); the sound epsilon of that noise (Delta = 2 ||Theta||_2) "
                "is in brackets. Paper's scheme, sound: projected releases used once, noise calibrated with the exact "
                "Delta. Package default: projected-histogram releases. The paper's FIDs come from another autoencoder, more "
                "samples and its own Inception pipeline: compare columns within our runs, not with the paper's values.\n",
                reproduction_table(payload, dataset) + "\n",
            ]
    return "\n".join(parts)


def image_figures(payload: dict[str, Any], out: Path) -> list[Path]:
    """FID and CAS against epsilon, one PNG per dataset."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    paths = []
    for dataset in payload["datasets"]:
        rows = [r for r in payload["rows"] if r["dataset"] == dataset and r["convention"] == "sound"
                and r["method"] != "autoencoder reconstruction"]
        epsilons = sorted({epsilon_key(r["target_epsilon"]) for r in rows if r["target_epsilon"] != "inf"}, key=float)
        epsilons += ["inf"] if any(r["target_epsilon"] == "inf" for r in rows) else []
        figure, axes = plt.subplots(1, 2, figsize=(11, 4))
        for method in dict.fromkeys(r["method"] for r in rows):
            for axis, name in zip(axes, ("fid", "cas")):
                xs, means, stds = [], [], []
                for position, epsilon in enumerate(epsilons):
                    found = [r for r in rows if r["method"] == method and epsilon_key(r["target_epsilon"]) == epsilon]
                    if found:
                        values = metric(found[0], name)
                        mean = sum(values) / len(values)
                        xs.append(position)
                        means.append(mean)
                        stds.append(math.sqrt(sum((v - mean) ** 2 for v in values) / max(1, len(values) - 1)))
                axis.errorbar(xs, means, yerr=stds, marker="o", capsize=3, label=method)
        for axis, name in zip(axes, ("FID (lower is better)", "CAS (higher is better)")):
            axis.set_xticks(range(len(epsilons)), [epsilon_label(e) for e in epsilons])
            axis.set_xlabel("epsilon (delta = 1e-5)")
            axis.set_ylabel(name)
            axis.grid(alpha=0.3)
        axes[1].legend(fontsize=7)
        figure.suptitle(f"{DATASET_NAMES[dataset]} ({payload['mode']['name']} mode)")
        figure.tight_layout()
        path = out / f"{payload.get('stem', 'images_' + payload['mode']['name'])}_{dataset}_fid_cas.png"
        figure.savefig(path, dpi=110)
        plt.close(figure)
        paths.append(path)
    return paths


TABULAR_COLUMNS = {  # synthcity key -> column title
    "detection.detection_xgb.mean": "detection AUC (0.5 best)",
    "performance.xgb.syn_id": "TSTR xgb AUROC",
    "performance.xgb.gt": "real xgb AUROC",
    "stats.jensenshannon_dist.marginal": "JS dist",
    "stats.wasserstein_dist.joint": "Wasserstein",
    "stats.alpha_precision.delta_precision_alpha_OC": "α-precision",
    "stats.alpha_precision.delta_coverage_beta_OC": "β-recall",
    "stats.prdc.precision": "precision",
    "stats.prdc.coverage": "coverage",
}
HEADLINE_TABULAR = ("adult_discretized", 3.0)


def tabular_cells(row: dict[str, Any], columns: list[str], time_limit: float | None) -> list[str]:
    error = row["error"]
    if not error and not row["scores"]:  # synthcity's Benchmarks logs a plugin's exception and returns nothing
        over = time_limit and row["seconds"] >= time_limit
        error = "over the time limit" if over else "no scores: synthcity caught an error of the plugin"
    if error:
        return [f"failed: {error}"] + [""] * (len(columns) - 1)
    cells = []
    for key in columns:
        score = row["scores"].get(key)
        if score is None:
            cells.append("-")
        elif score["stddev"] > 0:
            cells.append(f"{score['mean']:.3f} ± {score['stddev']:.2g}")
        else:
            cells.append(f"{score['mean']:.3f}")
    return cells


def tabular_table(rows: list[dict[str, Any]], columns: list[str], time_limit: float | None = None) -> str:
    lines = ["| method | " + " | ".join(TABULAR_COLUMNS[key] for key in columns) + " | time (s) |",
             "|---|" + "---:|" * (len(columns) + 1)]
    lines += [f"| {row['method']} | " + " | ".join(tabular_cells(row, columns, time_limit)) + f" | {row['seconds']:.0f} |" for row in rows]
    return "\n".join(lines)


def tabular_markdown(payload: dict[str, Any]) -> str:
    mode = payload["mode"]
    parts = run_header(payload, "Tabular benchmark") + [
        f"delta = {payload['delta']:g} (privbayes: pure epsilon-DP); {mode['repeats']} repeat(s) of fit + evaluation "
        f"through `Benchmarks.evaluate` (mean ± std when repeated). Training lengths: ours {mode['flow_steps']} steps, dpgan "
        f"{mode['dpgan_iterations'] or 'default'} iterations, pategan {mode['pategan_iterations'] or 'default'}, aim on "
        f"{mode['aim_marginals'] or 'all'} 2-way marginals; at most {payload.get('time_limit') or 'unlimited'} s per "
        "method, table and epsilon (a method over it is reported as failed). "
        "synthcity's plugins fit their encoders on the private table (outside their guarantee); ours use the "
        "stated public domain or pay for a DP one. TSTR: trained on synthetic rows, tested on real ones."
        + (f" {payload['notes']}" if payload.get("notes") else "") + "\n",
    ]
    columns = list(TABULAR_COLUMNS)
    for table, info in payload["tables"].items():
        parts.append(f"## {table}: {info['description']}; {info['rows']} rows, {info['columns']} columns, target `{info['target']}`\n")
        for epsilon in dict.fromkeys(row["epsilon"] for row in payload["rows"]):
            rows = [row for row in payload["rows"] if row["table"] == table and row["epsilon"] == epsilon]
            parts.append(f"### epsilon = {epsilon:g}\n\n{tabular_table(rows, columns, payload.get('time_limit'))}\n")
    return "\n".join(parts)


def headline_table(payload: dict[str, Any]) -> str:
    table, epsilon = HEADLINE_TABULAR
    rows = [row for row in payload["rows"] if row["table"] == table and row["epsilon"] == epsilon]
    columns = ["detection.detection_xgb.mean", "performance.xgb.syn_id", "stats.jensenshannon_dist.marginal",
               "stats.alpha_precision.delta_precision_alpha_OC", "stats.alpha_precision.delta_coverage_beta_OC"]
    info, mode = payload["tables"][table], payload["mode"]
    return (
        f"**Tables, {table} ({info['rows']} rows), epsilon = {epsilon:g}, delta = 1e-5** ({mode['name']} mode, "
        f"{mode['repeats']} repeat(s)). All tables and epsilons: `benchmarks/results/tabular_{mode['name']}.md`.\n\n"
        + tabular_table(rows, columns, payload.get("time_limit"))
    )


MARGINAL_ORDER = ("dpswflow", "dpswflow_r", "dpswgen", "pategan", "mst (reference, smartnoise-synth)", "aim (reference, smartnoise-synth)")


ADJACENCY_OF_PEERS = {
    "mst (reference, smartnoise-synth)": "add/remove (sensitivity 1 per marginal in the reference code)",
    "aim (reference, smartnoise-synth)": "add/remove (sensitivity 1 per marginal in the reference code)",
    "pategan": "not stated by synthcity",
}
"""The adjacency each peer's epsilon is stated under, as its code computes it (ours carry theirs in each row)."""


def row_adjacency(row: dict[str, Any]) -> str:
    """The adjacency of one result row: ours as run (replace-one unless the row says otherwise), peers' from
    ``ADJACENCY_OF_PEERS``."""
    if row["method"] in ADJACENCY_OF_PEERS:
        return ADJACENCY_OF_PEERS[row["method"]]
    return "add/remove" if row.get("neighbouring") == "add_remove" else "replace-one"


def marginal_table(payload: dict[str, Any]) -> str:
    """The marginal benchmark's table (``benchmarks/marginals.py``): the real-rows floor, then every method per
    epsilon, with the adjacency its epsilon is stated under."""
    floor = payload["floor"]
    lines = ["| method | adjacency | epsilon | 2-way TV coarse | 2-way TV full | 3-way TV coarse | TSTR AUROC | detection AUC | wall time (s) |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|",
             f"| real rows, half vs half | - | - | {floor['tv2_coarse']:.3f} | {floor['tv2_full']:.3f} | {floor['tv3_coarse']:.3f} | "
             f"{floor['tstr_auroc']:.3f} | {floor['detection']:.3f} | - |"]
    rank = {name: index for index, name in enumerate(MARGINAL_ORDER)}
    for row in sorted(payload["results"], key=lambda r: (r["epsilon"], rank.get(r["method"], len(rank)), row_adjacency(r))):
        if row.get("error"):
            lines.append(f"| {row['method']} | {row_adjacency(row)} | {row['epsilon']:g} | failed: {row['error']} | | | | | |")
            continue
        s = row["scores"]
        lines.append(
            f"| {row['method']} | {row_adjacency(row)} | {row['epsilon']:g} | {s['tv2_coarse']:.3f} | {s['tv2_full']:.3f} | "
            f"{s['tv3_coarse']:.3f} | {s['tstr_auroc']:.3f} | {s['detection']:.3f} | {row['seconds']:.0f} |"
        )
    return "\n".join(lines) + "\n"


def marginal_headline(payload: dict[str, Any]) -> str:
    return (
        f"**Tables, {payload['table']} (all {payload['rows_used']:,} rows, public domain), delta = {payload['delta']:g}**: "
        "our plugins with their defaults (marginal release) and the reference MST and AIM (smartnoise-synth on "
        "private-pgm, own environment, same public domain, no budget on preprocessing), every synthetic table "
        "scored by the same code (`benchmarks/marginals.py`): mean total variation over all two-way marginals "
        "(16 levels per wide column, and the domain's full resolution), over 100 three-way marginals, TSTR AUROC "
        "(gradient boosting trained on synthetic rows, tested on the real ones), detection AUC (0.5 is best). "
        f"Full table: `benchmarks/results/marginals_{payload['table']}.md`; synthcity's own metrics on 2,000-row "
        "subsamples, measured with the earlier record-release default: `benchmarks/results/tabular_quick.md`."
        + (f" {payload['notes']}" if payload.get("notes") else "") + "\n\n"
        + marginal_table(payload)
    )


def newest(suite: str) -> dict[str, Any] | None:
    for mode in ("full", "quick"):
        path = RESULTS / f"{suite}_{mode}.json"
        if path.exists():
            return json.loads(path.read_text())
    return None


def image_headline(payload: dict[str, Any]) -> str:
    """MNIST test-split CAS of the package's image path (``benchmarks/image_runner.py``: ``public_half_mnist_test`` and
    ``codecs_mnist_test``): the public-half autoencoder with its refiner, both generators and adjacencies, and the
    private codec with no public data, chosen on the validation split at each epsilon. Only rows of the configs at
    their own sizes: a quick check with ``--set`` overrides, or rows of another size, stay in the full table."""
    rows = [row for row in payload["rows"] if row.get("samples") == 10000 and not row.get("overrides")]
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
        name = GENERATOR_NAMES[row.get("generator", "dpswflow")]
        ceiling = "per epsilon" if row["ceiling"] is None else f"{row['ceiling']['mlp']:.1%} / {row['ceiling']['cnn']:.1%}"
        refiner = ", refiner" if row.get("refiner_epochs") else ""
        lines.append(f"| {row['public']} | {row['codec']} (d = {row['dim']}{refiner}) | {name} | {adjacency} | "
                     f"{ceiling} | " + " | ".join(cells) + " |")
    return (
        f"**Images, {DATASET_NAMES[payload['dataset']]} test set, delta = 1e-5**: CAS (MLP / CNN) of classifiers trained "
        "on 10,000 generated (image, label) pairs. Ceiling: the private images through the codec. Each row names its "
        "public data: `ae:16:10` is the package's autoencoder trained on the public half (only the other half is "
        "private), decoding through its refiner trained on the same public images; `pca:k` is a codec learned from the "
        "private images and paid from the same budget (no public data, all 60,000 images private; k and the flow's "
        "settings chosen on a validation split at each epsilon). Full table: "
        "`benchmarks/results/image_codecs_mnist_test.md`; earlier codecs and decodings: `benchmarks/results/archive/`.\n\n"
        + "\n".join(lines) + "\n"
    )


def gpu_table_headline(folder: Path) -> str:
    """Every generator and the DP-SGD baseline on MNIST with FID (``benchmarks/gpu.sh --stages table``)."""
    from gpu_report import table_rows

    env = json.loads((folder / "env.json").read_text())
    lines = ["| public data | method | epsilon | FID | CAS MLP / CNN |", "|---|---|---:|---:|---:|"]
    for row in table_rows(folder / "table_mnist"):
        if row["public"].endswith("ceiling") or row["epsilon"] == "-":  # a codec's ceiling, not a generator's row
            continue
        epsilon = float(row["epsilon"])
        fid = "-" if row["fid"] is None else f"{row['fid']:.1f}"
        lines.append(f"| {row['public']} | {row['method']} | {epsilon:g} | {fid} | "
                     f"{100 * row['cas_mlp']:.1f}% / {100 * row['cas_cnn']:.1f}% |")
    if any((folder / "table_mnist").glob("full_table_*.json")):  # the image runner's grid: the package's codec
        public_half = ("the package's autoencoder (latent 16) and its refiner, trained on the public half "
                       "(`configs/images/full_table_mnist.toml`)")
        missing = ""
    else:  # the run before the runner: images.py's paper protocol
        public_half = ("the paper's latent-8 autoencoder trained on the public half (`images.py --full`), decoded without "
                       "a refiner (measured before it existed; docs/flows.md, fact 43)")
        missing = (" Not measured for want of device time: the GAN at epsilon 1, the per-step generators with the "
                   "private codec, FashionMNIST.")
    return (
        f"**Images with FID, MNIST test set, one {env['device']}, replace-one, delta = 1e-5**: every generator with "
        f"{public_half} beside the DP-SGD GAN baseline (same codec, sampling and accountant), and DPSWflow with no "
        "public data (the private codec); FID on 10,000 generated vs the 10,000 test images." + missing
        + " Full table and how it was run: `benchmarks/results/gpu_table/`.\n\n" + "\n".join(lines) + "\n"
    )


GENERATOR_NAMES = {"dpswflow": "DPSWflow", "dpswflow_r": "DPSWflow-r", "dpswgen": "DPSWgen"}
USER_TABLE_COLUMNS = (("dpswflow", "none"), ("dpswflow", "schema"), ("dpswflow_r", "none"), ("dpswflow_r", "schema"))


def user_tables_headline(payload: dict[str, Any]) -> str:
    """Per table of ``benchmarks/user_tables.py``: the 2-way TV of ours without and with a schema, and of the best
    of synthcity's DP plugins that finished (with its name; the others' fates are in the full table)."""
    lines = ["| table | rows x columns | real test split | DPSWflow, no schema | DPSWflow, schema | DPSWflow-r, no schema "
             "| DPSWflow-r, schema | best synthcity peer |", "|---|---|---:|---:|---:|---:|---:|---|"]
    for name, info in payload["tables"].items():
        rows = [row for row in payload["results"] if row["table"] == name and row["epsilon"] == 1.0]

        def tv2(method: str, schema: str) -> str:
            found = [row for row in rows if row["method"] == method and (row["schema"] == "none") == (schema == "none")]
            if not found:
                return "-"
            return "failed" if found[0].get("error") else f"{found[0]['scores']['tv2']:.3f}"

        peers = [row for row in rows if row["method"] not in GENERATOR_NAMES and not row.get("error")]
        best = min(peers, key=lambda row: row["scores"]["tv2"], default=None)
        peer = "none finished" if best is None else f"{best['scores']['tv2']:.3f} ({best['method']})"
        lines.append(f"| {name} | {info['train_rows'] + info['test_rows']:,} x {info['columns']} | "
                     f"{info['floor']['tv2']:.3f} | " + " | ".join(tv2(*column) for column in USER_TABLE_COLUMNS)
                     + f" | {peer} |")
    return (
        "**Tables as users bring them, epsilon = 1, delta = 1e-5**: 2-way TV (16 quantile cells per numeric column of the "
        "real training split; lower is better) of `fit(df)` with no schema (ours pay for a DP domain) and with a "
        "schema (declared from the tables' documentation; where no document gives a bound, read from the data "
        "without paying, as synthcity's own plugins always do), against the best of synthcity's `pategan`, "
        "`privbayes`, `aim` and `dpgan` that finished within its time cap. `fair` is the validation table; "
        "TSTR, detection, wall times and every peer's row: `benchmarks/results/user_tables.md`.\n\n"
        + "\n".join(lines) + "\n"
    )


def headline() -> str:
    """The README's results section, from the committed results."""
    parts = []
    codecs = RESULTS / "image_codecs_mnist_test.json"
    if codecs.exists():
        parts.append(image_headline(json.loads(codecs.read_text())))
    gpu_table = RESULTS / "gpu_table"
    if (gpu_table / "table_mnist").is_dir():
        parts.append(gpu_table_headline(gpu_table))
    marginals = RESULTS / "marginals_adult_discretized.json"
    if marginals.exists():
        parts.append(marginal_headline(json.loads(marginals.read_text())))
    users = RESULTS / "user_tables.json"
    if users.exists():
        parts.append(user_tables_headline(json.loads(users.read_text())))
    return "\n".join(parts)


def merge(paths: list[Path]) -> dict[str, Any]:
    """One payload from runs of one suite and mode split over invocations (e.g. ``--datasets`` or ``--tables``
    on different machines): rows and per-dataset (per-table) facts are joined (where two runs hold the same
    dataset, the later file's rows replace the earlier's), wall times added, and each part's environment kept."""
    parts = [json.loads(path.read_text()) for path in paths]
    first = parts[0]
    key = "datasets" if first["suite"] == "images" else "tables"
    for part in parts[1:]:
        if part["suite"] != first["suite"] or part["mode"]["name"] != first["mode"]["name"]:
            raise SystemExit(f"{paths[0]} and the others differ in suite or mode; merge runs of one suite and mode only.")
        if part.get("codec", "public-half") != first.get("codec", "public-half"):
            raise SystemExit(f"{paths[0]} and the others differ in --codec (public data); merge runs of one codec only.")
    owner = {name: index for index, part in enumerate(parts) for name in part[key]}  # a later run of a dataset wins
    merged = dict(first)
    # Each dataset (table) keeps the mode of the run that measured it (e.g. a different number of runs).
    merged[key] = {name: {**parts[index][key][name], "mode": parts[index]["mode"]} for name, index in owner.items()}
    merged["rows"] = [row for index, part in enumerate(parts) for row in part["rows"]
                      if owner[row.get("dataset", row.get("table"))] == index]
    merged["wall_seconds"] = sum(part["wall_seconds"] for part in parts)
    merged["parts"] = [{"file": str(path), key: list(part[key]), "environment": part["environment"]} for path, part in zip(paths, parts)]
    return merged


def write_suite(payload: dict[str, Any]) -> None:
    """Write a (merged) payload's JSON, Markdown and figures under ``benchmarks/results``."""
    from common import write_json

    stem = payload.get("stem", f"{payload['suite']}_{payload['mode']['name']}")
    write_json(RESULTS / f"{stem}.json", payload)
    if payload["suite"] == "images":
        (RESULTS / f"{stem}.md").write_text(image_markdown(payload))
        image_figures(payload, RESULTS)
    else:
        (RESULTS / f"{stem}.md").write_text(tabular_markdown(payload))


def update_readme() -> None:
    text = README.read_text()
    start, end = "<!-- results:start -->", "<!-- results:end -->"
    if start not in text or end not in text:
        raise SystemExit(f"README.md needs the markers {start} and {end} around the results section.")
    body = f"{start}\n<!-- generated by `python benchmarks/report.py` from benchmarks/results/*.json -->\n\n{headline()}\n\n{end}"
    README.write_text(re.sub(re.escape(start) + ".*?" + re.escape(end), lambda _: body, text, flags=re.S))


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--merge":
        write_suite(merge([Path(path) for path in sys.argv[2:]]))
    update_readme()

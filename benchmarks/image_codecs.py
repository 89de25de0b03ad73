"""The image codecs side by side: each one's ceiling, and what the default flow reaches through it.

A codec is the public map between images and records (issue 13): an autoencoder trained on the public half of the
training set (``ae:LATENT:EPOCHS``), the same autoencoder trained on the other dataset's whole training set
(``other:LATENT:EPOCHS``: no image of the private distribution outside the private set), the fixed DCT codec
(``dct:K``, the frequencies u + v < K: no public data), or the private codec (``pca:K``: the top K eigenvectors of
the private images' second moment, released at every epsilon with ``CODEC_SHARE`` of the budget as ``dpswf images``
splits it, ``codec_budget``: no public data, paid for). For each codec this prints and writes

- the ceiling: CAS of the private images passed through the codec (encode, decode; no generator, no privacy),
- CAS of the default generator (one class-conditional projected-histogram release, ``dpswf images``' settings)
  at each ``--epsilons`` (inf: the same flow without noise),

with both CAS classifiers of ``synthcity_dpswf.evaluation`` (an MLP, and the small CNN the literature scores
with), trained on ``--samples`` generated (image, label) pairs.

The private set is ``dpswf images``' (``split_training_set``: the seeded private half with ``ae``, the whole
training set with ``other`` and ``dct``). ``--split validation`` (for choosing settings): it loses 5,000 held-out
images, scored against and never released; the test set is not read. ``--split test`` (for reporting): all of it
is released and scored on the test set, as ``dpswf images`` does. Run:
``python benchmarks/image_codecs.py --data-root ../shared/data --codecs ae:8:5 dct:12 --split validation``
(``--settings L:G:STEPS ...``: one row per flow setting; ``--device cuda``: the flow and the classifiers on a GPU).
``--split test --select-from benchmarks/results/image_codecs_mnist_validation.json --codecs dct:12 dct:16`` runs,
at each epsilon, only the codec and settings whose validation row has the highest mean CAS (MLP and CNN) there:
the test split is read once, for the choice the validation split made. Each run writes
``benchmarks/results/image_codecs_<dataset>_<split>.{json,md}`` (rows of earlier runs with other codecs are kept,
a row of the same codec and settings is replaced).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import DELTA, RESULTS, environment, finite_or_text, write_json  # noqa: E402

from synthcity_dpswf.adapters.checkpoints import public_half_autoencoder, whole_training_set_autoencoder  # noqa: E402
from synthcity_dpswf.adapters.image_codecs import ImageCodec, PrivatePCAImageCodec  # noqa: E402
from synthcity_dpswf.datasets import DATASET_NAMES, IMAGE_LOADERS  # noqa: E402
from synthcity_dpswf.adapters.pixel_range import DEFAULT_PIXEL_SCALING  # noqa: E402
from synthcity_dpswf.evaluation import classification_accuracies  # noqa: E402
from synthcity_dpswf.experiments.images import (  # noqa: E402
    CODEC_SHARE,
    ImageRunConfig,
    build_generator,
    codec_budget,
    dct_codec,
    load_other_training_set,
    split_training_set,
)

VALIDATION = 5000


def build_codec(spec: str, dataset: str, data_root: Path, images: torch.Tensor, public: torch.Tensor, cache: Path,
                seed: int) -> tuple[ImageCodec, str]:
    """The codec named by ``spec`` and the public-data assumption it makes."""
    kind, *numbers = spec.split(":")
    try:
        values = [int(number) for number in numbers]
    except ValueError:
        values = []
    if kind == "dct" and len(values) == 1:
        return dct_codec(images.shape[2], images.shape[3], n_frequencies=values[0]), "no public data"
    if kind in ("ae", "other") and len(values) == 2:
        latent, epochs = values
        if kind == "ae":
            codec = public_half_autoencoder(cache, dataset, images, public, epochs, seed, progress=False,
                                            latent_dim=latent)
            return codec, f"the public half of {DATASET_NAMES[dataset]}"
        other, other_images = load_other_training_set(dataset, data_root)
        codec = whole_training_set_autoencoder(cache, other, other_images, epochs, seed, progress=False,
                                               latent_dim=latent)
        return codec, f"{DATASET_NAMES[other]}'s training set"
    raise ValueError(f"codec spec must be ae:LATENT:EPOCHS, other:LATENT:EPOCHS or dct:K, got {spec!r}.")


@dataclass(frozen=True)
class FlowChoice:
    """The flow settings of one row: ``L`` release directions (``None``: the generator's), ``G`` bins, steps."""

    directions: int | None
    bins: int
    steps: int

    @classmethod
    def parse(cls, text: str) -> FlowChoice:
        """``L:G:STEPS`` (``L`` may be ``default``)."""
        parts = text.split(":")
        try:
            if len(parts) != 3:
                raise ValueError
            directions = None if parts[0] == "default" else int(parts[0])
            return cls(directions, int(parts[1]), int(parts[2]))
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"--settings takes L:G:STEPS (e.g. 4000:32:3000; L may be 'default'), got {text!r}."
            ) from None


def select_settings(
    validation: dict[str, Any], specs: list[str], epsilon: float, dataset: str, samples: int
) -> tuple[str, FlowChoice, float]:
    """The codec (one of ``specs``) and flow settings whose validation row (of ``dataset``, scored with
    ``samples`` generated pairs) had the highest mean CAS (MLP and CNN) at ``epsilon``: the rule by which the test
    split's rows are chosen, stated before they are run. A results file of another split or dataset is refused."""
    if validation.get("split") != "validation" or validation.get("dataset") != dataset:
        raise ValueError(f"--select-from must be a validation results file of {dataset}, got split "
                         f"{validation.get('split')!r} of {validation.get('dataset')!r}: choose on validation data only.")
    key = str(finite_or_text(epsilon))
    scored = [
        ((row["epsilons"][key]["mlp"] + row["epsilons"][key]["cnn"]) / 2, row)
        for row in validation["rows"] if row["codec"] in specs and key in row["epsilons"] and row["samples"] == samples
    ]
    if not scored:
        raise ValueError(f"the validation results hold no row of codecs {specs} at epsilon {key} with {samples} "
                         "samples: run --split validation with those codecs, epsilons and --samples first.")
    best, row = max(scored, key=lambda item: item[0])
    return row["codec"], FlowChoice(row["directions"], row["bins"], row["steps"]), best


def private_codec_components(spec: str) -> int | None:
    """K of a ``pca:K`` spec (the private codec, paid per epsilon), ``None`` for the other codecs."""
    kind, *numbers = spec.split(":")
    if kind != "pca":
        return None
    if len(numbers) != 1 or not numbers[0].isdigit() or int(numbers[0]) < 1:
        raise ValueError(f"the private codec's spec is pca:K with K a positive integer, got {spec!r}.")
    return int(numbers[0])


def run_codec(spec: str, choice: FlowChoice, epsilons: list[float], args: argparse.Namespace) -> list[dict[str, Any]]:
    """The table rows of one codec and setting, one per generator and adjacency of ``args``: the codec's ceiling
    (computed once) and each generator's CAS (``choice``'s settings) at every epsilon. A private codec (``pca:K``)
    is released anew at every epsilon with its share of the budget (``codec_budget``), the flow gets the rest, and
    its ceiling is per epsilon."""
    components = private_codec_components(spec)
    images, labels = IMAGE_LOADERS[args.dataset](args.data_root, train=True)
    public, private = split_training_set("public-half" if spec.startswith("ae:") else "dct", len(images), args.seed)
    if args.split == "validation":
        held, private = private[:VALIDATION], private[VALIDATION:]
        score_images, score_labels = images[held], labels[held]
    else:
        score_images, score_labels = IMAGE_LOADERS[args.dataset](args.data_root, train=False)
    shown = min(args.samples, len(private))
    private_labels = labels[private]

    def ceiling_of(codec: ImageCodec, latents: torch.Tensor) -> dict[str, float]:
        reconstructed = codec.decode(latents[:shown])
        return classification_accuracies(reconstructed, private_labels[:shown], score_images, score_labels, args.seed,
                                          device=args.device)

    started = time.perf_counter()
    if components is None:
        codec, public_data = build_codec(spec, args.dataset, args.data_root, images, public, args.cache, args.seed)
        latents = codec.encode(images[private])
        description, dim = codec.public_description, int(latents.shape[1])
    else:
        public_data, dim = "no public data", components
        description = (f"the top {components} eigenvectors of the private images' second moment, released with "
                       f"{CODEC_SHARE:g} of the budget (of mu^2 with DPSWflow; privacy.md, \"A private image codec\")")
    codec_seconds = time.perf_counter() - started
    common: dict[str, Any] = {
        "codec": spec, "public": public_data, "description": description, "dim": dim, "pixels": pixels_of(spec),
        "codec_seconds": codec_seconds, "n_released": len(private), "n_scored": len(score_images),
        "directions": choice.directions, "bins": choice.bins, "steps": choice.steps, "samples": args.samples,
        "device": str(args.device), "ceiling": None,
    }
    if components is None:
        common["ceiling"] = ceiling_of(codec, latents)
        print(f"[{spec}] d = {dim}, codec {codec_seconds:.0f} s, ceiling {common['ceiling']}", flush=True)
    rows = []
    for generator in args.generators:
        for neighbouring in args.neighbourings:
            row = {**common, "generator": generator, "neighbouring": neighbouring, "epsilons": {}}
            for epsilon in epsilons:
                config = ImageRunConfig(dataset=args.dataset, generator=generator, neighbouring=neighbouring,
                                        epsilon=epsilon, delta=DELTA, n_release_directions=choice.directions,
                                        n_bins=choice.bins, n_steps=choice.steps, seed=args.seed,
                                        codec="private-pca" if components is not None else ImageRunConfig.codec)
                budget, extra = codec_budget(config), {}  # dpswf images' split (all to the flow with a public codec)
                if components is not None:  # the codec's own release at this epsilon, then the flow's
                    codec = PrivatePCAImageCodec(images[private], components, budget.codec_epsilon, budget.codec_delta,
                                                 neighbouring)
                    latents = codec.encode(images[private])
                    extra["ceiling"] = ceiling_of(codec, latents)
                started = time.perf_counter()
                model = build_generator(config, progress=False).fit(
                    latents.to(args.device), budget.flow_epsilon, budget.flow_delta, labels=private_labels.to(args.device),
                    n_classes=10,
                )
                generated, generated_labels = model.sample_labelled(args.samples)
                seconds = time.perf_counter() - started
                decoded = codec.decode(generated.cpu())
                scores = classification_accuracies(
                    decoded, generated_labels.cpu(), score_images, score_labels, args.seed, device=args.device
                )
                row["epsilons"][str(finite_or_text(epsilon))] = {**scores, "seconds": seconds, **extra}
                print(f"[{spec}] {generator} {neighbouring} {choice} epsilon {epsilon:g}: {scores} {extra}, fit + sample "
                      f"{seconds:.0f} s", flush=True)
            rows.append(row)
    return rows


def markdown(payload: dict[str, Any]) -> str:
    epsilons = sorted({key for row in payload["rows"] for key in row["epsilons"]}, key=lambda key: -float(key))
    scored = "the 5,000 held-out validation images" if payload["split"] == "validation" else "the test set"
    lines = [
        f"# Image codecs on {DATASET_NAMES[payload['dataset']]} ({payload['split']} split)",
        "",
        f"CAS (MLP / CNN) of classifiers trained on generated (image, label) pairs and scored on {scored}. Ceiling: "
        "the released private images through the codec. Generators with their defaults: DPSWflow (one "
        "class-conditional projected-histogram release of L directions) and DPSWflow-r (100 per-step releases of 50 "
        "directions each, q = 0.1: fixed-size batches under replace-one, Poisson samples under add/remove), "
        "delta = 1e-5; the adjacency column says which neighbours epsilon is stated for; epsilon inf is the same flow "
        "without noise: not private. Pixels: how a linear codec puts a decoded image on the pixel range "
        "(`adapters.pixel_range`: min_max, the rule before 2026-11-27, or clip). Written by `benchmarks/image_codecs.py`.",
        "",
        "| codec | public data | d | pixels | generator | adjacency | L, G, steps | ceiling | "
        + " | ".join(f"epsilon {key}" for key in epsilons) + " | codec (s) | device |",
        "|---|---|---:|---|---|---|---|---|" + "---|" * len(epsilons) + "---:|---|",
    ]
    for row in payload["rows"]:
        cells = []
        for key in epsilons:
            found = row["epsilons"].get(key)
            cell = "-" if found is None else f"{found['mlp']:.1%} / {found['cnn']:.1%}"
            if found is not None and "ceiling" in found:  # a private codec: its ceiling at this epsilon
                cell += f" (ceiling {found['ceiling']['mlp']:.1%} / {found['ceiling']['cnn']:.1%})"
            cells.append(cell)
        directions = row["directions"] if row["directions"] is not None else "default"
        ceiling = "per epsilon" if row["ceiling"] is None else f"{row['ceiling']['mlp']:.1%} / {row['ceiling']['cnn']:.1%}"
        chosen = " (chosen on validation)" if "chosen_on" in row else ""
        adjacency = "add/remove" if row.get("neighbouring") == "add_remove" else "replace-one"
        lines.append(
            f"| {row['codec']} | {row['public']} | {row['dim']} | {row.get('pixels', pixels_of(row['codec'], True))} | "
            f"{row.get('generator', 'dpswflow')} | {adjacency} | "
            f"{directions}, {row['bins']}, {row['steps']}{chosen} | "
            f"{ceiling} | " + " | ".join(cells)
            + f" | {row['codec_seconds']:.0f} | {row.get('device', 'cpu')} |"
        )
    return "\n".join(lines) + "\n"


def results_path(out: Path, dataset: str, split: str) -> Path:
    """Where the rows of one dataset and split are kept."""
    return out / f"image_codecs_{dataset}_{split}.json"


def pixels_of(spec: str, written_before: bool = False) -> str:
    """How codec ``spec`` puts decoded images on the pixel range: a linear codec's pixel scaling (``min_max`` for
    rows ``written_before`` the rows said it, the only rule then), ``-`` for an autoencoder (its decoder's sigmoid)."""
    if not spec.startswith(("dct:", "pca:")):
        return "-"
    return "min_max" if written_before else DEFAULT_PIXEL_SCALING


def replace_row(rows: list[dict[str, Any]], row: dict[str, Any]) -> list[dict[str, Any]]:
    """``rows`` with ``row`` in place of any row of the same codec and settings: the epsilons ``row`` measured
    replace theirs, the others are kept; the row is marked chosen on validation only if ``row`` was."""
    same = {"codec": None, "directions": None, "bins": None, "steps": None, "samples": None, "generator": "dpswflow",
            "neighbouring": "replace_one"}  # with the value a row written before the key existed had
    kept, merged = [], dict(row)
    for old in rows:
        if any(old.get(key, default) != row.get(key, default) for key, default in same.items()) or (
            old.get("pixels", pixels_of(old["codec"], written_before=True)) != row.get("pixels", pixels_of(row["codec"], True))
        ):
            kept.append(old)
            continue
        merged = {**old, **row, "epsilons": {**old["epsilons"], **row["epsilons"]}}
        if "chosen_on" not in row:
            merged.pop("chosen_on", None)
    return kept + [merged]


def merge_rows(source: dict[str, Any], out: Path) -> Path:
    """Add the rows of a results payload (e.g. a GPU run's) to ``out``'s table of its dataset and split; each
    row keeps its own ``device``. Returns the JSON path written (the Markdown beside it is rewritten)."""
    path = results_path(out, source["dataset"], source["split"])
    payload = json.loads(path.read_text()) if path.exists() else {"dataset": source["dataset"], "split": source["split"], "rows": []}
    for row in source["rows"]:
        payload["rows"] = replace_row(payload["rows"], row)
    write_json(path, payload)
    path.with_suffix(".md").write_text(markdown(payload))
    print(f"{len(source['rows'])} row(s) merged into {path}")
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-root", type=Path, default=None, help="torchvision root holding MNIST/ and FashionMNIST/")
    parser.add_argument("--dataset", choices=list(IMAGE_LOADERS), default="mnist")
    parser.add_argument("--codecs", nargs="+", default=None, help="ae:LATENT:EPOCHS, other:LATENT:EPOCHS, dct:K")
    parser.add_argument("--split", choices=["validation", "test"], default="validation")
    parser.add_argument("--epsilons", nargs="+", type=float, default=[math.inf, 10.0, 1.0])
    parser.add_argument("--settings", nargs="+", type=FlowChoice.parse, default=None,
                        help="flow settings L:G:STEPS, one row per codec and setting (default: --directions, "
                             "--bins, --steps)")
    parser.add_argument("--directions", type=int, default=None, help="L (default: the generator's)")
    parser.add_argument("--bins", type=int, default=ImageRunConfig.n_bins)
    parser.add_argument("--steps", type=int, default=ImageRunConfig.n_steps)
    parser.add_argument("--select-from", type=Path, default=None,
                        help="a validation results file: at each epsilon, run only the codec of --codecs and the "
                             "settings whose validation row (same --samples) scored the highest mean CAS there "
                             "(--split test; --settings, --directions, --bins and --steps are then not used)")
    parser.add_argument("--generators", nargs="+", choices=["dpswflow", "dpswflow_r"], default=["dpswflow"],
                        help="one row per generator (their default settings besides L, G and steps)")
    parser.add_argument("--neighbourings", nargs="+", choices=["replace_one", "add_remove"], default=["replace_one"],
                        help="one row per adjacency epsilon is calibrated for")
    parser.add_argument("--samples", type=int, default=10000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default="cpu", help="where the flow and the CAS classifiers run (cpu, cuda)")
    parser.add_argument("--merge", type=Path, nargs="+", default=None,
                        help="instead of running: add the rows of these results files (another machine's run, e.g. "
                             "benchmarks/results/gpu_codecs/codecs/...) to --out's table of the same dataset and split")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--cache", type=Path, default=Path(__file__).resolve().parent / ".cache")
    args = parser.parse_args()
    if args.merge is not None:
        for source in args.merge:
            merge_rows(json.loads(source.read_text()), args.out)
        return
    if args.data_root is None or args.codecs is None:
        parser.error("--data-root and --codecs are needed to run codecs (or pass --merge FILE ...)")
    if args.select_from is not None and (args.split != "test" or args.settings is not None):
        parser.error("--select-from chooses the settings of a --split test run: drop --settings, use --split test.")
    path = results_path(args.out, args.dataset, args.split)
    payload = json.loads(path.read_text()) if path.exists() else {"dataset": args.dataset, "split": args.split, "rows": []}
    payload["environment"] = environment(torch.device(args.device))
    plan: dict[tuple[str, FlowChoice], list[float]] = {}
    if args.select_from is not None:
        validation = json.loads(args.select_from.read_text())
        for epsilon in args.epsilons:
            spec, choice, score = select_settings(validation, args.codecs, epsilon, args.dataset, args.samples)
            print(f"epsilon {epsilon:g}: {spec} {choice} chosen (validation mean CAS {score:.1%})", flush=True)
            plan.setdefault((spec, choice), []).append(epsilon)
    else:
        choices = args.settings or [FlowChoice(args.directions, args.bins, args.steps)]
        plan = {(spec, choice): list(args.epsilons) for spec in args.codecs for choice in choices}
    for (spec, choice), epsilons in plan.items():
        for row in run_codec(spec, choice, epsilons, args):
            if args.select_from is not None:
                row["chosen_on"] = str(args.select_from.name)
            payload["rows"] = replace_row(payload["rows"], row)
        write_json(path, payload)
        path.with_suffix(".md").write_text(markdown(payload))
    print(markdown(payload))


if __name__ == "__main__":
    main()

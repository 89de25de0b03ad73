"""The autoencoder's refiner chosen on public images only (``AutoencoderCodec.fit_refiner``).

The public half of ``--dataset``'s training set (MNIST by default, or FashionMNIST; ``dpswf images``' seeded split) is
split again: the autoencoder (the package's, latent 16, 10 epochs, trained on the whole public half, or its cached
checkpoint) is refined on its first 25,000 images at each
``--weights`` (the adversarial weight), ``--latent-noises`` (the noise added to the training latents),
``--average-decays`` (the weight average's decay) and ``--refiner-seeds``, and scored on the other 5,000 (no private
image is read). What a run decodes is the flow's samples, not reconstructions, so
each row scores both:

- samples: DPSWflow (``dpswf images``' defaults at ``--epsilon``, its release seeded by ``--seed``: the data are
  public, and every run of a seed decodes the same samples) fitted to the latents of the 25,000 refining images,
  ``--fid-samples`` generated latents decoded through each refiner. FID against as many held-out public images
  (Inception pool3; biased upwards at this N: compare rows only), precision / recall, and CAS: both classifiers of
  ``synthcity_dpswf.evaluation`` trained on 5,000 decoded samples, accuracy on the 5,000 held-out images;
- reconstructions: CAS of 5,000 refined reconstructions of refining images (``--reconstruction-fid`` adds their FID).

Run: ``python benchmarks/studies/refiner_validation.py --data-root ../shared/data --inception
../shared/weights/inception_fid_torchscript.pt --average-decays 0 0.99 --refiner-seeds 0 1`` (about 15 minutes per
row on one CPU thread, 6 of them the FID's Inception features). Writes ``benchmarks/results/refiner_validation.{json,md}``
(``--name`` another; ``--dataset fashion_mnist --name refiner_validation_fashion_mnist`` for FashionMNIST's);
``--merge`` joins the files of runs split across processes.
"""

from __future__ import annotations

import argparse
import copy
import itertools
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: the shared modules, imported by name
from common import RESULTS, environment, write_results

import torch

from synthcity_dpswf.adapters.checkpoints import public_half_autoencoder
from synthcity_dpswf.adapters.image_latent import (
    MNIST_LATENT_DIM, REFINER_AVERAGE_DECAY, REFINER_EPOCHS, REFINER_LATENT_NOISE, AutoencoderCodec,
    refiner_adversarial_weight,
)
from synthcity_dpswf.datasets import DATASET_NAMES, IMAGE_LOADERS, public_private_split
from synthcity_dpswf.evaluation import (
    InceptionFeatures, cached_inception_features, classification_accuracies, fid_precision_recall,
)
from synthcity_dpswf.recipes.images import ImageRunConfig, build_generator

REFINE, HELD_OUT, CAS_IMAGES = 25_000, 5_000, 5_000


def table(rows: list[dict[str, Any]], epochs: int, n: int, epsilon: float, dataset: str) -> str:
    """The Markdown table of ``rows`` (one per refiner, ``None`` weight: no refiner) on ``dataset``'s public half."""
    def cells(row: dict[str, Any]) -> str:
        name = ("no refiner | - | - | -" if row["weight"] is None else f"{row['weight']:g} | {row['latent_noise']:g} | "
                f"{row.get('average_decay', 0):g} | {row.get('refiner_seed', 0)}")
        name = ("fresh" if row.get("release_seed") is None else f"seed {row['release_seed']}") + " | " + name
        samples, recon = row["samples"], row["reconstructions"]
        recon_fid = "-" if recon.get("fid") is None else f"{recon['fid']:.1f}"
        return (f"| {name} | {samples['fid']:.1f} | {samples['precision']:.2f} / {samples['recall']:.2f} | "
                f"{100 * samples['cas']['mlp']:.1f} / {100 * samples['cas']['cnn']:.1f}% | {recon_fid} | "
                f"{100 * recon['cas']['mlp']:.1f} / {100 * recon['cas']['cnn']:.1f}% |")
    return "\n".join([
        f"# The autoencoder's refiner on {DATASET_NAMES[dataset]}'s public half (validation; no private image read)", "",
        f"Refined on {REFINE:,} public images ({epochs} epochs), scored on {HELD_OUT:,} others. Samples: DPSWflow at "
        f"epsilon {epsilon:g} (`dpswf images`' defaults) fitted to the refining images' latents; FID and precision / "
        f"recall of {n:,} decoded samples against {n:,} held-out public images, CAS (MLP / CNN) trained on "
        f"{CAS_IMAGES:,} decoded samples, tested on the held-out images. Reconstructions: of refining images, the same "
        "metrics. Flow release: fresh noise per run (rows of different runs differ by it too), or seeded (rows of one seed "
        "decode the same samples). `python benchmarks/studies/refiner_validation.py`.", "",
        "| flow release | adversarial weight | latent noise | average decay | refiner seed | samples: FID | "
        "precision / recall | CAS | reconstructions: FID | CAS |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ] + [cells(row) for row in rows]) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-root", type=Path)
    parser.add_argument("--dataset", choices=sorted(IMAGE_LOADERS), default="mnist")
    parser.add_argument("--inception", type=Path)
    parser.add_argument("--weights", nargs="+", type=float, default=None,
                        help="adversarial weights (default: the dataset's, refiner_adversarial_weight)")
    parser.add_argument("--latent-noises", nargs="+", type=float, default=[REFINER_LATENT_NOISE])
    parser.add_argument("--average-decays", nargs="+", type=float, default=[REFINER_AVERAGE_DECAY])
    parser.add_argument("--no-base", action="store_true", help="skip the row without a refiner")
    parser.add_argument("--reconstruction-fid", action="store_true", help="also the FID of refined reconstructions")
    parser.add_argument("--epochs", type=int, default=REFINER_EPOCHS)
    parser.add_argument("--epsilon", type=float, default=10.0)
    parser.add_argument("--fid-samples", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0, help="the public split's, the autoencoder's and the flow's")
    parser.add_argument("--refiner-seeds", nargs="+", type=int, default=[0], help="each refiner's training seed")
    parser.add_argument("--cache", type=Path, default=Path(__file__).resolve().parents[1] / ".cache")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--name", default="refiner_validation")
    parser.add_argument("--merge", nargs="+", type=Path, help="join these JSON files of this script into --name")
    args = parser.parse_args(argv)
    if args.merge:
        # Files written before --dataset are MNIST's.
        parts = [{"dataset": "mnist", **json.loads(path.read_text())} for path in args.merge]
        # A row keeps its own release seed (a merged file's rows carry theirs); a run's file states one for all.
        rows = [{**row, "release_seed": row["release_seed"] if "release_seed" in row else part.get("release_seed")}
                for part in parts for row in part["rows"]]
        first = parts[0]
        for key in ("dataset", "epochs", "fid_samples", "epsilon"):
            values = {part[key] for part in parts}
            if len(values) > 1:
                raise ValueError(f"--merge joins runs of one study: the files differ in {key} "
                                 f"({sorted(map(str, values))}).")
        distances = [part["nearest_latent_distance"] for part in parts if part.get("nearest_latent_distance")]
        # A merged file among them brings the files and environments it was merged from.
        payload = {**first, "rows": rows,
                   "merged_from": [name for path, part in zip(args.merge, parts) for name in part.get("merged_from", [str(path)])],
                   "nearest_latent_distance": distances[0] if distances else None,
                   "environments": [env for part in parts for env in part.get("environments", [part["environment"]])]}
        write_results(args.out, args.name, payload,
                      table(rows, first["epochs"], first["fid_samples"], first["epsilon"], first["dataset"]))
        return
    if args.data_root is None or args.inception is None:
        parser.error("--data-root and --inception are needed (or --merge).")
    images, labels = IMAGE_LOADERS[args.dataset](args.data_root, train=True)
    public, _ = public_private_split(len(images), 0.5, args.seed)
    refine, held = public[:REFINE], public[REFINE : REFINE + HELD_OUT]
    base = public_half_autoencoder(args.cache, args.dataset, images, public, 10, args.seed, progress=False,
                                   latent_dim=MNIST_LATENT_DIM)
    network = InceptionFeatures(args.inception)
    n = args.fid_samples
    real = cached_inception_features(images[held][:n], network, args.inception,
                                     args.cache / f"inception_{args.dataset}_public_held_out_{n}.pt")
    config = ImageRunConfig(dataset=args.dataset, epsilon=args.epsilon, device="cpu", seed=args.seed)
    refine_latents = base.encode(images[refine])
    flow = build_generator(config, progress=False, release_seed=args.seed).fit(  # public data: a seeded release
        refine_latents, config.epsilon, config.delta, labels=labels[refine], n_classes=10)
    latents, latent_labels = flow.sample_labelled(max(n, CAS_IMAGES))
    nearest = {name: float(torch.cdist(torch.nn.functional.normalize(points, dim=1), refine_latents).min(1).values.mean())
               for name, points in (("samples", latents[:n]), ("held_out", base.encode(images[held][:n])))}
    print("mean distance to the nearest refining latent", nearest, flush=True)

    def score(adapter: AutoencoderCodec) -> dict[str, Any]:
        samples = adapter.decode(latents)
        fid, precision, recall = fid_precision_recall(real, samples[:n], network)
        reconstructions = adapter.decode(adapter.encode(images[refine][:CAS_IMAGES]))
        recon: dict[str, Any] = {"cas": classification_accuracies(
            reconstructions, labels[refine][:CAS_IMAGES], images[held], labels[held], args.seed, device="cpu")}
        if args.reconstruction_fid:
            recon["fid"] = fid_precision_recall(real, reconstructions[:n], network)[0]
        return {"samples": {"fid": fid, "precision": precision, "recall": recall, "cas": classification_accuracies(
                    samples[:CAS_IMAGES], latent_labels[:CAS_IMAGES], images[held], labels[held], args.seed, device="cpu")},
                "reconstructions": recon}

    rows = [] if args.no_base else [{"weight": None, "latent_noise": None, "release_seed": args.seed, **score(base)}]
    weights = args.weights or [refiner_adversarial_weight(args.dataset)]
    grid = itertools.product(weights, args.latent_noises, args.average_decays, args.refiner_seeds)
    for weight, noise, decay, refiner_seed in grid:
        started = time.perf_counter()
        adapter = copy.deepcopy(base).fit_refiner(images[refine], epochs=args.epochs, adversarial_weight=weight,
                                                  latent_noise=noise, average_decay=decay, seed=refiner_seed)
        rows.append({"weight": weight, "latent_noise": noise, "average_decay": decay, "refiner_seed": refiner_seed,
                     "release_seed": args.seed,
                     "seconds": time.perf_counter() - started, **score(adapter)})
        print(rows[-1], flush=True)
    payload = {"suite": "refiner_validation", "dataset": args.dataset, "epochs": args.epochs, "fid_samples": n,
               "epsilon": args.epsilon, "seed": args.seed, "release_seed": args.seed, "nearest_latent_distance": nearest,
               "environment": environment(torch.device("cpu")), "rows": rows}
    write_results(args.out, args.name, payload, table(rows, args.epochs, n, args.epsilon, args.dataset))


if __name__ == "__main__":
    main()

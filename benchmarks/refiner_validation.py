"""The autoencoder's refiner chosen on public images only (``ImageLatentAdapter.fit_refiner``).

MNIST's public half (``dpswf images``' seeded split) is split again: the autoencoder (the package's, latent 16, 10
epochs, trained on the whole public half, or its cached checkpoint) is refined on its first 25,000 images at each
``--weights`` (the adversarial weight), and scored on the other 5,000 (no private image is read):

- FID: Inception pool3 features of ``--fid-samples`` refined reconstructions against as many other held-out public
  images (biased upwards at this N: compare rows only);
- CAS: both classifiers of ``synthcity_dpswf.evaluation`` trained on 5,000 (refined) reconstructions of refiner-training
  images, accuracy on 5,000 held-out public images.

Run: ``python benchmarks/refiner_validation.py --data-root ../shared/data --inception
../shared/weights/inception_fid_torchscript.pt`` (about 10 minutes per weight on 2 CPU cores). Writes
``benchmarks/results/refiner_validation.{json,md}``.
"""

from __future__ import annotations

import argparse
import copy
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import RESULTS, environment, write_results  # noqa: E402

import torch  # noqa: E402

from synthcity_dpswf.adapters.checkpoints import public_half_autoencoder  # noqa: E402
from synthcity_dpswf.adapters.image_latent import MNIST_LATENT_DIM, REFINER_EPOCHS  # noqa: E402
from synthcity_dpswf.datasets import load_mnist, public_private_split  # noqa: E402
from synthcity_dpswf.evaluation import InceptionFeatures, classification_accuracies, frechet_distance, inception_features  # noqa: E402

REFINE, HELD_OUT, CAS_IMAGES = 25_000, 5_000, 5_000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-root", type=Path, required=True)
    parser.add_argument("--inception", type=Path, required=True)
    parser.add_argument("--weights", nargs="+", type=float, default=[0.2])
    parser.add_argument("--epochs", type=int, default=REFINER_EPOCHS)
    parser.add_argument("--fid-samples", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cache", type=Path, default=Path(__file__).resolve().parent / ".cache")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    images, labels = load_mnist(args.data_root, train=True)
    public, _ = public_private_split(len(images), 0.5, args.seed)
    refine, held = public[:REFINE], public[REFINE : REFINE + HELD_OUT]
    base = public_half_autoencoder(args.cache, "mnist", images, public, 10, args.seed, progress=False,
                                   latent_dim=MNIST_LATENT_DIM)
    network = InceptionFeatures(args.inception)
    n = args.fid_samples
    real = inception_features(images[held][n : 2 * n], network)  # other held-out public images than the scored ones

    def score(adapter: Any) -> dict[str, Any]:
        decoded = adapter.decode(adapter.encode(images[held][:n]))
        training = adapter.decode(adapter.encode(images[refine][:CAS_IMAGES]))
        return {"fid": frechet_distance(real, inception_features(decoded, network)),
                "cas": classification_accuracies(training, labels[refine][:CAS_IMAGES], images[held], labels[held], args.seed)}

    rows = [{"weight": None, **score(base)}]
    print(rows[-1], flush=True)
    for weight in args.weights:
        started = time.perf_counter()
        adapter = copy.deepcopy(base).fit_refiner(images[refine], epochs=args.epochs, adversarial_weight=weight, seed=args.seed)
        rows.append({"weight": weight, "seconds": time.perf_counter() - started, **score(adapter)})
        print(rows[-1], flush=True)
    lines = [
        "# The autoencoder's refiner on MNIST's public half (validation; no private image read)", "",
        f"Refined on {REFINE:,} public images ({args.epochs} epochs), scored on {HELD_OUT:,} others: FID of {n:,} "
        f"reconstructions against {n:,} other held-out public images; CAS trained on {CAS_IMAGES:,} reconstructions. "
        "`python benchmarks/refiner_validation.py`.", "",
        "| adversarial weight | FID | CAS MLP | CAS CNN |", "|---|---:|---:|---:|",
    ] + [f"| {'no refiner' if row['weight'] is None else row['weight']} | {row['fid']:.1f} | {100 * row['cas']['mlp']:.1f}% | "
         f"{100 * row['cas']['cnn']:.1f}% |" for row in rows]
    payload = {"suite": "refiner_validation", "epochs": args.epochs, "fid_samples": n, "seed": args.seed,
               "environment": environment(torch.device("cpu")), "rows": rows}
    write_results(args.out, "refiner_validation", payload, "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()

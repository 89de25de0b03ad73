"""How a linear codec's decoded arrays are put back on the pixel range: ``min_max`` against ``clip``
(``synthcity_dpswf.adapters.pixel_range``), on the validation split only.

For each dataset the private set is ``dpswf images``' for codecs that need no public image (the whole training set,
``split_training_set``) less 5,000 held-out images that are scored against and never encoded; the test set is not
read. For each codec (the private PCA codec's exact basis, ``pca:K``, the ceiling of every epsilon; the same codec
released at ``--epsilon`` with ``CODEC_SHARE`` of it as ``dpswf images`` splits it for DPSWflow; the fixed DCT codec,
``dct:K``) and each rule, ``--samples`` private images are encoded and decoded, then scored with

- CAS: both classifiers of ``synthcity_dpswf.evaluation``, trained on the reconstructions, accuracy on the
  held-out images;
- FID: Inception pool3 features of ``--fid-samples`` reconstructions against as many held-out images (biased
  upwards at small N: compare rows of this table only).

Run: ``python benchmarks/studies/codec_decoding.py --data-root ../shared/data --inception
../shared/weights/inception_fid_torchscript.pt`` (about 15 minutes on 2 CPU cores). Writes
``benchmarks/results/codec_decoding.{json,md}``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: the shared modules, imported by name
from common import DELTA, RESULTS, choose_device, environment, write_results

from synthcity_dpswf.adapters.dct import DCTTransform
from synthcity_dpswf.adapters.pixel_range import PIXEL_SCALINGS
from synthcity_dpswf.adapters.private_pca import PrivatePCABasis
from synthcity_dpswf.evaluation import InceptionFeatures, classification_accuracies, frechet_distance, inception_features
from synthcity_dpswf.datasets import DATASET_NAMES, IMAGE_LOADERS
from synthcity_dpswf.adapters.image_codecs import CODEC_SHARE
from synthcity_dpswf.recipes.images import (
    DCT_FREQUENCIES,
    PCA_COMPONENTS,
    ImageRunConfig,
    codec_release,
    run_budget,
    split_training_set,
)
from synthcity_dpswf.privacy import secret_generator

VALIDATION = 5000


def codecs_of(images: torch.Tensor, epsilon: float, seed: int) -> dict[str, torch.Tensor | None]:
    """Name -> the PCA basis (``None``: the DCT codec) of the three codecs of the table, fitted on ``images``."""
    config = ImageRunConfig(codec="private-pca", epsilon=epsilon, delta=DELTA, codec_share=CODEC_SHARE)
    codec_epsilon, codec_delta = codec_release(config, run_budget(config))
    exact = PrivatePCABasis.fit(images[:, 0], PCA_COMPONENTS, float("inf"), DELTA, torch.Generator().manual_seed(seed))
    released = PrivatePCABasis.fit(images[:, 0], PCA_COMPONENTS, codec_epsilon, codec_delta,
                                   secret_generator())
    return {
        f"pca:{PCA_COMPONENTS}, exact basis (not private)": exact.basis,
        f"pca:{PCA_COMPONENTS}, released at epsilon {codec_epsilon:.3g} (the codec's share of {epsilon:g})":
            released.basis,
        f"dct:{DCT_FREQUENCIES}": None,
    }


def run_dataset(name: str, args: argparse.Namespace, network: InceptionFeatures | None) -> list[dict[str, Any]]:
    images, labels = IMAGE_LOADERS[name](args.data_root, train=True)
    _, private = split_training_set("dct", len(images), args.seed)
    held, private = private[:VALIDATION], private[VALIDATION:]
    shown = private[: args.samples]
    height, width = images.shape[2], images.shape[3]
    real = inception_features(images[held][: args.fid_samples], network) if network is not None else None
    rows = []
    for codec_name, basis in codecs_of(images[private], args.epsilon, args.seed).items():
        for scaling in PIXEL_SCALINGS:
            started = time.perf_counter()
            if basis is None:
                codec = DCTTransform(height, width, DCT_FREQUENCIES, pixel_scaling=scaling)
            else:
                codec = PrivatePCABasis(height, width, basis, pixel_scaling=scaling)
            decoded = codec.decode(codec.encode(images[shown][:, 0])).unsqueeze(1)
            cas = classification_accuracies(decoded, labels[shown], images[held], labels[held], args.seed,
                                            device=args.device)
            fid = None
            if network is not None:
                fid = frechet_distance(real, inception_features(decoded[: args.fid_samples], network))
            rows.append({"dataset": name, "codec": codec_name, "pixel_scaling": scaling, "cas": cas, "fid": fid,
                         "seconds": time.perf_counter() - started})
            print(f"[{name}] {codec_name}, {scaling}: CAS {cas}, FID {fid}", flush=True)
    return rows


def markdown(payload: dict[str, Any]) -> str:
    lines = [
        "# Decoding a linear codec: min_max against clip (validation split)", "",
        f"{payload['samples']} private images of the training set encoded and decoded by each codec; CAS on "
        f"{VALIDATION} held-out training images (never encoded), FID on {payload['fid_samples']} reconstructions "
        f"against as many held-out images (biased upwards at this N: compare rows only). The test set is not read. "
        f"`python benchmarks/studies/codec_decoding.py`; {payload['environment']['device']}.", "",
        "| dataset | codec | pixel scaling | CAS MLP | CAS CNN | FID |", "|---|---|---|---:|---:|---:|",
    ]
    for row in payload["rows"]:
        fid = "-" if row["fid"] is None else f"{row['fid']:.1f}"
        lines.append(f"| {DATASET_NAMES[row['dataset']]} | {row['codec']} | {row['pixel_scaling']} | "
                     f"{100 * row['cas']['mlp']:.1f}% | {100 * row['cas']['cnn']:.1f}% | {fid} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-root", type=Path, required=True, help="torchvision root holding MNIST/ and FashionMNIST/")
    parser.add_argument("--inception", type=Path, default=None, help="Inception TorchScript file (no FID without it)")
    parser.add_argument("--datasets", nargs="+", default=list(IMAGE_LOADERS), choices=list(IMAGE_LOADERS))
    parser.add_argument("--epsilon", type=float, default=10.0, help="the total epsilon whose codec share is released")
    parser.add_argument("--samples", type=int, default=5000, help="reconstructions the CAS classifiers train on")
    parser.add_argument("--fid-samples", type=int, default=1000)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    network = InceptionFeatures(args.inception) if args.inception is not None else None
    device = choose_device(args.device)
    if network is not None:
        network = network.to(device)
    rows = [row for name in args.datasets for row in run_dataset(name, args, network)]
    payload = {"suite": "codec_decoding", "samples": args.samples, "fid_samples": args.fid_samples,
               "epsilon": args.epsilon, "delta": DELTA, "seed": args.seed, "environment": environment(device), "rows": rows}
    write_results(args.out, "codec_decoding", payload, markdown(payload))


if __name__ == "__main__":
    main()

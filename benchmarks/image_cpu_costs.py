"""What the image settings chosen in issue 13 cost on a CPU: wall seconds of each part, measured once.

- ``autoencoder``: ``dpswf images``' default codec, the latent-16 autoencoder trained 10 epochs on the public half
  of MNIST (30,000 images); issue 13 asks for under 10 minutes on 2 CPU cores.
- ``flow``: the no-public-data setting chosen on the validation split for epsilon = 10 (the DCT codec with
  K = 16, all 60,000 training images private, one class-conditional projected-histogram release of L = 8,000
  directions and G = 32 bins, 5,000 flow steps): fit (the release) and 10,000 labelled samples, as
  ``dpswf images --codec dct --dct-frequencies 16 --directions 8000 --bins 32 --steps 5000`` runs them.

Run on quiet cores (nothing else running): ``python benchmarks/image_cpu_costs.py --data-root ../shared/data``;
writes ``benchmarks/results/image_cpu_costs.{json,md}`` (the parts of earlier runs are kept, a part run again is
replaced). ``--parts`` picks parts; ``--epochs`` and ``--steps`` shrink them for a check of the script itself.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import DELTA, RESULTS, environment, write_json  # noqa: E402

from synthcity_dpswf.adapters.checkpoints import public_half_autoencoder  # noqa: E402
from synthcity_dpswf.adapters.image_latent import MNIST_LATENT_DIM  # noqa: E402
from synthcity_dpswf.datasets import load_mnist  # noqa: E402
from synthcity_dpswf.experiments.images import ImageRunConfig, build_generator, dct_codec, split_training_set  # noqa: E402



def autoencoder_seconds(data_root: Path, epochs: int) -> dict[str, Any]:
    """Train the default codec once (in a temporary folder, nothing cached) and time it."""
    images, _ = load_mnist(data_root, train=True)
    public, _ = split_training_set("public-half", len(images), 0)
    with tempfile.TemporaryDirectory() as folder:
        started = time.perf_counter()
        public_half_autoencoder(Path(folder), "mnist", images, public, epochs, 0, False, device="cpu",
                                latent_dim=MNIST_LATENT_DIM)
        seconds = time.perf_counter() - started
    return {"what": f"autoencoder, latent {MNIST_LATENT_DIM}, {epochs} epochs on {len(public):,} public images",
            "seconds": seconds}


def flow_seconds(data_root: Path, steps: int) -> dict[str, Any]:
    """Fit DPSWflow on the DCT records of the whole training set and draw 10,000 labelled samples, timed apart."""
    images, labels = load_mnist(data_root, train=True)
    codec = dct_codec(images.shape[2], images.shape[3], n_frequencies=16)
    records = codec.encode(images)
    config = ImageRunConfig(codec="dct", dct_frequencies=16, n_release_directions=8000, n_bins=32, n_steps=steps,
                            device="cpu", epsilon=10.0)
    started = time.perf_counter()
    model = build_generator(config, progress=False).fit(records, config.epsilon, DELTA, labels=labels, n_classes=10)
    fit = time.perf_counter() - started
    started = time.perf_counter()
    model.sample_labelled(config.n_samples)
    sample = time.perf_counter() - started
    return {"what": f"DPSWflow, DCT K = 16 (d = {records.shape[1]}), {len(records):,} private images, L = 8,000, G = 32, "
                    f"{steps:,} steps, {config.n_samples:,} samples, epsilon = 10",
            "fit_seconds": fit, "sample_seconds": sample, "seconds": fit + sample}


PARTS = {"autoencoder": lambda args: autoencoder_seconds(args.data_root, args.epochs),
         "flow": lambda args: flow_seconds(args.data_root, args.steps)}


def markdown(payload: dict[str, Any]) -> str:
    env = payload["environment"]
    lines = [
        "# Image settings of issue 13: what they cost on a CPU", "",
        f"{env.get('cpu_threads', '?')} torch threads on {env.get('device', 'cpu')}; torch {env.get('versions', {}).get('torch', '?')}. "
        "One measurement per part, nothing else running. Written by `benchmarks/image_cpu_costs.py`.", "",
        "| part | what | seconds | minutes |", "|---|---|---:|---:|",
    ]
    for name, part in payload["parts"].items():
        detail = (f" (fit {part['fit_seconds']:.0f} s + sampling {part['sample_seconds']:.0f} s)"
                  if "fit_seconds" in part else "")
        lines.append(f"| {name} | {part['what']}{detail} | {part['seconds']:.0f} | {part['seconds'] / 60:.1f} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-root", type=Path, required=True, help="torchvision root holding MNIST/")
    parser.add_argument("--parts", nargs="+", choices=list(PARTS), default=list(PARTS))
    parser.add_argument("--epochs", type=int, default=10, help="autoencoder epochs (10: the default codec)")
    parser.add_argument("--steps", type=int, default=5000, help="flow steps (5,000: the chosen setting)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    path = args.out / "image_cpu_costs.json"
    payload = json.loads(path.read_text()) if path.exists() else {"parts": {}}
    payload["environment"] = environment(torch.device("cpu"))
    for name in args.parts:
        payload["parts"][name] = PARTS[name](args)
        print(f"{name}: {payload['parts'][name]['seconds']:.0f} s", flush=True)
        write_json(path, payload)
        path.with_suffix(".md").write_text(markdown(payload))
    print(markdown(payload))


if __name__ == "__main__":
    main()

"""How long the DP-SGD codec's training takes on this machine's CPU threads, against issue 45's budget of 20 minutes on
2 cores for MNIST's 55,000 validation images.

The codec (``adapters.private_autoencoder``, the registry's default settings) is trained for a fraction of its
epochs at each thread count, the counts alternating round after round so that they share the machine's load; a
step's cost does not depend on epsilon or on the noise (the per-record gradients, their clipping and the noise draw
are the same work at every z), so each round's seconds per step times the default schedule's steps
(``PrivateAutoencoderSettings.schedule``: ``ceil(epochs / q)``, Poisson batches at q = b / n under replace-one) gives
the full training's projected time. The ratio of the thread counts' times is read within each round.

Run: ``python benchmarks/studies/dpsgd_codec_speed.py --data-root ../shared/data`` (about 5 minutes; results
``benchmarks/results/dpsgd_codec_speed.{json,md}``).
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: the shared modules, imported by name
from common import DELTA, RESULTS, environment, results_page, write_results

from synthcity_dpswf.adapters.private_autoencoder import PrivateAutoencoderCodec, PrivateAutoencoderSettings
from synthcity_dpswf.datasets import IMAGE_LOADERS

BUDGET_SECONDS = 20 * 60
"""Issue 45's budget for the codec's training on MNIST's 55,000 validation images, on the 2 cores."""
VALIDATION_IMAGES = 55000


def time_training(images: torch.Tensor, settings: PrivateAutoencoderSettings, threads: int) -> dict[str, float]:
    """Train the codec on ``images`` at ``threads`` torch threads: its steps and seconds (``training_seconds``)."""
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        codec = PrivateAutoencoderCodec(images, settings, 10.0, DELTA, "replace_one")
    finally:
        torch.set_num_threads(before)
    return {"steps": codec.schedule.steps, "seconds": codec.training_seconds}


def measure(images: torch.Tensor, settings: PrivateAutoencoderSettings, fraction: float, threads: list[int],
            rounds: int) -> dict[str, Any]:
    """``rounds`` rounds, each training at every count of ``threads`` for ``fraction`` of the settings' epochs (after
    one untimed training of one step, which takes the one-off costs of a first call; the counts in reverse order every
    other round); per count the projected seconds of the full schedule in each round, and per round the counts'
    ratios to the first."""
    full_steps = settings.schedule(len(images), "replace_one", 1.0).steps
    short = dataclasses.replace(settings, epochs=settings.epochs * fraction)
    time_training(images, dataclasses.replace(settings, epochs=settings.epochs / full_steps), threads[0])  # warm-up
    projected: dict[int, list[float]] = {count: [] for count in threads}
    for round_index in range(rounds):
        for count in threads if round_index % 2 == 0 else threads[::-1]:
            timed = time_training(images, short, count)
            projected[count].append(timed["seconds"] / timed["steps"] * full_steps)
            print(f"{count} thread(s): {timed['steps']} steps in {timed['seconds']:.1f} s, full schedule "
                  f"{projected[count][-1]:.0f} s", flush=True)
    first = threads[0]
    return {
        "full_steps": full_steps, "timed_epochs": short.epochs,
        "threads": {str(count): {"projected_seconds": values, "median": statistics.median(values),
                                 "ratio_to_first": [value / base for value, base in zip(values, projected[first])]}
                    for count, values in projected.items()},
    }


def table(payload: dict[str, Any]) -> str:
    """The results page: per thread count the median projected training time, its ratio to one thread, the budget."""
    rows = []
    for count, entry in payload["threads"].items():
        ratio = statistics.median(entry["ratio_to_first"])
        rows.append([count, f"{entry['median']:.0f}", f"{ratio:.2f}",
                     "within" if entry["median"] <= BUDGET_SECONDS else "beyond"])
    settings = payload["settings"]
    description = (
        f"The DP-SGD codec (latent {settings['latent_dim']}, width {settings['width']}, {settings['epochs']:g} epochs, "
        f"batch {settings['batch_size']}, Poisson batches under replace-one) on {payload['images']:,} MNIST training "
        f"images: {payload['full_steps']} steps in the full schedule, timed over {payload['timed_epochs']:g} epochs at "
        f"each thread count in {payload['rounds']} alternating rounds and projected to the full schedule (median over "
        f"rounds; the ratio to the first count read within each round). Budget (issue 45): {BUDGET_SECONDS} s. "
        f"`python benchmarks/studies/dpsgd_codec_speed.py`; {payload['environment']['hardware']}, {payload['environment']['date']}."
    )
    return results_page("The DP-SGD codec's training time", description,
                        [("threads", True), ("projected seconds", True), ("ratio to the first count", True),
                         ("20-minute budget", False)], rows)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-root", type=Path, required=True, help="torchvision root holding MNIST/")
    parser.add_argument("--fraction", type=float, default=0.1, help="share of the schedule's epochs timed (0, 1]")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2], help="torch thread counts, first the base")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--images", type=int, default=VALIDATION_IMAGES, help="training images (MNIST's first N)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    if not 0 < args.fraction <= 1 or args.rounds < 1 or min(args.threads) < 1:
        parser.error("--fraction lies in (0, 1], --rounds and every --threads count are at least 1.")
    images = IMAGE_LOADERS["mnist"](args.data_root, train=True)[0][: args.images]
    settings = PrivateAutoencoderSettings()
    payload = {**measure(images, settings, args.fraction, args.threads, args.rounds), "images": len(images),
               "rounds": args.rounds, "settings": settings.training(), "environment": environment(torch.device("cpu"))}
    write_results(args.out, "dpsgd_codec_speed", payload, table(payload))


if __name__ == "__main__":
    main()

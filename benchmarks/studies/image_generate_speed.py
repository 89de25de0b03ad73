"""What an image plugin user waits for: ``fit``, then small ``generate`` calls after ``save`` / ``Plugins().load()``,
on one CPU thread.

sklearn's 1,797 8 x 8 digits (shipped with sklearn), ``image_dpswflow`` with its defaults (the ``"private-pca"``
codec and its 3,000-step flow) at epsilon = 10, delta = 1e-5. Beside the plugin's calls, the same model's flow run
afresh for the same counts (``sample_labelled``, what every ``generate`` ran before the plugins kept flowed pairs):
a flow's cost is in its steps, so the fit flows ``RESERVOIR_IMAGES`` pairs that small calls take. The median of
``--repeats`` runs of each call (the machine is noisy: read the figures side by side).

Run: ``python benchmarks/studies/image_generate_speed.py [--repeats 3]``. Writes
``benchmarks/results/image_generate_speed.{md,json}``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings
from pathlib import Path
from typing import Any, Callable

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: the shared modules, imported by name
from common import RESULTS, environment, results_page, write_results

import synthcity_dpswf  # noqa: F401  (registers the plugins)

COUNTS = (10, 500, 2000)


def seconds(call: Callable[[], Any]) -> float:
    started = time.perf_counter()
    call()
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> None:
    from sklearn.datasets import load_digits
    from synthcity.plugins import Plugins
    from synthcity.plugins.core.dataloader import ImageDataLoader

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--steps", type=int, default=None, help="flow steps (default: the codec's, 3,000)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    pixels, labels = load_digits(return_X_y=True)
    loader = ImageDataLoader(data=(torch.tensor(pixels, dtype=torch.float32).reshape(-1, 1, 8, 8) / 8 - 1,
                                   torch.tensor(labels)), height=8)
    settings = {} if args.steps is None else {"n_steps": args.steps}
    rows = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plugin = Plugins().get("image_dpswflow", epsilon=10.0, delta=1e-5, **settings)
        rows.append({"call": "fit", "seconds": seconds(lambda: plugin.fit(loader))})
        saved = plugin.save()
        for count in COUNTS:
            flowed = [seconds(lambda: plugin.generator_.sample_labelled(count, seed=repeat))
                      for repeat in range(args.repeats)]
            kept = []
            for _ in range(args.repeats):
                loaded = Plugins().load(saved)
                kept.append(seconds(lambda: loaded.generate(count)))
            rows.append({"call": f"generate({count})", "flowed": statistics.median(flowed),
                         "seconds": statistics.median(kept)})
    payload = {"arguments": " ".join(argv or []), "repeats": args.repeats, "rows": rows,
               "environment": environment(torch.device("cpu"))}
    table = [[row["call"], f"{row['seconds']:.2f}", "-" if "flowed" not in row else f"{row['flowed']:.2f}"]
             for row in rows]
    text = results_page(
        "Image plugin calls on one thread (`python benchmarks/studies/image_generate_speed.py`)",
        f"sklearn's 1,797 digits, image_dpswflow's defaults (private-pca, {args.steps or 3000:,} flow steps), epsilon "
        f"10; the median of {args.repeats} runs; generate after save / load, beside the model's flow run afresh for the "
        "same count.",
        [("call", False), ("plugin s", True), ("flow afresh s", True)], table)
    write_results(args.out, "image_generate_speed", payload, text)


if __name__ == "__main__":
    main()

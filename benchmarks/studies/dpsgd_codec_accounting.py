"""The noise the DP-SGD codec's training needs under replace-one, fixed-size batches against Poisson batches (privacy.md,
"A private image codec trained by DP-SGD").

For each run's budget (epsilon, delta) and number of private images n, the codec's own guarantee (epsilon_c, delta) at
its share of mu^2 (``Budget.share_guarantee``, the share ``AUTOENCODER_CODEC_SHARE`` of the registry entry), its
schedule (``PrivateAutoencoderSettings``' defaults: b = 512, 5 passes, so q = b / n and K = ceil(5 / q)), and the
multiplier z each sampling is calibrated to (``adapters.private_autoencoder.dpsgd_noise_multiplier``): fixed-size
batches of b by dp-accounting's replace-one RDP bound, Poisson batches at q by the antipodal pair's privacy loss
distribution at radius 1/2; their ratio is the factor on the gradient noise (std z 2C). Beside them, the add/remove
multiplier of the same Poisson schedule in units of C (Opacus' RDP), for scale: noise z_AR C. Nothing private is read:
the numbers are functions of (n, epsilon, delta) and the public settings.

Run: ``python benchmarks/studies/dpsgd_codec_accounting.py [--images 55000 60000] [--epsilons 10 5 1]``. Writes
``benchmarks/results/dpsgd_codec_accounting.{md,json}``.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: the shared modules, imported by name
from common import DELTA, RESULTS, environment, results_page, write_results

from synthcity_dpswf.adapters.image_codecs import AUTOENCODER_CODEC_SHARE
from synthcity_dpswf.adapters.private_autoencoder import PrivateAutoencoderSettings, dpsgd_noise_multiplier
from synthcity_dpswf.privacy.budget import Budget

SETTINGS = PrivateAutoencoderSettings(epochs=5.0)
"""The codec the rows of RESULTS.md's DP-SGD tables train (``dpae:32:16:5``: 5 passes, b = 512, C = 1)."""


def row(n_images: int, epsilon: float, settings: PrivateAutoencoderSettings = SETTINGS) -> dict[str, Any]:
    """Both samplings' z for the codec of ``n_images`` private images in a run at ``epsilon``."""
    codec_epsilon, codec_delta = Budget(epsilon, DELTA).for_records(n_images).share_guarantee(AUTOENCODER_CODEC_SHARE)
    z = {}
    for sampling in ("fixed", "poisson"):
        schedule = dataclasses.replace(settings, replace_one_sampling=sampling).schedule(n_images, "replace_one", 1.0)
        z[sampling] = dpsgd_noise_multiplier(schedule, codec_epsilon, codec_delta)
    add_remove = settings.schedule(n_images, "add_remove", 1.0)
    add_remove = dataclasses.replace(add_remove, sample_rate=schedule.rate, steps=schedule.steps)
    return {"n_images": n_images, "epsilon": epsilon, "codec_epsilon": codec_epsilon, "codec_delta": codec_delta,
            "rate": schedule.rate, "steps": schedule.steps, "fixed_z": z["fixed"], "poisson_z": z["poisson"],
            "ratio": z["poisson"] / z["fixed"],
            "add_remove_z": dpsgd_noise_multiplier(add_remove, codec_epsilon, codec_delta)}


def markdown(payload: dict[str, Any]) -> str:
    return results_page(
        "The DP-SGD codec under replace-one: fixed-size against Poisson batches (`python "
        "benchmarks/studies/dpsgd_codec_accounting.py`)",
        f"delta = {DELTA:g}; the codec's own (epsilon_c, delta) at share {AUTOENCODER_CODEC_SHARE:g} of the run's mu^2; "
        "b = 512, 5 passes, C = 1; z in units of the replace-one sensitivity 2C (noise std 2 z C), calibrated by each "
        "accounting (fixed-size batches of b: dp-accounting's replace-one RDP for sampling without replacement; Poisson "
        "batches at q = b / n: the antipodal pair's privacy loss distribution at radius 1/2, privacy.md, \"A private "
        "image codec trained by DP-SGD\"); ratio: Poisson's z over the fixed-size one; add/remove z: the same Poisson "
        f"schedule under add/remove (Opacus' RDP), in units of C. {payload['environment']['date']}.",
        [("n", True), ("epsilon", True), ("epsilon_c", True), ("q", True), ("K", True), ("fixed-size z", True),
         ("Poisson z", True), ("ratio", True), ("add/remove z (units of C)", True)],
        [[f"{row['n_images']:,}", f"{row['epsilon']:g}", f"{row['codec_epsilon']:.3f}", f"{row['rate']:.5f}",
          str(row["steps"]), f"{row['fixed_z']:.3f}", f"{row['poisson_z']:.3f}", f"{row['ratio']:.2f}",
          f"{row['add_remove_z']:.3f}"] for row in payload["rows"]],
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--images", type=int, nargs="+", default=[55_000, 60_000])
    parser.add_argument("--epsilons", type=float, nargs="+", default=[10.0, 5.0, 1.0])
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--name", default="dpsgd_codec_accounting")
    args = parser.parse_args(argv)
    rows = [row(n_images, epsilon) for n_images in args.images for epsilon in args.epsilons]
    payload = {"environment": environment(torch.device("cpu")), "rows": rows}
    text = markdown(payload)
    write_results(args.out, args.name, payload, text)
    print(text)


if __name__ == "__main__":
    main()

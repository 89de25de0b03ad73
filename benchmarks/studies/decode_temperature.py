"""The DP-SGD codec's decode temperature and the flow's settings on its latent, chosen by FID on MNIST's validation
split (issue 45).

The ``"private-autoencoder"`` codec decodes a pixel as :math:`\\sigma(t \\cdot \\mathrm{dec}(u))`: at t = 1 the
Bernoulli mean its cross-entropy trains (grey where a stroke's place is uncertain), sharper above it
(``adapters.private_autoencoder.DECODE_TEMPERATURE``). Decoding is post-processing, so every t is scored on one fit:
the validation grid's codec and flow settings, chosen there by CAS (``image_runner.select_settings``), DPSWflow at
``--epsilon`` (the codec's share of it included), one generation run of ``--samples`` labelled codes, decoded at each
``--temperatures`` value; and the codec's ceiling (the released images' own codes) at each ``--ceiling`` value.
``--variants`` fits the flow again with one or more of its settings changed (``image_runner.FlowChoice``'s fields,
``"bins=32"``, ``"steps=6000,step_size=0.5"``; ``""`` is the chosen setting itself), on the same codec and its
released codes, each fit's codes decoded at every temperature. Each set is scored with FID and precision / recall
against as many held-out validation images and with CAS (MLP / CNN trained on the decoded pairs, scored on all 5,000
held-out images). The test split is never read.

Run: ``python benchmarks/studies/decode_temperature.py --data-root ../shared/data --inception
../shared/weights/inception_fid_torchscript.pt [--temperatures 1 2 4 8] [--ceiling 1 4] [--samples 2000]
[--variants "" bins=32 steps=6000 --name dpsgd_flow_settings]`` (the codec from ``benchmarks/.cache`` when the
validation grid trained it there, else trained anew, about 30 minutes on the CPU; a fit and its scores about 9
minutes on one CPU thread beside another job). Writes ``benchmarks/results/<name>.{json,md}`` (``decode_temperature`` by default).
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import json
import sys
import time
import tomllib
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: the shared modules, imported by name
from common import RESULTS, environment, results_page, write_results
from image_runner import CONFIGS, FlowChoice, build_model, cell_config, load_grid, private_set, score, select_settings

from synthcity_dpswf.adapters.private_autoencoder import PrivateAutoencoderCodec
from synthcity_dpswf.datasets import DATASET_CLASSES
from synthcity_dpswf.recipes.images import codec_order, fit_releases, plan_images, run_budget

GRID = CONFIGS / "dpsgd_codec_mnist_validation.toml"
CACHE = Path(__file__).resolve().parents[1] / ".cache"


def at_temperature(codec: PrivateAutoencoderCodec, temperature: float) -> PrivateAutoencoderCodec:
    """The same trained codec decoding at ``temperature``."""
    other = copy.copy(codec)
    other.settings = dataclasses.replace(codec.settings, decode_temperature=temperature)
    return other


FLOW_FIELDS = ("directions", "bins", "steps", "step_size", "flow_directions", "estimator", "labelling")
"""The settings a variant may change: the flow's release and the flow itself, never the codec (its share, and so its
training and released codes, stay those of the validation's choice)."""


def variant_of(choice: FlowChoice, text: str) -> FlowChoice:
    """``choice`` with the fields ``text`` names changed (``"key=value,key=value"``, each value a TOML value, each key
    one of ``FLOW_FIELDS``; ``""``: ``choice`` itself)."""
    pairs = [part.split("=") for part in text.split(",") if part.strip()]
    if any(len(pair) != 2 or not pair[0].strip() or not pair[1].strip() for pair in pairs):
        raise ValueError(f"a variant is 'key=value[,key=value]' of the flow's settings (e.g. 'bins=32'), got {text!r}.")
    values = {key.strip(): tomllib.loads(f"value = {value.strip()}")["value"] for key, value in pairs}
    other = sorted(set(values) - set(FLOW_FIELDS))
    if other:
        raise ValueError(f"a variant changes the flow's settings {list(FLOW_FIELDS)} only, got {other} in {text!r}: "
                         "the codec and its share are the validation's choice.")
    return FlowChoice.of({**choice.stored(), **values, "label": text})


def run(data_root: Path, inception: Path, temperatures: list[float], ceiling: list[float], samples: int,
        epsilon: float, grid_path: Path, validation_path: Path, cache: Path, device: str = "cpu",
        variants: tuple[str, ...] | list[str] = ("",)) -> dict[str, Any]:
    """The scores of every decoded set (module docstring), with what was fitted."""
    grid = load_grid(grid_path, [f"fid_samples={samples}"])
    if grid.split != "validation":
        raise ValueError(f"the decode temperature is chosen on a validation grid, got split {grid.split!r} in {grid_path}.")
    validation = json.loads(validation_path.read_text())
    spec, choice, _ = select_settings(validation, grid.codecs, epsilon, grid.dataset, grid.samples)
    if not spec.startswith("dpae:"):
        raise ValueError(f"the validation's choice at epsilon {epsilon:g} is {spec}, not the DP-SGD codec (dpae:...).")
    if not variants or len(set(variants)) != len(variants):
        raise ValueError(f"pass each variant once, at least one (\"\": the chosen setting), got {list(variants)}.")
    settings = [variant_of(choice, text) for text in variants]  # refused before any fit
    data = private_set(grid, spec, data_root, inception, device, cache)
    private_images, private_labels = data.images[data.private], data.labels[data.private]
    scoring_grid = dataclasses.replace(grid, fid_samples=samples)
    rows: list[dict[str, Any]] = []

    def add_rows(decoded: str, variant: str, values: list[float], latents: torch.Tensor, latent_labels: torch.Tensor,
                 codec: PrivateAutoencoderCodec, fit_seconds: float | None) -> None:
        for temperature in values:
            started = time.perf_counter()
            images = at_temperature(codec, temperature).decode(latents)
            scores = score(scoring_grid, data.scoring, images, latent_labels, device)
            rows.append({"decoded": decoded, "variant": variant, "temperature": temperature, **scores,
                         "fit_seconds": fit_seconds, "seconds": time.perf_counter() - started})
            print(rows[-1], flush=True)

    for index, (text, setting) in enumerate(zip(variants, settings)):
        config = cell_config(grid, spec, "dpswflow", setting, "replace_one", epsilon, device)
        model = build_model(grid, "dpswflow", config)
        started = time.perf_counter()
        plan = plan_images(private_images, private_labels, DATASET_CLASSES[grid.dataset], run_budget(config), model,
                           codec_order(config, data.images, data.public, data.private, cache, False, None))
        codec = plan.codec
        if not isinstance(codec, PrivateAutoencoderCodec):
            raise TypeError(f"{spec} built a {type(codec).__name__}, not the private autoencoder.")
        model = fit_releases(model, plan)
        codes, labels = model.sample_labelled(samples, seed=grid.seed)
        fitted = time.perf_counter() - started
        print(f"{spec} {setting} epsilon {epsilon:g}: fitted and sampled in {fitted:.0f} s", flush=True)
        add_rows("flow", text, temperatures, codes.detach().cpu(), labels.cpu(), codec, fitted)
        if index == 0:  # the codec and its released codes are the same for every variant
            add_rows("ceiling", "", ceiling, plan.records[:samples], private_labels[:samples], codec, None)
    return {"environment": environment(torch.device(device)), "codec": spec, "setting": choice.stored(),
            "epsilon": epsilon, "samples": samples, "n_scored": len(data.scoring.images), "description": codec.public_description,
            "variants": list(variants), "rows": rows}


def markdown(payload: dict[str, Any]) -> str:
    """The results page: a line per decoded set (with a variant column where the flow's settings were varied)."""
    setting = ", ".join(f"{key} {value}" for key, value in payload["setting"].items() if value not in ("", None))
    description = (
        f"MNIST validation split (5,000 private training images held out, the test set unread), DPSWflow at epsilon "
        f"{payload['epsilon']:g}, replace-one, delta 1e-5, no public data: {payload['codec']} ({setting}; the codec "
        f"and settings the validation grid chose by CAS). One fit per variant of those settings (the fields it "
        f"changes; blank: the chosen setting), its {payload['samples']:,} generated codes decoded "
        f"at each temperature t (a pixel sigmoid(t * logit)); the ceiling: the released images' own codes decoded "
        f"alike. FID and precision / recall against {payload['samples']:,} held-out images (biased upward at this "
        f"size: compare rows, not with the 10,000-image FIDs), CAS of classifiers trained on the decoded pairs and "
        f"scored on the {payload['n_scored']:,} held-out images. `benchmarks/studies/decode_temperature.py`."
    )
    rows = [[row["decoded"], row.get("variant", "") or "-", f"{row['temperature']:g}", f"{row['fid']:.1f}",
             f"{row['precision']:.3f}", f"{row['recall']:.3f}", f"{row['mlp']:.1%} / {row['cnn']:.1%}"]
            for row in payload["rows"]]
    columns = [("decoded", False), ("variant", False), ("t", True), ("FID", True), ("precision", True), ("recall", True),
               ("CAS MLP / CNN", False)]
    title = ("The flow's settings on the DP-SGD codec's latent" if any(payload.get("variants", [""])) else
             "The DP-SGD codec's decode temperature")
    return results_page(f"{title}, chosen on MNIST's validation split", description, columns, rows)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-root", type=Path, required=True)
    parser.add_argument("--inception", type=Path, required=True, help="Inception TorchScript file")
    parser.add_argument("--temperatures", type=float, nargs="+", default=[1.0, 2.0, 4.0, 8.0])
    parser.add_argument("--ceiling", type=float, nargs="*", default=[1.0, 4.0])
    parser.add_argument("--samples", type=int, default=2000)
    parser.add_argument("--epsilon", type=float, default=10.0)
    parser.add_argument("--grid", type=Path, default=GRID, help="a validation grid of the DP-SGD codec")
    parser.add_argument("--validation", type=Path, default=RESULTS / "dpsgd_codec_mnist_validation.json",
                        help="its results, from which the codec and flow settings are chosen")
    parser.add_argument("--cache", type=Path, default=CACHE)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--variants", nargs="+", default=[""],
                        help='the flow\'s settings to fit, each "key=value[,key=value]" changed from the chosen one ("": itself)')
    parser.add_argument("--name", default="decode_temperature", help="the results files' name")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    payload = run(args.data_root, args.inception, args.temperatures, args.ceiling, args.samples, args.epsilon,
                  args.grid, args.validation, args.cache, args.device, args.variants)
    write_results(args.out, args.name, payload, markdown(payload))


if __name__ == "__main__":
    main()

"""Image benchmark: the flows, DPSWgen and a DP-SGD GAN on MNIST and FashionMNIST latents (the paper's Sec. 5).

For each dataset the training set is halved (seeded): the public half trains one autoencoder (the paper's conv
AE, latent 8), shared by every method: every number here assumes that public half (``--codec public-half``, the
default). ``--codec other-dataset`` trains the same autoencoder on the other dataset's whole training set
(FashionMNIST for MNIST and the other way round: no image of the private distribution outside the private set)
and ``--codec dct`` encodes with a fixed DCT codec (``experiments.images.dct_codec``, d = 77: no public
data); both need no image of the training set, which is then private as a whole
(``experiments.images.split_training_set``; ``--n-private`` caps each codec's private set alike). Each codec
writes its own results files. The private set, encoded (unit latents, d = 8 with the autoencoders) with its
labels, is all that the generators see: per class for histogram releases,
joined into the record (``LabelledCodec``, d = 18, unit ball) for record and projected releases and for the
GAN. Every method is fitted once per
(dataset, epsilon) and then sampled in ``runs`` generation runs (seeds 1000 + run), each scored with

- FID: Inception pool3 features of ``fid_samples`` generated vs the first ``fid_samples`` test images
  (torchmetrics' Frechet distance; biased upwards at small N: compare rows of one table only),
- precision / recall: Kynkaanniemi et al. (2019), k = 3, on the same features,
- CAS: an MLP and a small CNN (``evaluation.CLASSIFIERS``), each trained on the generated (image, label) pairs
  (on ``--device``),
  accuracy on the whole test set.

Methods (delta = 1e-5):
  DPSWflow                           one class-conditional projected-histogram release (L = 500, G = 16): the
                                     package default; plain flow, h = 1, ``flow_steps`` steps
  DPSWflow-r                         per-step histogram releases (b = n / 10, K = 100, M = 50), pooled
  DPSWgen                            a conditional generator network on DPSWflow-r's histogram releases
and the previous release kinds (batches of b = 250, ``passes`` passes, h = 3, ``n_steps`` steps):
  DPSWflow-r record                  record releases, pooled (the default before histograms)
  DPSWflow-r record once             the same releases, each used once by the step that made it
  DPSWflow record                    one record release of all records
  DPSWgen record                     a generator network on DPSWflow-r record's releases
  DPSWflow-r projected once          the paper's scheme (projected releases, Delta = 2 ||Theta||_2, each used
                                     once) under the sound accountant
  DP-SGD GAN                         a conditional GAN, Opacus per-sample clipping, same sampling and accountant
and, at epsilon 10 and 5, the paper's three methods under the paper's convention (sigma, the noise multiplier
that Opacus gives for (epsilon, q, K), used as the noise std of the projected release, i.e. Delta taken as
1); their reported epsilon is the sound one of the noise actually added.

Run: ``python benchmarks/images.py --data-root ../shared/data --inception ../shared/weights/inception_fid_torchscript.pt
--quick`` (about an hour on 2 CPU cores) or ``--full`` (meant for one GPU). Writes
``benchmarks/results/images_{quick,full}.{json,md}`` (``images_{quick,full}_{other_dataset,dct}.{json,md}`` with
``--codec``), sample grids and FID-vs-epsilon plots.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import DELTA, RESULTS, choose_device, environment, finite_or_text, mean_std, write_json  # noqa: E402

from synthcity_dpswf.adapters import LabelledCodec  # noqa: E402
from synthcity_dpswf.adapters.image_codecs import ImageCodec  # noqa: E402
from synthcity_dpswf.datasets import IMAGE_LOADERS  # noqa: E402
from synthcity_dpswf.evaluation import (  # noqa: E402
    InceptionFeatures,
    classification_accuracies,
    frechet_distance,
    inception_features,
    precision_recall,
    save_labelled_grid,
)
from synthcity_dpswf.experiments.images import (  # noqa: E402
    CODECS,
    ImageRunConfig,
    build_codec,
    codec_assumption,
    codec_budget,
    load_other_training_set,
    split_training_set,
)
from synthcity_dpswf.math import random_directions  # noqa: E402
from synthcity_dpswf.models import (  # noqa: E402
    DPSWFlow,
    DPSWFlowR,
    DPSWGen,
    FlowSettings,
    Generator,
    SlicedGenerator,
    release_steps,
)
from baselines.dpsgd_gan import DPSGDGAN  # noqa: E402
from synthcity_dpswf.privacy import ReleaseAccountant, projected_sensitivity  # noqa: E402

BATCH = 250
PAPER_LATENT_DIM = 8
"""The paper's autoencoder latent size, which this protocol keeps (the package trains 16: ``MNIST_LATENT_DIM``)."""
PAPER_EPSILONS = (10.0, 5.0)
PAPER_FID = {  # the paper's Table (FID, 5 generation runs), epsilon inf / 10 / 5
    "mnist": {"DPSWgen": (114, 124, 198), "DPSWflow-r": (21, 70, 114), "DPSWflow": (73, 118, 171)},
    "fashion_mnist": {"DPSWgen": (138, 170, 199), "DPSWflow-r": (42, 88, 98), "DPSWflow": (96, 98, 129)},
}


@dataclass(frozen=True)
class Mode:
    """The scale of a run; everything else is the same in both modes."""

    name: str
    n_public: int | None  # None: the whole public half (30,000) trains the autoencoder
    n_private: int | None  # None: the whole private half (30,000)
    autoencoder_epochs: int
    passes: float
    n_steps: int
    flow_steps: int  # histogram releases
    n_samples: int
    fid_samples: int
    runs: int
    gan_epochs: float
    n_test: int | None = None  # None: CAS on the whole test set (10,000); fewer only to check the code quickly


MODES = {
    "quick": Mode("quick", None, 10_000, 3, 10, 600, 1500, 1000, 128, 2, 20),
    "full": Mode("full", None, None, 10, 35, 3000, 1500, 10_000, 10_000, 5, 50),
}


@dataclass(frozen=True)
class Method:
    """A table row: which fitted model (``fit``) and which generation settings (``overrides``)."""

    label: str
    fit: str
    overrides: dict[str, Any] = dataclasses.field(default_factory=dict)
    convention: str = "sound"


METHODS = [
    Method("DPSWflow", "hist_flow"),
    Method("DPSWflow-r", "hist_flow_r"),
    Method("DPSWgen", "hist_gen"),
    Method("DPSWflow-r record", "flow_r"),
    Method("DPSWflow-r record once", "flow_r", {"reuse": "once"}),
    Method("DPSWflow record", "flow"),
    Method("DPSWgen record", "gen"),
    Method("DPSWflow-r projected once", "flow_r_projected", {"reuse": "once"}),
    Method("DP-SGD GAN", "gan"),
]
PAPER_METHODS = [
    Method("DPSWgen", "paper_gen", convention="paper"),
    Method("DPSWflow-r", "paper_flow_r", convention="paper"),
    Method("DPSWflow", "paper_flow", convention="paper"),
]


def mean_projected_sensitivity(dim: int, n_directions: int, draws: int = 200, seed: int = 0) -> float:
    """E[2 ||Theta||_2] over unit-column Theta (d x L): converts the paper's noise std into our multiplier."""
    generator = torch.Generator().manual_seed(seed)
    return sum(projected_sensitivity(random_directions(dim, n_directions, generator), 1.0) for _ in range(draws)) / draws


def paper_sigma(epsilon: float, n_records: int, batch_size: int, steps: int) -> float:
    """The sigma of the paper's convention: Opacus' noise multiplier for (epsilon, q, K), used as a noise std."""
    return ReleaseAccountant(n_records, batch_size).calibrate(epsilon, DELTA, steps)


def fit_model(key: str, data: "Dataset", epsilon: float, mode: Mode, device: torch.device) -> tuple[Generator, dict[str, Any]]:
    """Fit the model behind ``key`` at ``epsilon`` (every one the same way, ``models.Generator``; the paper's rows
    set the noise by the paper's convention); returns it and what the table states about its noise."""
    settings = FlowSettings(n_steps=mode.n_steps, step_size=3.0)  # the record releases' measured flow
    histogram = FlowSettings(n_steps=mode.flow_steps)  # the package defaults otherwise
    once = dataclasses.replace(settings, reuse="once")
    common: dict[str, Any] = {"device": device}
    record = {"release": "record", **common}
    per_step = {"batch_size": BATCH, "passes": mode.passes, **record}
    n = data.latents.shape[0]
    builders: dict[str, Callable[[], Generator]] = {
        "hist_flow": lambda: DPSWFlow(settings=histogram, **common),
        "hist_flow_r": lambda: DPSWFlowR(settings=histogram, **common),
        "hist_gen": lambda: DPSWGen(settings=histogram, **common),
        "flow_r": lambda: DPSWFlowR(settings=settings, **per_step),
        "flow": lambda: DPSWFlow(settings=settings, **record),
        "gen": lambda: DPSWGen(settings=settings, **per_step),
        "flow_r_projected": lambda: DPSWFlowR(release="projected", settings=settings, **per_step),
        "gan": lambda: DPSGDGAN(
            batch_size=BATCH, epochs=mode.gan_epochs, n_classes=10, label_weight=LabelledCodec(10).label_weight, device=device
        ),
    }
    paper_builders: dict[str, Callable[[], SlicedGenerator]] = {
        "paper_gen": lambda: DPSWGen(settings=once, **{**per_step, "release": "projected"}),
        "paper_flow_r": lambda: DPSWFlowR(settings=once, **{**per_step, "release": "projected"}),
        "paper_flow": lambda: DPSWFlow(release="projected", settings=settings, **common),
    }
    facts: dict[str, Any] = {}
    model: Generator
    if key in paper_builders and math.isfinite(epsilon):
        flow = paper_builders[key]()
        batch, steps = (n, 1) if key == "paper_flow" else (BATCH, release_steps(n, BATCH, mode.passes))
        sigma = paper_sigma(epsilon, n, batch, steps)
        delta_bar = mean_projected_sensitivity(data.records.shape[1], flow.mechanism.options.n_directions)
        model = flow.fit(data.latents, None, DELTA, labels=data.labels, n_classes=10, noise_multiplier=sigma / delta_bar)
        facts = {"paper_sigma": sigma, "paper_epsilon": epsilon, "mean_noise_std": float(flow.pool_.noise_std.mean())}
    else:
        model = {**builders, **paper_builders}[key]()
        model = model.fit(data.latents, epsilon, DELTA, labels=data.labels, n_classes=10)
    report = model.privacy_report
    facts.update({
        "release": getattr(model, "release", "DP-SGD"),
        "epsilon": finite_or_text(report.epsilon), "conservative_epsilon": finite_or_text(report.conservative_epsilon),
        "noise_multiplier": report.noise_multiplier, "noise_std": report.noise_std, "steps": report.steps,
    })
    return model, facts


def sample_images(data: "Dataset", model: Generator, method: Method, count: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``count`` generated (image, label) pairs."""
    latents, labels = model.sample_labelled(count, seed=seed, **method.overrides)
    return data.adapter.decode(latents.detach().cpu()).cpu(), labels.cpu()


def class_row(images: torch.Tensor, labels: torch.Tensor, n_classes: int = 10) -> torch.Tensor:
    """One image per class, in class order (blank where a class was never generated)."""
    row = torch.ones(n_classes, *images.shape[1:])
    for label in range(n_classes):
        found = torch.nonzero(labels == label).flatten()
        if len(found):
            row[label] = images[found[0]]
    return row


class Dataset:
    """The public codec, the private records and the test set of one dataset."""

    def __init__(
        self, name: str, data_root: Path, mode: Mode, cache: Path, device: torch.device, seed: int, codec: str = "public-half",
    ) -> None:
        self.assumption = codec_assumption(codec, name)
        other = load_other_training_set(name, data_root) if codec == "other-dataset" else None  # missing files: now
        images, labels = IMAGE_LOADERS[name](data_root, train=True)
        test_images, test_labels = IMAGE_LOADERS[name](data_root, train=False)
        self.test_images, self.test_labels = test_images[: mode.n_test], test_labels[: mode.n_test]
        public, private = split_training_set(codec, len(images), seed)
        public, private = public[: mode.n_public], private[: mode.n_private]
        started = time.perf_counter()
        config = ImageRunConfig(dataset=name, codec=codec, latent_dim=PAPER_LATENT_DIM,
                                autoencoder_epochs=mode.autoencoder_epochs, refiner_epochs=0, seed=seed, device=str(device))
        self.adapter: ImageCodec = build_codec(config, images, public, private, codec_budget(config), cache, False, other)
        self.autoencoder_seconds = time.perf_counter() - started
        self.codec = LabelledCodec(n_classes=10)
        self.latents, self.labels = self.adapter.encode(images[private]), labels[private]
        self.records = self.codec.encode(self.latents, self.labels)  # joint records: the dimension the GAN sees


def score(
    data: Dataset, images: torch.Tensor, labels: torch.Tensor, real_features: torch.Tensor, network: InceptionFeatures,
    mode: Mode, seed: int, device: torch.device,
) -> dict[str, float]:
    """FID, precision / recall and both CAS of one generated set; the CAS classifiers train on ``device``."""
    features = inception_features(images[: mode.fid_samples], network)
    cas = classification_accuracies(images, labels, data.test_images, data.test_labels, seed, device=device)
    precision, recall = precision_recall(real_features, features)
    return {
        "fid": frechet_distance(real_features, features), "precision": precision, "recall": recall,
        "cas": cas["mlp"], "cas_cnn": cas["cnn"],
    }


def run_dataset(
    name: str, args: argparse.Namespace, mode: Mode, device: torch.device, network: InceptionFeatures,
    payload: dict[str, Any], save: Callable[[], None],
) -> None:
    """Every (method, epsilon) of one dataset; ``payload`` gets each row as it is measured and is saved."""
    data = Dataset(name, args.data_root, mode, args.cache, device, args.seed, args.codec)
    real_features = inception_features(data.test_images[: mode.fid_samples], network)
    payload["datasets"][name] = {
        "assumption": data.assumption,
        "autoencoder": data.adapter.public_description, "autoencoder_seconds": data.autoencoder_seconds,
        "n_private": int(data.records.shape[0]), "record_dim": int(data.records.shape[1]),
    }
    rows: list[dict[str, Any]] = payload["rows"]

    # The ceiling of every method: the private images through the autoencoder, no generator, no privacy.
    images, labels = data.adapter.decode(data.latents[: mode.n_samples]).cpu(), data.labels[: mode.n_samples]
    rows.append({"dataset": name, "method": "autoencoder reconstruction", "convention": "none", "target_epsilon": "inf",
                 "runs": [score(data, images, labels, real_features, network, mode, args.seed, device)]})
    print(f"[{name}] reconstruction: {rows[-1]['runs'][0]}", flush=True)
    save()

    grids: dict[float, dict[str, torch.Tensor]] = {}
    jobs = [(method, epsilon) for epsilon in args.epsilons for method in METHODS if method.label in args.methods]
    jobs += [(method, epsilon) for epsilon in args.epsilons if epsilon in PAPER_EPSILONS for method in PAPER_METHODS
             if method.label in args.methods and args.paper]
    fitted: dict[tuple[str, float], tuple[Any, dict[str, Any], float]] = {}
    for method, epsilon in jobs:
        if (method.fit, epsilon) not in fitted:
            started = time.perf_counter()
            model, facts = fit_model(method.fit, data, epsilon, mode, device)
            fitted = {key: value for key, value in fitted.items() if key[1] == epsilon}  # keep memory bounded
            fitted[(method.fit, epsilon)] = (model, facts, time.perf_counter() - started)
        model, facts, fit_seconds = fitted[(method.fit, epsilon)]
        runs, generate_seconds = [], []
        for run in range(mode.runs):
            started = time.perf_counter()
            images, labels = sample_images(data, model, method, mode.n_samples, 1000 + run)
            generate_seconds.append(time.perf_counter() - started)
            runs.append(score(data, images, labels, real_features, network, mode, args.seed, device))
            if run == 0 and method.convention == "sound":
                grids.setdefault(epsilon, {})[method.label] = class_row(images, labels)
                path = args.out / f"{payload['stem']}_{name}_eps{epsilon:g}.png"
                title = f"{name}, epsilon = {epsilon:g}, delta = {DELTA:g}; {data.assumption}"
                save_labelled_grid(grids[epsilon], [f"label {label}" for label in range(10)], path, title)
        rows.append({
            "dataset": name, "method": method.label, "convention": method.convention, "target_epsilon": finite_or_text(epsilon),
            **facts, "fit_seconds": fit_seconds, "generate_seconds": generate_seconds, "runs": runs,
        })
        print(f"[{name}] {method.label} ({method.convention}) eps={epsilon:g}: reported eps={facts['epsilon']}, "
              f"FID {mean_std([r['fid'] for r in runs])}, CAS {mean_std([r['cas'] for r in runs])} (MLP) / "
              f"{mean_std([r['cas_cnn'] for r in runs])} (CNN), "
              f"fit {fit_seconds:.0f} s, generate {sum(generate_seconds):.0f} s", flush=True)
        save()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-root", type=Path, required=True, help="torchvision root holding MNIST/ and FashionMNIST/")
    parser.add_argument("--inception", type=Path, default=None, help="Inception TorchScript file (or $DPSWF_INCEPTION)")
    scale = parser.add_mutually_exclusive_group()
    scale.add_argument("--quick", action="store_const", const="quick", dest="mode", help="minutes on 2 CPU cores (default)")
    scale.add_argument("--full", action="store_const", const="full", dest="mode", help="the paper's scale, for one GPU")
    parser.add_argument("--device", default="auto", help="auto (CUDA when present), cpu, cuda, cuda:1, ...")
    parser.add_argument("--datasets", nargs="+", default=list(IMAGE_LOADERS), choices=list(IMAGE_LOADERS))
    parser.add_argument("--codec", choices=[codec for codec in CODECS if codec != "private-pca"], default="public-half",
                        help="what is public: public-half (default), other-dataset or dct (see above); the private-pca "
                        "codec is paid per epsilon and runs in benchmarks/image_runner.py (configs/images/codecs_*.toml)")
    parser.add_argument("--epsilons", nargs="+", type=float, default=[math.inf, 10.0, 5.0, 1.0])
    parser.add_argument("--methods", nargs="+", default=[method.label for method in METHODS])
    parser.add_argument("--no-paper", dest="paper", action="store_false", help="skip the paper-convention rows")
    for field in dataclasses.fields(Mode)[1:]:
        parser.add_argument(f"--{field.name.replace('_', '-')}", type=float if field.name in ("passes", "gan_epochs") else int,
                            default=None, help=f"override the mode's {field.name}")
    parser.add_argument("--seed", type=int, default=0, help="public seed of the split, the autoencoder and the metrics")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--cache", type=Path, default=Path(__file__).resolve().parent / ".cache")
    args = parser.parse_args()
    mode = MODES[args.mode or "quick"]
    overrides = {field.name: getattr(args, field.name) for field in dataclasses.fields(Mode)[1:]}
    mode = dataclasses.replace(mode, **{name: value for name, value in overrides.items() if value is not None})
    if mode.n_test is not None and mode.n_test < mode.fid_samples:
        parser.error(f"--n-test {mode.n_test} is below the FID's {mode.fid_samples} test images: raise it or lower --fid-samples.")
    device = choose_device(args.device)
    network = InceptionFeatures(args.inception).to(device)
    started = time.perf_counter()
    stem = f"images_{mode.name}" + ("" if args.codec == "public-half" else "_" + args.codec.replace("-", "_"))
    payload: dict[str, Any] = {
        "suite": "images", "codec": args.codec, "stem": stem, "mode": dataclasses.asdict(mode), "delta": DELTA,
        "batch_size": BATCH, "seed": args.seed,
        "generation_seeds": [1000 + run for run in range(mode.runs)], "environment": environment(device),
        "datasets": {}, "wall_seconds": 0.0, "paper_fid": PAPER_FID, "rows": [],
    }

    def save() -> None:  # after every row, so that an interrupted run keeps what it measured
        payload["wall_seconds"] = time.perf_counter() - started
        write_json(args.out / f"{stem}.json", payload)

    for name in args.datasets:
        run_dataset(name, args, mode, device, network, payload, save)
    from report import image_figures, image_markdown

    (args.out / f"{stem}.md").write_text(image_markdown(payload))
    image_figures(payload, args.out)
    print(image_markdown(payload))


if __name__ == "__main__":
    main()

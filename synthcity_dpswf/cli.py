"""The ``dpswf`` command line: ``dpswf demo`` (the main job), ``dpswf toy`` (the paper's Figure 1), ``dpswf images``,
``dpswf table`` (a synthetic copy of your CSV or Parquet table) and ``dpswf check`` (what of it does not fit a schema)."""

from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

if TYPE_CHECKING:
    from synthcity_dpswf.datasets import DatasetUnavailable


def _toy(args: argparse.Namespace) -> int:
    from synthcity_dpswf.experiments.toy import PAPER_SW, run_toy

    result = run_toy(Path(args.out), n_particles=args.particles, n_steps=args.steps, seed=args.seed)
    print(f"figure written to {result.figure}")
    print(f"{'sigma':>6}  {'SW to target':>12}  {'paper':>6}")
    for sigma, distance in result.sliced_distance.items():
        paper = f"{PAPER_SW[sigma]:.2f}" if sigma in PAPER_SW else "-"
        print(f"{sigma:>6g}  {distance:>12.3f}  {paper:>6}")
    return 0


def _demo(args: argparse.Namespace) -> int:
    from synthcity_dpswf.experiments.demo import run_demo

    out = Path(args.out)
    runs = run_demo(out, epsilon=args.epsilon, seed=args.seed, progress=not args.quiet)
    private = runs[args.epsilon]
    print(private.report)
    print()
    print(f"grid of synthetic digits beside real ones written to {out}")
    print("classifier trained on 2,000 synthetic digits, tested on 500 real ones (chance: 10%):")
    for epsilon, run in runs.items():
        label = "epsilon = inf (not private)" if math.isinf(epsilon) else f"epsilon = {epsilon:g}"
        print(f"  {label:<28} accuracy {run.accuracy:.1%}")
    return 0


def _images(args: argparse.Namespace) -> int:
    from synthcity_dpswf.datasets import DatasetUnavailable
    from synthcity_dpswf.experiments.images import run_images
    from synthcity_dpswf.recipes.images import ImageRunConfig, check_public_split, flow_defaults

    try:
        check_public_split(args.codec, args.neighbouring)
        check_codec_flags(args)
        codec_options = parse_codec_options(args.codec_option, args)
    except ValueError as error:
        raise SystemExit(f"dpswf images: error: {error}") from error
    given = {name: value for name, value in (
        ("latent_dim", args.latent_dim), ("autoencoder_epochs", args.ae_epochs), ("refiner_epochs", args.refiner_epochs),
        ("n_release_directions", args.directions), ("n_bins", args.bins), ("n_steps", args.steps),
    ) if value is not None}
    fields = {**flow_defaults(args.codec, args.generator, args.release), **given}  # what is given wins
    config = ImageRunConfig(
        dataset=args.dataset, codec=args.codec, generator=args.generator, release=args.release, epsilon=args.epsilon,
        neighbouring=args.neighbouring, **fields,  # type: ignore[arg-type]
        n_samples=args.samples, fid_samples=args.fid_samples, start=args.start,
        step_size=args.step_size, codec_share=args.codec_share, device=args.device, seed=args.seed,
        codec_options=codec_options,
        **{name: value for name, value in (("dct_frequencies", args.dct_frequencies),
                                           ("pca_components", args.pca_components)) if value is not None},
    )
    try:
        config.codec_request()  # the codec's options checked by its registry entry, before any image is read
    except (ValueError, TypeError) as error:
        raise SystemExit(f"dpswf images: error: {error}") from error
    inception_path = args.inception or os.environ.get("DPSWF_INCEPTION")
    inception = Path(inception_path) if inception_path else None
    try:
        result = run_images(config, Path(args.data_root), Path(args.out), inception, progress=not args.quiet,
                            download=args.download)
    except DatasetUnavailable as error:
        raise SystemExit(f"dpswf images: error: {missing_dataset_line(error)}") from error
    print(result.report)
    print()
    print(f"sample grid written to {result.grid}")
    if result.fid is None:
        print("FID not computed (pass --inception and --fid-samples > 0)")
    else:
        print(f"FID {result.fid:.1f} ({args.fid_samples} generated vs {args.fid_samples} test images), "
              f"precision {result.precision:.2f}, recall {result.recall:.2f}")
    print(f"CAS {result.cas['mlp']:.1%} (MLP) / {result.cas['cnn']:.1%} (CNN), each trained on {args.samples} generated "
          "pairs and tested on the real test set")
    print("wall time (s): " + ", ".join(f"{name} {value:.0f}" for name, value in result.seconds.items()))
    return 0


CODEC_FLAGS = {
    "--ae-epochs": ("ae_epochs", "an autoencoder trained on public images (public-half, other-dataset)"),
    "--latent-dim": ("latent_dim", "an autoencoder trained on public images (public-half, other-dataset); for "
                     "private-autoencoder give --codec-option latent_dim=..."),
    "--refiner-epochs": ("refiner_epochs", "an autoencoder trained on public images (public-half, other-dataset)"),
    "--dct-frequencies": ("dct_frequencies", "--codec dct"),
    "--pca-components": ("pca_components", "--codec private-pca"),
}
"""``dpswf images``' flags that set one codec's settings, and which codec they apply to (``check_codec_flags``)."""


def check_codec_flags(args: argparse.Namespace) -> None:
    """Refuse a codec flag given for a codec it does not apply to (it would be ignored), naming the codec it is for."""
    from synthcity_dpswf.recipes.images import codec_entry

    entry = codec_entry(args.codec)
    applies = {"--ae-epochs": entry.public_images != "none", "--latent-dim": entry.public_images != "none",
               "--refiner-epochs": entry.public_images != "none",
               "--dct-frequencies": "frequencies" in entry.options, "--pca-components": "components" in entry.options}
    for flag, (name, codec) in CODEC_FLAGS.items():
        if getattr(args, name) is not None and not applies[flag]:
            raise ValueError(f"{flag} sets {codec}, not --codec {args.codec}: drop it (or use --codec-option).")


CODEC_OPTION_FLAGS = {"share": "codec_share", "components": "pca_components", "frequencies": "dct_frequencies"}
"""``--codec-option`` names that a flag of its own sets too (``--codec-share``, ...): giving both is refused."""


def parse_codec_options(pairs: list[str] | None, args: argparse.Namespace | None = None) -> dict[str, object]:
    """``--codec-option NAME=VALUE`` pairs as a dict; a VALUE that reads as a Python number (or True/False) is that."""
    import ast

    options: dict[str, object] = {}
    for pair in pairs or []:
        name, separator, text = pair.partition("=")
        if not separator or not name:
            raise ValueError(f"--codec-option takes NAME=VALUE, got {pair!r}.")
        try:
            options[name] = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            options[name] = text
        flag = CODEC_OPTION_FLAGS.get(name)
        if args is not None and flag is not None and getattr(args, flag) is not None:
            raise ValueError(f"--codec-option {name}= and --{flag.replace('_', '-')} set the same setting: give one.")
    return options


def _table(args: argparse.Namespace) -> int:
    from synthcity_dpswf.experiments.table import check_paths, run_table
    from synthcity_dpswf.plugins import PLUGINS
    from synthcity_dpswf.privacy.counts import TableRefusal

    plugin_class = {plugin.name(): plugin for plugin in PLUGINS}[args.generator]
    with tempfile.TemporaryDirectory(prefix="dpswf_table_") as workspace:  # synthcity's workspace: nothing kept
        try:  # the arguments' errors name an argument and its value: the user's own, no record's
            check_paths(Path(args.data), Path(args.out), args.rows)
            plugin = plugin_class(epsilon=args.epsilon, delta=args.delta, neighbouring=args.neighbouring,
                                  domain=args.schema, random_state=args.seed, workspace=Path(workspace))
        except (ValueError, TypeError) as error:
            raise SystemExit(f"dpswf table: error: {error}") from None
        try:
            result = run_table(Path(args.data), Path(args.out), plugin, args.rows, progress=not args.quiet)
        except TableRefusal as error:  # names a column and a reason, never a value of a record (privacy.md)
            raise SystemExit(f"dpswf table: error: {error}") from None
        except ValueError as error:  # another library's message may quote an entry
            raise SystemExit(f"dpswf table: error: {type(error).__name__} while fitting or generating (its message is "
                             "not shown: it may quote an entry of a record; the same fit from Python, "
                             "Plugins().get(...).fit(df), shows it on your machine).") from None
    print(result.report)
    print()
    print(f"{result.rows} synthetic rows written to {result.out}")
    print("wall time (s): " + ", ".join(f"{name} {value:.1f}" for name, value in result.seconds.items()))
    return 0


def _check(args: argparse.Namespace) -> int:
    import pandas as pd

    from synthcity_dpswf.adapters.tabular import check_table
    from synthcity_dpswf.experiments.table import read_table

    try:
        report = check_table(read_table(Path(args.data)), args.schema)
    except ValueError as error:
        raise SystemExit(f"dpswf check: error: {error}") from error
    if report.empty:
        print(f"{args.data} fits {args.schema}: fit will take it as it is.")
        return 0
    with pd.option_context("display.max_colwidth", 80, "display.width", 200):
        print(report.to_string(index=False))
    print()
    print("This report shows values of your table: it is for you, on your machine (not differentially private).")
    refused = report[report["at fit"] == "refused"]
    if refused.empty:
        return 0
    print(f"fit refuses the table as it is ({len(refused)} problem(s) above): declare what it holds in the schema, or "
          "map or drop those entries.")
    return 1


def missing_dataset_line(error: "DatasetUnavailable") -> str:
    """One line for a dataset that is not under ``--data-root`` or could not be downloaded there, naming the two flags
    that fix it (in place of torchvision's "use download=True" or a network traceback)."""
    needed = f" ({error.purpose})" if error.purpose else ""
    if error.downloading:
        reason = " ".join(error.reason.split())
        return (f"{error.dataset} could not be downloaded into {error.root}{needed} ({reason}); without the network, "
                f"copy torchvision's {error.dataset}/raw files into a folder and pass it as --data-root, without --download")
    return (f"{error.dataset} is not under --data-root {error.root}{needed}; pass --download to fetch it there, or point "
            f"--data-root at the folder that holds torchvision's {error.dataset}/raw files")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``dpswf`` (one sub-command per job); ``images --codec`` takes the codec registry's
    names."""
    from synthcity_dpswf.recipes.images import codec_names

    parser = argparse.ArgumentParser(prog="dpswf", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    toy = commands.add_parser("toy", help="the paper's toy flow: 5 Gaussians in 2-D, sigma in {0, 0.5, 1}")
    toy.add_argument("--out", default="dpswf_toy.png", help="where to write the PNG (default: %(default)s)")
    toy.add_argument("--particles", type=int, default=2000, help="number of particles (default: %(default)s)")
    toy.add_argument("--steps", type=int, default=200, help="flow steps, >= 10 (default: %(default)s)")
    toy.add_argument("--seed", type=int, default=0)
    toy.set_defaults(run=_toy)
    demo = commands.add_parser("demo", help="DPSWflow on scikit-learn's digits: report, sample grid, accuracy")
    demo.add_argument("--out", default="dpswf_demo.png", help="where to write the PNG grid (default: %(default)s)")
    demo.add_argument("--epsilon", type=float, default=10.0)
    demo.add_argument("--seed", type=int, default=0)
    demo.add_argument("--quiet", action="store_true", help="no progress bars")
    demo.set_defaults(run=_demo)
    images = commands.add_parser("images", help="private images through a public codec: grid, report, FID, CAS")
    images.add_argument("--dataset", choices=["mnist", "fashion_mnist"], default="mnist")
    images.add_argument("--data-root", required=True, help="torchvision root holding the dataset (see --download)")
    images.add_argument("--codec", choices=codec_names(), default="public-half",
                        help="what encodes the private images, i.e. what is public (the image codec registry's names, "
                        "an installed extension's too): public-half (default, the paper's: "
                        "an autoencoder trained on the other half of the training set), other-dataset (the same "
                        "autoencoder trained on the other dataset's whole training set, FashionMNIST for MNIST and the "
                        "other way round, also under --data-root), dct (a fixed DCT codec: no public data), private-pca (a "
                        "linear codec learned from the private images, paid with --codec-share of the budget: no public "
                        "data) or private-autoencoder (a convolutional autoencoder trained by DP-SGD on the private images, "
                        "on the CPU, paid the same way); "
                        "with any but public-half the whole training set is private")
    images.add_argument("--epsilon", type=float, default=10.0)
    images.add_argument("--neighbouring", choices=["replace_one", "add_remove"], default="replace_one",
                        help="the adjacency epsilon is calibrated for: replace-one (n public, the default) or "
                        "add/remove (n private too, per-step releases accounted with Opacus' RDP; docs/privacy.md)")
    images.add_argument("--out", default="dpswf_images", help="output folder (default: %(default)s)")
    images.add_argument("--generator", choices=["dpswflow", "dpswflow_r", "dpswgen"], default="dpswflow")
    images.add_argument("--release", default="projected_histogram",
                        help="release kind: projected_histogram (default), record or projected (the paper's); "
                        "record wants --step-size 3 --steps 3000")
    images.add_argument("--inception", default=None, help="TorchScript Inception file for FID (or $DPSWF_INCEPTION)")
    images.add_argument("--start", choices=["gaussian", "public"], default="gaussian",
                        help="start the particles from Gaussian noise or from public latents "
                        "(free; --codec public-half only)")
    images.add_argument("--ae-epochs", type=int, default=None, help="autoencoder epochs when --out holds no checkpoint "
                        "(default: ImageRunConfig's) "
                        "(one trained on other images than --codec and --seed name is refused)")
    images.add_argument("--refiner-epochs", type=int, default=None,
                        help="epochs of the autoencoder's refiner, trained on the same public images (autoencoder "
                        "codecs; 0: none; default: ImageRunConfig's)")
    images.add_argument("--samples", type=int, default=10000, help="generated images for CAS")
    images.add_argument("--fid-samples", type=int, default=1000,
                        help="generated vs test images for FID; 10000 is the literature's protocol (default: %(default)s)")
    images.add_argument("--directions", type=int, default=None,
                        help="L, directions of the histogram release (default: the generator's: 500 for dpswflow's one "
                        "release, 50 for each per-step release of dpswflow_r and dpswgen; 2000 for "
                        "dpswflow with --codec private-pca, 4000 with --codec private-autoencoder, chosen on MNIST's "
                        "validation split); with --codec "
                        "dct, chosen on MNIST's validation split by CAS (benchmarks/results/gpu_codecs/codecs/"
                        "image_codecs_mnist_validation.md): --dct-frequencies 16 --directions 8000 "
                        "--bins 32 --steps 5000 at epsilon 10, --directions 4000 --bins 32 --steps 3000 at epsilon 1")
    images.add_argument("--dct-frequencies", type=int, default=None,
                        help="K of --codec dct: the 2-D DCT frequencies u + v < K (default: 12, 77 numbers)")
    images.add_argument("--pca-components", type=int, default=None,
                        help="K of --codec private-pca: eigenvectors of the private second moment (default: "
                        "30, chosen over 50 on MNIST's validation split with L 2000 and 3000 steps, at G 32 for "
                        "epsilon 10 and G 16 for epsilon 1; FashionMNIST's chose 50 with --bins 32 at epsilon 10: "
                        "benchmarks/results/image_codecs_*_validation.md)")
    images.add_argument("--codec-share", type=float, default=None,
                        help="share of mu^2 (Gaussian DP) of the budget for a private codec's release, accounted with the "
                             "generator's releases (default: the codec's, chosen on MNIST's validation split: 0.2 for "
                             "private-pca, 0.5 for private-autoencoder)")
    images.add_argument("--codec-option", action="append", default=None, metavar="NAME=VALUE",
                        help="one of the codec's own settings, checked by its registry entry (repeatable): for "
                        "private-autoencoder epochs, batch_size, latent_dim, width, clip, learning_rate, sample_rate, "
                        "replace_one_sampling, decode_temperature (e.g. --codec-option epochs=2 --codec-option "
                        "batch_size=256)")
    images.add_argument("--download", action="store_true",
                        help="download the dataset into --data-root with torchvision when it is not there (off by "
                        "default: nothing is fetched unless asked)")
    images.add_argument("--device", default="auto",
                        help="where the autoencoder trains, the flow runs and the CAS classifiers train: auto "
                        "(default: CUDA when present), cpu or cuda")
    images.add_argument("--bins", type=int, default=None, help="G, bins per direction (default: 16, or the codec's "
                        "measured value where it has one)")
    images.add_argument("--latent-dim", type=int, default=None,
                        help="latent size of the autoencoder codecs (default: ImageRunConfig's)")
    images.add_argument("--steps", type=int, default=None,
                        help="flow steps (training steps for dpswgen; default: 1500, 3000 for dpswflow's histogram "
                        "release with --codec private-pca or private-autoencoder)")
    images.add_argument("--step-size", type=float, default=1.0, help="h (default measured on MNIST, see docs)")
    images.add_argument("--seed", type=int, default=0)
    images.add_argument("--quiet", action="store_true")
    images.set_defaults(run=_images)
    table = commands.add_parser("table", help="a differentially private synthetic copy of a CSV or Parquet table, "
                                "with its privacy report")
    table.add_argument("data", help="the table: a .csv, .parquet or .pq file (its rows are private)")
    table.add_argument("--epsilon", type=float, required=True, help="the privacy budget (required: no default is safe "
                       "for every table)")
    table.add_argument("--out", required=True, help="where to write the synthetic table (.csv, .parquet or .pq)")
    table.add_argument("--schema", default=None,
                       help="a JSON domain (public: ranges, categories, missing entries) for all the columns or some; the "
                       "columns it leaves out get the DP domain, paid from the budget (docs/guide.md)")
    table.add_argument("--generator", choices=["dpswflow", "dpswflow_r", "dpswgen"], default="dpswflow")
    table.add_argument("--rows", type=int, default=None,
                       help="synthetic rows (default: as many as the input, or the released estimate of them under "
                       "--neighbouring add_remove)")
    table.add_argument("--delta", type=float, default=None, help="default: min(1e-5, n^-1.1), stated in the report")
    table.add_argument("--neighbouring", choices=["replace_one", "add_remove"], default="replace_one",
                       help="the adjacency epsilon is calibrated for: replace-one (n public, the default) or add/remove "
                       "(n private; docs/privacy.md)")
    table.add_argument("--seed", type=int, default=0)
    table.add_argument("--quiet", action="store_true", help="no progress bar")
    table.set_defaults(run=_table)
    check = commands.add_parser("check", help="what of your table does not fit a schema (values shown: run it on your "
                                "own machine, outside any release)")
    check.add_argument("data", help="the table: a .csv, .parquet or .pq file")
    check.add_argument("--schema", required=True, help="the JSON domain to check it against")
    check.set_defaults(run=_check)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``dpswf`` console script. Its output is line-buffered, so that a run written to a file shows
    each line as it is printed (a block-buffered file holds its lines back until the buffer fills)."""
    reconfigure = getattr(sys.stdout, "reconfigure", None)
    if reconfigure is not None:
        reconfigure(line_buffering=True)
    args = build_parser().parse_args(argv)
    return int(args.run(args))


if __name__ == "__main__":
    sys.exit(main())

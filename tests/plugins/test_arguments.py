"""Every argument of the three plugins is checked where it is given (``Plugins().get``), with a message that names it
(docs/guide.md: only what needs the data waits for ``fit``)."""

from __future__ import annotations

import inspect

import pytest
import synthcity_dpswf  # noqa: F401  (registers the plugins)
from synthcity.plugins import Plugins

from synthcity_dpswf.plugins import PLUGINS
from synthcity_dpswf.plugins.base import SlicedFlowPlugin

BAD = [
    ("dpswflow", {"epsilon": 0}, r"epsilon must be > 0"),
    ("dpswflow", {"epsilon": "1.0"}, "epsilon must be a number"),
    ("dpswflow", {"delta": 1.5}, r"delta must lie in \(0, 1\), got 1.5"),
    ("dpswflow", {"neighbouring": "both"}, r"neighbouring must be one of \['add_remove', 'replace_one'\], got 'both'"),
    ("dpswflow", {"n_steps": 0}, "n_steps must be a positive integer, got 0"),
    ("dpswflow", {"n_iter": 0}, "n_iter must be a positive integer, got 0"),
    ("dpswflow", {"n_iter": 5, "n_steps": 5}, "give n_steps or its synthcity name n_iter, not both"),
    ("dpswflow", {"accountant": "nope"}, "accountant must be one of"),
    ("dpswflow", {"accountant": "replace_one_rdp", "neighbouring": "add_remove"}, "accountant 'replace_one_rdp'"),
    ("dpswflow", {"labelling": "x"}, r"labelling must be one of \['conditional', 'joint'\], got 'x'"),
    ("dpswflow", {"radius": -1}, "radius must be a finite number > 0, got -1"),
    ("dpswflow", {"radius": 0}, "radius must be > 0"),
    ("dpswflow", {"n_bins": 0}, "n_bins must be a positive integer, got 0"),
    ("dpswflow", {"n_release_directions": 2.5}, "n_release_directions must be a positive integer"),
    ("dpswflow", {"coarse_bins": 0}, "coarse_bins must be a positive integer"),
    ("dpswflow", {"target_column": ""}, "target_column must be a column name or None"),
    ("dpswflow", {"target_column": 3}, "target_column must be a column name or None"),
    ("dpswflow", {"target_tables": "all"}, r"target_tables must be one of \['pairs', 'per_value', 'none'\]"),
    ("dpswgen", {"target_tables": "per_value"}, "cannot count its tables per value"),
    ("dpswflow", {"target_column": "y", "release": "projected"}, "shapes the marginal release's tables"),
    ("dpswflow", {"fine_bins": "8"}, "fine_bins must be a positive integer"),
    ("dpswflow", {"max_pairs": 0}, "max_pairs must be a positive integer"),
    ("dpswflow", {"pair_selection": "all"}, r"pair_selection must be one of \['adaptive', 'public'\]"),
    ("dpswflow", {"release": "histogram"}, "release must be one of"),
    ("dpswflow", {"n_directions": 0}, "n_directions must be a positive integer"),
    ("dpswflow", {"step_size": -0.5}, "step_size must be a finite number > 0"),
    ("dpswflow", {"entropy": -1.0}, "entropy must be a finite number >= 0"),
    ("dpswflow", {"smoothing": -1.0}, "smoothing must be a finite number >= 0"),
    ("dpswflow", {"flow_batch_size": 0}, "flow_batch_size must be a positive integer"),
    ("dpswflow", {"reuse": "twice"}, "reuse must be one of"),
    ("dpswflow", {"domain_epsilon_share": "0.2"}, r"domain_epsilon_share must lie in \(0, 1\)"),
    ("dpswflow", {"numeric_histograms": "no"}, "numeric_histograms must be True or False"),
    ("dpswflow", {"max_one_hot": 0}, "max_one_hot must be a positive integer"),
    ("dpswflow", {"domain": {"age": (90, 17)}}, "column 'age': bounds must be finite with low < high"),
    ("dpswflow", {"time_horizons": []}, "time_horizons must be a non-empty list of finite numbers"),
    ("dpswflow", {"image_codec": "nope"}, r"image_codec must be None or a codec that needs no public image, one of \["),
    ("dpswflow", {"image_autoencoder": 3}, "image_autoencoder must be None, an AutoencoderCodec or the path"),
    ("dpswflow", {"codec_share": 1.0}, r"codec_share must lie in \(0, 1\)"),
    ("dpswflow", {"public_fraction": 1.0}, r"public_fraction must lie in \(0, 1\), got 1.0"),
    ("dpswflow", {"public_fraction": 0}, r"public_fraction must lie in \(0, 1\)"),
    ("dpswflow", {"autoencoder_epochs": 0}, "autoencoder_epochs must be a positive integer"),
    ("dpswflow", {"refiner_epochs": -1}, "refiner_epochs .* must be an integer >= 0"),
    ("dpswflow", {"refiner_weight": 0.0}, "refiner_weight must be > 0"),
    ("dpswflow", {"latent_dim": 0}, "latent_dim must be a positive integer"),
    ("dpswflow", {"n_classes": 0}, "n_classes must be a positive integer"),
    ("dpswflow", {"feature_weight": 1.5}, r"feature_weight must lie in \(0, 1\)"),
    ("dpswflow", {"dct_frequencies": 0}, "dct_frequencies must be a positive integer"),
    ("dpswflow", {"pca_components": 0}, "pca_components must be a positive integer"),
    ("dpswflow", {"sampling_patience": 0}, "sampling_patience must be a positive integer"),
    ("dpswflow", {"strict": "false"}, "strict must be True or False"),
    ("dpswflow", {"compress_dataset": 1}, "compress_dataset must be True or False"),
    ("dpswflow", {"random_state": -1}, r"random_state must be an integer in \[0, 2\*\*32\)"),
    ("dpswflow", {"device": "gpu"}, "device must be 'cpu', 'cuda'"),
    ("dpswflow", {"workspace": 3}, "workspace must be a folder path"),
    ("dpswflow_r", {"batch_size": 0}, "batch_size must be a positive integer"),
    ("dpswflow_r", {"sample_rate": 2.0, "neighbouring": "add_remove"}, r"sample_rate must lie in \(0, 1\]"),
    ("dpswflow_r", {"sample_rate": 0.1, "batch_size": 100}, "give batch_size .* or sample_rate .*, not both"),
    ("dpswflow_r", {"sample_rate": 0.1, "release": "record"}, "Poisson batches under replace-one are proven for sums"),
    ("dpswflow_r", {"batch_size": 100, "neighbouring": "add_remove"}, "give sample_rate, not batch_size"),
    ("dpswflow_r", {"passes": 0}, "passes must be a finite number > 0"),
    ("dpswgen", {"noise_dim": 0}, "noise_dim must be a positive integer"),
    ("dpswgen", {"generator_batch": 1}, "generator_batch must be an integer >= 2"),
    ("dpswgen", {"learning_rate": -1e-3}, "learning_rate must be a finite number > 0"),
]
"""One bad value per entry, refused at ``Plugins().get``: the entry's first argument is the one refused (any other
sets the scene, e.g. the adjacency an accountant or a batch size is refused under)."""


@pytest.mark.parametrize(("name", "arguments", "message"), BAD, ids=[f"{n}-{'-'.join(map(str, a))}" for n, a, _ in BAD])
def test_each_bad_argument_is_refused_at_construction_naming_it(name: str, arguments: dict[str, object],
                                                                message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Plugins().get(name, **arguments)


def test_every_argument_of_the_constructors_has_a_refused_value_in_bad() -> None:
    """docs/guide.md ("In synthcity") names the plugins' arguments in prose, with no table, so they are read from the
    constructors (``SlicedFlowPlugin``'s and the subclasses' own; synthcity's ``Plugin`` arguments that pass through
    ``**kwargs`` aside). Each takes a bounded number, a choice or a checked structure (``plugins.options``), so each is
    the refused argument of a ``BAD`` entry for a plugin that takes it."""
    plugins = {plugin_class.name(): plugin_class for plugin_class in PLUGINS}
    owners = {klass for plugin_class in PLUGINS for klass in plugin_class.__mro__
              if issubclass(klass, SlicedFlowPlugin) and "__init__" in vars(klass)}
    missing = []
    for owner in sorted(owners, key=lambda klass: klass.__name__):
        refused = {next(iter(arguments)) for name, arguments, _ in BAD if issubclass(plugins[name], owner)}
        parameters = inspect.signature(vars(owner)["__init__"]).parameters.values()
        missing += [f"{owner.__name__}({parameter.name})" for parameter in parameters
                    if parameter.name != "self" and parameter.kind is not inspect.Parameter.VAR_KEYWORD
                    and parameter.name not in refused]
    assert len(owners) == 3 and not missing, f"arguments with no refused value in BAD: {missing}"


@pytest.mark.parametrize("plugin_class", PLUGINS, ids=lambda plugin_class: plugin_class.name())
def test_the_defaults_and_the_documented_values_stay_valid(plugin_class: type, tmp_path: object) -> None:
    plugin_class()
    plugin_class(accountant="replace_one_rdp", labelling="joint", radius=2.0, n_bins=32, coarse_bins=4, fine_bins=50,
                 max_pairs=None, n_release_directions=100, entropy=0.0, smoothing=0.5, flow_batch_size=None,
                 reuse="once", domain_epsilon_share=0.3, numeric_histograms=False, public_fraction=0.25,
                 refiner_epochs=0, latent_dim=8, n_classes=2, feature_weight=0.5, random_state=7,
                 workspace=str(tmp_path), device="cpu", strict=False, release="record")
    plugin_class(neighbouring="add_remove", accountant="rdp", image_codec="dct")


@pytest.mark.parametrize("name, arguments", [("dpswflow_r", {"batch_size": 100}), ("dpswflow", {"accountant": "replace_one_rdp"})])
def test_an_adjacency_set_after_construction_is_checked_where_it_is_set(name: str, arguments: dict[str, object]) -> None:
    """Second reader: ``plugin.neighbouring = "add_remove"`` after ``batch_size=100`` (or an accountant not proven for
    Poisson sampling) was refused only when the generator was built, after the DP domain had been released."""
    plugin = Plugins().get(name, **arguments)
    with pytest.raises(ValueError, match="add/remove|add_remove|Poisson"):
        plugin.neighbouring = "add_remove"
    assert plugin.neighbouring == "replace_one"  # left as it was

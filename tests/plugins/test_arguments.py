"""Every argument of the six plugins is checked where it is given (``Plugins().get``), with a message that names it
(docs/guide.md: only what needs the data waits for ``fit``)."""

from __future__ import annotations

import inspect

import pytest
import synthcity_dpswf  # noqa: F401  (registers the plugins)
from synthcity.plugins import Plugins

import torch

from synthcity_dpswf.plugins import IMAGE_PLUGINS, PLUGINS, TABLE_PLUGINS
from synthcity_dpswf.plugins.base import SlicedFlowPlugin
from synthcity_dpswf.plugins.options import IMAGE_ARGUMENTS, TABLE_ARGUMENTS

BAD = [
    ("dpswflow", {"epsilon": 0}, r"epsilon must be > 0"),
    ("dpswflow", {"epsilon": "1.0"}, "epsilon must be a number"),
    ("dpswflow", {"delta": 1.5}, r"delta must lie in \(0, 1\), got 1.5"),
    ("dpswflow", {"neighbouring": "both"}, r"neighbouring must be one of \['add_remove', 'replace_one'\], got 'both'"),
    ("dpswflow", {"n_steps": 0}, "n_steps must be a positive integer, got 0"),
    ("dpswflow", {"flow_options": {"accountant": "nope"}}, "accountant must be one of"),
    ("dpswflow", {"flow_options": {"accountant": "replace_one_rdp"}, "neighbouring": "add_remove"},
     "accountant 'replace_one_rdp'"),
    ("dpswflow", {"flow_options": {"radius": -1}}, "radius must be a finite number > 0, got -1"),
    ("dpswflow", {"flow_options": {"radius": 0}}, "radius must be > 0"),
    ("dpswflow", {"flow_options": {"entropy": -1.0}}, "entropy must be a finite number >= 0"),
    ("dpswflow", {"flow_options": {"smoothing": -1.0}}, "smoothing must be a finite number >= 0"),
    ("dpswflow", {"flow_options": {"reuse": "twice"}}, "reuse must be one of"),
    ("dpswflow", {"flow_options": {"steps": 3}}, r"flow_options takes \['accountant', 'entropy', 'radius', 'reuse', "),
    ("dpswflow", {"flow_options": 3}, "flow_options must be a dict"),
    ("dpswflow", {"n_bins": 0}, "n_bins must be a positive integer, got 0"),
    ("dpswflow", {"n_release_directions": 2.5}, "n_release_directions must be a positive integer"),
    ("dpswflow", {"coarse_bins": 0}, "coarse_bins must be a positive integer"),
    ("dpswflow", {"target_column": ""}, "target_column must be a column name or None"),
    ("dpswflow", {"target_column": 3}, "target_column must be a column name or None"),
    ("dpswflow", {"target_tables": "all"}, r"target_tables must be one of \['pairs', 'per_value', 'none'\]"),
    ("dpswgen", {"target_tables": "per_value"}, "cannot count its tables per value"),
    ("dpswflow", {"target_column": "y", "release": "projected"}, "a named target conditions the marginal release's tables"),
    ("dpswflow", {"fine_bins": "8"}, "fine_bins must be a positive integer"),
    ("dpswflow", {"max_pairs": 0}, "max_pairs must be a positive integer"),
    ("dpswflow", {"pair_selection": "all"}, r"pair_selection must be one of \['adaptive', 'public'\]"),
    ("dpswflow", {"release": "histogram"}, "release must be one of"),
    ("dpswflow", {"n_directions": 0}, "n_directions must be a positive integer"),
    ("dpswflow", {"step_size": -0.5}, "step_size must be a finite number > 0"),
    ("dpswflow", {"flow_batch_size": 0}, "flow_batch_size must be a positive integer"),
    ("dpswflow", {"domain_epsilon_share": "0.2"}, r"domain_epsilon_share must lie in \(0, 1\)"),
    ("dpswflow", {"numeric_histograms": "no"}, "numeric_histograms must be True or False"),
    ("dpswflow", {"max_one_hot": 0}, "max_one_hot must be a positive integer"),
    ("dpswflow", {"domain": {"age": (90, 17)}}, "column 'age': bounds must be finite with low < high"),
    ("dpswflow", {"time_horizons": []}, "time_horizons must be a non-empty list of finite numbers"),
    ("image_dpswflow", {"image_codec": "nope"}, r"image_codec must be one of \["),
    ("image_dpswflow", {"image_codec": "public-half"}, "pass your public images with 'public-autoencoder'"),
    ("image_dpswflow", {"image_codec": 3}, "image_codec must be a codec's name, an AutoencoderCodec trained on public"),
    ("image_dpswflow", {"codec_options": {"component": 3}}, "image codec 'private-pca' takes no option 'component'"),
    ("image_dpswflow", {"codec_options": {"share": 1.0}}, r"codec_options\['share'\] must lie in \(0, 1\)"),
    ("image_dpswflow", {"codec_options": {"components": 0}}, r"codec_options\['components'\] must be a positive"),
    ("image_dpswflow", {"codec_options": {"frequencies": 0}, "image_codec": "dct"}, r"codec_options\['frequencies'\]"),
    ("image_dpswflow", {"codec_options": {"share": 0.5}, "image_codec": "dct"}, "image codec 'dct' takes no option 'share'"),
    ("image_dpswflow", {"codec_options": {"epochs": 0}, "image_codec": "private-autoencoder"}, "epochs must be"),
    ("image_dpswflow", {"codec_options": {"refiner_weight": 0.0}, "image_codec": "public-autoencoder"},
     "refiner_weight must be > 0"),
    ("image_dpswflow", {"codec_options": {"images": 3}, "image_codec": "public-autoencoder"},
     r"codec_options\['images'\] must be an ImageDataLoader"),
    ("image_dpswflow", {"codec_options": [1]}, "codec_options must be a dict"),
    ("image_dpswflow", {"n_classes": 0}, "n_classes must be a positive integer"),
    ("image_dpswflow", {"labelling": "x"}, r"labelling must be one of \['conditional', 'joint'\], got 'x'"),
    ("image_dpswflow", {"feature_weight": 1.5}, r"feature_weight must lie in \(0, 1\)"),
    ("image_dpswflow_r", {"passes": 0}, "passes must be a finite number > 0"),
    ("image_dpswgen", {"noise_dim": 0}, "noise_dim must be a positive integer"),
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
    constructors (``SlicedFlowPlugin``'s, the modalities' and the per-step mixins' own; synthcity's ``Plugin``
    arguments that pass through ``**kwargs`` aside). Each takes a bounded number, a choice or a checked structure
    (``plugins.options``), so each is the refused argument of a ``BAD`` entry for a plugin that takes it."""
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
    assert len(owners) == 5 and not missing, f"arguments with no refused value in BAD: {missing}"


def arguments_of(plugin_class: type) -> set[str]:
    """A plugin's own arguments, synthcity's ``Plugin`` arguments aside (they pass through ``**kwargs``)."""
    return {name for klass in plugin_class.__mro__ if issubclass(klass, SlicedFlowPlugin) and "__init__" in vars(klass)
            for name, parameter in inspect.signature(vars(klass)["__init__"]).parameters.items()
            if name != "self" and parameter.kind is not inspect.Parameter.VAR_KEYWORD}


def test_each_plugin_takes_its_modality_s_arguments_only() -> None:
    """The table plugins take no image argument and the image plugins no table argument; DPSWflow takes at most 28
    arguments on tables and 22 on images (synthcity's six included), each of the others 3 or 6 more (its batches and
    network)."""
    counts = {plugin_class.name(): len(arguments_of(plugin_class)) for plugin_class in PLUGINS}
    assert counts["dpswflow"] <= 28 and counts["image_dpswflow"] <= 22, counts
    assert counts["dpswflow_r"] == counts["dpswflow"] + 3 and counts["dpswgen"] == counts["dpswflow"] + 6
    assert counts["image_dpswflow_r"] == counts["image_dpswflow"] + 3
    for plugin_class in TABLE_PLUGINS:
        assert not arguments_of(plugin_class) & set(IMAGE_ARGUMENTS)
    for plugin_class in IMAGE_PLUGINS:
        assert not arguments_of(plugin_class) & set(TABLE_ARGUMENTS)
    with pytest.raises(TypeError, match="dpswflow fits tables and has no argument 'image_codec': it is an argument "
                                        "of the image plugins"):
        Plugins().get("dpswflow", image_codec="dct")
    with pytest.raises(TypeError, match="image_dpswflow_r fits images and has no argument 'domain': it is an argument "
                                        "of the table plugins"):
        Plugins().get("image_dpswflow_r", domain={"a": (0, 1)})
    with pytest.raises(TypeError, match="has no argument 'pca_components': give image_codec='private-pca', "
                                        "codec_options=\\{'components': K\\}"):
        Plugins().get("image_dpswflow", pca_components=8)


@pytest.mark.parametrize("plugin_class", TABLE_PLUGINS, ids=lambda plugin_class: plugin_class.name())
def test_the_defaults_and_the_documented_values_stay_valid(plugin_class: type, tmp_path: object) -> None:
    plugin_class()
    plugin_class(flow_options={"accountant": "replace_one_rdp", "radius": 2.0, "entropy": 0.0, "smoothing": 0.5,
                               "reuse": "once"},
                 n_bins=32, coarse_bins=4, fine_bins=50, max_pairs=None, n_release_directions=100,
                 flow_batch_size=None, domain_epsilon_share=0.3, numeric_histograms=False, random_state=7,
                 workspace=str(tmp_path), device="cpu", strict=False, release="record")
    plugin_class(neighbouring="add_remove", flow_options={"accountant": "rdp"})


@pytest.mark.parametrize("plugin_class", IMAGE_PLUGINS, ids=lambda plugin_class: plugin_class.name())
def test_the_image_defaults_and_the_documented_values_stay_valid(plugin_class: type, tmp_path: object) -> None:
    plugin = plugin_class()
    assert plugin.image_options.image_codec == "private-pca"  # no image passed to fit is public by default
    plugin_class(flow_options={"accountant": "replace_one_rdp", "radius": 2.0}, labelling="joint", n_bins=32,
                 n_release_directions=100,
                 n_classes=2, feature_weight=0.5, random_state=7, workspace=str(tmp_path), device="cpu",
                 image_codec="public-autoencoder",
                 codec_options={"images": torch.zeros(4, 1, 32, 32), "refiner_epochs": 0, "latent_dim": 8})
    plugin_class(neighbouring="add_remove", image_codec="dct", codec_options={"frequencies": 8})
    plugin_class(image_codec="private-autoencoder", codec_options={"epochs": 2, "batch_size": 64, "latent_dim": 8,
                                                                  "share": 0.4})


@pytest.mark.parametrize("name, arguments", [("dpswflow_r", {"batch_size": 100}),
                                             ("dpswflow", {"flow_options": {"accountant": "replace_one_rdp"}})])
def test_an_adjacency_set_after_construction_is_checked_where_it_is_set(name: str, arguments: dict[str, object]) -> None:
    """Second reader: ``plugin.neighbouring = "add_remove"`` after ``batch_size=100`` (or an accountant not proven for
    Poisson sampling) was refused only when the generator was built, after the DP domain had been released."""
    plugin = Plugins().get(name, **arguments)
    with pytest.raises(ValueError, match="add/remove|add_remove|Poisson"):
        plugin.neighbouring = "add_remove"
    assert plugin.neighbouring == "replace_one"  # left as it was

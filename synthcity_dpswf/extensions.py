"""pluggy extension points: other packages contribute codecs and accountants through entry points.

A package declares, in its ``pyproject.toml``::

    [project.entry-points.synthcity_dpswf]
    my_extension = "my_package.dpswf_hooks"

and implements hooks in that module::

    from synthcity_dpswf.extensions import hookimpl

    @hookimpl
    def dpswf_codecs():
        return {"my_autoencoder": MyCodecFactory}

``plugin_manager()`` loads every entry point of the group ``synthcity_dpswf`` with pluggy's
``load_setuptools_entrypoints``; the built-in codecs are registered through the same hooks
(``BuiltinCodecs``: ``autoencoder``, ``dct``, ``labelled``, ``tabular``). Image codecs (``dpswf_image_codecs``:
``public-half``, ``other-dataset``, ``dct``, ``private-pca`` and ``private-autoencoder`` built in) are what ``dpswf images --codec`` names, and
those that need no public image what the plugins' ``image_codec=`` names. Accountants returned by
``dpswf_accountants`` become selectable by name (``accountant="..."``) once ``plugin_manager()`` has run.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Callable

import pluggy
import torch

from synthcity_dpswf.adapters import DCTTransform, LabelledCodec, TabularCodec
from synthcity_dpswf.adapters.image_codecs import (
    OTHER_DATASET, PRIVATE_AUTOENCODER, PRIVATE_PCA, PUBLIC_HALF, CodecRequest, FixedDCTCodec, ImageCodecEntry,
)
from synthcity_dpswf.adapters.image_latent import AutoencoderCodec
from synthcity_dpswf.privacy.accountant import register_accountant

PROJECT = "synthcity_dpswf"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)

CodecFactory = Callable[..., Any]
"""Builds a codec: an object with ``encode(data) -> records``, ``decode(records) -> data`` and ``dim``."""


class DPSWFSpec:
    """The hooks an extension may implement."""

    @hookspec
    def dpswf_codecs(self) -> dict[str, CodecFactory]:
        """Codecs by name: factories of objects mapping user data to unit-ball records and back."""
        return {}

    @hookspec
    def dpswf_image_codecs(self) -> dict[str, ImageCodecEntry]:
        """Image codecs by name (``adapters.image_codecs.ImageCodecEntry``: how each is built, what public images it
        trains on, whether it is paid)."""
        return {}

    @hookspec
    def dpswf_accountants(self) -> dict[str, tuple[Callable[[], Any], str]]:
        """Accountants by name: ``(factory, description)``, the factory returning an Opacus ``IAccountant``."""
        return {}


class BuiltinCodecs:
    """The codecs that ship with the package, registered like any extension."""

    @hookimpl
    def dpswf_codecs(self) -> dict[str, CodecFactory]:
        return {
            "autoencoder": AutoencoderCodec, "dct": DCTTransform, "labelled": LabelledCodec, "tabular": TabularCodec,
        }

    @hookimpl
    def dpswf_image_codecs(self) -> dict[str, ImageCodecEntry]:
        return {"public-half": PUBLIC_HALF, "other-dataset": OTHER_DATASET, "dct": FIXED_DCT, "private-pca": PRIVATE_PCA,
                "private-autoencoder": PRIVATE_AUTOENCODER}


def fixed_dct_codec(images: torch.Tensor, request: CodecRequest) -> FixedDCTCodec:
    """The ``"dct"`` entry's codec for images of ``images``' size: the DCT codec factory of the registry (name ``"dct"``: an
    extension registering that name replaces the built-in ``DCTTransform``), K = ``request.dct_frequencies``; it
    reads nothing of the images but their shape."""
    height, width = images.shape[-2], images.shape[-1]
    return FixedDCTCodec(codecs()["dct"](height, width, n_frequencies=request.dct_frequencies, max_value=1.0),
                         request.dct_frequencies)


FIXED_DCT = ImageCodecEntry(fixed_dct_codec, paid=False, assumption="a fixed DCT codec: no public data")
"""The registry's ``"dct"`` entry."""


@lru_cache(maxsize=1)
def plugin_manager() -> pluggy.PluginManager:
    """The package's plugin manager: the hook specification, the built-ins and every installed entry point."""
    manager = pluggy.PluginManager(PROJECT)
    manager.add_hookspecs(DPSWFSpec)
    manager.register(BuiltinCodecs(), name="builtin")
    manager.load_setuptools_entrypoints(PROJECT)
    return manager


def codecs(manager: pluggy.PluginManager | None = None) -> dict[str, CodecFactory]:
    """All codec factories by name, from every registered extension (a later registration wins a name clash)."""
    found: dict[str, CodecFactory] = {}
    for contribution in reversed((manager or plugin_manager()).hook.dpswf_codecs()):
        found.update(contribution)
    return found


def image_codecs(manager: pluggy.PluginManager | None = None) -> dict[str, ImageCodecEntry]:
    """All image codecs by name, from every registered extension (a later registration wins a name clash), the
    built-in ones first."""
    found: dict[str, ImageCodecEntry] = {}
    for contribution in reversed((manager or plugin_manager()).hook.dpswf_image_codecs()):
        found.update(contribution)
    return found


def load_accountants(manager: pluggy.PluginManager | None = None) -> list[str]:
    """Register every extension accountant with the privacy layer; returns their names."""
    names: list[str] = []
    for contribution in (manager or plugin_manager()).hook.dpswf_accountants():
        for name, (factory, description) in contribution.items():
            register_accountant(name, factory, description)
            names.append(name)
    return names

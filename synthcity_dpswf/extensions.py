"""pluggy extension points: other packages contribute image codecs and accountants through entry points.

A package declares, in its ``pyproject.toml``::

    [project.entry-points.synthcity_dpswf]
    my_extension = "my_package.dpswf_hooks"

and implements hooks in that module::

    from synthcity_dpswf.adapters.image_codecs import ImageCodecEntry
    from synthcity_dpswf.extensions import hookimpl

    @hookimpl
    def dpswf_image_codecs():
        return {"my-codec": ImageCodecEntry(build_my_codec, paid=False, assumption="my codec: no public data")}

``plugin_manager()`` loads every entry point of the group ``synthcity_dpswf`` with pluggy's
``load_setuptools_entrypoints``; the built-in image codecs are registered through the same hook (``BuiltinCodecs``:
``public-half``, ``other-dataset``, ``dct``, ``private-pca`` and ``private-autoencoder``). An entry's ``build`` returns
an ``adapters.image_codecs.ImageCodec`` (the ``adapters.codec.Codec`` protocol on images); every entry is what ``dpswf
images --codec`` names, those that need no public image what the plugins' ``image_codec=`` names, and an entry under
a built-in name replaces it. Accountants returned by ``dpswf_accountants`` become selectable by name
(``accountant="..."``) once ``plugin_manager()`` has run.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Callable

import pluggy

from synthcity_dpswf.adapters.image_codecs import (
    FIXED_DCT, OTHER_DATASET, PRIVATE_AUTOENCODER, PRIVATE_PCA, PUBLIC_AUTOENCODER, PUBLIC_HALF, ImageCodecEntry,
)
from synthcity_dpswf.privacy.accountant import register_accountant

PROJECT = "synthcity_dpswf"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


class DPSWFSpec:
    """The hooks an extension may implement."""

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
    """The image codecs that ship with the package, registered like any extension."""

    @hookimpl
    def dpswf_image_codecs(self) -> dict[str, ImageCodecEntry]:
        return {"public-half": PUBLIC_HALF, "other-dataset": OTHER_DATASET, "dct": FIXED_DCT, "private-pca": PRIVATE_PCA,
                "private-autoencoder": PRIVATE_AUTOENCODER, "public-autoencoder": PUBLIC_AUTOENCODER}


@lru_cache(maxsize=1)
def plugin_manager() -> pluggy.PluginManager:
    """The package's plugin manager: the hook specification, the built-ins and every installed entry point."""
    manager = pluggy.PluginManager(PROJECT)
    manager.add_hookspecs(DPSWFSpec)
    manager.register(BuiltinCodecs(), name="builtin")
    manager.load_setuptools_entrypoints(PROJECT)
    manager.check_pending()  # an extension's hook this package does not define (e.g. the removed dpswf_codecs) fails here
    return manager


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

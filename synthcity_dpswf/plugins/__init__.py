"""synthcity plugins (one plugin a file): on tables ``dpswflow``, ``dpswflow_r`` and ``dpswgen`` (category
"privacy"), on images ``image_dpswflow``, ``image_dpswflow_r`` and ``image_dpswgen`` (category "images", as synthcity's
own image generators).

``register()`` adds them to synthcity's plugin registry; ``import synthcity_dpswf`` arranges for it to run as
soon as ``synthcity.plugins`` is imported (in any process), so that ``Plugins().get("dpswflow_r")`` works, and
importing this module runs it too (its plugins import synthcity, whichever of the two comes first).
"""

from __future__ import annotations

from synthcity_dpswf.plugins.plugin_dpswflow import DPSWFlowPlugin
from synthcity_dpswf.plugins.plugin_dpswflow_r import DPSWFlowRPlugin
from synthcity_dpswf.plugins.plugin_dpswgen import DPSWGenPlugin
from synthcity_dpswf.plugins.plugin_image_dpswflow import ImageDPSWFlowPlugin
from synthcity_dpswf.plugins.plugin_image_dpswflow_r import ImageDPSWFlowRPlugin
from synthcity_dpswf.plugins.plugin_image_dpswgen import ImageDPSWGenPlugin

TABLE_PLUGINS = (DPSWFlowPlugin, DPSWFlowRPlugin, DPSWGenPlugin)
IMAGE_PLUGINS = (ImageDPSWFlowPlugin, ImageDPSWFlowRPlugin, ImageDPSWGenPlugin)
PLUGINS = TABLE_PLUGINS + IMAGE_PLUGINS


def register() -> None:
    """Add the six plugins to synthcity's registry; calling it again changes nothing."""
    from synthcity.plugins import Plugins

    loader = Plugins()
    known = set(loader)
    for plugin_class in PLUGINS:
        if plugin_class.name() not in known:
            loader.add(plugin_class.name(), plugin_class)


register()


__all__ = ["DPSWFlowPlugin", "DPSWFlowRPlugin", "DPSWGenPlugin", "ImageDPSWFlowPlugin", "ImageDPSWFlowRPlugin",
           "ImageDPSWGenPlugin", "IMAGE_PLUGINS", "PLUGINS", "TABLE_PLUGINS", "register"]

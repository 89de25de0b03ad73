"""synthcity plugins: ``dpswflow``, ``dpswflow_r`` and ``dpswgen`` (one plugin a file).

``register()`` adds them to synthcity's plugin registry; ``import synthcity_dpswf`` arranges for it to run as
soon as ``synthcity.plugins`` is imported (in any process), so that ``Plugins().get("dpswflow_r")`` works, and
importing this module runs it too (its plugins import synthcity, whichever of the two comes first).
"""

from __future__ import annotations

from synthcity_dpswf.plugins.plugin_dpswflow import DPSWFlowPlugin
from synthcity_dpswf.plugins.plugin_dpswflow_r import DPSWFlowRPlugin
from synthcity_dpswf.plugins.plugin_dpswgen import DPSWGenPlugin

PLUGINS = (DPSWFlowPlugin, DPSWFlowRPlugin, DPSWGenPlugin)


def register() -> None:
    """Add the three plugins to synthcity's registry; calling it again changes nothing."""
    from synthcity.plugins import Plugins

    loader = Plugins()
    known = set(loader)
    for plugin_class in PLUGINS:
        if plugin_class.name() not in known:
            loader.add(plugin_class.name(), plugin_class)


register()


__all__ = ["DPSWFlowPlugin", "DPSWFlowRPlugin", "DPSWGenPlugin", "PLUGINS", "register"]

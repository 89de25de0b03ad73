"""synthcity-dpswf: differentially private sliced-Wasserstein gradient flows for synthcity and Opacus.

Importing the package registers the synthcity plugins ``dpswflow``, ``dpswflow_r`` and ``dpswgen`` as soon as
``synthcity.plugins`` is imported (a post-import hook, so the numerical core never imports synthcity).
"""

import importlib.util
import sys

import wrapt

__version__ = "0.1.0"


def _register_plugins(_module: object) -> None:
    plugins = sys.modules.get("synthcity_dpswf.plugins")
    if plugins is not None and not hasattr(plugins, "register"):
        return  # synthcity_dpswf.plugins imported synthcity: it registers itself when its import ends
    from synthcity_dpswf.plugins import register

    register()


if importlib.util.find_spec("synthcity") is not None:
    wrapt.register_post_import_hook(_register_plugins, "synthcity.plugins")

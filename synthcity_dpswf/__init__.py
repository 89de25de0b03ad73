"""synthcity-dpswf: differentially private sliced-Wasserstein gradient flows for synthcity and Opacus.

Importing the package registers the synthcity plugins ``dpswflow``, ``dpswflow_r`` and ``dpswgen`` as soon as
``synthcity.plugins`` is imported (a post-import hook, so the numerical core never imports synthcity).

It also drops two import-time notices of ``transformers`` (see ``TransformersTorchNotice``), which
``synthcity.plugins`` imports through ``torch.onnx``; every other message, of transformers or ours, stays.
"""

import importlib.util
import logging
import sys
import warnings
from typing import Any

import wrapt

from synthcity_dpswf.notices import DPSWFWarning

__version__ = "0.1.0"


class TransformersTorchNotice(logging.Filter):
    """Drops the two ``[transformers]`` lines saying that it will not use the installed torch.

    transformers >= 5 needs torch >= 2.6, while synthcity pins an older torch; ``torch.onnx`` (imported on the
    way to ``synthcity.plugins``) tries ``import transformers``, which then logs "Disabling PyTorch because
    PyTorch >= 2.6 is required ..." and "PyTorch was not found ...". Nothing here uses transformers, so both
    are noise. The filter sits on the two loggers that emit them and matches their openings only.
    """

    NOTICES = ("Disabling PyTorch because PyTorch >= ", "PyTorch was not found.")
    LOGGERS = ("transformers", "transformers.utils.import_utils")

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith(self.NOTICES)


def _register_plugins(module: Any) -> None:
    module.Plugins()  # loads synthcity's plugin modules: importing some of them (fflows) ignores every warning
    warnings.filterwarnings("default", category=DPSWFWarning)  # in front of those blanket "ignore" filters
    plugins = sys.modules.get("synthcity_dpswf.plugins")
    if plugins is not None and not hasattr(plugins, "register"):
        return  # synthcity_dpswf.plugins imported synthcity: it registers itself when its import ends
    from synthcity_dpswf.plugins import register

    register()


def _quiet_transformers_torch_notices() -> None:
    """Put ``TransformersTorchNotice`` on its loggers before transformers configures them (once per logger)."""
    for name in TransformersTorchNotice.LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(existing, TransformersTorchNotice) for existing in logger.filters):
            logger.addFilter(TransformersTorchNotice())


_quiet_transformers_torch_notices()
if importlib.util.find_spec("synthcity") is not None:
    wrapt.register_post_import_hook(_register_plugins, "synthcity.plugins")


def __getattr__(name: str) -> object:
    """``synthcity_dpswf.check_table`` (``adapters.tabular.check_table``: what of your own table does not fit a domain,
    run on your machine), imported when first asked for so that importing the package stays light."""
    if name == "check_table":
        from synthcity_dpswf.adapters.tabular import check_table

        return check_table
    raise AttributeError(f"module 'synthcity_dpswf' has no attribute {name!r}")

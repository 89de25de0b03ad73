"""The adapters layer: codecs, the maps between user data and records in the unit ball (no synthcity here).

Every codec here is ``encode`` / ``decode`` (``TabularCodec``, ``MarginalTableCodec``, ``LabelledCodec``, the image
codecs of ``image_codecs`` and ``AutoencoderCodec``). Each is fixed by public choices (a frequency cut-off, a label
weight) or trained on public data, so encoding costs no privacy budget (privacy.md, "Setting"), except the private
image codec, whose release is paid from the run's budget (privacy.md, "A private image codec").
"""

from synthcity_dpswf.adapters.dct import DCTTransform
from synthcity_dpswf.math.labelled import LabelledCodec
from synthcity_dpswf.adapters.table_domain import CategoricalColumn, NumericColumn, TabularDomain
from synthcity_dpswf.adapters.tabular import MarginalTableCodec, TabularCodec

__all__ = ["CategoricalColumn", "DCTTransform", "LabelledCodec", "MarginalTableCodec", "NumericColumn", "TabularDomain", "TabularCodec"]

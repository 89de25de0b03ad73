"""Adapters: data-independent maps between user data and records in the unit ball (no synthcity here).

Every map here is fixed by public choices (a frequency cut-off, a label weight), never fitted on private
records, so encoding costs no privacy budget (privacy.md, "Setting").
"""

from synthcity_dpswf.adapters.dct import DCTTransform
from synthcity_dpswf.math.labelled import LabelledCodec
from synthcity_dpswf.adapters.tabular import (
    CategoricalColumn,
    MarginalTableCodec,
    NumericColumn,
    TabularDomain,
    TabularEncoder,
)

__all__ = ["CategoricalColumn", "DCTTransform", "LabelledCodec", "MarginalTableCodec", "NumericColumn", "TabularDomain", "TabularEncoder"]

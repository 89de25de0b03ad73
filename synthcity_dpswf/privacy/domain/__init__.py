r"""A differentially private domain: each column's kind, numeric bounds, value histogram and category sets, for
when none is public (or for the columns a partial public domain leaves out); privacy.md, "The DP domain".

Fitting an encoding on private records (min/max, category lists, even pandas dtypes, which one record with 1.5 in
an integer column or one string in a numeric column changes) leaks them. When the user has no public domain
description, this release decides every column from noisy counts, with a stated share of the budget, in four
Gaussian stages:

1. *Type counts*: per column, the numbers of integer-valued finite numbers, other finite numbers, missing entries
   (``is_missing``) and anything else (a string, a bool, ...), scaled by w = ``TYPE_WEIGHT`` before noise of std s
   (the kind decision needs them only within a margin of about n, so they take a small part of the sensitivity).
   The column is categorical when its noisy "anything else" count exceeds the sum of the two numeric ones by a
   margin (``KIND_MARGIN``: a prior for numbers), else float when its non-integer count exceeds the integer-valued
   one or stands clearly out of the noise (``FLOAT_MARGIN``), else integer (post-processing, ``columns.decide_kind``).
2. *Value counts*, in the partition of the kind just released, with the column's missing entries in one more cell:
   a categorical column's entries per observed value (a category), noise std :math:`s_c`; an integer column's
   numbers in fixed bins with one bin per integer from -16 to 16, then [16.5, 32) and signed octaves up to
   :math:`2^{48}` (``columns.integer_bin_edges``), a float column's in signed octaves :math:`\pm[2^k, 2^{k+1})` and a
   bin around zero (``columns.log_bin_edges``), other entries not counted, noise std :math:`r s_c`
   (``RANGE_NOISE_RATIO`` r: a column's records crowd into a few bins, which stand out of more noise than a category
   must). A column gets a missing level when the inverse-variance mean of its two missing counts (stage 1's cell,
   stage 2's) exceeds ``MISSING_THRESHOLD`` of its noise stds (post-processing; missing entries are counted in no
   other cell).
3. *Value histograms* of every numeric column (and of the numeric columns a public domain declares with bounds
   only, ``declared``): its numbers in the range of stage 2 (or the declared one), counted one cell per integer in an
   integer range of at most ``columns.UNIT_INTEGERS`` integers, else in the stage-2 bins inside the range, each split
   into ``SUB_BINS`` geometric sub-bins (linear where a bin touches zero, none for the unit integer bins), a typed
   column's numbers beyond its range in two overflow cells (a declared column's clipped into its range), noise std
   :math:`r_q s_c` (``HISTOGRAM_NOISE_RATIO``). A range is widened where its overflow stands out and trimmed where
   its ends do not (post-processing); the codecs place their fine levels at its quantiles: resolution where the data
   are, not uniform over a skewed range.
4. *Atoms* of every float column (typed or declared; only when the key threshold has a delta): its numbers inside
   its range with at most ``privacy.counts.ATOM_DIGITS`` significant digits (or their float32 images), counted by
   exact value, noise std :math:`r_a s_c` (``ATOM_NOISE_RATIO``), published above :math:`r_a \tau`: a coded float's
   frequent values, which decoding restores (``adapters.table_domain.onto_atoms``); and its *precision counts*:
   its numbers by their decimals (``privacy.counts.decimal_cells``), noise std :math:`r_p s_c`
   (``DECIMAL_NOISE_RATIO``), from which the output's rounding is read (``columns.output_decimals``). A numeric
   column whose published values (atoms, or integers whose cells stand out) hold nearly all its numbers is *coded*
   (``columns.coded_values``): its output holds those values only.

Three modules: ``columns`` (each column's fixed partitions, the bins of stages 2 and 3, and what is read back of it
from the released counts: its kind and missing level, a categorical column's categories, a numeric column's range:
post-processing), ``calibration`` (the stages' noise, one Gaussian-DP mechanism, and the key threshold with its proof)
and ``release`` (``release_domain_at``, which draws every noisy count, and the ``DomainRelease`` it returns).

Where no category of a categorical column passes, it gets the single placeholder category ``NO_CATEGORY`` (a
stated default, never an error: an error would be an output that one record can change). Whether a column is
*placed* (``columns.placement``, ``DomainRelease.placed``) is read from the released counts too: a column without
released evidence of its values is output as missing entries only, never at a placeholder or a range of pure noise.
Output dtypes follow the kinds (int64, float64, the categories' own type). Values of a column that do not fit its
released kind (a string in a numeric column, a rare category) are mapped to a stated default by the encoders, one
record at a time.
"""

from synthcity_dpswf.privacy.domain.calibration import DomainCalibration, publishes_keys, rows_needed
from synthcity_dpswf.privacy.domain.columns import NO_CATEGORY, OTHER_CATEGORY, Kind
from synthcity_dpswf.privacy.domain.release import DomainRelease, counts_known_ahead, release_domain, release_domain_at

__all__ = [
    "DomainCalibration",
    "DomainRelease",
    "Kind",
    "NO_CATEGORY",
    "OTHER_CATEGORY",
    "counts_known_ahead",
    "publishes_keys",
    "release_domain",
    "release_domain_at",
    "rows_needed",
]

"""The numerical core: sliced primitives, the particle flow and the sliced Wasserstein distance.

Plain torch; nothing here knows about privacy or synthcity.
"""

from synthcity_dpswf.math.distance import sliced_wasserstein, wasserstein_1d_squared
from synthcity_dpswf.math.labelled import LabelledCodec
from synthcity_dpswf.math.flow import EmpiricalTarget, TargetSlice, TargetSource, run_flow, smoothed_quantiles
from synthcity_dpswf.math.sliced import (
    empirical_quantiles,
    grouped_sliced_drift,
    histogram_cdf,
    interpolate_in_bins,
    interpolate_cdf,
    interpolate_sorted,
    project,
    quantile_levels,
    random_directions,
    rank_levels,
    sliced_drift,
)

__all__ = [
    "EmpiricalTarget",
    "LabelledCodec",
    "TargetSlice",
    "TargetSource",
    "empirical_quantiles",
    "grouped_sliced_drift",
    "histogram_cdf",
    "interpolate_in_bins",
    "interpolate_cdf",
    "interpolate_sorted",
    "project",
    "quantile_levels",
    "random_directions",
    "rank_levels",
    "run_flow",
    "sliced_drift",
    "smoothed_quantiles",
    "sliced_wasserstein",
    "wasserstein_1d_squared",
]

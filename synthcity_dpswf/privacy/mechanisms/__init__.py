"""Release kinds, one module each, keyed by name (``MECHANISMS``): the only code that publishes a statistic of
private records. ``create_mechanism(name, options)`` builds one; ``register_mechanism`` adds a kind."""

from __future__ import annotations

from synthcity_dpswf.privacy.mechanisms.base import Release, ReleaseMechanism, ReleaseOptions
from synthcity_dpswf.privacy.mechanisms.layout import MarginalLayout
from synthcity_dpswf.privacy.mechanisms.marginal import MarginalRelease, marginal_sensitivity
from synthcity_dpswf.privacy.mechanisms.projected import ProjectedRelease, projected_sensitivity
from synthcity_dpswf.privacy.mechanisms.projected_histogram import ProjectedHistogramRelease, histogram_sensitivity
from synthcity_dpswf.privacy.mechanisms.record import RecordRelease, record_sensitivity

MECHANISMS: dict[str, type[ReleaseMechanism]] = {}
"""Release kinds by name."""


def register_mechanism(mechanism: type[ReleaseMechanism]) -> type[ReleaseMechanism]:
    """Make a release kind selectable by its ``name`` (its privacy argument must be in privacy.md first)."""
    if mechanism.name in MECHANISMS and MECHANISMS[mechanism.name] is not mechanism:
        raise ValueError(f"a release kind named {mechanism.name!r} is already registered; choose another name.")
    MECHANISMS[mechanism.name] = mechanism
    return mechanism


def create_mechanism(name: str, options: ReleaseOptions | None = None) -> ReleaseMechanism:
    """The release kind ``name`` with ``options``."""
    if name not in MECHANISMS:
        raise ValueError(f"release must be one of {sorted(MECHANISMS)}, got {name!r}.")
    return MECHANISMS[name](options)


for _kind in (RecordRelease, ProjectedRelease, ProjectedHistogramRelease, MarginalRelease):
    register_mechanism(_kind)

__all__ = [
    "MECHANISMS",
    "MarginalLayout",
    "MarginalRelease",
    "ProjectedHistogramRelease",
    "ProjectedRelease",
    "RecordRelease",
    "Release",
    "ReleaseMechanism",
    "ReleaseOptions",
    "create_mechanism",
    "histogram_sensitivity",
    "marginal_sensitivity",
    "projected_sensitivity",
    "record_sensitivity",
    "register_mechanism",
]

"""The package's warnings: one category, so that a process can show or silence them together.

Importing synthcity ignores every warning (its ``__init__``, and some of its plugin modules, call
``warnings.simplefilter("ignore")``): the DP domain's notices (a column it could not place, categories grouped or lost),
a delta at or above 1/n and the constraints' shortfall would never reach a synthcity user. ``synthcity_dpswf`` puts a
filter for ``DPSWFWarning`` back in front once synthcity's plugins are loaded (a filter of the user's own, set later,
still wins: ``warnings.filterwarnings("ignore", category=DPSWFWarning)``).
"""

from __future__ import annotations


class DPSWFWarning(UserWarning):
    """Every warning of synthcity_dpswf: what a user should know about a fit or a generation (never a value of a
    record)."""

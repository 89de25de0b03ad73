"""The three generators, on plain torch tensors: DPSWFlow, DPSWFlowR and DPSWGen (no synthcity here)."""

from synthcity_dpswf.models.base import FlowSettings, SlicedGenerator
from synthcity_dpswf.models.dpswflow import DPSWFlow
from synthcity_dpswf.models.dpswflow_r import PAPER_PRESET, DPSWFlowR, release_steps
from synthcity_dpswf.models.dpswgen import DPSWGen
from synthcity_dpswf.models.pool import ProjectedReleaseTarget, ReleasePool

__all__ = [
    "DPSWFlow",
    "DPSWFlowR",
    "DPSWGen",
    "FlowSettings",
    "PAPER_PRESET",
    "ProjectedReleaseTarget",
    "ReleasePool",
    "SlicedGenerator",
    "release_steps",
]

"""The three generators, on plain torch tensors: DPSWFlow, DPSWFlowR and DPSWGen (no synthcity here), and the
``Generator`` protocol they share with the benchmarks' baselines."""

from synthcity_dpswf.models.base import SlicedGenerator
from synthcity_dpswf.models.chunks import SampleChunk, chunk_plan, chunk_seed
from synthcity_dpswf.models.dpswflow import DPSWFlow
from synthcity_dpswf.models.dpswflow_r import PAPER_PRESET, DPSWFlowR
from synthcity_dpswf.models.dpswgen import DPSWGen
from synthcity_dpswf.models.state import FlowSettings, ReleasePool, ReleaseSchedule, release_steps
from synthcity_dpswf.models.protocol import Generator
from synthcity_dpswf.models.kinds import KINDS, HistogramReleaseTarget, KindSpec, ProjectedReleaseTarget, class_weights

__all__ = [
    "DPSWFlow",
    "DPSWFlowR",
    "DPSWGen",
    "FlowSettings",
    "Generator",
    "HistogramReleaseTarget",
    "KINDS",
    "KindSpec",
    "PAPER_PRESET",
    "ProjectedReleaseTarget",
    "ReleasePool",
    "ReleaseSchedule",
    "SampleChunk",
    "SlicedGenerator",
    "chunk_plan",
    "chunk_seed",
    "class_weights",
    "release_steps",
]

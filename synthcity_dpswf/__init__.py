"""synthcity-dpswf: differentially private sliced-Wasserstein gradient flows for synthcity and Opacus."""

__version__ = "0.1.0"

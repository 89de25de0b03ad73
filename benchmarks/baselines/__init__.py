"""Baselines the benchmarks compare our generators with, kept outside the package (they are not our product)."""

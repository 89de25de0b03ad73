"""Reproducible experiments behind the CLI (the paper's toy flow, the demo)."""

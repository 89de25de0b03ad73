"""Persistence: a fitted generator's state (public parameters, the pool of releases, the report) written with
``torch.save`` and read back; it holds nothing derived from private records but the releases (privacy.md, "What a
fitted model stores")."""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

import torch

from synthcity_dpswf.math import LabelledCodec
from synthcity_dpswf.models.state import FlowSettings, GeneratorState, ReleasePool

Saved = TypeVar("Saved", bound="Persistence")


class Persistence(GeneratorState):
    """A sliced generator's saving and loading (``SlicedGenerator`` is one); a subclass that keeps more (DPSWGen: its
    network) adds it to ``state_dict`` and restores it in ``_load_extra``."""

    def state_dict(self) -> dict[str, Any]:
        """Everything a fitted model keeps: public parameters, the pool of releases, the report."""
        return {
            "class": type(self).__name__,
            "parameters": self.get_parameters(),
            "pool": self._pool().state_dict(),
            "report": self.privacy_report,
            "labels": self.labels_,
            "n_classes": self.n_classes_,
        }

    def save(self, path: str | Path) -> None:
        """Write ``state_dict()`` with ``torch.save``."""
        torch.save(self.state_dict(), path)

    @classmethod
    def from_state_dict(cls: type[Saved], state: dict[str, Any]) -> Saved:
        """Rebuild a fitted model from ``state_dict()``."""
        if state.get("class") != cls.__name__:
            raise ValueError(f"this state belongs to {state.get('class')!r}, not {cls.__name__}; use that class.")
        parameters = dict(state["parameters"])
        parameters["settings"] = FlowSettings(**parameters["settings"])
        model = cls(**parameters)
        model.pool_ = ReleasePool.from_state_dict(state["pool"])
        model.report_ = state["report"]
        model.labels_, model.n_classes_ = state["labels"], state["n_classes"]
        if model.n_classes_ is not None:
            model.codec = LabelledCodec(model.n_classes_, model.feature_weight)
        model._load_extra(state)
        return model

    def _load_extra(self, state: dict[str, Any]) -> None:
        """Restore what a subclass adds to the state (DPSWGen: its network)."""

    @classmethod
    def load(cls: type[Saved], path: str | Path) -> Saved:
        """Read a model written by ``save``."""
        return cls.from_state_dict(torch.load(path, weights_only=False))

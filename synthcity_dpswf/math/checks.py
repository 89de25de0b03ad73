"""Input validation shared by the numerical core.

Every public function of the package checks its inputs here first, so that a bad call fails early with a
message that says what was wrong and what to do, instead of producing NaNs many steps later.
"""

from __future__ import annotations

import math
import numbers
from typing import Iterable

import torch


def check_matrix(name: str, x: torch.Tensor, dim: int | None = None) -> None:
    """Raise ``ValueError`` unless ``x`` is a finite, non-empty, floating 2-D tensor (with ``dim`` columns)."""
    if not isinstance(x, torch.Tensor):
        raise ValueError(f"{name} must be a torch.Tensor, got {type(x).__name__}; convert with torch.as_tensor.")
    if x.ndim != 2:
        raise ValueError(f"{name} must be 2-D (rows x features), got shape {tuple(x.shape)}; reshape it.")
    if x.shape[0] == 0 or x.shape[1] == 0:
        raise ValueError(f"{name} is empty (shape {tuple(x.shape)}); pass at least one row and one feature.")
    if not x.is_floating_point():
        raise ValueError(f"{name} must be a floating tensor, got {x.dtype}; call .float() or .double() first.")
    if dim is not None and x.shape[1] != dim:
        raise ValueError(f"{name} has {x.shape[1]} features but {dim} were expected; check the data dimension.")
    if not bool(torch.isfinite(x).all()):
        raise ValueError(f"{name} contains NaN or inf values; remove or impute them before calling.")


def check_directions(directions: torch.Tensor, dim: int) -> None:
    """Raise ``ValueError`` unless ``directions`` is a finite ``(dim, L)`` matrix with unit columns, L >= 1."""
    if not isinstance(directions, torch.Tensor) or directions.ndim != 2:
        raise ValueError("directions must be a 2-D tensor of shape (dim, n_directions); use random_directions().")
    if directions.shape[1] == 0:
        raise ValueError("directions has zero columns; draw at least one direction.")
    if directions.shape[0] != dim:
        raise ValueError(
            f"directions live in dimension {directions.shape[0]} but the data has {dim} features; "
            "draw directions with random_directions(dim=...) for this data."
        )
    check_matrix("directions", directions.T)
    norms = directions.norm(dim=0)
    if not bool(torch.allclose(norms, torch.ones_like(norms), atol=1e-4)):
        raise ValueError("directions must have unit-norm columns; normalise them (random_directions() does).")


def check_positive_int(name: str, value: int) -> None:
    """Raise ``ValueError`` unless ``value`` is an integer >= 1."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}.")


def check_non_negative(name: str, value: float) -> None:
    """Raise ``ValueError`` unless ``value`` is a finite real number >= 0."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value) or value < 0:
        raise ValueError(f"{name} must be a finite number >= 0, got {value!r}.")


def check_positive(name: str, value: float) -> None:
    """Raise ``ValueError`` unless ``value`` is a finite real number > 0."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value) or value < 0:
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}.")
    if value == 0:
        raise ValueError(f"{name} must be > 0, got 0.")


def check_non_negative_int(name: str, value: int) -> None:
    """Raise ``ValueError`` unless ``value`` is an integer >= 0."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 0:
        raise ValueError(f"{name} must be an integer >= 0, got {value!r}.")


def check_fraction(name: str, value: float) -> None:
    """Raise ``ValueError`` unless ``value`` is a real number strictly between 0 and 1."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0 < value < 1:
        raise ValueError(f"{name} must lie in (0, 1), got {value!r}.")


def check_flag(name: str, value: bool) -> None:
    """Raise ``ValueError`` unless ``value`` is ``True`` or ``False`` (a string such as ``"false"`` is truthy)."""
    if not isinstance(value, bool):
        raise ValueError(f"{name} must be True or False, got {value!r}.")


def check_choice(name: str, value: object, accepted: Iterable[object]) -> None:
    """Raise ``ValueError`` unless ``value`` is one of ``accepted``, naming them."""
    choices = list(accepted)
    if not any(value == choice and type(value) is type(choice) for choice in choices):
        raise ValueError(f"{name} must be one of {choices}, got {value!r}.")

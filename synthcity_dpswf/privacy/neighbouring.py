r"""The two adjacencies (privacy.md, "Setting" and "Add/remove neighbours"), and the bound one gives for the other.

- ``"replace_one"`` (the default, the paper's): neighbours differ in one record, n is public;
- ``"add_remove"``: one record added or removed, n private (Opacus', AIM's and MST's convention).

A replacement is a removal and an addition, so replace-one is the stronger guarantee at equal epsilon. What a run
calibrated for one adjacency gives for the other (``PrivacyReport.other_neighbouring``):

- a one-shot Gaussian release of a sum of one-hot contributions: :math:`\Delta_{RO} = \sqrt{2}\,\Delta_{AR}`
  exactly, so the same noise is the analytic Gaussian mechanism at multiplier :math:`z\sqrt{2}` (add/remove, from a
  replace-one run) or :math:`z / \sqrt{2}` (replace-one, from an add/remove run): ``one_shot_other_multiplier``;
- Poisson per-step releases under replace-one: group privacy of 2, an :math:`(\varepsilon, \delta')` add/remove
  guarantee being :math:`(2\varepsilon, (1 + e^{\varepsilon})\delta')` under replace-one (``group_of_two``).
"""

from __future__ import annotations

import math
from typing import Callable, Literal

Neighbouring = Literal["replace_one", "add_remove"]

NEIGHBOURINGS: dict[str, str] = {
    "replace_one": "replace-one (n public)",
    "add_remove": "add/remove (n private)",
}
"""Each adjacency with the name the report prints."""


def check_neighbouring(neighbouring: str) -> None:
    """Raise unless ``neighbouring`` is one of ``NEIGHBOURINGS``."""
    if neighbouring not in NEIGHBOURINGS:
        raise ValueError(f"neighbouring must be one of {sorted(NEIGHBOURINGS)}, got {neighbouring!r}.")


def other(neighbouring: Neighbouring) -> Neighbouring:
    """The other adjacency."""
    return "add_remove" if neighbouring == "replace_one" else "replace_one"


def one_shot_other_multiplier(noise_multiplier: float, neighbouring: Neighbouring) -> float:
    r"""The multiplier of the same one-shot release under the other adjacency, for sums of one-hot contributions
    (:math:`\Delta_{RO} = \sqrt{2}\,\Delta_{AR}`): :math:`z\sqrt{2}` under add/remove from a replace-one run,
    :math:`z / \sqrt{2}` under replace-one from an add/remove run."""
    return noise_multiplier * math.sqrt(2.0) if neighbouring == "replace_one" else noise_multiplier / math.sqrt(2.0)


def group_of_two(epsilon_at: Callable[[float], float], delta: float) -> tuple[float, float]:
    r"""Replace-one :math:`(2\varepsilon(\delta'), \delta)` from an add/remove guarantee :math:`\delta' \mapsto
    \varepsilon(\delta')` (group privacy: :math:`(\varepsilon, \delta')` for one addition or removal gives
    :math:`(2\varepsilon, (1 + e^{\varepsilon})\delta')` for a replacement), with :math:`\delta'` a point where
    :math:`(1 + e^{\varepsilon(\delta')})\,\delta' \le \delta`, found by iterating :math:`\delta' \leftarrow \delta /
    (1 + e^{\varepsilon(\delta')})` to its fixed point and stepping below it until the condition holds. Returns
    ``(2 epsilon(delta'), delta')``."""
    if not 0 < delta < 1:
        raise ValueError(f"delta must lie in (0, 1), got {delta!r}.")
    inner = delta / 2
    for _ in range(30):
        following = delta / (1 + math.exp(min(epsilon_at(inner), 700.0)))
        if abs(following - inner) <= 1e-6 * inner:
            break
        inner = following
    while (1 + math.exp(min(epsilon_at(inner), 700.0))) * inner > delta:
        inner *= 0.99
    return 2 * epsilon_at(inner), inner

r"""The two adjacencies (privacy.md, "Setting" and "Add/remove neighbours"), and the bound one gives for the other.

- ``Adjacency.REPLACE_ONE`` (``"replace_one"``, the default, the paper's): neighbours differ in one record, n is public;
- ``Adjacency.ADD_REMOVE`` (``"add_remove"``): one record added or removed, n private (Opacus', AIM's and MST's
  convention).

A replacement is a removal and an addition, so replace-one is the stronger guarantee at equal epsilon. What the code
asks of an adjacency is a property of ``Adjacency``: whether n is public (``public_size``), the sensitivity of a sum
of per-record contributions (``one_hot_sensitivity``, ``norm_sensitivity``), and the other adjacency with the bound a
run gives for it (``PrivacyReport.other_neighbouring``):

- a one-shot Gaussian release of a sum of one-hot contributions: :math:`\Delta_{RO} = \sqrt{2}\,\Delta_{AR}`
  exactly, so the same noise is the analytic Gaussian mechanism at multiplier :math:`z\sqrt{2}` (add/remove, from a
  replace-one run) or :math:`z / \sqrt{2}` (replace-one, from an add/remove run): ``Adjacency.other_multiplier``;
- Poisson per-step releases of an add/remove run, restated under replace-one: group privacy of 2, an
  :math:`(\varepsilon, \delta')` add/remove guarantee being :math:`(2\varepsilon, (1 + e^{\varepsilon})\delta')`
  under replace-one (``group_of_two``); those of a replace-one run (Poisson batches of a sum kind), restated under
  add/remove: the add/remove Poisson schedule at :math:`z\sqrt{2}` (``models.releasing.other_adjacency``).
"""

from __future__ import annotations

import enum
import math
from typing import Callable


class Adjacency(str, enum.Enum):
    """Which datasets are neighbours. A member equals its value (``Adjacency.REPLACE_ONE == "replace_one"``), so it
    is written to reports and results files as that string; ``Adjacency.of`` reads a user's string."""

    REPLACE_ONE = "replace_one"
    ADD_REMOVE = "add_remove"

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)

    @classmethod
    def of(cls, value: Adjacency | str) -> Adjacency:
        """The adjacency named ``value`` (a member or its string), or a ``ValueError`` naming the accepted values."""
        try:
            return cls(value)
        except ValueError:
            raise ValueError(f"neighbouring must be one of {sorted(member.value for member in cls)}, got {value!r}.") from None

    @property
    def n_is_public(self) -> bool:
        """Whether the number of records is public: under replace-one neighbours have the same n."""
        return self is Adjacency.REPLACE_ONE

    def public_size(self, n_records: int) -> int | None:
        """``n_records`` where n is public (replace-one), ``None`` where it is private (add/remove)."""
        return n_records if self.n_is_public else None

    @property
    def label(self) -> str:
        """The name a privacy report prints."""
        return "replace-one (n public)" if self.n_is_public else "add/remove (n private)"

    @property
    def other(self) -> Adjacency:
        """The other adjacency."""
        return Adjacency.ADD_REMOVE if self.n_is_public else Adjacency.REPLACE_ONE

    @property
    def one_hot_sensitivity(self) -> float:
        r"""The L2 sensitivity of a sum of one-hot contributions, one per record: :math:`\sqrt{2}` (a record's 1
        leaves one cell and enters another) or 1 (one cell moves by 1)."""
        return math.sqrt(2.0) if self.n_is_public else 1.0

    @property
    def norm_sensitivity(self) -> float:
        r"""The L2 sensitivity, over C, of a sum of contributions of norm at most C, one per record: 2 (a
        contribution replaced by its opposite) or 1 (one contribution added or removed)."""
        return 2.0 if self.n_is_public else 1.0

    def other_multiplier(self, noise_multiplier: float) -> float:
        r"""The multiplier of the same one-shot release of a sum of one-hot contributions under the other adjacency
        (:math:`\Delta_{RO} = \sqrt{2}\,\Delta_{AR}`): :math:`z\sqrt{2}` under add/remove from a replace-one run,
        :math:`z / \sqrt{2}` under replace-one from an add/remove run."""
        return noise_multiplier * math.sqrt(2.0) if self.n_is_public else noise_multiplier / math.sqrt(2.0)


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

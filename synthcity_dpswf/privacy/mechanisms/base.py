r"""What every release is (privacy.md, "The only place private data is touched: a release"): a linear statistic of a
batch of bounded records, its exact replace-one sensitivity, and Gaussian noise of standard deviation
:math:`s = z \Delta` on it; and the steps every release takes, here and nowhere else.

A release maps records onto the ball (or sphere) of radius r (``bound_records``), draws its batch independently at
every step: a Poisson sample of rate q (``poisson_batch``: under add/remove, and under replace-one for the sums of
privacy.md's "Poisson batches under replace-one") or a uniformly random subset of exactly b indices (``sample_batch``,
replace-one): the sampling that each accountant assumes; and adds noise from ``gaussian_noise``. The batch indices and the noise must stay secret (an adversary who
could regenerate the noise would subtract it; one who knew the batches would defeat the amplification by
subsampling), so they are drawn from ``secret_generator``: seeded from the operating system's entropy, never stored,
unless a caller asks for a reproducible seed in a test. The DP-SGD codec's noisy gradient sums (``privacy.dpsgd``)
take the same steps.

Each kind is one subclass of ``ReleaseMechanism`` in its own module, registered by name (``mechanisms.MECHANISMS``,
as Opacus keys its accountants). The flow target that generation reads from a kind's releases lives in
``models.kinds``.
"""

from __future__ import annotations

import secrets
import warnings
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import torch

from synthcity_dpswf.math import random_directions
from synthcity_dpswf.math.checks import check_matrix, check_non_negative, check_positive, check_positive_int
from synthcity_dpswf.notices import DPSWFWarning
from synthcity_dpswf.privacy.mechanisms.layout import MarginalLayout
from synthcity_dpswf.privacy.neighbouring import Adjacency

Boundary = Literal["ball", "sphere"]


def secret_generator(seed: int | None = None) -> torch.Generator:
    """A CPU generator for batch indices and release noise, seeded from OS entropy (``secrets``).

    Passing ``seed`` makes the releases reproducible, and removable by anyone who knows the seed: it warns,
    and is meant for tests and audits only.
    """
    if seed is None:
        return torch.Generator().manual_seed(secrets.randbits(63))
    warnings.warn(
        "release noise seeded with a known seed: anyone who knows it can remove the noise; use only for tests.",
        DPSWFWarning,
        stacklevel=2,
    )
    return torch.Generator().manual_seed(seed)


def bound_records(records: torch.Tensor, radius: float = 1.0, boundary: Boundary = "ball") -> torch.Tensor:
    r"""Map each record onto the ball (``boundary="ball"``: :math:`y \mapsto y \min(1, r / \|y\|)`) or the sphere
    (``"sphere"``: :math:`y \mapsto r\, y / \|y\|`, for normalised latents) of radius r.

    The map acts on each record alone, so it needs no budget; how many records it changed is not reported.
    A zero record has no direction: on the sphere it is rejected.
    """
    check_matrix("records", records)
    check_positive("radius", radius)
    wide = records.to(torch.float64)  # float32 norms lose precision for tiny or huge entries
    norms = wide.norm(dim=1, keepdim=True)
    if boundary == "ball":
        bounded = wide * (radius / norms.clamp(min=radius))
    elif boundary == "sphere":
        if bool((norms == 0).any()):
            raise ValueError("a record is the zero vector and has no direction on the sphere; use boundary='ball'.")
        bounded = wide * (radius / norms)
    else:
        raise ValueError(f"boundary must be 'ball' or 'sphere', got {boundary!r}.")
    # Rounding back to the input dtype may leave a norm a hair above r: scale those rows in once more.
    bounded = bounded.to(records.dtype)
    final = bounded.to(torch.float64).norm(dim=1, keepdim=True)
    return torch.where(final > radius, bounded * (radius / final).to(records.dtype) * (1 - 1e-6), bounded)


def sample_batch(n_records: int, batch_size: int, generator: torch.Generator) -> torch.Tensor:
    """A uniformly random subset of exactly ``batch_size`` of the ``n_records`` indices (without replacement)."""
    check_positive_int("n_records", n_records)
    check_positive_int("batch_size", batch_size)
    if batch_size > n_records:
        raise ValueError(f"batch_size={batch_size} exceeds the {n_records} records; lower it.")
    return torch.randperm(n_records, generator=generator)[:batch_size]


def poisson_batch(n_records: int, sample_rate: float, generator: torch.Generator) -> torch.Tensor:
    """Poisson sampling: every one of the ``n_records`` indices independently with probability q = ``sample_rate``
    (per-step releases under add/remove, privacy.md, "Add/remove neighbours"; under replace-one the histogram and
    marginal releases and the DP-SGD codec by default, "Poisson batches under replace-one"); the batch's size varies and
    is never released."""
    check_positive_int("n_records", n_records)
    if not 0 < sample_rate <= 1:
        raise ValueError(f"sample_rate must lie in (0, 1], got {sample_rate!r}.")
    return torch.nonzero(torch.rand(n_records, generator=generator, dtype=torch.float64) < sample_rate).reshape(-1)


def gaussian_noise(shape: tuple[int, ...], noise_std: float, generator: torch.Generator, like: torch.Tensor) -> torch.Tensor:
    r"""i.i.d. :math:`\mathcal{N}(0, s^2)` of ``shape``, drawn in float64 on CPU from the secret ``generator`` and
    returned with ``like``'s dtype and device: the one source of release noise (records, projections, counts)."""
    check_non_negative("noise_std", noise_std)
    noise = torch.randn(shape, generator=generator, dtype=torch.float64) * noise_std
    return noise.to(dtype=like.dtype, device=like.device)


@dataclass(frozen=True)
class ReleaseOptions:
    """Public parameters of a release kind (each kind reads the ones it needs).

    Attributes:
        radius: r, records are bounded to the ball (or sphere) of this radius before any release.
        n_release_directions: L, directions per release (projected kinds; the flow's own are ``FlowSettings.
            n_directions``).
        n_bins: G, bins over [-r, r] per direction (histogram kinds).
        layout: the public tables of the marginal kind (``layout.MarginalLayout``).
    """

    radius: float = 1.0
    n_release_directions: int = 70
    n_bins: int = 16
    layout: MarginalLayout | None = None

    def __post_init__(self) -> None:
        check_positive("radius", self.radius)
        check_positive_int("n_release_directions", self.n_release_directions)
        check_positive_int("n_bins", self.n_bins)

    @classmethod
    def from_dict(cls, state: dict[str, Any]) -> "ReleaseOptions":
        """Rebuild options saved with ``dataclasses.asdict`` (the layout comes back as a dict of lists)."""
        state = dict(state)
        layout = state.pop("layout", None)
        if isinstance(layout, dict):
            layout = MarginalLayout(
                tuple(layout["levels"]), tuple(layout["coarse_levels"]), tuple(tuple(p) for p in layout["pairs"]),
                tuple(layout.get("missing", ())), layout.get("condition"),
                tuple(None if starts is None else tuple(starts) for starts in layout.get("runs", ())),
            )
        return cls(**state, layout=layout)


@dataclass(frozen=True)
class Release:
    """One released payload: the noisy statistic, its noise standard deviation, and its public directions."""

    values: torch.Tensor
    noise_std: float
    directions: torch.Tensor | None


class ReleaseMechanism(ABC):
    """A Gaussian mechanism on a linear statistic :math:`S(B) = \\sum_{i \\in B} f(y_i)` (or the stacked
    :math:`f(y_i)`) of a batch of bounded records.

    Subclasses define ``statistic`` and ``sensitivity``; ``release`` adds the noise. ``class_conditional``
    kinds take the (private) class of every record (``labels`` in the public range ``0..n_classes-1``) and count
    per class.
    """

    name: ClassVar[str]
    stored_as: ClassVar[str]
    """What one payload is, for the report's "stored" line."""
    uses_directions: ClassVar[bool] = False
    class_conditional: ClassVar[bool] = False
    sums_contributions: ClassVar[bool] = False
    """Whether the statistic is a sum of per-record contributions (then it has an add/remove form:
    ``add_remove_sensitivity``, ``counted_records``)."""
    takes_level_codes: ClassVar[bool] = False
    """Whether records are integer level codes of a table (marginal kinds) rather than points of a ball."""
    opacus_pair_proven: ClassVar[bool] = True
    """Whether privacy.md proves that Opacus' subsampled-Gaussian pair bounds per-step releases of this kind under
    replace-one (batches of exactly b). Where it does not, per-step replace-one releases on fixed-size batches are
    accounted with the replace-one RDP bound (``accountant.REPLACE_ONE_RDP``), which needs only a Gaussian base mechanism. (Under
    add/remove with Poisson sampling the pair is proven for every kind with an add/remove form.)"""
    replace_one_contribution_norm: ClassVar[float | None] = None
    """C / Delta for a sum whose every record contributes a vector of the same norm C, Delta its replace-one
    sensitivity: the radius of the antipodal pair that accounts Poisson batches under replace-one (privacy.md, "Poisson
    batches under replace-one"), in the units of the release's multiplier; ``None`` where privacy.md proves no such
    pair (kinds that are not sums: their batches under replace-one have a fixed size)."""

    def __init__(self, options: ReleaseOptions | None = None) -> None:
        self.options = options or ReleaseOptions()

    def prepare(self, records: torch.Tensor, boundary: Boundary) -> torch.Tensor:
        """The records as the statistic reads them: mapped onto the ball (or sphere) of radius r
        (``bound_records``), a per-record map that needs no budget. Kinds on level codes check them instead."""
        return bound_records(records, self.options.radius, boundary)

    def draw_directions(self, dim: int, generator: torch.Generator, dtype: torch.dtype = torch.float32) -> torch.Tensor | None:
        """Fresh public directions ``(d, L)`` for one release (from the public seed), or ``None``."""
        if not self.uses_directions:
            return None
        return random_directions(dim, self.options.n_release_directions, generator, dtype=dtype)

    @abstractmethod
    def statistic(
        self, batch: torch.Tensor, directions: torch.Tensor | None, labels: torch.Tensor | None = None, n_classes: int = 1
    ) -> torch.Tensor:
        """The exact (un-noised) statistic of a batch of bounded records; only ``release`` may publish it."""

    @abstractmethod
    def sensitivity(self, directions: torch.Tensor | None) -> float:
        r"""The exact replace-one L2 sensitivity :math:`\Delta = \max \|S(B) - S(B')\|_2` over batches that
        differ in one record (with ``directions`` when the kind has them)."""

    def add_remove_sensitivity(self, directions: torch.Tensor | None) -> float | None:
        r"""The exact add/remove L2 sensitivity :math:`\Delta_{AR} = \max_x \|f(x)\|_2` of a kind whose statistic
        is a sum :math:`\sum_{i \in B} f(y_i)` of per-record contributions (privacy.md, "Add/remove neighbours");
        ``None`` for kinds that are not sums (they publish one row per record: no add/remove form)."""
        return None

    def counted_records(self, values: torch.Tensor) -> torch.Tensor | None:
        """The number of records counted in each released payload of ``values`` (``(K, ...)``), estimated from the
        payloads alone (post-processing), for kinds that count; ``None`` for kinds that publish rows."""
        return None

    def check_neighbouring(self, neighbouring: Adjacency | str) -> Adjacency:
        """The adjacency ``neighbouring``, or an error where the kind has no form under it (under add/remove: only
        sums of contributions)."""
        neighbouring = Adjacency.of(neighbouring)
        if not neighbouring.n_is_public and not self.sums_contributions:
            raise ValueError(
                f"the {self.name!r} release publishes one noisy row per record, so its shape gives the batch size away: "
                "it has no add/remove form; use a release that sums contributions ('projected_histogram' or 'marginal')."
            )
        return neighbouring

    def sensitivity_for(self, directions: torch.Tensor | None, neighbouring: Adjacency | str) -> float:
        """The sensitivity under ``neighbouring``: ``sensitivity`` or ``add_remove_sensitivity``."""
        if self.check_neighbouring(neighbouring).n_is_public:
            return self.sensitivity(directions)
        sensitivity = self.add_remove_sensitivity(directions)
        assert sensitivity is not None
        return sensitivity

    @abstractmethod
    def describe(self, neighbouring: Adjacency | str = Adjacency.REPLACE_ONE) -> str:
        """One line for the privacy report: what is released, with which sensitivity (under ``neighbouring``)."""

    def release(
        self,
        batch: torch.Tensor,
        directions: torch.Tensor | None,
        noise_multiplier: float,
        secret: torch.Generator,
        labels: torch.Tensor | None = None,
        n_classes: int = 1,
        neighbouring: Adjacency | str = Adjacency.REPLACE_ONE,
    ) -> Release:
        r"""The statistic plus :math:`\mathcal{N}(0, s^2)` on every entry, :math:`s = z\,\Delta`, with
        :math:`\Delta` the sensitivity under ``neighbouring``; noise from ``secret``."""
        if labels is not None and not self.class_conditional:
            raise ValueError(
                f"the {self.name!r} release takes no labels; join them into the record (LabelledCodec) or use a "
                "class-conditional release such as 'projected_histogram'."
            )
        return self.noised(self.statistic(batch, directions, labels, n_classes), directions, noise_multiplier, secret,
                           neighbouring)

    def noised(
        self,
        exact: torch.Tensor,
        directions: torch.Tensor | None,
        noise_multiplier: float,
        secret: torch.Generator,
        neighbouring: Adjacency | str = Adjacency.REPLACE_ONE,
    ) -> Release:
        r"""The exact statistic of a batch plus :math:`\mathcal{N}(0, s^2)` on every entry, :math:`s = z\,\Delta`:
        the one place noise is added, whether the statistic was computed here (``release``) or summed from a
        partitioned table's partitions (privacy.md, "Tables on Dask": noise once, on the total)."""
        check_non_negative("noise_multiplier", noise_multiplier)
        noise_std = noise_multiplier * self.sensitivity_for(directions, neighbouring)
        return Release(exact + gaussian_noise(tuple(exact.shape), noise_std, secret, exact), noise_std, directions)

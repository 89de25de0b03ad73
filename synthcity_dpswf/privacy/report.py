"""The privacy report: everything a reader needs to check a generator's guarantee, in one readable object."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

from synthcity_dpswf.privacy.neighbouring import Adjacency


NOT_COVERED = (
    "choosing hyperparameters on the private data (tuning is not accounted)",
    "anything fitted on the private records outside the releases (encoders, bounds) unless stated as paid below",
    "floating-point attacks on the Gaussian and Gumbel samplers; the noise comes from torch's PRNG seeded from OS entropy "
    "(not a CSPRNG)",
)


@dataclass(frozen=True)
class OtherAdjacency:
    """The guarantee of the same releases under the adjacency they were not calibrated for (privacy.md, "Both
    adjacencies in the report"): ``(epsilon, delta)`` and how it follows, or ``None`` epsilon when not derived."""

    neighbouring: str
    epsilon: float | None
    delta: float | None
    how: str

    def plus(self, part: "OtherAdjacency | None") -> "OtherAdjacency":
        """Basic composition with another part's bound under the same adjacency (not derived if either is not)."""
        if part is None or self.epsilon is None or part.epsilon is None or self.delta is None or part.delta is None:
            return OtherAdjacency(self.neighbouring, None, None, self.how if part is None else f"{self.how}; {part.how}")
        return OtherAdjacency(self.neighbouring, self.epsilon + part.epsilon, self.delta + part.delta, self.how)

    def __str__(self) -> str:
        if self.epsilon is None:
            return f"{self.neighbouring}: not derived ({self.how})"
        return f"{self.neighbouring}: ({self.epsilon:.4g}, {self.delta:.3g}), {self.how}"


@dataclass(frozen=True)
class PrivacyPart:
    """Another private release composed with the generator's (e.g. a DP domain), with its own budget alone, and its
    bound under the other adjacency when one is derived.

    A part whose Gaussian mechanism was accounted inside the generator's accountant (``PrivacyReport.include``) says
    so with ``threshold_delta``, the delta it adds outside that accounting (a category threshold's, proved for the
    whole guarantee at ``threshold_epsilon``: privacy.md, "One budget"); ``epsilon`` and ``delta`` stay its own."""

    name: str
    epsilon: float
    delta: float
    detail: str
    other: OtherAdjacency | None = None
    threshold_delta: float = 0.0
    threshold_epsilon: float | None = None
    accounted: bool = False
    """Whether the part's Gaussian mechanism is an entry of the generator's accountant (the report then ``include``s
    it; otherwise it ``compose``s it)."""

    def threshold_delta_at(self, epsilon: float) -> float:
        r"""``threshold_delta`` in a guarantee of epsilon ``epsilon`` instead of ``threshold_epsilon``:
        :math:`\delta_T (1 + e^{\varepsilon}) / (1 + e^{\varepsilon_T})` (privacy.md, "One budget")."""
        if self.threshold_delta == 0 or self.threshold_epsilon is None:
            return self.threshold_delta
        return self.threshold_delta * math.exp(_log1p_exp(epsilon) - _log1p_exp(self.threshold_epsilon))


def _log1p_exp(x: float) -> float:
    """log(1 + e^x) without overflow."""
    return x + math.log1p(math.exp(-x)) if x > 0 else math.log1p(math.exp(x))


@dataclass(frozen=True)
class PrivacyReport:
    """What was released, how it was accounted, and what the guarantee does not cover.

    ``epsilon = inf`` (no release noise) means the model is not private; ``str()`` then says so instead of
    printing a number.
    """

    epsilon: float
    delta: float
    mechanism: str
    sampling: str
    sample_rate: float
    steps: int
    noise_multiplier: float
    sensitivity: float
    noise_std: float
    accountant: str
    conservative_epsilon: float | None
    radius: float | None
    """r, the bound of the records (``None`` for kinds on level codes, whose records are bounded by the layout)."""
    stored: str
    neighbouring: str = Adjacency.REPLACE_ONE.label
    public: tuple[str, ...] = ()
    not_covered: tuple[str, ...] = field(default=NOT_COVERED)
    parts: tuple[PrivacyPart, ...] = ()
    other: OtherAdjacency | None = None
    """The same releases under the other adjacency (a bound), when the run is private."""
    composition: str = "basic"
    """How ``parts`` compose with the releases: ``"basic"`` (epsilons and deltas add) or ``"accounted"`` (the part's
    Gaussian mechanism is one more entry of the accountant that gave ``epsilon``, exactly: ``include``)."""
    conservative_delta: float | None = None
    """The delta of ``conservative_epsilon`` where it differs from ``delta`` (an included part's threshold costs
    ``threshold_delta_at`` of that epsilon)."""

    def include(self, part: PrivacyPart) -> "PrivacyReport":
        """This report, whose accounting already holds ``part``'s Gaussian mechanism (the generator was fitted with it
        as its accountant's ``prior``), with the part listed and its ``threshold_delta`` added to delta (and, under the
        other adjacency, ``threshold_delta_at`` of that epsilon): privacy.md, "One budget"."""
        if not part.accounted or (self.parts and self.composition != "accounted"):
            raise ValueError("include takes parts the accountant held (accounted=True) into a report with no part composed "
                             "by basic composition; the part was not in the accounting, or the report has basic parts: use "
                             "compose.")
        other = self.other
        if other is not None and other.epsilon is not None and other.delta is not None:
            other = OtherAdjacency(other.neighbouring, other.epsilon, other.delta + part.threshold_delta_at(other.epsilon),
                                   f"{other.how}; the {part.name} inside the accounting")
        conservative_delta = self.conservative_delta
        if self.conservative_epsilon is not None:
            conservative_delta = (self.conservative_delta if self.conservative_delta is not None else self.delta) \
                + part.threshold_delta_at(self.conservative_epsilon)
        return dataclasses.replace(
            self, delta=self.delta + part.threshold_delta, parts=self.parts + (part,), other=other, composition="accounted",
            conservative_delta=conservative_delta,
        )

    def compose(self, part: PrivacyPart) -> "PrivacyReport":
        """This report with ``part`` added by basic composition: epsilons and deltas add up (the
        conservative bound and the other adjacency's bound too)."""
        conservative = None if self.conservative_epsilon is None else self.conservative_epsilon + part.epsilon
        other = None if self.other is None else self.other.plus(part.other)
        return dataclasses.replace(
            self, epsilon=self.epsilon + part.epsilon, delta=self.delta + part.delta,
            conservative_epsilon=conservative, parts=self.parts + (part,), other=other,
        )

    @property
    def is_private(self) -> bool:
        """False when no noise was added (epsilon = inf)."""
        return math.isfinite(self.epsilon)

    def __str__(self) -> str:
        if self.is_private:
            headline = f"({self.epsilon:.4g}, {self.delta:.3g})-differentially private"
        else:
            headline = "NOT PRIVATE: epsilon = inf, the releases carry no noise"
        lines = [
            f"Privacy report: {headline}",
            f"  mechanism          {self.mechanism}",
            f"  neighbouring       {self.neighbouring}",
            f"  sampling           {self.sampling}",
            f"  q, K               {self.sample_rate:.6g}, {self.steps}",
            f"  records bounded to radius r = {self.radius:g}" if self.radius is not None
            else "  records            level codes inside the public layout (one count per table each)",
            f"  sensitivity Delta  {self.sensitivity:.6g}",
            f"  noise multiplier z {self.noise_multiplier:.6g}",
            f"  noise std s = z*Delta {self.noise_std:.6g}",
        ]
        if self.is_private:
            lines.append(f"  accountant         {self.accountant}")
            if self.conservative_epsilon is not None:
                at = "" if self.conservative_delta is None else f" at delta = {self.conservative_delta:.3g}"
                lines.append(
                    f"  conservative bound epsilon = {self.conservative_epsilon:.4g}{at} "
                    "(dp-accounting RDP, replace-one, sampling without replacement)"
                )
        if self.parts and self.composition == "accounted":
            for part in self.parts:
                threshold = (f"; its key threshold (categories, atoms) adds {part.threshold_delta:.3g} to delta"
                             if part.threshold_delta > 0
                             else "")
                lines.append(f"  composition        exact: {part.name}'s releases are entries of the accounting above{threshold}")
                lines.append(f"                     ({part.name} alone: ({part.epsilon:.4g}, {part.delta:.3g}): {part.detail})")
        elif self.parts:
            release_epsilon = self.epsilon - sum(part.epsilon for part in self.parts)
            release_delta = self.delta - sum(part.delta for part in self.parts)
            lines.append(f"  composition        basic: the releases above ({release_epsilon:.4g}, {release_delta:.3g})")
            for part in self.parts:
                lines.append(f"                     + {part.name} ({part.epsilon:.4g}, {part.delta:.3g}): {part.detail}")
        if self.is_private and self.other is not None:
            lines.append(f"  other adjacency    {self.other}{' (all parts)' if self.parts else ''}")
        lines.append(f"  stored             {self.stored}")
        lines.extend(f"  public             {item}" for item in self.public)
        lines.extend(f"  not covered        {item}" for item in self.not_covered)
        return "\n".join(lines)

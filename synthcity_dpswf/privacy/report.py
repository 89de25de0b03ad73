"""The privacy report: everything a reader needs to check a generator's guarantee, in one readable object."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

NOT_COVERED = (
    "choosing hyperparameters on the private data (tuning is not accounted)",
    "anything fitted on the private records outside the releases (encoders, bounds) unless stated as paid below",
    "floating-point attacks on the Gaussian sampler; the noise comes from torch's PRNG seeded from OS entropy "
    "(not a CSPRNG)",
)


@dataclass(frozen=True)
class PrivacyPart:
    """Another private release composed with the generator's (e.g. a DP domain), with its own budget."""

    name: str
    epsilon: float
    delta: float
    detail: str


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
    neighbouring: str = "replace-one (n public)"
    public: tuple[str, ...] = ()
    not_covered: tuple[str, ...] = field(default=NOT_COVERED)
    parts: tuple[PrivacyPart, ...] = ()

    def compose(self, part: PrivacyPart) -> "PrivacyReport":
        """This report with ``part`` added by basic composition: epsilons and deltas add up (the
        conservative bound too)."""
        conservative = None if self.conservative_epsilon is None else self.conservative_epsilon + part.epsilon
        return dataclasses.replace(
            self, epsilon=self.epsilon + part.epsilon, delta=self.delta + part.delta,
            conservative_epsilon=conservative, parts=self.parts + (part,),
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
            f"  q = b/n, K         {self.sample_rate:.6g}, {self.steps}",
            f"  records bounded to radius r = {self.radius:g}" if self.radius is not None
            else "  records            level codes inside the public layout (one count per table each)",
            f"  sensitivity Delta  {self.sensitivity:.6g}",
            f"  noise multiplier z {self.noise_multiplier:.6g}",
            f"  noise std s = z*Delta {self.noise_std:.6g}",
        ]
        if self.is_private:
            lines.append(f"  accountant         {self.accountant}")
            if self.conservative_epsilon is not None:
                lines.append(
                    f"  conservative bound epsilon = {self.conservative_epsilon:.4g} "
                    "(dp-accounting RDP, replace-one, sampling without replacement)"
                )
        if self.parts:
            release_epsilon = self.epsilon - sum(part.epsilon for part in self.parts)
            release_delta = self.delta - sum(part.delta for part in self.parts)
            lines.append(f"  composition        basic: the releases above ({release_epsilon:.4g}, {release_delta:.3g})")
            for part in self.parts:
                lines.append(f"                     + {part.name} ({part.epsilon:.4g}, {part.delta:.3g}): {part.detail}")
        lines.append(f"  stored             {self.stored}")
        lines.extend(f"  public             {item}" for item in self.public)
        lines.extend(f"  not covered        {item}" for item in self.not_covered)
        return "\n".join(lines)

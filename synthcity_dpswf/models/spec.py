"""Which generator a fit builds, resolved once before any record is read (privacy.md, "Sampling and composition"):
its class, its constructor's arguments (the release kind among them) and so its release schedule. ``plan`` is the one
place a fit computes its schedule's accountant and number of releases, from public numbers only; the noise is
calibrated to that plan (``privacy.budget.Budget.noise_multiplier``), the tables it decides are laid out, and the
generator ``build`` makes is fitted with the same plan (``SlicedGenerator.fit``'s ``plan``), so what is released is
what was calibrated."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from synthcity_dpswf.models.base import SlicedGenerator
from synthcity_dpswf.models.settings import ReleasePlan, ReleaseSchedule
from synthcity_dpswf.privacy import Adjacency, MarginalLayout
from synthcity_dpswf.privacy.gaussian import PriorLike


@dataclass(frozen=True)
class GeneratorSpec:
    """A generator class and its constructor's ``arguments`` (all but the marginal release's ``marginals``, laid out
    after the noise is known: ``build``). ``small_batches``: a fixed batch size given for replace-one per-step releases
    is capped at half of a smaller table's public n (the plugins' rule: a batch of every record would be one release
    of all of them, repeated)."""

    generator_class: type[SlicedGenerator]
    arguments: Mapping[str, Any] = field(default_factory=dict)
    small_batches: bool = False

    @property
    def name(self) -> str:
        """The generator's name (``"dpswflow"``, ``"dpswflow_r"``, ``"dpswgen"``)."""
        return self.generator_class.name

    @property
    def release(self) -> str:
        """The release kind (``privacy.MECHANISMS``)."""
        return str(self.arguments["release"])

    @property
    def neighbouring(self) -> Adjacency:
        """The adjacency the releases are calibrated for."""
        return Adjacency.of(self.arguments.get("neighbouring", Adjacency.REPLACE_ONE))

    def arguments_for(self, n_public: int | None) -> dict[str, Any]:
        """The constructor's arguments for data of ``n_public`` records (``None``: n private, never read)."""
        arguments = dict(self.arguments)
        batch_size = arguments.get("batch_size")
        if self.small_batches and batch_size is not None and self.neighbouring.n_is_public and n_public is not None:
            arguments["batch_size"] = min(batch_size, max(1, n_public // 2))
        return arguments

    def schedule(self, n_public: int | None) -> ReleaseSchedule:
        """The releases' schedule for ``n_public`` records (``SlicedGenerator.schedule_of``)."""
        return self.generator_class.schedule_of(self.arguments_for(n_public))

    def plan(self, n_public: int | None, prior: PriorLike = None) -> ReleasePlan:
        """The accountant of the releases and their number for ``n_public`` records (``None`` under add/remove), with
        ``prior`` spent before them (``ReleaseSchedule.accountant``): computed once per fit, here (a table's before its
        budget is spent, its prior added where the noise is calibrated: ``privacy.budget.Budget.release_terms``)."""
        return self.schedule(n_public).accountant(n_public, self.neighbouring, self.arguments["accountant"],
                                                  self.release, prior)

    def build(self, n_public: int | None, layout: MarginalLayout | None = None) -> SlicedGenerator:
        """The generator for ``n_public`` records, with the marginal release's ``layout`` where it has one."""
        return self.generator_class(**self.arguments_for(n_public), marginals=layout)

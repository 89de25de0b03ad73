"""Sampling: post-processing of a fitted generator's pool, at no budget (privacy.md, "What a fitted model stores").

``sample(count)`` (or ``sample_labelled`` for records fitted with labels) runs the flow of the particles to the targets
read from the pool (``models.kinds.build_target``), with generation-time ``FlowSettings`` that can be changed per
call; ``sample_chunks(count, chunk_size)`` streams any number of rows in independent chunks (``models.chunks``).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Iterator

import torch

from synthcity_dpswf.math import TargetSource, run_flow
from synthcity_dpswf.math.checks import check_matrix, check_positive_int
from synthcity_dpswf.math.histograms import allocate
from synthcity_dpswf.models.chunks import ChunkSpec, SampleChunk, chunk_plan
from synthcity_dpswf.models.kinds import build_target, class_weights, flow_groups, particle_space
from synthcity_dpswf.models.state import FlowSettings, GeneratorState
from synthcity_dpswf.privacy import bound_records


class Sampling(GeneratorState):
    """A sliced generator's sampling (``SlicedGenerator`` is one): the flow over the pool, class by class for a fit with
    labels, whole or in chunks. DPSWGen overrides ``_sample_class`` and ``_sample_classes`` to run its network."""

    def flow_target(self, settings: FlowSettings, seed: int, class_index: int = 0) -> TargetSource:
        """The flow target that generation reads from the pool (of class ``class_index`` for class-conditional
        releases), per ``settings``."""
        return build_target(self._pool(), settings, self.n_levels, seed, self.device, class_index)

    def _steps(self, settings: FlowSettings) -> int:
        return self._pool().n_releases if settings.reuse == "once" else settings.n_steps

    def class_shares(self) -> torch.Tensor | None:
        """The released shares of a named target's classes where the tables are counted per class (``(C,)``), else
        ``None`` (post-processing)."""
        return flow_groups(self._pool())

    def label_counts(self, count: int) -> torch.Tensor | None:
        """How many of ``count`` pairs each class gets in ``sample_labelled`` (``(C,)``: the released class weights by
        largest remainders, ``models.kinds.class_weights``) for class-conditional releases; ``None`` for joint records,
        whose labels are decoded from them (post-processing)."""
        if self.labels_ != "conditional":
            return None
        return allocate(count, class_weights(self._pool()))

    def initial_particles(self, count: int, generator: torch.Generator) -> torch.Tensor:
        """Starting particles of the kind's space (``models.kinds.particle_space``): N(0, r^2 / d I) for the
        projected kinds, the product of the released one-way margins for marginal releases."""
        return particle_space(self._pool(), self.radius, self.device).initial_particles(count, generator)

    def sample(
        self,
        count: int,
        *,
        init: torch.Tensor | None = None,
        seed: int | None = None,
        class_sizes: torch.Tensor | None = None,
        **overrides: Any,
    ) -> torch.Tensor:
        """``count`` synthetic records, by running the flow over the pool (post-processing, no budget).

        ``init`` gives starting particles (``(count, d)``, e.g. public records); ``overrides`` replace fields
        of ``FlowSettings`` for this call only; ``seed`` (default: the model's) seeds the run. A model fitted
        with labels samples with ``sample_labelled``. Tables counted per class of a named target flow one group per
        class, of sizes proportional to the released class totals (``models.kinds.flow_groups``); ``class_sizes``
        (``(C,)``, summing to ``count``) asks for that many rows of each class instead, returned class after class
        (generation conditioned on the target: ``plugins.table_path.TablePath.generate``'s ``cond``).
        """
        check_positive_int("count", count)
        self._pool()
        if self.labels_ is not None:
            raise ValueError(f"{type(self).__name__} was fitted with labels; sample (records, labels) with sample_labelled.")
        groups = flow_groups(self._pool())
        if class_sizes is not None:
            class_sizes = checked_class_sizes(class_sizes, groups, count)
        if init is not None:
            if groups is not None:
                raise ValueError("a model conditioned on a named target starts each class from its own tables: "
                                 "sample without init.")
            self._check_init(init, count)
        settings = dataclasses.replace(self.settings, **overrides)
        run_seed = self.seed if seed is None else seed
        space = particle_space(self._pool(), self.radius, self.device)
        flowed = count
        if init is None and settings.flow_particles is not None and space.resamples:
            flowed = settings.flowed(count)
        if class_sizes is not None:
            flowed_sizes = class_flows(class_sizes, None if settings.flow_particles is None else settings.flowed(count))
            particles = self._sample_classes(flowed_sizes, None, settings, run_seed)
            if not torch.equal(flowed_sizes, class_sizes):  # each class's rows drawn from its own flowed particles
                generator = torch.Generator().manual_seed(run_seed + 4)
                parts = torch.split(particles, flowed_sizes.tolist())
                particles = torch.cat([space.resample(part, int(size), generator) if int(size) else part[:0]
                                       for part, size in zip(parts, class_sizes)])
        elif groups is not None:
            particles = self._sample_classes(allocate(flowed, groups), None, settings, run_seed)
        else:
            particles = self._sample_class(flowed, 0, init, settings, run_seed)
        if flowed < count and class_sizes is None:  # more rows drawn from the flowed particles (``ParticleSpace.resample``)
            particles = space.resample(particles, count, torch.Generator().manual_seed(run_seed + 4))
        return space.to_records(particles)

    def sample_labelled(
        self,
        count: int,
        *,
        init: tuple[torch.Tensor, torch.Tensor] | None = None,
        seed: int | None = None,
        labels: torch.Tensor | None = None,
        **overrides: Any,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``count`` synthetic (record, label) pairs of a model fitted with labels (post-processing).

        Class-conditional releases: the classes' shares come from the released counts
        (``models.kinds.class_weights``, largest remainders), and each class's particles flow to its own
        target (all classes in one flow), so every label is exact. Joint records: one flow, the label decoded from the record's label
        block. ``init`` = (records, labels) of starting particles fixes the labels (``count`` of them); so does
        ``labels`` (``(count,)`` integers in 0..C-1, class-conditional releases only), from the usual starting
        particles, returned in the order given.
        """
        check_positive_int("count", count)
        self._pool()
        if self.labels_ is None:
            raise ValueError(f"{type(self).__name__} was fitted without labels; use sample(count).")
        settings = dataclasses.replace(self.settings, **overrides)
        run_seed = self.seed if seed is None else seed
        if labels is not None:
            return self._sample_given_labels(labels, init, settings, run_seed)
        if self.labels_ == "joint":
            start = None
            if init is not None:
                start = bound_records(self.codec.encode(bound_records(init[0].float(), self.radius, self.boundary), init[1]), self.radius)
                self._check_init(start, count)
            return self.codec.decode(self._sample_class(count, 0, start, settings, run_seed).cpu())
        assert self.n_classes_ is not None
        if init is not None:
            self._check_init(init[0], count)
            labels = init[1].long().cpu()
            order = torch.argsort(labels, stable=True)  # the particles are flowed class after class
            start, labels = init[0][order].float(), labels[order]
            sizes = torch.bincount(labels, minlength=self.n_classes_)
        else:
            start, sizes = None, allocate(count, class_weights(self._pool()))
            labels = torch.repeat_interleave(torch.arange(self.n_classes_), sizes)
        records = self._sample_classes(sizes, start, settings, run_seed)
        shuffle = torch.randperm(count, generator=torch.Generator().manual_seed(run_seed))
        return records[shuffle.to(self.device)], labels[shuffle]

    def _sample_given_labels(self, labels: torch.Tensor, init: tuple[torch.Tensor, torch.Tensor] | None,
                             settings: FlowSettings, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
        """One record of each given label's class, in ``labels``' order (``sample_labelled``'s ``labels``)."""
        if self.labels_ == "joint":
            raise ValueError("labelling='joint' decodes each label from its record, so labels cannot be asked for: fit "
                             "with labelling='conditional' (the default) to generate given labels.")
        if init is not None:
            raise ValueError("give labels or init (whose labels fix the classes), not both.")
        assert self.n_classes_ is not None
        labels = labels.long().cpu().reshape(-1)
        if bool((labels < 0).any()) or bool((labels >= self.n_classes_).any()):
            raise ValueError(f"labels must lie in 0..{self.n_classes_ - 1}.")
        order = torch.argsort(labels, stable=True)  # the particles are flowed class after class
        records = self._sample_classes(torch.bincount(labels, minlength=self.n_classes_), None, settings, seed)
        placed = torch.empty_like(records)
        placed[order.to(records.device)] = records
        return placed, labels

    def sample_chunks(
        self,
        count: int,
        chunk_size: int,
        *,
        seed: int | None = None,
        rank: int = 0,
        world_size: int = 1,
        **overrides: Any,
    ) -> Iterator[SampleChunk]:
        """``count`` synthetic records in chunks of at most ``chunk_size``, one chunk alive at a time
        (post-processing, no budget): memory is bounded by the chunk size, not by ``count``.

        Chunk i is ``sample`` (or ``sample_labelled`` for a model fitted with labels, then with its labels) of
        its size with run seed ``models.chunks.chunk_seed(seed, i)``: an independent flow of its own particles
        to the same stored target, the same in whichever process makes it. Process ``rank`` of ``world_size``
        gets chunks rank, rank + world_size, ... (``models.chunks.chunk_plan``), so the processes of a sharded
        run together make exactly the chunks of one. ``seed`` defaults to the model's; ``overrides`` replace
        fields of ``FlowSettings``. Records are on the model's device (move each chunk off it to keep GPU
        memory bounded too). Arguments are checked here, before the first chunk is asked for.
        """
        self._pool()
        plan = chunk_plan(count, chunk_size, self.seed if seed is None else seed, rank, world_size)
        dataclasses.replace(self.settings, **overrides)  # checks the overrides now, not at the first chunk
        return self._generate_chunks(plan, overrides)

    def _generate_chunks(self, plan: list[ChunkSpec], overrides: dict[str, Any]) -> Iterator[SampleChunk]:
        """The chunks of ``plan``, each made only when asked for (no local keeps the last one alive meanwhile)."""
        for spec in plan:
            if self.labels_ is None:
                yield SampleChunk(spec.index, spec.start, self.sample(spec.size, seed=spec.seed, **overrides), None)
            else:
                yield SampleChunk(spec.index, spec.start, *self.sample_labelled(spec.size, seed=spec.seed, **overrides))

    def _sample_classes(
        self, sizes: torch.Tensor, init: torch.Tensor | None, settings: FlowSettings, seed: int
    ) -> torch.Tensor:
        """``sizes[c]`` records of each class c, class after class: all classes flow at once, each to its own
        target (``run_flow`` with ``group_sizes``; DPSWGen runs its network instead), at the directions a step of
        that many particles (``FlowSettings.for_particles``)."""
        settings = settings.for_particles(int(sizes.sum()))
        generator = torch.Generator().manual_seed(seed + 1)
        if init is None:
            particles = particle_space(self._pool(), self.radius, self.device).initial_groups(sizes, generator)
        else:
            particles = init.to(self.device, torch.float32)
        target = build_target(self._pool(), settings, self.n_levels, seed + 3, self.device, class_index=None)
        return run_flow(
            particles, target, self._steps(settings), settings.step_size, settings.entropy,
            torch.Generator(device=self.device).manual_seed(seed + 2), progress=self.progress, group_sizes=sizes,
        )

    def _check_init(self, init: torch.Tensor, count: int) -> None:
        check_matrix("init", init, self.dim)
        if init.shape[0] != count:
            raise ValueError(f"init has {init.shape[0]} rows but count={count}; pass one row per sample.")

    def _sample_class(
        self, count: int, class_index: int, init: torch.Tensor | None, settings: FlowSettings, seed: int
    ) -> torch.Tensor:
        """Flow ``count`` particles (from ``init`` or Gaussian) to the target of ``class_index`` (DPSWGen runs its
        network instead), at the directions a step of that many particles (``FlowSettings.for_particles``)."""
        settings = settings.for_particles(count)
        generator = torch.Generator().manual_seed(seed + 1)
        particles = self.initial_particles(count, generator) if init is None else init.to(self.device, torch.float32)
        flow_generator = torch.Generator(device=self.device).manual_seed(seed + 2)
        return run_flow(
            particles, self.flow_target(settings, seed + 3, class_index), self._steps(settings), settings.step_size,
            settings.entropy, flow_generator, particle_cdf=settings.particle_cdf, progress=self.progress,
        )


CLASS_FLOW_FLOOR = 1000
"""The fewest particles a class asked for flows (``class_flows``): a flow of a few particles quantises its class's
tables coarsely, so a class asked for fewer rows flows this many and its rows are drawn from them."""


def class_flows(class_sizes: torch.Tensor, flow_particles: int | None) -> torch.Tensor:
    """The particles each class flows for ``class_sizes`` rows: at least ``CLASS_FLOW_FLOOR`` for a class asked for
    any, and at most ``flow_particles`` in all (shared in proportion, largest remainders, one at least)."""
    asked = class_sizes > 0
    flowed = torch.where(asked, class_sizes.clamp(min=CLASS_FLOW_FLOOR), 0)
    if flow_particles is not None and int(flowed.sum()) > flow_particles:
        flowed = torch.where(asked, allocate(flow_particles, flowed.double()).clamp(min=1), 0)
    return flowed.long()


def checked_class_sizes(class_sizes: Any, groups: torch.Tensor | None, count: int) -> torch.Tensor:
    """``class_sizes`` as a ``(C,)`` long tensor of rows per class of a named target summing to ``count``, or an error
    that says what was wrong."""
    if groups is None:
        raise ValueError("class_sizes asks for rows per class of a named target; this model was fitted without one "
                         "(fit on a loader that names its target, or with target_column=...).")
    sizes = torch.as_tensor(class_sizes)
    if sizes.shape != groups.shape or sizes.is_floating_point() or bool((sizes < 0).any()) or int(sizes.sum()) != count:
        raise ValueError(f"class_sizes must be {len(groups)} non-negative integers summing to count={count}, got "
                         f"{sizes.tolist()}.")
    return sizes.long()


"""What the per-step plugins add to either modality's base: DPSWflow-r's and DPSWgen's fresh private batches
(``PerStepReleases``), and DPSWgen's generator network (``NetworkTraining``)."""

from __future__ import annotations

import dataclasses
from typing import Any, List, Mapping

from synthcity.plugins.core.distribution import CategoricalDistribution, Distribution, FloatDistribution

from synthcity_dpswf.plugins.base import SlicedFlowPlugin
from synthcity_dpswf.plugins.options import BatchOptions, NetworkOptions
from synthcity_dpswf.models.state import ReleaseSchedule
from synthcity_dpswf.privacy import Adjacency


def batch_space() -> List[Distribution]:
    """The batches' hyperparameters, for synthcity's tuners."""
    return [CategoricalDistribution(name="batch_size", choices=[100, 250, 1000, 3000]),
            CategoricalDistribution(name="passes", choices=[1.0, 2.0, 5.0, 10.0, 35.0])]


def network_space() -> List[Distribution]:
    """The generator network's hyperparameters, for synthcity's tuners."""
    return [CategoricalDistribution(name="noise_dim", choices=[8, 16, 32]),
            FloatDistribution(name="learning_rate", low=1e-4, high=1e-3)]


class PerStepReleases(SlicedFlowPlugin):
    """K per-step releases of fresh random batches, composed by the accountant.

    Args:
        batch_size, sample_rate, passes: the per-step releases' batches (``options.BatchOptions``): Poisson samples
            at rate q (under replace-one ``None`` is ``models.state.default_batch_size(n) / n`` for histograms and
            marginals, privacy.md, "Poisson batches under replace-one"; under add/remove 0.1), or, with
            ``batch_size``, b records each (replace-one only); K = ceil(passes * n / b) releases (ceil(passes / q) for
            a given q).
        **kwargs: the modality's arguments (``TablePlugin``, ``ImagePlugin``).
    """

    small_batches = True

    def __init__(
        self, batch_size: int | None = None, sample_rate: float | None = None, passes: float = 10.0, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self.batch_options = BatchOptions(batch_size, sample_rate, passes, neighbouring=self.neighbouring)
        if self.flow_options.release is not None:  # the default kinds are proven (the schedule's rule, asked early)
            ReleaseSchedule(True, batch_size, sample_rate, passes).check_release(self.flow_options.release,
                                                                                self.neighbouring)

    def check_adjacency(self, neighbouring: Adjacency) -> None:
        super().check_adjacency(neighbouring)
        dataclasses.replace(self.batch_options, neighbouring=neighbouring)  # a batch size or a Poisson rate, not both

    def generator_arguments(self, release: str, flow_defaults: Mapping[str, int]) -> dict[str, Any]:
        return {**super().generator_arguments(release, flow_defaults), **dataclasses.asdict(self.batch_options)}


class NetworkTraining(PerStepReleases):
    """The releases of ``PerStepReleases``, then the paper's generator network trained with Adam on them
    (``n_steps`` training steps).

    Args:
        noise_dim, generator_batch, learning_rate: the network (``options.NetworkOptions``): its Gaussian input's
            size, generated records per training step, Adam's learning rate.
        **kwargs: the ``PerStepReleases`` arguments.
    """

    def __init__(self, noise_dim: int = 16, generator_batch: int = 500, learning_rate: float = 3e-4, **kwargs: Any) -> None:
        network = NetworkOptions(noise_dim, generator_batch, learning_rate)
        super().__init__(**kwargs)
        self.network_options = network

    def generator_arguments(self, release: str, flow_defaults: Mapping[str, int]) -> dict[str, Any]:
        return {**super().generator_arguments(release, flow_defaults), **dataclasses.asdict(self.network_options)}

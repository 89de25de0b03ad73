"""The marginal literature's table metric: total-variation distance of low-order marginals (MST, AIM)."""

from __future__ import annotations

import itertools

import torch

from synthcity_dpswf.math.checks import check_positive_int


def marginal_tv_distance(
    real_codes: torch.Tensor,
    synthetic_codes: torch.Tensor,
    levels: tuple[int, ...],
    way: int = 2,
    max_tables: int | None = None,
    seed: int = 0,
) -> float:
    r"""Mean total-variation distance between the ``way``-way marginals of two level-coded tables (the metric of
    the marginal literature, e.g. MST and AIM):

    .. math:: \frac{1}{|S|}\sum_{s \in S} \tfrac12 \sum_{\text{cells } c} |p_s(c) - \hat p_s(c)|,

    over all column sets S of size ``way`` (or ``max_tables`` of them drawn from ``seed``). Codes are integers
    ``0..K_j-1`` per column (``levels``); coarsen them first to measure at a coarser resolution.
    """
    check_positive_int("way", way)
    if real_codes.shape[1] != len(levels) or synthetic_codes.shape[1] != len(levels):
        raise ValueError(f"both tables need {len(levels)} columns of level codes (one per entry of levels).")
    subsets = list(itertools.combinations(range(len(levels)), way))
    if max_tables is not None and len(subsets) > max_tables:
        chosen = torch.randperm(len(subsets), generator=torch.Generator().manual_seed(seed))[:max_tables]
        subsets = [subsets[i] for i in chosen.tolist()]
    real, synthetic = real_codes.long(), synthetic_codes.long()
    distances = []
    for subset in subsets:
        size, real_cells, synthetic_cells = 1, torch.zeros(len(real), dtype=torch.long), torch.zeros(len(synthetic), dtype=torch.long)
        for column in subset:
            real_cells = real_cells * levels[column] + real[:, column]
            synthetic_cells = synthetic_cells * levels[column] + synthetic[:, column]
            size *= levels[column]
        p = torch.bincount(real_cells, minlength=size).double() / len(real)
        q = torch.bincount(synthetic_cells, minlength=size).double() / len(synthetic)
        distances.append(0.5 * float((p - q).abs().sum()))
    return float(sum(distances) / len(distances))

r"""Records that carry their label: one record = one (features, label) pair inside the unit ball.

.. math:: y = \big(\alpha\, f,\ \beta\, e_c\big), \qquad \|f\| = 1,\ \alpha^2 + \beta^2 = 1,

so :math:`\|y\| = 1` and replacing one labelled example replaces one record (replace-one still holds, and
the label is generated privately with the features). Decoding takes the argmax of the label block.
"""

from __future__ import annotations

import math

import torch

from synthcity_dpswf.math.checks import check_matrix, check_positive_int


class LabelledCodec:
    """Joins unit-norm features and a class label into one unit-norm record, and splits them back.

    Args:
        n_classes: C, the number of classes (public).
        feature_weight: alpha in (0, 1); the label block gets beta = sqrt(1 - alpha^2).
    """

    def __init__(self, n_classes: int, feature_weight: float = 0.7) -> None:
        check_positive_int("n_classes", n_classes)
        if not 0 < feature_weight < 1:
            raise ValueError(f"feature_weight must lie in (0, 1), got {feature_weight!r}.")
        self.n_classes = n_classes
        self.feature_weight = feature_weight
        self.label_weight = math.sqrt(1 - feature_weight**2)

    def encode(self, features: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """Records ``(n, f + C)`` from unit-norm ``features`` ``(n, f)`` and integer ``labels`` ``(n,)``."""
        check_matrix("features", features)
        if labels.shape != (features.shape[0],):
            raise ValueError(f"labels must have shape ({features.shape[0]},), got {tuple(labels.shape)}.")
        if bool((labels < 0).any()) or bool((labels >= self.n_classes).any()):
            raise ValueError(f"labels must lie in 0..{self.n_classes - 1}; pass n_classes that covers them.")
        one_hot = torch.nn.functional.one_hot(labels.long(), self.n_classes).to(features)
        return torch.cat([self.feature_weight * features, self.label_weight * one_hot], dim=1)

    def decode(self, records: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Split records into features (renormalised to unit norm) and labels (argmax of the label block)."""
        features = records[:, : -self.n_classes]
        labels = records[:, -self.n_classes :].argmax(dim=1)
        return torch.nn.functional.normalize(features, dim=1), labels

r"""Two one-shot Gaussian mechanisms on the same records, composed exactly in Gaussian DP (privacy.md, "A private
image codec").

A Gaussian mechanism whose noise is :math:`z` times its exact L2 sensitivity is :math:`\mu`-GDP with
:math:`\mu = 1/z`; mechanisms composed adaptively, each with its :math:`\mu_i` fixed in advance, are
:math:`\sqrt{\sum_i \mu_i^2}`-GDP (Dong, Roth & Su 2022, Corollary 3.3), and :math:`\mu`-GDP is
:math:`(\varepsilon, \delta)`-DP exactly where the analytic Gaussian mechanism at :math:`z = 1/\mu` is. So a budget
:math:`(\varepsilon, \delta)` split as :math:`\mu_1^2 = s\mu^2`, :math:`\mu_2^2 = (1 - s)\mu^2` costs nothing: the two
releases together are :math:`(\varepsilon, \delta)`-DP, where basic composition of :math:`(s\varepsilon, s\delta)` and
:math:`((1 - s)\varepsilon, (1 - s)\delta)` would add noise to both. ``privacy.budget.Budget.share`` gives the first
release's multiplier :math:`z / \sqrt{s}`; the releases after it are calibrated with it as their prior.
"""

from __future__ import annotations

import math



def composed_multiplier(*multipliers: float) -> float:
    r"""The multiplier of the composition: :math:`z = 1 / \sqrt{\sum_i 1 / z_i^2}`."""
    if not multipliers or any(not z > 0 for z in multipliers):
        raise ValueError(f"multipliers must be positive, got {multipliers!r}.")
    return 1.0 / math.sqrt(sum(1.0 / z**2 for z in multipliers))


def remaining_multiplier(total: float, prior: float) -> float:
    r"""The multiplier z of a Gaussian mechanism that, composed with one at ``prior`` :math:`z_0`, gives ``total``:
    :math:`z^{-2} = z_{total}^{-2} - z_0^{-2}` (``composed_multiplier``'s inverse); refused when the prior alone
    spends the budget."""
    left = 1.0 / total**2 - 1.0 / prior**2
    if left <= 0:
        raise ValueError(f"the prior release (z = {prior:.4g}) spends the whole budget (z = {total:.4g}); give it a "
                         "smaller share.")
    return 1.0 / math.sqrt(left)

"""Privacy: releases, their exact sensitivities, accounting on Opacus, the report and an empirical audit.

This layer is the only one that touches private records (through the release kinds of ``mechanisms``); it imports ``math`` below
it and nothing above.
"""

from synthcity_dpswf.privacy.accountant import (
    ACCOUNTANTS,
    RDP_ORDERS,
    REPLACE_ONE_PLD,
    REPLACE_ONE_RDP,
    Accounting,
    ReleaseAccountant,
    register_accountant,
)
from synthcity_dpswf.privacy.gaussian import (
    analytic_gaussian_delta,
    analytic_gaussian_epsilon,
    analytic_gaussian_noise_multiplier,
)
from synthcity_dpswf.privacy.audit import (
    AuditResult,
    GaussianAuditResult,
    PrivacyAuditError,
    audit_gaussian_parts,
    audit_gaussian_scores,
    audit_scores,
    clopper_pearson_upper,
)
from synthcity_dpswf.privacy.mechanisms import (
    MECHANISMS,
    MarginalLayout,
    MarginalRelease,
    Release,
    ReleaseMechanism,
    ReleaseOptions,
    create_mechanism,
    histogram_sensitivity,
    marginal_sensitivity,
    projected_sensitivity,
    record_sensitivity,
    register_mechanism,
)
from synthcity_dpswf.privacy.neighbouring import Adjacency
from synthcity_dpswf.privacy.mechanisms.base import (
    bound_records,
    gaussian_noise,
    poisson_batch,
    sample_batch,
    secret_generator,
)
from synthcity_dpswf.privacy.domain import DomainRelease, release_domain
from synthcity_dpswf.privacy.report import OtherAdjacency, PrivacyPart, PrivacyReport

__all__ = [
    "ACCOUNTANTS",
    "MECHANISMS",
    "RDP_ORDERS",
    "REPLACE_ONE_PLD",
    "REPLACE_ONE_RDP",
    "Accounting",
    "Adjacency",
    "AuditResult",
    "GaussianAuditResult",
    "MarginalLayout",
    "MarginalRelease",
    "DomainRelease",
    "OtherAdjacency",
    "PrivacyPart",
    "PrivacyAuditError",
    "PrivacyReport",
    "Release",
    "ReleaseMechanism",
    "ReleaseOptions",
    "ReleaseAccountant",
    "analytic_gaussian_delta",
    "analytic_gaussian_epsilon",
    "analytic_gaussian_noise_multiplier",
    "audit_gaussian_parts",
    "audit_gaussian_scores",
    "audit_scores",
    "bound_records",
    "clopper_pearson_upper",
    "create_mechanism",
    "gaussian_noise",
    "histogram_sensitivity",
    "marginal_sensitivity",
    "poisson_batch",
    "projected_sensitivity",
    "record_sensitivity",
    "register_accountant",
    "register_mechanism",
    "release_domain",
    "sample_batch",
    "secret_generator",
]

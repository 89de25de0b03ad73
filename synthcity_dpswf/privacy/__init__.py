"""Privacy: releases, their exact sensitivities, accounting on Opacus, the report and an empirical audit.

This layer is the only one that touches private records (through ``releases``); it imports ``math`` below
it and nothing above.
"""

from synthcity_dpswf.privacy.accountant import ACCOUNTANTS, RDP_ORDERS, Accounting, ReleaseAccountant, register_accountant
from synthcity_dpswf.privacy.analytic_gaussian import (
    analytic_gaussian_delta,
    analytic_gaussian_epsilon,
    analytic_gaussian_noise_multiplier,
)
from synthcity_dpswf.privacy.audit import AuditResult, PrivacyAuditError, audit_scores, clopper_pearson_upper
from synthcity_dpswf.privacy.releases import (
    bound_records,
    projected_release,
    record_release,
    sample_batch,
    secret_generator,
)
from synthcity_dpswf.privacy.domain import DomainRelease, release_domain
from synthcity_dpswf.privacy.report import PrivacyPart, PrivacyReport
from synthcity_dpswf.privacy.sensitivity import projected_sensitivity, record_sensitivity

__all__ = [
    "ACCOUNTANTS",
    "RDP_ORDERS",
    "Accounting",
    "AuditResult",
    "DomainRelease",
    "PrivacyPart",
    "PrivacyAuditError",
    "PrivacyReport",
    "ReleaseAccountant",
    "analytic_gaussian_delta",
    "analytic_gaussian_epsilon",
    "analytic_gaussian_noise_multiplier",
    "audit_scores",
    "bound_records",
    "clopper_pearson_upper",
    "projected_release",
    "projected_sensitivity",
    "record_release",
    "record_sensitivity",
    "register_accountant",
    "release_domain",
    "sample_batch",
    "secret_generator",
]

"""Auditing (upstream's audit.k8s.io/v1 policy and log backend); see docs/audit.md."""

from .filter import Auditor, on_response_prepare, record_authorization, set_audit_id_header
from .options import AuditOptions
from .policy import Policy, PolicyError, load_policy, parse_policy

__all__ = ["Auditor", "AuditOptions", "Policy", "PolicyError", "load_policy", "on_response_prepare",
           "parse_policy", "record_authorization", "set_audit_id_header"]

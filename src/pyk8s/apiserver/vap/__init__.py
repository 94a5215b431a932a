"""ValidatingAdmissionPolicy: CEL admission policies and their bindings (docs/admission.md)."""

from __future__ import annotations

from typing import Any

from .plugin import ValidatingAdmissionPolicyPlugin

__all__ = ["ValidatingAdmissionPolicyPlugin", "install"]


def install(server: Any) -> ValidatingAdmissionPolicyPlugin:
    """Add the plug-in to the validating chain before ResourceQuota (upstream's order), and to deletes."""
    from .. import quota_admission

    rest = server.rest
    plugin = ValidatingAdmissionPolicyPlugin(rest, lambda: server.authorizer)
    chain = rest.validating
    at = chain.index(quota_admission.admit_quota) if quota_admission.admit_quota in chain else len(chain)
    chain.insert(at, plugin.admit)
    rest.other_admission.append(plugin.admit_other)
    if not server.config.api_worker:  # one process writes the policies' type-checking status
        from .typecheck import TypeChecker

        server._ha.append(TypeChecker(rest))  # started and stopped with the server's other parts
    return plugin

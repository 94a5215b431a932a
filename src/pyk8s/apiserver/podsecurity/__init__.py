"""PodSecurity admission: the Pod Security Standards enforced per namespace (docs/admission.md)."""

from __future__ import annotations

from typing import Any

from .admission import PodSecurity
from .config import PodSecurityConfig, load

__all__ = ["PodSecurity", "PodSecurityConfig", "install"]


def install(rest: Any, config_file: str | None) -> PodSecurity:
    """Add the plug-in to the validating chain, before ResourceQuota as upstream orders them."""
    from .. import quota_admission

    plugin = PodSecurity(load(config_file))
    chain = rest.validating
    at = chain.index(quota_admission.admit_quota) if quota_admission.admit_quota in chain else len(chain)
    chain.insert(at, plugin.admit)
    return plugin

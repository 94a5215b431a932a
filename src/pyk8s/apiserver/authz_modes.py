"""`--authorization-mode`: upstream's union of authorizers, in the order given.

Modes: AlwaysAllow, AlwaysDeny, RBAC, Node (upstream's names; ABAC and Webhook are refused as
not supported). As upstream, members of system:masters are allowed before any mode is asked,
and each mode allows, denies or has no opinion: the first that allows or denies decides, and
the reasons of those without an opinion join the 403's message. The default stays RBAC alone
(kube-apiserver's own default is AlwaysAllow, which no cluster should run with; kubeadm and
most harnesses pass `Node,RBAC`, which is accepted as upstream's).
"""

from __future__ import annotations

from typing import Any

from .authn import SYSTEM_PRIVILEGED_GROUP, UserInfo
from .authz import RequestAttributes

__all__ = ["parse_modes", "UnionAuthorizer", "DEFAULT_MODES", "VALID_MODES"]

VALID_MODES = ("AlwaysAllow", "AlwaysDeny", "ABAC", "Webhook", "RBAC", "Node")
SUPPORTED = ("AlwaysAllow", "AlwaysDeny", "RBAC", "Node")
DEFAULT_MODES = ("RBAC",)
ALWAYS_DENY_REASON = "Everything is forbidden."


def parse_modes(value: str) -> list[str]:
    """The modes of a flag value, or ValueError with upstream's (or our) reason."""
    modes = [m.strip() for m in value.split(",") if m.strip()]
    if not modes:
        raise ValueError("at least one authorization-mode must be passed")
    for m in modes:
        if m not in VALID_MODES:
            raise ValueError(f'authorization-mode "{m}" is not a valid mode')
        if m not in SUPPORTED:
            raise ValueError(f"authorization-mode {m} is not supported by pyk8s")
    if len(set(modes)) != len(modes):
        raise ValueError(f"authorization-mode [{' '.join(modes)}] has mode specified more than once")
    return modes


class UnionAuthorizer:
    """authorize(user, attrs) -> (allowed, reason) over the modes in order. Everything else
    (rules_for, visit_rules: escalation checks, SelfSubjectRulesReview) is RBAC's."""

    def __init__(self, modes: list[str], rbac: Any, node: Any = None) -> None:
        self.modes = modes
        self.rbac = rbac
        self.node = node

    def __getattr__(self, name: str) -> Any:
        return getattr(self.rbac, name)

    def authorize(self, user: UserInfo, attrs: RequestAttributes) -> tuple[bool, str]:
        if SYSTEM_PRIVILEGED_GROUP in user.groups:
            return True, ""
        reasons: list[str] = []
        for mode in self.modes:
            if mode == "AlwaysAllow":
                return True, ""
            if mode == "AlwaysDeny":
                return False, ALWAYS_DENY_REASON
            ok, reason = (self.rbac if mode == "RBAC" else self.node).authorize(user, attrs)
            if ok:
                return True, reason
            if reason:
                reasons.append(reason)
        return False, "\n".join(reasons)

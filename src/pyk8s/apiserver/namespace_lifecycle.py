"""NamespaceLifecycle's delete rule: the namespaces the cluster itself lives in cannot be deleted.

As upstream's admission plug-in (plugin/pkg/admission/namespace/lifecycle), whose immortal
namespaces in v1.33 are default, kube-system and kube-public; kube-node-lease is not among
them. Deleting kube-system would take the controllers' and scheduler's Leases with it and
stop the cluster. (The plug-in's other rule, no new content in a missing or terminating
namespace, is RestStorage.check_namespace.)
"""

from __future__ import annotations

from ..api import errors as E
from ..api.resources import Resource

__all__ = ["IMMORTAL_NAMESPACES", "admit_delete"]

IMMORTAL_NAMESPACES = frozenset({"default", "kube-system", "kube-public"})


def admit_delete(res: Resource, name: str) -> None:
    """Refuse deleting an immortal namespace (403, as upstream), dry runs included."""
    if name in IMMORTAL_NAMESPACES and res.group_kind == ("", "Namespace"):
        raise E.new_forbidden("namespaces", name, "this namespace may not be deleted")

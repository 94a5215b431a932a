"""Small views of a Node for informers that read only its addresses (client-go's SetTransform use).

A whole Node is ~12 KB as dicts and is rewritten at every heartbeat; a component that needs its
name and addresses keeps this instead (the DNS server's client ACL, the built-in load balancer).
"""

from __future__ import annotations

from typing import Any

__all__ = ["NODE_IP_TYPES", "node_ip_view"]

NODE_IP_TYPES = ("InternalIP", "ExternalIP")


def node_ip_view(node: dict[str, Any]) -> dict[str, Any]:
    """The Node's name, resourceVersion and Internal/External addresses, in the Node's shape."""
    md = node.get("metadata") or {}
    return {"metadata": {"name": md.get("name"), "resourceVersion": md.get("resourceVersion")},
            "status": {"addresses": [{"type": a.get("type"), "address": a.get("address")}
                                     for a in (node.get("status") or {}).get("addresses") or ()
                                     if a.get("type") in NODE_IP_TYPES]}}

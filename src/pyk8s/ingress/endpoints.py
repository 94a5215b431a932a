"""Where a backend's requests go: the ready endpoints of a Service port, from EndpointSlices
(pure functions), and a round-robin picker over them."""

from __future__ import annotations

from typing import Any

__all__ = ["service_port", "ready_endpoints", "RoundRobin"]


def service_port(service: dict[str, Any], port: int | str) -> dict[str, Any] | None:
    """The Service's spec.ports entry an Ingress backend names (by number or by name)."""
    for p in (service.get("spec") or {}).get("ports") or []:
        if (isinstance(port, int) and p.get("port") == port) or (isinstance(port, str) and p.get("name") == port):
            return p  # type: ignore[no-any-return]
    return None


def ready_endpoints(slices: list[dict[str, Any]], port_name: str) -> list[tuple[str, int]]:
    """(address, port) of every ready endpoint for the Service port named `port_name` ("" for
    an unnamed port), as kube-proxy reads slices: `ready` unset counts as ready."""
    out: set[tuple[str, int]] = set()
    for s in slices:
        number = None
        for p in s.get("ports") or []:
            if (p.get("name") or "") == port_name and p.get("port"):
                number = int(p["port"])
                break
        if number is None:
            continue
        six = s.get("addressType") == "IPv6"
        for ep in s.get("endpoints") or []:
            if (ep.get("conditions") or {}).get("ready") is False:
                continue
            for a in ep.get("addresses") or []:
                out.add((f"[{a}]" if six else a, number))
    return sorted(out)


class RoundRobin:
    """Per-backend rotation that survives endpoint changes (a counter per backend key)."""

    def __init__(self) -> None:
        self._next: dict[Any, int] = {}

    def order(self, key: Any, endpoints: list[tuple[str, int]]) -> list[tuple[str, int]]:
        """`endpoints` rotated to start at this key's next turn (the rest are the fallbacks)."""
        i = self._next.get(key, 0) % len(endpoints)
        self._next[key] = i + 1
        return endpoints[i:] + endpoints[:i]

"""Aggregated API servers in our discovery documents, as upstream's aggregator merges them.

`/apis` and `/apis/<group>` list the group of every APIService with a Service behind it,
available or not (as upstream: kubectl then reports the unreachable group version); the
aggregated document (apidiscovery.k8s.io) carries the resources each backend's
`/apis/<group>/<version>` listed, `Current` while its checks pass and `Stale` after,
and leaves out a version never fetched.
"""

from __future__ import annotations

from typing import Any

__all__ = ["RemoteDiscovery", "from_resource_list"]


def from_resource_list(doc: dict[str, Any], group: str, version: str) -> list[dict[str, Any]]:
    """An APIResourceList as apidiscovery's APIResourceDiscovery entries (subresources under their parent)."""
    out: dict[str, dict[str, Any]] = {}
    subs: list[dict[str, Any]] = []
    for r in doc.get("resources") or []:
        name = str(r.get("name") or "")
        if "/" in name:
            subs.append(r)
            continue
        e: dict[str, Any] = {
            "resource": name,
            "responseKind": {"group": r.get("group", group), "version": r.get("version", version),
                             "kind": r.get("kind", "")},
            "scope": "Namespaced" if r.get("namespaced") else "Cluster",
            "singularResource": r.get("singularName") or "",
            "verbs": list(r.get("verbs") or []),
        }
        for k in ("shortNames", "categories"):
            if r.get(k):
                e[k] = list(r[k])
        out[name] = e
    for r in subs:
        parent, sub = str(r["name"]).split("/", 1)
        if parent in out:
            out[parent].setdefault("subresources", []).append({
                "subresource": sub, "verbs": list(r.get("verbs") or []),
                "responseKind": {"group": r.get("group", group), "version": r.get("version", version),
                                 "kind": r.get("kind", "")}})
    return [out[k] for k in sorted(out)]


class RemoteDiscovery:
    """What discovery.Discovery asks of the aggregator (its `remote`)."""

    def __init__(self, aggregator: Any, availability: Any) -> None:
        self.aggregator = aggregator
        self.availability = availability

    def _specs(self) -> list[dict[str, Any]]:
        return [o.get("spec") or {} for o in self.aggregator.api_services() if (o.get("spec") or {}).get("service")]

    @property
    def generation(self) -> tuple[int, tuple[tuple[str, str, int, int], ...]]:
        specs = tuple(sorted((s.get("group") or "", s.get("version") or "", int(s.get("groupPriorityMinimum") or 0),
                              int(s.get("versionPriority") or 0)) for s in self._specs()))
        return self.availability.generation, specs

    def groups(self) -> dict[str, tuple[int, list[str]]]:
        """group -> (groupPriorityMinimum, versions by versionPriority, highest first)."""
        by: dict[str, list[tuple[int, int, str]]] = {}
        for s in self._specs():
            by.setdefault(s.get("group") or "", []).append(
                (int(s.get("groupPriorityMinimum") or 0), int(s.get("versionPriority") or 0), s.get("version") or ""))
        return {g: (max(p for p, _, _ in vs), [v for _, _, v in sorted(vs, key=lambda x: (-x[1], x[2]))])
                for g, vs in by.items()}

    def aggregated_versions(self, group: str) -> list[dict[str, Any]]:
        out = []
        for v in self.groups().get(group, (0, []))[1]:
            doc = self.availability.documents.get((group, v))
            if doc is None:
                continue
            out.append({"version": v, "resources": from_resource_list(doc, group, v),
                        "freshness": "Current" if (group, v) in self.availability.fresh else "Stale"})
        return out

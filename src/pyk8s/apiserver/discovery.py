"""API discovery: legacy (/api, /apis, APIResourceList) and aggregated (apidiscovery.k8s.io v2, v2beta1).

kubectl 1.27 asks only for v2beta1 and fails on a v2 body, so the representation follows
the Accept header exactly. Documents are built once per registry generation.
"""

from __future__ import annotations

import hashlib
from typing import Any

import orjson

from ..api.resources import Registry, Resource
from .jsonwire import NEWLINE
from .negotiation import parse_accept

__all__ = ["Discovery"]

# subresource -> (verbs, response kind group, version, kind) ; kind None means the parent kind
_SUB = {
    "status": (["get", "patch", "update"], None),
    "scale": (["get", "patch", "update"], ("autoscaling", "v1", "Scale")),
    "binding": (["create"], ("", "v1", "Binding")),
    "eviction": (["create"], ("policy", "v1", "Eviction")),
    "log": (["get"], ("", "v1", "Pod")),
    "exec": (["create", "get"], ("", "v1", "PodExecOptions")),
    "attach": (["create", "get"], ("", "v1", "PodAttachOptions")),
    "portforward": (["create", "get"], ("", "v1", "PodPortForwardOptions")),
    "proxy": (["create", "delete", "get", "patch", "update"], None),
    "token": (["create"], ("authentication.k8s.io", "v1", "TokenRequest")),
    "finalize": (["update"], None),
    "ephemeralcontainers": (["get", "patch", "update"], None),
    "resize": (["get", "patch", "update"], None),
    "approval": (["get", "patch", "update"], None),
}
_PROXY_KINDS = {"pods": "PodProxyOptions", "nodes": "NodeProxyOptions", "services": "ServiceProxyOptions"}


def _storage_version_hash(r: Resource) -> str:
    h = hashlib.sha256(f"{r.group}/{r.storage_version}/{r.kind}".encode()).digest()
    import base64

    return base64.b64encode(h[:8]).decode()


class Discovery:
    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        self._cache: dict[tuple[str, ...], tuple[Any, bytes, str]] = {}
        # aggregated API servers' groups and documents (aggregated_discovery.RemoteDiscovery), when aggregating
        self.remote: Any = None

    def _cached(self, key: tuple[str, ...], build: Any) -> tuple[bytes, str]:
        gen = (self.registry.generation, self.remote.generation if self.remote is not None else 0)
        c = self._cache.get(key)
        if c is None or c[0] != gen:
            body = orjson.dumps(build(), option=NEWLINE)
            etag = '"' + hashlib.sha256(body).hexdigest()[:32].upper() + '"'
            self._cache[key] = c = (gen, body, etag)
        return c[1], c[2]

    def _ordered_groups(self) -> list[str]:
        """Named groups in upstream's /apis order: by groupPriorityMinimum (highest first), then name;
        custom resource groups after the built-in ones, the deprecated workload groups last."""
        from .bootstrap import _API_SERVICE_PRIORITIES

        def key(ig: tuple[int, str]) -> tuple[int, int, int, str]:
            i, g = ig
            rs = self.registry.resources_in(g, (self.registry.versions(g) or [""])[0])
            if rs and all(r.deprecated_replacement for r in rs):
                return (2, 0, i, g)
            prio = max((p for (grp, _), (p, _) in _API_SERVICE_PRIORITIES.items() if grp == g), default=None)
            if prio is None:
                return (1, 0, i, g)  # custom resource groups: in the order they were registered
            return (0, -prio, 0, g)

        local = [g for g in self.registry.groups() if g]
        remote = self.remote.groups() if self.remote is not None else {}
        ordered = [(key((i, g)), g) for i, g in enumerate(local) if g not in remote]
        ordered += [((0, -prio, 0, g), g) for g, (prio, _) in remote.items()]
        return [g for _, g in sorted(ordered)]

    # ---- legacy -------------------------------------------------------------------------
    def api_versions(self, server_address: str) -> dict[str, Any]:
        return {"kind": "APIVersions", "versions": ["v1"],
                "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}]}

    def _group(self, g: str) -> dict[str, Any] | None:
        # Deprecated workload versions (extensions/v1beta1, apps/v1beta1, apps/v1beta2) are advertised:
        # kubectl maps a manifest's apiVersion/kind to a resource only through discovery.
        remote = self.remote.groups() if self.remote is not None else {}
        vs = remote[g][1] if g in remote else self.registry.versions(g)
        if not vs:
            return None
        gvs = [{"groupVersion": f"{g}/{v}", "version": v} for v in vs]
        return {"name": g, "versions": gvs, "preferredVersion": gvs[0]}

    def api_group_list(self) -> dict[str, Any]:
        groups = [x for g in self._ordered_groups() for x in [self._group(g)] if x]
        return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}

    def api_group(self, g: str) -> dict[str, Any] | None:
        x = self._group(g)
        if x is None:
            return None
        return {"kind": "APIGroup", "apiVersion": "v1", **x}

    def resource_list(self, g: str, v: str) -> dict[str, Any] | None:
        rs = sorted(self.registry.resources_in(g, v), key=lambda r: r.resource)
        if not rs:
            return None
        out = []
        for r in rs:
            e: dict[str, Any] = {"name": r.resource, "singularName": r.singular, "namespaced": r.namespaced,
                                 "kind": r.kind, "verbs": sorted(r.verbs)}
            if r.short_names:
                e["shortNames"] = list(r.short_names)
            if r.categories:
                e["categories"] = list(r.categories)
            if not r.virtual:
                e["storageVersionHash"] = _storage_version_hash(r)
            out.append(e)
            for sub in sorted(r.subresources):
                verbs, kind = _SUB.get(sub, (["get"], None))
                se: dict[str, Any] = {"name": f"{r.resource}/{sub}", "singularName": "", "namespaced": r.namespaced,
                                      "verbs": verbs}
                if sub == "proxy":
                    se["kind"] = _PROXY_KINDS.get(r.resource, r.kind)
                elif kind is None:
                    se["kind"] = r.kind
                else:
                    se["kind"] = kind[2]
                    if kind[0] != r.group or kind[1] != r.version:
                        se["group"], se["version"] = kind[0], kind[1]
                out.append(se)
        return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": f"{g}/{v}" if g else v,
                "resources": out}

    # ---- aggregated ---------------------------------------------------------------------
    def _agg_resource(self, r: Resource) -> dict[str, Any]:
        e: dict[str, Any] = {
            "resource": r.resource,
            "responseKind": {"group": r.group, "version": r.version, "kind": r.kind},
            "scope": "Namespaced" if r.namespaced else "Cluster",
            "singularResource": r.singular,
            "verbs": sorted(r.verbs),
        }
        if r.short_names:
            e["shortNames"] = list(r.short_names)
        if r.categories:
            e["categories"] = list(r.categories)
        subs = []
        for sub in sorted(r.subresources):
            verbs, kind = _SUB.get(sub, (["get"], None))
            if sub == "proxy":
                rk = {"group": "", "version": "v1", "kind": _PROXY_KINDS.get(r.resource, r.kind)}
            elif kind is None:
                rk = {"group": r.group, "version": r.version, "kind": r.kind}
            else:
                rk = {"group": kind[0], "version": kind[1], "kind": kind[2]}
            subs.append({"subresource": sub, "responseKind": rk, "verbs": verbs})
        if subs:
            e["subresources"] = subs
        return e

    def aggregated(self, legacy: bool, version: str) -> dict[str, Any]:
        items = []
        groups = [""] if legacy else self._ordered_groups()
        remote = self.remote.groups() if self.remote is not None else {}
        for g in groups:
            versions = []
            if g in remote:
                versions = self.remote.aggregated_versions(g)
            for v in ([] if g in remote else self.registry.versions(g)):
                rs = sorted(self.registry.resources_in(g, v), key=lambda r: r.resource)
                versions.append({"version": v, "resources": [self._agg_resource(r) for r in rs],
                                 "freshness": "Current"})
            if versions:
                md: dict[str, Any] = {"creationTimestamp": None}
                if g:
                    md["name"] = g
                items.append({"metadata": md, "versions": versions})
        return {"kind": "APIGroupDiscoveryList", "apiVersion": f"apidiscovery.k8s.io/{version}",
                "metadata": {}, "items": items}

    def negotiate(self, accept: str | None) -> str:
        """'v2', 'v2beta1' or '' (legacy), per the first acceptable media type."""
        for mt in parse_accept(accept):
            if mt.param("as") == "APIGroupDiscoveryList" and mt.param("g") == "apidiscovery.k8s.io":
                v = mt.param("v")
                if v in ("v2", "v2beta1"):
                    return v
                continue
            if mt.type in ("application/json", "*/*", "application/*"):
                return ""
        return ""

    def root(self, legacy: bool, accept: str | None, server_address: str) -> tuple[bytes, str, str]:
        """(body, content type, etag) for /api or /apis."""
        v = self.negotiate(accept)
        if v:
            body, etag = self._cached(("agg", str(legacy), v), lambda: self.aggregated(legacy, v))
            return body, f"application/json;g=apidiscovery.k8s.io;v={v};as=APIGroupDiscoveryList", etag
        if legacy:
            return orjson.dumps(self.api_versions(server_address), option=NEWLINE), "application/json", ""
        body, etag = self._cached(("groups",), self.api_group_list)
        return body, "application/json", etag

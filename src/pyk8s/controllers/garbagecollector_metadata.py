"""What the garbage collector needs from the API: discovery of deletable resources, and
metadata-only lists, watches and gets (upstream's metadata client).

The GC looks only at ownerReferences, finalizers and deletion timestamps, so it asks for
PartialObjectMetadata: the server strips everything else, which keeps its caches small.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import aiohttp
import orjson

from ..api.errors import StatusError
from ..client import Client, resource_path
from ..client.rest import GVR, _params, _status_error

log = logging.getLogger("pyk8s.controllers.garbagecollector")

__all__ = ["APIResource", "Discovery", "MetadataClient", "discover"]

ACCEPT_LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
ACCEPT_ONE = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"

# As upstream's default GC ignored resources: events never own anything and churn a lot.
IGNORED = {("", "events"), ("events.k8s.io", "events")}
LEGACY_GROUP = "extensions"


@dataclass(frozen=True)
class APIResource:
    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool
    verbs: frozenset[str]

    @property
    def gvr(self) -> GVR:
        return (self.group, self.version, self.plural)

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version


@dataclass
class Discovery:
    """Every served resource, and which (preferred-version) ones the GC monitors."""

    by_group_kind: dict[tuple[str, str], APIResource]  # preferred version per (group, kind)
    by_gvk: dict[tuple[str, str, str], APIResource]  # every served version
    deletable: list[APIResource]

    def resolve(self, api_version: str, kind: str) -> APIResource | None:
        """The resource an ownerReference's apiVersion/kind names (any served version of the group)."""
        group, _, version = api_version.rpartition("/")
        return self.by_gvk.get((group, version, kind)) or self.by_group_kind.get((group, kind))


async def discover(client: Client) -> Discovery:
    by_gk: dict[tuple[str, str], APIResource] = {}
    by_gvk: dict[tuple[str, str, str], APIResource] = {}
    deletable: list[APIResource] = []
    gvs: list[tuple[str, str, bool]] = [("", "v1", True)]
    groups = await client.request("GET", "/apis")
    for g in groups.get("groups") or []:
        preferred = (g.get("preferredVersion") or {}).get("version")
        for v in g.get("versions") or []:
            gvs.append((g["name"], v["version"], v["version"] == preferred))
    for group, version, preferred in gvs:
        path = f"/api/{version}" if not group else f"/apis/{group}/{version}"
        try:
            rl = await client.request("GET", path)
        except StatusError as e:
            log.debug("discovery of %s failed: %s", path, e)
            continue
        for r in rl.get("resources") or []:
            if "/" in r["name"]:
                continue
            ar = APIResource(group, version, r["name"], r["kind"], bool(r.get("namespaced")),
                             frozenset(r.get("verbs") or []))
            by_gvk[(group, version, ar.kind)] = ar
            if preferred:
                by_gk[(group, ar.kind)] = ar
                if {"delete", "list", "watch"} <= ar.verbs and (group, ar.plural) not in IGNORED:
                    deletable.append(ar)
    return Discovery(by_gk, by_gvk, _without_legacy_aliases(deletable))


def _without_legacy_aliases(resources: list[APIResource]) -> list[APIResource]:
    """Drop extensions/v1beta1 resources that another group also serves (apps' Deployments, DaemonSets,
    ReplicaSets: the same stored objects, served for old manifests).

    Monitoring both would show every such object twice under two identities; each identity flip
    makes every dependent's ownerReference look suspicious and costs two live GETs per dependent.
    """
    elsewhere = {(r.plural, r.kind) for r in resources if r.group != LEGACY_GROUP}
    return [r for r in resources if r.group != LEGACY_GROUP or (r.plural, r.kind) not in elsewhere]


class MetadataClient:
    """Duck-types the two Client methods an Informer uses, asking for PartialObjectMetadata.

    Items come back as kind PartialObjectMetadata; we stamp the real kind/apiVersion on them
    so the graph records the identity ownerReferences use.
    """

    def __init__(self, client: Client, res: APIResource) -> None:
        self.client = client
        self.res = res

    def _stamp(self, obj: dict[str, Any]) -> dict[str, Any]:
        obj["kind"] = self.res.kind
        obj["apiVersion"] = self.res.api_version
        return obj

    async def list(self, gvr: GVR, namespace: str | None = None, **params: Any) -> dict[str, Any]:
        url = self.client.server + resource_path(gvr, namespace)
        q = _params(params)
        if q:
            url += "?" + urlencode(q)
        async with self.client.session.get(url, headers={"Accept": ACCEPT_LIST},
                                           timeout=aiohttp.ClientTimeout(total=self.client.timeout)) as r:
            raw = await r.read()
            if r.status >= 400:
                raise _status_error(r.status, raw)
        out = orjson.loads(raw)
        for item in out.get("items") or []:
            self._stamp(item)
        return out

    async def watch(self, gvr: GVR, namespace: str | None = None, resource_version: str | None = None,
                    timeout_seconds: int = 300, **params: Any) -> AsyncIterator[dict[str, Any]]:
        q = _params(params)
        q.update(watch="true", allowWatchBookmarks="true", timeoutSeconds=str(timeout_seconds))
        if resource_version is not None:
            q["resourceVersion"] = resource_version
        url = self.client.server + resource_path(gvr, namespace) + "?" + urlencode(q)
        async with self.client.session.get(url, headers={"Accept": ACCEPT_LIST},
                                           timeout=aiohttp.ClientTimeout(total=None,
                                                                         sock_read=timeout_seconds + 30)) as r:
            if r.status >= 400:
                raise _status_error(r.status, await r.read())
            buf = b""
            async for chunk in r.content.iter_any():
                buf += chunk
                while b"\n" in buf:
                    line, buf = buf.split(b"\n", 1)
                    if line.strip():
                        ev = orjson.loads(line)
                        obj = ev.get("object")
                        if isinstance(obj, dict) and ev.get("type") not in ("ERROR",):
                            self._stamp(obj)
                        yield ev

    async def get(self, namespace: str | None, name: str) -> dict[str, Any] | None:
        """A live metadata GET; None when absent (404)."""
        url = self.client.server + resource_path(self.res.gvr, namespace if self.res.namespaced else None, name)
        async with self.client.session.get(url, headers={"Accept": ACCEPT_ONE},
                                           timeout=aiohttp.ClientTimeout(total=self.client.timeout)) as r:
            raw = await r.read()
            if r.status == 404:
                return None
            if r.status >= 400:
                raise _status_error(r.status, raw)
        return self._stamp(orjson.loads(raw))

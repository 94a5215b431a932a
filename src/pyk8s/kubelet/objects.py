"""The ConfigMaps, Secrets and ServiceAccount tokens a node's pods use.

ConfigMaps and Secrets follow upstream's watch-based manager: one single-object watch
(`fieldSelector=metadata.name=<name>`) per referenced object, shared by every pod that
references it and stopped when the last such pod goes. A change calls `on_change`, so
the kubelet resyncs the pods using the object (their volumes pick up the new content).

Tokens follow upstream's token manager: requested through TokenRequest, cached, and
refreshed once 80% of their lifetime has passed (or after 24 hours).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any

from ..api.errors import StatusError
from ..api.timefmt import parse_time
from ..client import Client, Informer

log = logging.getLogger("pyk8s.kubelet.objects")

CONFIGMAPS = ("", "v1", "configmaps")
SECRETS = ("", "v1", "secrets")
SERVICEACCOUNTS = ("", "v1", "serviceaccounts")
SYNC_TIMEOUT = 15.0


def referenced_objects(pod: dict[str, Any]) -> set[tuple[str, str]]:
    """(kind, name) of every ConfigMap ("configmaps") and Secret ("secrets") the pod spec names."""
    spec = pod.get("spec") or {}
    out: set[tuple[str, str]] = set()
    for s in spec.get("imagePullSecrets") or []:
        if s.get("name"):
            out.add(("secrets", s["name"]))

    def vol_source(v: dict[str, Any]) -> None:
        if v.get("configMap"):
            out.add(("configmaps", v["configMap"].get("name", "")))
        if v.get("secret"):
            out.add(("secrets", v["secret"].get("secretName", "")))
        for src in (v.get("projected") or {}).get("sources") or []:
            if src.get("configMap"):
                out.add(("configmaps", src["configMap"].get("name", "")))
            if src.get("secret"):
                out.add(("secrets", src["secret"].get("name", "")))

    for v in spec.get("volumes") or []:
        vol_source(v)
    for c in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]:
        for ef in c.get("envFrom") or []:
            if ef.get("configMapRef"):
                out.add(("configmaps", ef["configMapRef"].get("name", "")))
            if ef.get("secretRef"):
                out.add(("secrets", ef["secretRef"].get("name", "")))
        for ev in c.get("env") or []:
            vf = ev.get("valueFrom") or {}
            if vf.get("configMapKeyRef"):
                out.add(("configmaps", vf["configMapKeyRef"].get("name", "")))
            if vf.get("secretKeyRef"):
                out.add(("secrets", vf["secretKeyRef"].get("name", "")))
    return {(k, n) for k, n in out if n}


class ObjectCache:
    def __init__(self, client: Client, on_change: Callable[[str, str, str], None] | None = None) -> None:
        self.client = client
        self.on_change = on_change  # (kind, namespace, name)
        self._watches: dict[tuple[str, str, str], Informer] = {}
        self._refs: dict[tuple[str, str, str], set[str]] = {}  # key -> pod uids
        self._by_pod: dict[str, set[tuple[str, str, str]]] = {}

    def register(self, pod: dict[str, Any]) -> None:
        uid = pod["metadata"]["uid"]
        ns = pod["metadata"].get("namespace") or "default"
        want = {(kind, ns, name) for kind, name in referenced_objects(pod)}
        have = self._by_pod.get(uid, set())
        for key in want - have:
            self._refs.setdefault(key, set()).add(uid)
            if key not in self._watches:
                self._start(key)
        for key in have - want:
            self._release(key, uid)
        self._by_pod[uid] = want

    def unregister(self, uid: str) -> None:
        for key in self._by_pod.pop(uid, set()):
            self._release(key, uid)

    def users(self, kind: str, ns: str, name: str) -> set[str]:
        return set(self._refs.get((kind, ns, name), ()))

    def _start(self, key: tuple[str, str, str]) -> None:
        kind, ns, name = key
        gvr = CONFIGMAPS if kind == "configmaps" else SECRETS
        inf = Informer(self.client, gvr, ns, field_selector=f"metadata.name={name}")

        def changed(*_a: Any) -> None:
            if self.on_change is not None and inf.synced.is_set():
                self.on_change(kind, ns, name)

        inf.add_handlers(changed, changed, changed)
        self._watches[key] = inf
        inf.start()

    def _release(self, key: tuple[str, str, str], uid: str) -> None:
        users = self._refs.get(key)
        if users is None:
            return
        users.discard(uid)
        if not users:
            del self._refs[key]
            inf = self._watches.pop(key, None)
            if inf is not None:
                asyncio.ensure_future(inf.stop())

    async def get(self, kind: str, ns: str, name: str) -> dict[str, Any] | None:
        """The object, or None if it does not exist. Unregistered objects are read straight from the API."""
        inf = self._watches.get((kind, ns, name))
        if inf is None:
            gvr = CONFIGMAPS if kind == "configmaps" else SECRETS
            return await self.client.get_or_none(gvr, name, ns)
        if not inf.synced.is_set():
            try:
                await inf.wait_synced(SYNC_TIMEOUT)
            except TimeoutError:
                raise StatusError(504, "Timeout", f"timed out waiting for the {kind[:-1]} {ns}/{name} to sync") from None
        return inf.get(f"{ns}/{name}")

    async def snapshot(self, pod: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any] | None]:
        """Every object the pod references, fetched once (for a synchronous env/volume build)."""
        ns = pod["metadata"].get("namespace") or "default"
        refs = sorted(referenced_objects(pod))
        vals = await asyncio.gather(*(self.get(kind, ns, name) for kind, name in refs))
        return dict(zip(refs, vals, strict=True))

    async def stop(self) -> None:
        for inf in list(self._watches.values()):
            await inf.stop()
        self._watches.clear()


class TokenManager:
    """Bound ServiceAccount tokens for projected volumes, refreshed at 80% of their lifetime."""

    MAX_AGE = 24 * 3600

    def __init__(self, client: Client) -> None:
        self.client = client
        self._cache: dict[tuple[Any, ...], tuple[str, float, float]] = {}  # key -> (token, issued, expires)

    async def token(self, pod: dict[str, Any], audience: str, expiration: int) -> str:
        md = pod["metadata"]
        ns = md.get("namespace") or "default"
        sa = (pod.get("spec") or {}).get("serviceAccountName") or "default"
        key = (ns, sa, audience, expiration, md.get("uid"))
        now = time.time()
        hit = self._cache.get(key)
        if hit is not None:
            tok, issued, expires = hit
            if now < issued + 0.8 * (expires - issued) and now - issued < self.MAX_AGE:
                return tok
        body = {
            "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
            "spec": {"audiences": [audience] if audience else [], "expirationSeconds": expiration,
                     "boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": md["name"], "uid": md.get("uid")}},
        }
        path = f"/api/v1/namespaces/{ns}/serviceaccounts/{sa}/token"
        out = await self.client.request("POST", path, body)
        st = out.get("status") or {}
        tok = st.get("token", "")
        try:
            expires = parse_time(st.get("expirationTimestamp", ""))
        except (ValueError, TypeError):
            expires = now + expiration
        self._cache[key] = (tok, now, expires)
        return tok

    def forget(self, uid: str) -> None:
        for k in [k for k in self._cache if k[4] == uid]:
            del self._cache[k]

"""Static pods from a manifest directory, and their mirror pods in the API.

Each file (YAML or JSON, one Pod) becomes a pod named `<name>-<node>` whose UID is a hash
of its content, node and file, as upstream computes it: editing a manifest makes a new
pod and retires the old one. The kubelet runs static pods itself; the API only gets a
read-only mirror (annotation kubernetes.io/config.mirror = that hash, owned by the
Node), re-created if someone deletes it or it goes stale.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import hashlib
import json
import logging
import os
import time
from typing import TYPE_CHECKING, Any

import yaml

from ..api.errors import StatusError
from ..api.timefmt import format_time

if TYPE_CHECKING:
    from .agent import Kubelet

log = logging.getLogger("pyk8s.kubelet.static")

CONFIG_SOURCE = "kubernetes.io/config.source"
CONFIG_HASH = "kubernetes.io/config.hash"
CONFIG_SEEN = "kubernetes.io/config.seen"
CONFIG_MIRROR = "kubernetes.io/config.mirror"
PODS = ("", "v1", "pods")


def is_mirror(pod: dict[str, Any]) -> bool:
    return CONFIG_MIRROR in ((pod.get("metadata") or {}).get("annotations") or {})


def load_manifest(path: str, node: str) -> dict[str, Any] | None:
    with open(path) as f:
        text = f.read()
    doc = json.loads(text) if path.endswith(".json") else yaml.safe_load(text)
    if not isinstance(doc, dict) or doc.get("kind", "Pod") != "Pod":
        return None
    pod = copy.deepcopy(doc)
    pod["apiVersion"], pod["kind"] = "v1", "Pod"
    md = pod.setdefault("metadata", {})
    if not md.get("name"):
        raise ValueError("static pod manifest without metadata.name")
    md.setdefault("namespace", "default")
    md.pop("uid", None)
    md.pop("resourceVersion", None)
    spec = pod.setdefault("spec", {})
    try:
        from ..api.defaults.core import default_pod

        default_pod(pod)
    except Exception:  # noqa: BLE001 - defaulting is best effort; the runtime copes with sparse specs
        log.debug("defaulting static pod %s failed", path, exc_info=True)
    h = hashlib.md5(json.dumps(pod, sort_keys=True).encode())
    h.update(f"host:{node}".encode())
    h.update(f"file:{path}".encode())
    uid = h.hexdigest()
    md["name"] = f"{md['name']}-{node.lower()}"
    md["uid"] = uid
    ann = md.setdefault("annotations", {})
    ann[CONFIG_SOURCE] = "file"
    ann[CONFIG_HASH] = uid
    ann[CONFIG_SEEN] = format_time(time.time())
    spec["nodeName"] = node
    tols = spec.setdefault("tolerations", [])
    if not any(t.get("operator") == "Exists" and t.get("effect") == "NoExecute" and not t.get("key") for t in tols):
        tols.append({"operator": "Exists", "effect": "NoExecute"})
    pod.setdefault("status", {})
    return pod


class StaticPods:
    def __init__(self, kl: Kubelet, manifest_dir: str, interval: float = 5.0) -> None:
        self.kl = kl
        self.dir = manifest_dir
        self.interval = interval
        self.pods: dict[str, dict[str, Any]] = {}  # static uid -> pod
        self._files: dict[str, tuple[float, int, str | None]] = {}  # path -> (mtime, size, uid)
        self.mirrors: dict[str, dict[str, Any]] = {}  # "ns/name" -> mirror pod from the API
        self._task: asyncio.Task[None] | None = None
        self._kick = asyncio.Event()
        self.scanned = asyncio.Event()

    # ---- manifests

    def scan(self) -> None:
        try:
            names = sorted(n for n in os.listdir(self.dir) if not n.startswith("."))
        except FileNotFoundError:
            names = []
        seen: set[str] = set()
        for n in names:
            path = os.path.join(self.dir, n)
            if not os.path.isfile(path) or not n.endswith((".yaml", ".yml", ".json")):
                continue
            try:
                st = os.stat(path)
            except OSError:
                continue
            prev = self._files.get(path)
            if prev is not None and prev[:2] == (st.st_mtime, st.st_size):
                if prev[2]:
                    seen.add(prev[2])
                continue
            try:
                pod = load_manifest(path, self.kl.node_name)
            except (OSError, ValueError, yaml.YAMLError) as e:
                log.warning("static pod manifest %s: %s", path, e)
                self._files[path] = (st.st_mtime, st.st_size, None)
                continue
            uid = pod["metadata"]["uid"] if pod else None
            self._files[path] = (st.st_mtime, st.st_size, uid)
            if pod is None or uid is None:
                continue
            seen.add(uid)
            if uid not in self.pods:
                self.pods[uid] = pod
                self.kl.pod_workers.update(pod, static=True)
        for path in [p for p in self._files if not os.path.exists(p)]:
            del self._files[path]
        for uid in [u for u in self.pods if u not in seen]:
            pod = self.pods.pop(uid)
            self.kl.pod_workers.remove(uid)
            asyncio.ensure_future(self._delete_mirror(pod))
        self.scanned.set()

    # ---- mirrors

    def mirror_for(self, static: dict[str, Any]) -> dict[str, Any] | None:
        md = static["metadata"]
        return self.mirrors.get(f"{md['namespace']}/{md['name']}")

    def mirror_changed(self, pod: dict[str, Any]) -> None:
        md = pod["metadata"]
        self.mirrors[f"{md.get('namespace')}/{md['name']}"] = pod
        uid = (md.get("annotations") or {}).get(CONFIG_MIRROR, "")
        if uid in self.pods:
            self.kl.pod_workers.wake(uid)  # its status goes to the (new) mirror
        if md.get("deletionTimestamp"):
            self._kick.set()  # someone deleted the mirror: replace it now

    def mirror_deleted(self, pod: dict[str, Any]) -> None:
        md = pod["metadata"]
        key = f"{md.get('namespace')}/{md['name']}"
        cur = self.mirrors.get(key)
        if cur is not None and cur["metadata"].get("uid") == md.get("uid"):
            del self.mirrors[key]
            self._kick.set()

    async def ensure_mirrors(self) -> None:
        for uid, pod in list(self.pods.items()):
            w = self.kl.pod_workers.get(uid)
            if w is None:
                continue
            mirror = self.mirror_for(pod)
            if mirror is not None and (mirror["metadata"].get("annotations") or {}).get(CONFIG_MIRROR) == uid \
                    and not mirror["metadata"].get("deletionTimestamp"):
                continue
            if mirror is not None:  # being deleted, or made for another version of the manifest: replace it
                await self._delete_mirror(mirror, mirror["metadata"].get("uid"))
            await self._create_mirror(pod)

    async def _create_mirror(self, pod: dict[str, Any]) -> None:
        m = copy.deepcopy(pod)
        md = m["metadata"]
        md.pop("uid", None)
        md.pop("resourceVersion", None)
        md["annotations"][CONFIG_MIRROR] = pod["metadata"]["uid"]
        node = self.kl.node_manager.node
        md["ownerReferences"] = [{"apiVersion": "v1", "kind": "Node", "name": self.kl.node_name,
                                  "uid": node["metadata"]["uid"], "controller": True}]
        m.pop("status", None)
        try:
            out = await self.kl.client.create(PODS, m, md["namespace"])
            self.mirror_changed(out)
        except StatusError as e:
            if e.code != 409:
                log.warning("creating mirror pod %s/%s: %s", md["namespace"], md["name"], e)

    async def _delete_mirror(self, pod: dict[str, Any], uid: str | None = None) -> None:
        md = pod["metadata"]
        mirror = self.mirror_for(pod) if uid is None else pod
        if mirror is None:
            return
        with contextlib.suppress(StatusError):
            await self.kl.client.delete(PODS, md["name"], md.get("namespace"), grace_period=0,
                                        preconditions={"uid": mirror["metadata"]["uid"]})
        self.mirror_deleted(mirror)

    # ---- loop

    def start(self) -> None:
        os.makedirs(self.dir, exist_ok=True)
        self.scan()
        self._task = asyncio.create_task(self._run(), name="static-pods")

    async def _run(self) -> None:
        while True:
            try:
                self.scan()
                await self.ensure_mirrors()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("static pods")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._kick.wait(), self.interval)
            self._kick.clear()

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

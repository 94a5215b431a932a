"""The node's half of the local-path clean-up (docs/storage.md, "Contract with the node").

A Delete-policy PV of the `pyk8s.io/local-path` provisioner carries the finalizer
`storage.pyk8s.io/local-path-cleanup`. Once it has a deletionTimestamp and is not Bound, the node named in
its node affinity removes the directory, then the finalizer, so the PV is gone only after its data is.

The cleaner watches every PV, which a node identity may not under v1.33's Node authorizer, so it acts
with an identity of its own (`system:pyk8s:local-path-cleaner`: list/watch/get PVs, patch them, events),
as flannel and the network-policy controller do.

Only a directory directly inside this node's local-path root, named `<pv name>_...` as the provisioner
names it, is ever removed: the PV's path is the API's word, not the node's, so a hand-made PV with the
finalizer pointing elsewhere, a path through `..` or a symlink (the volume itself or a parent) is refused
with a `VolumeFailedDelete` event and keeps its finalizer. `shutil.rmtree` uses the fd-based walk on
Linux (`avoids_symlink_attacks`), so links inside the volume are removed, never followed.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
from typing import Any

from ..api.errors import StatusError
from ..client.events import EventRecorder
from ..client.informer import InformerFactory
from ..client.rest import Client
from ..client.tasks import cancel
from ..client.workqueue import RateLimitingQueue

__all__ = ["LocalPathCleaner", "CLEANUP_FINALIZER", "ROOT_ANNOTATION", "CLEANER_USER", "volume_path",
           "check_removable", "local_path_root", "start_for_node"]

log = logging.getLogger("pyk8s.kubelet.local_path")

CLEANUP_FINALIZER = "storage.pyk8s.io/local-path-cleanup"  # controllers/localpath.py puts it on
ROOT_ANNOTATION = "storage.pyk8s.io/local-path-root"  # the kubelet announces its root on its Node
CLEANER_USER = "system:pyk8s:local-path-cleaner"  # bound to the ClusterRole of that name (apiserver/authz.py)
PV_GVR = ("", "v1", "persistentvolumes")


class RefusedPath(Exception):
    """The PV names a path this node will not remove."""


def local_path_root(data_dir: str) -> str:
    """The node's local-path root, announced on its Node (`storage.pyk8s.io/local-path-root`)."""
    return os.path.join(os.path.abspath(data_dir), "storage")


def volume_path(pv: dict[str, Any]) -> str:
    spec = pv.get("spec") or {}
    return str(((spec.get("hostPath") or spec.get("local")) or {}).get("path") or "")


def affinity_hostnames(pv: dict[str, Any]) -> set[str]:
    terms = ((((pv.get("spec") or {}).get("nodeAffinity") or {}).get("required") or {})
             .get("nodeSelectorTerms") or [])
    return {v for t in terms for e in t.get("matchExpressions") or ()
            if e.get("key") == "kubernetes.io/hostname" and e.get("operator") == "In" for v in e.get("values") or ()}


def wants_cleanup(pv: dict[str, Any], hostname: str) -> bool:
    md = pv.get("metadata") or {}
    return (bool(md.get("deletionTimestamp")) and CLEANUP_FINALIZER in (md.get("finalizers") or ())
            and (pv.get("status") or {}).get("phase") != "Bound" and hostname in affinity_hostnames(pv))


def check_removable(path: str, root: str, pv_name: str) -> str:
    """The path to remove ("" when nothing is there), or RefusedPath: only `<root>/<pv name>_*`, a real
    directory, with no symlink on the way (the root itself is resolved once: it is the node's own)."""
    real_root = os.path.realpath(root)
    if not path or not os.path.isabs(path) or os.path.normpath(path) != path:
        raise RefusedPath(f"path {path!r} is not a clean absolute path")
    parent, base = os.path.split(path)
    if os.path.realpath(parent) != real_root or not base.startswith(f"{pv_name}_"):
        raise RefusedPath(f"path {path!r} is not a volume directory of {pv_name} inside the local-path root {root!r}")
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return ""
    import stat

    if not stat.S_ISDIR(st.st_mode):
        raise RefusedPath(f"path {path!r} is not a directory" + (" (a symlink)" if stat.S_ISLNK(st.st_mode) else ""))
    return path


def remove_volume_dir(path: str, root: str, pv_name: str) -> None:
    target = check_removable(path, root, pv_name)
    if target:
        # rmtree refuses a symlink at the top and never follows one below (fd-based walk)
        shutil.rmtree(target)


class LocalPathCleaner:
    def __init__(self, client: Client, node_name: str, hostname: str, root: str, owns_client: bool = False) -> None:
        self.client = client
        self.node_name = node_name
        self.hostname = hostname
        self.root = root
        self.owns_client = owns_client
        self.factory = InformerFactory(client)
        self.pvs = self.factory.informer(PV_GVR)
        self.queue = RateLimitingQueue("local-path-cleanup", base_delay=0.2, max_delay=60.0)
        self.recorder = EventRecorder(client, "local-path-cleaner", host=node_name)
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self.pvs.add_handlers(self._seen, lambda old, new: self._seen(new), None)
        self.factory.start()
        self._task = asyncio.create_task(self._run(), name="local-path-cleanup")

    def _seen(self, pv: dict[str, Any]) -> None:
        if wants_cleanup(pv, self.hostname):
            self.queue.add(pv["metadata"]["name"])

    async def _run(self) -> None:
        while True:
            name = await self.queue.get()
            try:
                await self.sync(name)
                self.queue.forget(name)
            except asyncio.CancelledError:
                raise
            except RefusedPath as e:  # the PV stays Terminating: an administrator must look at it
                log.warning("not removing the data of PersistentVolume %s: %s", name, e)
                self.queue.forget(name)
            except Exception as e:  # noqa: BLE001 - retried with backoff
                log.warning("cleaning up PersistentVolume %s: %s", name, e)
                self.queue.add_rate_limited(name)
            finally:
                self.queue.done(name)

    async def sync(self, name: str) -> None:
        pv = self.pvs.get(name)
        if pv is None or not wants_cleanup(pv, self.hostname):
            return
        try:
            await asyncio.to_thread(remove_volume_dir, volume_path(pv), self.root, name)
        except RefusedPath as e:
            self.recorder.event(pv, "Warning", "VolumeFailedDelete", str(e))
            raise
        rest = [f for f in pv["metadata"].get("finalizers") or () if f != CLEANUP_FINALIZER]
        try:
            # resourceVersion: a PV changed meanwhile (Bound again, Retain) is looked at afresh
            await self.client.patch(PV_GVR, name, {"metadata": {
                "resourceVersion": pv["metadata"]["resourceVersion"], "finalizers": rest or None}})
        except StatusError as e:
            if e.code == 404:
                return
            raise
        log.info("removed the data of PersistentVolume %s", name)

    async def stop(self) -> None:
        await cancel(self._task)
        self._task = None
        await self.factory.stop()
        if self.owns_client:
            await self.client.close()


async def start_for_node(client: Client, node_name: str, root: str, owns_client: bool = False) -> LocalPathCleaner:
    """The cleaner of the node `node_name` (its `kubernetes.io/hostname` is its name, as the kubelet labels it)."""
    c = LocalPathCleaner(client, node_name, node_name.lower(), root, owns_client)
    await c.start()
    return c

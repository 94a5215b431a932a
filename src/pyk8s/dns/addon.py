"""The DNS addon's API objects, as kubeadm's CoreDNS addon creates them, for a DNS server that
runs beside the API server rather than in a pod.

- ServiceAccount `kube-system/coredns`, ClusterRole and ClusterRoleBinding `system:coredns`
  (list/watch endpoints, services, pods, namespaces and endpointslices: kubeadm's role); the
  server reads the API as that ServiceAccount.
- Service `kube-system/kube-dns`, ClusterIP the tenth address of the service range, labels
  `k8s-app: kube-dns`, `kubernetes.io/cluster-service`, `kubernetes.io/name: CoreDNS`, ports
  `dns` 53/UDP and `dns-tcp` 53/TCP. It has no selector: like the `kubernetes` Service its
  endpoints are ours, an Endpoints and an EndpointSlice naming the address and port the server
  listens on (any free port; the service proxy maps 10.96.0.10:53 there). No `metrics` port:
  no metrics are served.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import socket
from typing import Any

from ..client import Client
from ..client.leaderelection import LeaderElector

__all__ = ["AddonKeeper", "cluster_dns_ips", "dns_service_ip", "ensure_addon", "ensure_identity", "addon_objects", "SERVICE_ACCOUNT_USER"]

log = logging.getLogger("pyk8s.dns")

NAMESPACE = "kube-system"
SERVICE_NAME = "kube-dns"
SERVICE_ACCOUNT = "coredns"
SERVICE_ACCOUNT_USER = f"system:serviceaccount:{NAMESPACE}:{SERVICE_ACCOUNT}"
SERVICE_ACCOUNT_GROUPS = ["system:serviceaccounts", f"system:serviceaccounts:{NAMESPACE}"]
MANAGED_BY = "cluster-dns.pyk8s.io"
LEASE_NAME = "pyk8s-cluster-dns"
LABELS = {"k8s-app": "kube-dns", "kubernetes.io/cluster-service": "true", "kubernetes.io/name": "CoreDNS"}


def dns_service_ip(service_cidr: str) -> str:
    """The tenth address of the (first) service range: kubeadm's and k3s's convention."""
    net = ipaddress.ip_network(service_cidr.split(",")[0].strip(), strict=False)
    return str(net.network_address + 10)


def cluster_dns_ips(cluster_dns: str | None, service_cidr: str | None) -> list[str]:
    """A comma-separated --cluster-dns, else the tenth address of the service range."""
    given = [x.strip() for x in (cluster_dns or "").split(",") if x.strip()]
    return given or [dns_service_ip(service_cidr or "10.96.0.0/12")]


def addon_objects(cluster_ip: str, address: str, port: int) -> list[tuple[tuple[str, str, str], dict[str, Any]]]:
    """(resource, object) pairs in creation order."""
    rbac = "rbac.authorization.k8s.io"
    family = "IPv6" if ":" in address else "IPv4"
    ports = [{"name": "dns", "port": port, "protocol": "UDP"}, {"name": "dns-tcp", "port": port, "protocol": "TCP"}]
    meta = {"name": SERVICE_NAME, "namespace": NAMESPACE}
    return [
        (("", "v1", "serviceaccounts"), {"apiVersion": "v1", "kind": "ServiceAccount",
                                         "metadata": {"name": SERVICE_ACCOUNT, "namespace": NAMESPACE}}),
        ((rbac, "v1", "clusterroles"), {
            "apiVersion": f"{rbac}/v1", "kind": "ClusterRole", "metadata": {"name": "system:coredns"},
            "rules": [{"apiGroups": [""], "resources": ["endpoints", "services", "pods", "namespaces"],
                       "verbs": ["list", "watch"]},
                      {"apiGroups": ["discovery.k8s.io"], "resources": ["endpointslices"],
                       "verbs": ["list", "watch"]},
                      # beyond kubeadm's role: the Nodes' addresses are the clients it admits (acl.py)
                      {"apiGroups": [""], "resources": ["nodes"], "verbs": ["list", "watch"]}]}),
        ((rbac, "v1", "clusterrolebindings"), {
            "apiVersion": f"{rbac}/v1", "kind": "ClusterRoleBinding", "metadata": {"name": "system:coredns"},
            "roleRef": {"apiGroup": rbac, "kind": "ClusterRole", "name": "system:coredns"},
            "subjects": [{"kind": "ServiceAccount", "name": SERVICE_ACCOUNT, "namespace": NAMESPACE}]}),
        (("", "v1", "services"), {
            "apiVersion": "v1", "kind": "Service", "metadata": {**meta, "labels": dict(LABELS)},
            "spec": {"type": "ClusterIP", "clusterIP": cluster_ip, "clusterIPs": [cluster_ip],
                     "ports": [{"name": "dns", "port": 53, "protocol": "UDP", "targetPort": port},
                               {"name": "dns-tcp", "port": 53, "protocol": "TCP", "targetPort": port}]}}),
        (("", "v1", "endpoints"), {
            "apiVersion": "v1", "kind": "Endpoints",
            "metadata": {**meta, "labels": {**LABELS, "endpointslice.kubernetes.io/skip-mirror": "true"}},
            "subsets": [{"addresses": [{"ip": address}], "ports": ports}]}),
        (("discovery.k8s.io", "v1", "endpointslices"), {
            "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {**meta, "labels": {**LABELS, "kubernetes.io/service-name": SERVICE_NAME,
                                            "endpointslice.kubernetes.io/managed-by": MANAGED_BY}},
            "addressType": family,
            "endpoints": [{"addresses": [address], "conditions": {"ready": True, "serving": True,
                                                                 "terminating": False}}],
            "ports": ports}),
    ]


async def ensure_identity(client: Client) -> None:
    """The ServiceAccount and its role, before the server first reads the API with them."""
    await _ensure(client, addon_objects("", "", 0)[:3])


async def ensure_addon(client: Client, cluster_ip: str, address: str, port: int) -> None:
    """Create the addon's objects, or bring the existing ones to this address and port. A
    kube-dns Service that holds another ClusterIP is left as it is (the field is immutable)."""
    await _ensure(client, addon_objects(cluster_ip, address, port))


async def _ensure(client: Client, objects: list[tuple[tuple[str, str, str], dict[str, Any]]]) -> None:
    for gvr, obj in objects:
        name, ns = obj["metadata"]["name"], obj["metadata"].get("namespace")
        cur = await client.get_or_none(gvr, name, ns)
        if cur is None:
            cur, created = await client.create_or_get(gvr, obj, ns)
            if created:
                continue
        if gvr[2] == "services":
            have, cluster_ip = (cur.get("spec") or {}).get("clusterIP"), obj["spec"]["clusterIP"]
            if have != cluster_ip:
                log.warning("cluster DNS: Service %s/%s has ClusterIP %s, not %s; pods' resolv.conf names %s",
                            NAMESPACE, SERVICE_NAME, have, cluster_ip, cluster_ip)
                continue
            spec = dict(cur.get("spec") or {})
            spec["ports"] = obj["spec"]["ports"]
            obj = {**cur, "spec": spec}
        elif gvr[2] == "serviceaccounts":
            continue  # its token secrets and fields are the controllers'
        else:
            obj = {**cur, **{k: v for k, v in obj.items() if k != "metadata"},
                   "metadata": {**cur["metadata"], "labels": {**(cur["metadata"].get("labels") or {}),
                                                              **(obj["metadata"].get("labels") or {})}}}
        if obj != cur:
            await client.update(gvr, obj)


class AddonKeeper:
    """Publishes the kube-dns Service and EndpointSlice with this server's address, and puts them
    back when someone changes or deletes them, as kube-apiserver keeps the `kubernetes` Service
    (the DNS server's own informers say when).

    With several API servers (each running its DNS), only the holder of Lease
    `kube-system/pyk8s-cluster-dns` publishes, so that no two keepers undo each other's writes; when
    it goes, another takes over within the lease's 15 s."""

    def __init__(self, client: Client, cluster_ip: str, address: str, port: int) -> None:
        self.client = client
        self.args = (cluster_ip, address, port)
        # one identity per machine and address: a restarted server takes its own Lease back at once
        self.elector = LeaderElector(client, LEASE_NAME, NAMESPACE, identity=f"{socket.gethostname()}_{address}")
        self.leading = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._elect: asyncio.Task[None] | None = None
        self._again = False

    async def start(self, wait: float = 1.0) -> None:
        """Stand for the Lease; wait a moment to publish at once when nobody else holds it."""
        self._elect = asyncio.get_running_loop().create_task(self._campaign())
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.leading.wait(), wait)
        if self._task is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(self._task), 5.0)

    async def _campaign(self) -> None:
        while True:
            await self.elector.run(self._lead)

    async def _lead(self) -> None:
        self.leading.set()
        self._schedule()
        try:
            await asyncio.Event().wait()
        finally:
            self.leading.clear()

    def watch(self, informers: list[Any]) -> None:
        for inf in informers:
            inf.add_handlers(None, lambda _old, new: self.poke(new), self.poke)

    def poke(self, obj: dict[str, Any]) -> None:
        meta = obj.get("metadata") or {}
        if meta.get("namespace") != NAMESPACE or SERVICE_NAME not in (
                meta.get("name"), (meta.get("labels") or {}).get("kubernetes.io/service-name")):
            return
        if self.leading.is_set():
            self._schedule()

    def _schedule(self) -> None:
        self._again = True
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        backoff = 0.2
        while self._again and self.leading.is_set():
            self._again = False
            try:
                await ensure_addon(self.client, *self.args)
                backoff = 0.2
            except Exception as e:  # the API may be going away; the next change pokes again
                log.warning("cluster DNS: publishing kube-system/%s: %s", SERVICE_NAME, e)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 5.0)
                self._again = True

    async def stop(self) -> None:
        was_leading = self.leading.is_set()
        for t in (self._elect, self._task):
            if t is not None:
                t.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await t
        if was_leading:  # another API server's DNS takes over at once
            await self.elector.release()

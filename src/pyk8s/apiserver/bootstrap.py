"""What a fresh cluster has: system namespaces, the kubernetes Service and its endpoints,
system PriorityClasses and the default RBAC policy. Idempotent on every start."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from ..api import errors as E
from .rest import RequestContext

log = logging.getLogger("pyk8s.apiserver")

SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")


async def _ensure(server: Any, group: str, plural: str, obj: dict[str, Any], ns: str | None = None,
                  reconcile: bool = False) -> None:
    res = server.registry.get(group, "v1", plural)
    ctx = RequestContext(field_manager="kube-apiserver")
    name = obj["metadata"]["name"]
    cur = await server.rest.get_current(res, ns, name)
    if cur is None:
        try:
            await server.rest.create(res, ns, obj, ctx)
        except E.StatusError as e:
            if e.code != 409:
                raise
    elif reconcile:
        def mutate(c: dict[str, Any] | None) -> dict[str, Any]:
            assert c is not None
            for k, v in obj.items():
                if k not in ("metadata", "status"):
                    c[k] = v
            return c

        await server.rest.update(res, ns, name, mutate, ctx, retry_on_conflict=True)


async def run(server: Any) -> None:
    for ns in SYSTEM_NAMESPACES:
        await _ensure(server, "", "namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    for name, value, desc in (
        ("system-cluster-critical", 2000000000, "Used for system critical pods that must run in the cluster, but can be moved to another node if necessary."),
        ("system-node-critical", 2000001000, "Used for system critical pods that must not be moved from their current node."),
    ):
        await _ensure(server, "scheduling.k8s.io", "priorityclasses", {
            "apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
            "value": value, "description": desc, "preemptionPolicy": "PreemptLowerPriority", "globalDefault": False})
    try:
        from .authz import bootstrap_policy

        for obj in bootstrap_policy():
            plural = {"ClusterRole": "clusterroles", "ClusterRoleBinding": "clusterrolebindings",
                      "Role": "roles", "RoleBinding": "rolebindings"}[obj["kind"]]
            try:
                await _ensure(server, "rbac.authorization.k8s.io", plural, obj, obj["metadata"].get("namespace"))
            except E.StatusError as e:  # one bad default must not keep the server down
                log.error("bootstrap policy %s %s: %s", obj["kind"], obj["metadata"]["name"], e.message)
    except ImportError:  # pragma: no cover
        pass
    await _ingress(server)
    await _kubernetes_service(server)
    try:
        await _local_api_services(server)
    except E.StatusError as e:  # informational objects: never keep the server from starting
        log.error("bootstrap APIServices: %s", e.message)
    await _flowcontrol(server)


async def _ingress(server: Any) -> None:
    """The built-in Ingress controller's identity, and its default IngressClass unless
    `--disable ingress` (docs/ingress.md)."""
    from . import ingress_bootstrap as policy

    for obj in policy.rbac_objects():
        plural = "clusterroles" if obj["kind"] == "ClusterRole" else "clusterrolebindings"
        await _ensure(server, "rbac.authorization.k8s.io", plural, obj)
    if "ingress" not in getattr(server.config, "disabled_components", ()):
        await _ensure(server, "networking.k8s.io", "ingressclasses", policy.ingress_class())


async def _flowcontrol(server: Any) -> None:
    """API Priority and Fairness' mandatory and suggested objects, kept up to date (flowcontrol_bootstrap.py)."""
    from . import flowcontrol_bootstrap as apf

    try:
        await apf.ensure_configuration(server)
        await apf.update_dangling_conditions(server)
    except E.StatusError as e:  # never keep the server from starting: the background round retries
        log.error("bootstrap flow control configuration: %s", e.message)
    server._tasks.append(asyncio.create_task(apf.run(server), name="apf-configuration"))


# groupPriorityMinimum / versionPriority of kube-apiserver's own group versions (its aggregator table)
_API_SERVICE_PRIORITIES: dict[tuple[str, str], tuple[int, int]] = {
    ("", "v1"): (18000, 1),
    ("apiregistration.k8s.io", "v1"): (18000, 15),
    ("apps", "v1"): (17800, 15),
    ("events.k8s.io", "v1"): (17750, 15),
    ("authentication.k8s.io", "v1"): (17700, 15),
    ("authorization.k8s.io", "v1"): (17600, 15),
    ("autoscaling", "v2"): (17500, 30),
    ("autoscaling", "v1"): (17500, 15),
    ("batch", "v1"): (17400, 15),
    ("certificates.k8s.io", "v1"): (17300, 15),
    ("networking.k8s.io", "v1"): (17200, 15),
    ("policy", "v1"): (17100, 15),
    ("rbac.authorization.k8s.io", "v1"): (17000, 15),
    ("storage.k8s.io", "v1"): (16800, 15),
    ("admissionregistration.k8s.io", "v1"): (16700, 15),
    ("apiextensions.k8s.io", "v1"): (16700, 15),
    ("scheduling.k8s.io", "v1"): (16600, 15),
    ("coordination.k8s.io", "v1"): (16500, 15),
    ("node.k8s.io", "v1"): (16300, 15),
    ("discovery.k8s.io", "v1"): (16200, 15),
    ("flowcontrol.apiserver.k8s.io", "v1"): (16100, 21),
    ("apps", "v1beta2"): (17800, 9),
    ("apps", "v1beta1"): (17800, 1),
    ("extensions", "v1beta1"): (100, 1),  # served for old manifests only: behind every other group
}


async def _local_api_services(server: Any) -> None:
    """As kube-aggregator's autoregistration: one APIService per built-in group version, served locally."""

    seen: set[tuple[str, str]] = set()
    for r in server.registry.all():
        gv = (r.group, r.version)
        if r.crd is not None or gv in seen:
            continue
        seen.add(gv)
        gp, vp = _API_SERVICE_PRIORITIES.get(gv, (1000, 15))
        name = f"{r.version}.{r.group}"
        await _ensure(server, "apiregistration.k8s.io", "apiservices", {
            "apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
            "metadata": {"name": name, "labels": {"kube-aggregator.kubernetes.io/automanaged": "onstart"}},
            # group is omitempty upstream: the core group's APIService has none
            "spec": {**({"group": r.group} if r.group else {}), "version": r.version, "groupPriorityMinimum": gp,
                     "versionPriority": vp},
        })
        res = server.registry.get("apiregistration.k8s.io", "v1", "apiservices")
        cur = await server.rest.get_current(res, None, name)
        if cur is not None and not (cur.get("status") or {}).get("conditions"):
            await mark_local_api_service_available(server.rest, res, name,
                                                   RequestContext(field_manager="kube-apiserver"))


async def mark_local_api_service_available(rest: Any, res: Any, name: str, ctx: RequestContext) -> None:
    """A locally served APIService's status: always Available (built-in and CRD group versions alike)."""
    from ..api.timefmt import now_rfc3339

    def available(c: dict[str, Any] | None) -> dict[str, Any]:
        assert c is not None
        c["status"] = {"conditions": [{"type": "Available", "status": "True", "reason": "Local",
                                       "message": "Local APIServices are always available",
                                       "lastTransitionTime": now_rfc3339()}]}
        return c

    await rest.update(res, None, name, available, ctx, subresource="status", retry_on_conflict=True)


async def _kubernetes_service(server: Any) -> None:
    port = server.port
    ip = server.allocator.kubernetes_ip
    await _ensure(server, "", "services", {
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "kubernetes", "namespace": "default",
                     "labels": {"component": "apiserver", "provider": "kubernetes"}},
        "spec": {"type": "ClusterIP", "clusterIP": ip, "clusterIPs": [ip], "sessionAffinity": "None",
                 "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": port}]},
    }, "default")
    if getattr(server.config, "endpoint_reconciler_type", "none") != "none":
        return  # endpoint_reconciler.py lists every live API server
    addr = server.advertise_address
    await _ensure(server, "", "endpoints", {
        "apiVersion": "v1", "kind": "Endpoints",
        "metadata": {"name": "kubernetes", "namespace": "default",
                     "labels": {"endpointslice.kubernetes.io/skip-mirror": "true"}},
        "subsets": [{"addresses": [{"ip": addr}], "ports": [{"name": "https", "port": port, "protocol": "TCP"}]}],
    }, "default", reconcile=True)
    await _ensure(server, "discovery.k8s.io", "endpointslices", {
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": "kubernetes", "namespace": "default",
                     "labels": {"kubernetes.io/service-name": "kubernetes"}},
        "addressType": "IPv4",
        "endpoints": [{"addresses": [addr], "conditions": {"ready": True}}],
        "ports": [{"name": "https", "port": port, "protocol": "TCP"}],
    }, "default", reconcile=True)

"""EndpointSlice controller: EndpointSlices for every Service with a selector (upstream's
pkg/controller/endpointslice and its reconciler in k8s.io/endpointslice).

Endpoints are grouped by the ports they resolve to; each group fills slices of at most
100 endpoints. Existing slices are edited in place (dropping endpoints no longer wanted,
refreshing changed ones), then topped up, then new slices are made; a service with no
endpoints keeps one placeholder slice. Slices are owned by the Service (so the garbage
collector removes them) and labelled kubernetes.io/service-name and
endpointslice.kubernetes.io/managed-by=endpointslice-controller.k8s.io.
"""

from __future__ import annotations

import logging
from typing import Any

import orjson

from ..api.errors import StatusError
from .base import GVRS, Controller, split_key
from .endpoints import pod_endpoints_changed
from .endpoints_util import (
    HEADLESS_LABEL,
    LAST_CHANGE_TRIGGER_TIME,
    TriggerTimeTracker,
    find_port,
    is_pod_ready,
    is_service_ip_set,
    pod_ip_for_service,
    selector_of,
    services_for_pod,
    should_pod_be_in_endpoints,
    should_set_hostname,
)

log = logging.getLogger("pyk8s.controllers.endpointslice")

__all__ = ["EndpointSliceController", "MANAGED_BY", "CONTROLLER_NAME", "SERVICE_NAME"]

SERVICE_NAME = "kubernetes.io/service-name"
MANAGED_BY = "endpointslice.kubernetes.io/managed-by"
CONTROLLER_NAME = "endpointslice-controller.k8s.io"
RESERVED = {SERVICE_NAME, MANAGED_BY, HEADLESS_LABEL}
ZONE_LABEL = "topology.kubernetes.io/zone"


def _ports_key(ports: list[dict[str, Any]] | None) -> tuple[bytes, ...]:
    return tuple(sorted(orjson.dumps(p, option=orjson.OPT_SORT_KEYS) for p in ports or []))


def _ep_key(ep: dict[str, Any]) -> tuple[str, tuple[str, ...]]:
    return ((ep.get("targetRef") or {}).get("uid", ""), tuple(ep.get("addresses") or []))


def _address_types(svc: dict[str, Any]) -> list[str]:
    fams = (svc.get("spec") or {}).get("ipFamilies") or []
    return list(dict.fromkeys(fams)) or ["IPv4"]


def _owned_by(slice_: dict[str, Any], svc: dict[str, Any]) -> bool:
    uid = svc["metadata"].get("uid")
    return any(o.get("uid") == uid and o.get("kind") == "Service" and o.get("apiVersion") == "v1"
               for o in slice_["metadata"].get("ownerReferences") or [])


class EndpointSliceController(Controller):
    name = "endpointslice"
    workers = 5  # upstream's --concurrent-service-endpoint-syncs
    component = "endpoint-slice-controller"
    max_endpoints_per_slice = 100

    def setup(self) -> None:
        self.services = self.ctx.informer("services")
        self.pods = self.ctx.informer("pods")
        self.nodes = self.ctx.informer("nodes")
        self.slices = self.ctx.informer("endpointslices")
        self.slices.add_index("service", self._slice_service)
        self.tracker = TriggerTimeTracker()
        self.max_endpoints_per_slice = int(self.ctx.options.get("max_endpoints_per_slice", 100))
        # what we wrote and the informer has not shown yet: service key -> {slice name: rv or None if deleted}
        self._expected: dict[str, dict[str, int | None]] = {}
        self.services.add_handlers(on_add=self.enqueue, on_update=lambda o, n: self.enqueue(n), on_delete=self.enqueue)
        self.pods.add_handlers(on_add=self._pod_added, on_update=self._pod_updated, on_delete=self._pod_added)
        self.slices.add_handlers(on_add=self._slice_changed, on_update=lambda o, n: self._slice_changed(n),
                                 on_delete=self._slice_changed)

    @staticmethod
    def _slice_service(s: dict[str, Any]) -> list[str]:
        labels = s["metadata"].get("labels") or {}
        if labels.get(MANAGED_BY) != CONTROLLER_NAME or not labels.get(SERVICE_NAME):
            return []
        return [f"{s['metadata'].get('namespace')}/{labels[SERVICE_NAME]}"]

    def _slice_changed(self, s: dict[str, Any]) -> None:
        # someone else's edit (or a delete) of one of our slices: put it right
        for key in self._slice_service(s):
            self.queue.add(key)

    def _pod_added(self, pod: dict[str, Any]) -> None:
        for key in services_for_pod(self.services.list(pod["metadata"].get("namespace", "")), pod):
            self.queue.add(key)

    def _pod_updated(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        if old["metadata"].get("resourceVersion") == new["metadata"].get("resourceVersion"):
            return
        if not pod_endpoints_changed(old, new):
            return
        svcs = self.services.list(new["metadata"].get("namespace", ""))
        for key in set(services_for_pod(svcs, new)) | set(services_for_pod(svcs, old)):
            self.queue.add(key)

    # ---- desired state ------------------------------------------------------------------
    def _endpoint(self, svc: dict[str, Any], pod: dict[str, Any], family: str) -> dict[str, Any] | None:
        ip = pod_ip_for_service(svc, pod, family)
        if ip is None:
            return None
        serving = is_pod_ready(pod)
        terminating = bool(pod["metadata"].get("deletionTimestamp"))
        # for compatibility, "ready" is never true for a terminating pod unless not-ready addresses are published
        ready = bool((svc.get("spec") or {}).get("publishNotReadyAddresses")) or (serving and not terminating)
        ep: dict[str, Any] = {"addresses": [ip],
                              "conditions": {"ready": ready, "serving": serving, "terminating": terminating}}
        if should_set_hostname(pod, svc):
            ep["hostname"] = pod["spec"]["hostname"]
        md = pod["metadata"]
        ep["targetRef"] = {"kind": "Pod", "namespace": md.get("namespace"), "name": md["name"], "uid": md.get("uid")}
        node_name = (pod.get("spec") or {}).get("nodeName")
        if node_name:
            ep["nodeName"] = node_name
            node = self.nodes.get(node_name)
            zone = ((node or {}).get("metadata", {}).get("labels") or {}).get(ZONE_LABEL)
            if zone:
                ep["zone"] = zone
        return ep

    @staticmethod
    def _ports(svc: dict[str, Any], pod: dict[str, Any]) -> list[dict[str, Any]]:
        out = []
        for sp in (svc.get("spec") or {}).get("ports") or []:
            num = find_port(pod, sp)
            if num is None:
                continue
            p: dict[str, Any] = {"name": sp.get("name", ""), "port": num, "protocol": sp.get("protocol") or "TCP"}
            if sp.get("appProtocol"):
                p["appProtocol"] = sp["appProtocol"]
            out.append(p)
        return out

    def _labels(self, svc: dict[str, Any], current: dict[str, str] | None) -> tuple[dict[str, str], bool]:
        """The slice labels for svc, and whether the service's own labels differ from current's."""
        cur = {k: v for k, v in (current or {}).items() if k not in RESERVED}
        want = {k: v for k, v in (svc["metadata"].get("labels") or {}).items() if k not in RESERVED}
        changed = cur != want
        if not is_service_ip_set(svc):
            want[HEADLESS_LABEL] = ""
        want[SERVICE_NAME] = svc["metadata"]["name"]
        want[MANAGED_BY] = CONTROLLER_NAME
        return want, changed

    def _new_slice(self, svc: dict[str, Any], ports: list[dict[str, Any]], family: str) -> dict[str, Any]:
        md = svc["metadata"]
        labels, _ = self._labels(svc, None)
        return {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                "metadata": {"generateName": f"{md['name']}-", "namespace": md.get("namespace"), "labels": labels,
                             "ownerReferences": [{"apiVersion": "v1", "kind": "Service", "name": md["name"],
                                                  "uid": md.get("uid"), "controller": True,
                                                  "blockOwnerDeletion": True}]},
                "addressType": family, "endpoints": [], "ports": ports}

    # ---- sync ---------------------------------------------------------------------------
    def _stale(self, key: str) -> bool:
        exp = self._expected.get(key)
        if not exp:
            return False
        for name, rv in list(exp.items()):
            cur = self.slices.get(f"{split_key(key)[0]}/{name}")
            if rv is None:
                if cur is None:
                    del exp[name]
                continue
            if cur is not None and int(cur["metadata"].get("resourceVersion") or 0) >= rv:
                del exp[name]
        if not exp:
            del self._expected[key]
            return False
        return True

    def _expect(self, key: str, name: str, rv: int | None) -> None:
        self._expected.setdefault(key, {})[name] = rv

    async def sync(self, key: str) -> None:
        ns, name = split_key(key)
        svc = self.services.get(key)
        if svc is None:
            self.tracker.delete(key)
            self._expected.pop(key, None)
            return  # the garbage collector removes the slices the service owned
        if key == "default/kubernetes":
            return  # the API server keeps its own service's endpoints
        if (svc.get("spec") or {}).get("type") == "ExternalName":
            return
        sel = selector_of(svc)
        if sel is None:
            return
        if self._stale(key):
            # our own recent writes are not in the cache yet: acting now could duplicate slices
            self.queue.add_after(key, 0.05)
            return
        pods = [p for p in self.pods.list(ns) if sel.matches(p["metadata"].get("labels") or {})]
        existing = [s for s in self.slices.by_index("service", key)]
        trigger = self.tracker.compute(svc, pods)
        families = _address_types(svc)
        errors: list[str] = []
        to_delete = [s for s in existing if s.get("addressType") not in families]
        for fam in families:
            errors += await self._reconcile(key, svc, pods, [s for s in existing if s.get("addressType") == fam],
                                            fam, trigger)
        for s in to_delete:
            await self._delete(key, s)
        if errors:
            raise StatusError(500, "InternalError", "; ".join(errors))

    async def _reconcile(self, key: str, svc: dict[str, Any], pods: list[dict[str, Any]],
                         existing: list[dict[str, Any]], family: str, trigger: str | None) -> list[str]:
        errors: list[str] = []
        to_create: list[dict[str, Any]] = []
        to_update: list[dict[str, Any]] = []
        to_delete: list[dict[str, Any]] = []
        by_ports: dict[tuple[bytes, ...], list[dict[str, Any]]] = {}
        for s in existing:
            if _owned_by(s, svc):
                by_ports.setdefault(_ports_key(s.get("ports")), []).append(s)
            else:
                to_delete.append(s)  # left by an earlier service of the same name
        desired: dict[tuple[bytes, ...], dict[tuple[str, tuple[str, ...]], dict[str, Any]]] = {}
        desired_ports: dict[tuple[bytes, ...], list[dict[str, Any]]] = {}
        publish = bool((svc.get("spec") or {}).get("publishNotReadyAddresses"))
        for pod in sorted(pods, key=lambda p: p["metadata"]["name"]):
            if not should_pod_be_in_endpoints(pod, True):
                continue
            ports = self._ports(svc, pod)
            pk = _ports_key(ports)
            desired.setdefault(pk, {})
            desired_ports.setdefault(pk, ports)
            node = (pod.get("spec") or {}).get("nodeName")
            if node and self.nodes.get(node) is None and not publish:
                # as upstream: leave the pod out for now and retry, rather than publish a pod on no node
                errors.append(f"skipping Pod {pod['metadata']['name']} for Service {key}: Node {node} Not Found")
                continue
            ep = self._endpoint(svc, pod, family)
            if ep is not None:
                desired[pk][_ep_key(ep)] = ep
        for pk, want in desired.items():
            c, u, d = self._by_port_mapping(svc, by_ports.get(pk, []), want, desired_ports[pk], family)
            to_create += c
            to_update += u
            to_delete += d
        for pk, slices in by_ports.items():
            if pk not in desired:
                to_delete += slices
        if len(existing) == len(to_delete) and not to_create:
            placeholder = self._new_slice(svc, [], family)
            if len(to_delete) == 1 and self._is_placeholder(to_delete[0], placeholder):
                to_delete = []  # keep the placeholder we have rather than delete and recreate it
            else:
                to_create.append(placeholder)
        # creating and deleting at once: reuse the doomed slices' names instead
        i = 0
        while i < len(to_delete) and to_create:
            doomed = to_delete[i]
            if doomed.get("addressType") == family and _owned_by(doomed, svc):
                s = to_create.pop()
                s["metadata"] = dict(doomed["metadata"])
                s["metadata"]["labels"] = self._labels(svc, None)[0]
                to_update.append(s)
                to_delete.pop(i)
            else:
                i += 1
        if not svc["metadata"].get("deletionTimestamp"):
            for s in to_create:
                self._annotate(s, trigger)
                try:
                    created = await self.client.create(GVRS["endpointslices"], s, s["metadata"]["namespace"])
                except StatusError as e:
                    if e.code == 403 and "being terminated" in e.message:
                        return []
                    errors.append(f"failed to create EndpointSlice for Service {key}: {e.message}")
                    continue
                self._expect(key, created["metadata"]["name"], int(created["metadata"]["resourceVersion"]))
        for s in to_update:
            self._annotate(s, trigger)
            try:
                updated = await self.client.update(GVRS["endpointslices"], s)
            except StatusError as e:
                errors.append(f"failed to update {s['metadata']['name']} EndpointSlice for Service {key}: {e.message}")
                continue
            self._expect(key, updated["metadata"]["name"], int(updated["metadata"]["resourceVersion"]))
        for s in to_delete:
            try:
                await self._delete(key, s)
            except StatusError as e:
                errors.append(f"failed to delete {s['metadata']['name']} EndpointSlice for Service {key}: {e.message}")
        return errors

    async def _delete(self, key: str, s: dict[str, Any]) -> None:
        await self.client.delete_ignore_missing(GVRS["endpointslices"], s["metadata"]["name"],
                                                s["metadata"].get("namespace"))
        self._expect(key, s["metadata"]["name"], None)

    @staticmethod
    def _annotate(s: dict[str, Any], trigger: str | None) -> None:
        # as upstream's stored placeholder: empty lists read back as null
        for f in ("endpoints", "ports"):
            if not s.get(f):
                s[f] = None
        if trigger:
            md = s["metadata"]
            md["annotations"] = dict(md.get("annotations") or {}, **{LAST_CHANGE_TRIGGER_TIME: trigger})

    @staticmethod
    def _is_placeholder(s: dict[str, Any], placeholder: dict[str, Any]) -> bool:
        return (not s.get("endpoints") and not s.get("ports")
                and s["metadata"].get("namespace") == placeholder["metadata"]["namespace"]
                and (s["metadata"].get("labels") or {}) == placeholder["metadata"]["labels"]
                and [(o.get("uid"), o.get("kind")) for o in s["metadata"].get("ownerReferences") or []]
                == [(o["uid"], o["kind"]) for o in placeholder["metadata"]["ownerReferences"]])

    def _by_port_mapping(self, svc: dict[str, Any], existing: list[dict[str, Any]],
                         want: dict[tuple[str, tuple[str, ...]], dict[str, Any]], ports: list[dict[str, Any]],
                         family: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
        """Upstream's reconcileByPortMapping: edit, then fill, then create."""
        cap = self.max_endpoints_per_slice
        want = dict(want)
        updated: dict[str, dict[str, Any]] = {}
        unchanged: dict[str, dict[str, Any]] = {}
        deleted: list[dict[str, Any]] = []
        # 1. drop endpoints no longer wanted from existing slices; refresh changed ones
        for s in existing:
            kept, changed = [], False
            for ep in s.get("endpoints") or []:
                got = want.pop(_ep_key(ep), None)
                if got is not None:
                    kept.append(got)
                    changed = changed or _norm_ep(got) != _norm_ep(ep)
            labels, labels_changed = self._labels(svc, s["metadata"].get("labels"))
            if changed or len(kept) != len(s.get("endpoints") or []):
                if not kept:
                    deleted.append(s)
                    continue
                n = dict(s, endpoints=kept)
                n["metadata"] = dict(s["metadata"], labels=labels)
                updated[s["metadata"]["name"]] = n
            elif labels_changed or (s["metadata"].get("labels") or {}) != labels:
                n = dict(s)
                n["metadata"] = dict(s["metadata"], labels=labels)
                updated[s["metadata"]["name"]] = n
            else:
                unchanged[s["metadata"]["name"]] = s
        rest = list(want.values())
        # 2. top up the slices we are writing anyway, fullest first
        for s in sorted(updated.values(), key=lambda s: -len(s["endpoints"])):
            while rest and len(s["endpoints"]) < cap:
                s["endpoints"] = s["endpoints"] + [rest.pop(0)]
        # 3. fit what is left into one unchanged slice if it can take it all, else new slices
        created: list[dict[str, Any]] = []
        while rest:
            target = None
            if len(rest) < cap and unchanged:
                fits = [s for s in unchanged.values() if len(s.get("endpoints") or []) + len(rest) <= cap]
                if fits:
                    target = max(fits, key=lambda s: len(s.get("endpoints") or []))
                    target = dict(target, endpoints=list(target.get("endpoints") or []))
                    del unchanged[target["metadata"]["name"]]
                    updated[target["metadata"]["name"]] = target
            if target is None:
                target = self._new_slice(svc, ports, family)
                created.append(target)
            while rest and len(target["endpoints"]) < cap:
                target["endpoints"].append(rest.pop(0))
        return created, list(updated.values()), deleted


def _norm_ep(ep: dict[str, Any]) -> bytes:
    return orjson.dumps({k: v for k, v in ep.items() if v not in (None, "", [], {})}, option=orjson.OPT_SORT_KEYS)

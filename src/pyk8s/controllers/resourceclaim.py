"""The resource claim controller (upstream's pkg/controller/resourceclaim, v1.33).

- Pods: for each `spec.resourceClaims[]` entry naming a `resourceClaimTemplateName`, a claim is
  made from the template in the pod's namespace: generateName `<pod>-<claim>-` (the base cut to
  57 characters), owned by the pod (controller, blockOwnerDeletion, so the garbage collector
  deletes it with the pod), annotated `resource.kubernetes.io/pod-claim-name: <claim>`, and
  recorded in `pod.status.resourceClaimStatuses`. A claim made earlier but not yet recorded is
  found again by owner and annotation, and created claims are remembered until the informer
  shows them, so a claim is never made twice.
- Claims: `status.reservedFor` entries of pods that are gone (or replaced), finished, or being
  deleted before they were scheduled are removed. A claim reserved for nobody is deallocated
  (`status.allocation` cleared), then its `resource.kubernetes.io/delete-protection` finalizer
  (the scheduler's) is dropped; a generated claim whose pod is finished is deleted.
"""

from __future__ import annotations

from typing import Any

from ..api.errors import StatusError
from .base import GVRS, Controller

__all__ = ["ResourceClaimController", "POD_CLAIM_NAME", "FINALIZER", "RESOURCECLAIMS", "RESOURCECLAIMTEMPLATES"]

POD_CLAIM_NAME = "resource.kubernetes.io/pod-claim-name"
FINALIZER = "resource.kubernetes.io/delete-protection"
RESOURCECLAIMS = ("resource.k8s.io", "v1beta1", "resourceclaims")
RESOURCECLAIMTEMPLATES = ("resource.k8s.io", "v1beta1", "resourceclaimtemplates")
_MAX_BASE = 57  # generateName base: 63 minus the random suffix and a dash

Obj = dict[str, Any]


def _md(o: Obj) -> Obj:
    return o.get("metadata") or {}


def _done(pod: Obj) -> bool:
    """podutil.IsPodTerminal, or deleted before it ever ran (upstream's isPodDone)."""
    if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
        return True
    return bool(_md(pod).get("deletionTimestamp")) and not (pod.get("spec") or {}).get("nodeName")


def _owned_by(claim: Obj, pod: Obj) -> bool:
    uid = _md(pod).get("uid")
    return any(o.get("uid") == uid and o.get("controller") for o in _md(claim).get("ownerReferences") or ())


class ResourceClaimController(Controller):
    name = "resource-claim-controller"
    component = "resource_claim"

    def setup(self) -> None:
        self.pods = self.ctx.informer("pods")
        self.claims = self.ctx.informers.informer(RESOURCECLAIMS)
        self.templates = self.ctx.informers.informer(RESOURCECLAIMTEMPLATES)
        # (pod uid, pod claim name) -> claim name created but not yet in the pod's status
        self._created: dict[tuple[str, str], str] = {}
        self.pods.add_handlers(on_add=self._pod, on_update=lambda o, n: self._pod(n), on_delete=self._pod_gone)
        self.claims.add_handlers(on_add=self._claim, on_update=lambda o, n: self._claim(n), on_delete=self._claim_gone)
        self.templates.add_handlers(on_add=self._template, on_update=lambda o, n: self._template(n))

    # -- event handlers -------------------------------------------------------------------

    def _pod(self, pod: Obj) -> None:
        spec = pod.get("spec") or {}
        if not spec.get("resourceClaims"):
            return
        if any(c.get("resourceClaimTemplateName") for c in spec["resourceClaims"]) and not _done(pod):
            self.queue.add("pod:" + self._key(pod))
        if _done(pod) or _md(pod).get("deletionTimestamp"):
            self._claims_of(pod)

    def _pod_gone(self, pod: Obj) -> None:
        self._claims_of(pod)
        uid = _md(pod).get("uid", "")
        for k in [k for k in self._created if k[0] == uid]:
            del self._created[k]

    def _claims_of(self, pod: Obj) -> None:
        ns = _md(pod).get("namespace", "")
        names = {c.get("resourceClaimName") for c in (pod.get("spec") or {}).get("resourceClaims") or ()}
        names |= {s.get("resourceClaimName") for s in (pod.get("status") or {}).get("resourceClaimStatuses") or ()}
        for n in names - {None, ""}:
            self.queue.add(f"claim:{ns}/{n}")

    def _claim(self, claim: Obj) -> None:
        st = claim.get("status") or {}
        if st.get("reservedFor") or st.get("allocation") is not None or _md(claim).get("deletionTimestamp"):
            self.queue.add("claim:" + self._key(claim))

    def _claim_gone(self, claim: Obj) -> None:
        for o in _md(claim).get("ownerReferences") or ():
            if o.get("kind") == "Pod" and o.get("controller"):
                self.queue.add(f"pod:{_md(claim).get('namespace')}/{o.get('name')}")

    def _template(self, tmpl: Obj) -> None:
        ns, name = _md(tmpl).get("namespace", ""), _md(tmpl).get("name", "")
        for pod in self.pods.list(ns):
            if any(c.get("resourceClaimTemplateName") == name for c in (pod.get("spec") or {}).get("resourceClaims") or ()):
                self._pod(pod)

    @staticmethod
    def _key(o: Obj) -> str:
        return f"{_md(o).get('namespace')}/{_md(o).get('name')}"

    # -- sync -----------------------------------------------------------------------------

    async def sync(self, key: str) -> None:
        kind, _, rest = key.partition(":")
        if kind == "pod":
            await self._sync_pod(rest)
        else:
            await self._sync_claim(rest)

    async def _sync_pod(self, key: str) -> None:
        pod = self.pods.get(key)
        if pod is None or _done(pod) or _md(pod).get("deletionTimestamp"):
            return
        ns, uid = _md(pod).get("namespace", ""), _md(pod).get("uid", "")
        recorded = {s.get("name"): s.get("resourceClaimName")
                    for s in (pod.get("status") or {}).get("resourceClaimStatuses") or ()}
        new_statuses: list[Obj] = []
        for pc in (pod.get("spec") or {}).get("resourceClaims") or ():
            tmpl_name, pc_name = pc.get("resourceClaimTemplateName"), pc.get("name", "")
            if not tmpl_name or pc_name in recorded:
                continue
            name = self._created.get((uid, pc_name)) or self._find_claim(pod, pc_name)
            if name is None:
                tmpl = self.templates.get(f"{ns}/{tmpl_name}")
                if tmpl is None:
                    # the template handler re-queues the pod when it appears
                    self.recorder.event(pod, "Warning", "FailedResourceClaimCreation",
                                        f'PodResourceClaim {pc_name}: resource claim template "{tmpl_name}": '
                                        f'resourceclaimtemplate.resource.k8s.io "{tmpl_name}" not found')
                    continue
                name = await self._create_claim(pod, pc_name, tmpl)
                self._created[(uid, pc_name)] = name
            new_statuses.append({"name": pc_name, "resourceClaimName": name})
        if not new_statuses:
            return
        try:
            await self.client.patch(GVRS["pods"], _md(pod)["name"], {"status": {"resourceClaimStatuses": new_statuses}},
                                    ns, sub="status", patch_type="strategic")
        except StatusError as e:
            if e.code != 404:
                raise
        for s in new_statuses:
            self._created.pop((uid, s["name"]), None)

    def _find_claim(self, pod: Obj, pc_name: str) -> str | None:
        for claim in self.claims.list(_md(pod).get("namespace", "")):
            if _owned_by(claim, pod) and (_md(claim).get("annotations") or {}).get(POD_CLAIM_NAME) == pc_name:
                return str(_md(claim)["name"])
        return None

    async def _create_claim(self, pod: Obj, pc_name: str, tmpl: Obj) -> str:
        pmd, tmd = _md(pod), _md(tmpl.get("spec") or {})
        base = f"{pmd['name']}-{pc_name}"[:_MAX_BASE]
        meta: Obj = {
            "generateName": base + "-",
            "namespace": pmd.get("namespace"),
            "annotations": {**(tmd.get("annotations") or {}), POD_CLAIM_NAME: pc_name},
            "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": pmd["name"], "uid": pmd["uid"],
                                 "controller": True, "blockOwnerDeletion": True}],
        }
        if tmd.get("labels"):
            meta["labels"] = dict(tmd["labels"])
        claim = {"apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceClaim", "metadata": meta,
                 "spec": (tmpl.get("spec") or {}).get("spec") or {}}
        created = await self.client.create(RESOURCECLAIMS, claim, pmd.get("namespace"))
        return str(_md(created)["name"])

    async def _sync_claim(self, key: str) -> None:
        claim = self.claims.get(key)
        if claim is None:
            return
        md = claim["metadata"]
        ns = md.get("namespace", "")
        st = claim.get("status") or {}
        reserved = st.get("reservedFor") or []
        keep = []
        for ref in reserved:
            if ref.get("resource") != "pods" or ref.get("apiGroup"):
                keep.append(ref)
                continue
            pod = self.pods.get(f"{ns}/{ref.get('name')}")
            if pod is None or _md(pod).get("uid") != ref.get("uid") or _done(pod):
                continue
            keep.append(ref)
        status = dict(st)
        changed = False
        if len(keep) != len(reserved):
            status["reservedFor"] = keep
            if not keep:
                status.pop("reservedFor")
            changed = True
        if not keep and status.get("allocation") is not None:
            # the scheduler writes allocation and reservedFor together: allocated and reserved
            # for nobody means every consumer is gone
            status.pop("allocation")
            changed = True
        if changed:
            try:
                claim = await self.client.update(RESOURCECLAIMS, {**claim, "status": status}, sub="status")
            except StatusError as e:
                if e.code == 404:
                    return
                raise
            md = claim["metadata"]
        if not keep and (claim.get("status") or {}).get("allocation") is None and FINALIZER in (md.get("finalizers") or ()):
            new_md = {**md, "finalizers": [f for f in md["finalizers"] if f != FINALIZER]}
            try:
                claim = await self.client.update(RESOURCECLAIMS, {**claim, "metadata": new_md})
            except StatusError as e:
                if e.code == 404:
                    return
                raise
        if not keep:
            await self._delete_if_pod_done(claim)

    async def _delete_if_pod_done(self, claim: Obj) -> None:
        md = claim["metadata"]
        if md.get("deletionTimestamp"):
            return
        owner = next((o for o in md.get("ownerReferences") or () if o.get("kind") == "Pod" and o.get("controller")), None)
        if owner is None:
            return
        pod = self.pods.get(f"{md.get('namespace')}/{owner.get('name')}")
        if pod is not None and _md(pod).get("uid") == owner.get("uid") and _done(pod):
            try:
                await self.client.delete(RESOURCECLAIMS, md["name"], md.get("namespace"),
                                         preconditions={"uid": md.get("uid", "")})
            except StatusError as e:
                if e.code not in (404, 409):
                    raise

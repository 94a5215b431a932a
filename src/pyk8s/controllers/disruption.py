"""Disruption controller: PodDisruptionBudget status (upstream's pkg/controller/disruption).

For each budget: the pods its selector matches (policy/v1: an empty selector matches every
pod of the namespace), how many are healthy (Ready, not being deleted, not recently
evicted), how many must be (minAvailable, or the controllers' scale minus maxUnavailable;
percentages round up against the total scale of the pods' controllers), and so how many
disruptions the eviction API may allow now. Evictions the API recorded in
status.disruptedPods are forgotten after 2 minutes if the pod was not deleted.
On failure the budget is made safe: disruptionsAllowed 0, condition reason SyncFailed.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from typing import Any

from ..api import labels as L
from ..api.errors import StatusError
from ..api.timefmt import format_time, parse_time_or_none
from .base import GVRS, Controller

log = logging.getLogger("pyk8s.controllers.disruption")

__all__ = ["DisruptionController", "scaled_value"]

DELETION_TIMEOUT = 120.0  # upstream's DeletionTimeout: how long an eviction stays "in flight"
RESYNC = 30.0


class _SyncError(Exception):
    """An expected failure: recorded in the budget's status (fail safe) and retried."""


def scaled_value(v: Any, total: int, round_up: bool = True) -> int:
    """intstr.GetScaledValueFromIntOrPercent."""
    if isinstance(v, int):
        return v
    if isinstance(v, str) and v.endswith("%"):
        try:
            pct = int(v[:-1])
        except ValueError:
            raise _SyncError(f"invalid value for IntOrString: invalid value {v!r}") from None
        return math.ceil(pct * total / 100) if round_up else math.floor(pct * total / 100)
    if isinstance(v, str):
        raise _SyncError("invalid value for IntOrString: invalid type: string is not a percentage")
    raise _SyncError("invalid value for IntOrString: invalid type: neither int nor percentage")


def _ready(pod: dict[str, Any]) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (pod.get("status") or {}).get("conditions") or [])


def _controller_ref(obj: dict[str, Any]) -> dict[str, Any] | None:
    for r in obj["metadata"].get("ownerReferences") or []:
        if r.get("controller"):
            return r
    return None


def _selects(pdb: dict[str, Any], pod: dict[str, Any]) -> bool:
    sel = (pdb.get("spec") or {}).get("selector")
    if sel is None:
        return False  # a nil selector matches nothing
    try:
        return L.selector_from_label_selector(sel).matches(pod["metadata"].get("labels") or {})
    except Exception:
        return False


class DisruptionController(Controller):
    name = "disruption"
    workers = 2
    component = "controllermanager"  # upstream's disruption recorder source

    def setup(self) -> None:
        ctx = self.ctx
        self.pdbs = ctx.informer("poddisruptionbudgets")
        self.pods = ctx.informer("pods")
        self.rcs = ctx.informer("replicationcontrollers")
        self.rss = ctx.informer("replicasets")
        self.deployments = ctx.informer("deployments")
        self.statefulsets = ctx.informer("statefulsets")
        self.pdbs.add_handlers(on_add=self.enqueue, on_update=lambda o, n: self.enqueue(n), on_delete=self.enqueue)
        self.pods.add_handlers(on_add=self._pod, on_update=self._pod_updated, on_delete=self._pod)
        self._scale_cache: dict[str, tuple[str, bool]] = {}  # "group/Kind" -> (plural, has scale)

    def _pod(self, pod: dict[str, Any]) -> None:
        ns = pod["metadata"].get("namespace")
        for pdb in self.pdbs.list(ns):
            if _selects(pdb, pod):
                self.enqueue(pdb)

    def _pod_updated(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        if old["metadata"].get("resourceVersion") == new["metadata"].get("resourceVersion"):
            return
        ns = new["metadata"].get("namespace")
        for pdb in self.pdbs.list(ns):
            if _selects(pdb, new) or _selects(pdb, old):
                self.enqueue(pdb)

    async def run(self) -> None:
        async def resync() -> None:
            # controllers' scale changes are not watched (as upstream), so look again now and then
            while True:
                await asyncio.sleep(RESYNC)
                for p in self.pdbs.list():
                    self.enqueue(p)

        t = asyncio.create_task(resync())
        try:
            await super().run()
        finally:
            t.cancel()

    # ---- sync ---------------------------------------------------------------------------
    async def sync(self, key: str) -> None:
        pdb = self.pdbs.get(key)
        if pdb is None:
            return
        try:
            await self._try_sync(pdb)
        except StatusError as e:
            if e.code == 409:
                raise  # a newer budget is on its way: retry with it
            await self._fail_safe(pdb, e.message)
            raise
        except _SyncError as e:
            await self._fail_safe(pdb, str(e))
            raise

    async def _try_sync(self, pdb: dict[str, Any]) -> None:
        ns = pdb["metadata"].get("namespace")
        pods = [p for p in self.pods.list(ns) if _selects(pdb, p)]
        if not pods:
            self.recorder.event(pdb, "Normal", "NoPods", "No matching pods found")
        try:
            expected, desired, unmanaged = await self._expected_count(pdb, pods)
        except _SyncError as e:
            self.recorder.event(pdb, "Warning", "CalculateExpectedPodCountFailed",
                                f"Failed to calculate the number of expected pods: {e}")
            raise
        if unmanaged:
            sel = (pdb.get("spec") or {}).get("selector")
            self.recorder.event(pdb, "Warning", "UnmanagedPods",
                                f"Pods selected by this PodDisruptionBudget (selector: {_go_selector(sel)}) were found "
                                "to be unmanaged. As a result, the status of the PDB cannot be calculated correctly, "
                                "which may result in undefined behavior. To account for these pods please set "
                                "\".spec.minAvailable\" field of the PDB to an integer value.")
        now = time.time()
        disrupted, recheck = self._disrupted_pods(pods, pdb, now)
        healthy = sum(1 for p in pods if not p["metadata"].get("deletionTimestamp")
                      and p["metadata"]["name"] not in disrupted and _ready(p))
        await self._update_status(pdb, healthy, desired, expected, disrupted)
        if recheck is not None:
            self.enqueue_after(pdb, max(0.0, recheck - now))

    async def _expected_count(self, pdb: dict[str, Any], pods: list[dict[str, Any]]) -> tuple[int, int, list[str]]:
        spec = pdb.get("spec") or {}
        unmanaged: list[str] = []
        expected = desired = 0
        if spec.get("maxUnavailable") is not None:
            expected, unmanaged = await self._expected_scale(pods)
            desired = max(0, expected - scaled_value(spec["maxUnavailable"], expected, True))
        elif spec.get("minAvailable") is not None:
            ma = spec["minAvailable"]
            if isinstance(ma, int):
                desired, expected = ma, len(pods)
            else:
                expected, unmanaged = await self._expected_scale(pods)
                desired = scaled_value(ma, expected, True)
        return expected, desired, unmanaged

    async def _expected_scale(self, pods: list[dict[str, Any]]) -> tuple[int, list[str]]:
        """The summed scale of the pods' controllers (each counted once)."""
        scale: dict[str, int] = {}
        unmanaged = []
        for pod in pods:
            ref = _controller_ref(pod)
            if ref is None:
                unmanaged.append(pod["metadata"]["name"])
                continue
            if ref.get("uid") in scale:
                continue
            found = await self._controller_scale(ref, pod["metadata"].get("namespace"))
            if found is None:
                raise _SyncError(f'found no controllers for pod "{pod["metadata"]["name"]}"')
            scale[found[0]] = found[1]
        return sum(scale.values()), unmanaged

    async def _controller_scale(self, ref: dict[str, Any], ns: str) -> tuple[str, int] | None:
        """(uid, replicas) of the controller a pod's controllerRef names: upstream's finders, in order."""
        group = ref.get("apiVersion", "").rpartition("/")[0]
        kind, name, uid = ref.get("kind"), ref.get("name", ""), ref.get("uid")

        def replicas(o: dict[str, Any]) -> int:
            r = (o.get("spec") or {}).get("replicas")
            return 1 if r is None else int(r)

        if (group, kind) == ("", "ReplicationController"):
            rc = self.rcs.get(f"{ns}/{name}")
            if rc is not None and rc["metadata"].get("uid") == uid:
                return uid, replicas(rc)
        if (group, kind) == ("apps", "ReplicaSet"):
            rs = self.rss.get(f"{ns}/{name}")
            if rs is None or rs["metadata"].get("uid") != uid:
                return None
            owner = _controller_ref(rs)
            if owner is not None and owner.get("kind") == "Deployment" \
                    and owner.get("apiVersion", "").rpartition("/")[0] == "apps":
                d = self.deployments.get(f"{ns}/{owner.get('name')}")
                if d is not None and d["metadata"].get("uid") == owner.get("uid"):
                    return d["metadata"]["uid"], replicas(d)
                return None
            return uid, replicas(rs)
        if (group, kind) == ("apps", "StatefulSet"):
            ss = self.statefulsets.get(f"{ns}/{name}")
            if ss is not None and ss["metadata"].get("uid") == uid:
                return uid, replicas(ss)
        return await self._scale_subresource(ref, ns)

    async def _scale_subresource(self, ref: dict[str, Any], ns: str) -> tuple[str, int] | None:
        """Any other controller that implements /scale (custom resources included)."""
        api_version, kind = ref.get("apiVersion", ""), ref.get("kind", "")
        group, _, version = api_version.rpartition("/")
        cache_key = f"{api_version}/{kind}"
        if cache_key not in self._scale_cache:
            path = f"/apis/{api_version}" if group else f"/api/{version}"
            try:
                rl = await self.client.request("GET", path)
            except StatusError as e:
                raise _SyncError(f"unable to find the resource for {api_version}, Kind={kind}: {e.message}") from None
            plural, has_scale = "", False
            names = {r["name"] for r in rl.get("resources") or []}
            for r in rl.get("resources") or []:
                if "/" not in r["name"] and r.get("kind") == kind:
                    plural = r["name"]
                    has_scale = f"{plural}/scale" in names
            if not plural:
                raise _SyncError(f'no matches for kind "{kind}" in version "{api_version}"')
            self._scale_cache[cache_key] = (plural, has_scale)
        plural, has_scale = self._scale_cache[cache_key]
        gr = f"{plural}.{group}" if group else plural
        if not has_scale:
            raise _SyncError(f"{gr} does not implement the scale subresource")
        try:
            scale = await self.client.get((group, version, plural), ref.get("name", ""), ns, sub="scale")
        except StatusError as e:
            if e.code == 404:
                return None
            raise
        if scale["metadata"].get("uid") not in (None, "", ref.get("uid")):
            return None
        return ref.get("uid", ""), int((scale.get("spec") or {}).get("replicas") or 0)

    @staticmethod
    def _disrupted_pods(pods: list[dict[str, Any]], pdb: dict[str, Any], now: float) -> tuple[dict[str, str], float | None]:
        """Evictions still in flight: the pod exists, is not being deleted, and 2 minutes have not passed."""
        recorded = (pdb.get("status") or {}).get("disruptedPods") or {}
        by_name = {p["metadata"]["name"]: p for p in pods}
        out: dict[str, str] = {}
        recheck: float | None = None
        for name, stamp in recorded.items():
            p = by_name.get(name)
            if p is None or p["metadata"].get("deletionTimestamp"):
                continue  # deleted: it no longer counts as disrupted (nor healthy)
            t = parse_time_or_none(stamp)
            if t is None:
                continue
            due = t + DELETION_TIMEOUT
            if due < now:
                log.info("pod %s was expected to be deleted at %s but it wasn't", name, format_time(due))
                continue
            out[name] = stamp
            recheck = due if recheck is None else min(recheck, due)
        return out, recheck

    async def _update_status(self, pdb: dict[str, Any], healthy: int, desired: int, expected: int,
                             disrupted: dict[str, str]) -> None:
        # expectedCount must be positive: a budget matching no pods yet must not allow disruptions
        allowed = healthy - desired
        if expected <= 0 or allowed <= 0:
            allowed = 0
        st = pdb.get("status") or {}
        gen = pdb["metadata"].get("generation", 1)
        conds = [dict(c) for c in st.get("conditions") or []]
        want_status = "True" if allowed > 0 else "False"
        cur = next((c for c in conds if c.get("type") == "DisruptionAllowed"), None)
        up_to_date = cur is not None and cur.get("status") == want_status and cur.get("observedGeneration") == gen
        if (st.get("currentHealthy") == healthy and st.get("desiredHealthy") == desired
                and st.get("expectedPods") == expected and st.get("disruptionsAllowed") == allowed
                and (st.get("disruptedPods") or {}) == disrupted and st.get("observedGeneration") == gen and up_to_date):
            return
        _set_condition(conds, {"type": "DisruptionAllowed", "status": want_status,
                               "reason": "SufficientPods" if allowed > 0 else "InsufficientPods",
                               "message": "", "observedGeneration": gen})
        status: dict[str, Any] = {"observedGeneration": gen, "currentHealthy": healthy, "desiredHealthy": desired,
                                  "disruptionsAllowed": allowed, "expectedPods": expected, "conditions": conds}
        if disrupted:
            status["disruptedPods"] = disrupted
        await self._write_status(pdb, status)

    async def _fail_safe(self, pdb: dict[str, Any], message: str) -> None:
        st = dict(pdb.get("status") or {})
        conds = [dict(c) for c in st.get("conditions") or []]
        _set_condition(conds, {"type": "DisruptionAllowed", "status": "False", "reason": "SyncFailed",
                               "message": message, "observedGeneration": st.get("observedGeneration", 0)})
        st["disruptionsAllowed"] = 0
        st["conditions"] = conds
        try:
            await self._write_status(pdb, st)
        except StatusError as e:
            log.debug("disruption: fail-safe status write for %s: %s", pdb["metadata"]["name"], e)

    async def _write_status(self, pdb: dict[str, Any], status: dict[str, Any]) -> None:
        body = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                "metadata": dict(pdb["metadata"]), "spec": pdb.get("spec"), "status": status}
        try:
            await self.client.update(GVRS["poddisruptionbudgets"], body, sub="status")
        except StatusError as e:
            if e.code == 404:
                return
            raise


def _set_condition(conds: list[dict[str, Any]], new: dict[str, Any]) -> None:
    """apimeta.SetStatusCondition: lastTransitionTime moves only when the status does."""
    now = format_time(time.time())
    for c in conds:
        if c.get("type") == new["type"]:
            if c.get("status") != new["status"]:
                c["lastTransitionTime"] = now
            c.update({k: v for k, v in new.items() if k != "type"})
            return
    conds.append(dict(new, lastTransitionTime=now))


def _go_selector(sel: Any) -> str:
    """How Go's %v prints a *metav1.LabelSelector (close enough to be recognisable)."""
    if not sel:
        return "nil"
    ml = sel.get("matchLabels") or {}
    me = sel.get("matchExpressions") or []
    labels = " ".join(f"{k}:{v}" for k, v in sorted(ml.items()))
    exprs = " ".join(f"{{{e.get('key')} {e.get('operator')} [{' '.join(e.get('values') or [])}]}}" for e in me)
    return f"&LabelSelector{{MatchLabels:map[string]string{{{labels}}},MatchExpressions:[]LabelSelectorRequirement{{{exprs}}},}}"


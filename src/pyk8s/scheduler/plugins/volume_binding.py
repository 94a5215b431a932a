"""VolumeBinding: PersistentVolumeClaims in scheduling, as upstream's volumebinding plugin (v1.33).

- PreFilter: pods without claims are skipped (the hot path stays free). A missing or deleting
  claim, a claim naming a missing StorageClass, or an unbound claim whose class binds
  ``Immediate`` rejects the pod (UnschedulableAndUnresolvable, upstream's messages). The rest
  are sorted into bound claims (their PV's node affinity restricts nodes) and claims waiting
  for their first consumer (``WaitForFirstConsumer``).
- Filter (vectorised over node rows): a node fails with ``node(s) had volume node affinity
  conflict`` when a bound PV's affinity excludes it, ``node(s) unavailable due to one or more
  pvc(s) bound to non-existent pv(s)`` when a bound PV is gone, and ``node(s) didn't find
  available persistent volumes to bind`` when a waiting claim has neither a matching Available
  static PV reachable from it nor a provisioner that may provision there (the class's
  ``allowedTopologies``, a ``volume.kubernetes.io/selected-node`` already set elsewhere).
- Reserve picks, per waiting claim, the smallest matching static PV reachable from the node
  (kept in an assume set so parallel pods do not take the same PV) or provisioning; Unreserve
  drops that. The API writes and the wait for the claims to bind are asynchronous and run in
  the binding cycle: ``volume_binder.bind_pod_volumes`` (the runner calls it before the Binding).

The caller supplies lookups through ``Handle``: ``pvc``, ``pv``, ``pvs`` and ``storage_class``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...api.quantity import parse_quantity
from ..cache import NodeTable
from ..events import CSI_NODE, NODE, PV, PVC, STORAGE_CLASS, ActionType, ClusterEvent, ClusterEventWithHint
from ..framework import Code, CycleState, FilterResult, Plugin, PreFilterResult, Status
from ..podinfo import PodInfo
from ..selectors import compile_label_selector, compile_node_selector_terms

__all__ = [
    "VolumeBinding", "PodVolumes", "STATE_KEY", "ANN_SELECTED_NODE", "ANN_BIND_COMPLETED", "ANN_BOUND_BY_CONTROLLER",
    "ERR_UNBOUND_IMMEDIATE", "ERR_NODE_CONFLICT", "ERR_BIND_CONFLICT", "ERR_PV_NOT_EXIST", "NO_PROVISIONER",
    "pv_matches_claim", "fully_bound",
]

STATE_KEY = "PreFilterVolumeBinding"
ANN_SELECTED_NODE = "volume.kubernetes.io/selected-node"
ANN_BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
ANN_BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
NO_PROVISIONER = "kubernetes.io/no-provisioner"
WAIT_FOR_FIRST_CONSUMER = "WaitForFirstConsumer"

ERR_UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"
ERR_NODE_CONFLICT = "node(s) had volume node affinity conflict"
ERR_BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
ERR_PV_NOT_EXIST = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"

_NODE_CONFLICT = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (ERR_NODE_CONFLICT,))
_BIND_CONFLICT = Status(Code.UNSCHEDULABLE, (ERR_BIND_CONFLICT,))
_PV_NOT_EXIST = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (ERR_PV_NOT_EXIST,))


def _md(o: Mapping[str, Any]) -> Mapping[str, Any]:
    return o.get("metadata") or {}


def _bytes(q: Any) -> int:
    try:
        return parse_quantity(q).to_int() if q is not None else 0
    except Exception:  # noqa: BLE001 - validation keeps these parseable; an odd one never fits
        return -1


def _affinity_mask(pv: Mapping[str, Any], table: NodeTable) -> np.ndarray:
    """Rows a PV's required node affinity allows (all rows without one)."""
    req = (((pv.get("spec") or {}).get("nodeAffinity") or {}).get("required") or {})
    terms = req.get("nodeSelectorTerms")
    if not terms:
        return np.ones(table.n, dtype=bool)
    m = np.zeros(table.n, dtype=bool)
    for t in compile_node_selector_terms(terms):
        m |= t.mask(table)
    return m


def _topology_mask(sc: Mapping[str, Any], table: NodeTable) -> np.ndarray:
    """Rows a StorageClass's allowedTopologies allows (match label expressions are ANDed per term)."""
    topo = sc.get("allowedTopologies") or ()
    if not topo:
        return np.ones(table.n, dtype=bool)
    terms = [{"matchExpressions": [{"key": e.get("key", ""), "operator": "In", "values": e.get("values") or []}
                                   for e in t.get("matchLabelExpressions") or ()]} for t in topo]
    m = np.zeros(table.n, dtype=bool)
    for t in compile_node_selector_terms(terms):
        m |= t.mask(table)
    return m


def _claim_class(pvc: Mapping[str, Any]) -> str:
    return str((pvc.get("spec") or {}).get("storageClassName") or "")


def pv_matches_claim(pv: Mapping[str, Any], pvc: Mapping[str, Any]) -> bool:
    """Whether an Available (or pre-bound to this claim) PV satisfies the claim, node aside:
    class, access modes, volume mode, capacity and label selector, as upstream's FindMatchingVolume."""
    spec, cspec = pv.get("spec") or {}, pvc.get("spec") or {}
    if _md(pv).get("deletionTimestamp"):
        return False
    ref = spec.get("claimRef")
    if ref:
        cmd = _md(pvc)
        if ref.get("name") != cmd.get("name") or ref.get("namespace") != cmd.get("namespace"):
            return False
        if ref.get("uid") and ref.get("uid") != cmd.get("uid"):
            return False
    elif (pv.get("status") or {}).get("phase", "Available") != "Available":
        return False
    if str(spec.get("storageClassName") or "") != _claim_class(pvc):
        return False
    if (spec.get("volumeMode") or "Filesystem") != (cspec.get("volumeMode") or "Filesystem"):
        return False
    if not set(cspec.get("accessModes") or ()) <= set(spec.get("accessModes") or ()):
        return False
    want = _bytes(((cspec.get("resources") or {}).get("requests") or {}).get("storage"))
    have = _bytes((spec.get("capacity") or {}).get("storage"))
    if want < 0 or have < want:
        return False
    sel = cspec.get("selector")
    return not sel or compile_label_selector(sel).matches(_md(pv).get("labels") or {})


@dataclass(slots=True)
class _Waiting:
    """An unbound claim of a WaitForFirstConsumer class: its candidate static PVs and whether
    the class may provision (and where)."""

    pvc: Mapping[str, Any]
    candidates: list[Mapping[str, Any]]  # matching PVs, smallest first
    provision: np.ndarray | None  # rows where provisioning is possible; None: nowhere


@dataclass(slots=True)
class PodVolumes:
    """What PreFilter found and Reserve decided for one pod (the cycle state entry)."""

    bound_pvs: list[Mapping[str, Any]] = field(default_factory=list)
    missing_pv: bool = False
    waiting: list[_Waiting] = field(default_factory=list)
    # claims bound to a PV by name but not yet fully bound: wait for the binder, nothing to write
    prebound: list[Mapping[str, Any]] = field(default_factory=list)
    # Reserve's decisions: (claim, PV to bind) and claims to provision
    static_bindings: list[tuple[Mapping[str, Any], Mapping[str, Any]]] = field(default_factory=list)
    provisions: list[Mapping[str, Any]] = field(default_factory=list)
    _mask: tuple[int, int, np.ndarray, np.ndarray] | None = None  # (table serial, n, ok, which)

    def clone(self) -> PodVolumes:
        return self  # read-only during filtering; Reserve runs on the one real cycle

    def claims_to_wait_for(self) -> list[Mapping[str, Any]]:
        return [c for c, _ in self.static_bindings] + self.provisions + self.prebound


def fully_bound(pvc: Mapping[str, Any]) -> bool:
    ann = _md(pvc).get("annotations") or {}
    spec = pvc.get("spec") or {}
    return bool(spec.get("volumeName")) and (ANN_BIND_COMPLETED in ann
                                             or (pvc.get("status") or {}).get("phase") == "Bound")


class VolumeBinding(Plugin):
    name = "VolumeBinding"

    def __init__(self, args: Mapping[str, Any], handle: Any) -> None:
        super().__init__(args, handle)
        self.bind_timeout = float((args or {}).get("bindTimeoutSeconds", 600))
        self.assumed_pvs: dict[str, str] = {}  # PV name -> pod key that reserved it

    # -- PreFilter --------------------------------------------------------------------------

    def pre_filter(self, state: CycleState, pod: PodInfo, table: NodeTable) -> tuple[PreFilterResult | None, Status | None]:
        claims = pod.tmpl.pvc_names
        if not claims:
            return None, Status(Code.SKIP)
        h = self.handle
        if h.pvc is None:
            return None, None
        pv_of = h.pv or (lambda name: None)
        pv_list = h.pvs or (lambda: ())
        class_of = h.storage_class or (lambda name: None)
        pvs_cache: list[Mapping[str, Any]] | None = None
        out = PodVolumes()
        for name in claims:
            pvc = h.pvc(pod.namespace, name)
            if pvc is None:
                return None, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (f'persistentvolumeclaim "{name}" not found',))
            if _md(pvc).get("deletionTimestamp"):
                return None, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                                    (f'persistentvolumeclaim "{name}" is being deleted',))
            vol = (pvc.get("spec") or {}).get("volumeName") or ""
            if fully_bound(pvc):
                pv = pv_of(vol)
                if pv is None:
                    out.missing_pv = True
                else:
                    out.bound_pvs.append(pv)
                continue
            cls_name = _claim_class(pvc)
            sc = class_of(cls_name) if cls_name else None
            if cls_name and sc is None:
                return None, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                                    (f'storageclass.storage.k8s.io "{cls_name}" not found',))
            if sc is None or sc.get("volumeBindingMode") != WAIT_FOR_FIRST_CONSUMER:
                return None, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (ERR_UNBOUND_IMMEDIATE,))
            if vol:  # pre-bound by name: that PV's affinity decides, the PV controller binds
                pv = pv_of(vol)
                if pv is None:
                    out.missing_pv = True
                else:
                    out.bound_pvs.append(pv)
                    out.prebound.append(pvc)
                continue
            if pvs_cache is None:
                pvs_cache = list(pv_list())
            # PVs another pod reserved (their claimRef not written yet) are taken, as upstream's assume cache
            cands = sorted((pv for pv in pvs_cache if self.assumed_pvs.get(_md(pv).get("name", ""), pod.key) == pod.key
                            and pv_matches_claim(pv, pvc)),
                           key=lambda pv: _bytes(((pv.get("spec") or {}).get("capacity") or {}).get("storage")))
            provision: np.ndarray | None = None
            prov = str(sc.get("provisioner") or "")
            if prov and prov != NO_PROVISIONER:
                provision = _topology_mask(sc, table)
                sel = (_md(pvc).get("annotations") or {}).get(ANN_SELECTED_NODE)
                if sel:  # provisioning already asked on that node
                    only = np.zeros(table.n, dtype=bool)
                    row = table.index.get(sel)
                    if row is not None:
                        only[row] = provision[row]
                    provision = only
            out.waiting.append(_Waiting(pvc, cands, provision))
        state.write(STATE_KEY, out)
        return None, None

    # -- Filter -----------------------------------------------------------------------------

    def _masks(self, pv: PodVolumes, table: NodeTable) -> tuple[np.ndarray, np.ndarray]:
        if pv._mask is not None and pv._mask[0] == table.serial and pv._mask[1] == table.n:
            return pv._mask[2], pv._mask[3]
        n = table.n
        ok = np.ones(n, dtype=bool)
        which = np.zeros(n, dtype=np.int32)  # 0: node conflict, 1: bind conflict, 2: missing PV
        if pv.missing_pv:
            ok[:] = False
            which[:] = 2
        else:
            for b in pv.bound_pvs:
                ok &= _affinity_mask(b, table)
            for w in pv.waiting:
                can = np.zeros(n, dtype=bool)
                for c in w.candidates:
                    can |= _affinity_mask(c, table)
                if w.provision is not None:
                    can |= w.provision
                which[ok & ~can] = 1
                ok &= can
        pv._mask = (table.serial, n, ok, which)
        return ok, which

    def filter(self, state: CycleState, pod: PodInfo, table: NodeTable, rows: np.ndarray) -> FilterResult | None:
        pv = state.read(STATE_KEY)
        if pv is None or not (pv.bound_pvs or pv.waiting or pv.missing_pv):
            return None
        ok, which = self._masks(pv, table)
        r_ok = ok[rows]
        if r_ok.all():
            return None
        return FilterResult(r_ok, (_NODE_CONFLICT, _BIND_CONFLICT, _PV_NOT_EXIST), which[rows])

    # -- Reserve / Unreserve ----------------------------------------------------------------

    def reserve(self, state: CycleState, pod: PodInfo, node: str) -> Status | None:
        pv = state.read(STATE_KEY)
        if pv is None or not pv.waiting:
            return None
        table = state.table
        row = table.index.get(node) if table is not None else None
        if table is None or row is None:
            return Status(Code.ERROR, (f'node "{node}" not found',))
        pv.static_bindings, pv.provisions = [], []
        taken: list[str] = []
        for w in pv.waiting:
            chosen = None
            for c in w.candidates:
                name = _md(c).get("name", "")
                if self.assumed_pvs.get(name, pod.key) != pod.key or name in taken:
                    continue
                if _affinity_mask(c, table)[row]:
                    chosen = c
                    break
            if chosen is not None:
                taken.append(_md(chosen).get("name", ""))
                pv.static_bindings.append((w.pvc, chosen))
            elif w.provision is not None and w.provision[row]:
                pv.provisions.append(w.pvc)
            else:
                self._release(pod.key)
                return Status(Code.UNSCHEDULABLE, (ERR_BIND_CONFLICT,))
        for name in taken:
            self.assumed_pvs[name] = pod.key
        return None

    def unreserve(self, state: CycleState, pod: PodInfo, node: str) -> None:
        self._release(pod.key)

    def post_bind(self, state: CycleState, pod: PodInfo, node: str) -> None:
        self._release(pod.key)  # bound: the PV informer shows the claimRef from now on

    def _release(self, key: str) -> None:
        for name in [n for n, k in self.assumed_pvs.items() if k == key]:
            del self.assumed_pvs[name]

    def events_to_register(self) -> list[ClusterEventWithHint]:
        add_update = ActionType.ADD | ActionType.UPDATE
        return [
            ClusterEventWithHint(ClusterEvent(PVC, add_update)),
            ClusterEventWithHint(ClusterEvent(PV, add_update)),
            ClusterEventWithHint(ClusterEvent(STORAGE_CLASS, add_update)),
            ClusterEventWithHint(ClusterEvent(CSI_NODE, add_update)),
            ClusterEventWithHint(ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL)),
        ]


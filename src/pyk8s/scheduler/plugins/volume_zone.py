"""VolumeZone: a pod's bound PersistentVolumes labelled with a zone or region keep it on nodes
of that zone or region, as upstream's volumezone plugin.

A PV's ``topology.kubernetes.io/zone`` / ``region`` label (or the deprecated
``failure-domain.beta.kubernetes.io/`` ones, taken as the same key) may list several values
joined by ``__``; a node carrying none of these labels passes (it has no zone to conflict),
otherwise it needs a listed value for every labelled key: ``node(s) had no available volume
zone``. Unbound claims are VolumeBinding's business; pods without claims skip the plugin.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ..cache import NodeTable
from ..events import NODE, PV, PVC, ActionType, ClusterEvent, ClusterEventWithHint
from ..framework import Code, CycleState, FilterResult, Plugin, PreFilterResult, Status
from ..podinfo import PodInfo
from ..selectors import compile_node_selector_terms

__all__ = ["VolumeZone", "ERR_REASON_CONFLICT"]

ERR_REASON_CONFLICT = "node(s) had no available volume zone"
_CONFLICT = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (ERR_REASON_CONFLICT,))
GA_ZONE, GA_REGION = "topology.kubernetes.io/zone", "topology.kubernetes.io/region"
# each key with its equivalent (a beta label on one side matches the GA label on the other)
KEYS = {GA_ZONE: (GA_ZONE, "failure-domain.beta.kubernetes.io/zone"),
        GA_REGION: (GA_REGION, "failure-domain.beta.kubernetes.io/region")}
STATE_KEY = "PreFilterVolumeZone"


def _pv_topology(pv: Mapping[str, Any]) -> dict[str, set[str]]:
    labels = (pv.get("metadata") or {}).get("labels") or {}
    out: dict[str, set[str]] = {}
    for ga, keys in KEYS.items():
        for k in keys:
            if labels.get(k):
                out.setdefault(ga, set()).update(v for v in str(labels[k]).split("__") if v)
    return out


def _in_mask(table: NodeTable, key: str, values: set[str]) -> np.ndarray:
    (term,) = compile_node_selector_terms([{"matchExpressions": [
        {"key": key, "operator": "In", "values": sorted(values)}]}])
    return term.mask(table)


def _has_mask(table: NodeTable, key: str) -> np.ndarray:
    (term,) = compile_node_selector_terms([{"matchExpressions": [{"key": key, "operator": "Exists"}]}])
    return term.mask(table)


class VolumeZone(Plugin):
    name = "VolumeZone"

    def pre_filter(self, state: CycleState, pod: PodInfo, table: NodeTable) -> tuple[PreFilterResult | None, Status | None]:
        h = self.handle
        if not pod.tmpl.pvc_names or h.pvc is None or h.pv is None:
            return None, Status(Code.SKIP)
        want: dict[str, set[str]] = {}
        for name in pod.tmpl.pvc_names:
            pvc = h.pvc(pod.namespace, name)
            vol = ((pvc or {}).get("spec") or {}).get("volumeName")
            pv = h.pv(vol) if vol else None
            if pv is None:
                continue
            for k, vals in _pv_topology(pv).items():
                want[k] = want[k] & vals if k in want else set(vals)
        if not want:
            return None, Status(Code.SKIP)
        state.write(STATE_KEY, want)
        return None, None

    def filter(self, state: CycleState, pod: PodInfo, table: NodeTable, rows: np.ndarray) -> FilterResult | None:
        want: dict[str, set[str]] | None = state.read(STATE_KEY)
        if not want:
            return None
        any_label = np.zeros(table.n, dtype=bool)
        for keys in KEYS.values():
            for k in keys:
                any_label |= _has_mask(table, k)
        ok = np.ones(table.n, dtype=bool)
        for ga, vals in want.items():
            match = np.zeros(table.n, dtype=bool)
            for k in KEYS[ga]:
                match |= _in_mask(table, k, vals)
            ok &= match
        ok |= ~any_label
        r = ok[rows]
        return None if r.all() else FilterResult.uniform(r, _CONFLICT)

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(ClusterEvent(PVC, ActionType.ADD | ActionType.UPDATE)),
            ClusterEventWithHint(ClusterEvent(PV, ActionType.ADD | ActionType.UPDATE)),
            ClusterEventWithHint(ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL)),
        ]

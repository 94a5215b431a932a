"""Builders for scheduler unit tests: wire-form nodes and pods, and one-plugin runs."""

from __future__ import annotations

import itertools
import random
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from pyk8s.scheduler.cache import Cache
from pyk8s.scheduler.framework import CycleState, Diagnosis, Handle, Plugin, Profile, Status
from pyk8s.scheduler.podinfo import pod_info

_uid = itertools.count()


def node(name: str, cpu: str = "4", memory: str = "16Gi", pods: str = "110", labels: Mapping[str, str] | None = None,
         taints: Sequence[Mapping[str, str]] | None = None, unschedulable: bool = False,
         extra: Mapping[str, str] | None = None, images: Sequence[tuple[list[str], int]] | None = None) -> dict[str, Any]:
    alloc = {"cpu": cpu, "memory": memory, "pods": pods, **(extra or {})}
    spec: dict[str, Any] = {}
    if taints:
        spec["taints"] = [dict(t) for t in taints]
    if unschedulable:
        spec["unschedulable"] = True
    status: dict[str, Any] = {"allocatable": alloc, "capacity": dict(alloc)}
    if images:
        status["images"] = [{"names": names, "sizeBytes": size} for names, size in images]
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        "spec": spec, "status": status,
    }


def pod(name: str = "p", namespace: str = "default", requests: Mapping[str, str] | None = None,
        labels: Mapping[str, str] | None = None, node_name: str = "", priority: int | None = None,
        **spec_extra: Any) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "c", "image": spec_extra.pop("image", "busybox")}
    if requests:
        container["resources"] = {"requests": dict(requests)}
    if "ports" in spec_extra:
        container["ports"] = spec_extra.pop("ports")
    spec: dict[str, Any] = {"containers": [container], **spec_extra}
    if node_name:
        spec["nodeName"] = node_name
    if priority is not None:
        spec["priority"] = priority
    md: dict[str, Any] = {"name": name, "namespace": namespace, "uid": f"uid-{name}-{next(_uid)}"}
    if labels:
        md["labels"] = dict(labels)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": md, "spec": spec}


def cluster(nodes: Sequence[Mapping[str, Any]], pods: Sequence[Mapping[str, Any]] = (), **handle_kw: Any) -> Handle:
    """A Handle whose cache holds ``nodes`` and the bound ``pods`` (each with spec.nodeName)."""
    h = Handle(rng=random.Random(0), **handle_kw)
    for n in nodes:
        h.cache.add_node(n)
    for p in pods:
        h.cache.add_pod(p)
    return h


def one_plugin(cls: type[Plugin], handle: Handle, args: Mapping[str, Any] | None = None) -> Profile:
    inst = cls(args or {}, handle)
    points = {pt: [cls.name] for pt in ("preFilter", "filter", "preScore", "score", "postFilter")}
    return Profile("test", {cls.name: inst}, points, {cls.name: 1}, handle)


def run_filter(prof: Profile, p: Mapping[str, Any]) -> tuple[dict[str, Status | None], Status, Diagnosis]:
    """Per node name: None if it passes, else its Status; plus the PreFilter status and diagnosis."""
    table = prof.handle.cache.table
    state = CycleState()
    pi = pod_info(p)
    res, st, with_nodes = prof.run_pre_filter(state, pi, table)
    diag = Diagnosis(table.names, table.n)
    if not st.is_success():
        return {n: st for n in table.names}, st, diag
    rows = np.arange(table.n)
    if res is not None and res.node_names is not None:
        rows = np.array(sorted(table.index[x] for x in res.node_names if x in table.index), dtype=np.int64)
        diag.absent = Status(diag.absent.code, (f"node(s) didn't satisfy plugin(s) [{' '.join(sorted(with_nodes))}]",))
    feasible = set(prof._filter_rows(state, pi, table, rows, diag).tolist())
    out: dict[str, Status | None] = {}
    for i, name in enumerate(table.names):
        if i in feasible:
            out[name] = None
        else:
            sid = int(diag.status_ids[i])
            out[name] = diag.statuses[sid] if sid >= 0 else diag.absent
    return out, st, diag


def feasible(prof: Profile, p: Mapping[str, Any]) -> list[str]:
    out, _, _ = run_filter(prof, p)
    return sorted(n for n, s in out.items() if s is None)


def run_score(prof: Profile, p: Mapping[str, Any], names: Sequence[str] | None = None) -> dict[str, int] | None:
    """Normalised scores of one score plugin for ``names`` (all nodes by default); None if it skipped."""
    table = prof.handle.cache.table
    state = CycleState()
    pi = pod_info(p)
    prof.run_pre_filter(state, pi, table)
    rows = np.array([table.index[n] for n in (names or table.names)], dtype=np.int64)
    pl, _ = prof.score[0]
    if prof.pre_score:
        st = prof.pre_score[0].pre_score(state, pi, table, rows)
        if st is not None and st.is_skip():
            return None
    s = pl.score(state, pi, table, rows)
    if hasattr(pl, "normalize_score"):
        s = pl.normalize_score(state, pi, table, rows, s)
    return {table.names[int(r)]: int(v) for r, v in zip(rows, s, strict=True)}


def fresh_cache(nodes: Sequence[Mapping[str, Any]]) -> Cache:
    c = Cache()
    for n in nodes:
        c.add_node(n)
    return c

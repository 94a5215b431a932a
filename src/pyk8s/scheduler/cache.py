"""The scheduler's node cache: a node table in numpy arrays plus upstream's assume/forget bookkeeping.

``NodeTable`` keeps one row per node: allocatable and requested per resource (cpu milli,
memory, ephemeral-storage, pods, then hugepages-*/extended resources as columns added on
first sight), non-zero cpu/memory requests for scoring, pod counts, the unschedulable flag and
an interned taint-set id; labels are exposed as integer-coded columns built on first use and
kept up to date. Rows are dense (removal swaps the last row in), so a Filter is a numpy
expression over ``[:n]``. The accounted pods are kept as columns too (``PodColumns``: node
row, namespace, template, labels), so "pods matching this selector, per node" is a mask and
a bincount; with pods per node, host ports and image states they serve inter-pod affinity,
topology spread, NodePorts and ImageLocality.

``Cache`` adds upstream's pod state machine (pkg/scheduler/backend/cache): a pod is *assumed*
on a node as soon as the scheduling cycle picks it, binding is *finished* when the bind call
returns, the informer's Add *confirms* it, and ``forget_pod`` undoes an assumption whose
binding failed. Assumed pods whose binding finished expire after ``ttl`` seconds if never
confirmed (ttl 0, upstream's default since v1.27, means never).
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from .podinfo import PodInfo, pod_info, pod_key
from .resources import CPU, EPHEMERAL_STORAGE, MEMORY, PODS, node_allocatable
from .selectors import LabelSelector, Taint, node_taints, parse_go_int

__all__ = ["LabelColumn", "NodeTable", "ResourceMatrix", "Cache", "CacheError"]

_FIXED = (CPU, MEMORY, EPHEMERAL_STORAGE, PODS)
_SERIAL = itertools.count(1)


class CacheError(Exception):
    """An inconsistent cache operation (upstream returns these as errors)."""


class LabelColumn:
    """Integer codes of one label key over all nodes (-1 where the node lacks the label)."""

    __slots__ = ("codes", "values", "index", "_ints")

    def __init__(self, cap: int) -> None:
        self.codes = np.full(cap, -1, dtype=np.int32)
        self.values: list[str] = []
        self.index: dict[str, int] = {}
        self._ints: np.ndarray | None = None

    def code(self, value: str | None) -> int:
        if value is None:
            return -1
        c = self.index.get(value)
        if c is None:
            c = len(self.values)
            self.values.append(value)
            self.index[value] = c
            self._ints = None
        return c

    def int_values(self) -> np.ndarray:
        """Each value parsed as a Go int64 (NaN when it does not parse), for Gt/Lt."""
        if self._ints is None or self._ints.shape[0] != len(self.values):
            out = np.full(len(self.values), np.nan)
            for i, v in enumerate(self.values):
                iv = parse_go_int(v)
                if iv is not None:
                    out[i] = float(iv)
            self._ints = out
        return self._ints


class PodColumns:
    """The pods accounted on nodes, as columns: node row, namespace, template, terminating flag and
    integer-coded labels, so label selectors over all pods are numpy expressions."""

    def __init__(self, capacity: int = 256) -> None:
        self.n = 0
        self._cap = capacity
        self.keys: list[str] = []
        self.infos: list[PodInfo] = []
        self.index: dict[str, int] = {}
        self.row = np.full(capacity, -1, dtype=np.int64)
        self.ns = np.zeros(capacity, dtype=np.int32)
        self.tmpl = np.zeros(capacity, dtype=np.int32)
        self.terminating = np.zeros(capacity, dtype=bool)
        self.ns_values: list[str] = []
        self.ns_index: dict[str, int] = {}
        self._tmpl_ids: dict[Any, int] = {}
        self._tmpl_refs: dict[int, int] = {}
        self._next_tmpl = 0
        self._label_cols: dict[str, LabelColumn] = {}

    def _grow(self) -> None:
        cap = self._cap * 2

        def g(a: np.ndarray, fill: Any = 0) -> np.ndarray:
            b = np.full(cap, fill, dtype=a.dtype)
            b[: a.shape[0]] = a
            return b

        self.row, self.ns, self.tmpl, self.terminating = g(self.row, -1), g(self.ns), g(self.tmpl), g(self.terminating)
        for col in self._label_cols.values():
            col.codes = g(col.codes, -1)
        self._cap = cap

    def template_id(self, tmpl: Any) -> int:
        tid = self._tmpl_ids.get(tmpl)
        return -1 if tid is None else tid

    def add(self, p: PodInfo, row: int) -> None:
        if self.n == self._cap:
            self._grow()
        i = self.n
        self.n += 1
        self.keys.append(p.key)
        self.infos.append(p)
        self.index[p.key] = i
        self.row[i] = row
        nc = self.ns_index.get(p.namespace)
        if nc is None:
            nc = self.ns_index[p.namespace] = len(self.ns_values)
            self.ns_values.append(p.namespace)
        self.ns[i] = nc
        tid = self._tmpl_ids.get(p.tmpl)
        if tid is None:
            tid = self._tmpl_ids[p.tmpl] = self._next_tmpl
            self._next_tmpl += 1
        self._tmpl_refs[tid] = self._tmpl_refs.get(tid, 0) + 1
        self.tmpl[i] = tid
        self.terminating[i] = p.terminating
        labels = p.tmpl.labels
        for key, col in self._label_cols.items():
            col.codes[i] = col.code(labels.get(key))

    def remove(self, key: str) -> None:
        i = self.index.pop(key, None)
        if i is None:
            return
        p = self.infos[i]
        tid = int(self.tmpl[i])
        self._tmpl_refs[tid] -= 1
        if not self._tmpl_refs[tid]:
            del self._tmpl_refs[tid]
            del self._tmpl_ids[p.tmpl]
        last = self.n - 1
        if i != last:
            for arr in (self.row, self.ns, self.tmpl, self.terminating):
                arr[i] = arr[last]
            for col in self._label_cols.values():
                col.codes[i] = col.codes[last]
            self.keys[i] = self.keys[last]
            self.infos[i] = self.infos[last]
            self.index[self.keys[i]] = i
        self.keys.pop()
        self.infos.pop()
        for col in self._label_cols.values():
            col.codes[last] = -1
        self.row[last] = -1
        self.n -= 1

    def label_column(self, key: str) -> LabelColumn:
        col = self._label_cols.get(key)
        if col is None:
            col = LabelColumn(self._cap)
            for i in range(self.n):
                col.codes[i] = col.code(self.infos[i].tmpl.labels.get(key))
            self._label_cols[key] = col
        return col

    def ns_mask(self, namespaces: Iterable[str]) -> np.ndarray:
        codes = [self.ns_index[ns] for ns in namespaces if ns in self.ns_index]
        if not codes:
            return np.zeros(self.n, dtype=bool)
        ns = self.ns[: self.n]
        return ns == codes[0] if len(codes) == 1 else np.isin(ns, codes)

    def mask(self, selector: LabelSelector, namespaces: Iterable[str] | None = None) -> np.ndarray:
        """Pods whose labels match ``selector`` (and namespace is in ``namespaces``)."""
        n = self.n
        if selector.nothing:
            return np.zeros(n, dtype=bool)
        m = np.ones(n, dtype=bool) if namespaces is None else self.ns_mask(namespaces)
        for key, op, values in selector.requirements:
            col = self.label_column(key)
            codes = col.codes[:n]
            if op in ("In", "NotIn"):
                want = [col.index[v] for v in values if v in col.index]
                if not want:
                    hit = np.zeros(n, dtype=bool)
                elif len(want) == 1:
                    hit = codes == want[0]
                else:
                    hit = np.isin(codes, want)
                m &= hit if op == "In" else ~hit
            elif op == "Exists":
                m &= codes >= 0
            elif op == "DoesNotExist":
                m &= codes < 0
            else:
                m[:] = False
        return m


class ResourceMatrix:
    """Amounts per (resource column, node row): ``m[col]`` is a per-node vector, ``m[col, rows]`` a part.

    The fixed resources (cpu, memory, ephemeral-storage, pods) are rows of one dense array. The
    others (hugepages, extended resources) are kept sparse, ``{row: amount}`` per column, and a
    vector is materialised (and then kept current) when a plugin reads it: a cluster may know
    thousands of extended resources, each on a few nodes (scheduler_perf gives every node its
    own), and dense columns would cost resources x nodes memory and a copy per new resource.
    """

    __slots__ = ("dense", "sparse", "row_cols", "_vec", "cap")

    def __init__(self, dense: int, cap: int) -> None:
        self.dense = np.zeros((dense, cap), dtype=np.int64)
        self.sparse: list[dict[int, int]] = []
        self.row_cols: dict[int, set[int]] = {}  # row -> sparse columns with an entry there
        self._vec: dict[int, np.ndarray] = {}
        self.cap = cap

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, tuple):
            col, idx = key
            return self.vector(col)[idx]
        return self.vector(key)

    def vector(self, col: int) -> np.ndarray:
        nd = self.dense.shape[0]
        if col < nd:
            return self.dense[col]
        v = self._vec.get(col)
        if v is None:
            v = np.zeros(self.cap, dtype=np.int64)
            d = self.sparse[col - nd]
            if d:
                v[np.fromiter(d.keys(), np.int64, len(d))] = np.fromiter(d.values(), np.int64, len(d))
            if len(self._vec) >= 64:  # bounded: each vector costs a row of node capacity
                del self._vec[next(iter(self._vec))]
            self._vec[col] = v
        return v

    def add_column(self) -> None:
        self.sparse.append({})

    def grow(self, cap: int) -> None:
        d = np.zeros((self.dense.shape[0], cap), dtype=np.int64)
        d[:, : self.cap] = self.dense
        self.dense = d
        self.cap = cap
        self._vec.clear()

    def _put(self, col: int, row: int, value: int) -> None:
        nd = self.dense.shape[0]
        d = self.sparse[col - nd]
        if value:
            d[row] = value
            self.row_cols.setdefault(row, set()).add(col)
        elif d.pop(row, None) is not None:
            cols = self.row_cols.get(row)
            if cols is not None:
                cols.discard(col)
                if not cols:
                    del self.row_cols[row]
        v = self._vec.get(col)
        if v is not None:
            v[row] = value

    def set(self, col: int, row: int, value: int) -> None:
        if col < self.dense.shape[0]:
            self.dense[col, row] = value
        else:
            self._put(col, row, value)

    def add(self, col: int, row: int, delta: int) -> None:
        nd = self.dense.shape[0]
        if col < nd:
            self.dense[col, row] += delta
        else:
            self._put(col, row, self.sparse[col - nd].get(row, 0) + delta)

    def clear_row(self, row: int) -> None:
        self.dense[:, row] = 0
        for col in list(self.row_cols.get(row, ())):
            self._put(col, row, 0)

    def move_row(self, src: int, dst: int) -> None:
        """Row ``dst`` takes ``src``'s amounts; ``src`` is cleared."""
        self.dense[:, dst] = self.dense[:, src]
        self.dense[:, src] = 0
        nd = self.dense.shape[0]
        for col in list(self.row_cols.get(dst, ())):
            self._put(col, dst, 0)
        for col in list(self.row_cols.get(src, ())):
            value = self.sparse[col - nd][src]
            self._put(col, src, 0)
            self._put(col, dst, value)


class NodeTable:
    """Dense per-node arrays; see the module docstring."""

    def __init__(self, capacity: int = 64) -> None:
        self.serial = next(_SERIAL)  # distinguishes tables in per-template memos
        self.n = 0
        self._cap = capacity
        self.names: list[str] = []
        self.index: dict[str, int] = {}
        self.nodes: list[Mapping[str, Any]] = []
        self.labels: list[Mapping[str, str]] = []
        self.taints: list[tuple[Taint, ...]] = []
        self.res_names: list[str] = list(_FIXED)
        self.res_index: dict[str, int] = {r: i for i, r in enumerate(_FIXED)}
        r = len(_FIXED)
        # Per resource, one vector over all nodes (see ResourceMatrix).
        self.alloc = ResourceMatrix(r, capacity)
        self.req = ResourceMatrix(r, capacity)
        self.nonzero = np.zeros((2, capacity), dtype=np.int64)  # cpu milli, memory bytes
        self.npods = np.zeros(capacity, dtype=np.int64)
        self.unschedulable = np.zeros(capacity, dtype=bool)
        self.taint_set = np.zeros(capacity, dtype=np.int32)
        self.taint_sets: list[tuple[Taint, ...]] = [()]
        self._taint_set_ids: dict[tuple[Taint, ...], int] = {(): 0}
        self.pods: list[dict[str, PodInfo]] = []
        self.images: list[dict[str, int]] = []
        self.image_nodes: dict[str, tuple[int, set[str]]] = {}  # name -> (size of first report, nodes)
        self._label_cols: dict[str, LabelColumn] = {}
        # (protocol, port) -> node name -> ip -> count of pods using it
        self.ports: dict[tuple[str, int], dict[str, dict[str, int]]] = {}
        self.pods_with_affinity: dict[str, PodInfo] = {}
        self.pods_with_required_anti_affinity: dict[str, PodInfo] = {}
        self.affinity_templates: dict[Any, int] = {}  # templates with pod (anti-)affinity -> pods using them
        self.pod_cols = PodColumns()
        self.all_pods: dict[str, PodInfo] = {}
        self._pod_node: dict[str, str] = {}
        # Generations let plugins cache per-template results until the inputs change.
        self.label_gen = 0  # node set, order or labels changed
        self.taint_gen = 0  # node set, order, taints or unschedulable changed
        self.res_gen = 0  # resource columns added
        self.image_gen = 0
        self.pod_gen = 0
        # Per (selector, namespace): live matching pods per node row, kept current as pods are
        # added and removed (PodTopologySpread asks every cycle; recounting meant a pass over
        # all pods). Bounded; dropped when rows move.
        self._match_counts: dict[tuple[LabelSelector, str], np.ndarray] = {}

    # -- sizing -----------------------------------------------------------------------------

    def _grow(self) -> None:
        cap = self._cap * 2

        def g(a: np.ndarray, fill: Any = 0) -> np.ndarray:
            b = np.full(a.shape[:-1] + (cap,), fill, dtype=a.dtype)
            b[..., : a.shape[-1]] = a
            return b

        self._match_counts = {k: g(v) for k, v in self._match_counts.items()}
        self.alloc.grow(cap)
        self.req.grow(cap)
        self.nonzero = g(self.nonzero)
        self.npods, self.unschedulable, self.taint_set = g(self.npods), g(self.unschedulable), g(self.taint_set)
        for col in self._label_cols.values():
            col.codes = g(col.codes, -1)
        self._cap = cap

    def column(self, resource: str) -> int:
        """Column of a resource, added (zero everywhere) on first sight."""
        c = self.res_index.get(resource)
        if c is None:
            c = len(self.res_names)
            self.res_names.append(resource)
            self.res_index[resource] = c
            self.alloc.add_column()
            self.req.add_column()
            self.res_gen += 1
        return c

    # -- nodes ------------------------------------------------------------------------------

    def _intern_taints(self, taints: tuple[Taint, ...]) -> int:
        tid = self._taint_set_ids.get(taints)
        if tid is None:
            tid = len(self.taint_sets)
            self.taint_sets.append(taints)
            self._taint_set_ids[taints] = tid
        return tid

    def set_node(self, node: Mapping[str, Any]) -> int:
        """Add or update a node row; returns its index."""
        name = (node.get("metadata") or {}).get("name", "")
        i = self.index.get(name)
        labels = (node.get("metadata") or {}).get("labels") or {}
        taints = node_taints(node)
        unsched = bool((node.get("spec") or {}).get("unschedulable"))
        if i is None:
            if self.n == self._cap:
                self._grow()
            i = self.n
            self.n += 1
            self.names.append(name)
            self.index[name] = i
            self.nodes.append(node)
            self.labels.append(labels)
            self.taints.append(taints)
            self.pods.append({})
            self.images.append({})
            self.req.clear_row(i)
            self.nonzero[:, i] = 0
            self.npods[i] = 0
            for key, col in self._label_cols.items():
                col.codes[i] = col.code(labels.get(key))
            self.label_gen += 1
            self.taint_gen += 1
        else:
            if labels != self.labels[i]:
                for key, col in self._label_cols.items():
                    col.codes[i] = col.code(labels.get(key))
                self.labels[i] = labels
                self.label_gen += 1
            if taints != self.taints[i] or unsched != bool(self.unschedulable[i]):
                self.taints[i] = taints
                self.taint_gen += 1
            self.nodes[i] = node
        self.unschedulable[i] = unsched
        self.taint_set[i] = self._intern_taints(taints)
        alloc = node_allocatable(node)
        for r in alloc:
            self.column(r)
        self.alloc.clear_row(i)
        for r, v in alloc.items():
            self.alloc.set(self.res_index[r], i, v)
        self._set_images(i, name, node)
        return i

    def _set_images(self, i: int, name: str, node: Mapping[str, Any]) -> None:
        new: dict[str, int] = {}
        for img in ((node.get("status") or {}).get("images")) or ():
            for n in img.get("names") or ():
                new[n] = int(img.get("sizeBytes") or 0)
        old = self.images[i]
        if new == old:
            return
        for n in old:
            if n not in new:
                size, nodes = self.image_nodes[n]
                nodes.discard(name)
                if not nodes:
                    del self.image_nodes[n]
        for n, size in new.items():
            st = self.image_nodes.get(n)
            if st is None:
                self.image_nodes[n] = (size, {name})
            else:
                st[1].add(name)
        self.images[i] = new
        self.image_gen += 1

    def remove_node(self, name: str) -> dict[str, PodInfo]:
        """Drop a node row (swap-remove); returns the pods that were accounted on it."""
        i = self.index.pop(name)
        self._match_counts.clear()  # rows move
        pods = self.pods[i]
        for p in list(pods.values()):
            self._unindex_pod(p, name)
        self._set_images(i, name, {})
        last = self.n - 1
        if i != last:
            self.alloc.move_row(last, i)
            self.req.move_row(last, i)
            for arr in (self.nonzero, self.npods, self.unschedulable, self.taint_set):
                arr[..., i] = arr[..., last]
            for col in self._label_cols.values():
                col.codes[i] = col.codes[last]
            lists: tuple[list[Any], ...] = (self.names, self.nodes, self.labels, self.taints, self.pods, self.images)
            for lst in lists:
                lst[i] = lst[last]
            self.index[self.names[i]] = i
            for p in self.pods[i].values():  # the moved node's pods follow its row
                self.pod_cols.row[self.pod_cols.index[p.key]] = i
        else:
            self.alloc.clear_row(last)
            self.req.clear_row(last)
        for lst2 in (self.names, self.nodes, self.labels, self.taints, self.pods, self.images):
            lst2.pop()
        for col in self._label_cols.values():
            col.codes[last] = -1
        self.n -= 1
        self.label_gen += 1
        self.taint_gen += 1
        self.pod_gen += 1
        return pods

    def take(self, vec: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """``vec[rows]`` for a per-node vector; a view when ``rows`` is every node (rows are unique)."""
        if rows.size == self.n:
            return vec[: self.n]
        return vec[rows]

    # -- labels -----------------------------------------------------------------------------

    def label_column(self, key: str) -> LabelColumn:
        col = self._label_cols.get(key)
        if col is None:
            col = LabelColumn(self._cap)
            for i in range(self.n):
                col.codes[i] = col.code(self.labels[i].get(key))
            self._label_cols[key] = col
        return col

    def has_labels_mask(self, keys: Iterable[str]) -> np.ndarray:
        m = np.ones(self.n, dtype=bool)
        for k in keys:
            m &= self.label_column(k).codes[: self.n] >= 0
        return m

    # -- pods -------------------------------------------------------------------------------

    def add_pod(self, i: int, p: PodInfo) -> None:
        """Account a pod on node row i (requests, counts, ports, indexes)."""
        name = self.names[i]
        self.pods[i][p.key] = p
        t = p.tmpl
        for r, v in t.requests.items():
            c = self.res_index.get(r)
            if c is None:
                c = self.column(r)
            self.req.add(c, i, v)
        self.nonzero[0, i] += t.nonzero_cpu
        self.nonzero[1, i] += t.nonzero_memory
        self.npods[i] += 1
        for ip, proto, port in t.host_ports:
            by_node = self.ports.setdefault((proto, port), {})
            ips = by_node.setdefault(name, {})
            ips[ip] = ips.get(ip, 0) + 1
        self._index_pod(p, name, i)
        self._count_match(i, p, 1)
        self.pod_gen += 1

    def remove_pod(self, i: int, p: PodInfo) -> None:
        name = self.names[i]
        stored = self.pods[i].pop(p.key, None)
        if stored is None:
            return
        self._count_match(i, stored, -1)
        t = p.tmpl
        for r, v in t.requests.items():
            self.req.add(self.res_index[r], i, -v)
        self.nonzero[0, i] -= t.nonzero_cpu
        self.nonzero[1, i] -= t.nonzero_memory
        self.npods[i] -= 1
        self._unindex_pod(p, name)
        self.pod_gen += 1

    def _index_pod(self, p: PodInfo, node: str, row: int) -> None:
        self.all_pods[p.key] = p
        self._pod_node[p.key] = node
        if p.tmpl.has_affinity:
            self.pods_with_affinity[p.key] = p
            self.affinity_templates[p.tmpl] = self.affinity_templates.get(p.tmpl, 0) + 1
        if p.tmpl.required_anti_affinity:
            self.pods_with_required_anti_affinity[p.key] = p
        self.pod_cols.add(p, row)

    def _unindex_pod(self, p: PodInfo, node: str) -> None:
        self.all_pods.pop(p.key, None)
        self._pod_node.pop(p.key, None)
        if self.pods_with_affinity.pop(p.key, None) is not None:
            left = self.affinity_templates[p.tmpl] - 1
            if left:
                self.affinity_templates[p.tmpl] = left
            else:
                del self.affinity_templates[p.tmpl]
        self.pods_with_required_anti_affinity.pop(p.key, None)
        self.pod_cols.remove(p.key)
        for ip, proto, port in p.tmpl.host_ports:
            by_node = self.ports.get((proto, port))
            if not by_node or node not in by_node:
                continue
            ips = by_node[node]
            ips[ip] -= 1
            if ips[ip] <= 0:
                del ips[ip]
            if not ips:
                del by_node[node]
            if not by_node:
                del self.ports[(proto, port)]

    def node_of(self, p: PodInfo) -> int:
        """Row of the node a pod is accounted on (-1 if none)."""
        name = self._pod_node.get(p.key)
        return -1 if name is None else self.index.get(name, -1)

    def pods_matching(self, selector: LabelSelector, namespaces: Iterable[str] | None = None) -> list[PodInfo]:
        """Pods whose labels match ``selector`` (and namespace is in ``namespaces``)."""
        pc = self.pod_cols
        return [pc.infos[i] for i in np.flatnonzero(pc.mask(selector, namespaces))]

    def rows_of_matching(self, selector: LabelSelector, namespaces: Iterable[str] | None = None,
                         skip_terminating: bool = False) -> np.ndarray:
        """Node rows of the matching pods (one entry per pod)."""
        pc = self.pod_cols
        m = pc.mask(selector, namespaces)
        if skip_terminating:
            m &= ~pc.terminating[: pc.n]
        return pc.row[: pc.n][m]

    def count_matching_per_node(self, selector: LabelSelector, namespace: str, skip_terminating: bool = True) -> np.ndarray:
        """Per node row, how many pods in ``namespace`` match ``selector`` (upstream countPodsMatchSelector:
        terminating pods do not count). Read-only: with ``skip_terminating`` it is a kept count."""
        if not skip_terminating:
            return np.bincount(self.rows_of_matching(selector, (namespace,)), minlength=self.n).astype(np.int64)
        key = (selector, namespace)
        v = self._match_counts.get(key)
        if v is None:
            v = np.zeros(self._cap, dtype=np.int64)
            v[: self.n] = np.bincount(self.rows_of_matching(selector, (namespace,), True), minlength=self.n)
            if len(self._match_counts) >= 16:
                del self._match_counts[next(iter(self._match_counts))]
            self._match_counts[key] = v
        return v[: self.n]

    def _count_match(self, row: int, p: PodInfo, delta: int) -> None:
        if p.terminating:
            return
        for (sel, ns), v in self._match_counts.items():
            if ns == p.namespace and sel.matches(p.tmpl.labels):
                v[row] += delta


@dataclass(slots=True)
class _PodState:
    info: PodInfo
    node: str
    assumed: bool
    binding_finished: bool = False
    deadline: float | None = None


class Cache:
    """Upstream's scheduler cache over a ``NodeTable`` (see module docstring)."""

    def __init__(self, ttl: float = 0.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.table = NodeTable()
        self.ttl = ttl
        self.clock = clock
        self._states: dict[str, _PodState] = {}
        # Pods bound to nodes the cache has not seen (yet, or any more), by node name.
        self._orphans: dict[str, dict[str, PodInfo]] = {}

    # -- nodes ------------------------------------------------------------------------------

    def add_node(self, node: Mapping[str, Any]) -> None:
        t = self.table
        name = (node.get("metadata") or {}).get("name", "")
        new = name not in t.index
        i = t.set_node(node)
        if new:
            for p in self._orphans.pop(name, {}).values():
                t.add_pod(i, p)

    update_node = add_node

    def remove_node(self, node: Mapping[str, Any] | str) -> None:
        name = node if isinstance(node, str) else (node.get("metadata") or {}).get("name", "")
        if name not in self.table.index:
            return
        pods = self.table.remove_node(name)
        if pods:
            self._orphans[name] = dict(pods)

    def node_names(self) -> list[str]:
        return list(self.table.names)

    # -- pods -------------------------------------------------------------------------------

    def _place(self, p: PodInfo, node: str) -> None:
        i = self.table.index.get(node)
        if i is None:
            self._orphans.setdefault(node, {})[p.key] = p
        else:
            self.table.add_pod(i, p)

    def _unplace(self, p: PodInfo, node: str) -> None:
        i = self.table.index.get(node)
        if i is None:
            d = self._orphans.get(node)
            if d is not None:
                d.pop(p.key, None)
                if not d:
                    del self._orphans[node]
        else:
            self.table.remove_pod(i, p)

    def assume_pod(self, pod: Mapping[str, Any] | PodInfo, node_name: str | None = None) -> PodInfo:
        """Account a pod on the node the scheduling cycle chose, before it is bound."""
        p = pod_info(pod)
        node = node_name or p.node_name
        if not node:
            raise CacheError(f"pod {p.key} has no node to be assumed on")
        if p.key in self._states:
            raise CacheError(f"pod {p.key}({p.namespace}/{p.name}) is in the cache, so can't be assumed")
        if node != p.node_name:
            p = PodInfo(p.pod, p.key, p.name, p.namespace, p.tmpl, node, p.nominated_node_name, p.terminating,
                        p.start_time)
        self._place(p, node)
        self._states[p.key] = _PodState(p, node, assumed=True)
        return p

    def finish_binding(self, pod: Mapping[str, Any] | PodInfo, now: float | None = None) -> None:
        st = self._states.get(pod_key(pod.pod if isinstance(pod, PodInfo) else pod))
        if st is None or not st.assumed:
            return
        st.binding_finished = True
        if self.ttl > 0:
            st.deadline = (self.clock() if now is None else now) + self.ttl

    def forget_pod(self, pod: Mapping[str, Any] | PodInfo) -> None:
        key = pod.key if isinstance(pod, PodInfo) else pod_key(pod)
        st = self._states.get(key)
        if st is None:
            return
        if not st.assumed:
            raise CacheError(f"pod {key} wasn't assumed so cannot be forgotten")
        node = pod.node_name if isinstance(pod, PodInfo) else ((pod.get("spec") or {}).get("nodeName") or "")
        if node and node != st.node:
            raise CacheError(f"pod {key} was assumed on {st.node} but assigned to {node}")
        self._unplace(st.info, st.node)
        del self._states[key]

    def add_pod(self, pod: Mapping[str, Any] | PodInfo) -> None:
        """Informer Add of a bound pod: confirms an assumed pod, else starts accounting it."""
        p = pod_info(pod)
        if not p.node_name:
            return
        st = self._states.get(p.key)
        if st is not None and st.assumed:
            # Confirmed: account the informer's object (it may have been bound elsewhere).
            self._unplace(st.info, st.node)
            self._place(p, p.node_name)
            self._states[p.key] = _PodState(p, p.node_name, assumed=False)
            return
        if st is not None:
            self.update_pod(st.info, p)
            return
        self._place(p, p.node_name)
        self._states[p.key] = _PodState(p, p.node_name, assumed=False)

    def update_pod(self, old: Mapping[str, Any] | PodInfo, new: Mapping[str, Any] | PodInfo) -> None:
        n = pod_info(new)
        st = self._states.get(n.key)
        if st is None:
            self.add_pod(n)
            return
        if st.assumed:
            # An update of an assumed pod means the informer saw it; treat it as confirmation.
            self.add_pod(n)
            return
        self._unplace(st.info, st.node)
        if n.node_name:
            self._place(n, n.node_name)
            self._states[n.key] = _PodState(n, n.node_name, assumed=False)
        else:
            del self._states[n.key]

    def remove_pod(self, pod: Mapping[str, Any] | PodInfo) -> None:
        key = pod.key if isinstance(pod, PodInfo) else pod_key(pod)
        st = self._states.pop(key, None)
        if st is not None:
            self._unplace(st.info, st.node)

    def is_assumed_pod(self, pod: Mapping[str, Any] | PodInfo) -> bool:
        key = pod.key if isinstance(pod, PodInfo) else pod_key(pod)
        st = self._states.get(key)
        return st is not None and st.assumed

    def get_pod(self, pod: Mapping[str, Any] | PodInfo | str) -> PodInfo | None:
        key = pod if isinstance(pod, str) else (pod.key if isinstance(pod, PodInfo) else pod_key(pod))
        st = self._states.get(key)
        return st.info if st is not None else None

    def pod_node(self, pod: Mapping[str, Any] | PodInfo | str) -> str | None:
        key = pod if isinstance(pod, str) else (pod.key if isinstance(pod, PodInfo) else pod_key(pod))
        st = self._states.get(key)
        return st.node if st is not None else None

    def cleanup_assumed_pods(self, now: float | None = None) -> list[PodInfo]:
        """Expire assumed pods whose binding finished more than ttl ago; returns them."""
        now = self.clock() if now is None else now
        expired = [
            st for st in self._states.values()
            if st.assumed and st.binding_finished and st.deadline is not None and now > st.deadline
        ]
        for st in expired:
            self._unplace(st.info, st.node)
            del self._states[st.info.key]
        return [st.info for st in expired]

    def pod_count(self) -> int:
        return len(self._states)

    def assumed_count(self) -> int:
        return sum(1 for st in self._states.values() if st.assumed)

    def node_count(self) -> int:
        return self.table.n

"""Resource-allocation scoring shared by NodeResourcesFit and NodeResourcesBalancedAllocation
(upstream noderesources/resource_allocation.go), vectorised over node rows."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..cache import NodeTable
from ..podinfo import PodInfo
from ..resources import CPU, EPHEMERAL_STORAGE, MEMORY, is_scalar_resource_name

DEFAULT_RESOURCES: tuple[tuple[str, int], ...] = ((CPU, 1), (MEMORY, 1))


def parse_resource_specs(specs: Sequence[Mapping[str, Any]] | None) -> tuple[tuple[str, int], ...]:
    if not specs:
        return DEFAULT_RESOURCES
    return tuple((s["name"], int(s.get("weight") or 1)) for s in specs)


def pod_request_list(pod: PodInfo, resources: Sequence[tuple[str, int]], use_requested: bool) -> list[int]:
    """The pod's request per scored resource; scoring assumes 100m/200Mi for containers that set none."""
    src = pod.tmpl.requests if use_requested else pod.tmpl.nonzero_requests
    return [src.get(r, 0) for r, _ in resources]


def allocatable_and_requested(table: NodeTable, rows: np.ndarray, resource: str, pod_request: int,
                              use_requested: bool) -> tuple[np.ndarray, np.ndarray]:
    """(allocatable, requested incl. the pod) per row; zeros mean 'do not score this resource'."""
    take = table.take
    if resource in (CPU, MEMORY):
        col = table.res_index[resource]
        if use_requested:
            used = take(table.req[col], rows)
        else:
            used = take(table.nonzero[0 if resource == CPU else 1], rows)
        return take(table.alloc[col], rows), used + pod_request
    if resource == EPHEMERAL_STORAGE:
        col = table.res_index[resource]
        return take(table.alloc[col], rows), take(table.req[col], rows) + pod_request
    zeros = np.zeros(rows.size, dtype=np.int64)
    if not is_scalar_resource_name(resource) or pod_request == 0:
        return zeros, zeros  # an extended resource the pod does not request is not scored
    scol = table.res_index.get(resource)
    if scol is None:
        return zeros, zeros
    return take(table.alloc[scol], rows), take(table.req[scol], rows) + pod_request


def cpu_memory(table: NodeTable, rows: np.ndarray, pod: PodInfo,
               use_requested: bool) -> tuple[np.ndarray, np.ndarray] | None:
    """(allocatable, requested incl. the pod) as 2 x rows arrays, cpu then memory, for the default
    scored resources; None when some node lacks one of them (then each is scored on its own).

    Both come from the dense fixed-resource arrays in one indexing each, where ``gather`` makes
    a dozen numpy calls; the same integers either way."""
    alloc = table.alloc.dense[:2].take(rows, axis=1)  # take(): 2-D fancy indexing is slower
    if not alloc.all():
        return None
    used = (table.req.dense[:2] if use_requested else table.nonzero).take(rows, axis=1)
    t = pod.tmpl
    src = t.requests if use_requested else t.nonzero_requests
    return alloc, used + np.array([[src.get(CPU, 0)], [src.get(MEMORY, 0)]], dtype=np.int64)


def gather(table: NodeTable, rows: np.ndarray, pod: PodInfo, resources: Sequence[tuple[str, int]],
           use_requested: bool) -> tuple[list[np.ndarray], list[np.ndarray]]:
    req_list = pod_request_list(pod, resources, use_requested)
    allocs, reqs = [], []
    for (r, _), q in zip(resources, req_list, strict=True):
        a, u = allocatable_and_requested(table, rows, r, q, use_requested)
        allocs.append(a)
        reqs.append(u)
    return allocs, reqs


def least_allocated(allocs: list[np.ndarray], reqs: list[np.ndarray], weights: Sequence[int]) -> np.ndarray:
    if all(bool(a.all()) for a in allocs):  # common case: every node has every scored resource
        num = np.zeros(allocs[0].shape, dtype=np.int64)
        for a, u, w in zip(allocs, reqs, weights, strict=True):
            s = np.maximum(a - u, 0) * 100 // a  # requested beyond allocatable scores 0
            num += s * w if w != 1 else s
        return num // sum(weights)
    num = np.zeros(allocs[0].shape, dtype=np.int64)
    wsum = np.zeros(allocs[0].shape, dtype=np.int64)
    for a, u, w in zip(allocs, reqs, weights, strict=True):
        valid = a != 0
        safe = np.where(valid, a, 1)
        s = np.where(u > a, 0, (safe - u) * 100 // safe)
        num += np.where(valid, s * w, 0)
        wsum += np.where(valid, w, 0)
    return np.where(wsum == 0, 0, num // np.where(wsum == 0, 1, wsum))


def most_allocated(allocs: list[np.ndarray], reqs: list[np.ndarray], weights: Sequence[int]) -> np.ndarray:
    num = np.zeros(allocs[0].shape, dtype=np.int64)
    wsum = np.zeros(allocs[0].shape, dtype=np.int64)
    for a, u, w in zip(allocs, reqs, weights, strict=True):
        valid = a != 0
        safe = np.where(valid, a, 1)
        s = np.minimum(u, a) * 100 // safe  # requested beyond capacity counts as full
        num += np.where(valid, s * w, 0)
        wsum += np.where(valid, w, 0)
    return np.where(wsum == 0, 0, num // np.where(wsum == 0, 1, wsum))


def broken_linear(shape: Sequence[tuple[int, int]], p: np.ndarray) -> np.ndarray:
    """helper.BuildBrokenLinearFunction over int64 utilisations (Go truncating division)."""
    out = np.full(p.shape, shape[-1][1], dtype=np.int64)
    done = np.zeros(p.shape, dtype=bool)
    for i, (util, score) in enumerate(shape):
        hit = (p <= util) & ~done
        if i == 0:
            val = np.full(p.shape, score, dtype=np.int64)
        else:
            pu, ps = shape[i - 1]
            num = (score - ps) * (p - pu)
            den = util - pu
            q = np.abs(num) // den
            val = ps + np.where(num < 0, -q, q)
        out = np.where(hit, val, out)
        done |= hit
    return out


def requested_to_capacity_ratio(allocs: list[np.ndarray], reqs: list[np.ndarray], weights: Sequence[int],
                                shape: Sequence[tuple[int, int]]) -> np.ndarray:
    num = np.zeros(allocs[0].shape, dtype=np.int64)
    wsum = np.zeros(allocs[0].shape, dtype=np.int64)
    full = broken_linear(shape, np.full(1, 100, dtype=np.int64))[0]
    for a, u, w in zip(allocs, reqs, weights, strict=True):
        valid = a != 0
        safe = np.where(valid, a, 1)
        s = np.where(u > a, full, broken_linear(shape, u * 100 // safe))
        use = valid & (s > 0)
        num += np.where(use, s * w, 0)
        wsum += np.where(use, w, 0)
    ratio = num / np.where(wsum == 0, 1, wsum)
    rounded = np.floor(ratio) + ((ratio - np.floor(ratio)) >= 0.5)
    return np.where(wsum == 0, 0, rounded).astype(np.int64)


def balanced(allocs: list[np.ndarray], reqs: list[np.ndarray]) -> np.ndarray:
    """(1 - std of the requested fractions) * 100, truncated, as balancedResourceScorer."""
    k = len(allocs)
    if k == 2 and bool(allocs[0].all()) and bool(allocs[1].all()):  # the usual cpu+memory case
        f0 = np.minimum(reqs[0] / allocs[0], 1.0)
        f1 = np.minimum(reqs[1] / allocs[1], 1.0)
        return ((1 - np.abs((f0 - f1) / 2)) * 100).astype(np.int64)
    a = np.stack(allocs, axis=1).astype(np.float64)
    u = np.stack(reqs, axis=1).astype(np.float64)
    valid = a != 0
    f = np.minimum(u / np.where(valid, a, 1.0), 1.0)
    cnt = valid.sum(axis=1)
    std = np.zeros(a.shape[0])
    two = cnt == 2
    if two.any():
        first = np.argmax(valid, axis=1)
        second = k - 1 - np.argmax(valid[:, ::-1], axis=1)
        rows = np.arange(a.shape[0])
        std = np.where(two, np.abs((f[rows, first] - f[rows, second]) / 2), std)
    many = cnt > 2
    if many.any():
        fz = np.where(valid, f, 0.0)
        total = np.zeros(a.shape[0])
        for j in range(k):  # sequential sums, as Go's loop
            total = total + fz[:, j]
        mean = total / np.where(many, cnt, 1)
        ss = np.zeros(a.shape[0])
        for j in range(k):
            ss = ss + np.where(valid[:, j], (f[:, j] - mean) * (f[:, j] - mean), 0.0)
        std = np.where(many, np.sqrt(ss / np.where(many, cnt, 1)), std)
    return ((1 - std) * 100).astype(np.int64)

"""`pyk8s gpu inspect`: gpu-mem allocated and total per node and per GPU, as `kubectl inspect gpushare`.

Pure rendering from Node and Pod objects as the API returns them: a node counts when its
capacity has aliyun.com/gpu-count and aliyun.com/gpu-mem; a pod holds its share on the GPU
its ALIYUN_COM_GPU_MEM_IDX annotation names while it is bound and not finished.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .share import assigned_index, is_active, node_gpus, pod_gpu_mem

__all__ = ["NodeGPUs", "collect", "render", "render_details"]


@dataclass
class NodeGPUs:
    name: str
    address: str
    count: int
    per_gpu: int
    used: list[int]
    # (namespace, name, GPU index, GiB) per pod holding a share here
    pods: list[tuple[str, str, int, int]] = field(default_factory=list)

    @property
    def total(self) -> int:
        return self.count * self.per_gpu

    @property
    def allocated(self) -> int:
        return sum(self.used)


def _address(node: Mapping[str, Any]) -> str:
    for a in (node.get("status") or {}).get("addresses") or ():
        if a.get("type") == "InternalIP":
            return str(a.get("address", ""))
    return ""


def collect(nodes: Iterable[Mapping[str, Any]], pods: Iterable[Mapping[str, Any]]) -> list[NodeGPUs]:
    out: dict[str, NodeGPUs] = {}
    for n in nodes:
        count, per_gpu = node_gpus(n)
        if count:
            name = (n.get("metadata") or {}).get("name", "")
            out[name] = NodeGPUs(name, _address(n), count, per_gpu, [0] * count)
    for p in pods:
        if not is_active(p):
            continue
        ng = out.get((p.get("spec") or {}).get("nodeName", ""))
        gib = pod_gpu_mem(p)
        idx = assigned_index(p)
        if ng is None or gib <= 0 or idx is None or idx >= ng.count:
            continue
        ng.used[idx] += gib
        md = p.get("metadata") or {}
        ng.pods.append((md.get("namespace", ""), md.get("name", ""), idx, gib))
    return sorted(out.values(), key=lambda g: g.name)


def _table(rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]


def _pct(a: int, t: int) -> str:
    return f"{a * 100 // t}%" if t else "0%"


def render(gpus: list[NodeGPUs]) -> str:
    """The summary: a row per node, a column per GPU index, then the cluster's total."""
    if not gpus:
        return "No node with shared GPUs (aliyun.com/gpu-mem) found.\n"
    width = max(g.count for g in gpus)
    head = ["NAME", "IPADDRESS"] + [f"GPU{i}(Allocated/Total)" for i in range(width)] + ["GPU Memory(GiB)"]
    rows = [head]
    for g in gpus:
        cells = [f"{g.used[i]}/{g.per_gpu}" if i < g.count else "" for i in range(width)]
        rows.append([g.name, g.address, *cells, f"{g.allocated}/{g.total}"])
    alloc, total = sum(g.allocated for g in gpus), sum(g.total for g in gpus)
    lines = _table(rows)
    lines += ["-" * max(len(x) for x in lines), "Allocated/Total GPU Memory In Cluster:",
              f"{alloc}/{total} ({_pct(alloc, total)})"]
    return "\n".join(lines) + "\n"


def render_details(gpus: list[NodeGPUs]) -> str:
    """`-d`: per node, which pods hold which share of which GPU."""
    if not gpus:
        return render(gpus)
    out: list[str] = []
    for g in gpus:
        out += [f"NAME:       {g.name}", f"IPADDRESS:  {g.address}", ""]
        rows = [["NAME", "NAMESPACE"] + [f"GPU{i}(Allocated)" for i in range(g.count)]]
        for ns, name, idx, gib in sorted(g.pods, key=lambda t: (t[2], t[0], t[1])):
            rows.append([name, ns] + [str(gib) if i == idx else "0" for i in range(g.count)])
        rows.append(["Allocated:", ""] + [str(u) for u in g.used])
        rows.append(["Total:", ""] + [str(g.per_gpu)] * g.count)
        out += _table(rows)
        out += [f"Allocated/Total GPU Memory: {g.allocated}/{g.total} ({_pct(g.allocated, g.total)})", "-" * 60]
    alloc, total = sum(g.allocated for g in gpus), sum(g.total for g in gpus)
    out += ["Allocated/Total GPU Memory In Cluster:", f"{alloc}/{total} ({_pct(alloc, total)})"]
    return "\n".join(out) + "\n"

"""PodTopologySpread's Filter (counts per domain from the matching pods' rows, skew judged once per
domain, node-side eligibility memoised per template) against a per-node brute force of upstream's
rules, on random clusters; and after PreFilter extensions add or remove pods (preemption's path)."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

from pyk8s.scheduler.framework import Code, CycleState, Diagnosis
from pyk8s.scheduler.plugins.pod_topology_spread import (
    ERR_REASON_CONSTRAINTS_NOT_MATCH,
    ERR_REASON_NODE_LABEL_NOT_MATCH,
    PodTopologySpread,
)
from pyk8s.scheduler.podinfo import pod_info

from .scheduler._fixtures import cluster, node, one_plugin, pod, run_filter

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
RACK = "example.com/rack"


def brute_force(nodes: list[dict[str, Any]], bound: list[dict[str, Any]], p: dict[str, Any]) -> dict[str, str | None]:
    """Per node: None if it passes, else the failure reason, straight from upstream's definition."""
    spec = p["spec"]
    constraints = [c for c in spec["topologySpreadConstraints"] if c["whenUnsatisfiable"] == "DoNotSchedule"]
    keys = [c["topologyKey"] for c in constraints]
    sel_of = {"nodeSelector": spec.get("nodeSelector") or {}}
    tolerates = {t["key"] for t in spec.get("tolerations") or ()}

    def labels(n: dict[str, Any]) -> dict[str, str]:
        return n["metadata"]["labels"]

    def eligible(n: dict[str, Any], c: dict[str, Any]) -> bool:
        if not all(k in labels(n) for k in keys):
            return False
        if c.get("nodeAffinityPolicy", "Honor") == "Honor" and any(
                labels(n).get(k) != v for k, v in sel_of["nodeSelector"].items()):
            return False
        taints = [t for t in n["spec"].get("taints") or () if t["effect"] in ("NoSchedule", "NoExecute")]
        return not (c.get("nodeTaintsPolicy", "Ignore") == "Honor" and any(t["key"] not in tolerates for t in taints))

    def matches(c: dict[str, Any], q: dict[str, Any]) -> bool:
        want = c["labelSelector"]["matchLabels"]
        md = q["metadata"]
        return (md["namespace"] == p["metadata"]["namespace"] and not md.get("deletionTimestamp")
                and all((md.get("labels") or {}).get(k) == v for k, v in want.items()))

    by_name = {n["metadata"]["name"]: n for n in nodes}
    out: dict[str, str | None] = {}
    for n in nodes:
        reason = None
        for c in constraints:
            key = c["topologyKey"]
            if key not in labels(n):
                reason = ERR_REASON_NODE_LABEL_NOT_MATCH
                break
            domains = {labels(m)[key] for m in nodes if eligible(m, c)}
            counts = dict.fromkeys(domains, 0)
            for q in bound:
                host = by_name[q["spec"]["nodeName"]]
                if eligible(host, c) and matches(c, q):
                    counts[labels(host)[key]] += 1
            lowest = min(counts.values()) if counts else 2**31 - 1
            if len(domains) < c.get("minDomains", 1):
                lowest = 0
            self_match = all((p["metadata"].get("labels") or {}).get(k) == v
                             for k, v in c["labelSelector"]["matchLabels"].items())
            if counts.get(labels(n)[key], 0) + self_match - lowest > c["maxSkew"]:
                reason = ERR_REASON_CONSTRAINTS_NOT_MATCH
                break
        out[n["metadata"]["name"]] = reason
    return out


def random_case(rng: random.Random) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    nodes = []
    for i in range(rng.randrange(5, 40)):
        lab = {}
        if rng.random() < 0.9:
            lab[ZONE] = f"z{rng.randrange(4)}"
        if rng.random() < 0.7:
            lab[RACK] = f"r{rng.randrange(6)}"
        if rng.random() < 0.5:
            lab["disk"] = "ssd"
        taints = [{"key": "gpu", "value": "y", "effect": "NoSchedule"}] if rng.random() < 0.2 else None
        nodes.append(node(f"n{i:02d}", labels=lab, taints=taints))
    bound = []
    for i in range(rng.randrange(60)):
        q = pod(f"b{i}", namespace=rng.choice(["default", "other"]), labels={"app": rng.choice(["web", "db"])},
                node_name=rng.choice(nodes)["metadata"]["name"])
        if rng.random() < 0.1:
            q["metadata"]["deletionTimestamp"] = "2025-01-01T00:00:00Z"
        bound.append(q)
    pods = []
    for i in range(8):
        cs = []
        for key in rng.sample([ZONE, HOST, RACK], rng.randrange(1, 3)):
            c: dict[str, Any] = {"maxSkew": rng.choice([1, 2]), "topologyKey": key,
                                 "whenUnsatisfiable": rng.choice(["DoNotSchedule", "DoNotSchedule", "ScheduleAnyway"]),
                                 "labelSelector": {"matchLabels": {"app": "web"}}}
            if rng.random() < 0.3:
                c["minDomains"] = rng.choice([2, 5])
            if rng.random() < 0.3:
                c["nodeAffinityPolicy"] = "Ignore"
            if rng.random() < 0.3:
                c["nodeTaintsPolicy"] = "Honor"
            cs.append(c)
        if all(c["whenUnsatisfiable"] != "DoNotSchedule" for c in cs):
            cs[0]["whenUnsatisfiable"] = "DoNotSchedule"
        extra: dict[str, Any] = {}
        if rng.random() < 0.3:
            extra["nodeSelector"] = {"disk": "ssd"}
        if rng.random() < 0.3:
            extra["tolerations"] = [{"key": "gpu", "operator": "Exists"}]
        pods.append(pod(f"p{i}", labels={"app": rng.choice(["web", "db"])}, topologySpreadConstraints=cs, **extra))
    return nodes, bound, pods


def _reasons(out: dict[str, Any]) -> dict[str, str | None]:
    return {n: (None if s is None else s.reasons[0]) for n, s in out.items()}


@pytest.mark.parametrize("seed", range(60))
def test_filter_matches_brute_force(seed: int) -> None:
    nodes, bound, pods = random_case(random.Random(seed))
    prof = one_plugin(PodTopologySpread, cluster(nodes, bound))
    for p in pods:
        out, _, _ = run_filter(prof, p)
        assert _reasons(out) == brute_force(nodes, bound, p)
        for s in out.values():
            if s is not None:
                want = Code.UNSCHEDULABLE if s.reasons[0] == ERR_REASON_CONSTRAINTS_NOT_MATCH else Code.UNSCHEDULABLE_AND_UNRESOLVABLE
                assert s.code == want
        out2, _, _ = run_filter(prof, p)  # second cycle: from the memoised node-side state
        assert _reasons(out2) == _reasons(out)


@pytest.mark.parametrize("seed", range(30))
def test_filter_after_add_and_remove_pod(seed: int) -> None:
    """Preemption's dry run adds/removes pods in the cycle state: the per-domain verdicts follow."""
    rng = random.Random(1000 + seed)
    nodes, bound, pods = random_case(rng)
    h = cluster(nodes, bound)
    prof = one_plugin(PodTopologySpread, h)
    pl = prof.plugins[PodTopologySpread.name]
    table = h.cache.table
    rows = np.arange(table.n, dtype=np.int64)
    for raw in pods:
        p = pod_info(raw)
        state = CycleState()
        prof.run_pre_filter(state, p, table)
        pl.filter(state, p, table, rows)  # fills the verdict cache before the state changes
        extra = pod(f"x-{raw['metadata']['name']}", labels={"app": "web"}, node_name=rng.choice(nodes)["metadata"]["name"])
        row = table.index[extra["spec"]["nodeName"]]
        pl.add_pod(state, p, pod_info(extra), table, row)
        diag = Diagnosis(table.names, table.n)
        ok = set(prof._filter_rows(state, p, table, rows, diag).tolist())
        want = brute_force(nodes, bound + [extra], raw)
        assert {table.names[r]: (None if r in ok else diag.statuses[int(diag.status_ids[r])].reasons[0])
                for r in range(table.n)} == want
        live = [q for q in bound if not q["metadata"].get("deletionTimestamp")]
        if live:  # (upstream's updateWithPod does not look at deletionTimestamp: victims are live pods)
            victim = rng.choice(live)
            vrow = table.index[victim["spec"]["nodeName"]]
            pl.remove_pod(state, p, pod_info(victim), table, vrow)
            diag = Diagnosis(table.names, table.n)
            ok = set(prof._filter_rows(state, p, table, rows, diag).tolist())
            want = brute_force(nodes, [q for q in bound if q is not victim] + [extra], raw)
            assert {table.names[r]: (None if r in ok else diag.statuses[int(diag.status_ids[r])].reasons[0])
                    for r in range(table.n)} == want


@pytest.mark.parametrize("seed", range(6))
def test_many_domains_take_the_vector_path(seed: int) -> None:
    """More than _SMALL domains (hostname over 90 nodes): the per-domain verdict is built with numpy."""
    rng = random.Random(2000 + seed)
    nodes = [node(f"n{i:03d}", labels={ZONE: f"z{i % 3}"}) for i in range(90)]
    bound = [pod(f"b{i}", labels={"app": "web"}, node_name=rng.choice(nodes)["metadata"]["name"]) for i in range(150)]
    prof = one_plugin(PodTopologySpread, cluster(nodes, bound))
    for skew in (1, 2, 3):
        p = pod("p", labels={"app": "web"}, topologySpreadConstraints=[
            {"maxSkew": skew, "topologyKey": HOST, "whenUnsatisfiable": "DoNotSchedule",
             "labelSelector": {"matchLabels": {"app": "web"}}}])
        out, _, _ = run_filter(prof, p)
        assert _reasons(out) == brute_force(nodes, bound, p)

"""NodeTable keeps per-node counts of live pods matching a (selector, namespace) current through
pod adds, removals, updates to terminating, assumed pods, node adds and removals; each read
equals a fresh count over all pods."""

from __future__ import annotations

import random

import numpy as np
import pytest

from pyk8s.scheduler.selectors import compile_label_selector

from .scheduler._fixtures import fresh_cache, node, pod

SELECTORS = [compile_label_selector(s) for s in (
    {"matchLabels": {"app": "web"}}, {"matchLabels": {"app": "db"}},
    {"matchExpressions": [{"key": "app", "operator": "In", "values": ["web", "db"]}]},
    {"matchExpressions": [{"key": "tier", "operator": "Exists"}]},
    {"matchExpressions": [{"key": "tier", "operator": "DoesNotExist"}]},
    {"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["web"]}]},
    {}, None,
)]


def _fresh(table, sel, ns):  # type: ignore[no-untyped-def]
    return np.bincount(table.rows_of_matching(sel, (ns,), skip_terminating=True), minlength=table.n)


@pytest.mark.parametrize("seed", range(15))
def test_kept_counts_equal_a_recount(seed: int) -> None:
    rng = random.Random(seed)
    cache = fresh_cache([node(f"n{i}") for i in range(6)])
    table = cache.table
    live: dict[str, dict] = {}
    names = [f"n{i}" for i in range(6)]
    for step in range(300):
        op = rng.random()
        if op < 0.45 or not live:
            labels = {"app": rng.choice(["web", "db", "x"])}
            if rng.random() < 0.5:
                labels["tier"] = "t"
            p = pod(f"p{step}", namespace=rng.choice(["a", "b", "c"]), labels=labels, node_name=rng.choice(names))
            if rng.random() < 0.2:
                p["metadata"]["deletionTimestamp"] = "2025-01-01T00:00:00Z"
            if rng.random() < 0.3:  # assumed, then confirmed
                unbound = {**p, "spec": {**p["spec"], "nodeName": ""}}
                cache.assume_pod(unbound, p["spec"]["nodeName"])
                cache.finish_binding(unbound)
            cache.add_pod(p)
            live[p["metadata"]["name"]] = p
        elif op < 0.7:
            p = live.pop(rng.choice(sorted(live)))
            cache.remove_pod(p)
        elif op < 0.9:
            name = rng.choice(sorted(live))
            old = live[name]
            new = {**old, "metadata": {**old["metadata"], "deletionTimestamp": "2025-01-01T00:00:00Z"}}
            cache.update_pod(old, new)
            live[name] = new
        elif op < 0.95:
            names.append(f"m{step}")
            cache.add_node(node(names[-1]))
        elif len(names) > 2:
            gone = names.pop(rng.randrange(len(names)))
            cache.remove_node(gone)
            live = {k: v for k, v in live.items() if v["spec"]["nodeName"] != gone}
        sel = rng.choice(SELECTORS)
        ns = rng.choice(["a", "b", "c"])  # 24 keys: more than the table keeps
        assert table.count_matching_per_node(sel, ns).tolist() == _fresh(table, sel, ns).tolist(), step
    for sel in SELECTORS:
        for ns in ("a", "b", "c"):
            assert table.count_matching_per_node(sel, ns).tolist() == _fresh(table, sel, ns).tolist()

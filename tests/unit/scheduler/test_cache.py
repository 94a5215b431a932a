"""The node table and upstream's assume / finish-binding / confirm / forget pod states."""

from __future__ import annotations

import numpy as np
import pytest

from pyk8s.scheduler.cache import Cache, CacheError
from pyk8s.scheduler.podinfo import pod_info

from ._fixtures import node, pod


def _row(c, name):
    t = c.table
    i = t.index[name]
    return {r: int(t.req[t.res_index[r], i]) for r in t.res_names if t.req[t.res_index[r], i]}, int(t.npods[i])


def test_assume_finish_confirm():
    c = Cache()
    c.add_node(node("n1"))
    p = pod("p", requests={"cpu": "500m"})
    c.assume_pod(p, "n1")
    assert c.is_assumed_pod(p)
    assert _row(c, "n1") == ({"cpu": 500}, 1)
    c.finish_binding(p)
    bound = {**p, "spec": {**p["spec"], "nodeName": "n1"}}
    c.add_pod(bound)  # the informer confirms
    assert not c.is_assumed_pod(p)
    assert _row(c, "n1") == ({"cpu": 500}, 1)
    c.remove_pod(bound)
    assert _row(c, "n1") == ({}, 0)


def test_forget_and_errors():
    c = Cache()
    c.add_node(node("n1"))
    p = pod("p", requests={"cpu": "1"})
    c.assume_pod(p, "n1")
    with pytest.raises(CacheError):
        c.assume_pod(p, "n1")
    c.forget_pod(p)
    assert _row(c, "n1") == ({}, 0) and c.pod_count() == 0
    bound = pod("b", node_name="n1")
    c.add_pod(bound)
    with pytest.raises(CacheError):
        c.forget_pod(bound)


def test_confirmed_on_another_node_moves_the_accounting():
    c = Cache()
    c.add_node(node("n1"))
    c.add_node(node("n2"))
    p = pod("p", requests={"cpu": "1"})
    c.assume_pod(p, "n1")
    c.add_pod({**p, "spec": {**p["spec"], "nodeName": "n2"}})
    assert _row(c, "n1") == ({}, 0) and _row(c, "n2") == ({"cpu": 1000}, 1)


def test_assumed_pods_expire_only_with_a_ttl():
    now = [0.0]
    c = Cache(ttl=30, clock=lambda: now[0])
    c.add_node(node("n1"))
    p = pod("p")
    c.assume_pod(p, "n1")
    now[0] = 100
    assert c.cleanup_assumed_pods() == []  # binding not finished yet
    c.finish_binding(p)
    now[0] = 129
    assert c.cleanup_assumed_pods() == []
    now[0] = 131
    assert [x.name for x in c.cleanup_assumed_pods()] == ["p"]
    assert c.pod_count() == 0
    c2 = Cache()
    c2.add_node(node("n1"))
    q = pod("q")
    c2.assume_pod(q, "n1")
    c2.finish_binding(q)
    assert c2.cleanup_assumed_pods(now=1e12) == []  # ttl 0 (upstream default): never expire


def test_update_pod_moves_requests():
    c = Cache()
    c.add_node(node("n1"))
    old = pod("p", node_name="n1", requests={"cpu": "1"})
    c.add_pod(old)
    new = {**old, "spec": {**old["spec"], "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "2"}}}]}}
    c.update_pod(old, new)
    assert _row(c, "n1") == ({"cpu": 2000}, 1)


def test_pods_on_unknown_nodes_wait_for_the_node():
    c = Cache()
    p = pod("p", node_name="later", requests={"cpu": "1"})
    c.add_pod(p)
    c.add_node(node("later"))
    assert _row(c, "later") == ({"cpu": 1000}, 1)
    c.remove_node("later")
    assert c.node_count() == 0
    c.add_node(node("later"))
    assert _row(c, "later") == ({"cpu": 1000}, 1)


def test_node_removal_keeps_rows_dense_and_labels_consistent():
    c = Cache()
    for i in range(5):
        c.add_node(node(f"n{i}", labels={"zone": f"z{i % 2}"}))
    col = c.table.label_column("zone")
    c.add_pod(pod("p", node_name="n4", requests={"cpu": "1"}))
    c.remove_node("n1")
    t = c.table
    assert t.n == 4 and sorted(t.names) == ["n0", "n2", "n3", "n4"]
    assert all(t.index[nm] == i for i, nm in enumerate(t.names))
    for i in range(t.n):
        assert col.values[col.codes[i]] == t.labels[i]["zone"]
    assert _row(c, "n4") == ({"cpu": 1000}, 1)
    c.update_node(node("n4", labels={"zone": "z9"}))
    assert col.values[col.codes[t.index["n4"]]] == "z9"


def test_growth_and_dynamic_resource_columns():
    c = Cache()
    for i in range(200):
        extra = {"nvidia.com/gpu": "2"} if i == 150 else None
        c.add_node(node(f"n{i}", extra=extra))
    t = c.table
    col = t.res_index["nvidia.com/gpu"]
    assert t.alloc[col, t.index["n150"]] == 2 and int(t.alloc[col, : t.n].sum()) == 2
    c.add_pod(pod("g", node_name="n3", requests={"example.com/foo": "3"}))  # a column no node has
    assert t.req[t.res_index["example.com/foo"], t.index["n3"]] == 3


def test_allocatable_update():
    c = Cache()
    c.add_node(node("n1", cpu="4"))
    c.update_node(node("n1", cpu="8"))
    t = c.table
    assert t.alloc[t.res_index["cpu"], 0] == 8000


def test_ports_and_images_indexes():
    c = Cache()
    c.add_node(node("n1", images=[(["a:1", "reg/a:1"], 100)]))
    c.add_node(node("n2", images=[(["a:1"], 120)]))
    assert c.table.image_nodes["a:1"] == (100, {"n1", "n2"})
    c.remove_node("n1")
    assert c.table.image_nodes["a:1"][1] == {"n2"} and "reg/a:1" not in c.table.image_nodes
    p = pod("p", node_name="n2", ports=[{"containerPort": 80, "hostPort": 80}])
    c.add_pod(p)
    assert c.table.ports[("TCP", 80)] == {"n2": {"0.0.0.0": 1}}
    c.remove_pod(p)
    assert c.table.ports == {}


def test_label_index_lookup():
    from pyk8s.scheduler.selectors import compile_label_selector

    c = Cache()
    c.add_node(node("n1"))
    c.add_node(node("n2"))
    c.add_pod(pod("a", node_name="n1", labels={"app": "x"}))
    c.add_pod(pod("b", node_name="n2", labels={"app": "x", "tier": "fe"}))
    c.add_pod(pod("c", node_name="n2", labels={"app": "y"}))
    sel = compile_label_selector({"matchLabels": {"app": "x"}})
    assert sorted(p.name for p in c.table.pods_matching(sel)) == ["a", "b"]
    sel = compile_label_selector({"matchExpressions": [{"key": "tier", "operator": "DoesNotExist"}]})
    assert sorted(p.name for p in c.table.pods_matching(sel)) == ["a", "c"]
    assert list(c.table.count_matching_per_node(compile_label_selector({"matchLabels": {"app": "x"}}), "default")) == [1, 1]
    assert np.array_equal(c.table.has_labels_mask(["kubernetes.io/hostname"]), [True, True])


def test_templates_are_shared_between_identical_pods():
    a = pod_info(pod("a", requests={"cpu": "1"}, labels={"app": "x"}))
    b = pod_info(pod("b", requests={"cpu": "1"}, labels={"app": "x"}))
    c = pod_info(pod("c", requests={"cpu": "2"}, labels={"app": "x"}))
    assert a.tmpl is b.tmpl and a.tmpl is not c.tmpl
    assert a.key != b.key

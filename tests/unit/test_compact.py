"""Cached objects compacted in place (api/compact.py) and when the watch cache does it."""

from __future__ import annotations

import gc
import tracemalloc
from typing import Any

import orjson

from pyk8s.api.compact import compact
from pyk8s.apiserver import watchcache
from pyk8s.apiserver.watchcache import ResourceCache
from pyk8s.storage import PUT, Event, KeyValue

P = "/registry/pods/"


def _pod(i: int) -> bytes:
    obj = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": f"pod-{i}", "namespace": "default", "uid": f"uid-{i}",
                        "labels": {"app": "web", "pod-template-hash": "5d4f8b7c9"},
                        "annotations": {"note": "x" * 100},
                        "managedFields": [{"manager": "kubelet", "operation": "Update", "apiVersion": "v1",
                                           "time": "2026-01-01T00:00:00Z", "fieldsType": "FieldsV1",
                                           "fieldsV1": {"f:status": {"f:conditions": {
                                               f'k:{{"type":"T{j}"}}': {".": {}, "f:status": {}, "f:type": {}}
                                               for j in range(6)}, "f:phase": {}}}}]},
           "spec": {"nodeName": f"node-{i % 3}", "containers": [
               {"name": "app", "image": "registry.k8s.io/pause:3.10", "args": ["--port", "8080"]}]},
           "status": {"phase": "Running", "conditions": [{"type": f"T{j}", "status": "True"} for j in range(6)]}}
    return orjson.dumps(obj)


def _size(objs: Any) -> int:
    gc.collect()
    return tracemalloc.get_traced_memory()[0]


def test_compact_keeps_every_value_and_shares_equal_ones() -> None:
    a, b = orjson.loads(_pod(1)), orjson.loads(_pod(2))
    before = orjson.dumps(a)
    compact(a)
    compact(b)
    assert orjson.dumps(a) == before and a == orjson.loads(_pod(1))  # the same content, key order kept
    assert a["status"]["phase"] is b["status"]["phase"]
    assert a["spec"]["containers"][0]["image"] is b["spec"]["containers"][0]["image"]
    assert a["metadata"]["annotations"]["note"] is not b["metadata"]["annotations"]["note"]  # long: left alone
    fa = a["metadata"]["managedFields"][0]["fieldsV1"]["f:status"]
    fb = b["metadata"]["managedFields"][0]["fieldsV1"]["f:status"]
    assert fa["f:phase"] is fb["f:phase"] == {}
    k0 = 'k:{"type":"T0"}'
    assert fa is not fb and fa["f:conditions"][k0] is not fb["f:conditions"][k0]  # only the empty leaves are shared
    # the rest of the object keeps its own dicts: a change to one object never shows in another
    a["metadata"]["labels"]["app"] = "other"
    assert b["metadata"]["labels"]["app"] == "web"


def test_the_cache_compacts_settled_objects_once() -> None:
    c = ResourceCache(P)
    c.load([], 1)
    gc.collect()
    tracemalloc.start()
    try:
        base = _size(None)
        for i in range(300):
            c.apply(Event(PUT, KeyValue(f"{P}default/pod-{i}", _pod(i), 2 + i, 2 + i), 2 + i))
        fresh = _size(None) - base
        c.pack_older(float("inf"))  # FRESH_SECONDS later
        c.history.clear()
        settled = _size(None) - base
    finally:
        tracemalloc.stop()
    assert settled < 0.75 * fresh, (settled, fresh)
    o1, o2 = c.objects[f"{P}default/pod-1"], c.objects[f"{P}default/pod-2"]
    assert o1["status"]["phase"] is o2["status"]["phase"]
    assert orjson.loads(_pod(1))["status"] == o1["status"]


def test_an_object_written_again_is_not_compacted_until_it_settles(monkeypatch: Any) -> None:
    calls: list[str] = []
    monkeypatch.setattr(watchcache, "compact", lambda o: calls.append(o["metadata"]["name"]))
    c = ResourceCache(P)
    c.load([("k", orjson.loads(_pod(0)))], 1)
    assert calls == ["pod-0"]  # loaded objects are compacted at once
    calls.clear()
    for rev in range(2, 12):  # ten writes of one object in a burst
        c.apply(Event(PUT, KeyValue(f"{P}default/pod-1", _pod(1), 2, rev), rev))
    for ev in c.history:
        ev.ts -= 2 * watchcache.FRESH_SECONDS
    c.apply(Event(PUT, KeyValue(f"{P}default/pod-2", _pod(2), 12, 12), 12))
    assert calls == ["pod-1"]  # one pass, for the state that stayed

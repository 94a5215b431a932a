"""The shortcuts on the managedFields path of non-apply writes (compare skipping subtrees that
are the same on both sides, memoised identifiers and FieldsV1 keys, memoised decoded sets,
FieldsV1 of unchanged managers reused) must give exactly what the general path gives: random
objects with random spec/status/metadata changes, several managers."""

from __future__ import annotations

import copy
import json
import math
import random

import pytest

from pyk8s.api.patch import _typed, apply
from pyk8s.api.patch.apply import managed_fields_entries
from pyk8s.api.patch.fieldpath import FieldSet

T0 = "2026-01-01T00:00:00Z"


def _pod(r: random.Random) -> dict:
    containers = [{"name": f"c{i}", "image": r.choice(["nginx:1", "nginx:2", "busybox"]),
                   "ports": [{"containerPort": 80 + j, "protocol": "TCP"} for j in range(r.randint(0, 2))],
                   "env": [{"name": f"E{j}", "value": str(j)} for j in range(r.randint(0, 3))]}
                  for i in range(r.randint(1, 3))]
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "namespace": "default", "labels": {"app": r.choice(["a", "b"])},
                         "annotations": {"x": "1"}},
            "spec": {"containers": containers, "nodeName": "n1", "tolerations": [{"key": "k", "operator": "Exists"}]},
            "status": {"phase": "Pending", "conditions": [
                {"type": t, "status": r.choice(["True", "False"]), "lastTransitionTime": T0}
                for t in r.sample(["PodScheduled", "Ready", "Initialized", "ContainersReady"], r.randint(0, 4))],
                "podIPs": [{"ip": "10.0.0.1"}]}}


def _node(r: random.Random) -> dict:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1", "labels": {"k": "v"}},
            "spec": {"podCIDR": "10.0.0.0/24", "taints": [{"key": "t", "effect": "NoSchedule"}]},
            "status": {"capacity": {"cpu": "4", "pods": "110"}, "allocatable": {"cpu": "4"},
                       "conditions": [{"type": t, "status": "False", "lastHeartbeatTime": T0, "reason": "r"}
                                      for t in ("Ready", "DiskPressure", "MemoryPressure")],
                       "addresses": [{"type": "InternalIP", "address": "10.1.0.1"}],
                       "images": [{"names": ["a", "b"], "sizeBytes": 10}]}}


def _lease(r: random.Random) -> dict:
    return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": "l", "namespace": "kube-node-lease"},
            "spec": {"holderIdentity": "n1", "leaseDurationSeconds": 40, "renewTime": "2026-01-01T00:00:00.000000Z"}}


def _deploy(r: random.Random) -> dict:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "default"},
            "spec": {"replicas": r.randint(1, 5), "selector": {"matchLabels": {"app": "d"}},
                     "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%"}},
                     "template": {"metadata": {"labels": {"app": "d"}},
                                  "spec": {"containers": [{"name": "c", "image": "i:1", "args": ["a", "b"]}]}}},
            "status": {"replicas": 1, "conditions": [{"type": "Available", "status": "True"}]}}


_SCALARS = ["x", "y", "", 0, 1, 1.0, 2.5, True, False, None, float("nan")]


def _mutate(r: random.Random, v: object, depth: int = 0) -> object:
    """A random change somewhere in `v` (values of other JSON types included), or `v` as is."""
    if isinstance(v, dict) and v:
        k = r.choice(sorted(v))
        roll = r.random()
        if roll < 0.1:
            v.pop(k)
        elif roll < 0.2:
            v[f"new{r.randint(0, 3)}"] = r.choice(_SCALARS[:4] + [{"a": "b"}, ["z"]])
        else:
            v[k] = _mutate(r, v[k], depth + 1)
        return v
    if isinstance(v, list) and v:
        roll = r.random()
        if roll < 0.15:
            v.pop(r.randrange(len(v)))
        elif roll < 0.25:
            v.append(copy.deepcopy(r.choice(v)))  # may duplicate a key
        elif roll < 0.3:
            v.reverse()
        else:
            i = r.randrange(len(v))
            v[i] = _mutate(r, v[i], depth + 1)
        return v
    return r.choice(_SCALARS) if r.random() < 0.7 else v


def _general_same(a: object, b: object) -> bool:
    return False  # never skip: the whole tree is compared as before the shortcut


def _general_cmp_map_items(lv: dict, rv: dict, t, A, M, R) -> None:  # type: ignore[no-untyped-def]
    """compare's map walk without shortcuts: every member through _cmp_node."""
    for key, lchild in lv.items():
        _typed._cmp_node(lchild, rv.get(key, _typed.MISSING), _typed._field_type(t, key)[0], ("f", key), A, M, R)
    for key, rchild in rv.items():
        if key not in lv:
            _typed._cmp_node(_typed.MISSING, rchild, _typed._field_type(t, key)[0], ("f", key), A, M, R)


def _entries(old: dict | None, new: dict, manager: str, sub: str, now: str) -> object:
    return managed_fields_entries(old, new, manager, "Update", new["apiVersion"], now, kind=new["kind"],
                                  subresource=sub)


def _dump(v: object) -> str:
    return json.dumps(v, sort_keys=False, default=str)


def _both(monkeypatch: pytest.MonkeyPatch, fn):  # type: ignore[no-untyped-def]
    fast = fn()
    with monkeypatch.context() as m:
        m.setattr(_typed, "_same", _general_same)
        m.setattr(_typed, "_cmp_map_items", _general_cmp_map_items)
        m.setattr(apply, "_fields_v1", lambda vs: vs.set.to_fields_v1())  # no FieldsV1 reused
        m.setattr(apply, "_decode_set", lambda raw: (FieldSet.from_fields_v1(raw), None))  # nor sets
        general = fn()
    return fast, general


@pytest.mark.parametrize("seed", range(60))
def test_fast_path_matches_general_path(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    r = random.Random(seed)
    make = r.choice([_pod, _node, _lease, _deploy])
    obj = make(r)
    obj["metadata"].update(uid="u", resourceVersion="1")
    obj["metadata"]["managedFields"] = _entries(None, obj, "creator", "", T0)
    managers = ["creator", "kubelet", "controller", "kubectl-client-side-apply"]
    for step in range(6):
        new = copy.deepcopy(obj)
        for _ in range(r.randint(1, 3)):
            part = r.choice(["spec", "status", "metadata"])
            if part in new:
                new[part] = _mutate(r, new[part])
        if r.random() < 0.2:
            new["metadata"].pop("managedFields", None)  # the client left them out: the live ones are used
        manager = r.choice(managers)
        sub = r.choice(["", "", "status"])
        now = f"2026-01-01T00:0{step + 1}:00Z"
        fast, general = _both(monkeypatch, lambda old=obj, new=new, manager=manager, sub=sub, now=now:
                              _entries(old, new, manager, sub, now))
        assert _dump(fast) == _dump(general)
        a1, m1, r1 = _typed.compare(obj, new, _typed_type(new))
        with monkeypatch.context() as m:
            m.setattr(_typed, "_same", _general_same)
            m.setattr(_typed, "_cmp_map_items", _general_cmp_map_items)
            a2, m2, r2 = _typed.compare(obj, new, _typed_type(new))
        for x, y in ((a1, a2), (m1, m2), (r1, r2)):
            assert x.to_fields_v1() == y.to_fields_v1()
        new["metadata"]["managedFields"] = fast
        obj = new


def _typed_type(obj: dict):  # type: ignore[no-untyped-def]
    from pyk8s.api.patch._schema import type_for_gvk

    g, _, v = obj["apiVersion"].rpartition("/")
    return type_for_gvk(g, v, obj["kind"])


def test_same_is_strict() -> None:
    assert _typed._same({"a": [1, {"b": "c"}]}, {"a": [1, {"b": "c"}]})
    assert not _typed._same(1, 1.0)
    assert not _typed._same(True, 1)
    assert not _typed._same({"a": None}, {"b": None})
    nan = float("nan")
    assert not _typed._same([nan], [nan])  # as go_equal: NaN is not equal to itself
    assert math.isnan(nan)


def test_same_manager_renewal_keeps_field_set() -> None:
    lease = _lease(random.Random(0))
    lease["metadata"].update(uid="u", resourceVersion="1")
    lease["metadata"]["managedFields"] = _entries(None, lease, "kubelet", "", T0)
    renewed = copy.deepcopy(lease)
    renewed["spec"]["renewTime"] = "2026-01-01T00:00:10.000000Z"
    out = _entries(lease, renewed, "kubelet", "", "2026-01-01T00:00:10Z")
    assert isinstance(out, list) and len(out) == 1
    assert out[0]["time"] == "2026-01-01T00:00:10Z"
    assert out[0]["fieldsV1"] == lease["metadata"]["managedFields"][0]["fieldsV1"]
    assert FieldSet.from_fields_v1(out[0]["fieldsV1"]).to_fields_v1() == out[0]["fieldsV1"]


def _reference_emit(s: FieldSet, own: bool) -> dict:
    """FieldsV1 written the plain way: empty sub-sets dropped, "." for owned parents."""
    from pyk8s.api.patch.fieldpath import _pe_rank

    out: dict = {".": {}} if own else {}
    nonempty = {pe: c for pe, c in s.children.items() if not c.empty()}
    for pe in sorted(s.members | set(nonempty), key=_pe_rank):
        kind, data = pe
        key = f"{kind}:{data}"
        out[key] = _reference_emit(nonempty[pe], pe in s.members) if pe in nonempty else {}
    return out


def _random_set(r: random.Random, depth: int = 0) -> FieldSet:
    s = FieldSet()
    pes = [("f", "a"), ("f", "b"), ("f", "z"), ("i", 0), ("i", 2), ("v", '"x"'), ("v", "1"),
           ("k", '{"name":"c"}'), ("k", '{"name":"a","port":1}')]
    for pe in r.sample(pes, r.randint(0, 5)):
        roll = r.random()
        if roll < 0.4:
            s.members.add(pe)
        if depth < 3 and roll > 0.3:
            s.children[pe] = _random_set(r, depth + 1) if r.random() < 0.8 else FieldSet()  # empty ones too
    return s


@pytest.mark.parametrize("seed", range(40))
def test_fields_v1_encoding_matches_reference(seed: int) -> None:
    s = _random_set(random.Random(seed))
    v1 = s.to_fields_v1()
    assert _dump(v1) == _dump(_reference_emit(s, False))
    assert _dump(FieldSet.from_fields_v1(v1).to_fields_v1()) == _dump(v1)
    assert FieldSet.from_fields_v1(v1) == s


@pytest.mark.parametrize("value", ["a", "", "ü<>&", 0, 1, -5, 2**40, 1.0, 2.5, True, False, None])
def test_memoised_item_path_elements(value: object) -> None:
    """item_pe's memoised keys and values give what go_json gives, and keep types apart."""
    from pyk8s.api.patch._common import go_json
    from pyk8s.api.patch._schema import type_for_gvk

    pod = type_for_gvk("", "v1", "Pod")
    ports = pod.field("spec").field("containers").elem().field("ports")
    item = {"containerPort": value, "protocol": "TCP", "name": "x"}
    expected = ("k", go_json({k: item[k] for k in ports.keys if k in item} or {}, sort_keys=True))
    if all(k in item or k in ports.key_defaults for k in ports.keys):
        fields = {k: item[k] if k in item else ports.key_defaults[k] for k in ports.keys}
        expected = ("k", go_json(fields, sort_keys=True))
        assert _typed.item_pe(ports, item) == expected
    finalizers = pod.field("metadata").field("finalizers") if pod.field("metadata").has_field("finalizers") else None
    if finalizers is not None and not isinstance(value, (dict, list)):
        assert _typed.item_pe(finalizers, value) == ("v", go_json(value, sort_keys=True))

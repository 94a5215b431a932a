"""The PATCH write path's shortcuts give exactly what the general path gives:

  * merge and strategic merge patches applied in place to the attempt's own copy (no second copy);
  * managedFields of an Update whose changes are all fields its manager alone owns already
    (`apply._owned_change`: no set algebra).

Differential: the same generated writes run through the shortcuts and through the general path
(shortcuts switched off), results compared by their exact bytes, key order included."""

from __future__ import annotations

import asyncio
import copy
import itertools
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from pyk8s.api.errors import StatusError
from pyk8s.api.patch import apply, merge_patch, strategic
from pyk8s.api.patch.apply import managed_fields_entries
from pyk8s.apiserver import patching, rest
from pyk8s.apiserver.rest import RequestContext

from ._handlers import start_handlers
from ._request import BodyRequest
from ._same import same

T0 = "2026-01-01T00:00:00Z"
MERGE = "application/merge-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"


def _micro(i: int) -> str:
    return f"2026-01-01T00:{i // 60 % 60:02d}:{i % 60:02d}.{i * 7919 % 1000000:06d}Z"


def _conds(i: int, r: random.Random) -> list[dict[str, Any]]:
    now = f"2026-01-01T01:{i // 60 % 60:02d}:{i % 60:02d}Z"
    return [{"type": t, "status": r.choice(["False", "False", "True"]) if t != "Ready" else "True",
             "lastHeartbeatTime": now, "lastTransitionTime": T0, "reason": "R" + t, "message": "m"}
            for t in ("MemoryPressure", "DiskPressure", "PIDPressure", "Ready")]


def _pod_status(i: int, r: random.Random) -> dict[str, Any]:
    ready = r.choice(["True", "False"])
    st: dict[str, Any] = {
        "phase": r.choice(["Pending", "Running", "Running"]), "hostIP": "10.1.0.1", "startTime": T0,
        "conditions": [{"type": t, "status": ready if t in ("Ready", "ContainersReady") else "True",
                        "lastProbeTime": None, "lastTransitionTime": T0 if r.random() < 0.5 else f"2026-01-02T00:00:{i % 60:02d}Z"}
                       for t in r.sample(["PodScheduled", "Initialized", "Ready", "ContainersReady"], r.randint(1, 4))],
        "containerStatuses": [{"name": "c", "image": "nginx:1", "imageID": "", "ready": ready == "True",
                               "restartCount": r.randint(0, 2), "started": True,
                               "state": {"running": {"startedAt": T0}}, "lastState": {}}]}
    if r.random() < 0.5:
        st["podIP"] = "10.244.0.5"
        st["podIPs"] = [{"ip": "10.244.0.5"}]
    if r.random() < 0.2:
        st["message"] = None  # a null in a merge patch: removes the field
    return st


# ---------------------------------------------------------------------------------------------
# merge patches in place


def _random_value(r: random.Random, depth: int = 0) -> Any:
    roll = r.random()
    if depth < 3 and roll < 0.3:
        return {f"k{r.randint(0, 4)}": _random_value(r, depth + 1) for _ in range(r.randint(0, 3))}
    if depth < 3 and roll < 0.45:
        return [_random_value(r, depth + 1) for _ in range(r.randint(0, 3))]
    return r.choice(["x", "", 0, 1, 2.5, True, False, None])


@pytest.mark.parametrize("seed", range(40))
def test_merge_patch_in_place_is_the_copying_patch(seed: int) -> None:
    r = random.Random(seed)
    for _ in range(50):
        obj = _random_value(r)
        if not isinstance(obj, dict):
            obj = {"a": obj}
        patch = _random_value(r)
        if not isinstance(patch, dict):
            patch = {"b": patch, "a": None}
        obj_before, patch_before = copy.deepcopy(obj), copy.deepcopy(patch)
        want = merge_patch.apply_merge_patch(obj, patch)
        assert same(obj, obj_before)
        own = copy.deepcopy(obj)
        got = merge_patch.apply_merge_patch(own, patch, in_place=True)
        assert got is own and same(got, want)
        assert same(patch, patch_before)
        _no_shared_containers(got, patch)


@pytest.mark.parametrize("seed", range(20))
def test_strategic_patch_in_place_is_the_copying_patch(seed: int) -> None:
    r = random.Random(seed)
    for i in range(30):
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": {"a": "b"}},
               "spec": {"containers": [{"name": "c", "image": "i", "env": [{"name": "E", "value": "1"}]}]},
               "status": {"conditions": [{"type": "Ready", "status": "True"}]}}
        patch: dict[str, Any] = r.choice([
            {"metadata": {"labels": {"x": str(i), "a": None}}},
            {"spec": {"containers": [{"name": "c", "image": f"i{i}"}]}},
            {"spec": {"containers": [{"name": "d", "image": "j"}]}},
            {"status": {"conditions": [{"type": "Ready", "status": "False"}, {"type": "Init", "status": "True"}]}},
            {"spec": {"containers": [{"name": "c", "env": [{"name": "F", "value": "2"}]}]}},
            {"spec": {"$setElementOrder/containers": [{"name": "c"}], "containers": [{"name": "c", "image": "k"}]}},
        ])
        patch_before = copy.deepcopy(patch)
        want = strategic.apply_strategic_merge_patch(pod, patch, "", "v1", "Pod")
        own = copy.deepcopy(pod)
        got = strategic.apply_strategic_merge_patch(own, patch, "", "v1", "Pod", in_place=True)
        assert same(got, want)
        assert same(patch, patch_before)
        _no_shared_containers(got, patch)


def _containers(v: Any) -> list[int]:
    if isinstance(v, dict):
        return [id(v)] + [i for x in v.values() for i in _containers(x)]
    if isinstance(v, list):
        return [id(v)] + [i for x in v for i in _containers(x)]
    return []


def _no_shared_containers(result: Any, patch: Any) -> None:
    """A later write's retry applies the patch again: the result may not alias its dicts or lists."""
    assert not set(_containers(result)) & set(_containers(patch))


# ---------------------------------------------------------------------------------------------
# managedFields: Update by a manager that owns what it changes


def _general(monkeypatch: pytest.MonkeyPatch, fn: Callable[[], Any]) -> tuple[Any, Any]:
    fast = fn()
    with monkeypatch.context() as m:
        m.setattr(apply, "_owned_change", lambda *a: None)
        general = fn()
    return fast, general


_CRD_SCHEMA = {"type": "object", "properties": {
    "apiVersion": {"type": "string"}, "kind": {"type": "string"}, "metadata": {"type": "object"},
    "spec": {"type": "object", "properties": {"replicas": {"type": "integer"}, "tags": {
        "type": "array", "items": {"type": "string"}}, "items": {
        "type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
        "items": {"type": "object", "properties": {"name": {"type": "string"}, "v": {"type": "string"}}}}}},
    "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}


def _objects(r: random.Random) -> list[tuple[dict[str, Any], str, dict[str, Any] | None]]:
    """(object, the subresource its writes go to, schema) kinds the sim writes, and a custom resource."""
    lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
             "metadata": {"name": "n1", "namespace": "kube-node-lease"},
             "spec": {"holderIdentity": "n1", "leaseDurationSeconds": 40, "renewTime": _micro(0)}}
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1", "labels": {"k": "v"}},
            "spec": {}, "status": {"capacity": {"cpu": "4"}, "allocatable": {"cpu": "4"}, "conditions": _conds(0, r),
                                   "addresses": [{"type": "InternalIP", "address": "10.1.0.1"}]}}
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
           "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "nginx:1"}]}, "status": _pod_status(0, r)}
    cr = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "namespace": "default"},
          "spec": {"replicas": 1, "tags": ["a"], "items": [{"name": "x", "v": "1"}]}, "status": {"n": 0}}
    return [(lease, "", None), (node, "status", None), (pod, "status", None), (cr, "", _CRD_SCHEMA),
            (cr, "status", _CRD_SCHEMA)]


def _change(r: random.Random, obj: dict[str, Any], i: int) -> None:
    """The sim's writes mostly (renewals, heartbeats, status), now and then something else."""
    kind = obj["kind"]
    roll = r.random()
    if roll < 0.1:
        obj["metadata"].setdefault("labels", {})[f"l{r.randint(0, 2)}"] = str(i)
    elif roll < 0.15:
        (obj["metadata"].get("labels") or {}).pop("l0", None)
    elif roll < 0.2:
        obj.pop("status", None)
    elif roll < 0.25:
        pass  # nothing changed
    elif kind == "Lease":
        spec = obj["spec"]
        spec["renewTime"] = _micro(i)
        if r.random() < 0.1:
            spec["holderIdentity"] = r.choice(["n1", "n2"])
        if r.random() < 0.1:
            spec["leaseTransitions"] = i
        if r.random() < 0.05:
            spec.pop("leaseDurationSeconds", None)
    elif kind == "Node":
        obj.setdefault("status", {})["conditions"] = _conds(i, r)
        if r.random() < 0.1:
            obj["status"]["capacity"] = {"cpu": str(r.randint(1, 8))}
        if r.random() < 0.1:
            obj["spec"]["unschedulable"] = r.random() < 0.5
    elif kind == "Pod":
        obj["status"] = {k: v for k, v in _pod_status(i, r).items() if v is not None}
    else:
        spec = obj["spec"]
        spec["replicas"] = r.randint(1, 3)
        if r.random() < 0.3:
            spec["items"] = [{"name": n, "v": str(i)} for n in r.sample(["x", "y", "z"], r.randint(0, 3))]
        obj.setdefault("status", {})["n"] = i


@pytest.mark.parametrize("seed", range(40))
def test_owned_change_matches_general_path(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    r = random.Random(seed)
    hits = 0
    real = apply._owned_change

    def counting(*a: Any) -> Any:
        nonlocal hits
        out = real(*a)
        hits += out is not None
        return out

    monkeypatch.setattr(apply, "_owned_change", counting)
    for obj0, sub, schema in _objects(r):
        obj = copy.deepcopy(obj0)
        obj["metadata"].update(uid="u", resourceVersion="1", creationTimestamp=T0)
        obj["metadata"]["managedFields"] = managed_fields_entries(None, obj, "creator", "Update", obj["apiVersion"],
                                                                  T0, kind=obj["kind"], schema=schema)
        for i in range(1, 25):
            new = copy.deepcopy(obj)
            _change(r, new, i)
            # mostly the usual writer; others take fields over, clients send managedFields or reset them
            manager = r.choice(["sim", "sim", "sim", "sim", "kubelet", "creator"])
            s = sub if r.random() < 0.85 else r.choice(["", "status"])
            roll = r.random()
            if roll < 0.05:
                new["metadata"]["managedFields"] = []
            elif roll < 0.1:
                new["metadata"].pop("managedFields", None)
            elif roll < 0.15 and new["metadata"].get("managedFields"):
                new["metadata"]["managedFields"][0]["fieldsV1"] = {"f:metadata": {"f:name": {}}}
            now = f"2026-01-01T02:{i // 60:02d}:{i % 60:02d}Z"

            def run(old: dict[str, Any] = obj, new: dict[str, Any] = new, manager: str = manager, s: str = s,
                    now: str = now, schema: dict[str, Any] | None = schema) -> Any:
                return managed_fields_entries(old, new, manager, "Update", old["apiVersion"], now, kind=old["kind"],
                                              subresource=s, schema=schema,
                                              reset_fields=["status"] if schema is not None and not s else None)

            fast, general = _general(monkeypatch, run)
            assert orjson.dumps(fast) == orjson.dumps(general), (obj["kind"], i, manager, s)
            if fast is None:
                new["metadata"].pop("managedFields", None)
            else:
                new["metadata"]["managedFields"] = fast
            obj = new
    assert hits >= 5  # the shortcut is taken (renewals by their owner), not only the general path


def test_owned_change_keeps_time_when_nothing_changed() -> None:
    lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {
        "name": "l", "namespace": "ns", "uid": "u", "resourceVersion": "1"},
        "spec": {"holderIdentity": "n1", "renewTime": _micro(1)}}
    lease["metadata"]["managedFields"] = managed_fields_entries(None, lease, "sim", "Update", "coordination.k8s.io/v1",
                                                                T0, kind="Lease")
    renewed = copy.deepcopy(lease)
    renewed["spec"]["renewTime"] = _micro(2)
    out = managed_fields_entries(lease, renewed, "sim", "Update", "coordination.k8s.io/v1", "2026-01-01T00:00:09Z",
                                 kind="Lease")
    assert out is not None and out[0]["time"] == "2026-01-01T00:00:09Z"
    assert out[0]["fieldsV1"] == lease["metadata"]["managedFields"][0]["fieldsV1"]
    same_again = managed_fields_entries(lease, copy.deepcopy(lease), "sim", "Update", "coordination.k8s.io/v1",
                                        "2026-01-01T00:00:09Z", kind="Lease")
    assert same_again == lease["metadata"]["managedFields"]  # nothing changed: the time stays


# ---------------------------------------------------------------------------------------------
# end to end: the sim's patches through the API server's patch handler


async def _run_writes(tmp: Path, seed: int) -> list[bytes]:
    """Creates and patches through ResourceHandler.patch; the replies and the stored objects."""
    r = random.Random(seed)
    parts = await start_handlers(tmp)
    registry, store, storage, h = parts.registry, parts.store, parts.rest, parts.h
    out: list[bytes] = []
    leases = registry.get("coordination.k8s.io", "v1", "leases")
    nodes = registry.get("", "v1", "nodes")
    pods = registry.get("", "v1", "pods")
    nss = registry.get("", "v1", "namespaces")
    sas = registry.get("", "v1", "serviceaccounts")
    assert leases and nodes and pods and nss and sas
    for ns in ("default", "kube-node-lease"):
        await storage.create(nss, None, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}},
                             RequestContext())
    await storage.create(sas, "default", {"apiVersion": "v1", "kind": "ServiceAccount",
                                          "metadata": {"name": "default"}}, RequestContext())
    objs, _ = zip(*[(o, s) for o, s, schema in _objects(r)[:3]], strict=True)
    lease, node, pod = (copy.deepcopy(o) for o in objs)
    pod["spec"]["automountServiceAccountToken"] = False
    pod.pop("status")
    await storage.create(leases, "kube-node-lease", lease, RequestContext(field_manager="sim"))
    await storage.create(nodes, None, node, RequestContext(field_manager="sim"))
    await storage.create(pods, "default", pod, RequestContext(field_manager="creator"))
    for i in range(1, 120):
        manager = r.choice(["sim", "sim", "sim", "kubelet", ""])
        which = r.randrange(3)
        ct = MERGE if r.random() < 0.85 else STRATEGIC
        if which == 0:
            res, ns, name, sub = leases, "kube-node-lease", "n1", ""
            spec: dict[str, Any] = {"renewTime": _micro(i), "holderIdentity": r.choice(["n1", "n1", "n2"])}
            if r.random() < 0.1:
                spec["leaseDurationSeconds"] = None
            body: dict[str, Any] = {"spec": spec}
            if r.random() < 0.1:
                body["metadata"] = {"labels": {"x": str(i)}}
            if r.random() < 0.05:
                body["spec"]["bogus"] = 1  # 400: strict decoding
        elif which == 1:
            res, ns, name, sub = nodes, None, "n1", "status"
            body = {"status": {"conditions": _conds(i, r)}}
            if r.random() < 0.05:
                body["status"]["conditions"][0]["status"] = "Maybe"  # 422
        else:
            res, ns, name, sub = pods, "default", "p", "status"
            body = {"status": _pod_status(i, r)}
        ctx = RequestContext(field_manager=manager, subresource=sub)
        try:
            obj, created = await patching.patch(h, BodyRequest(orjson.dumps(body), ct), res, ns, name, ctx)  # type: ignore[arg-type]
            out.append(orjson.dumps([created, obj], option=orjson.OPT_SORT_KEYS))
            out.append(orjson.dumps(obj))  # key order too
        except StatusError as e:  # the refusal is part of what must not change
            out.append(orjson.dumps([e.code, e.status()], option=orjson.OPT_SORT_KEYS))
        stored = storage.caches.caches[res.key_prefix()].objects[res.key(ns, name)]
        out.append(orjson.dumps(stored))
    await store.close()
    return out


@pytest.mark.parametrize("seed", range(3))
def test_patch_handler_matches_general_path(seed: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    clock = itertools.count()
    # the same times and UIDs on both runs
    monkeypatch.setattr(rest, "now_rfc3339", lambda: f"2026-01-01T03:00:{next(clock) // 7 % 60:02d}Z")
    monkeypatch.setattr(patching, "now_rfc3339", lambda: "2026-01-01T03:00:00Z")
    uids = itertools.count()
    monkeypatch.setattr(rest, "new_uid", lambda: f"00000000-0000-4000-8000-{next(uids) % 1000:012d}")

    def run(d: str) -> list[bytes]:
        nonlocal clock, uids
        clock, uids = itertools.count(), itertools.count()
        (tmp_path / d).mkdir()
        return asyncio.run(asyncio.wait_for(_run_writes(tmp_path / d, seed), 60))

    fast = run("fast")
    copying = merge_patch.apply_merge_patch
    copying_smp = strategic.apply_strategic_merge_patch
    with monkeypatch.context() as m:
        m.setattr(apply, "_owned_change", lambda *a: None)
        m.setattr(merge_patch, "apply_merge_patch", lambda obj, p, in_place=False: copying(obj, p))
        m.setattr(strategic, "apply_strategic_merge_patch",
                  lambda obj, p, g, v, k, in_place=False: copying_smp(obj, p, g, v, k))
        import pyk8s.api.patch as P

        m.setattr(P, "apply_merge_patch", merge_patch.apply_merge_patch)
        m.setattr(P, "apply_strategic_merge_patch", strategic.apply_strategic_merge_patch)
        general = run("general")
    assert len(fast) == len(general)
    for i, (a, b) in enumerate(zip(fast, general, strict=True)):
        assert a == b, (i, a[:400], b[:400])
    assert sum(b.startswith(b"[false") for b in fast) > 100  # most writes went through


# ---------------------------------------------------------------------------------------------
# strict decoding: times in the usual form settled without the full parser


def test_plain_time_shortcut_matches_full_parser() -> None:
    from pyk8s.api.schema._gocompat import parse_rfc3339_error
    from pyk8s.api.schema.strict import _time_error

    r = random.Random(5)
    values = []
    for _ in range(20000):
        year = r.choice(["2026", "2024", "1900", "2000", "0000", "2100"])
        fields = [year, f"{r.randint(0, 13):02d}", f"{r.randint(0, 32):02d}", f"{r.randint(0, 25):02d}",
                  f"{r.randint(0, 61):02d}", f"{r.randint(0, 61):02d}"]
        frac = r.choice(["", ".", "." + "1" * r.randint(1, 9), ",123", ".123456", ".123456"])
        v = f"{fields[0]}-{fields[1]}-{fields[2]}T{fields[3]}:{fields[4]}:{fields[5]}{frac}" + r.choice(
            ["Z", "Z", "+00:00", "z", "", "Z "])
        if r.random() < 0.3:
            i = r.randrange(len(v))
            v = v[:i] + r.choice("0123456789-:TZ.+, \u0663x") + v[i + 1:]
        values.append(v)
    for v in values:
        for micro in (False, True):
            assert _time_error.__wrapped__(v, micro) == parse_rfc3339_error(v, micro=micro), (v, micro)

"""A create's object handed to the watch cache (CacheSet.hand_over) is exactly what decoding the
stored bytes gives: same values, same types, same key order; and the reply is what a read gives."""

from __future__ import annotations

import asyncio
import copy
import random
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml

from pyk8s.apiserver.jsonwire import dumps as json_wire
from pyk8s.apiserver.negotiation import Output
from pyk8s.apiserver.rest import RequestContext

from ._handlers import check_hand_overs, start_handlers
from ._request import BodyRequest

SEEDS = Path(__file__).resolve().parents[1] / "integration" / "seed_manifests"


def _objects(rng: random.Random) -> list[dict[str, Any]]:
    out = [d for f in sorted(SEEDS.glob("*.yaml")) for d in yaml.safe_load_all(f.read_text()) if d]
    out += [
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "np"},
         "spec": {"type": "NodePort", "selector": {"a": "b"}, "ports": [{"port": 80, "targetPort": "http"}]}},
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1", "labels": {"k": "v"}}},
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "other"}},
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "hi"}, "value": 1000},
        {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"}, "spec": {"template": {"spec": {
            "restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}},
        {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "q"},
         "spec": {"hard": {"pods": "100000", "requests.cpu": "1000"}}},
        {"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "lr"},
         "spec": {"limits": [{"type": "Container", "default": {"cpu": "2"}}]}},
        {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "l"},
         "spec": {"holderIdentity": "x", "leaseDurationSeconds": 15, "renewTime": "2024-01-01T00:00:00.000000Z"}},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "f", "annotations": {"a": "1.5"}},
         "data": {"x": "ü\u2028"}, "binaryData": {"b": "AAE="}},
    ]
    for i in range(60):  # pods with odd but valid content: floats, unicode, big ints, empty maps
        spec: dict[str, Any] = {"containers": [{"name": "c", "image": "busybox", "resources": {
            "requests": {"cpu": rng.choice(["10m", "0.5", "1"]), "memory": "16Mi"}}}]}
        if i % 3 == 0:
            spec["priorityClassName"] = "hi"
            spec["activeDeadlineSeconds"] = 2**31 - 1
        if i % 4 == 0:
            spec["securityContext"] = {"runAsUser": 1000, "sysctls": []}
            spec["tolerations"] = [{"operator": "Exists"}]
        if i % 5 == 0:
            spec["automountServiceAccountToken"] = False
        md: dict[str, Any] = {"generateName": "g-"} if i % 7 == 0 else {"name": f"p{i}"}
        md["labels"] = {"app": "x", "i": str(i)}
        md["annotations"] = {"note": "é\t\"q\""}
        out.append({"apiVersion": "v1", "kind": "Pod", "metadata": md, "spec": spec})
    return out


def test_handed_objects_are_what_the_stored_bytes_decode_to(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(7)
    seen = check_hand_overs(monkeypatch)

    async def run() -> None:
        parts = await start_handlers(tmp_path)
        registry, store, rest, h = parts.registry, parts.store, parts.rest, parts.h
        out = Output("json")
        ctx = RequestContext

        async def create(obj: dict[str, Any], ns: str | None, ct: str = "application/json") -> Any:
            group, _, version = obj["apiVersion"].rpartition("/")
            res = registry.by_kind(group, obj["kind"], version)
            assert res is not None
            body = yaml.safe_dump(obj).encode() if ct == "application/yaml" else orjson.dumps(obj)
            # half of them with a field manager: managedFields entries are built by the server too
            c = ctx(field_manager="kubectl-create" if rng.random() < 0.5 else "")
            resp = await h.create(BodyRequest(body, ct), res, ns if res.namespaced else None, out, c)
            assert resp.status == 201, resp.body
            got = orjson.loads(resp.body)
            cached = (await rest.cache_for(registry.storage_resource(res))).objects[
                res.key(ns if res.namespaced else None, got["metadata"]["name"])]
            assert resp.body == json_wire(h.from_storage(res, cached))  # the reply is what a read gives
            return got

        await create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}}, None)
        for name in ("default", "bench"):
            await create({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name}}, "default")
        for obj in _objects(rng):
            obj = copy.deepcopy(obj)
            obj["metadata"].pop("namespace", None)
            await create(obj, "default")
        await asyncio.gather(*(create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"c{i}"}, "spec": {
            "containers": [{"name": "c", "image": "busybox"}]}}, "default") for i in range(50)))
        before = len(seen.shared)
        await create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "y"}, "data": {"d": "x"}},
                     "default", "application/yaml")
        assert len(seen.shared) == before  # a YAML body may hold values JSON does not round-trip
        await store.close()

    asyncio.run(asyncio.wait_for(run(), 60))
    assert not seen.differ, seen.differ[0]
    assert len(seen.shared) > 100 and seen.decoded >= 1

"""Updates hand their object to the watch cache too (RestStorage.update/delete with share): what the
cache keeps is exactly what decoding the stored bytes gives (values, types, key order), for every
write path that shares (PATCH of each JSON type, PUT, binding, graceful deletion), and the reply is
what a read gives. Apply and YAML bodies do not share."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml

from pyk8s.apiserver import subresources
from pyk8s.apiserver.jsonwire import dumps as json_wire
from pyk8s.apiserver.negotiation import Output
from pyk8s.apiserver.rest import RequestContext

from ._handlers import check_hand_overs, start_handlers
from ._request import BodyRequest


def test_updated_objects_handed_to_the_cache_are_what_the_stored_bytes_decode_to(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen = check_hand_overs(monkeypatch)
    shared, differ = seen.shared, seen.differ

    async def run() -> None:
        parts = await start_handlers(tmp_path)
        registry, store, rest, h = parts.registry, parts.store, parts.rest, parts.h
        out = Output("json")
        pods = registry.get("", "v1", "pods")
        cms = registry.get("", "v1", "configmaps")
        assert pods is not None and cms is not None

        def cached(res: Any, name: str) -> dict[str, Any]:
            return rest.caches.caches[rest.caches.prefix_of(res.key("default", name))].objects[res.key("default", name)]

        def reply_is_read(resp: Any, res: Any, name: str, exact: bool = True) -> None:
            assert resp.status in (200, 201), resp.body
            read = h.from_storage(res, cached(res, name))
            if exact:
                assert resp.body == json_wire(read)
            else:  # an unshared write's reply may order metadata's keys otherwise
                assert orjson.loads(resp.body) == read

        async def create(obj: dict[str, Any], ns: str | None) -> None:
            group, _, version = obj["apiVersion"].rpartition("/")
            res = registry.by_kind(group, obj["kind"], version)
            assert res is not None
            resp = await h.create(BodyRequest(orjson.dumps(obj), "application/json"), res, ns, out,
                                  RequestContext(field_manager="kubectl-create"))
            assert resp.status == 201, resp.body

        async def patch(res: Any, name: str, body: Any, ct: str, sub: str = "", manager: str = "m") -> Any:
            before = len(shared)
            data = yaml.safe_dump(body).encode() if ct.endswith("yaml") else orjson.dumps(body)
            req = BodyRequest(data, ct)
            req.query["fieldManager"] = manager  # as a client sends it (apply must name its manager)
            resp = await h.patch(req, res, "default", name, out, RequestContext(field_manager=manager, subresource=sub))
            reply_is_read(resp, res, name, exact=len(shared) > before)
            return resp

        await create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}}, None)
        await create({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}}, "default")
        for i in range(4):
            await create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p{i}", "labels": {"a": "b"}},
                          "spec": {"terminationGracePeriodSeconds": 30, "containers": [
                              {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "0.5"}}}]}}, "default")
        await create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}, "data": {"x": "1"}}, "default")

        n = len(shared)
        # merge patch of status (the kubelet's), adding new keys, floats and unicode
        await patch(pods, "p0", {"status": {"phase": "Running", "podIP": "10.0.0.1", "conditions": [
            {"type": "Ready", "status": "True", "lastProbeTime": None, "lastTransitionTime": "2024-01-01T00:00:00Z"}]}},
            "application/merge-patch+json", sub="status", manager="kubelet")
        await patch(pods, "p0", {"metadata": {"labels": {"new": "x", "a": None}, "annotations": {"f": "1.5é\u2028"}}},
                    "application/strategic-merge-patch+json")
        await patch(pods, "p1", [{"op": "add", "path": "/metadata/annotations", "value": {"k": "v"}}],
                    "application/json-patch+json")
        await patch(cms, "cm", {"data": {"y": "2", "x": None}}, "application/merge-patch+json")
        assert len(shared) == n + 4

        # PUT of a JSON body
        cur = dict(cached(cms, "cm"))
        cur["data"] = {"z": "3"}
        resp = await h.update(BodyRequest(orjson.dumps(cur), "application/json"), cms, "default", "cm", out,
                              RequestContext(field_manager="kubectl-edit"))
        reply_is_read(resp, cms, "cm")
        assert len(shared) == n + 5

        # binding, then a graceful deletion
        resp = await subresources.bind(h, "default", "p2", {"target": {"name": "node-a"}}, RequestContext())
        assert cached(pods, "p2")["spec"]["nodeName"] == "node-a"
        assert len(shared) == n + 6
        obj, now = await rest.delete(pods, "default", "p2", {}, RequestContext())
        assert not now and obj is cached(pods, "p2") and obj["metadata"]["deletionTimestamp"]
        assert len(shared) == n + 7

        # apply (YAML) does not share; a second patch after a shared one still works from the cache
        await patch(cms, "cm", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}, "data": {"w": "4"}},
                    "application/apply-patch+yaml", manager="applier")
        assert len(shared) == n + 7
        await patch(pods, "p0", {"status": {"phase": "Succeeded"}}, "application/merge-patch+json", sub="status",
                    manager="kubelet")
        assert len(shared) == n + 8
        assert cached(pods, "p0")["status"]["phase"] == "Succeeded"
        await store.close()

    asyncio.run(asyncio.wait_for(run(), 60))
    assert not differ, differ[0]

"""Writes that would change an object's kind or apiVersion, and rows already stored that way.

Upstream (recorded in /work/shared/reference/upstream-observed-safety.md): a merge PATCH
`{"apiVersion":"apps/v1"}` on a ConfigMap is 422 on field `patch` (`no kind "ConfigMap" is
registered for version "apps/v1" ...`), a JSON PATCH replacing /kind with Secret is 422
(`converting (v1.Secret) to (core.ConfigMap): unknown conversion`), and a strategic PATCH
`{"kind":"Secret"}` is 200 with the kind ignored. Nothing else may store a foreign kind either.
"""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest

from tests.cluster import Cluster, raw_request

# the tests build on each other's objects and restart the module's server: one worker runs them all
pytestmark = pytest.mark.xdist_group("kind-integrity")

NS = "kinds"
CM = f"/api/v1/namespaces/{NS}/configmaps"


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory):
    c = Cluster(str(tmp_path_factory.mktemp("kinds"))).start()
    c.kubectl("create", "namespace", NS)
    yield c
    c.stop()


def _new_cm(c: Cluster, name: str) -> dict[str, Any]:
    r = raw_request(c, "POST", CM, {"metadata": {"name": name}, "data": {"a": "b"}})
    assert r.status == 201, r.body
    return r.json()


def _patch(c: Cluster, name: str, ct: str, body: Any, query: str = "") -> Any:
    return raw_request(c, "PATCH", f"{CM}/{name}{query}", body, {"Content-Type": ct})


def _unchanged(c: Cluster, name: str, before: dict[str, Any]) -> None:
    r = raw_request(c, "GET", f"{CM}/{name}")
    assert r.status == 200, r.body
    got = r.json()
    assert (got["kind"], got["apiVersion"]) == ("ConfigMap", "v1")
    assert got["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    assert got["data"] == before["data"]


MERGE = "application/merge-patch+json"
JSONP = "application/json-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
APPLY = "application/apply-patch+yaml"


def test_merge_patch_to_another_api_version_is_invalid_and_stores_nothing(srv: Cluster) -> None:
    before = _new_cm(srv, "mv")
    r = srv.kubectl("patch", "cm", "mv", "-n", NS, "--type=merge", "-p", '{"apiVersion":"apps/v1"}', check=False)
    assert r.returncode != 0
    assert 'no kind "ConfigMap" is registered for version "apps/v1" in scheme ' \
           '"pkg/api/legacyscheme/scheme.go:30"' in r.stderr
    raw = _patch(srv, "mv", MERGE, {"apiVersion": "apps/v1"})
    assert raw.status == 422, raw.body
    st = raw.json()
    assert st["reason"] == "Invalid" and st["message"].startswith(' "" is invalid: patch: Invalid value: "{')
    assert [c["field"] for c in st["details"]["causes"]] == ["patch"]
    _unchanged(srv, "mv", before)
    # the object still answers every verb
    assert srv.kubectl("label", "cm", "mv", "-n", NS, "x=y").returncode == 0


def test_json_and_merge_patch_to_another_kind_is_invalid(srv: Cluster) -> None:
    before = _new_cm(srv, "jk")
    r = srv.kubectl("patch", "cm", "jk", "-n", NS, "--type=json",
                    "-p", '[{"op":"replace","path":"/kind","value":"Secret"}]', check=False)
    assert r.returncode != 0
    assert "converting (v1.Secret) to (core.ConfigMap): unknown conversion" in r.stderr
    for ct, body in ((JSONP, [{"op": "replace", "path": "/kind", "value": "Secret"}]),
                     (MERGE, {"kind": "Secret"}),
                     (MERGE, {"kind": "Deployment", "apiVersion": "apps/v1"}),
                     (JSONP, [{"op": "replace", "path": "/apiVersion", "value": "nope/v9"}]),
                     (MERGE, {"kind": 5}), (MERGE, {"apiVersion": ["v1"]})):
        raw = _patch(srv, "jk", ct, body)
        assert raw.status == 422, (ct, body, raw.body)
        assert raw.json()["details"]["causes"][0]["field"] == "patch"
    assert "converting (v1.Deployment) to (core.ConfigMap)" in _patch(
        srv, "jk", MERGE, {"kind": "Deployment", "apiVersion": "apps/v1"}).json()["message"]
    assert 'no kind "ConfigMap" is registered for version "nope/v9"' in _patch(
        srv, "jk", MERGE, {"apiVersion": "nope/v9"}).json()["message"]
    _unchanged(srv, "jk", before)


def test_strategic_patch_ignores_kind_and_api_version(srv: Cluster) -> None:
    before = _new_cm(srv, "sk")
    r = srv.kubectl("patch", "cm", "sk", "-n", NS, "-p", '{"kind":"Secret"}', "-o", "json")
    out = json.loads(r.stdout)
    assert (out["kind"], out["apiVersion"]) == ("ConfigMap", "v1")
    raw = _patch(srv, "sk", STRATEGIC, {"apiVersion": "apps/v1", "kind": "Secret"})
    assert raw.status == 200, raw.body
    assert (raw.json()["kind"], raw.json()["apiVersion"]) == ("ConfigMap", "v1")
    _unchanged(srv, "sk", before)  # nothing else changed: no write at all
    # a change alongside is made, under the right kind
    raw = _patch(srv, "sk", STRATEGIC, {"kind": "Secret", "data": {"c": "d"}})
    assert raw.status == 200 and raw.json()["kind"] == "ConfigMap" and raw.json()["data"]["c"] == "d"


def test_apply_with_another_kind_or_version_is_refused(srv: Cluster) -> None:
    before = _new_cm(srv, "ak")
    q = "?fieldManager=t&force=true"
    raw = _patch(srv, "ak", APPLY, {"apiVersion": "apps/v1", "kind": "ConfigMap", "metadata": {"name": "ak"}}, q)
    assert raw.status == 400, raw.body
    assert raw.json()["message"] == ("Incorrect version specified in apply patch. "
                                     "Specified patch version: apps/v1, expected: v1")
    raw = _patch(srv, "ak", APPLY, {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "ak"}}, q)
    assert raw.status == 400, raw.body
    _unchanged(srv, "ak", before)


def test_put_with_another_kind_is_refused_on_every_subresource(srv: Cluster) -> None:
    """The status subresource's PUT had skipped the body's kind check: a Service became a Secret."""
    before = _new_cm(srv, "pk")
    for body in ({**before, "kind": "Secret"}, {**before, "apiVersion": "apps/v1"}):
        r = raw_request(srv, "PUT", f"{CM}/pk", body)
        assert r.status == 400, r.body
    _unchanged(srv, "pk", before)
    svc = raw_request(srv, "POST", f"/api/v1/namespaces/{NS}/services",
                      {"metadata": {"name": "ps"}, "spec": {"ports": [{"port": 80}]}}).json()
    r = raw_request(srv, "PUT", f"/api/v1/namespaces/{NS}/services/ps/status", {**svc, "kind": "Secret"})
    assert r.status == 400, r.body
    dry = raw_request(srv, "PUT", f"/api/v1/namespaces/{NS}/services/ps/status?dryRun=All", {**svc, "kind": "Secret"})
    assert dry.status == 400, dry.body  # a dry run is refused alike
    assert r.json()["message"] == ('Secret in version "v1" cannot be handled as a Service: '
                                   "converting (v1.Secret) to (core.Service): unknown conversion")
    got = raw_request(srv, "GET", f"/api/v1/namespaces/{NS}/services/ps").json()
    assert got["kind"] == "Service" and got["metadata"]["resourceVersion"] == svc["metadata"]["resourceVersion"]


def test_refused_writes_leave_every_object_readable_after_restart(srv: Cluster) -> None:
    for name in ("rr1", "rr2"):
        _new_cm(srv, name)
    _patch(srv, "rr1", MERGE, {"apiVersion": "apps/v1"})
    _patch(srv, "rr2", JSONP, [{"op": "replace", "path": "/kind", "value": "Secret"}])
    srv.stop()
    srv.start()
    for name in ("mv", "jk", "sk", "ak", "pk", "rr1", "rr2"):
        r = raw_request(srv, "GET", f"{CM}/{name}")
        assert r.status == 200, (name, r.body)
        assert (r.json()["kind"], r.json()["apiVersion"]) == ("ConfigMap", "v1")
    assert not [line for line in srv.output if "stored object" in line]


def _corrupt(db: Path, key: str, **type_meta: str) -> None:
    """Write a new revision of key whose kind/apiVersion are foreign, as an earlier pyk8s could."""
    conn = sqlite3.connect(db)
    try:
        rev, created, value = conn.execute(
            "SELECT rev, created, value FROM kv WHERE key=? ORDER BY rev DESC LIMIT 1", (key,)).fetchone()
        obj = json.loads(value)
        obj.update(type_meta)
        top = conn.execute("SELECT max(rev) FROM kv").fetchone()[0]
        conn.execute("INSERT INTO kv(rev, key, created, deleted, prev_rev, value) VALUES (?,?,?,0,?,?)",
                     (top + 1, key, created, rev, json.dumps(obj).encode()))
        conn.execute("INSERT OR REPLACE INTO meta(name, value) VALUES ('revision', ?)", (top + 1,))
        conn.commit()
    finally:
        conn.close()


def test_rows_stored_with_a_foreign_kind_are_reported_and_can_be_deleted(srv: Cluster) -> None:
    for name in ("bad-version", "bad-kind", "bad-both"):
        _new_cm(srv, name)
    srv.stop()
    db = Path(srv.data_dir) / "state.db"
    _corrupt(db, f"/registry/configmaps/{NS}/bad-version", apiVersion="apps/v1")
    _corrupt(db, f"/registry/configmaps/{NS}/bad-kind", kind="Secret")
    _corrupt(db, f"/registry/configmaps/{NS}/bad-both", kind="Deployment", apiVersion="apps/v1")
    srv.output = []
    srv.start()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        reported = "".join(line for line in srv.output if "stored object" in line)
        if all(f"/registry/configmaps/{NS}/{n}" in reported for n in ("bad-version", "bad-kind", "bad-both")):
            break
        time.sleep(0.1)
    else:
        raise AssertionError("not reported at start:\n" + "".join(srv.output))
    # read, listed and deletable, under their resource's kind
    got = json.loads(srv.kubectl("get", "cm", "bad-version", "bad-kind", "bad-both", "-n", NS, "-o", "json").stdout)
    assert {(i["kind"], i["apiVersion"]) for i in got["items"]} == {("ConfigMap", "v1")}
    lst = raw_request(srv, "GET", CM).json()
    assert {(i.get("kind", "ConfigMap"), i.get("apiVersion", "v1")) for i in lst["items"]} == {("ConfigMap", "v1")}
    assert srv.kubectl("patch", "cm", "bad-version", "-n", NS, "--type=merge", "-p", '{"data":{"z":"1"}}').returncode == 0
    r = srv.kubectl("delete", "cm", "bad-kind", "bad-both", "-n", NS)
    assert 'configmap "bad-kind" deleted' in r.stdout and 'configmap "bad-both" deleted' in r.stdout
    assert raw_request(srv, "GET", f"{CM}/bad-kind").status == 404
    # the rewritten row is whole again: no report on the next start
    srv.stop()
    srv.output = []
    srv.start()
    assert raw_request(srv, "GET", f"{CM}/bad-version").json()["data"]["z"] == "1"
    assert not [line for line in srv.output if "stored object" in line]


GADGETS = "/apis/example.com/{v}/namespaces/kinds/gadgets"
GADGET_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "gadgets.example.com"},
    "spec": {"group": "example.com", "scope": "Namespaced",
             "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
             "versions": [{"name": v, "served": True, "storage": v == "v1",
                           "schema": {"openAPIV3Schema": {"type": "object",
                                                          "x-kubernetes-preserve-unknown-fields": True}}}
                          for v in ("v1", "v2")]},
}


def test_custom_resources_keep_their_kind_and_storage_version(srv: Cluster) -> None:
    srv.kubectl("apply", "-f", "-", input=json.dumps(GADGET_CRD))
    deadline = time.monotonic() + 15
    while raw_request(srv, "GET", GADGETS.format(v="v2")).status != 200:
        assert time.monotonic() < deadline, "CRD not served"
        time.sleep(0.1)
    r = raw_request(srv, "POST", GADGETS.format(v="v1"), {"apiVersion": "example.com/v1", "kind": "Gadget",
                                                         "metadata": {"name": "g"}, "spec": {"x": 1}})
    assert r.status == 201, r.body
    path = GADGETS.format(v="v1") + "/g"
    # another served version of the same kind: accepted, stored in the storage version
    r = raw_request(srv, "PATCH", path, {"apiVersion": "example.com/v2", "spec": {"x": 2}}, {"Content-Type": MERGE})
    assert r.status == 200, r.body
    assert r.json()["apiVersion"] == "example.com/v1" and r.json()["spec"]["x"] == 2
    for body in ({"kind": "Widget"}, {"apiVersion": "apps/v1"}, {"kind": "Secret", "apiVersion": "v1"}):
        r = raw_request(srv, "PATCH", path, body, {"Content-Type": MERGE})
        assert r.status == 422, (body, r.body)
    got = raw_request(srv, "GET", path).json()
    assert (got["kind"], got["apiVersion"], got["spec"]) == ("Gadget", "example.com/v1", {"x": 2})


def test_custom_resource_rows_stored_with_a_foreign_kind_are_reported(srv: Cluster) -> None:
    r = raw_request(srv, "POST", GADGETS.format(v="v1"), {"apiVersion": "example.com/v1", "kind": "Gadget",
                                                         "metadata": {"name": "bad-gadget"}})
    assert r.status == 201, r.body
    srv.stop()
    _corrupt(Path(srv.data_dir) / "state.db", f"/registry/example.com/gadgets/{NS}/bad-gadget", kind="Widget")
    srv.start()
    assert any(f"/registry/example.com/gadgets/{NS}/bad-gadget" in line for line in srv.output), \
        "".join(srv.output)
    got = raw_request(srv, "GET", GADGETS.format(v="v1") + "/bad-gadget").json()
    assert (got["kind"], got["apiVersion"]) == ("Gadget", "example.com/v1")
    assert raw_request(srv, "DELETE", GADGETS.format(v="v1") + "/bad-gadget").status == 200

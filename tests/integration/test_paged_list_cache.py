"""Paged LISTs from watch cache snapshots (apiserver/listsnapshot.py), as upstream's ListFromCacheSnapshot.

On each backend (SQLite, SQLite with two API worker processes, etcd): the pages of a paged
list are exactly the objects at the first page's resourceVersion while writes happen, with
remainingItemCount on every page as upstream's, selectors applied page by page; kubectl's
--chunk-size and the official client's _continue. A single process serves its pages without
reading the store; a continue whose snapshot is gone is read from the store at its revision,
and is 410 Expired once the store compacted that revision. Forged tokens are 400 and never
list another namespace's or resource's objects.
"""

from __future__ import annotations

import base64
import contextlib
import itertools
import json
import re
import time
from typing import Any

import pytest

from pyk8s.apiserver.listsnapshot import MAX_SNAPSHOTS
from tests.cluster import BOTH_DATASTORES, Cluster, raw_request
from tests.etcd_helper import EtcdCluster

pytestmark = [BOTH_DATASTORES, pytest.mark.xdist_group("paged-list-cache"), pytest.mark.timeout(120)]

NS = "pl-cache"
NS_OTHER = "pl-cache-other"
N = 40
BAD_TOKEN = "continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)"


def _cm(name: str, ns: str = NS, labels: dict[str, str] | None = None, v: str = "orig") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": ns, "labels": labels or {}}, "data": {"v": v}}


def _apply(c: Cluster, objs: list[dict[str, Any]]) -> None:
    c.kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": objs}))


@pytest.fixture(scope="module")
def seeded(cluster: Cluster) -> Cluster:
    cluster.kubectl("create", "namespace", NS)
    cluster.kubectl("create", "namespace", NS_OTHER)
    _apply(cluster, [_cm(f"cm-{i:02d}", labels={"tier": "a" if i % 2 else "b"}) for i in range(N)]
           + [_cm(f"cm-{i:02d}", NS_OTHER) for i in range(5)])
    return cluster


def _list(c: Cluster, path: str, **q: Any) -> dict[str, Any]:
    from urllib.parse import urlencode

    r = raw_request(c, "GET", f"{path}?{urlencode(q)}")
    assert r.status == 200, r.body[:500]
    return dict(r.json())


def _token(tok: str) -> dict[str, Any]:
    return dict(json.loads(base64.urlsafe_b64decode(tok + "=" * (-len(tok) % 4))))


def _forge(rv: Any, start: str) -> str:
    raw = json.dumps({"v": "meta.k8s.io/v1", "rv": rv, "start": start}).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _store_lists(c: Cluster, typ: str) -> float:
    """etcd_request_duration_seconds_count{operation="list",type}: the store reads of that type."""
    r = raw_request(c, "GET", "/metrics")
    line = 'etcd_request_duration_seconds_count{operation="list",type="' + typ + '"} '
    m = re.search("^" + re.escape(line) + r"(\S+)$", r.body.decode(), re.M)
    return float(m.group(1)) if m else 0.0


def test_pages_are_the_first_pages_state_while_writes_happen(seeded: Cluster, datastore: str):
    path = f"/api/v1/namespaces/{NS}/configmaps"
    first = _list(seeded, path, limit=10)
    rv = first["metadata"]["resourceVersion"]
    assert [o["metadata"]["name"] for o in first["items"]] == [f"cm-{i:02d}" for i in range(10)]
    total = N + 1  # and kube-root-ca.crt
    assert first["metadata"]["remainingItemCount"] == total - 10
    # upstream's token: the list's resourceVersion and the key after the last item, relative to the prefix
    assert _token(first["metadata"]["continue"]) == {"v": "meta.k8s.io/v1", "rv": int(rv), "start": "cm-09\x00"}
    # writes after the first page: a delete and an update on later pages, a create among them
    seeded.kubectl("delete", "configmap", "cm-25", "-n", NS)
    _apply(seeded, [_cm("cm-30", labels={"tier": "b"}, v="new"), _cm("cm-155")])
    seen = [o["metadata"]["name"] for o in first["items"]]
    cont = first["metadata"]["continue"]
    remaining = [total - 20, total - 30, total - 40]
    while cont:
        page = _list(seeded, path, limit=10, **{"continue": cont})
        assert page["metadata"]["resourceVersion"] == rv
        for o in page["items"]:
            assert int(o["metadata"]["resourceVersion"]) <= int(rv)
            if o["metadata"]["name"] == "cm-30":
                assert o["data"] == {"v": "orig"}
        seen += [o["metadata"]["name"] for o in page["items"]]
        cont = page["metadata"].get("continue", "")
        if cont:
            assert page["metadata"]["remainingItemCount"] == remaining.pop(0)
        else:
            assert "remainingItemCount" not in page["metadata"]
    assert seen == [f"cm-{i:02d}" for i in range(N)] + ["kube-root-ca.crt"]
    # a new list sees the writes
    now = _list(seeded, path, limit=100)
    names = [o["metadata"]["name"] for o in now["items"]]
    assert "cm-25" not in names and "cm-155" in names and len(names) == total
    seeded.kubectl("delete", "configmap", "cm-155", "-n", NS)
    _apply(seeded, [_cm("cm-25", labels={"tier": "a"})])


def test_selectors_page_on_the_snapshot_without_reading_the_store(seeded: Cluster, datastore: str):
    path = f"/api/v1/namespaces/{NS}/configmaps"
    before = _store_lists(seeded, "configmaps")
    got: list[str] = []
    cont = ""
    pages = 0
    while True:
        q: dict[str, Any] = {"limit": 4, "labelSelector": "tier=a", "fieldSelector": "metadata.name!=cm-03"}
        if cont:
            q["continue"] = cont
        page = _list(seeded, path, **q)
        pages += 1
        # upstream counts remaining items only without selectors
        assert "remainingItemCount" not in page["metadata"]
        got += [o["metadata"]["name"] for o in page["items"]]
        cont = page["metadata"].get("continue", "")
        if not cont:
            break
        if pages == 2:  # a matching object created mid-list is not in this list
            _apply(seeded, [_cm("cm-351", labels={"tier": "a"})])
    assert got == [f"cm-{i:02d}" for i in range(N) if i % 2 and i != 3]
    assert pages == 5
    if datastore != "sqlite-workers":  # (a worker's own /metrics; pages may reach either worker)
        assert _store_lists(seeded, "configmaps") == before
    seeded.kubectl("delete", "configmap", "cm-351", "-n", NS)


def test_exact_resource_version_from_a_kept_snapshot(seeded: Cluster, datastore: str):
    path = f"/api/v1/namespaces/{NS}/configmaps"
    first = _list(seeded, path, limit=5)
    rv = first["metadata"]["resourceVersion"]
    _apply(seeded, [_cm("cm-02", labels={"tier": "b"}, v="later")])
    before = _store_lists(seeded, "configmaps")
    for q in ({"resourceVersion": rv, "resourceVersionMatch": "Exact"}, {"resourceVersion": rv, "limit": 5}):
        got = _list(seeded, path, **q)
        assert got["metadata"]["resourceVersion"] == rv
        cm2 = [o for o in got["items"] if o["metadata"]["name"] == "cm-02"]
        assert cm2[0]["data"] == {"v": "orig"}
    if datastore != "sqlite-workers":
        assert _store_lists(seeded, "configmaps") == before
    _apply(seeded, [_cm("cm-02", labels={"tier": "b"})])


def test_kubectl_chunk_size(seeded: Cluster, datastore: str):
    before = _store_lists(seeded, "configmaps")
    out = seeded.kubectl("get", "configmaps", "-n", NS, "--chunk-size=7", "-o", "name").stdout.split()
    assert out == [f"configmap/cm-{i:02d}" for i in range(N)] + ["configmap/kube-root-ca.crt"]
    out = seeded.kubectl("get", "configmaps", "-A", "--chunk-size=3", "-l", "tier=b", "-o", "name").stdout.split()
    assert out == [f"configmap/cm-{i:02d}" for i in range(0, N, 2)]
    table = seeded.kubectl("get", "configmaps", "-n", NS, "--chunk-size=9").stdout.splitlines()
    assert len(table) == N + 2 and table[0].split()[:2] == ["NAME", "DATA"]
    if datastore != "sqlite-workers":
        assert _store_lists(seeded, "configmaps") == before


def test_official_client_continue(seeded: Cluster, datastore: str):
    from kubernetes import client

    v1 = client.CoreV1Api(seeded.api_client())
    names: list[str] = []
    counts: list[int | None] = []
    cont = None
    while True:
        page = v1.list_namespaced_config_map(NS, limit=9, _continue=cont)
        names += [o.metadata.name for o in page.items]
        counts.append(page.metadata.remaining_item_count)
        cont = page.metadata._continue
        if not cont:
            break
    total = N + 1  # and kube-root-ca.crt
    assert names == sorted(names) and len(names) == total
    assert counts == [total - 9, total - 18, total - 27, total - 36, None]


@pytest.mark.parametrize("start", ["../pl-cache-other/cm-00\x00", "./cm-01\x00", "cm-01/../../x\x00", "a//b\x00",
                                   "cm-01/\x00/", "", "//" + NS_OTHER + "/cm-00\x00"])
def test_forged_continue_key_is_400(seeded: Cluster, start: str):
    r = raw_request(seeded, "GET", f"/api/v1/namespaces/{NS}/configmaps?limit=5&continue={_forge(5, start)}")
    st = r.json()
    assert (r.status, st["reason"], st["message"]) == (400, "BadRequest", BAD_TOKEN), r.body


@pytest.mark.parametrize("token", ["!!!", "e30", _forge(0, "cm-01\x00"), _forge(-1, "cm-01\x00"),
                                   _forge("x", "cm-01\x00"), base64.urlsafe_b64encode(b'{"v":"v2","rv":5,"start":"a"}')
                                   .decode().rstrip("=")])
def test_malformed_continue_token_is_400(seeded: Cluster, token: str):
    r = raw_request(seeded, "GET", f"/api/v1/namespaces/{NS}/configmaps?limit=5&continue={token}")
    st = r.json()
    assert (r.status, st["reason"], st["message"]) == (400, "BadRequest", BAD_TOKEN), r.body


def test_token_keys_stay_in_the_lists_prefix(seeded: Cluster):
    """A clean start key is always below the listed prefix: another namespace's or resource's
    keys are never reached, whatever the token names."""
    rv = _list(seeded, f"/api/v1/namespaces/{NS}/configmaps", limit=1)["metadata"]["resourceVersion"]
    # an absolute start key is the same key (upstream cleans it as a path): the page after cm-05
    page = _list(seeded, f"/api/v1/namespaces/{NS}/configmaps", limit=3, **{"continue": _forge(int(rv), "/cm-05\x00")})
    assert [o["metadata"]["name"] for o in page["items"]] == ["cm-06", "cm-07", "cm-08"]
    # a namespaced start key on one namespace's list: still that namespace's objects only
    page = _list(seeded, f"/api/v1/namespaces/{NS_OTHER}/configmaps", limit=50,
                 **{"continue": _forge(int(rv), f"{NS}/cm-00\x00")})
    assert {o["metadata"]["namespace"] for o in page["items"]} <= {NS_OTHER}
    # a configmaps token on secrets: secrets only
    page = _list(seeded, f"/api/v1/namespaces/{NS}/secrets", limit=50, **{"continue": _forge(int(rv), "cm-05\x00")})
    assert page["kind"] == "SecretList" and not any(o["metadata"]["name"].startswith("cm-") for o in page["items"])
    # a start past every key: an empty page
    page = _list(seeded, f"/api/v1/namespaces/{NS}/configmaps", limit=5, **{"continue": _forge(int(rv), "zzz\x00")})
    assert page["items"] == [] and "continue" not in page["metadata"]


# ---- snapshots gone: the store, then 410 ---------------------------------------------------------------


@pytest.fixture(scope="module")
def compacting(tmp_path_factory: pytest.TempPathFactory, datastore: str):
    """A single API process (snapshots are per process) whose store keeps one second of history."""
    if datastore == "sqlite-workers":
        pytest.skip("snapshots are per process: covered on sqlite and etcd")
    with contextlib.ExitStack() as stack:
        etcd = None
        if datastore == "etcd":  # its own: compaction is of the whole etcd, other servers' history too
            etcd = stack.enter_context(EtcdCluster(tmp_path_factory.mktemp("etcd-compact"), 1))
        c = Cluster(str(tmp_path_factory.mktemp(f"pyk8s-compact-{datastore}")), datastore=datastore, etcd=etcd,
                    extra_args=["--compaction-interval", "1"])
        c.start()
        stack.callback(c.stop)
        c.kubectl("create", "namespace", NS)
        _apply(c, [_cm(f"cm-{i:02d}") for i in range(12)])
        yield c


_seq = itertools.count()


def _create(c: Cluster, prefix: str, ns: str = NS) -> None:
    """A new configmap (one request: no kubectl process in loops)."""
    name = f"{prefix}-{next(_seq)}"
    r = raw_request(c, "POST", f"/api/v1/namespaces/{ns}/configmaps", body=_cm(name, ns))
    assert r.status == 201, r.body


def _expire_snapshots(c: Cluster, ns: str = NS) -> None:
    """Every kept snapshot of configmaps replaced: a change, then a paged list, MAX_SNAPSHOTS + 1 times."""
    for _ in range(MAX_SNAPSHOTS + 1):
        _create(c, "churn", ns)
        assert "continue" in _list(c, f"/api/v1/namespaces/{ns}/configmaps", limit=2)["metadata"]


def _wait_compacted_past(c: Cluster, rev: int) -> None:
    """Until the store answers a read at rev with 410 (no snapshot holds that revision)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        _create(c, "tick")  # the compactor needs newer revisions
        token = _forge(rev, "cm-00\x00")
        r = raw_request(c, "GET", f"/api/v1/namespaces/{NS}/configmaps?limit=2&continue={token}")
        if r.status == 410:
            return
        assert r.status == 200, r.body
        time.sleep(0.2)
    raise AssertionError(f"revision {rev} was not compacted")


def test_continue_from_snapshot_after_compaction_then_410(compacting: Cluster):
    c = compacting
    path = f"/api/v1/namespaces/{NS}/configmaps"
    _apply(c, [_cm("cm-00", v="before")])
    changed = int(json.loads(c.kubectl("get", "configmap", "cm-00", "-n", NS, "-o", "json").stdout)
                  ["metadata"]["resourceVersion"])
    first = _list(c, path, limit=4)
    rv = int(first["metadata"]["resourceVersion"])
    _apply(c, [_cm("cm-07", v="after")])
    c.kubectl("delete", "configmap", "cm-09", "-n", NS)
    # the store no longer has the revision before the snapshot's: the snapshot still serves the list
    _wait_compacted_past(c, changed - 1)
    page = _list(c, path, limit=4, **{"continue": first["metadata"]["continue"]})
    assert [o["metadata"]["name"] for o in page["items"]] == ["cm-04", "cm-05", "cm-06", "cm-07"]
    assert page["items"][3]["data"] == {"v": "orig"} and page["metadata"]["resourceVersion"] == str(rv)
    cont = page["metadata"]["continue"]
    # once the snapshot is gone too: 410 as upstream's, with its message
    _expire_snapshots(c)
    _wait_compacted_past(c, rv)
    r = raw_request(c, "GET", f"{path}?limit=4&continue={cont}")
    st = r.json()
    assert (r.status, st["reason"], st["code"]) == (410, "Expired", 410), r.body
    assert st["message"].startswith("The provided continue parameter is too old to display a consistent list "
                                    "result. You can start a new list without the continue parameter, or use "
                                    "the continue token in this response")
    _apply(c, [_cm("cm-09")])


def test_continue_falls_back_to_the_store_when_the_snapshot_is_gone(seeded: Cluster, datastore: str):
    if datastore == "sqlite-workers":
        pytest.skip("snapshots are per process: covered on sqlite and etcd")
    ns = "pl-fallback"
    seeded.kubectl("create", "namespace", ns)
    _apply(seeded, [_cm(f"cm-{i:02d}", ns) for i in range(12)])
    path = f"/api/v1/namespaces/{ns}/configmaps"
    first = _list(seeded, path, limit=5)
    _apply(seeded, [_cm("cm-06", ns, v="after")])
    seeded.kubectl("delete", "configmap", "cm-08", "-n", ns)
    before = _store_lists(seeded, "configmaps")
    page = _list(seeded, path, limit=5, **{"continue": first["metadata"]["continue"]})
    assert _store_lists(seeded, "configmaps") == before  # from the snapshot
    _expire_snapshots(seeded, ns)
    before = _store_lists(seeded, "configmaps")
    page = _list(seeded, path, limit=5, **{"continue": first["metadata"]["continue"]})
    assert _store_lists(seeded, "configmaps") == before + 1  # the snapshot is gone: one store read at its revision
    assert [o["metadata"]["name"] for o in page["items"]] == [f"cm-{i:02d}" for i in range(5, 10)]
    assert page["items"][1]["data"] == {"v": "orig"}
    assert page["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]
    assert page["metadata"]["remainingItemCount"] == 3  # cm-10, cm-11, kube-root-ca.crt

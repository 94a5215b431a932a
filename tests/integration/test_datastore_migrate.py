"""`pyk8s datastore migrate`: a cluster made on SQLite moves to etcd and back, and works there.

Given a server on SQLite and objects made with kubectl (namespaces, configmaps, a deployment and
what its controller made, a CRD and a custom resource, a secret), when the server is stopped and
its state is migrated to etcd, then every key is in etcd with its value unchanged, a server on
etcd shows the same objects (same uids, data and specs), and it creates, updates and watches.
The same from etcd back to SQLite. As k3s after a datastore move, resourceVersions are new.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from typing import Any

import pytest

from pyk8s.apiserver.endpoint_reconciler import MASTER_LEASES
from pyk8s.storage import Store, open_store
from tests.cluster import REPO, Cluster, raw_request, shared_etcd

pytestmark = pytest.mark.timeout(180)

CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "gadgets.example.org"},
    "spec": {
        "group": "example.org", "scope": "Namespaced",
        "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
        "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
            "type": "object", "properties": {"spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}}}],
    },
}
KINDS = "namespaces,configmaps,secrets,deployments,replicasets,gadgets"


def migrate(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pyk8s.cli", "datastore", "migrate", *args], capture_output=True,
                          text=True, cwd=str(REPO), timeout=120)


def view(c: Cluster) -> dict[tuple[str, str, str], Any]:
    """What kubectl shows of the objects, less what a datastore move renews (resourceVersions)."""
    items = json.loads(c.kubectl("get", KINDS, "-A", "-o", "json").stdout)["items"]
    out = {}
    for i in items:
        md = i["metadata"]
        data = i.get("data")
        if (md.get("namespace"), md["name"]) == ("kube-public", "cluster-info"):
            data = None  # each server start publishes its own address there, as kubeadm's does
        out[(i["kind"], md.get("namespace", ""), md["name"])] = (
            md["uid"], md["creationTimestamp"], md.get("labels"), data, i.get("spec"))
    return out


def names(c: Cluster) -> list[str]:
    return sorted(c.kubectl("get", KINDS, "-A", "-o", "name").stdout.split())


def dump(endpoint: str, prefix: str = "/registry", leases: bool = False) -> dict[str, bytes]:
    """Every key and value in a store; without the API servers' master leases (not migrated) unless leases."""
    async def main() -> dict[str, bytes]:
        s: Store = open_store(endpoint, "", prefix=prefix)
        await s.start()
        try:
            r = await s.range("/registry/")
            return {kv.key: kv.value for kv in r.kvs if leases or not kv.key.startswith(MASTER_LEASES)}
        finally:
            await s.close()

    return asyncio.run(main())


def wait_for(cond: Any, what: str, timeout: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = cond()
        if got:
            return got
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def make_objects(c: Cluster) -> None:
    c.kubectl("create", "namespace", "mig")
    c.kubectl("create", "namespace", "mig-other")
    c.kubectl("create", "configmap", "settings", "-n", "mig", "--from-literal=color=blue", "--from-literal=n=1")
    c.kubectl("create", "configmap", "other", "-n", "mig-other", "--from-literal=x=y")
    c.kubectl("create", "secret", "generic", "creds", "-n", "mig", "--from-literal=password=s3cret")
    c.kubectl("create", "deployment", "web", "-n", "mig", "--image=nginx:1.27", "--replicas=2")
    c.kubectl("apply", "-f", "-", input=json.dumps(CRD))
    wait_for(lambda: raw_request(c, "GET", "/apis/example.org/v1/gadgets").status == 200, "the CRD to be served")
    c.kubectl("apply", "-f", "-", input=json.dumps({
        "apiVersion": "example.org/v1", "kind": "Gadget", "metadata": {"name": "g1", "namespace": "mig"},
        "spec": {"size": 3, "colors": ["red", "green"]}}))
    # the deployment controller has made its ReplicaSet (and the pods that stay pending)
    wait_for(lambda: c.kubectl("get", "rs", "-n", "mig", "-o", "name").stdout.strip(), "the ReplicaSet")


def works(c: Cluster, tag: str) -> None:
    """Create, update and watch on a server that runs on migrated state."""
    base = "/api/v1/namespaces/mig/configmaps"
    lst = raw_request(c, "GET", base).json()
    rv = lst["metadata"]["resourceVersion"]
    c.kubectl("create", "configmap", f"new-{tag}", "-n", "mig", "--from-literal=a=b")
    c.kubectl("label", "configmap", "settings", "-n", "mig", f"moved-{tag}=yes")
    got = json.loads(c.kubectl("get", "configmap", "settings", "-n", "mig", "-o", "json").stdout)
    assert got["metadata"]["labels"][f"moved-{tag}"] == "yes" and got["data"] == {"color": "blue", "n": "1"}
    w = raw_request(c, "GET", f"{base}?watch=true&resourceVersion={rv}&timeoutSeconds=1")
    events = [json.loads(line) for line in w.body.splitlines() if line.strip()]
    seen = [(e["type"], e["object"]["metadata"]["name"]) for e in events]
    assert ("ADDED", f"new-{tag}") in seen and ("MODIFIED", "settings") in seen, seen
    # a stale update (an old resourceVersion) is still refused
    stale = dict(got, data={"color": "red"})
    stale["metadata"] = dict(got["metadata"], resourceVersion=rv)
    r = raw_request(c, "PUT", f"{base}/settings", body=stale)
    assert r.status == 409, r.body


def test_sqlite_to_etcd_and_back(tmp_path):
    etcd = shared_etcd()
    data = str(tmp_path / "data")
    sqlite_path = os.path.join(data, "state.db")
    prefix = f"/migrated-{os.getpid()}-{time.monotonic_ns()}"

    # given: a cluster on SQLite with objects made by kubectl
    c = Cluster(data).start()
    try:
        make_objects(c)
        before_view, before_names = view(c), names(c)
    finally:
        # killed, as in a crash: every acknowledged write is on disk, and so is the server's master
        # lease (a graceful stop removes it), which is ephemeral and not copied
        c.kill9()
    source = dump(f"sqlite://{sqlite_path}")
    assert len(dump(f"sqlite://{sqlite_path}", leases=True)) - len(source) == 1

    # when: its state is migrated to etcd
    r = migrate("--from", f"sqlite://{sqlite_path}", "--to", etcd.endpoint, "--to-etcd-prefix", prefix)
    assert r.returncode == 0, r.stderr
    assert f"copied {len(source)} keys" in r.stdout, r.stdout
    summary = {line.split()[0]: int(line.split()[1]) for line in r.stdout.splitlines()[2:] if line.startswith("  ")}
    assert summary["configmaps"] >= 3 and summary["secrets"] >= 1 and summary["namespaces"] >= 2
    assert summary["deployments"] == 1 and summary["replicasets"] == 1 and summary["gadgets.example.org"] == 1
    assert summary["customresourcedefinitions"] == 1
    assert sum(summary.values()) == len(source)
    assert "keys/s" in r.stderr  # the progress line
    assert "not copied: 1 API server master lease" in r.stdout

    # then: every key is in etcd, under the new prefix, with the same bytes
    assert dump(etcd.endpoint, prefix) == source
    # and a second copy into the now non-empty target is refused unless forced
    again = migrate("--from", f"sqlite://{sqlite_path}", "--to", etcd.endpoint, "--to-etcd-prefix", prefix)
    assert again.returncode == 1 and "already holds" in again.stderr and "--force" in again.stderr
    forced = migrate("--from", f"sqlite://{sqlite_path}", "--to", etcd.endpoint, "--to-etcd-prefix", prefix,
                     "--force", "--quiet")
    assert forced.returncode == 0 and f"after deleting the {len(source)} keys" in forced.stdout, forced.stdout
    assert dump(etcd.endpoint, prefix) == source

    # and a server on etcd shows the same cluster, and works
    e = Cluster(data, ["--etcd-prefix", prefix], datastore="etcd", etcd=etcd).start()
    try:
        assert names(e) == before_names
        assert view(e) == before_view
        works(e, "etcd")
        on_etcd = view(e)
    finally:
        e.stop()

    # when: the etcd state goes back to a new SQLite file
    back = os.path.join(str(tmp_path), "back", "state.db")
    r = migrate("--from", etcd.endpoint, "--etcd-prefix", prefix, "--to", f"sqlite://{back}")
    assert r.returncode == 0, r.stderr
    assert dump(f"sqlite://{back}") == dump(etcd.endpoint, prefix)

    # then: a server on it shows what the etcd server had, including its new objects, and works
    s = Cluster(data, ["--datastore-endpoint", f"sqlite://{back}"]).start()
    try:
        assert view(s) == on_etcd
        works(s, "back")
    finally:
        s.stop()


def test_refusals(tmp_path):
    db = tmp_path / "a.db"
    r = migrate("--from", f"sqlite://{db}", "--to", f"sqlite://{tmp_path / 'b.db'}")
    assert r.returncode == 1 and "no SQLite database" in r.stderr
    r = migrate("--from", f"sqlite://{db}", "--to", f"sqlite://{db}")
    assert r.returncode == 2 and "same datastore" in r.stderr
    r = migrate("--from", str(db), "--to", f"sqlite://{tmp_path / 'b.db'}")
    assert r.returncode == 2 and "sqlite://PATH" in r.stderr

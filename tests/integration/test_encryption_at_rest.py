"""`pyk8s server --encryption-provider-config FILE`: upstream's EncryptionConfiguration keeps the
listed resources encrypted in the store, on SQLite (also behind API workers) and on etcd.

The bytes in state.db, its WAL and etcd carry upstream's `k8s:enc:<provider>:v1:<key>:` prefix and
never the plaintext; kubectl and the official client read the objects as usual; the rotation
procedure upstream documents (add a key, restart, `kubectl get secrets -A -o json | kubectl
replace -f -`, remove the old key) works end to end; a wrong key and a bad file are refused.
"""

from __future__ import annotations

import base64
import json
import os
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cluster import Cluster
from tests.etcd_helper import etcdctl

pytestmark = pytest.mark.timeout(120)

SECRET_MARKER = "s3cr3t-MARKER-7f9e2a"
CM_MARKER = "cm-MARKER-41c0"
APPS_MARKER = "apps-MARKER-b81d"
CR_MARKER = "cr-MARKER-90aa"
CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "gadgets.enc.example.com"},
    "spec": {"group": "enc.example.com", "scope": "Namespaced",
             "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
             "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                 "type": "object", "x-kubernetes-preserve-unknown-fields": True}}}]},
}


def _key(n: int = 32) -> str:
    return base64.b64encode(os.urandom(n)).decode()


def _write_config(path: Path, rules: list[tuple[list[str], list[dict]]]) -> str:
    doc = {"apiVersion": "apiserver.config.k8s.io/v1", "kind": "EncryptionConfiguration",
           "resources": [{"resources": r, "providers": p} for r, p in rules]}
    path.write_text(json.dumps(doc))  # JSON is YAML: upstream reads either
    return str(path)


def _keyed(kind: str, *keys: tuple[str, str]) -> dict:
    return {kind: {"keys": [{"name": n, "secret": s} for n, s in keys]}}


def _raw_state(c: Cluster) -> bytes:
    """Every byte the server keeps for the cluster's objects: state.db and its WAL/SHM, or etcd's values."""
    if c.datastore == "etcd":
        r = etcdctl(f"http://{c.etcd.endpoints[0]}", "get", "--prefix", c.etcd_prefix, "-w", "json")
        return b"".join(base64.b64decode(kv["value"]) + b"\n" for kv in json.loads(r.stdout).get("kvs", []))
    return b"".join(p.read_bytes() for p in Path(c.data_dir).glob("state.db*"))


def _stored(c: Cluster, key: str) -> bytes:
    """The current stored value of one key."""
    if c.datastore == "etcd":
        ekey = c.etcd_prefix + key[len("/registry"):]
        r = etcdctl(f"http://{c.etcd.endpoints[0]}", "get", ekey, "-w", "json")
        return base64.b64decode(json.loads(r.stdout)["kvs"][0]["value"])
    with sqlite3.connect(os.path.join(c.data_dir, "state.db")) as db:
        row = db.execute("SELECT value FROM kv WHERE key = ? ORDER BY rev DESC LIMIT 1", (key,)).fetchone()
    return bytes(row[0])


@pytest.fixture(scope="module", params=["sqlite", "sqlite-workers", "etcd"])
def encrypted(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """Secrets with aescbc, configmaps with aesgcm, the apps group with secretbox, a custom resource
    with aesgcm; the rest in plaintext."""
    if request.param == "etcd":
        from tests.conftest import require_binary

        require_binary("etcd")
    d = tmp_path_factory.mktemp(f"pyk8s-enc-{request.param}")
    cfg = _write_config(d / "encryption.yaml", [
        (["secrets"], [_keyed("aescbc", ("key1", _key())), {"identity": {}}]),
        (["configmaps"], [_keyed("aesgcm", ("gcm1", _key(16)))]),
        (["*.apps"], [_keyed("secretbox", ("box1", _key()))]),
        (["gadgets.enc.example.com"], [_keyed("aesgcm", ("cr1", _key(24)))]),
    ])
    c = Cluster(str(d / "data"), extra_args=["--encryption-provider-config", cfg], datastore=request.param)
    c.start()
    yield c
    c.stop()


def test_listed_resources_are_stored_encrypted_in_upstreams_format(encrypted: Cluster) -> None:
    c = encrypted
    c.kubectl("create", "namespace", "enc")
    c.kubectl("create", "secret", "generic", "s1", "-n", "enc", f"--from-literal=password={SECRET_MARKER}")
    c.kubectl("create", "configmap", "c1", "-n", "enc", f"--from-literal=k={CM_MARKER}")
    # (no replicas: pods are core objects, outside *.apps)
    c.kubectl("create", "deployment", "d1", "-n", "enc", "--image=busybox", "--replicas=0", "--", "echo", APPS_MARKER)
    c.kubectl("create", "serviceaccount", "plain-sa", "-n", "enc")
    c.kubectl("apply", "-f", "-", input=json.dumps(CRD))
    c.kubectl("wait", "--for=condition=Established", "crd/gadgets.enc.example.com")
    gadget = {"apiVersion": "enc.example.com/v1", "kind": "Gadget", "metadata": {"name": "g1", "namespace": "enc"},
              "spec": {"code": CR_MARKER}}
    for _ in range(50):  # discovery may lag the Established condition by a moment
        if c.kubectl("apply", "-f", "-", input=json.dumps(gadget), check=False).returncode == 0:
            break
        time.sleep(0.2)
    assert c.kubectl("get", "gadgets", "g1", "-n", "enc", "-o", "jsonpath={.spec.code}").stdout == CR_MARKER
    # read back as usual: kubectl (get, list) and the official client
    got = json.loads(c.kubectl("get", "secret", "s1", "-n", "enc", "-o", "json").stdout)
    assert base64.b64decode(got["data"]["password"]).decode() == SECRET_MARKER
    assert c.kubectl("get", "configmaps", "-n", "enc", "-o", "jsonpath={.items[?(@.metadata.name=='c1')].data.k}"
                     ).stdout == CM_MARKER
    from kubernetes import client

    with c.api_client() as api:
        s = client.CoreV1Api(api).read_namespaced_secret("s1", "enc")
        assert base64.b64decode(s.data["password"]).decode() == SECRET_MARKER
        d = client.AppsV1Api(api).read_namespaced_deployment("d1", "enc")
        assert APPS_MARKER in d.spec.template.spec.containers[0].command
    # an update goes through the transformer too
    c.kubectl("label", "secret", "s1", "-n", "enc", "touched=yes")
    raw = _raw_state(c)
    for marker in (SECRET_MARKER, CM_MARKER, APPS_MARKER, CR_MARKER):
        assert marker.encode() not in raw
        assert base64.b64encode(marker.encode()) not in raw
    assert _stored(c, "/registry/secrets/enc/s1").startswith(b"k8s:enc:aescbc:v1:key1:")
    assert _stored(c, "/registry/configmaps/enc/c1").startswith(b"k8s:enc:aesgcm:v1:gcm1:")
    assert _stored(c, "/registry/deployments/enc/d1").startswith(b"k8s:enc:secretbox:v1:box1:")
    assert _stored(c, "/registry/enc.example.com/gadgets/enc/g1").startswith(b"k8s:enc:aesgcm:v1:cr1:")
    assert _stored(c, "/registry/serviceaccounts/enc/plain-sa").startswith(b"{")  # not listed: plaintext


def test_watch_delete_and_conflicts_on_encrypted_resources(encrypted: Cluster) -> None:
    c = encrypted
    c.kubectl("create", "namespace", "enc2")
    from kubernetes import client, watch

    with c.api_client() as api:
        core = client.CoreV1Api(api)
        created = core.create_namespaced_secret("enc2", client.V1Secret(
            metadata=client.V1ObjectMeta(name="w1"), string_data={"k": SECRET_MARKER}))
        w = watch.Watch()
        seen = []
        for ev in w.stream(core.list_namespaced_secret, "enc2", resource_version="0", timeout_seconds=5):
            seen.append((ev["type"], ev["object"].metadata.name))
            if ev["object"].metadata.name == "w1":
                assert base64.b64decode(ev["object"].data["k"]).decode() == SECRET_MARKER
                w.stop()
        assert ("ADDED", "w1") in seen
        stale = created
        stale.data = {"k": base64.b64encode(b"first").decode()}
        core.replace_namespaced_secret("w1", "enc2", stale)
        stale.data = {"k": base64.b64encode(b"second").decode()}
        with pytest.raises(client.ApiException) as e:
            core.replace_namespaced_secret("w1", "enc2", stale)
        assert e.value.status == 409
        assert base64.b64decode(core.read_namespaced_secret("w1", "enc2").data["k"]) == b"first"
        core.delete_namespaced_secret("w1", "enc2")
    assert c.kubectl("get", "secret", "w1", "-n", "enc2", check=False).returncode != 0


def _rewrite_all_secrets(c: Cluster) -> None:
    listed = c.kubectl("get", "secrets", "-A", "-o", "json").stdout
    c.kubectl("replace", "-f", "-", input=listed)


def test_key_rotation_as_upstream_documents(tmp_path: Path) -> None:
    """https://kubernetes.io/docs/tasks/administer-cluster/encrypt-data/ : plaintext -> key1 -> key2,
    each step a restart and a rewrite of every Secret, then the old key removed; a wrong key refused."""
    data = tmp_path / "data"
    k1, k2 = ("key1", _key()), ("key2", _key())
    c = Cluster(str(data)).start()
    try:
        c.kubectl("create", "secret", "generic", "before", f"--from-literal=k={SECRET_MARKER}")
    finally:
        c.stop()
    key = "/registry/secrets/default/before"
    assert _stored(c, key).startswith(b"{")

    def restart(*providers: dict, check_readable: bool = True) -> Cluster:
        cfg = _write_config(tmp_path / "enc.yaml", [(["secrets"], list(providers))])
        s = Cluster(str(data), extra_args=["--encryption-provider-config", cfg]).start()
        if check_readable:
            got = json.loads(s.kubectl("get", "secret", "before", "-o", "json").stdout)
            assert base64.b64decode(got["data"]["k"]).decode() == SECRET_MARKER
        return s

    # 1. encrypt with key1, identity still listed: old plaintext readable; a rewrite encrypts it
    c = restart(_keyed("aescbc", k1), {"identity": {}})
    try:
        c.kubectl("create", "secret", "generic", "during", "--from-literal=k=v")
        _rewrite_all_secrets(c)
        assert _stored(c, key).startswith(b"k8s:enc:aescbc:v1:key1:")
    finally:
        c.stop()
    # 2. key2 first, key1 still listed: both readable; the rewrite moves everything to key2
    c = restart(_keyed("aescbc", k2, k1))
    try:
        _rewrite_all_secrets(c)
        for name in ("before", "during"):
            assert _stored(c, f"/registry/secrets/default/{name}").startswith(b"k8s:enc:aescbc:v1:key2:")
    finally:
        c.stop()
    # 3. key1 removed: everything still reads
    c = restart(_keyed("aescbc", k2))
    c.stop()
    # 4. a key this data was not written with: the server refuses to start and says why
    with pytest.raises(RuntimeError) as e:
        restart(_keyed("aescbc", ("key2", _key())), check_readable=False)
    assert 'unable to transform key "/registry/secrets/default/' in str(e.value)
    assert "invalid padding on input" in str(e.value) or "no matching prefix" in str(e.value)
    with pytest.raises(RuntimeError) as e:
        restart(_keyed("secretbox", ("other", _key())), {"identity": {}}, check_readable=False)
    # identity's refusal of encrypted data lets the search go on; nothing else matches
    assert 'unable to transform key "/registry/secrets/default/before": no matching prefix found' in str(e.value)


@pytest.mark.parametrize("rules, message", [
    ([(["secrets"], [_keyed("aescbc", ("k", base64.b64encode(b"short").decode()))])],
     'resources[0].providers[0].aescbc.keys[0].secret: Invalid value: "REDACTED": secret is not of the expected '
     "length, got 5, expected one of [16 24 32]"),
    ([(["*."], [{"identity": {}}]), (["secrets"], [{"identity": {}}])],
     'resource "secrets" is masked by earlier rule "*."'),
    ([(["secrets"], [{"kms": {"name": "p", "endpoint": "unix:///tmp/p.sock", "apiVersion": "v2"}}])],
     "KMS providers are not supported by pyk8s"),
])
def test_a_bad_config_file_is_refused_at_start(tmp_path: Path, rules: list, message: str) -> None:
    cfg = _write_config(tmp_path / "enc.yaml", rules)
    with pytest.raises(RuntimeError) as e:
        Cluster(str(tmp_path / "data"), extra_args=["--encryption-provider-config", cfg]).start()
    assert f'error while parsing encryption provider configuration file "{cfg}"' in str(e.value)
    assert message in str(e.value)
    with pytest.raises(RuntimeError) as e:
        Cluster(str(tmp_path / "data2"), extra_args=["--encryption-provider-config", str(tmp_path / "nope")]).start()
    assert "error reading encryption provider configuration file" in str(e.value)


def test_plaintext_written_before_encryption_is_gone_from_the_files_after_rewrite_and_compaction(
        tmp_path: Path) -> None:
    """Turning encryption on for a running cluster: once every Secret is rewritten, compaction takes
    the plaintext revisions out of state.db and its WAL (upstream: etcd compaction and defrag)."""
    data = tmp_path / "data"
    c = Cluster(str(data)).start()
    try:
        for i in range(40):
            c.kubectl("create", "secret", "generic", f"old{i}", f"--from-literal=k={SECRET_MARKER}-{i}",
                      f"--from-literal=pad={'p' * (i * 97 % 2500)}")
    finally:
        c.stop()
    needle = base64.b64encode(SECRET_MARKER.encode())[:16]  # how every value starts in the stored JSON
    assert needle in _raw_state(c)
    cfg = _write_config(tmp_path / "enc.yaml", [(["secrets"], [_keyed("secretbox", ("k", _key())), {"identity": {}}])])
    c = Cluster(str(data), extra_args=["--encryption-provider-config", cfg, "--compaction-interval", "1"]).start()
    try:
        _rewrite_all_secrets(c)
        deadline = time.monotonic() + 30
        while needle in _raw_state(c):
            assert time.monotonic() < deadline, "plaintext revisions still in state.db after compaction"
            time.sleep(0.5)
        got = json.loads(c.kubectl("get", "secret", "old7", "-o", "json").stdout)
        assert base64.b64decode(got["data"]["k"]).decode() == f"{SECRET_MARKER}-7"
    finally:
        c.stop()


def test_api_servers_on_one_etcd_share_encrypted_objects_and_a_stranger_key_is_refused(tmp_path: Path) -> None:
    """Several API servers with one EncryptionConfiguration (as upstream requires of an HA control plane):
    what one writes encrypted, the others read from their watch at once; a server given another key
    refuses to start instead of serving a cluster with Secrets missing."""
    from tests.conftest import require_binary
    from tests.etcd_helper import EtcdCluster
    from tests.ha_helper import HAControlPlane, as_client_of, wait_for

    require_binary("etcd")
    cfg = _write_config(tmp_path / "enc.yaml", [(["secrets"], [_keyed("aesgcm", ("shared", _key()))])])
    with EtcdCluster(tmp_path / "etcd", 1) as etcd, \
            HAControlPlane(tmp_path / "cp", etcd.endpoint, 2,
                           extra_args=["--encryption-provider-config", cfg]) as cp:
        a, b = cp.servers
        b_as_a = as_client_of(b, a)
        a.kubectl("create", "secret", "generic", "ha1", f"--from-literal=k={SECRET_MARKER}")
        got = wait_for(lambda: b_as_a.kubectl("get", "secret", "ha1", "-o", "jsonpath={.data.k}", check=False).stdout,
                       10, "the secret on the second server")
        assert base64.b64decode(got).decode() == SECRET_MARKER
        r = etcdctl(f"http://{etcd.endpoints[0]}", "get", "/registry/secrets/default/ha1", "-w", "json")
        stored = base64.b64decode(json.loads(r.stdout)["kvs"][0]["value"])
        assert stored.startswith(b"k8s:enc:aesgcm:v1:shared:") and base64.b64encode(SECRET_MARKER.encode()) not in stored
        b_as_a.kubectl("delete", "secret", "ha1")
        wait_for(lambda: a.kubectl("get", "secret", "ha1", check=False).returncode != 0, 10, "the deletion on a")
        a.kubectl("create", "secret", "generic", "ha2", "--from-literal=k=v")
        stranger = cp.add("127.0.0.9")
        stranger.extra_args[stranger.extra_args.index(cfg)] = _write_config(
            tmp_path / "other.yaml", [(["secrets"], [_keyed("aesgcm", ("shared", _key()))])])
        with pytest.raises(RuntimeError) as e:
            stranger.start()
        assert 'unable to transform key "/registry/secrets/default/ha2": cipher: message authentication failed' \
            in str(e.value)

"""default, kube-system and kube-public cannot be deleted (upstream's NamespaceLifecycle admission).

Recorded upstream: `kubectl delete namespace kube-system` answers
`Error from server (Forbidden): namespaces "kube-system" is forbidden: this namespace may not be deleted`.
Upstream v1.33 does not protect kube-node-lease.
"""

from __future__ import annotations

import pytest

from tests.cluster import Cluster, raw_request

# one worker runs the module: its tests share one server, and some build on what earlier ones made
pytestmark = pytest.mark.xdist_group("immortal-namespaces")

IMMORTAL = ("default", "kube-system", "kube-public")


@pytest.fixture(scope="module")
def srv(cluster: Cluster) -> Cluster:
    return cluster  # (the module's own server: tests/cluster.py)


def test_each_immortal_namespace_is_forbidden_to_delete(srv: Cluster) -> None:
    from kubernetes import client
    from kubernetes.client import ApiException

    v1 = client.CoreV1Api(srv.api_client())
    for name in IMMORTAL:
        r = srv.kubectl("delete", "namespace", name, check=False)
        assert r.returncode != 0
        assert r.stderr.strip() == (f'Error from server (Forbidden): namespaces "{name}" is forbidden: '
                                    "this namespace may not be deleted")
        with pytest.raises(ApiException) as ei:
            v1.delete_namespace(name)
        assert ei.value.status == 403
        # a dry run is admitted like the real thing
        raw = raw_request(srv, "DELETE", f"/api/v1/namespaces/{name}?dryRun=All")
        assert raw.status == 403 and raw.json()["reason"] == "Forbidden", raw.body
        assert raw.json()["details"] == {"name": name, "kind": "namespaces"}
        got = v1.read_namespace(name)
        assert got.metadata.deletion_timestamp is None and got.status.phase == "Active"


def test_delete_all_namespaces_spares_the_immortal_ones(srv: Cluster) -> None:
    srv.kubectl("create", "namespace", "mortal-a")
    srv.kubectl("create", "namespace", "mortal-b")
    r = srv.kubectl("delete", "namespace", "--all", "--wait=false", check=False)
    assert r.returncode != 0
    for name in IMMORTAL:
        assert f'namespaces "{name}" is forbidden: this namespace may not be deleted' in r.stderr
    assert 'namespace "mortal-a" deleted' in r.stdout and 'namespace "mortal-b" deleted' in r.stdout
    assert 'namespace "kube-node-lease" deleted' in r.stdout  # as upstream: not immortal
    for name in IMMORTAL:
        phase = srv.kubectl("get", "namespace", name, "-o", "jsonpath={.status.phase}").stdout
        assert phase == "Active"
    # the control plane still works: a write in kube-system succeeds
    srv.kubectl("create", "configmap", "still-here", "-n", "kube-system")

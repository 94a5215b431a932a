"""LimitRanger admission on a real server, through the real kubectl and the official client: Container
defaults and the `kubernetes.io/limit-ranger` annotation, min/max/maxLimitRequestRatio per Container,
Pod and PersistentVolumeClaim with upstream's messages (plugin/pkg/admission/limitranger), init
containers, in-place resizes, and the quota seeing the defaulted requests."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cluster import Cluster

pytestmark = pytest.mark.xdist_group("limitranger")

LIMITS = """\
apiVersion: v1
kind: LimitRange
metadata: {name: limits}
spec:
  limits:
  - type: Container
    max: {cpu: 500m, memory: 1Gi}
    min: {cpu: 10m, memory: 4Mi}
    default: {cpu: 200m, memory: 256Mi}
    defaultRequest: {cpu: 100m}
    maxLimitRequestRatio: {cpu: "4"}
  - type: Pod
    max: {cpu: "1"}
  - type: PersistentVolumeClaim
    max: {storage: 2Gi}
    min: {storage: 1Gi}
"""


@pytest.fixture(scope="module")
def c(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    tmp: Path = tmp_path_factory.mktemp("limitranger")
    cl = Cluster(str(tmp / "data"), ["--disable", "controller-manager", "--disable", "scheduler", "--disable", "dns"])
    cl.start()
    for ns in ("lr", "quota", "other"):
        cl.kubectl("create", "ns", ns)
        cl.kubectl("create", "sa", "default", "-n", ns)  # (no controller-manager makes them)
    cl.kubectl("apply", "-n", "lr", "-f", "-", input=LIMITS)
    yield cl
    cl.stop()


def _pod(name: str, containers: list[dict[str, Any]], init: list[dict[str, Any]] | None = None) -> str:
    spec: dict[str, Any] = {"containers": containers}
    if init:
        spec["initContainers"] = init
    return json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec})


def _ctr(name: str, limits: dict[str, str] | None = None, requests: dict[str, str] | None = None,
         **extra: Any) -> dict[str, Any]:
    res: dict[str, Any] = {}
    if limits is not None:
        res["limits"] = limits
    if requests is not None:
        res["requests"] = requests
    return {"name": name, "image": "busybox", "resources": res, **extra}


def _refused(c: Cluster, manifest: str, ns: str = "lr") -> str:
    r = c.kubectl("create", "-n", ns, "-f", "-", input=manifest, check=False)
    assert r.returncode == 1, r.stdout
    return r.stderr.strip()


def test_defaults_and_annotation_for_containers_and_init_containers(c: Cluster) -> None:
    c.kubectl("create", "-n", "lr", "-f", "-", input=_pod("defaulted", [_ctr("app"), _ctr("own", {"cpu": "50m"})],
                                                          init=[_ctr("setup")]))
    pod = json.loads(c.kubectl("get", "pod", "defaulted", "-n", "lr", "-o", "json").stdout)
    app, own = pod["spec"]["containers"]
    assert app["resources"] == {"limits": {"cpu": "200m", "memory": "256Mi"},
                                "requests": {"cpu": "100m", "memory": "256Mi"}}
    # its own limit stays, and (pod defaulting, before admission) its request is that limit
    assert own["resources"] == {"limits": {"cpu": "50m", "memory": "256Mi"}, "requests": {"cpu": "50m", "memory": "256Mi"}}
    assert pod["spec"]["initContainers"][0]["resources"]["limits"] == {"cpu": "200m", "memory": "256Mi"}
    assert pod["metadata"]["annotations"]["kubernetes.io/limit-ranger"] == (
        "LimitRanger plugin set: cpu, memory request for container app; cpu, memory limit for container app; "
        "memory request for container own; memory limit for container own; cpu, memory request for init container setup; "
        "cpu, memory limit for init container setup")


def test_no_limit_range_no_change(c: Cluster) -> None:
    c.kubectl("create", "-n", "other", "-f", "-", input=_pod("plain", [_ctr("app")]))
    pod = json.loads(c.kubectl("get", "pod", "plain", "-n", "other", "-o", "json").stdout)
    assert "kubernetes.io/limit-ranger" not in (pod["metadata"].get("annotations") or {})
    assert pod["spec"]["containers"][0].get("resources") in (None, {})


@pytest.mark.parametrize("ctr,message", [
    (_ctr("big", {"cpu": "1"}), 'pods "p" is forbidden: maximum cpu usage per Container is 500m, but limit is 1'),
    (_ctr("tiny", {"memory": "2Mi"}),
     'pods "p" is forbidden: minimum memory usage per Container is 4Mi, but request is 2Mi'),
    (_ctr("lowlim", {"cpu": "200m", "memory": "3Mi"}, {"cpu": "100m", "memory": "3Mi"}),
     'pods "p" is forbidden: minimum memory usage per Container is 4Mi, but request is 3Mi'),
    (_ctr("ratio", {"cpu": "500m"}, {"cpu": "100m"}),
     'pods "p" is forbidden: cpu max limit to request ratio per Container is 4, but provided ratio is 5.000000'),
    (_ctr("several", {"cpu": "1", "memory": "2Mi"}, {"cpu": "100m"}),
     'pods "p" is forbidden: [minimum memory usage per Container is 4Mi, but request is 2Mi, maximum cpu usage '
     'per Container is 500m, but limit is 1, cpu max limit to request ratio per Container is 4, but provided '
     'ratio is 10.000000]'),
])
def test_container_constraints(c: Cluster, ctr: dict[str, Any], message: str) -> None:
    assert _refused(c, _pod("p", [ctr])) == f'Error from server (Forbidden): error when creating "STDIN": {message}'


def test_init_container_cannot_escape_container_max(c: Cluster) -> None:
    """An attacker's init container is judged as a container is."""
    err = _refused(c, _pod("sneaky", [_ctr("app")], init=[_ctr("init", {"cpu": "2"}, {"cpu": "1"})]))
    assert err.endswith('pods "sneaky" is forbidden: [maximum cpu usage per Container is 500m, but limit is 2, '
                       'maximum cpu usage per Pod is 1, but limit is 2]')


def test_pod_max_sums_containers(c: Cluster) -> None:
    err = _refused(c, _pod("sum", [_ctr(f"c{i}", {"cpu": "400m"}) for i in range(3)]))
    assert err.endswith('pods "sum" is forbidden: maximum cpu usage per Pod is 1, but limit is 1200m')
    c.kubectl("create", "-n", "lr", "-f", "-", input=_pod("fits", [_ctr(f"c{i}", {"cpu": "300m"}) for i in range(3)]))


def test_pod_min_without_request_and_official_client(c: Cluster) -> None:
    """`minimum ... No request is specified`: a Pod min on a resource nothing defaults (official client's 403)."""
    from kubernetes import client
    from kubernetes.client.rest import ApiException

    c.kubectl("apply", "-n", "other", "-f", "-", input="""
apiVersion: v1
kind: LimitRange
metadata: {name: pod-min}
spec: {limits: [{type: Pod, min: {ephemeral-storage: 1Mi}, max: {memory: 1Gi}}]}
""")
    api = client.CoreV1Api(c.api_client())
    body = json.loads(_pod("nomin", [_ctr("app")]))
    with pytest.raises(ApiException) as e:
        api.create_namespaced_pod("other", body)
    assert e.value.status == 403
    st = json.loads(e.value.body)
    assert st["reason"] == "Forbidden"
    assert st["message"] == ('pods "nomin" is forbidden: [minimum ephemeral-storage usage per Pod is 1Mi.  No request '
                             'is specified, maximum memory usage per Pod is 1Gi.  No limit is specified]')
    c.kubectl("delete", "limitrange", "pod-min", "-n", "other")


def test_pvc_min_max_on_create_and_resize(c: Cluster) -> None:
    def pvc(size: str) -> str:
        return json.dumps({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "claim"},
                           "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "",
                                    "resources": {"requests": {"storage": size}}}})

    assert _refused(c, pvc("5Gi")).endswith(
        'persistentvolumeclaims "claim" is forbidden: maximum storage usage per PersistentVolumeClaim is 2Gi, '
        "but request is 5Gi")
    assert _refused(c, pvc("500Mi")).endswith(
        'persistentvolumeclaims "claim" is forbidden: minimum storage usage per PersistentVolumeClaim is 1Gi, '
        "but request is 500Mi")
    c.kubectl("create", "-n", "lr", "-f", "-", input=pvc("1Gi"))
    # an update is judged too, before PersistentVolumeClaimResize (a claim grows only once bound)
    c.kubectl("patch", "pvc", "claim", "-n", "lr", "--subresource=status", "--type=merge", "-p",
              '{"status":{"phase":"Bound"}}')
    r = c.kubectl("patch", "pvc", "claim", "-n", "lr", "-p", '{"spec":{"resources":{"requests":{"storage":"3Gi"}}}}',
                  check=False)
    assert r.returncode == 1
    assert "maximum storage usage per PersistentVolumeClaim is 2Gi, but request is 3Gi" in r.stderr


def test_quota_sees_defaulted_requests(c: Cluster) -> None:
    """LimitRanger runs before ResourceQuota: a pod stating nothing is charged its defaulted requests."""
    c.kubectl("apply", "-n", "quota", "-f", "-", input="""
apiVersion: v1
kind: LimitRange
metadata: {name: defaults}
spec: {limits: [{type: Container, default: {cpu: 300m}}]}
---
apiVersion: v1
kind: ResourceQuota
metadata: {name: q}
spec: {hard: {requests.cpu: "1"}}
""")
    # (no quota controller here: give the quota the status it would)
    c.kubectl("patch", "resourcequota", "q", "-n", "quota", "--subresource=status", "--type=merge", "-p",
              '{"status":{"hard":{"requests.cpu":"1"},"used":{"requests.cpu":"0"}}}')
    c.kubectl("create", "-n", "quota", "-f", "-", input=_pod("charged", [_ctr("app")]))
    q = json.loads(c.kubectl("get", "resourcequota", "q", "-n", "quota", "-o", "json").stdout)
    assert q["status"]["used"] == {"requests.cpu": "300m"}
    err = _refused(c, _pod("over", [_ctr(f"c{i}") for i in range(3)]), ns="quota")
    assert "exceeded quota: q, requested: requests.cpu=900m, used: requests.cpu=300m, limited: requests.cpu=1" in err

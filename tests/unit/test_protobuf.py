"""Kubernetes protobuf bodies: round trips, Go-JSON shaping, and real kubectl captures."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from pyk8s.api import protobuf as P
from tests.conftest import require


def _descriptors_available() -> bool:
    try:
        P.load_descriptor_pool()
    except P.ProtobufUnavailable:
        return False
    return True


@pytest.fixture(scope="module", autouse=True)
def _pool() -> None:
    require("kubectl binary (protobuf descriptors)", _descriptors_available())


def roundtrip(obj: dict[str, Any]) -> dict[str, Any]:
    body = P.encode(obj)
    assert body.startswith(P.MAGIC)
    return P.decode(body)


# --- round trips ------------------------------------------------------------------------------


def test_namespace_roundtrip() -> None:
    ns = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {
            "name": "demo",
            "labels": {"b": "2", "a": "1"},
            "annotations": {"note": "x"},
            "creationTimestamp": "2024-05-06T07:08:09Z",
            "uid": "0b7c6a1e-0000-4000-8000-000000000001",
            "resourceVersion": "42",
        },
        "spec": {"finalizers": ["kubernetes"]},
        "status": {"phase": "Active"},
    }
    out = roundtrip(ns)
    assert out == ns
    assert list(out)[:2] == ["apiVersion", "kind"]
    assert list(out["metadata"]["labels"]) == ["a", "b"]  # Go sorts map keys


def test_configmap_roundtrip() -> None:
    cm = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "c", "namespace": "default"},
        "data": {"a": "1", "empty": ""},
        "binaryData": {"bin": "AP8BAg=="},
        "immutable": False,  # *bool set to false must survive
    }
    assert roundtrip(cm) == cm


def test_secret_with_binary_data_roundtrip() -> None:
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "s", "namespace": "default"},
        "type": "Opaque",
        "data": {"key": "AAH/gA==", "password": "eHl6"},
        "stringData": {"plain": "text"},
    }
    out = roundtrip(secret)
    assert out == secret
    body = P.encode(secret)
    assert b"\x00\x01\xff\x80" in body  # bytes travel raw, not base64


def _deployment() -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}},
        "spec": {
            "replicas": 0,
            "selector": {
                "matchLabels": {"app": "web"},
                "matchExpressions": [{"key": "tier", "operator": "In", "values": ["a", "b"]}],
            },
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": "25%"}},
            "revisionHistoryLimit": 0,
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {
                    "volumes": [
                        {"name": "cfg", "configMap": {"name": "cm", "defaultMode": 420}},
                        {"name": "tmp", "emptyDir": {"sizeLimit": "1Gi"}},
                    ],
                    "containers": [
                        {
                            "name": "c",
                            "image": "nginx:1.27",
                            "args": ["--port", "8080"],
                            "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
                            "env": [
                                {"name": "A", "value": "B"},
                                {
                                    "name": "PW",
                                    "valueFrom": {
                                        "secretKeyRef": {"name": "s", "key": "password", "optional": False}
                                    },
                                },
                            ],
                            "resources": {
                                "limits": {"cpu": "500m", "memory": "128Mi"},
                                "requests": {"cpu": "100m", "memory": "64Mi", "nvidia.com/gpu": "1"},
                            },
                            "livenessProbe": {
                                "httpGet": {"path": "/healthz", "port": 8080, "scheme": "HTTP"},
                                "initialDelaySeconds": 3,
                                "periodSeconds": 10,
                            },
                            "readinessProbe": {"tcpSocket": {"port": "http"}, "timeoutSeconds": 1},
                            "imagePullPolicy": "IfNotPresent",
                        }
                    ],
                    "restartPolicy": "Always",
                    "terminationGracePeriodSeconds": 0,
                    "tolerations": [
                        {"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 0},
                        {"key": "gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"},
                    ],
                    "automountServiceAccountToken": False,
                },
            },
        },
        "status": {},
    }


def test_deployment_roundtrip() -> None:
    dep = _deployment()
    out = roundtrip(dep)
    assert out == dep
    spec = out["spec"]["template"]["spec"]
    assert spec["tolerations"][0]["tolerationSeconds"] == 0
    assert spec["containers"][0]["livenessProbe"]["httpGet"]["port"] == 8080
    assert spec["containers"][0]["readinessProbe"]["tcpSocket"]["port"] == "http"
    assert out["spec"]["replicas"] == 0


def test_cronjob_roundtrip() -> None:
    cj = {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": "cj", "namespace": "default"},
        "spec": {
            "schedule": "*/5 * * * *",
            "timeZone": "Etc/UTC",
            "concurrencyPolicy": "Forbid",
            "suspend": False,
            "startingDeadlineSeconds": 30,
            "successfulJobsHistoryLimit": 0,
            "jobTemplate": {
                "metadata": {"name": "cj"},
                "spec": {
                    "backoffLimit": 0,
                    "completions": 1,
                    "ttlSecondsAfterFinished": 100,
                    "template": {
                        "metadata": {},
                        "spec": {
                            "containers": [
                                {"name": "cj", "image": "busybox", "command": ["echo", "hi"], "resources": {}}
                            ],
                            "restartPolicy": "OnFailure",
                        },
                    },
                },
            },
        },
        "status": {"lastScheduleTime": "2024-01-02T03:04:05Z", "active": [{"kind": "Job", "name": "cj-1"}]},
    }
    assert roundtrip(cj) == cj


def test_token_request_roundtrip() -> None:
    tr = {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenRequest",
        "metadata": {"name": "default", "namespace": "default"},
        "spec": {
            "audiences": ["https://kubernetes.default.svc"],
            "expirationSeconds": 3600,
            # BoundObjectReference.uID is proto field `uID`; JSON names come from the Go struct tags
            "boundObjectRef": {"kind": "Pod", "apiVersion": "v1", "name": "p", "uid": "u-1"},
        },
        "status": {"token": "abc", "expirationTimestamp": "2030-01-01T00:00:00Z"},
    }
    assert roundtrip(tr) == tr


def test_eviction_roundtrip() -> None:
    ev = {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": "x", "namespace": "default"},
        "deleteOptions": {
            "gracePeriodSeconds": 0,
            "preconditions": {"uid": "u-1", "resourceVersion": "7"},
            "propagationPolicy": "Background",
            "dryRun": ["All"],
        },
    }
    assert roundtrip(ev) == ev


def test_delete_options_and_meta_kinds() -> None:
    # meta.k8s.io kinds travel under any group's version; the body keeps the envelope's apiVersion
    do = {"apiVersion": "apps/v1", "kind": "DeleteOptions", "propagationPolicy": "Foreground"}
    assert roundtrip(do) == do
    assert P.message_name_for("v1", "DeleteOptions") == "k8s.io.apimachinery.pkg.apis.meta.v1.DeleteOptions"
    assert P.message_name_for("policy/v1", "Eviction") == "k8s.io.api.policy.v1.Eviction"
    assert P.message_name_for("autoscaling/v1", "Scale") == "k8s.io.api.autoscaling.v1.Scale"
    assert P.message_name_for("v1", "Binding") == "k8s.io.api.core.v1.Binding"
    assert P.message_name_for("rbac.authorization.k8s.io/v1", "Role") == "k8s.io.api.rbac.v1.Role"
    assert (
        P.message_name_for("internal.apiserver.k8s.io/v1alpha1", "StorageVersion")
        == "k8s.io.api.apiserverinternal.v1alpha1.StorageVersion"
    )


def test_scale_and_binding_roundtrip() -> None:
    scale = {
        "apiVersion": "autoscaling/v1",
        "kind": "Scale",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"replicas": 3},
        "status": {"replicas": 2, "selector": "app=web"},
    }
    assert roundtrip(scale) == scale
    binding = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": "p", "namespace": "default"},
        "target": {"kind": "Node", "name": "n1"},
    }
    assert roundtrip(binding) == binding


def test_role_and_priorityclass() -> None:
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": "r"},
        "rules": [
            {"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]},
            {"verbs": ["get"], "nonResourceURLs": ["/x"]},
        ],
        "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"a": "b"}}]},
    }
    assert roundtrip(role) == role
    # PriorityClass.value is a non-pointer int32 without omitempty: Go JSON always prints it
    pc = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": "pc"},
        "value": 0,
    }
    assert roundtrip(pc) == pc
    assert roundtrip({**pc, "value": 0, "description": ""}) == pc


def test_special_types() -> None:
    lease = {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": "l", "namespace": "kube-node-lease"},
        "spec": {
            "holderIdentity": "n1",
            "leaseDurationSeconds": 40,
            "renewTime": "2024-01-02T03:04:05.123456Z",
        },
    }
    assert roundtrip(lease) == lease
    metrics = {
        "apiVersion": "metrics.k8s.io/v1beta1",
        "kind": "NodeMetrics",
        "metadata": {"name": "n1"},
        "timestamp": "2024-01-02T03:04:05Z",
        "window": "1m30s",
        "usage": {"cpu": "250m", "memory": "1Gi"},
    }
    assert roundtrip(metrics) == metrics
    assert roundtrip({**metrics, "window": "3600s"})["window"] == "1h0m0s"
    cr = {
        "apiVersion": "apps/v1",
        "kind": "ControllerRevision",
        "metadata": {
            "name": "r1",
            "managedFields": [
                {
                    "manager": "kubectl",
                    "operation": "Update",
                    "apiVersion": "apps/v1",
                    "time": "2024-01-02T03:04:05Z",
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:data": {}},
                }
            ],
        },
        "data": {"spec": {"template": {"x": [1, 2]}}},
        "revision": 1,
    }
    assert roundtrip(cr) == cr
    event = {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": "e", "namespace": "default"},
        "eventTime": "2024-01-02T03:04:05.000001Z",
        "reportingController": "c",
        "reportingInstance": "i",
        "action": "Scheduled",
        "reason": "Scheduled",
        "regarding": {"kind": "Pod", "namespace": "default", "name": "p"},
        "note": "ok",
        "type": "Normal",
    }
    # non-pointer metav1.Time and structs print even when zero, as Go's JSON encoder does
    zeros: dict[str, Any] = {
        "deprecatedSource": {},
        "deprecatedFirstTimestamp": None,
        "deprecatedLastTimestamp": None,
    }
    assert roundtrip(event) == {**event, **zeros}


def test_inline_fields_and_json_names() -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {
            "volumes": [{"name": "v", "secret": {"secretName": "s", "items": [{"key": "k", "path": "p"}]}}],
            "containers": [
                {
                    "name": "c",
                    "image": "i",
                    "envFrom": [{"configMapRef": {"name": "cm"}}],
                    "startupProbe": {"exec": {"command": ["true"]}, "failureThreshold": 30},
                    "resources": {},
                }
            ],
            "ephemeralContainers": [
                {"name": "dbg", "image": "busybox", "targetContainerName": "c", "resources": {}}
            ],
        },
        "status": {"phase": "Running", "podIP": "10.0.0.5", "startTime": "2024-01-02T03:04:05Z"},
    }
    assert roundtrip(pod) == pod
    ic = {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "IngressClass",
        "metadata": {"name": "nginx"},
        "spec": {
            "controller": "k8s.io/ingress-nginx",
            "parameters": {"apiGroup": "k8s.example.com", "kind": "P", "name": "p"},
        },
    }
    assert roundtrip(ic) == ic


def test_go_wire_zero_values_follow_go_json() -> None:
    """Go marshals non-pointer fields even when zero; the JSON encoding drops them by omitempty."""
    ns_cls = P._message_class("k8s.io.api.core.v1.Namespace")
    msg = ns_cls()
    meta = msg.metadata
    meta.name, meta.generateName, meta.namespace, meta.uid, meta.generation = "demo", "", "", "", 0
    meta.creationTimestamp.SetInParent()  # the zero metav1.Time is an empty message
    msg.spec.SetInParent()
    msg.status.phase = ""
    body = P._envelope("v1", "Namespace", msg.SerializeToString())
    assert P.decode(body) == {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": "demo"},
        "spec": {},
        "status": {},
    }
    # absent non-pointer structs still print ({}), pointer ones do not
    dep_cls = P._message_class("k8s.io.api.apps.v1.Deployment")
    body = P._envelope("apps/v1", "Deployment", dep_cls().SerializeToString())
    out = P.decode(body)
    assert out["spec"]["template"] == {"metadata": {}, "spec": {}}
    assert "selector" not in out["spec"] and "replicas" not in out["spec"]
    assert out["spec"]["strategy"] == {} and out["status"] == {}


def test_duration_strings() -> None:
    cases = {
        0: "0s",
        1: "1ns",
        1500: "1.5µs",
        300_000_000: "300ms",
        30_000_000_000: "30s",
        90_000_000_000: "1m30s",
        3_600_000_000_000: "1h0m0s",
        3_600_500_000_000: "1h0m0.5s",
        -2_000_000_000: "-2s",
    }
    for ns, text in cases.items():
        assert P.go_duration_string(ns) == text
        assert P.parse_go_duration(text) == ns
    assert P.parse_go_duration("1.5h") == 5_400_000_000_000
    with pytest.raises(ValueError):
        P.parse_go_duration("5 minutes")


def test_decode_errors() -> None:
    with pytest.raises(ValueError, match="magic"):
        P.decode(b'{"kind":"Namespace"}')
    with pytest.raises(ValueError, match="registered"):
        P.decode(P._envelope("v1", "NoSuchKind", b""))
    with pytest.raises(ValueError):
        P.decode(P.MAGIC + b"\xff\xff\xff")


def test_unavailable_is_a_415(monkeypatch: pytest.MonkeyPatch) -> None:
    saved = P._schema_cache
    monkeypatch.setenv(P.ENV_DESCRIPTORS_FROM, "/nonexistent/kubectl")
    monkeypatch.setattr(P, "_schema_cache", None)
    try:
        with pytest.raises(P.ProtobufUnavailable) as err:
            P.load_descriptor_pool()
        assert err.value.code == 415 and err.value.reason == "UnsupportedMediaType"
        assert err.value.message.startswith("the body of the request was in an unknown format")
    finally:
        P._schema_cache = saved


# --- real kubectl captures ----------------------------------------------------------------------

_VERBS = ["create", "delete", "get", "list", "patch", "update", "watch"]


def _resources(gv: str, items: list[tuple[str, str, bool]]) -> dict[str, Any]:
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": gv,
        "resources": [
            {"name": n, "singularName": n[:-1], "namespaced": nsd, "kind": k, "verbs": _VERBS}
            for n, k, nsd in items
        ],
    }


_GROUP_RESOURCES = {
    "apps/v1": [("deployments", "Deployment", True)],
    "batch/v1": [("jobs", "Job", True), ("cronjobs", "CronJob", True)],
    "scheduling.k8s.io/v1": [("priorityclasses", "PriorityClass", False)],
    "policy/v1": [("poddisruptionbudgets", "PodDisruptionBudget", True)],
    "networking.k8s.io/v1": [("ingresses", "Ingress", True)],
}
_DISCOVERY: dict[str, Any] = {
    "/version": {"major": "1", "minor": "33", "gitVersion": "v1.33.1"},
    "/api": {"kind": "APIVersions", "versions": ["v1"]},
    "/apis": {
        "kind": "APIGroupList",
        "apiVersion": "v1",
        "groups": [
            {
                "name": gv.split("/")[0],
                "versions": [{"groupVersion": gv, "version": gv.split("/")[1]}],
                "preferredVersion": {"groupVersion": gv, "version": gv.split("/")[1]},
            }
            for gv in _GROUP_RESOURCES
        ],
    },
    "/api/v1": _resources(
        "v1",
        [
            ("namespaces", "Namespace", False),
            ("configmaps", "ConfigMap", True),
            ("secrets", "Secret", True),
            ("services", "Service", True),
            ("serviceaccounts", "ServiceAccount", True),
        ],
    ),
    **{f"/apis/{gv}": _resources(gv, items) for gv, items in _GROUP_RESOURCES.items()},
}


class _Recorder(BaseHTTPRequestHandler):
    posts: list[tuple[str, dict[str, str], bytes]]

    def log_message(self, *args: Any) -> None:
        pass

    def _send(self, code: int, obj: Any) -> None:
        body = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        doc = _DISCOVERY.get(self.path.split("?", 1)[0])
        if doc is None:
            self._send(
                404,
                {
                    "kind": "Status",
                    "apiVersion": "v1",
                    "status": "Failure",
                    "reason": "NotFound",
                    "code": 404,
                },
            )
        else:
            self._send(200, doc)

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.posts.append((self.path, dict(self.headers), body))
        self._send(201, {"kind": "Status", "apiVersion": "v1", "status": "Success", "metadata": {}})


@pytest.fixture
def kubectl_server(tmp_path: Any) -> Iterator[tuple[Any, list[tuple[str, dict[str, str], bytes]]]]:
    kubectl = shutil.which("kubectl")
    require("kubectl", kubectl is not None)
    posts: list[tuple[str, dict[str, str], bytes]] = []
    handler = type("Recorder", (_Recorder,), {"posts": posts})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    env["HOME"] = str(tmp_path)  # fresh discovery cache, no kubeconfig

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        cmd = [str(kubectl), f"--server=http://127.0.0.1:{server.server_address[1]}", *args]
        return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)

    try:
        yield run, posts
    finally:
        server.shutdown()
        server.server_close()


def _last_body(posts: list[tuple[str, dict[str, str], bytes]], path_part: str) -> dict[str, Any]:
    path, headers, body = posts[-1]
    assert path_part in path
    assert headers["Content-Type"] == "application/vnd.kubernetes.protobuf"
    assert headers["Accept"] == "application/vnd.kubernetes.protobuf,application/json"
    return P.decode(body)


def test_real_kubectl_create_namespace_and_configmap(kubectl_server: Any) -> None:
    run, posts = kubectl_server
    res = run("create", "ns", "demo")
    assert res.returncode == 0, res.stderr
    assert _last_body(posts, "/api/v1/namespaces?") == {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": "demo"},
        "spec": {},
        "status": {},
    }
    res = run("create", "configmap", "c", "--from-literal=a=1", "-n", "default")
    assert res.returncode == 0, res.stderr
    assert _last_body(posts, "/api/v1/namespaces/default/configmaps?") == {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "c", "namespace": "default"},
        "data": {"a": "1"},
    }


def _strip_nulls(o: Any) -> Any:
    if isinstance(o, dict):
        return {k: _strip_nulls(v) for k, v in o.items() if v is not None}
    if isinstance(o, list):
        return [_strip_nulls(v) for v in o]
    return o


@pytest.mark.parametrize(
    "args",
    [
        ["create", "secret", "generic", "s", "--from-literal=password=xyz", "-n", "default"],
        ["create", "service", "nodeport", "np", "--tcp=80:8080", "-n", "default"],
        ["create", "deployment", "web", "--image=nginx", "--replicas=0", "--port=80", "-n", "default"],
        [
            "create",
            "cronjob",
            "cj",
            "--image=busybox",
            "--schedule=*/5 * * * *",
            "-n",
            "default",
            "--",
            "echo",
            "hi",
        ],
        ["create", "priorityclass", "pc", "--value=0", "--preemption-policy=Never"],
        ["create", "pdb", "p", "--selector=app=web", "--min-available=50%", "-n", "default"],
        ["create", "ingress", "ing", "--rule=foo.com/bar=svc:8080,tls=sec", "--class=nginx", "-n", "default"],
    ],
    ids=lambda a: f"{a[1]}-{a[2]}",
)
def test_real_kubectl_body_equals_its_json(kubectl_server: Any, args: list[str]) -> None:
    """What kubectl sends as protobuf decodes to what it prints as JSON (--dry-run=client -o json)."""
    run, posts = kubectl_server
    res = run(*args)
    assert res.returncode == 0, res.stderr
    got = _last_body(posts, "?fieldManager=kubectl-create")
    cut = args.index("--") if "--" in args else len(args)
    dry = run(*args[:cut], "--dry-run=client", "-o", "json", *args[cut:])
    assert dry.returncode == 0, dry.stderr
    # Go prints null for nil lists and zero times; decode leaves those keys out
    assert got == _strip_nulls(json.loads(dry.stdout))

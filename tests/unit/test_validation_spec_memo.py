"""The remembered pod specs (validate_pod_spec's memo) give the very errors a full check gives:
differential runs over generated specs, valid and not, with the kube-api-access volume renamed."""

from __future__ import annotations

import copy
import random
from typing import Any

import pytest

from pyk8s.api.validation import pod as P

_ALNUM = "bcdfghjklmnpqrstvwxz2456789"
SA_MOUNT = "/var/run/secrets/kubernetes.io/serviceaccount"


def _sa_volume(name: str) -> dict[str, Any]:
    return {"name": name, "projected": {"defaultMode": 420, "sources": [
        {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
        {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
        {"downwardAPI": {"items": [{"path": "namespace",
                                    "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}]}}


def _container(name: str, sa: str) -> dict[str, Any]:
    return {"name": name, "image": "busybox:1.36", "imagePullPolicy": "IfNotPresent",
            "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}, "limits": {"memory": "32Mi"}},
            "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
            "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
            "env": [{"name": "A", "value": "1"}, {"name": "POD", "valueFrom": {"fieldRef": {
                "apiVersion": "v1", "fieldPath": "metadata.name"}}}],
            "readinessProbe": {"httpGet": {"path": "/", "port": 8080, "scheme": "HTTP"}, "timeoutSeconds": 1,
                               "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3},
            "volumeMounts": [{"name": "data", "mountPath": "/data"},
                             {"name": sa, "readOnly": True, "mountPath": SA_MOUNT}]}


def _spec(sa: str) -> dict[str, Any]:
    return {"containers": [_container("c", sa), _container("d", sa)],
            "initContainers": [{k: v for k, v in _container("i", sa).items() if k != "readinessProbe"}],
            "volumes": [{"name": "data", "emptyDir": {}}, _sa_volume(sa),
                        {"name": "cfg", "configMap": {"name": "cfg", "defaultMode": 420}}],
            "restartPolicy": "Always", "dnsPolicy": "ClusterFirst", "terminationGracePeriodSeconds": 30,
            "securityContext": {}, "schedulerName": "default-scheduler", "serviceAccountName": "default",
            "serviceAccount": "default", "enableServiceLinks": True, "priority": 0,
            "preemptionPolicy": "PreemptLowerPriority", "nodeSelector": {"disk": "ssd"},
            "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
                             "tolerationSeconds": 300}]}


def _sa_name(rng: random.Random) -> str:
    return "kube-api-access-" + "".join(rng.choice(_ALNUM) for _ in range(5))


_VALUES: list[Any] = ["", "x", "Bad_Name", "a" * 70, "kube-api-access-bcdfg", "x kube-api-access-zzzzz",
                      "data", "cfg", "/data", "rel/../up", 0, -1, 1, 70000, 2**40, 1.5, True, False, [], {},
                      "10m", "-1", "1Gi", "TCP", "Never", "Exists", "NoExecute", "metadata.name", None]


def _paths(v: Any, at: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [at] if at else []
    if isinstance(v, dict):
        for k, x in v.items():
            out += _paths(x, at + (k,))
    elif isinstance(v, list):
        for i, x in enumerate(v):
            out += _paths(x, at + (i,))
    return out


def _mutate(spec: dict[str, Any], sa: str, rng: random.Random) -> None:
    for _ in range(rng.choice((0, 1, 1, 2, 3))):
        paths = _paths(spec)
        path = rng.choice(paths)
        parent = spec
        for p in path[:-1]:
            parent = parent[p]
        last = path[-1]
        r = rng.random()
        if r < 0.15 and isinstance(parent, dict):
            del parent[last]
        elif r < 0.25 and isinstance(parent, list):
            parent.append(copy.deepcopy(parent[last]))  # duplicates: names, ports, mounts
        elif r < 0.35:
            parent[last] = sa  # the volume's name elsewhere: a plain rename must still hold
        elif r < 0.42:
            spec["volumes"].append(rng.choice([_sa_volume(_sa_name(rng)), {"name": "eph", "ephemeral": {
                "volumeClaimTemplate": {"spec": {"accessModes": ["ReadWriteOnce"],
                                                 "resources": {"requests": {"storage": "1Gi"}}}}}}]))
        else:
            parent[last] = copy.deepcopy(rng.choice(_VALUES))


def _rename(v: Any, old: str, new: str) -> Any:
    if isinstance(v, dict):
        return {_rename(k, old, new): _rename(x, old, new) for k, x in v.items()}
    if isinstance(v, list):
        return [_rename(x, old, new) for x in v]
    return new if v == old and isinstance(v, str) else v


@pytest.mark.parametrize("seed", range(3))
def test_remembered_specs_give_the_full_checks_errors(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(seed)
    monkeypatch.setattr(P, "_VALID_SPECS", P.KnownValid(100_000))
    full = P._pod_spec_errors
    calls = [0]

    def counted(*a: Any) -> Any:
        calls[0] += 1
        return full(*a)

    monkeypatch.setattr(P, "_pod_spec_errors", counted)
    n = valid = 0
    for _ in range(300):
        sa = _sa_name(rng)
        spec = _spec(sa)
        _mutate(spec, sa, rng)
        pod_name = rng.choice(["p", "web-0", "x" * 60])
        for resource_is_pod in (True, False):
            for s in (spec, _rename(spec, sa, _sa_name(rng))):  # another pod's draw of the name
                want = full(copy.deepcopy(s), "spec", pod_name, resource_is_pod)
                assert P.validate_pod_spec(s, "spec", pod_name, resource_is_pod) == want, s
                n += 1
                valid += not want
    assert valid > n // 10 and n - valid > n // 10  # both outcomes well represented
    assert calls[0] < n - valid // 2  # and the valid ones mostly came from the memo


def test_only_plain_renamings_share_a_key() -> None:
    spec = _spec("kube-api-access-bcdfg")
    key = P._spec_memo_key(spec, "p", True)
    assert key is not None
    assert P._spec_memo_key(_rename(spec, "kube-api-access-bcdfg", "kube-api-access-22222"), "p", True) == key
    assert P._spec_memo_key(spec, "p", False) != key
    # the name also inside other text, two such names, or a name outside upstream's alphabet: no key or another one
    other = copy.deepcopy(spec)
    other["containers"][0]["env"][0]["value"] = "see kube-api-access-bcdfg"
    assert P._spec_memo_key(other, "p", True) is None
    other = copy.deepcopy(spec)
    other["volumes"].append(_sa_volume("kube-api-access-zzzzz"))
    assert P._spec_memo_key(other, "p", True) is None
    assert P._spec_memo_key(_rename(spec, "kube-api-access-bcdfg", "kube-api-access-aeiou"), "p", True) != key
    # ephemeral volumes name their claims after the pod
    other = copy.deepcopy(spec)
    other["volumes"].append({"name": "e", "ephemeral": {}})
    assert P._spec_memo_key(other, "p", True) is None
    assert P._spec_memo_key(other, "", False) is not None

"""Memoised defaulting helpers give what the plain computation gives (differential, generated input)."""

from __future__ import annotations

import random
from typing import Any

import orjson

from pyk8s.api.defaults import core as D

from ._same import same

_QTY: list[Any] = ["100m", "0.1", "1", "0", "-1", "2Gi", "2048Mi", "1e3", "bad", 1, 0, 2.5, "", "1000m"]


def _resources(rng: random.Random) -> Any:
    out: dict[str, Any] = {}
    for part in ("requests", "limits"):
        if rng.random() < 0.7:
            out[part] = {name: rng.choice(_QTY) for name in rng.sample(["cpu", "memory", "nvidia.com/gpu"],
                                                                        rng.randint(0, 3))}
    return out if rng.random() < 0.95 else rng.choice([None, "x", []])


def test_memoised_qos_class_is_the_computed_one() -> None:
    rng = random.Random(3)
    D._QOS_MEMO.clear()
    seen: dict[str, int] = {}
    for _ in range(3000):
        spec: dict[str, Any] = {kind: [{"name": f"c{i}", "resources": _resources(rng)}
                                       for i in range(rng.randint(0, 2))]
                                for kind in ("containers", "initContainers")}
        pod = {"spec": spec}
        want = D._qos(D._dicts(spec["containers"]) + D._dicts(spec["initContainers"]))
        assert D.compute_pod_qos(pod) == want == D.compute_pod_qos(pod), spec
        seen[want] = seen.get(want, 0) + 1
    assert set(seen) == {"BestEffort", "Burstable", "Guaranteed"}


_FIELDS: list[tuple[str, list[Any]]] = [
    ("restartPolicy", ["Never", "", None]), ("dnsPolicy", ["Default", ""]), ("hostNetwork", [True, False]),
    ("serviceAccount", ["sa", ""]), ("serviceAccountName", ["other"]), ("terminationGracePeriodSeconds", [0, 5]),
    ("securityContext", [{}, {"runAsUser": 1}]), ("overhead", [{"cpu": "0.1"}, {"memory": "1e3"}]),
    ("enableServiceLinks", [False]), ("volumes", [[{"name": "v"}], [{"name": "s", "secret": {"secretName": "x"}},
                                                  {"name": "h", "hostPath": {"path": "/x"}}]]),
]


def _container(rng: random.Random) -> dict[str, Any]:
    c: dict[str, Any] = {"name": "c", "image": rng.choice(["busybox", "busybox:latest", "nginx:1.2", "x@sha256:ab"])}
    if rng.random() < 0.7:
        c["resources"] = _resources(rng)
    if rng.random() < 0.3:
        c["ports"] = [{"containerPort": 80}, {"containerPort": 81, "protocol": "UDP", "hostPort": 0}]
    if rng.random() < 0.3:
        c["readinessProbe"] = {"httpGet": {"port": 80}}
    if rng.random() < 0.2:
        c["env"] = [{"name": "N", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}]
    return c


def test_remembered_pod_defaults_are_the_computed_ones() -> None:
    rng = random.Random(5)
    D._POD_SPEC_DEFAULTS.clear()
    templates = []
    for _ in range(40):
        spec: dict[str, Any] = {"containers": [_container(rng) for _ in range(rng.randint(1, 2))]}
        if rng.random() < 0.3:
            spec["initContainers"] = [_container(rng)]
        for f, values in rng.sample(_FIELDS, rng.randint(0, 4)):
            spec[f] = rng.choice(values)
        templates.append(spec)
    for _ in range(400):  # templates repeat, as a ReplicaSet's pods do
        raw = orjson.dumps({"metadata": {"name": "p"}, "spec": rng.choice(templates)})
        want, got = orjson.loads(raw), orjson.loads(raw)
        D.default_pod(want)
        D.DEFAULTERS[("", "Pod")](got)
        assert same(got, want), raw
        got["spec"]["mutated"] = True  # a caller's change never reaches the remembered defaults
    assert D._POD_SPEC_DEFAULTS and all(b'"mutated"' not in v for v in D._POD_SPEC_DEFAULTS.values())

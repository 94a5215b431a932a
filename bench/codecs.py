"""Per-object costs on the request hot path: strict decoding, protobuf decoding, managedFields."""

from __future__ import annotations

import time

import yaml

from .report import row

DEPLOYMENT = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, labels: {app: web}}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: nginx:1.25
        ports: [{containerPort: 80}]
        resources: {requests: {cpu: 100m, memory: 64Mi}, limits: {memory: 128Mi}}
        readinessProbe: {httpGet: {path: /, port: 80}}
        env: [{name: A, value: "1"}, {name: POD, valueFrom: {fieldRef: {fieldPath: metadata.name}}}]
"""


def _per_call(fn, n: int) -> float:
    fn()
    t = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t) / n * 1e6


def main() -> None:
    from pyk8s.api.schema.strict import decode_error, unknown_fields

    deploy = yaml.safe_load(DEPLOYMENT)
    row("strict decoding of a Deployment", _per_call(lambda: (unknown_fields("apps", "v1", "Deployment", deploy),
                                                                decode_error("apps", "v1", "Deployment", deploy)), 2000),
        "us", 2000, "budget 2 ms", higher_is_better=False)
    try:
        from pyk8s.api import protobuf as P

        body = P.encode({**deploy, "apiVersion": "apps/v1", "kind": "Deployment"})
        row("protobuf decode of a Deployment", _per_call(lambda: P.decode(body), 500), "us", 1000, "budget 1 ms",
            higher_is_better=False)
    except Exception as e:  # no kubectl binary to read descriptors from
        print(f"  protobuf decode: not measured ({e})")
    from pyk8s.api.patch import update_managed_fields

    new = {**deploy, "apiVersion": "apps/v1", "kind": "Deployment"}
    row("managedFields for a Deployment create", _per_call(
        lambda: update_managed_fields(None, dict(new), "kubectl-create", "Update", "apps/v1", "2026-01-01T00:00:00Z",
                                      kind="Deployment"), 500), "us")

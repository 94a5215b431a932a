"""Where a test cluster's DNS listens: the address and port kube-system/kube-dns's EndpointSlice
names, once the server (which starts its DNS in the background after the API) has published it."""

from __future__ import annotations

import json
import time
from typing import Any

# a headless Service for StatefulSet-shaped pods (hostname db-0, subdomain db, label app=db)
HEADLESS_DB = """
apiVersion: v1
kind: Service
metadata: {name: db}
spec:
  clusterIP: None
  selector: {app: db}
  ports: [{name: pg, port: 5432}]
"""


def kube_dns_endpoint(cluster: Any, timeout: float = 10.0) -> tuple[str, int]:
    deadline = time.monotonic() + timeout
    while True:
        r = cluster.kubectl("get", "endpointslice", "-n", "kube-system", "kube-dns", "-o", "json", check=False)
        if r.returncode == 0:
            es = json.loads(r.stdout)
            ports = {p["protocol"]: p["port"] for p in es["ports"]}
            assert ports["UDP"] == ports["TCP"], es
            return es["endpoints"][0]["addresses"][0], ports["UDP"]
        if time.monotonic() > deadline:
            raise AssertionError(f"kube-dns not published: {r.stderr}")
        time.sleep(0.05)

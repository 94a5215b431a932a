"""The metrics server's informers keep what its answers read, not whole pods and nodes (memory).

Upstream's metrics-server holds pods as metadata only; ours keeps a pod's name, namespace,
uid, resourceVersion and labels, and a node's, with the kubelet's addresses and port.
"""

from __future__ import annotations

import ssl
import time
from typing import Any

from pyk8s.metricsserver.api import MetricsAPI
from pyk8s.metricsserver.server import MetricsServer, MetricsServerOptions
from pyk8s.metricsserver.storage import MetricsStorage, NodeBatch, Point


def _pod() -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "web-1", "namespace": "ns", "uid": "u1", "resourceVersion": "7",
                         "labels": {"app": "web"}, "annotations": {"big": "x" * 1000},
                         "managedFields": [{"manager": "kubelet", "fieldsV1": {"f:status": {}}}]},
            "spec": {"nodeName": "n1", "containers": [{"name": "app", "image": "pause"}]},
            "status": {"phase": "Running", "podIP": "10.0.0.1"}}


def _node() -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": "n1", "uid": "u2", "resourceVersion": "9", "labels": {"zone": "a"},
                         "managedFields": [{"manager": "kubelet"}]},
            "spec": {"podCIDR": "10.0.0.0/24"},
            "status": {"addresses": [{"type": "InternalIP", "address": "192.0.2.10"}],
                       "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
                       "images": [{"names": ["pause"], "sizeBytes": 1}] * 50,
                       "conditions": [{"type": "Ready", "status": "True"}]}}


def test_informers_keep_only_what_the_answers_read() -> None:
    ms = MetricsServer(None, MetricsServerOptions(), b"", b"", ssl.create_default_context())
    ms.pods._apply("ADDED", _pod())
    ms.nodes._apply("ADDED", _node())
    pod = ms.pods.get("ns/web-1")
    node = ms.nodes.get("n1")
    assert pod == {"metadata": {"name": "web-1", "namespace": "ns", "uid": "u1", "resourceVersion": "7",
                                "labels": {"app": "web"}}}
    assert node == {"metadata": {"name": "n1", "uid": "u2", "resourceVersion": "9", "labels": {"zone": "a"}},
                    "status": {"addresses": [{"type": "InternalIP", "address": "192.0.2.10"}],
                               "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}}}}
    # the answers built from them: labels select and are copied, as before
    storage = MetricsStorage()
    now = time.time()
    for t in (now - 10, now):
        storage.store({"n1": NodeBatch(node=Point(t / 10, 1024.0, t),
                                       pods={("ns", "web-1"): {"app": Point(t / 100, 2048.0, t)}})})
    api = MetricsAPI(storage, ms.nodes, ms.pods)
    assert [p["metadata"]["labels"] for p in api.list_pods("ns", "app=web", "")] == [{"app": "web"}]
    assert api.list_pods("ns", "app=other", "") == []
    assert [n["metadata"]["labels"] for n in api.list_nodes("zone=a", "")] == [{"zone": "a"}]

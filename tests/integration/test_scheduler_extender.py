"""Scheduler extenders (KubeSchedulerConfiguration `extenders`) against an extender written here as a third
party would write one (plain HTTP + the JSON of k8s.io/kube-scheduler/extender/v1): only pods asking for a
managed resource are sent, filter verdicts become node statuses in FailedScheduling, prioritize scores are
weighted into the choice, bind is delegated, an ignorable extender that is down is skipped (a non-ignorable one failing the cycle is
tests/unit/scheduler/test_extender.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from ..cluster import REPO, Cluster, raw_request
from ..ha_helper import wait_for

pytestmark = pytest.mark.xdist_group("scheduler-extender")

RESOURCE = "example.com/widget"


class Extender:
    """Filter: refuses n1 (resolvable) and n4 (unresolvable); prioritize: n3 best; bind: via the API."""

    def __init__(self, cluster: Cluster, cache_capable: bool = False) -> None:
        self.cluster = cluster
        self.cache_capable = cache_capable
        self.calls: list[tuple[str, Any]] = []
        ext = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a: Any) -> None:
                pass

            def do_POST(self) -> None:
                args = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                verb = self.path.rsplit("/", 1)[1]
                ext.calls.append((verb, args))
                out = getattr(ext, verb)(args)
                body = json.dumps(out).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/gpushare-scheduler"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def filter(self, args: dict[str, Any]) -> dict[str, Any]:
        if self.cache_capable:  # names only: it keeps its own node cache; passes every node
            return {"Nodes": None, "NodeNames": args["NodeNames"], "FailedNodes": {}, "Error": ""}
        names = [n["metadata"]["name"] for n in args["Nodes"]["items"]]
        keep = [n for n in args["Nodes"]["items"] if n["metadata"]["name"] not in ("n1", "n4")]
        return {"Nodes": {"items": keep}, "NodeNames": None,
                "FailedNodes": {"n1": "widget slots taken"} if "n1" in names else {},
                "FailedAndUnresolvableNodes": {"n4": "no widgets on this node"} if "n4" in names else {}, "Error": ""}

    def prioritize(self, args: dict[str, Any]) -> list[dict[str, Any]]:
        return [{"Host": n["metadata"]["name"], "Score": 10 if n["metadata"]["name"] == "n3" else 0}
                for n in args["Nodes"]["items"]]

    def bind(self, args: dict[str, Any]) -> dict[str, Any]:
        r = raw_request(self.cluster, "POST", f"/api/v1/namespaces/{args['PodNamespace']}/pods/{args['PodName']}/binding",
                        {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": args["PodName"]},
                         "target": {"apiVersion": "v1", "kind": "Node", "name": args["Node"]}})
        return {"Error": "" if r.status == 201 else r.body.decode()}

    def verbs(self, pod: str) -> list[str]:
        out = []
        for verb, a in self.calls:
            name = a.get("PodName") or (a.get("Pod") or {}).get("metadata", {}).get("name")
            if name == pod:
                out.append(verb)
        return out


def node(name: str) -> dict[str, Any]:
    res = {"cpu": "4", "memory": "16Gi", "pods": "110", RESOURCE: "4"}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "status": {"capacity": res, "allocatable": res,
                       "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "ok"}]}}


def pod(name: str, widget: bool = True, scheduler: str = "default-scheduler") -> dict[str, Any]:
    c: dict[str, Any] = {"name": "c", "image": "busybox"}
    if widget:
        c["resources"] = {"limits": {RESOURCE: "1"}}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"containers": [c], "schedulerName": scheduler}}


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Cluster, Extender, Extender]]:
    tmp = tmp_path_factory.mktemp("extender")
    c = Cluster(str(tmp / "data"), ["--disable", "scheduler"])
    c.start()
    ext = Extender(c)
    names_only = Extender(c, cache_capable=True)
    managed = [{"name": RESOURCE, "ignoredByScheduler": False}]
    cfg = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
           "profiles": [{"schedulerName": "default-scheduler"}, {"schedulerName": "strict"}],
           "extenders": [
               {"urlPrefix": ext.url, "filterVerb": "filter", "prioritizeVerb": "prioritize", "bindVerb": "bind",
                "weight": 5, "httpTimeout": "5s", "managedResources": managed},
               {"urlPrefix": names_only.url, "filterVerb": "filter", "nodeCacheCapable": True,
                "managedResources": managed},
               # down, but ignorable: skipped
               {"urlPrefix": "http://127.0.0.1:9/nowhere", "filterVerb": "filter", "ignorable": True,
                "managedResources": managed},
           ]}
    path = tmp / "sched.json"
    path.write_text(json.dumps(cfg))
    proc = subprocess.Popen([sys.executable, "-m", "pyk8s.cli", "scheduler", "--kubeconfig", c.kubeconfig,
                             "--config", str(path), "--leader-elect=false"], cwd=str(REPO),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=dict(os.environ))
    try:
        c.kubectl("create", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List",
                                                        "items": [node(f"n{i}") for i in range(1, 5)]}))
        yield c, ext, names_only
    finally:
        proc.terminate()
        proc.wait(10)
        ext.server.shutdown()
        names_only.server.shutdown()
        c.stop()


def get_pod(c: Cluster, name: str) -> dict[str, Any]:
    return json.loads(c.kubectl("get", "pod", name, "-o", "json").stdout)


def test_filter_prioritize_and_bind_go_through_the_extender(env: tuple[Cluster, Extender, Extender]) -> None:
    c, ext, names_only = env
    c.kubectl("create", "-f", "-", input=json.dumps(pod("w1")))
    bound = wait_for(lambda: get_pod(c, "w1")["spec"].get("nodeName"), 20, "w1 bound")
    assert bound == "n3"  # n1 and n4 filtered out; n3's extender score × 5 × 10 outweighs our own scores
    assert ext.verbs("w1") == ["filter", "prioritize", "bind"]
    f = next(a for v, a in ext.calls if v == "filter" and a["Pod"]["metadata"]["name"] == "w1")
    assert f["NodeNames"] is None and sorted(n["metadata"]["name"] for n in f["Nodes"]["items"]) == ["n1", "n2", "n3", "n4"]
    # a nodeCacheCapable extender gets names only: those the first extender left
    nc = next(a for v, a in names_only.calls if a["Pod"]["metadata"]["name"] == "w1")
    assert nc["Nodes"] is None and sorted(nc["NodeNames"]) == ["n2", "n3"]
    b = next(a for v, a in ext.calls if v == "bind" and a["PodName"] == "w1")
    assert b == {"PodName": "w1", "PodNamespace": "default", "PodUID": get_pod(c, "w1")["metadata"]["uid"], "Node": "n3"}


def test_pods_without_a_managed_resource_never_reach_it(env: tuple[Cluster, Extender, Extender]) -> None:
    c, ext, names_only = env
    c.kubectl("create", "-f", "-", input=json.dumps(pod("plain", widget=False)))
    assert wait_for(lambda: get_pod(c, "plain")["spec"].get("nodeName"), 20, "plain bound") in ("n1", "n2", "n3", "n4")
    assert ext.verbs("plain") == []


def test_extender_verdicts_are_in_failed_scheduling(env: tuple[Cluster, Extender, Extender]) -> None:
    c, ext, names_only = env
    for n in ("n2", "n3"):
        c.kubectl("cordon", n)
    try:
        c.kubectl("create", "-f", "-", input=json.dumps(pod("w2")))

        def message() -> str | None:
            cond = [x for x in get_pod(c, "w2")["status"].get("conditions") or [] if x["type"] == "PodScheduled"]
            return cond[0]["message"] if cond else None

        msg = wait_for(message, 20, "FailedScheduling")
        assert msg.startswith("0/4 nodes are available: 1 no widgets on this node, 1 widget slots taken, "
                              "2 node(s) were unschedulable. preemption: "), msg
    finally:
        for n in ("n2", "n3"):
            c.kubectl("uncordon", n)
    assert wait_for(lambda: get_pod(c, "w2")["spec"].get("nodeName"), 30, "w2 bound after uncordon") in ("n2", "n3")

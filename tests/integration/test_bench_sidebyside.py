"""bench/sidebyside.py, the side-by-side mode, run small against real pyk8s servers.

A foreign target is this module's server, reached only through its kubeconfig (as an upstream
cluster would be): every phase must give a figure, and afterwards the cluster must hold nothing
of the run while what was there before (a namespace, its pending pod, a cordoned node) is
untouched. A run whose namespace exists must refuse before creating anything. A target the
bench starts itself gets the start phases and, at full scale, the anchors.md §7 column.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import pytest

from tests.cluster import REPO, Cluster, newest_kubectl

pytestmark = pytest.mark.xdist_group("bench-sidebyside")

PHASE_KEYS = ["rss_fresh", "idle_cpu", "create1_rate", "create1_cpu", "create8_rate", "create8_cpu", "get_table",
              "get_json", "watch", "delete_ns", "bind", "bind_cpu", "deployment", "deployment_cpu", "rss_after"]


STALE = "bench-sbs-stale-node-0000"  # as an earlier, killed run would have left it


def bench(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "bench.sidebyside", "--kubectl", newest_kubectl(), *args],
                          cwd=str(REPO), capture_output=True, text=True, timeout=timeout)


def bench_in_background(cluster: Cluster, run_id: str) -> subprocess.Popen[str]:
    """The scheduling phases at a small scale, to be interrupted."""
    return subprocess.Popen([sys.executable, "-m", "bench.sidebyside", "--kubectl", newest_kubectl(),
                             "--kubeconfig", cluster.kubeconfig, "--run-id", run_id, "--scale", "0.05",
                             "--phases", "bind,deployment"], cwd=str(REPO), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def sigterm_when(proc: subprocess.Popen[str], ready: Callable[[], None]) -> str:
    """SIGTERM the bench once ready() returns; its stderr (a bench still there after is killed)."""
    try:
        ready()
        proc.send_signal(signal.SIGTERM)
        return proc.communicate(timeout=60)[1]
    finally:
        if proc.poll() is None:
            proc.kill()


def get(cluster: Cluster, *args: str) -> Any:
    return json.loads(cluster.kubectl("get", *args, "-o", "json").stdout)


def leftovers(cluster: Cluster) -> tuple[list[str], list[str]]:
    """Namespaces named bench-sbs-* and nodes labelled bench-sbs/run, whatever their state."""
    ns = [n["metadata"]["name"] for n in get(cluster, "namespaces")["items"]
          if n["metadata"]["name"].startswith("bench-sbs-")]
    nodes = [n["metadata"]["name"] for n in get(cluster, "nodes", "-l", "bench-sbs/run")["items"]
             if n["metadata"]["name"] != STALE]
    return ns, nodes


@pytest.fixture(scope="module")
def sentinels(cluster: Cluster) -> dict[str, str]:
    """What the cluster held before the bench: their uids."""
    cluster.kubectl("create", "namespace", "sbs-sentinel")
    cluster.kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "sbs-cordoned"}, "spec": {"unschedulable": True},
         "status": {"capacity": {"pods": "110", "cpu": "4", "memory": "8Gi"},
                    "conditions": [{"type": "Ready", "status": "True"}]}},
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": STALE, "labels": {"bench-sbs/run": "stale"}},
         "spec": {"unschedulable": True}},
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "keep", "namespace": "sbs-sentinel"},
         "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]}}]}))
    return {"ns": get(cluster, "namespace", "sbs-sentinel")["metadata"]["uid"],
            "node": get(cluster, "node", "sbs-cordoned")["metadata"]["uid"],
            "pod": get(cluster, "pod", "keep", "-n", "sbs-sentinel")["metadata"]["uid"],
            "stale": get(cluster, "node", STALE)["metadata"]["uid"]}


def assert_untouched(cluster: Cluster, sentinels: dict[str, str]) -> None:
    ns = get(cluster, "namespace", "sbs-sentinel")
    node = get(cluster, "node", "sbs-cordoned")
    pod = get(cluster, "pod", "keep", "-n", "sbs-sentinel")
    assert (ns["metadata"]["uid"], node["metadata"]["uid"], pod["metadata"]["uid"]) == (
        sentinels["ns"], sentinels["node"], sentinels["pod"])
    # another run's node carries the label a run cleans up by, but not its run id: kept
    assert get(cluster, "node", STALE)["metadata"]["uid"] == sentinels["stale"]
    assert ns["status"]["phase"] == "Active"
    assert "deletionTimestamp" not in pod["metadata"]
    # the fake nodes are tainted for the bench's pods only: a cluster's own pending pod never lands there
    assert not pod["spec"].get("nodeName"), pod["spec"].get("nodeName")


def test_foreign_target_measures_every_phase_and_leaves_nothing(cluster: Cluster, sentinels: dict[str, str],
                                                                tmp_path: Any) -> None:
    out = tmp_path / "figures.json"
    # the control plane's processes found by command line, as a kind cluster's are (their data dir)
    r = bench("--kubeconfig", cluster.kubeconfig, "--label", "foreign",
              "--process-match", re.escape(os.path.abspath(cluster.data_dir)),
              "--scale", "0.05", "--idle-seconds", "0.2", "--json", str(out))
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads(out.read_text())
    assert doc["sizes"] == {"pods": 50, "nodes": 5}
    (target,) = doc["targets"]
    assert not target["started_by_bench"]
    (fig,) = target["rounds"]
    assert fig["start_readyz"] == fig["start_sa"] == "not measured: not started by the bench"
    missing = [k for k in PHASE_KEYS if not isinstance(fig.get(k), (int, float))]
    assert not missing, (missing, fig)
    assert all(fig[k] > 0 for k in PHASE_KEYS if k != "idle_cpu"), fig
    assert fig["per_process"]["pyk8s server"]["rss_mib"] > 0 and fig["per_process"]["pyk8s scheduler"]["cpu_s"] > 0
    split = fig["deployment_cpu_by_process"]
    assert split["pyk8s server"] > 0 and sum(split.values()) == pytest.approx(fig["deployment_cpu"])
    assert "WATCH receives 50 creates" in r.stdout and "50 pods bound on 5 nodes" in r.stdout
    assert "load average at start" in r.stdout
    assert "warning: 1 nodes of earlier runs are still there" in r.stdout
    assert leftovers(cluster) == ([], [])
    assert_untouched(cluster, sentinels)


@pytest.mark.parametrize("taken", ["", "-deploy"])
def test_refuses_a_cluster_that_holds_its_namespace(cluster: Cluster, sentinels: dict[str, str], taken: str) -> None:
    name = f"bench-sbs-taken{taken}"
    cluster.kubectl("create", "namespace", name)
    uid = get(cluster, "namespace", name)["metadata"]["uid"]
    try:
        r = bench("--kubeconfig", cluster.kubeconfig, "--run-id", "taken", "--scale", "0.05")
        assert r.returncode == 2, r.stdout + r.stderr
        assert f'namespace "{name}" already exists' in r.stderr
        held = get(cluster, "namespace", name)
        assert held["metadata"]["uid"] == uid and held["status"]["phase"] == "Active"
        assert leftovers(cluster) == ([name], [])  # none of the run's other namespaces was created
        assert_untouched(cluster, sentinels)
    finally:
        cluster.kubectl("delete", "namespace", name, "--wait=false")


def test_started_server_gets_start_phases_and_the_upstream_column(tmp_path: Any) -> None:
    out = tmp_path / "figures.json"
    r = bench("--phases", "start,resources", "--idle-seconds", "0.2", "--json", str(out))
    assert r.returncode == 0, r.stdout + r.stderr
    (target,) = json.loads(out.read_text())["targets"]
    assert target["started_by_bench"] and target["kubeconfig"] == "@pyk8s"
    (fig,) = target["rounds"]
    assert 0 < fig["start_readyz"] <= fig["start_sa"] < 120
    assert fig["rss_fresh"] > 0 and fig["rss_after"] > 0
    assert "pyk8s server" in fig["per_process"]
    assert "upstream §7" in r.stdout and "4.80-7.70 s" in r.stdout and "pyk8s / upstream §7" in r.stdout
    assert "create1_rate" not in fig and "POST" not in r.stdout  # phases not asked for are not run
    # the server it started is stopped and its data dir removed
    procs = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    assert "bench-sbs-pyk8s-" not in procs
    assert not any(d.startswith("bench-sbs-pyk8s-") for d in os.listdir(os.path.dirname(str(tmp_path))))


def test_sigterm_mid_run_still_removes_what_it_created(cluster: Cluster, sentinels: dict[str, str]) -> None:
    proc = bench_in_background(cluster, "interrupted")

    def nodes_exist() -> None:
        # stopped once its fake nodes exist: namespaces, nodes and bound pods are all there to clean up
        deadline = time.monotonic() + 60
        while not leftovers(cluster)[1]:
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.1)

    err = sigterm_when(proc, nodes_exist)
    assert proc.returncode == 130, err
    assert "interrupted" in err
    assert leftovers(cluster) == ([], [])
    assert_untouched(cluster, sentinels)


def test_sigterm_during_the_clean_up_lets_it_finish(cluster: Cluster, sentinels: dict[str, str]) -> None:
    """The interrupt lands while the run deletes its namespaces (a loaded machine makes that the
    likely moment): the clean-up is not cut short; the run still ends as interrupted."""
    proc = bench_in_background(cluster, "late-interrupt")

    def last_phase_done() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:  # the last phase's line: the clean-up starts right after it
            if "Deployment of" in line:
                break

    err = sigterm_when(proc, last_phase_done)
    assert proc.returncode == 130, err
    assert leftovers(cluster) == ([], [])
    assert_untouched(cluster, sentinels)

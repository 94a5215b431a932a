"""`kubectl top` on a real node: a runc CPU burner's usage as the metrics server serves it, against its cgroup.

The built-in metrics server scrapes the kubelet's /metrics/resource at the node's address with its own
ServiceAccount's certificate (authorized as nodes/metrics) at the default 15 s resolution; kubectl top
pod and node print upstream's columns, and the burner's CPU is within 10 % of what its cgroup counted.
"""

from __future__ import annotations

import glob
import re
import time

import pytest

from tests.e2e.kubelet_harness import Env, busybox_pod, requirements

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("runc-kubectl-top"), pytest.mark.timeout(300)]

BURNER = "top-burner"


@pytest.fixture(scope="module")
def env(request, tmp_path_factory):
    requirements()
    e = Env(str(tmp_path_factory.mktemp("ktop")))
    request.addfinalizer(e.stop)
    e.start()
    pod = busybox_pod(BURNER, "while :; do :; done")
    # the limit throttles it to a steady 300m, so any window of the cgroup's counter gives the same rate
    pod["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "100m", "memory": "16Mi"},
                                                 "limits": {"cpu": "300m", "memory": "64Mi"}}
    e.create(pod)
    e.wait_running(BURNER, 60)
    return e


def _cpuacct(env: Env) -> str:
    pod = env.pod(BURNER)
    assert pod is not None
    cid = pod["status"]["containerStatuses"][0]["containerID"].removeprefix("runc://")
    for pattern in (f"/sys/fs/cgroup/cpuacct/kubepods/**/pod{pod['metadata']['uid']}/{cid}/cpuacct.usage",
                    f"/sys/fs/cgroup/**/pod{pod['metadata']['uid']}/{cid}/cpu.stat"):
        found = glob.glob(pattern, recursive=True)
        if found:
            return found[0]
    raise AssertionError("no cgroup for the burner")


def _usage_ns(path: str) -> int:
    with open(path) as f:
        text = f.read()
    if path.endswith("cpu.stat"):  # cgroup v2: microseconds
        return int(dict(line.split() for line in text.splitlines())["usage_usec"]) * 1000
    return int(text)


def test_kubectl_top_pod_matches_the_cgroup(env: Env) -> None:
    path = _cpuacct(env)
    t0, c0 = time.time(), _usage_ns(path)

    def top() -> list[str] | None:
        out = env.kubectl("top", "pod", BURNER, "--containers", check=False)
        lines = out.splitlines() if isinstance(out, str) else []
        return lines if len(lines) == 2 and lines[0].split() == ["POD", "NAME", "CPU(cores)", "MEMORY(bytes)"] \
            else None

    lines = env.wait(top, 90, "kubectl top pod with metrics", 1.0)
    t1, c1 = time.time(), _usage_ns(path)
    want_m = (c1 - c0) / (t1 - t0) / 1e6
    pod, name, cpu, mem = lines[1].split()
    assert (pod, name) == (BURNER, "c")
    got_m = int(cpu.removesuffix("m"))
    assert want_m > 200, want_m  # it burns up to its 300m limit
    assert abs(got_m - want_m) <= 0.1 * want_m, (got_m, want_m)
    assert re.fullmatch(r"\d+Mi", mem), mem


def test_kubectl_top_node(env: Env) -> None:
    def top() -> list[str] | None:
        out = env.kubectl("top", "node", check=False)
        lines = out.splitlines() if isinstance(out, str) else []
        return lines if len(lines) >= 2 else None

    lines = env.wait(top, 90, "kubectl top node", 1.0)
    assert lines[0].split() == ["NAME", "CPU(cores)", "CPU(%)", "MEMORY(bytes)", "MEMORY(%)"]
    row = next(line.split() for line in lines[1:] if line.split()[0] == env.node)
    assert int(row[1].removesuffix("m")) >= 200  # the burner at least
    assert row[2].endswith("%") and row[3].endswith("Mi") and row[4].endswith("%")

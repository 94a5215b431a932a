"""The RuntimeClass (on by default), AlwaysPullImages, PodTolerationRestriction and EventRateLimit
admission plug-ins on a real server, through the real kubectl and the official client, each with
upstream's messages, and the ways round them an attacker tries (a missing class, a conflicting
selector or overhead, an overhead without a class, tolerate-everything, tolerations added by update,
a broken namespace annotation, event floods); plus the server refusing unknown plug-in names and an
EventRateLimit without configuration."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cluster import REPO, Cluster

pytestmark = pytest.mark.xdist_group("admission_opt_in")

CONFIG = """\
apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: PodTolerationRestriction
  configuration:
    apiVersion: podtolerationrestriction.admission.k8s.io/v1alpha1
    kind: Configuration
    default: [{key: cluster-default, operator: Exists, effect: NoSchedule}]
- name: EventRateLimit
  path: eventratelimit.yaml
"""
EVENT_CONFIG = """\
apiVersion: eventratelimit.admission.k8s.io/v1alpha1
kind: Configuration
limits:
- {type: Namespace, qps: 1, burst: 3, cacheSize: 10}
"""
SANDBOX_TOL = {"key": "sandbox", "operator": "Exists", "effect": "NoSchedule"}
RUNTIME_CLASS = {
    "apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": "sandboxed"}, "handler": "runsc",
    "overhead": {"podFixed": {"cpu": "250m", "memory": "120Mi"}},
    "scheduling": {"nodeSelector": {"sandbox": "true"}, "tolerations": [SANDBOX_TOL]},
}
TEAM_TOL = {"key": "team", "operator": "Equal", "value": "a", "effect": "NoSchedule"}
# DefaultTolerationSeconds adds these to every pod before PodTolerationRestriction judges it (as upstream)
WHITELIST = [TEAM_TOL, {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"},
             {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"}]
PTR = "scheduler.alpha.kubernetes.io/"


@pytest.fixture(scope="module")
def c(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    tmp: Path = tmp_path_factory.mktemp("admission-opt-in")
    (tmp / "admission.yaml").write_text(CONFIG)
    (tmp / "eventratelimit.yaml").write_text(EVENT_CONFIG)
    cl = Cluster(str(tmp / "data"), ["--disable", "controller-manager", "--disable", "scheduler", "--disable", "dns",
                                     "--enable-admission-plugins",
                                     "AlwaysPullImages,PodTolerationRestriction,EventRateLimit",
                                     "--admission-control-config-file", str(tmp / "admission.yaml")])
    cl.start()
    for ns in ("rc", "pull", "team", "plain", "broken", "ev", "ev2", "evq"):
        cl.kubectl("create", "ns", ns)
        cl.kubectl("create", "sa", "default", "-n", ns)  # (no controller-manager makes them)
    cl.kubectl("annotate", "ns", "team", PTR + "defaultTolerations=" + json.dumps([TEAM_TOL]),
               PTR + "tolerationsWhitelist=" + json.dumps(WHITELIST))
    cl.kubectl("annotate", "ns", "broken", PTR + "tolerationsWhitelist=[{not json")
    cl.kubectl("apply", "-f", "-", input=json.dumps(RUNTIME_CLASS))
    yield cl
    cl.stop()


def pod(name: str, ns: str, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"containers": [{"name": "c", "image": "busybox", "imagePullPolicy": "IfNotPresent"}],
                            "automountServiceAccountToken": False}
    body.update(spec)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns}, "spec": body}


def create(c: Cluster, obj: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    return c.kubectl("create", "-o", "json", "-f", "-", input=json.dumps(obj), check=False)


def created(c: Cluster, obj: dict[str, Any]) -> dict[str, Any]:
    r = create(c, obj)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def refused(c: Cluster, obj: dict[str, Any], message: str) -> None:
    r = create(c, obj)
    name = obj["metadata"]["name"]
    assert r.returncode != 0
    assert r.stderr.strip() == (f'Error from server (Forbidden): error when creating "STDIN": '
                                f'pods "{name}" is forbidden: {message}'), r.stderr


# ---- RuntimeClass ------------------------------------------------------------------------------

def test_runtime_class_served_and_applied(c: Cluster) -> None:
    from kubernetes import client

    api = client.NodeV1Api(c.api_client())
    assert api.read_runtime_class("sandboxed").handler == "runsc"
    p = created(c, pod("sandboxed", "rc", runtimeClassName="sandboxed", nodeSelector={"disk": "ssd"},
                       tolerations=[{"key": "sandbox", "operator": "Exists"}]))
    spec = p["spec"]
    assert spec["overhead"] == {"cpu": "250m", "memory": "120Mi"}
    assert spec["nodeSelector"] == {"disk": "ssd", "sandbox": "true"}
    # the pod's toleration of every sandbox effect covers the class's NoSchedule one: not added twice
    assert [t for t in spec["tolerations"] if t["key"] == "sandbox"] == [{"key": "sandbox", "operator": "Exists"}]
    bare = created(c, pod("sandboxed-bare", "rc", runtimeClassName="sandboxed"))
    assert bare["spec"]["nodeSelector"] == {"sandbox": "true"}
    assert SANDBOX_TOL in bare["spec"]["tolerations"]
    # the official client's create goes the same way
    core = client.CoreV1Api(c.api_client())
    made = core.create_namespaced_pod("rc", pod("sandboxed-client", "rc", runtimeClassName="sandboxed",
                                                overhead={"memory": "120Mi", "cpu": "0.25"}))
    assert made.spec.overhead == {"cpu": "250m", "memory": "120Mi"}


def test_runtime_class_attacks_refused(c: Cluster) -> None:
    from kubernetes import client
    from kubernetes.client.rest import ApiException

    refused(c, pod("ghost", "rc", runtimeClassName="missing"), 'pod rejected: RuntimeClass "missing" not found')
    refused(c, pod("escape", "rc", runtimeClassName="sandboxed", nodeSelector={"sandbox": "false"}),
            "conflict: runtimeClass.scheduling.nodeSelector[sandbox] = true; pod.spec.nodeSelector[sandbox] = false")
    refused(c, pod("cheap", "rc", runtimeClassName="sandboxed", overhead={"cpu": "1m", "memory": "1Mi"}),
            "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead")
    refused(c, pod("classless", "rc", overhead={"cpu": "1m"}),
            "pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead")
    core = client.CoreV1Api(c.api_client())
    with pytest.raises(ApiException) as ei:
        core.create_namespaced_pod("rc", pod("ghost2", "rc", runtimeClassName="missing"))
    assert ei.value.status == 403
    st = json.loads(ei.value.body)
    assert (st["reason"], st["message"]) == (
        "Forbidden", 'pods "ghost2" is forbidden: pod rejected: RuntimeClass "missing" not found')
    # a dry run is judged the same
    r = c.kubectl("create", "--dry-run=server", "-f", "-", input=json.dumps(pod("ghost3", "rc",
                                                                             runtimeClassName="missing")),
                  check=False)
    assert 'RuntimeClass "missing" not found' in r.stderr


# ---- AlwaysPullImages --------------------------------------------------------------------------

def test_always_pull_images(c: Cluster) -> None:
    p = created(c, pod("pull", "pull", initContainers=[{"name": "i", "image": "busybox", "imagePullPolicy": "Never"}]))
    assert [x["imagePullPolicy"] for x in p["spec"]["initContainers"] + p["spec"]["containers"]] == ["Always"] * 2
    # an update that brings a new image is judged again (the policy stays Always)
    c.kubectl("set", "image", "pod/pull", "c=busybox:1.36", "-n", "pull")
    got = json.loads(c.kubectl("get", "pod", "pull", "-n", "pull", "-o", "json").stdout)
    assert got["spec"]["containers"][0] == {**got["spec"]["containers"][0], "image": "busybox:1.36",
                                            "imagePullPolicy": "Always"}
    # a debug container added through the ephemeralcontainers subresource gets it as well
    from kubernetes import client

    core = client.CoreV1Api(c.api_client())
    dbg = core.patch_namespaced_pod_ephemeralcontainers(
        "pull", "pull", {"spec": {"ephemeralContainers": [{"name": "dbg", "image": "alpine",
                                                             "imagePullPolicy": "IfNotPresent"}]}})
    assert [e.image_pull_policy for e in dbg.spec.ephemeral_containers] == ["Always"]


# ---- PodTolerationRestriction ------------------------------------------------------------------

def test_namespace_default_and_whitelist(c: Cluster) -> None:
    p = created(c, pod("team-pod", "team"))
    assert TEAM_TOL in p["spec"]["tolerations"]
    assert not any(t.get("key") == "cluster-default" for t in p["spec"]["tolerations"])
    msg = ("pod tolerations (possibly merged with namespace default tolerations) conflict with its namespace "
           "whitelist")
    refused(c, pod("gpu", "team", tolerations=[{"key": "gpu", "operator": "Exists"}]), msg)
    # tolerating every taint is what the whitelist exists to stop
    refused(c, pod("everything", "team", tolerations=[{"operator": "Exists"}]), msg)
    refused(c, pod("other-value", "team", tolerations=[{"key": "team", "value": "b", "effect": "NoSchedule"}]), msg)
    # a toleration added by an update is judged as well
    r = c.kubectl("patch", "pod", "team-pod", "-n", "team", "--type=json", "-p",
                  json.dumps([{"op": "add", "path": "/spec/tolerations/-",
                               "value": {"key": "gpu", "operator": "Exists"}}]), check=False)
    assert r.returncode != 0
    assert f'pods "team-pod" is forbidden: {msg}' in r.stderr


def test_cluster_default_and_memory_pressure(c: Cluster) -> None:
    best_effort = created(c, pod("plain-pod", "plain", tolerations=[{"key": "anything", "operator": "Exists"}]))
    keys = [t.get("key") for t in best_effort["spec"]["tolerations"]]
    assert "cluster-default" in keys and "anything" in keys  # no cluster whitelist: anything goes
    assert "node.kubernetes.io/memory-pressure" not in keys
    burstable = pod("burstable", "plain")
    burstable["spec"]["containers"][0]["resources"] = {"requests": {"memory": "10Mi"}}
    p = created(c, burstable)
    assert {"key": "node.kubernetes.io/memory-pressure", "operator": "Exists",
            "effect": "NoSchedule"} in p["spec"]["tolerations"]


def test_broken_namespace_annotation_is_no_500(c: Cluster) -> None:
    r = create(c, pod("broken", "broken", tolerations=[{"key": "x", "operator": "Exists"}]))
    assert r.returncode != 0
    assert "Error from server (Forbidden)" in r.stderr and PTR + "tolerationsWhitelist" in r.stderr


# ---- EventRateLimit ----------------------------------------------------------------------------

def event(name: str, ns: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Event", "metadata": {"name": name, "namespace": ns},
            "involvedObject": {"kind": "Pod", "namespace": ns, "name": "p"}, "reason": "Test", "message": "m",
            "type": "Normal", "source": {"component": "flood"}}


def test_event_rate_limit(c: Cluster) -> None:
    from kubernetes import client
    from kubernetes.client.rest import ApiException

    core = client.CoreV1Api(c.api_client())
    outcomes: list[int] = []
    for i in range(30):
        try:
            core.create_namespaced_event("ev", event(f"e{i}", "ev"))
            outcomes.append(201)
        except ApiException as e:
            outcomes.append(e.status)
            last = json.loads(e.body)
            break
    # the burst of 3 passes; the bucket refills at only 1/s, so the flood soon meets a 429
    assert outcomes[:3] == [201] * 3 and outcomes[-1] == 429, outcomes
    assert (last["code"], last["reason"], last["message"]) == (
        429, "TooManyRequests", "Too many requests: limit reached on type Namespace for key ev")
    # dry runs are not counted, and another namespace has its own bucket
    core.create_namespaced_event("ev", event("dry", "ev"), dry_run="All")
    r = c.kubectl("create", "-f", "-", input=json.dumps(event("k0", "ev2")))
    assert r.returncode == 0
    n = 0
    for attempt in range(10):
        # empty the bucket, then kubectl asks (it refills at 1/s, so a slow kubectl start may find a token)
        while True:
            n += 1
            try:
                core.create_namespaced_event("ev2", event(f"d{n}", "ev2"))
            except ApiException as e:
                assert e.status == 429
                break
        r = c.kubectl("create", "-f", "-", input=json.dumps(event(f"k{attempt + 1}", "ev2")), check=False)
        if r.returncode:
            break
    assert "Error from server (TooManyRequests)" in r.stderr
    assert "limit reached on type Namespace for key ev2" in r.stderr


def test_refused_event_is_not_charged_to_the_quota(c: Cluster) -> None:
    """EventRateLimit judges before ResourceQuota charges (upstream's order): a refused event uses no quota."""
    from kubernetes import client
    from kubernetes.client.rest import ApiException

    c.kubectl("create", "quota", "events", "--hard=count/events=100", "-n", "evq")
    # (no controller-manager here to fill in the quota's status)
    c.kubectl("patch", "resourcequota", "events", "-n", "evq", "--subresource=status", "--type=merge", "-p",
              json.dumps({"status": {"hard": {"count/events": "100"}, "used": {"count/events": "0"}}}))
    core = client.CoreV1Api(c.api_client())
    made = 0
    for i in range(30):
        try:
            core.create_namespaced_event("evq", event(f"q{i}", "evq"))
            made += 1
        except ApiException as e:
            assert e.status == 429, e.body
            break
    used = core.read_namespaced_resource_quota("events", "evq").status.used
    assert used == {"count/events": str(made)}


# ---- the flags -----------------------------------------------------------------------------------

def _server_refusal(tmp_path: Path, *args: str) -> str:
    r = subprocess.run([sys.executable, "-m", "pyk8s.cli", "server", "--data-dir", str(tmp_path / "d"),
                        "--disable-agent", *args], capture_output=True, text=True, cwd=str(REPO), timeout=60)
    assert r.returncode == 1, r.stdout + r.stderr
    return r.stderr.strip()


def test_flags_refused(tmp_path: Path) -> None:
    assert _server_refusal(tmp_path, "--enable-admission-plugins", "AlwaysPullImages,Bogus") == \
        'pyk8s: enable-admission-plugins plugin "Bogus" is unknown'
    assert "EventRateLimit" in _server_refusal(tmp_path, "--enable-admission-plugins", "EventRateLimit")
    bad = tmp_path / "bad.yaml"
    bad.write_text(CONFIG.replace("path: eventratelimit.yaml", "configuration: {apiVersion: "
                                  "eventratelimit.admission.k8s.io/v1alpha1, kind: Configuration, limits: "
                                  "[{type: Everyone, qps: 0, burst: 1}]}"))
    err = _server_refusal(tmp_path, "--enable-admission-plugins", "EventRateLimit",
                          "--admission-control-config-file", str(bad))
    assert 'limits[0].type: Unsupported value: "Everyone"' in err and "limits[0].qps: Invalid value: 0" in err


def test_runtime_class_can_be_disabled(tmp_path: Path) -> None:
    cl = Cluster(str(tmp_path / "data"), ["--disable", "controller-manager", "--disable", "scheduler", "--disable",
                                          "dns", "--disable-admission-plugins=RuntimeClass"])
    cl.start()
    try:
        cl.kubectl("create", "sa", "default")
        p = created(cl, pod("unchecked", "default", runtimeClassName="missing"))
        assert p["spec"]["runtimeClassName"] == "missing" and "overhead" not in p["spec"]
        # the opt-in plug-ins stay off: the pull policy is the pod's own
        assert p["spec"]["containers"][0]["imagePullPolicy"] == "IfNotPresent"
    finally:
        cl.stop()

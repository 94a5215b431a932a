"""The slower kubectl scenarios (watch, edit, wait, describe, explain, raw) on the oldest, a middle and the newest
installed kubectl; describe and explain output pinned to ../shared/reference/upstream-observed.md."""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import threading
import time

import pytest

from tests.cluster import BOTH_DATASTORES

from .kubectl_compat import MANIFESTS, SOME_VERSIONS, Kubectl, ensure_nodes, ensure_ns, table

pytestmark = BOTH_DATASTORES  # watch, edit, wait and describe read the same from SQLite and from etcd

UPSTREAM = os.path.join(MANIFESTS, "..", "upstream-observed.md")


def _upstream_block(command: str) -> list[str]:
    """The output lines the transcript recorded for `$ <command>` (tabs shown there as 4 spaces)."""
    text = open(UPSTREAM).read()
    start = text.index(f"$ {command}\n") + len(command) + 3
    return text[start:text.index("```", start)].rstrip("\n").split("\n")


@pytest.fixture(scope="module")
def kubectls(cluster):
    ks = {v: Kubectl(cluster, v) for v in SOME_VERSIONS if v != "none"}
    if ks:
        ensure_nodes(next(iter(ks.values())))
    return ks


def _k(kubectls, version) -> Kubectl:
    if version not in kubectls:
        pytest.skip("no kubectl binaries")
    return kubectls[version]


@pytest.mark.parametrize("version", SOME_VERSIONS)
def test_get_watch_and_watch_only(kubectls, version):
    k = _k(kubectls, version)
    ns = ensure_ns(k, k.ns + "-watch")
    k.run("-n", ns, "create", "cm", "first")
    env = dict(os.environ, KUBECONFIG=k.cluster.kubeconfig, HOME=k.home)
    watch = subprocess.Popen([k.binary, "-n", ns, "get", "cm", "-w"], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=env)
    only = subprocess.Popen([k.binary, "-n", ns, "get", "cm", "--watch-only", "-o", "name"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    seen: dict[str, list[str]] = {"watch": [], "only": []}

    def read(name: str, p: subprocess.Popen[str]) -> None:
        assert p.stdout is not None
        for line in p.stdout:
            seen[name].append(line)

    readers = [threading.Thread(target=read, args=(n, p), daemon=True) for n, p in (("watch", watch), ("only", only))]
    for t in readers:
        t.start()
    try:
        time.sleep(1.5)  # both have listed and are watching (--watch-only prints nothing to show it)
        k.run("-n", ns, "create", "cm", "second", "--from-literal=a=1")
        k.run("-n", ns, "label", "cm", "second", "x=y")
        k.run("-n", ns, "delete", "cm", "second")
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and (len(seen["only"]) < 3 or len(seen["watch"]) < 6):
            time.sleep(0.05)
        time.sleep(0.2)  # a fourth event, were there one, would come within this
    finally:
        watch.terminate()
        only.terminate()
    watch.wait(10)
    only.wait(10)
    for t in readers:
        t.join(10)
    rows = table("".join(seen["watch"]))
    assert rows[0] == ["NAME", "DATA", "AGE"]
    names = [r[0] for r in rows[1:]]
    assert names[:2] in (["first", "kube-root-ca.crt"], ["kube-root-ca.crt", "first"])
    assert names[2:] == ["second"] * 3  # added, modified, deleted: one row each, as upstream
    assert [r[1] for r in rows[3:]] == ["1"] * 3
    assert "".join(seen["only"]).split() == ["configmap/second"] * 3
    k.run("delete", "ns", ns, "--wait=false")


@pytest.mark.parametrize("version", SOME_VERSIONS)
def test_edit_with_an_editor_script(kubectls, version, tmp_path):
    k = _k(kubectls, version)
    ns = ensure_ns(k, k.ns + "-edit")
    k.run("-n", ns, "create", "cm", "e", "--from-literal=x=1")
    editor = tmp_path / "editor.sh"
    editor.write_text('#!/bin/sh\nsed -i \'s/^  x: "1"$/  x: "2"/\' "$1"\n')
    editor.chmod(editor.stat().st_mode | stat.S_IEXEC)
    r = k.run("-n", ns, "edit", "cm", "e", env={"EDITOR": str(editor)})
    assert r.stdout == "configmap/e edited\n"
    assert k.json("-n", ns, "get", "cm", "e")["data"] == {"x": "2"}
    # nothing changed: kubectl says so and writes nothing
    noop = tmp_path / "noop.sh"
    noop.write_text("#!/bin/sh\nexit 0\n")
    noop.chmod(noop.stat().st_mode | stat.S_IEXEC)
    r = k.run("-n", ns, "edit", "cm", "e", env={"EDITOR": str(noop)})
    assert r.stdout + r.stderr == "Edit cancelled, no changes made.\n"
    # an unknown field is refused by strict server-side validation, as upstream words it
    bad = tmp_path / "bad.sh"
    bad.write_text("#!/bin/sh\nsed -i 's/^data:/bogus: 1\\ndata:/' \"$1\"\n")
    bad.chmod(bad.stat().st_mode | stat.S_IEXEC)
    r = k.run("-n", ns, "edit", "cm", "e", env={"EDITOR": str(bad)}, check=False)
    assert r.returncode == 1
    assert ('error: configmaps "e" could not be patched: ConfigMap in version "v1" cannot be handled as a '
            'ConfigMap: strict decoding error: unknown field "bogus"') in r.stderr
    k.run("delete", "ns", ns, "--wait=false")


@pytest.mark.parametrize("version", SOME_VERSIONS)
def test_wait_for_condition_jsonpath_and_delete(kubectls, version):
    k = _k(kubectls, version)
    ns = ensure_ns(k, k.ns + "-wait")
    plural = f"gadgets{k.minor}"
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": f"{plural}.example.com"},
           "spec": {"group": "example.com", "scope": "Namespaced",
                    "names": {"plural": plural, "singular": plural[:-1], "kind": f"Gadget{k.minor}"},
                    "versions": [{"name": "v1", "served": True, "storage": True,
                                  "schema": {"openAPIV3Schema": {"type": "object",
                                                                 "x-kubernetes-preserve-unknown-fields": True}}}]}}
    k.run("apply", "-f", "-", input=json.dumps(crd))
    r = k.run("wait", "--for=condition=Established", f"crd/{plural}.example.com", "--timeout=20s")
    assert r.stdout == f"customresourcedefinition.apiextensions.k8s.io/{plural}.example.com condition met\n"
    k.run("-n", ns, "create", "cm", "w", "--from-literal=phase=done")
    if k.minor >= 28:  # --for=jsonpath without the surrounding braces: 1.28+
        r = k.run("-n", ns, "wait", "--for=jsonpath={.data.phase}=done", "cm/w", "--timeout=10s")
        assert r.stdout == "configmap/w condition met\n"
    env = dict(os.environ, KUBECONFIG=k.cluster.kubeconfig, HOME=k.home)
    waiter = subprocess.Popen([k.binary, "-n", ns, "wait", "--for=delete", "cm/w", "--timeout=20s"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    time.sleep(1)
    k.run("-n", ns, "delete", "cm", "w")
    out, err = waiter.communicate(timeout=30)
    assert waiter.returncode == 0, err
    assert out == "configmap/w condition met\n"
    # waiting for an object that is already gone succeeds at once
    assert k.run("-n", ns, "wait", "--for=delete", "cm/w", "--timeout=5s").returncode == 0
    r = k.run("-n", ns, "wait", "--for=condition=Ready", "cm/nope", "--timeout=1s", check=False)
    assert r.returncode == 1 and 'configmaps "nope" not found' in r.stderr
    k.run("delete", "crd", f"{plural}.example.com", "--wait=false")
    k.run("delete", "ns", ns, "--wait=false")


@pytest.mark.parametrize("version", SOME_VERSIONS)
def test_describe_sections(kubectls, version):
    k = _k(kubectls, version)
    ns = ensure_ns(k, k.ns + "-describe")
    kn = lambda *a, **kw: k.run("-n", ns, *a, **kw)  # noqa: E731
    kn("apply", "-f", os.path.join(MANIFESTS, "testdemo-deploy.yaml"))
    kn("apply", "-f", os.path.join(MANIFESTS, "test-ds.yaml"))
    kn("create", "deployment", "web", "--image=nginx:1.25", "--replicas=2", "--port=80")
    kn("expose", "deployment", "web", "--type=NodePort", "--port=80", "--target-port=80")
    kn("apply", "-f", os.path.join(MANIFESTS, "node-affinity-pod.yaml"))

    def labels(text: str) -> list[str]:
        return [m.group(1) for m in re.finditer(r"^([A-Z][A-Za-z -]*):", text, re.M)]

    deploy = kn("describe", "deploy", "testdemo").stdout
    for line in ("Name:                   testdemo", f"Namespace:              {ns}", "Labels:                 app=testdemo",
                 "Selector:               app=testdemo", "StrategyType:           RollingUpdate",
                 "MinReadySeconds:        0", "RollingUpdateStrategy:  25% max unavailable, 25% max surge",
                 "Pod Template:", "  Labels:  app=testdemo", "    Image:      centos:7", "    Command:",
                 "      sh", "    Args:", "      -c", "      sleep 1000000"):
        assert line in deploy.splitlines(), (line, deploy)
    assert [x for x in labels(deploy) if x in ("Name", "Namespace", "CreationTimestamp", "Labels", "Annotations",
                                               "Selector", "Replicas", "StrategyType", "MinReadySeconds",
                                               "RollingUpdateStrategy", "Pod Template", "Events")] == \
        ["Name", "Namespace", "CreationTimestamp", "Labels", "Annotations", "Selector", "Replicas", "StrategyType",
         "MinReadySeconds", "RollingUpdateStrategy", "Pod Template", "Events"]

    svc = kn("describe", "svc", "web").stdout.splitlines()
    up = _upstream_block("kubectl describe svc web")
    # same labels in the same order (values differ where ips/ports are allocated); kubectl before 1.31 prints
    # fewer of them (no traffic policies), so for those the labels are a subsequence of the 1.32 transcript's
    got_labels, up_labels = [x.split(":")[0] for x in svc], [x.split(":")[0] for x in up]
    if k.minor >= 32:
        assert got_labels == up_labels
    else:
        it = iter(up_labels)
        assert all(x in it for x in got_labels), got_labels
    assert f"Namespace:                {ns}" in svc and "Type:                     NodePort" in svc

    node = k.out("describe", "node", "node2")
    assert labels(node)[:9] == ["Name", "Roles", "Labels", "Annotations", "CreationTimestamp", "Taints",
                                "Unschedulable", "Lease", "Conditions"]
    for section in ("Addresses", "Capacity", "Allocatable", "System Info", "Non-terminated Pods",
                    "Allocated resources", "Events"):
        assert section in labels(node)
    for line in ("  InternalIP:  192.0.2.2", "  Hostname:    node2", "  cpu:     4", "  memory:  16Gi",
                 "  Kernel Version:             6.1.0", "  OS Image:                   Debian GNU/Linux 12",
                 "  Container Runtime Version:  containerd://1.7.0", "  Kubelet Version:            v1.32.0"):
        assert line in node.splitlines(), line
    assert 'Lease:              Failed to get lease: leases.coordination.k8s.io "node2" not found' in node

    assert k.out("describe", "ns", ns).splitlines() == [
        f"Name:         {ns}", f"Labels:       kubernetes.io/metadata.name={ns}", "Annotations:  <none>",
        "Status:       Active", "", "No resource quota.", "", "No LimitRange resource."]

    pod = kn("describe", "pod", "node-affinity-pod").stdout
    assert labels(pod)[:10] == ["Name", "Namespace", "Priority", "Service Account", "Node", "Labels", "Annotations",
                                "Status", "IP", "IPs"]
    for section in ("Containers", "Conditions", "Volumes", "QoS Class", "Node-Selectors", "Tolerations", "Events"):
        assert section in labels(pod)
    assert "Tolerations:                 node.kubernetes.io/not-ready:NoExecute op=Exists for 300s" in pod
    assert "    TokenExpirationSeconds:  3607" in pod

    ds = kn("describe", "ds", "test-ds").stdout
    want = ["Name", "Namespace", "Selector", "Node-Selector", "Labels", "Annotations"]
    if k.minor < 31:  # older kubectl prints no Namespace line for daemon sets
        want.remove("Namespace")
    assert labels(ds)[:len(want)] == want
    if k.minor >= 30:  # older kubectl leaves tolerations out of the pod template
        assert re.search(r"^  Tolerations: +node-role.kubernetes.io/master:NoSchedule$", ds, re.M)
    assert "Annotations:    deprecated.daemonset.template.generation: 1" in ds
    rows = table(kn("get", "events").stdout or "LAST SEEN  TYPE  REASON  OBJECT  MESSAGE")
    assert rows[0] == ["LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    k.run("delete", "ns", ns, "--wait=false")


@pytest.mark.parametrize("version", SOME_VERSIONS)
def test_explain_and_raw(kubectls, version):
    k = _k(kubectls, version)
    got = k.out("explain", "pod.spec.containers.livenessProbe").replace("\t", "    ").split("\n")
    want = _upstream_block("kubectl explain pod.spec.containers.livenessProbe | head -40")
    if k.minor == 27:  # 1.27 renders from /openapi/v2 (protobuf), one blank line less under FIELD
        want = [line for i, line in enumerate(want) if not (i == 4 and line == "")]
    assert got[:len(want)] == want
    rec = k.out("explain", "deployment", "--recursive")
    lines = rec.replace("\t", "    ").splitlines()
    assert lines[:3] == ["GROUP:      apps", "KIND:       Deployment", "VERSION:    v1"]
    assert "    selector    <LabelSelector> -required-" in lines
    assert "        maxSurge    <IntOrString>" in lines
    r = k.run("explain", "pod.spec.nope", check=False)
    assert r.returncode == 1 and 'field "nope" does not exist' in r.stderr
    # raw
    assert k.out("get", "--raw", "/healthz") == "ok"
    v = json.loads(k.out("get", "--raw", "/version"))
    assert (v["major"], v["minor"]) == ("1", "33")
    lst = json.loads(k.out("get", "--raw", "/api/v1/namespaces/default/configmaps?limit=1"))
    assert lst["kind"] == "ConfigMapList" and lst["apiVersion"] == "v1"
    r = k.run("get", "--raw", "/api/v1/namespaces/default/pods/nope", check=False)
    assert r.stderr.strip() == 'Error from server (NotFound): pods "nope" not found'

"""PodSecurity admission on a real server, through the real kubectl and the official client: each
baseline and restricted check with upstream's message (k8s.io/pod-security-admission/policy),
enforce/warn/audit, version pins, workload warnings, namespace relabel warnings, label validation,
exemptions and defaults from --admission-control-config-file, and the ways round it an attacker
tries (init and ephemeral containers, smuggled volume sources, updates, label casing)."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cluster import REPO, Cluster

pytestmark = pytest.mark.xdist_group("podsecurity")

CONFIG = """\
apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: PodSecurity
  path: podsecurity.yaml
"""
PS_CONFIG = """\
apiVersion: pod-security.admission.config.k8s.io/v1
kind: PodSecurityConfiguration
defaults:
  warn: baseline
  warn-version: latest
exemptions:
  usernames: [exempt-user]
  runtimeClasses: [exempt-rc]
  namespaces: [exempt-ns]
"""
AUDIT_POLICY = """\
apiVersion: audit.k8s.io/v1
kind: Policy
rules:
- level: Metadata
  resources: [{group: "", resources: ["pods"]}]
- level: None
"""
P = "pod-security.kubernetes.io/"
# a privileged container (validation refuses privileged with allowPrivilegeEscalation=false)
PRIV = {"c": {"securityContext": {"privileged": True, "allowPrivilegeEscalation": None}}}
NAMESPACES = {
    "restricted": {P + "enforce": "restricted"},
    "baseline": {P + "enforce": "baseline"},
    "v122": {P + "enforce": "restricted", P + "enforce-version": "v1.22"},
    "v124": {P + "enforce": "restricted", P + "enforce-version": "v1.24"},
    "warnonly": {P + "warn": "restricted", P + "audit": "restricted"},
    "exempt-ns": {},
    "plain": {},
    "relabel": {},
}


@pytest.fixture(scope="module")
def c(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    tmp: Path = tmp_path_factory.mktemp("podsecurity")
    (tmp / "admission.yaml").write_text(CONFIG)
    (tmp / "podsecurity.yaml").write_text(PS_CONFIG)
    (tmp / "audit.yaml").write_text(AUDIT_POLICY)
    cl = Cluster(str(tmp / "data"), ["--disable", "controller-manager", "--disable", "scheduler", "--disable", "dns",
                                     "--admission-control-config-file", str(tmp / "admission.yaml"),
                                     "--audit-policy-file", str(tmp / "audit.yaml"),
                                     "--audit-log-path", str(tmp / "audit.log")])
    cl.start()
    cl.audit_log = tmp / "audit.log"  # type: ignore[attr-defined]
    for ns, labels in NAMESPACES.items():
        cl.kubectl("create", "ns", ns)
        cl.kubectl("create", "sa", "default", "-n", ns)  # (no controller-manager makes them)
        if labels:
            cl.kubectl("label", "ns", ns, *[f"{k}={v}" for k, v in labels.items()])
    yield cl
    cl.stop()


RESTRICTED_POD: dict[str, Any] = {
    "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
    "spec": {
        "securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
        "containers": [{"name": "c", "image": "busybox",
                        "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}}],
    },
}


def _with(patch: dict[str, Any], name: str = "p") -> dict[str, Any]:
    """The restricted pod with patch merged into spec (containers[0] under key "c")."""
    pod = copy.deepcopy(RESTRICTED_POD)
    pod["metadata"]["name"] = name
    spec = pod["spec"]
    for k, v in patch.items():
        if k == "c":
            _merge(spec["containers"][0], v)
        elif k == "metadata":
            _merge(pod["metadata"], v)
        elif isinstance(v, dict) and isinstance(spec.get(k), dict):
            _merge(spec[k], v)
        else:
            spec[k] = v
    return pod


def _merge(into: dict[str, Any], more: dict[str, Any]) -> None:
    for k, v in more.items():
        if isinstance(v, dict) and isinstance(into.get(k), dict):
            _merge(into[k], v)
        else:
            into[k] = v


def _create(c: Cluster, ns: str, obj: dict[str, Any], *args: str) -> subprocess.CompletedProcess[str]:
    return c.kubectl("create", "-n", ns, *args, "-f", "-", input=json.dumps(obj), check=False)


def _violation(c: Cluster, ns: str, obj: dict[str, Any]) -> str:
    r = _create(c, ns, obj, "--dry-run=server")
    assert r.returncode == 1, r.stdout + r.stderr
    prefix = 'Error from server (Forbidden): error when creating "STDIN": pods "p" is forbidden: '
    assert r.stderr.startswith(prefix), r.stderr
    return r.stderr.strip()[len(prefix):]


BASELINE_CASES = [
    ({"hostNetwork": True, "hostPID": True, "hostIPC": True},
     "host namespaces (hostNetwork=true, hostPID=true, hostIPC=true)"),
    (PRIV, 'privileged (container "c" must not set securityContext.privileged=true)'),
    ({"c": {"securityContext": {"capabilities": {"add": ["SYS_TIME", "CHOWN", "NET_ADMIN"]}}}},
     'non-default capabilities (container "c" must not include "NET_ADMIN", "SYS_TIME" in '
     "securityContext.capabilities.add)"),
    ({"volumes": [{"name": "h", "hostPath": {"path": "/etc"}}]}, 'hostPath volumes (volume "h")'),
    ({"c": {"ports": [{"containerPort": 80, "hostPort": 8080}, {"containerPort": 81, "hostPort": 80}]}},
     'hostPort (container "c" uses hostPorts 80, 8080)'),
    ({"metadata": {"annotations": {"container.apparmor.security.beta.kubernetes.io/c": "unconfined"}}},
     'forbidden AppArmor profile (annotations must not set AppArmor profile type to '
     '"container.apparmor.security.beta.kubernetes.io/c="unconfined"")'),
    ({"securityContext": {"seLinuxOptions": {"type": "spc_t", "user": "root"}}},
     'seLinuxOptions (pod set forbidden securityContext.seLinuxOptions: type "spc_t"; user may not be set)'),
    ({"securityContext": {"seccompProfile": {"type": "Unconfined"}}},
     'seccompProfile (pod must not set securityContext.seccompProfile.type to "Unconfined")'),
    ({"securityContext": {"sysctls": [{"name": "kernel.msgmax", "value": "1"},
                                      {"name": "net.ipv4.tcp_syncookies", "value": "1"}]}},
     "forbidden sysctls (kernel.msgmax)"),
    ({"hostUsers": False, "c": {"securityContext": {"procMount": "Unmasked"}}},
     'procMount (container "c" must not set securityContext.procMount to "Unmasked")'),
    ({"c": {"securityContext": {"appArmorProfile": {"type": "Unconfined"}}}},
     'forbidden AppArmor profile (container "c" must not set AppArmor profile type to "Unconfined")'),
]


@pytest.mark.parametrize("patch,reason", BASELINE_CASES, ids=lambda v: str(v)[:30])
def test_baseline_checks(c: Cluster, patch: dict[str, Any], reason: str) -> None:
    """Each baseline check alone refuses with its reason and detail; restricted refuses it too."""
    assert _violation(c, "baseline", _with(patch)) == f'violates PodSecurity "baseline:latest": {reason}'
    assert _violation(c, "restricted", _with(patch)).startswith('violates PodSecurity "restricted:latest": ')


RESTRICTED_CASES = [
    ({"volumes": [{"name": "n", "nfs": {"server": "x", "path": "/"}}, {"name": "h", "hostPath": {"path": "/"}},
                  {"name": "ok", "emptyDir": {}}]},
     'restricted volume types (volumes "n", "h" use restricted volume types "hostPath", "nfs")', False),
    ({"c": {"securityContext": {"capabilities": {"add": ["NET_BIND_SERVICE", "SYS_ADMIN"]}}}},
     'unrestricted capabilities (container "c" must not include "SYS_ADMIN" in securityContext.capabilities.add)', False),
    ({"c": {"securityContext": {"capabilities": {"drop": ["NET_RAW"]}}}},
     'unrestricted capabilities (container "c" must set securityContext.capabilities.drop=["ALL"])', True),
    ({"c": {"securityContext": {"allowPrivilegeEscalation": True}}},
     'allowPrivilegeEscalation != false (container "c" must set securityContext.allowPrivilegeEscalation=false)', True),
    ({"securityContext": {"runAsNonRoot": False}},
     "runAsNonRoot != true (pod must not set securityContext.runAsNonRoot=false)", True),
    ({"securityContext": {"runAsNonRoot": None}},
     'runAsNonRoot != true (pod or container "c" must set securityContext.runAsNonRoot=true)', True),
    ({"securityContext": {"runAsUser": 0}, "c": {"securityContext": {"runAsUser": 0}}},
     'runAsUser=0 (pod and container "c" must not set runAsUser=0)', True),
    ({"c": {"securityContext": {"seccompProfile": {"type": "Unconfined"}}}},
     'seccompProfile (container "c" must not set securityContext.seccompProfile.type to "Unconfined")', False),
    ({"securityContext": {"seccompProfile": None}},
     'seccompProfile (pod or container "c" must set securityContext.seccompProfile.type to "RuntimeDefault" or '
     '"Localhost")', True),
]


@pytest.mark.parametrize("patch,reason,baseline_ok", RESTRICTED_CASES, ids=lambda v: str(v)[:30])
def test_restricted_checks(c: Cluster, patch: dict[str, Any], reason: str, baseline_ok: bool) -> None:
    assert _violation(c, "restricted", _with(patch)) == f'violates PodSecurity "restricted:latest": {reason}'
    r = _create(c, "baseline", _with(patch), "--dry-run=server")
    assert (r.returncode == 0) == baseline_ok, r.stderr  # baseline allows what only restricted forbids


def test_host_process(c: Cluster) -> None:
    pod = _with({"os": {"name": "windows"}, "hostNetwork": True, "securityContext": {
        "seccompProfile": None, "windowsOptions": {"hostProcess": True, "runAsUserName": "NT AUTHORITY\\SYSTEM"}},
        "c": {"securityContext": {"allowPrivilegeEscalation": None, "capabilities": None}}})
    assert _violation(c, "baseline", pod) == (
        'violates PodSecurity "baseline:latest": host namespaces (hostNetwork=true), hostProcess (pod must not set '
        "securityContext.windowsOptions.hostProcess=true)")


def test_compliant_pod_passes_and_default_pod_lists_every_reason(c: Cluster) -> None:
    assert _create(c, "restricted", _with({}, "good")).returncode == 0
    r = c.kubectl("run", "p", "-n", "restricted", "--image=busybox", check=False)
    assert r.stderr.strip() == (
        'Error from server (Forbidden): pods "p" is forbidden: violates PodSecurity "restricted:latest": '
        'allowPrivilegeEscalation != false (container "p" must set securityContext.allowPrivilegeEscalation=false), '
        'unrestricted capabilities (container "p" must set securityContext.capabilities.drop=["ALL"]), '
        'runAsNonRoot != true (pod or container "p" must set securityContext.runAsNonRoot=true), '
        'seccompProfile (pod or container "p" must set securityContext.seccompProfile.type to "RuntimeDefault" or '
        '"Localhost")')


def test_init_container_cannot_escape(c: Cluster) -> None:
    pod = _with({"initContainers": [{"name": "init", "image": "busybox", "securityContext": {"privileged": True}}]})
    assert _violation(c, "restricted", pod) == (
        'violates PodSecurity "restricted:latest": privileged (container "init" must not set '
        'securityContext.privileged=true), allowPrivilegeEscalation != false (container "init" must set '
        'securityContext.allowPrivilegeEscalation=false), unrestricted capabilities (container "init" must set '
        'securityContext.capabilities.drop=["ALL"])')


def test_host_path_smuggled_in_other_volume_sources(c: Cluster) -> None:
    """hostPath beside a projected or ephemeral source is refused; inside projected's sources it is no field
    at all: refused strictly, and dropped (never mounted) where the client asks for no field validation."""
    for vol in ({"name": "v", "projected": {"sources": []}, "hostPath": {"path": "/"}},
                {"name": "v", "ephemeral": {"volumeClaimTemplate": {"spec": {
                    "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}},
                 "hostPath": {"path": "/"}}):
        r = _create(c, "restricted", _with({"volumes": [vol]}), "--dry-run=server")
        kind = "projected" if "projected" in vol else "ephemeral"
        assert r.stderr.strip() == f'The Pod "p" is invalid: spec.volumes[0].{kind}: Forbidden: may not specify ' \
                                   "more than 1 volume type"
    inner = _with({"volumes": [{"name": "v", "projected": {"sources": [{"hostPath": {"path": "/"}}]}}]}, "inner")
    r = _create(c, "restricted", inner, "--dry-run=server")
    assert 'unknown field "spec.volumes[0].projected.sources[0].hostPath"' in r.stderr
    r = _create(c, "restricted", inner, "--dry-run=server", "--validate=false", "-o", "json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["spec"]["volumes"][0]["projected"] == {"sources": [{}], "defaultMode": 420}
    # and a hostPath of its own is what restricted refuses
    assert _violation(c, "restricted", _with({"volumes": [{"name": "h", "hostPath": {"path": "/"}}]})) == \
        'violates PodSecurity "restricted:latest": restricted volume types (volume "h" uses restricted volume type ' \
        '"hostPath")'


def test_version_pins(c: Cluster) -> None:
    """restricted:v1.22 has no runAsUser check (v1.23); restricted:v1.24 still judges windows pods."""
    root = _with({"securityContext": {"runAsUser": 0}}, "root")
    assert _create(c, "v122", root, "--dry-run=server").returncode == 0
    assert _violation(c, "restricted", _with({"securityContext": {"runAsUser": 0}})) == \
        'violates PodSecurity "restricted:latest": runAsUser=0 (pod must not set runAsUser=0)'
    win = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
           "spec": {"os": {"name": "windows"}, "securityContext": {"runAsNonRoot": True},
                    "containers": [{"name": "c", "image": "busybox"}]}}
    assert _create(c, "restricted", win, "--dry-run=server").returncode == 0
    assert _violation(c, "v124", win) == (
        'violates PodSecurity "restricted:v1.24": allowPrivilegeEscalation != false (container "c" must set '
        'securityContext.allowPrivilegeEscalation=false), unrestricted capabilities (container "c" must set '
        'securityContext.capabilities.drop=["ALL"]), seccompProfile (pod or container "c" must set '
        'securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")')


def _audit_events(c: Cluster, name: str) -> list[dict[str, Any]]:
    out = []
    path: Path = c.audit_log  # type: ignore[attr-defined]
    for line in path.read_text().splitlines():
        ev = json.loads(line)
        if (ev.get("objectRef") or {}).get("name") == name and ev.get("stage") == "ResponseComplete":
            out.append(ev)
    return out


def _wait_audit(c: Cluster, name: str) -> dict[str, Any]:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        evs = _audit_events(c, name)
        if evs:
            return evs[-1]
        time.sleep(0.05)
    raise AssertionError(f"no audit event for {name}")


def test_warn_and_audit_modes(c: Cluster) -> None:
    r = _create(c, "warnonly", _with({"hostNetwork": True}, "loud"))
    assert r.returncode == 0, r.stderr
    want = 'would violate PodSecurity "restricted:latest": host namespaces (hostNetwork=true)'
    assert r.stderr.strip() == f"Warning: {want}"
    ann = _wait_audit(c, "loud")["annotations"]
    assert ann[P + "audit-violations"] == want
    assert ann[P + "enforce-policy"] == "privileged:latest"
    # refused by enforce: the annotation names the policy
    _create(c, "restricted", _with({"hostNetwork": True}, "refused"))
    ev = _wait_audit(c, "refused")
    assert ev["responseStatus"]["code"] == 403
    assert ev["annotations"][P + "enforce-policy"] == "restricted:latest"


def test_default_from_configuration_file(c: Cluster) -> None:
    """The config's defaults: unlabelled namespaces warn at baseline."""
    r = _create(c, "plain", _with(PRIV, "priv"))
    assert r.returncode == 0
    assert r.stderr.strip() == ('Warning: would violate PodSecurity "baseline:latest": privileged (container "c" must '
                                'not set securityContext.privileged=true)')


def test_workload_resources_warn_but_are_not_refused(c: Cluster) -> None:
    r = c.kubectl("create", "deployment", "web", "-n", "restricted", "--image=busybox", check=False)
    assert r.returncode == 0, r.stderr
    assert r.stderr.strip().startswith('Warning: would violate PodSecurity "restricted:latest": '
                                       'allowPrivilegeEscalation != false (container "busybox" must set')
    job = {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "cj"},
           "spec": {"schedule": "* * * * *", "jobTemplate": {"spec": {"template": {"spec": {
               "restartPolicy": "Never", "hostPID": True, "containers": [{"name": "c", "image": "busybox"}]}}}}}}
    r = c.kubectl("create", "-n", "baseline", "-f", "-", input=json.dumps(job), check=False)
    assert r.returncode == 0
    assert r.stderr.strip() == 'Warning: would violate PodSecurity "baseline:latest": host namespaces (hostPID=true)'
    # every update of a workload is judged again, as upstream's ValidatePodController
    r = c.kubectl("label", "cronjob", "cj", "-n", "baseline", "x=y")
    assert r.stderr.strip() == 'Warning: would violate PodSecurity "baseline:latest": host namespaces (hostPID=true)'
    # warn, unset, follows a stricter enforce: its level and its version
    r = c.kubectl("create", "-n", "v122", "-f", "-", input=json.dumps(job), check=False)
    assert r.returncode == 0
    assert r.stderr.startswith('Warning: would violate PodSecurity "restricted:v1.22": host namespaces (hostPID=true), '
                               'allowPrivilegeEscalation != false (container "c" must set')


def test_namespace_labels_are_validated(c: Cluster) -> None:
    """Casing and version tricks are refused as upstream's PolicyToEvaluate does."""
    r = c.kubectl("label", "--overwrite", "ns", "plain", P + "enforce=Restricted", check=False)
    assert r.stderr.strip() == (
        f'The Namespace "plain" is invalid: metadata.labels[{P}enforce]: Invalid value: "Restricted": must be one '
        "of privileged, baseline, restricted")
    r = c.kubectl("label", "--overwrite", "ns", "plain", P + "warn-version=V1.22", P + "audit-version=v1.022",
                  check=False)
    assert r.returncode == 1
    assert f'metadata.labels[{P}audit-version]: Invalid value: "v1.022": must be "latest" or "v1.x"' in r.stderr
    assert f'metadata.labels[{P}warn-version]: Invalid value: "V1.22": must be "latest" or "v1.x"' in r.stderr
    r = c.kubectl("create", "-f", "-", check=False, input=json.dumps({
        "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "bad-new", "labels": {P + "warn": "Baseline"}}}))
    assert r.returncode == 1 and "must be one of privileged, baseline, restricted" in r.stderr


def test_relabel_warns_about_existing_pods(c: Cluster) -> None:
    for name in ("b-priv", "a-priv"):
        assert _create(c, "relabel", _with(PRIV, name)).returncode == 0
    _create(c, "relabel", _with({"hostIPC": True}, "ipc"))
    _create(c, "relabel", _with({}, "fine"))
    r = c.kubectl("label", "--dry-run=server", "--overwrite", "ns", "relabel", P + "enforce=baseline")
    assert r.stderr.strip().splitlines() == [
        'Warning: existing pods in namespace "relabel" violate the new PodSecurity enforce level "baseline:latest"',
        "Warning: a-priv (and 1 other pod): privileged",
        "Warning: ipc: host namespaces",
    ]
    ns = json.loads(c.kubectl("get", "ns", "relabel", "-o", "json").stdout)
    assert P + "enforce" not in ns["metadata"]["labels"]  # (a dry run)
    # for real: the running pods stay, metadata-only updates pass, a significant update is refused
    c.kubectl("label", "--overwrite", "ns", "relabel", P + "enforce=baseline")
    c.kubectl("label", "pod", "a-priv", "-n", "relabel", "touched=yes")
    r = c.kubectl("set", "image", "pod/a-priv", "-n", "relabel", "c=busybox:2", check=False)
    assert r.returncode == 1
    assert 'pods "a-priv" is forbidden: violates PodSecurity "baseline:latest": privileged' in r.stderr
    # the owner may take the label off (RBAC decides who may label namespaces, as upstream)
    r = c.kubectl("label", "ns", "relabel", P + "enforce-")
    assert "Warning" not in r.stderr
    assert _create(c, "relabel", _with({"hostPID": True}, "after")).returncode == 0


def test_ephemeral_container_is_judged(c: Cluster) -> None:
    """kubectl debug adds an ephemeral container through pods/ephemeralcontainers: judged as any container."""
    assert _create(c, "restricted", _with({}, "target")).returncode == 0
    r = c.kubectl("debug", "target", "-n", "restricted", "--image=busybox", "--container=dbg", "--profile=legacy",
                  check=False)
    assert r.returncode == 1, r.stdout
    assert 'pods "target" is forbidden: violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false ' \
           '(container "dbg" must set securityContext.allowPrivilegeEscalation=false), unrestricted capabilities ' \
           '(container "dbg" must set securityContext.capabilities.drop=["ALL"])' in r.stderr
    r = c.kubectl("debug", "target", "-n", "restricted", "--image=busybox", "--container=dbg2",
                  "--profile=restricted", check=False)
    assert r.returncode == 0, r.stderr


def test_exemptions(c: Cluster) -> None:
    priv = _with(PRIV, "ex")
    # an exempt namespace: labelling it says so; its pods pass
    r = c.kubectl("label", "--overwrite", "ns", "exempt-ns", P + "enforce=baseline", P + "audit=restricted")
    assert r.stderr.strip() == ('Warning: namespace "exempt-ns" is exempt from Pod Security, and the policy '
                                "(enforce=baseline:latest, audit=restricted:latest) will be ignored")
    assert _create(c, "exempt-ns", priv).returncode == 0
    assert _wait_audit(c, "ex")["annotations"][P + "exempt"] == "namespace"
    # an exempt user
    r = _create(c, "restricted", _with({"hostNetwork": True}, "by-exempt-user"), "--as=exempt-user",
                "--as-group=system:masters")
    assert r.returncode == 0, r.stderr
    r = _create(c, "restricted", _with({"hostNetwork": True}, "by-other-user"), "--as=other-user",
                "--as-group=system:masters")
    assert r.returncode == 1
    # an exempt runtime class (and only that one)
    for rc in ("exempt-rc", "plain-rc"):
        c.kubectl("create", "-f", "-", input=json.dumps({"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass",
                                                          "metadata": {"name": rc}, "handler": "runc"}))
    assert _create(c, "restricted", _with({"hostNetwork": True, "runtimeClassName": "exempt-rc"}, "rc1")).returncode == 0
    assert _create(c, "restricted", _with({"hostNetwork": True, "runtimeClassName": "plain-rc"}, "rc2")).returncode == 1


def test_official_client_gets_403_status(c: Cluster) -> None:
    from kubernetes import client
    from kubernetes.client.rest import ApiException

    api = client.CoreV1Api(c.api_client())
    with pytest.raises(ApiException) as e:
        api.create_namespaced_pod("baseline", _with({"hostPID": True}, "viaclient"))
    st = json.loads(e.value.body)
    assert (e.value.status, st["reason"]) == (403, "Forbidden")
    assert st["message"] == 'pods "viaclient" is forbidden: violates PodSecurity "baseline:latest": host namespaces ' \
                            "(hostPID=true)"
    assert st["details"] == {"name": "viaclient", "kind": "pods"}


def test_bad_configuration_refused_at_start(tmp_path: Path) -> None:
    (tmp_path / "admission.yaml").write_text(CONFIG)
    (tmp_path / "podsecurity.yaml").write_text(PS_CONFIG.replace("warn: baseline", "warn: Baseline"))
    r = subprocess.run([sys.executable, "-m", "pyk8s.cli", "server", "--data-dir", str(tmp_path / "d"),
                        "--admission-control-config-file", str(tmp_path / "admission.yaml")],
                       capture_output=True, text=True, timeout=60, cwd=str(REPO))
    assert r.returncode == 1
    assert "defaults.warn: Invalid value: 'Baseline': must be one of privileged, baseline, restricted" in r.stderr


def test_plugins_can_be_disabled(tmp_path: Path) -> None:
    """`--disable-admission-plugins=PodSecurity,LimitRanger`: labels and LimitRanges then do nothing."""
    cl = Cluster(str(tmp_path / "d"), ["--disable", "controller-manager", "--disable", "scheduler", "--disable", "dns",
                                       "--disable-admission-plugins=PodSecurity,LimitRanger"]).start()
    try:
        cl.kubectl("create", "ns", "off")
        cl.kubectl("create", "sa", "default", "-n", "off")
        cl.kubectl("label", "ns", "off", P + "enforce=restricted")
        cl.kubectl("create", "-n", "off", "-f", "-", input=json.dumps({
            "apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "l"},
            "spec": {"limits": [{"type": "Container", "max": {"cpu": "100m"}}]}}))
        r = _create(cl, "off", _with({**PRIV, "hostPID": True}, "free"), "-o", "json")
        assert r.returncode == 0, r.stderr
        assert "Warning" not in r.stderr
        assert json.loads(r.stdout)["spec"]["containers"][0].get("resources") in (None, {})
    finally:
        cl.stop()


def test_api_workers_get_the_configuration(tmp_path: Path) -> None:
    """`--api-workers 2`: each worker process admits with the same configuration file (defaults here)."""
    (tmp_path / "admission.yaml").write_text(CONFIG)
    (tmp_path / "podsecurity.yaml").write_text(PS_CONFIG.replace("warn: baseline", "enforce: baseline"))
    cl = Cluster(str(tmp_path / "d"), ["--disable", "controller-manager", "--disable", "scheduler", "--disable", "dns",
                                       "--admission-control-config-file", str(tmp_path / "admission.yaml")],
                 datastore="sqlite-workers").start()
    try:
        cl.kubectl("create", "sa", "default", "-n", "default")
        # each kubectl is a new connection: the kernel spreads them over the processes
        for i in range(6):
            r = _create(cl, "default", _with(PRIV, f"w{i}"))
            assert r.returncode == 1, r.stdout
            assert 'violates PodSecurity "baseline:latest": privileged' in r.stderr
    finally:
        cl.stop()


@pytest.mark.parametrize("version", ["1.27", "1.30"])
def test_older_kubectl_shows_the_same(c: Cluster, version: str) -> None:
    r = c.kubectl("create", "-n", "warnonly", "--dry-run=server", "-f", "-", version=version, check=False,
                  input=json.dumps(_with({"hostPID": True}, f"old-{version.replace('.', '-')}")))
    assert r.returncode == 0
    assert r.stderr.strip() == 'Warning: would violate PodSecurity "restricted:latest": host namespaces (hostPID=true)'
    r = c.kubectl("run", "p", "-n", "baseline", "--image=busybox", "--privileged", version=version, check=False)
    assert r.stderr.strip() == ('Error from server (Forbidden): pods "p" is forbidden: violates PodSecurity '
                                '"baseline:latest": privileged (container "p" must not set securityContext.privileged=true)')

"""PodSecurity's pure logic: which checks a level and version run, the checks' own defences, the
namespace labels' parsing, and which pod updates are judged (k8s.io/pod-security-admission)."""

from __future__ import annotations

from typing import Any

from pyk8s.apiserver.podsecurity.admission import significant_pod_update
from pyk8s.apiserver.podsecurity.checks import checks_for, evaluate
from pyk8s.apiserver.podsecurity.policy import LevelVersion, Policy, policy_from_labels

P = "pod-security.kubernetes.io/"


def _ids(level: str, minor: int) -> list[str]:
    return [c.id for c in checks_for(level, minor)]


def test_checks_by_level_and_version() -> None:
    assert _ids("privileged", 33) == []
    assert "runAsUser" not in _ids("restricted", 22) and "runAsUser" in _ids("restricted", 23)
    # restricted's capabilities (v1.22) replace baseline's; before v1.22 baseline's stay
    assert "capabilities_baseline" in _ids("restricted", 21) and "capabilities_restricted" not in _ids("restricted", 21)
    assert "capabilities_baseline" not in _ids("restricted", 22)
    assert "hostPathVolumes" not in _ids("restricted", 0) and "restrictedVolumes" in _ids("restricted", 0)
    assert "seccompProfile_restricted" not in _ids("restricted", 18)
    assert _ids("baseline", 33)[:3] == ["appArmorProfile", "capabilities_baseline", "hostNamespaces"]


def test_a_second_volume_source_is_no_cover() -> None:
    """Judged on every source a volume names, not the first allowed one (validation refuses it too)."""
    spec: dict[str, Any] = {"volumes": [{"name": "v", "secret": {"secretName": "s"}, "hostPath": {"path": "/"}}],
                            "containers": []}
    assert ("restricted volume types", 'volume "v" uses restricted volume type "hostPath"') in \
        evaluate("restricted", 33, {}, spec)
    assert evaluate("baseline", 33, {}, spec) == [("hostPath volumes", 'volume "v"')]


def test_windows_pods_and_sysctls_by_version() -> None:
    spec = {"os": {"name": "windows"}, "securityContext": {"runAsNonRoot": True}, "containers": [{"name": "c"}]}
    assert evaluate("restricted", 25, {}, spec) == []
    assert [r for r, _ in evaluate("restricted", 24, {}, spec)] == [
        "allowPrivilegeEscalation != false", "unrestricted capabilities", "seccompProfile"]
    sysctl = {"securityContext": {"sysctls": [{"name": "net.ipv4.tcp_keepalive_time"}]}, "containers": []}
    assert evaluate("baseline", 29, {}, sysctl) == []
    assert evaluate("baseline", 28, {}, sysctl) == [("forbidden sysctls", "net.ipv4.tcp_keepalive_time")]


def test_plurals_and_ephemeral_containers() -> None:
    spec = {"containers": [{"name": "a", "securityContext": {"privileged": True}}],
            "ephemeralContainers": [{"name": "dbg", "securityContext": {"privileged": True}}]}
    assert evaluate("baseline", 33, {}, spec) == [
        ("privileged", 'containers "a", "dbg" must not set securityContext.privileged=true')]
    assert evaluate("baseline", 33, {}, {"containers": [{"name": "a", "ports": [{"hostPort": 9000}]}]}) == [
        ("hostPort", 'container "a" uses hostPort 9000')]


def test_labels_parse_strictly_and_fail_closed() -> None:
    p, errs = policy_from_labels({P + "enforce": "RESTRICTED", P + "enforce-version": "v1.22"}, Policy())
    assert [(e.path, e.value, e.detail) for e in errs] == [
        (f"metadata.labels[{P}enforce]", "RESTRICTED", "must be one of privileged, baseline, restricted")]
    assert p.enforce == LevelVersion("restricted", 22)  # an unreadable enforce level evaluates as restricted
    assert p.warn == LevelVersion()  # (and sets no warn level)
    p, errs = policy_from_labels({P + "audit": "Restricted", P + "warn": "x", P + "warn-version": "v1.01"}, Policy())
    assert [e.path for e in errs] == [f"metadata.labels[{P}audit]", f"metadata.labels[{P}warn]",
                                      f"metadata.labels[{P}warn-version]"]
    assert p == Policy()  # unreadable audit and warn levels are privileged, an unreadable version latest
    p, errs = policy_from_labels({P + "enforce": "baseline", P + "enforce-version": "v1.25"}, Policy())
    assert not errs and str(p.enforce) == "baseline:v1.25" and str(p.warn) == "baseline:v1.25"
    p, _ = policy_from_labels({P + "enforce": "baseline", P + "warn": "privileged"}, Policy())
    assert str(p.warn) == "privileged:latest"
    p, _ = policy_from_labels({P + "enforce": "baseline", P + "enforce-version": "v1.22", P + "warn-version": "latest"},
                              Policy())
    assert str(p.warn) == "baseline:latest"


def test_metadata_only_updates_are_not_judged() -> None:
    old = {"metadata": {"labels": {}}, "spec": {"containers": [{"name": "c", "image": "a"}]}}
    relabelled = {"metadata": {"labels": {"x": "y"}}, "spec": {"containers": [{"name": "c", "image": "a"}]}}
    assert not significant_pod_update(relabelled, old)
    assert significant_pod_update({"metadata": {}, "spec": {"containers": [{"name": "c", "image": "b"}]}}, old)
    debug = {"metadata": {}, "spec": {"containers": [{"name": "c", "image": "a"}],
                                      "ephemeralContainers": [{"name": "d", "image": "x"}]}}
    assert significant_pod_update(debug, old)


def test_apparmor_annotations_and_fields() -> None:
    """upstream's TestAppArmorProfile: empty, runtime/default and localhost/ values pass; the rest are listed."""
    ann = {"container.apparmor.security.beta.kubernetes.io/" + k: v
           for k, v in (("", "bogus"), ("a", ""), ("b", "runtime/default"), ("c", "localhost/"), ("e", "unconfined"))}
    spec = {"securityContext": {"appArmorProfile": {"type": "Unconfined"}}, "containers": []}
    assert evaluate("baseline", 33, {"annotations": ann}, spec) == [(
        "forbidden AppArmor profiles",
        'pod and annotations must not set AppArmor profile type to "Unconfined", '
        '"container.apparmor.security.beta.kubernetes.io/="bogus"", '
        '"container.apparmor.security.beta.kubernetes.io/e="unconfined""')]


def test_seccomp_restricted_reports_what_is_set_wrong_first() -> None:
    spec = {"securityContext": {"seccompProfile": {"type": "Unconfined"}},
            "containers": [{"name": "a"}, {"name": "b", "securityContext": {"seccompProfile": {"type": "Unconfined"}}}]}
    assert evaluate("restricted", 33, {}, spec)[-1] == (
        "seccompProfile", 'pod and container "b" must not set securityContext.seccompProfile.type to "Unconfined"')

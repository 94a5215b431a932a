"""Admission webhook rule matching (upstream's rules.Matcher) and the plug-ins' names."""

from __future__ import annotations

import pytest

from pyk8s.apiserver.admission_plugins import resolve
from pyk8s.apiserver.webhooks.matching import rule_matches


def _rule(resources: list[str], scope: str | None = None, ops: list[str] | None = None) -> dict[str, object]:
    r: dict[str, object] = {"operations": ops or ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
                            "resources": resources}
    if scope:
        r["scope"] = scope
    return r


@pytest.mark.parametrize(("resources", "resource", "sub", "want"), [
    (["pods"], "pods", "", True),
    (["pods"], "pods", "status", False),  # a subresource is only matched when named
    (["pods/status"], "pods", "status", True),
    (["pods/status"], "pods", "", False),
    (["pods/*"], "pods", "exec", True),
    (["pods/*"], "pods", "", False),
    (["*/status"], "deployments", "status", True),
    (["*/status"], "pods", "log", False),
    (["*"], "secrets", "", True),
    (["*"], "pods", "status", False),
    (["*/*"], "pods", "status", True),
    (["*/*"], "pods", "", True),
    (["configmaps"], "secrets", "", False),
])
def test_resources_and_subresources(resources: list[str], resource: str, sub: str, want: bool) -> None:
    assert rule_matches(_rule(resources), "CREATE", "", "v1", resource, sub, True) is want


def test_operations_groups_versions_scope() -> None:
    r = _rule(["pods"], ops=["UPDATE", "DELETE"])
    assert not rule_matches(r, "CREATE", "", "v1", "pods", "", True)
    assert rule_matches(r, "DELETE", "", "v1", "pods", "", True)
    assert rule_matches(_rule(["pods"], ops=["*"]), "CONNECT", "", "v1", "pods", "", True)
    assert not rule_matches(_rule(["pods"]), "CREATE", "apps", "v1", "pods", "", True)
    assert not rule_matches(_rule(["pods"]), "CREATE", "", "v2", "pods", "", True)
    assert not rule_matches(_rule(["nodes"], scope="Namespaced"), "CREATE", "", "v1", "nodes", "", False)
    assert rule_matches(_rule(["nodes"], scope="Cluster"), "CREATE", "", "v1", "nodes", "", False)
    assert not rule_matches(_rule(["pods"], scope="Cluster"), "CREATE", "", "v1", "pods", "", True)
    assert rule_matches(_rule(["pods"], scope="*"), "CREATE", "", "v1", "pods", "", True)


def test_webhook_plugins_can_be_disabled_by_upstream_names() -> None:
    on, off = resolve([], ["MutatingAdmissionWebhook,ValidatingAdmissionWebhook"])
    assert off == {"MutatingAdmissionWebhook", "ValidatingAdmissionWebhook"} and not on


def test_credentials_lookup_order() -> None:
    from pyk8s.apiserver.webhooks.credentials import Credentials, resolve

    def c(n: str) -> Credentials:
        return Credentials(None, n)

    creds = {"a.b.svc:8443": c("exact"), "*.b.svc:8443": c("wild-port"), "a.b.svc": c("host"),
             "*.svc": c("wild"), "*": c("any")}
    assert resolve(creds, "a.b.svc", 8443) == c("exact")
    assert resolve(creds, "x.b.svc", 8443) == c("wild-port")
    assert resolve(creds, "a.b.svc", 443) == c("host")  # the host alone only stands for port 443
    assert resolve(creds, "z.y.svc", 443) == c("wild")
    assert resolve(creds, "z.y.svc", 9443) == c("any")
    assert resolve({}, "a.b.svc", 443) is None

"""ValidatingAdmissionPolicy on a real server through the real kubectl and the official client:
upstream's documentation examples (replicas limit for a labelled namespace, params from a
ConfigMap and from a custom resource, Warn and Audit actions, messageExpression, variables,
auditAnnotations in the audit log), failurePolicy Fail/Ignore for missing params, server
dry-run, and what an attacker tries (a binding without a policy, a policy over the policies,
a costly expression, a user without RBAC, deleting a protected object)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cluster import Cluster, client_kubeconfig

pytestmark = pytest.mark.xdist_group("vap")

AUDIT_POLICY = """\
apiVersion: audit.k8s.io/v1
kind: Policy
rules:
- level: Metadata
  resources: [{group: "apps", resources: ["deployments"]}, {group: "", resources: ["configmaps"]}]
- level: None
"""


@pytest.fixture(scope="module")
def c(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    tmp: Path = tmp_path_factory.mktemp("vap")
    (tmp / "audit.yaml").write_text(AUDIT_POLICY)
    cl = Cluster(str(tmp / "data"), ["--disable", "controller-manager", "--disable", "scheduler", "--disable", "dns",
                                     "--audit-policy-file", str(tmp / "audit.yaml"),
                                     "--audit-log-path", str(tmp / "audit.log")])
    cl.start()
    cl.audit_log = tmp / "audit.log"  # type: ignore[attr-defined]
    for ns, label in (("test", "environment=test"), ("prod", "environment=prod"), ("plain", ""),
                      ("params", "vap=params"), ("crdparams", "vap=crd"), ("warned", "vap=warn"),
                      ("costly", "vap=cost"), ("authz", "vap=authz"), ("guarded", "vap=guarded"),
                      ("badkind", "vap=badkind"), ("leak", "vap=leak")):
        cl.kubectl("create", "ns", ns)
        if label:
            cl.kubectl("label", "ns", ns, label)
    yield cl
    cl.stop()


def apply(c: Cluster, doc: str) -> None:
    c.kubectl("apply", "-f", "-", input=doc)


def audit_events(c: Cluster) -> list[dict[str, Any]]:
    path: Path = c.audit_log  # type: ignore[attr-defined]
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


REPLICAS = """\
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: demo-policy.example.com}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - apiGroups: [apps]
      apiVersions: [v1]
      operations: [CREATE, UPDATE]
      resources: [deployments]
  validations:
  - expression: object.spec.replicas <= 5
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: demo-binding-test.example.com}
spec:
  policyName: demo-policy.example.com
  validationActions: [Deny]
  matchResources:
    namespaceSelector:
      matchLabels: {environment: test}
"""
DENIED = ("deployments.apps \"nginx\" is forbidden: ValidatingAdmissionPolicy 'demo-policy.example.com' with binding "
          "'demo-binding-test.example.com' denied request: failed expression: object.spec.replicas <= 5")


def test_replicas_limit_in_labelled_namespace(c: Cluster) -> None:
    apply(c, REPLICAS)
    r = c.kubectl("create", "deployment", "nginx", "--image=nginx", "--replicas=6", "-n", "test", check=False)
    assert r.returncode != 0
    assert r.stderr.strip() == f"error: failed to create deployment: {DENIED}", r.stderr
    # server-side dry run is judged as well
    r = c.kubectl("create", "deployment", "nginx", "--image=nginx", "--replicas=6", "-n", "test",
                  "--dry-run=server", check=False)
    assert r.returncode != 0 and DENIED in r.stderr, r.stderr
    # other namespaces are not bound; within the limit passes
    c.kubectl("create", "deployment", "nginx", "--image=nginx", "--replicas=6", "-n", "prod")
    c.kubectl("create", "deployment", "nginx", "--image=nginx", "--replicas=5", "-n", "test")
    # an update past the limit is refused too (422 Invalid, the message as a cause)
    from kubernetes import client
    from kubernetes.client.rest import ApiException

    apps = client.AppsV1Api(c.api_client())
    with pytest.raises(ApiException) as ei:
        apps.patch_namespaced_deployment("nginx", "test", {"spec": {"replicas": 7}})
    assert ei.value.status == 422
    body = json.loads(ei.value.body)
    assert body["reason"] == "Invalid"
    assert body["details"]["causes"][0]["message"].startswith("ValidatingAdmissionPolicy 'demo-policy.example.com'")


PARAMS = """\
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: replica-limit-%(n)s}
spec:
  failurePolicy: %(fp)s
  paramKind: {apiVersion: v1, kind: ConfigMap}
  matchConstraints:
    resourceRules:
    - {apiGroups: [apps], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [deployments]}
  validations:
  - expression: object.spec.replicas <= int(params.data.maxReplicas)
    messageExpression: "'object.spec.replicas must be no greater than ' + params.data.maxReplicas"
    reason: Forbidden
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: replica-limit-%(n)s}
spec:
  policyName: replica-limit-%(n)s
  validationActions: [Deny]
  paramRef: {name: %(param)s, namespace: default, parameterNotFoundAction: Deny}
  matchResources:
    objectSelector: {matchLabels: {limit: "%(fp)s"}}
    namespaceSelector: {matchLabels: {vap: params}}
"""


def _deployment(name: str, ns: str, replicas: int, labels: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": ns,
                                                                       "labels": labels},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}


def test_params_from_configmap_and_failure_policy(c: Cluster) -> None:
    from kubernetes import client
    from kubernetes.client.rest import ApiException

    apps = client.AppsV1Api(c.api_client())
    apply(c, PARAMS % {"fp": "Fail", "n": "fail", "param": "limits"})
    apply(c, PARAMS % {"fp": "Ignore", "n": "ignore", "param": "absent"})
    # the param is missing: Fail refuses with upstream's message, Ignore lets it pass
    with pytest.raises(ApiException) as ei:
        apps.create_namespaced_deployment("params", _deployment("a", "params", 3, {"limit": "Fail"}))
    assert ei.value.status == 422
    assert json.loads(ei.value.body)["message"] == (
        "deployments.apps \"a\" is forbidden: ValidatingAdmissionPolicy 'replica-limit-fail' with binding "
        "'replica-limit-fail' denied request: failed to configure binding: no params found for policy binding "
        "with `Deny` parameterNotFoundAction")
    apps.create_namespaced_deployment("params", _deployment("b", "params", 30, {"limit": "Ignore"}))
    # with the param the policy judges by it, refusing with the reason it names (Forbidden: 403)
    c.kubectl("create", "configmap", "limits", "-n", "default", "--from-literal=maxReplicas=3")
    apps.create_namespaced_deployment("params", _deployment("a", "params", 3, {"limit": "Fail"}))
    with pytest.raises(ApiException) as ei:
        apps.create_namespaced_deployment("params", _deployment("c", "params", 4, {"limit": "Fail"}))
    assert ei.value.status == 403
    body = json.loads(ei.value.body)
    assert body["reason"] == "Forbidden"
    assert body["message"].endswith("denied request: object.spec.replicas must be no greater than 3")
    # the param's new value counts at once
    c.kubectl("patch", "configmap", "limits", "-n", "default", "-p", '{"data":{"maxReplicas":"10"}}')
    apps.create_namespaced_deployment("params", _deployment("c", "params", 4, {"limit": "Fail"}))


CRD = """\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: replicalimits.rules.example.com}
spec:
  group: rules.example.com
  scope: Namespaced
  names: {plural: replicalimits, singular: replicalimit, kind: ReplicaLimit}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          maxReplicas: {type: integer}
"""
CRD_POLICY = """\
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: crd-limit}
spec:
  paramKind: {apiVersion: rules.example.com/v1, kind: ReplicaLimit}
  matchConstraints:
    resourceRules:
    - {apiGroups: [apps], apiVersions: [v1], operations: [CREATE], resources: [deployments]}
    namespaceSelector: {matchLabels: {vap: crd}}
  variables:
  - {name: replicas, expression: object.spec.replicas}
  validations:
  - expression: variables.replicas <= params.maxReplicas
    messageExpression: "'at most ' + string(params.maxReplicas) + ' replicas, by ' + params.metadata.name"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: crd-limit}
spec:
  policyName: crd-limit
  validationActions: [Deny]
  paramRef:
    selector: {matchLabels: {tier: gold}}
    parameterNotFoundAction: Allow
"""


def test_params_from_custom_resources_by_selector(c: Cluster) -> None:
    apply(c, CRD)
    c.kubectl("wait", "--for=condition=Established", "crd/replicalimits.rules.example.com")
    apply(c, CRD_POLICY)
    # no param selected: Allow
    c.kubectl("create", "deployment", "x", "--image=nginx", "--replicas=9", "-n", "crdparams")
    for name, n in (("small", 2), ("large", 8)):
        apply(c, f"apiVersion: rules.example.com/v1\nkind: ReplicaLimit\nmetadata: {{name: {name}, "
                 f"namespace: crdparams, labels: {{tier: gold}}}}\nmaxReplicas: {n}\n")
    # one evaluation per param: the stricter one refuses
    r = c.kubectl("create", "deployment", "y", "--image=nginx", "--replicas=5", "-n", "crdparams", check=False)
    assert r.returncode != 0
    assert ("ValidatingAdmissionPolicy 'crd-limit' with binding 'crd-limit' denied request: at most 2 replicas, "
            "by small") in r.stderr, r.stderr
    c.kubectl("create", "deployment", "y", "--image=nginx", "--replicas=2", "-n", "crdparams")


WARN_AUDIT = """\
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: labels-wanted}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [configmaps]}
    namespaceSelector: {matchLabels: {vap: warn}}
  variables:
  - {name: team, expression: "has(object.metadata.labels) && 'team' in object.metadata.labels ? object.metadata.labels.team : ''"}
  validations:
  - expression: variables.team != ''
    message: every configmap needs a team label
  auditAnnotations:
  - {key: team, valueExpression: "variables.team == '' ? null : 'owned by ' + variables.team"}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: labels-wanted}
spec:
  policyName: labels-wanted
  validationActions: [Warn, Audit]
"""


def test_warn_and_audit_actions_and_audit_annotations(c: Cluster) -> None:
    apply(c, WARN_AUDIT)
    r = c.kubectl("create", "configmap", "unowned", "-n", "warned")
    assert ("Warning: Validation failed for ValidatingAdmissionPolicy 'labels-wanted' with binding "
            "'labels-wanted': every configmap needs a team label") in r.stderr, r.stderr
    r = c.kubectl("apply", "-f", "-", input="apiVersion: v1\nkind: ConfigMap\nmetadata: {name: owned, namespace: "
                                            "warned, labels: {team: blue}}\n")
    assert "Warning" not in r.stderr, r.stderr
    deadline = time.monotonic() + 10
    while True:  # (the audit backend writes after the response)
        events = [e for e in audit_events(c) if e.get("objectRef", {}).get("namespace") == "warned"
                  and e.get("verb") == "create" and e.get("stage") == "ResponseComplete"]
        if {e["objectRef"].get("name") for e in events} >= {"unowned", "owned"} or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    unowned = next(e for e in events if e["objectRef"].get("name") == "unowned")
    failure = json.loads(unowned["annotations"]["validation.policy.admission.k8s.io/validation_failure"])
    assert failure == [{"message": "every configmap needs a team label", "policy": "labels-wanted",
                        "binding": "labels-wanted", "expressionIndex": 0, "validationActions": ["Warn", "Audit"]}]
    assert "labels-wanted/team" not in unowned["annotations"]
    owned = next(e for e in events if e["objectRef"].get("name") == "owned")
    assert owned["annotations"]["labels-wanted/team"] == "owned by blue"
    assert "validation.policy.admission.k8s.io/validation_failure" not in owned["annotations"]


ATTACKS = """\
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: deny-everything}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: ["*"], apiVersions: ["*"], operations: ["*"], resources: ["*"]}
  validations:
  - expression: "false"
    message: nothing passes
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: deny-everything}
spec:
  policyName: deny-everything
  validationActions: [Deny]
  matchResources:
    objectSelector: {matchLabels: {doomed: "yes"}}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: orphan}
spec:
  policyName: no-such-policy
  validationActions: [Deny]
"""


def test_policies_cannot_lock_out_the_policies_and_orphans_do_nothing(c: Cluster) -> None:
    apply(c, ATTACKS)
    # a binding to a policy that does not exist changes nothing
    c.kubectl("create", "configmap", "free", "-n", "plain")
    # the matching policy does deny what its binding selects ...
    r = c.kubectl("apply", "-f", "-", check=False,
                  input="apiVersion: v1\nkind: ConfigMap\nmetadata: {name: d, namespace: plain, labels: "
                        "{doomed: \"yes\"}}\n")
    assert "ValidatingAdmissionPolicy 'deny-everything' with binding 'deny-everything' denied request: " \
           "nothing passes" in r.stderr, r.stderr
    # ... but never the admission configuration itself, so it can always be repaired
    c.kubectl("label", "validatingadmissionpolicy", "deny-everything", "doomed=yes")
    c.kubectl("label", "validatingadmissionpolicybinding", "deny-everything", "doomed=yes")
    c.kubectl("delete", "validatingadmissionpolicybinding", "deny-everything", "orphan")
    c.kubectl("delete", "validatingadmissionpolicy", "deny-everything")
    c.kubectl("apply", "-f", "-", input="apiVersion: v1\nkind: ConfigMap\nmetadata: {name: d, namespace: plain, "
                                        "labels: {doomed: \"yes\"}}\n")


COSTLY = """\
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: costly}
spec:
  failurePolicy: %s
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}
    namespaceSelector: {matchLabels: {vap: cost}}
  variables:
  - {name: l, expression: "[0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29]"}
  validations:
  - expression: "variables.l.all(a, variables.l.all(b, variables.l.all(c, variables.l.all(d, a+b+c+d >= 0))))"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: costly}
spec:
  policyName: costly
  validationActions: [Deny]
"""


def test_expression_exhausting_the_cost_limit_is_stopped(c: Cluster) -> None:
    apply(c, COSTLY % "Fail")
    r = c.kubectl("create", "configmap", "x", "-n", "costly", check=False)
    assert r.returncode != 0
    assert ("ValidatingAdmissionPolicy 'costly' with binding 'costly' denied request: expression "
            "'variables.l.all(a, variables.l.all(b, variables.l.all(c, variables.l.all(d, a+b+c+d >= 0))))' "
            "resulted in error: operation cancelled: actual cost limit exceeded") in r.stderr, r.stderr
    apply(c, COSTLY % "Ignore")
    c.kubectl("create", "configmap", "x", "-n", "costly")


AUTHZ = """\
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: only-secret-readers}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}
    namespaceSelector: {matchLabels: {vap: authz}}
  validations:
  - expression: >-
      authorizer.group('').resource('secrets').namespace(request.namespace).check('list').allowed()
    messageExpression: "request.userInfo.username + ' may not list secrets in ' + request.namespace"
    reason: Forbidden
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: only-secret-readers}
spec:
  policyName: only-secret-readers
  validationActions: [Deny]
"""


def test_rbac_and_the_authorizer_variable(c: Cluster) -> None:
    kc = client_kubeconfig(c, "mallory", ["system:authenticated"], "mallory")
    c.kubectl("create", "role", "cm-writer", "-n", "authz", "--verb=create", "--resource=configmaps")
    c.kubectl("create", "rolebinding", "mallory-cm", "-n", "authz", "--role=cm-writer", "--user=mallory")
    # without RBAC on policies, mallory can neither create nor remove them
    r = c.kubectl("--kubeconfig", kc, "apply", "-f", "-", input=AUTHZ, check=False)
    assert r.returncode != 0 and "forbidden" in r.stderr, r.stderr
    apply(c, AUTHZ)
    r = c.kubectl("--kubeconfig", kc, "delete", "validatingadmissionpolicy", "only-secret-readers", check=False)
    assert r.returncode != 0 and "forbidden" in r.stderr, r.stderr
    r = c.kubectl("--kubeconfig", kc, "create", "configmap", "m", "-n", "authz", check=False)
    assert r.returncode != 0
    assert ("configmaps \"m\" is forbidden: ValidatingAdmissionPolicy 'only-secret-readers' with binding "
            "'only-secret-readers' denied request: mallory may not list secrets in authz") in r.stderr, r.stderr
    c.kubectl("create", "configmap", "m", "-n", "authz")  # the admin may


PROTECT = """\
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: protect}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [DELETE, UPDATE], resources: [configmaps]}
    namespaceSelector: {matchLabels: {vap: guarded}}
  matchConditions:
  - {name: protected, expression: "has(oldObject.metadata.labels) && 'protected' in oldObject.metadata.labels && oldObject.metadata.labels.protected == 'true'"}
  validations:
  - expression: >-
      request.operation != 'DELETE' && has(object.metadata.labels) && 'protected' in object.metadata.labels
      && object.metadata.labels.protected == 'true'
    messageExpression: "'protected ' + oldObject.metadata.name + ' may not be ' + (request.operation == 'DELETE' ? 'deleted' : 'unprotected')"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: protect}
spec:
  policyName: protect
  validationActions: [Deny]
"""


def test_delete_of_a_protected_object_is_refused(c: Cluster) -> None:
    apply(c, PROTECT)
    apply(c, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: crown, namespace: guarded, labels: "
             "{protected: \"true\"}}\n")
    c.kubectl("create", "configmap", "plain", "-n", "guarded")
    r = c.kubectl("delete", "configmap", "crown", "-n", "guarded", check=False)
    assert r.returncode != 0
    assert "denied request: protected crown may not be deleted" in r.stderr, r.stderr
    r = c.kubectl("label", "configmap", "crown", "-n", "guarded", "protected-", check=False)
    assert r.returncode != 0 and "protected crown may not be unprotected" in r.stderr, r.stderr
    r = c.kubectl("delete", "configmaps", "--all", "-n", "guarded", check=False)
    assert "protected crown may not be deleted" in r.stderr, r.stderr
    assert c.kubectl("get", "configmap", "crown", "-n", "guarded").returncode == 0
    assert c.kubectl("get", "configmap", "plain", "-n", "guarded", check=False).returncode != 0


TYPO = """\
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: typo}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [apps], apiVersions: [v1], operations: [CREATE], resources: [deployments]}
  validations:
  - expression: "%s"
"""


def _status_at(c: Cluster, generation: int) -> dict[str, Any]:
    deadline = time.monotonic() + 20
    while True:
        pol = json.loads(c.kubectl("get", "validatingadmissionpolicy", "typo", "-o", "json").stdout)
        st = pol.get("status") or {}
        if st.get("observedGeneration") == generation or time.monotonic() > deadline:
            return st
        time.sleep(0.1)


def test_type_checking_warnings_in_status(c: Cluster) -> None:
    apply(c, TYPO % "object.spec.replicass > 1 && object.metadata.labels.app != ''")
    st = _status_at(c, 1)
    assert st["observedGeneration"] == 1
    assert st["typeChecking"]["expressionWarnings"] == [{
        "fieldRef": "spec.validations[0].expression",
        "warning": "apps/v1, Kind=Deployment: ERROR: <input>:1:12: undefined field 'replicass'\n"
                   " | object.spec.replicass > 1 && object.metadata.labels.app != ''\n"
                   " | ...........^"}]
    # params are checked against a built-in paramKind's schema
    apply(c, TYPO.replace("spec:\n", "spec:\n  paramKind: {apiVersion: v1, kind: ConfigMap}\n")
          % "object.spec.replicas > 1 && params.dataa.max != ''")
    st = _status_at(c, 2)
    assert [w["warning"].splitlines()[0] for w in st["typeChecking"]["expressionWarnings"]] == [
        "apps/v1, Kind=Deployment: ERROR: <input>:1:35: undefined field 'dataa'"]
    apply(c, TYPO % "object.spec.replicas > 1")
    st = _status_at(c, 3)
    assert st["observedGeneration"] == 3 and not st.get("typeChecking", {}).get("expressionWarnings")


STATUS = """\
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: status-only}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [apps], apiVersions: [v1], operations: [UPDATE], resources: ["*/status"]}
    namespaceSelector: {matchLabels: {environment: prod}}
  validations:
  - expression: "!has(object.status.observedGeneration) || object.status.observedGeneration < 1000"
    message: observedGeneration too far ahead
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: status-only}
spec:
  policyName: status-only
  validationActions: [Deny]
"""


def test_subresource_rules_judge_the_status_subresource_only(c: Cluster) -> None:
    from kubernetes import client
    from kubernetes.client.rest import ApiException

    apply(c, STATUS)
    apps = client.AppsV1Api(c.api_client())
    apps.create_namespaced_deployment("prod", _deployment("st", "prod", 1, {}))
    # the main resource is not judged by a `*/status` rule
    apps.patch_namespaced_deployment("st", "prod", {"metadata": {"labels": {"x": "y"}}})
    with pytest.raises(ApiException) as ei:
        apps.patch_namespaced_deployment_status("st", "prod", {"status": {"observedGeneration": 5000}})
    assert ei.value.status == 422
    assert json.loads(ei.value.body)["message"] == (
        "deployments.apps \"st\" is forbidden: ValidatingAdmissionPolicy 'status-only' with binding 'status-only' "
        "denied request: observedGeneration too far ahead")
    apps.patch_namespaced_deployment_status("st", "prod", {"status": {"observedGeneration": 5}})



def test_policies_that_do_not_compile_are_refused(c: Cluster) -> None:
    r = c.kubectl("apply", "-f", "-", check=False, input=TYPO.replace("name: typo", "name: broken")
                  % "object.spec.replicas <=")
    assert r.returncode != 0
    assert ('The ValidatingAdmissionPolicy "broken" is invalid: '
            'spec.validations[0].expression: Invalid value: "object.spec.replicas <=": compilation failed: ERROR: '
            '<input>:1:22: Syntax error: mismatched input') in r.stderr, r.stderr
    r = c.kubectl("apply", "-f", "-", check=False, input=TYPO.replace("name: typo", "name: broken")
                  % "objekt.spec.replicas < 3")
    assert "undeclared reference to 'objekt'" in r.stderr, r.stderr
    assert c.kubectl("get", "validatingadmissionpolicy", "broken", check=False).returncode != 0


BAD_KIND = """\
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: bad-kind}
spec:
  paramKind: {apiVersion: example.com/v1, kind: BadParamKind}
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}
    namespaceSelector: {matchLabels: {vap: badkind}}
  validations:
  - expression: "true"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: bad-kind}
spec:
  policyName: bad-kind
  validationActions: [Deny]
"""


def test_a_param_kind_that_does_not_exist_is_a_policy_error(c: Cluster) -> None:
    apply(c, BAD_KIND)
    r = c.kubectl("create", "configmap", "x", "-n", "badkind", check=False)
    assert r.returncode != 0
    assert ("configmaps \"x\" is forbidden: ValidatingAdmissionPolicy 'bad-kind' denied request: failed to configure "
            "policy: failed to find resource referenced by paramKind: 'example.com/v1, Kind=BadParamKind'") in r.stderr, \
        r.stderr


LEAK = """\
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: leaky}
spec:
  paramKind: {apiVersion: v1, kind: ConfigMap}
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}
    namespaceSelector: {matchLabels: {vap: leak}}
  validations:
  - expression: "params.data.token.foo == 1"
  - expression: "object.metadata.name.repeat(2) != ''"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: leaky}
spec:
  policyName: leaky
  validationActions: [Deny]
  paramRef: {name: hidden, namespace: default}
"""


def test_errors_do_not_show_params_or_the_activation(c: Cluster) -> None:
    c.kubectl("create", "configmap", "hidden", "-n", "default", "--from-literal=token=hunter2")
    apply(c, LEAK)
    r = c.kubectl("create", "configmap", "probe", "-n", "leak", check=False)
    assert r.returncode != 0
    assert "denied request: expression 'params.data.token.foo == 1' resulted in error: no such overload" in r.stderr, \
        r.stderr
    assert "hunter2" not in r.stderr
    apply(c, LEAK.replace('"params.data.token.foo == 1"', '"true"'))
    r = c.kubectl("create", "configmap", "probe", "-n", "leak", check=False)
    assert ("denied request: expression 'object.metadata.name.repeat(2) != \'\'' resulted in error: found no "
            "matching overload for 'repeat'") in r.stderr, r.stderr
    assert "hunter2" not in r.stderr and len(r.stderr) < 1000

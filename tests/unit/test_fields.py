"""Field selectors: parsing with escapes, per-kind support, and selectable field sets.

Transcript pins:
- upstream-observed.md L863: `kubectl get events --field-selector reason=FailedScheduling`
  selects the three FailedScheduling events (big, node-affinity-pod, sel).
- kubectl-wire.md L35: `kubectl describe pod x` lists events with
  involvedObject.name=x,involvedObject.namespace=default,involvedObject.uid=<uid>.
- upstream-observed.md L420-510: a scheduled Pending pod (spec.nodeName node2, phase Pending).
"""

from __future__ import annotations

import pytest

from pyk8s.api import fields as F
from pyk8s.api.errors import StatusError


@pytest.mark.parametrize(
    "text, terms, canonical",
    [
        ("a=b", (("a", True, "b"),), "a=b"),
        ("a==b", (("a", True, "b"),), "a=b"),
        ("a!=b", (("a", False, "b"),), "a!=b"),
        ("b=1,a=2", (("a", True, "2"), ("b", True, "1")), "a=2,b=1"),  # terms sort
        ("a=b\\,c", (("a", True, "b,c"),), "a=b\\,c"),
        ("x=a\\=b", (("x", True, "a=b"),), "x=a\\=b"),
        ("x=a\\\\b", (("x", True, "a\\b"),), "x=a\\\\b"),
        ("a=", (("a", True, ""),), "a="),
        ("", (), ""),
        ("a=b,,", (("a", True, "b"),), "a=b"),
    ],
)
def test_parse(text: str, terms: tuple, canonical: str) -> None:
    sel = F.parse(text)
    assert sel.terms == terms
    assert str(sel) == canonical


@pytest.mark.parametrize(
    "text, message",
    [
        ("a", "invalid selector: 'a'; can't understand 'a'"),
        ("a=b,c", "invalid selector: 'a=b,c'; can't understand 'c'"),
        ("x=a\\q", "invalid field selector: invalid escape sequence: \\q"),
        ("x=a\\", "invalid field selector: invalid escape sequence: \\"),
        ("x=a=b", "invalid field selector: unescaped character in value: 61"),
    ],
)
def test_parse_errors(text: str, message: str) -> None:
    with pytest.raises(StatusError) as ei:
        F.parse(text)
    assert (ei.value.code, ei.value.reason, ei.value.message) == (400, "BadRequest", message)
    assert isinstance(ei.value, ValueError)


@pytest.mark.parametrize(
    "gk, selector, result",
    [
        (("", "Pod"), "spec.nodeName=node2,status.phase=Pending", "spec.nodeName=node2,status.phase=Pending"),
        (("", "Pod"), "spec.host=node2", "spec.nodeName=node2"),  # legacy alias
        (("", "Pod"), "status.podIPs=10.0.0.1", "status.podIPs=10.0.0.1"),
        (("", "Event"), "reason=FailedScheduling", "reason=FailedScheduling"),
        (
            ("events.k8s.io", "Event"),
            "regarding.name=x,reportingController=s",
            "involvedObject.name=x,reportingComponent=s",
        ),
        (("", "Node"), "spec.unschedulable=false", "spec.unschedulable=false"),
        (("", "Namespace"), "status.phase=Active", "status.phase=Active"),
        (("", "Secret"), "type=Opaque", "type=Opaque"),
        (("", "Service"), "spec.type=NodePort", "spec.type=NodePort"),
        (("", "ReplicationController"), "status.replicas=1", "status.replicas=1"),
        (("batch", "Job"), "status.successful=1", "status.successful=1"),
        (("certificates.k8s.io", "CertificateSigningRequest"), "spec.signerName=x", "spec.signerName=x"),
        (
            ("", "ConfigMap"),
            "metadata.name=c,metadata.namespace=demo",
            "metadata.name=c,metadata.namespace=demo",
        ),
        (("example.com", "Widget"), "metadata.name=w", "metadata.name=w"),
    ],
)
def test_validate_accepts(gk: tuple, selector: str, result: str) -> None:
    assert str(F.validate_field_selector(gk[0], gk[1], selector)) == result


@pytest.mark.parametrize(
    "gk, selector, message",
    [
        (("", "Pod"), "status.hostIP=1.2.3.4", "field label not supported: status.hostIP"),
        (("", "Node"), "metadata.namespace=x", "field label not supported: metadata.namespace"),
        (("", "Event"), "message=x", "field label not supported: message"),
        (
            ("events.k8s.io", "Event"),
            "involvedObject.name=x",
            "field label not supported: involvedObject.name",
        ),
        (
            ("batch", "Job"),
            "status.succeeded=1",
            'field label "status.succeeded" not supported for batchv1.Job',
        ),
        # apps/v1 registers no conversion: the generic metadata-only message
        (
            ("apps", "ReplicaSet"),
            "status.replicas=1",
            '"status.replicas" is not a known field selector: only "metadata.name", "metadata.namespace"',
        ),
        (
            ("", "ConfigMap"),
            "data.a=1",
            '"data.a" is not a known field selector: only "metadata.name", "metadata.namespace"',
        ),
    ],
)
def test_validate_rejects(gk: tuple, selector: str, message: str) -> None:
    with pytest.raises(StatusError) as ei:
        F.validate_field_selector(gk[0], gk[1], selector)
    assert (ei.value.code, ei.value.reason, ei.value.message) == (400, "BadRequest", message)


def test_validate_converts_selector_object_in_place() -> None:
    sel = F.parse("spec.host=node2")
    out = F.validate_field_selector("", "Pod", sel)
    assert out is sel and str(sel) == "spec.nodeName=node2"


PENDING_POD = {  # L420-510, trimmed
    "metadata": {"name": "testdemo-665685df7-sgczd", "namespace": "default"},
    "spec": {
        "nodeName": "node2",
        "restartPolicy": "Always",
        "schedulerName": "default-scheduler",
        "serviceAccountName": "default",
    },
    "status": {"phase": "Pending"},
}


def test_pod_field_set_and_matching() -> None:
    fs = F.field_set("", "Pod", PENDING_POD)
    assert fs == {
        "metadata.name": "testdemo-665685df7-sgczd",
        "metadata.namespace": "default",
        "spec.nodeName": "node2",
        "spec.restartPolicy": "Always",
        "spec.schedulerName": "default-scheduler",
        "spec.serviceAccountName": "default",
        "spec.hostNetwork": "false",
        "status.phase": "Pending",
        "status.podIP": "",
        "status.nominatedNodeName": "",
    }
    assert F.parse("spec.nodeName=node2").matches(fs)
    assert F.parse("spec.nodeName!=node2").matches(fs) is False
    assert F.parse("status.podIP=").matches(fs)  # unset reads as ""
    assert F.parse("status.podIPs=").matches(fs)  # accepted but never set upstream
    assert not F.parse("status.podIPs=10.0.0.1").matches(fs)
    assert F.parse("spec.nodeName=node2").requires_exact_match("spec.nodeName") == "node2"


EVENTS: list[dict] = [  # L863-867: three FailedScheduling events among Scheduled ones
    {
        "metadata": {"name": f"{n}.1", "namespace": "default"},
        "involvedObject": {"kind": "Pod", "name": n, "namespace": "default", "uid": f"u-{n}"},
        "reason": reason,
        "type": "Warning" if reason == "FailedScheduling" else "Normal",
        "source": {"component": "default-scheduler"},
    }
    for n, reason in [
        ("big", "FailedScheduling"),
        ("node-affinity-pod", "FailedScheduling"),
        ("sel", "FailedScheduling"),
        ("web-1", "Scheduled"),
    ]
]


def test_event_selection() -> None:
    sel = F.validate_field_selector("", "Event", "reason=FailedScheduling")
    picked = [e["involvedObject"]["name"] for e in EVENTS if sel.matches(F.field_set("", "Event", e))]
    assert picked == ["big", "node-affinity-pod", "sel"]
    # kubectl-wire.md L35: describe's event query
    q = F.validate_field_selector(
        "", "Event", "involvedObject.name=sel,involvedObject.namespace=default,involvedObject.uid=u-sel"
    )
    assert [e["metadata"]["name"] for e in EVENTS if q.matches(F.field_set("", "Event", e))] == ["sel.1"]
    assert F.field_set("", "Event", EVENTS[0])["source"] == "default-scheduler"


def test_events_v1_form_selects_with_core_labels() -> None:
    ev = {
        "metadata": {"name": "e", "namespace": "d"},
        "regarding": {"kind": "Pod", "name": "p"},
        "reportingController": "kubelet",
        "reason": "Pulled",
        "type": "Normal",
    }
    fs = F.field_set("events.k8s.io", "Event", ev)
    assert (
        fs["involvedObject.name"] == "p"
        and fs["reportingComponent"] == "kubelet"
        and fs["source"] == "kubelet"
    )
    assert F.validate_field_selector("events.k8s.io", "Event", "regarding.kind=Pod").matches(fs)


@pytest.mark.parametrize(
    "gk, obj, key, value",
    [
        (
            ("", "Node"),
            {"metadata": {"name": "node1"}, "spec": {"unschedulable": True}},
            "spec.unschedulable",
            "true",
        ),
        (
            ("", "Namespace"),
            {"metadata": {"name": "demo"}, "status": {"phase": "Active"}},
            "status.phase",
            "Active",
        ),
        (
            ("", "Secret"),
            {"metadata": {"name": "s", "namespace": "default"}, "type": "Opaque"},
            "type",
            "Opaque",
        ),
        (
            ("", "Service"),
            {"metadata": {"name": "web"}, "spec": {"clusterIP": "10.108.214.133", "type": "NodePort"}},
            "spec.clusterIP",
            "10.108.214.133",
        ),
        (
            ("", "ReplicationController"),
            {"metadata": {"name": "r"}, "status": {"replicas": 3}},
            "status.replicas",
            "3",
        ),
        (("batch", "Job"), {"metadata": {"name": "j"}, "status": {"active": 1}}, "status.successful", "0"),
        (
            ("certificates.k8s.io", "CertificateSigningRequest"),
            {"metadata": {"name": "c"}, "spec": {"signerName": "x/y"}},
            "spec.signerName",
            "x/y",
        ),
    ],
)
def test_kind_field_sets(gk: tuple, obj: dict, key: str, value: str) -> None:
    assert F.field_set(gk[0], gk[1], obj)[key] == value


def test_default_and_custom_resource_fields() -> None:
    cm = {"metadata": {"name": "c", "namespace": "demo"}}
    assert F.field_set("", "ConfigMap", cm) == {"metadata.name": "c", "metadata.namespace": "demo"}
    assert F.field_set("", "PersistentVolume", {"metadata": {"name": "pv"}}, namespaced=False) == {
        "metadata.name": "pv"
    }
    F.register_custom_resource("example.com", "Widget", [{"jsonPath": ".spec.color"}], namespaced=True)
    try:
        sel = F.validate_field_selector("example.com", "Widget", "spec.color=blue")
        assert sel.matches(
            F.field_set("example.com", "Widget", {"metadata": {"name": "w"}, "spec": {"color": "blue"}})
        )
        with pytest.raises(StatusError) as ei:
            F.validate_field_selector("example.com", "Widget", "spec.size=1")
        assert ei.value.message == "field label not supported: spec.size"
    finally:
        F.unregister_custom_resource("example.com", "Widget")

"""Version conversion: HPA v1<->v2, Event core<->events.k8s.io, old apps versions<->apps/v1."""

from __future__ import annotations

import copy
import json

import kubernetes_validate
import pytest
import yaml

from pyk8s.api.conversion import (
    BEHAVIOR_SPECS_ANNOTATION,
    CONVERTERS,
    DEPRECATED_TEMPLATE_GENERATION,
    HPA_CONDITIONS_ANNOTATION,
    METRIC_SPECS_ANNOTATION,
    METRIC_STATUSES_ANNOTATION,
    ConversionError,
    can_convert,
    convert,
    deprecated_versions,
    deprecation_warning,
    hub_version,
)

MAX_INT32 = 2147483647


def valid(obj: dict) -> None:
    """Strict schema validation against the v1.33 definitions (raises on failure)."""
    kubernetes_validate.validate(obj, "1.33.0", strict=True)


def pure(obj: dict, to: str) -> dict:
    """convert(), also checking it leaves its input alone."""
    before = copy.deepcopy(obj)
    out = convert(obj, to)
    assert obj == before
    return out


# ---------------------------------------------------------------------------
# HorizontalPodAutoscaler
# ---------------------------------------------------------------------------

CPU50 = {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}}}


def hpa_v2(**spec_extra) -> dict:
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "scaleTargetRef": {"kind": "Deployment", "name": "web", "apiVersion": "apps/v1"},
            "minReplicas": 1,
            "maxReplicas": 10,
            **spec_extra,
        },
        "status": {"currentReplicas": 2, "desiredReplicas": 3},
    }


def test_hpa_v1_cpu_target_becomes_v2_utilization_metric() -> None:
    v1 = {
        "apiVersion": "autoscaling/v1",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web", "apiVersion": "apps/v1"},
                 "minReplicas": 1, "maxReplicas": 10, "targetCPUUtilizationPercentage": 50},
        "status": {"currentReplicas": 2, "desiredReplicas": 3, "currentCPUUtilizationPercentage": 42},
    }
    v2 = pure(v1, "autoscaling/v2")
    assert v2["apiVersion"] == "autoscaling/v2"
    assert v2["spec"]["metrics"] == [CPU50]
    assert "annotations" not in v2["metadata"]
    assert v2["status"] == {"currentReplicas": 2, "desiredReplicas": 3, "currentMetrics": [
        {"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 42}}}]}
    valid(v2)
    back = pure(v2, "autoscaling/v1")
    # Upstream saves the current metrics even when one maps onto the percentage, and the v1
    # status has no raw value, so the annotation carries the Go zero quantity.
    assert back["metadata"].pop("annotations") == {METRIC_STATUSES_ANNOTATION: (
        '[{"type":"Resource","resource":{"name":"cpu","currentAverageUtilization":42,"currentAverageValue":"0"}}]')}
    assert back == v1
    valid(back)


def test_hpa_v1_without_target_gets_the_implicit_80_percent() -> None:
    v1 = {"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "a"},
          "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "a"}, "maxReplicas": 3}}
    v2 = convert(v1, "autoscaling/v2")
    assert v2["spec"]["metrics"] == [{"type": "Resource", "resource": {"name": "cpu", "target": {
        "type": "Utilization", "averageUtilization": 80}}}]
    assert v2["status"] == {"desiredReplicas": 0}
    # ...and the way back shows the percentage, with v1's always-present status numbers.
    back = convert(v2, "autoscaling/v1")
    assert back["spec"]["targetCPUUtilizationPercentage"] == 80
    assert back["status"] == {"currentReplicas": 0, "desiredReplicas": 0}
    assert "annotations" not in back["metadata"]


# Annotation values in the exact encodings upstream writes: the v1 (v2beta1-shaped) metric
# types for metrics and statuses, and the tagless internal behavior type (Go field names).
V1_METRICS_ANN = (
    '[{"type":"Pods","pods":{"metricName":"packets-per-second","targetAverageValue":"1k"}},'
    '{"type":"External","external":{"metricName":"queue_messages_ready",'
    '"metricSelector":{"matchLabels":{"queue":"worker_tasks"}},"targetAverageValue":"30"}}]'
)
V1_CURRENT_ANN = (
    '[{"type":"Resource","resource":{"name":"cpu","currentAverageUtilization":42,"currentAverageValue":"210m"}},'
    '{"type":"Pods","pods":{"metricName":"packets-per-second","currentAverageValue":"900"}}]'
)
V1_CONDITIONS_ANN = (
    '[{"type":"AbleToScale","status":"True","lastTransitionTime":"2024-05-01T10:00:00Z",'
    '"reason":"ReadyForNewScale","message":"recommended size matches current size"},'
    '{"type":"ScalingActive","status":"True","lastTransitionTime":"2024-05-01T10:00:00Z",'
    '"reason":"ValidMetricFound","message":"the HPA was able to successfully calculate a replica count"}]'
)
V1_BEHAVIOR_ANN = (
    '{"ScaleUp":{"StabilizationWindowSeconds":0,"SelectPolicy":"Max","Policies":'
    '[{"Type":"Pods","Value":4,"PeriodSeconds":15},{"Type":"Percent","Value":100,"PeriodSeconds":15}],'
    '"Tolerance":null},"ScaleDown":{"StabilizationWindowSeconds":300,"SelectPolicy":"Max","Policies":'
    '[{"Type":"Percent","Value":100,"PeriodSeconds":15}],"Tolerance":null}}'
)


def hpa_v1_annotated() -> dict:
    return {
        "apiVersion": "autoscaling/v1",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web", "namespace": "default", "annotations": {
            "team": "payments",
            METRIC_SPECS_ANNOTATION: V1_METRICS_ANN,
            METRIC_STATUSES_ANNOTATION: V1_CURRENT_ANN,
            HPA_CONDITIONS_ANNOTATION: V1_CONDITIONS_ANN,
            BEHAVIOR_SPECS_ANNOTATION: V1_BEHAVIOR_ANN,
        }},
        "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web", "apiVersion": "apps/v1"},
                 "minReplicas": 2, "maxReplicas": 10, "targetCPUUtilizationPercentage": 50},
        "status": {"observedGeneration": 3, "lastScaleTime": "2024-05-01T09:59:00Z",
                   "currentReplicas": 4, "desiredReplicas": 4, "currentCPUUtilizationPercentage": 42},
    }


def test_hpa_v1_annotations_restore_v2_fields() -> None:
    v2 = pure(hpa_v1_annotated(), "autoscaling/v2")
    # The round-trip annotations are consumed; others stay.
    assert v2["metadata"]["annotations"] == {"team": "payments"}
    assert v2["spec"]["metrics"] == [
        {"type": "Pods", "pods": {"metric": {"name": "packets-per-second"},
                                  "target": {"type": "AverageValue", "averageValue": "1k"}}},
        {"type": "External", "external": {
            "metric": {"name": "queue_messages_ready", "selector": {"matchLabels": {"queue": "worker_tasks"}}},
            "target": {"type": "AverageValue", "averageValue": "30"}}},
        CPU50,  # the spec's own CPU target comes after the annotation's metrics
    ]
    assert v2["spec"]["behavior"] == {
        "scaleUp": {"stabilizationWindowSeconds": 0, "selectPolicy": "Max", "policies": [
            {"type": "Pods", "value": 4, "periodSeconds": 15}, {"type": "Percent", "value": 100, "periodSeconds": 15}]},
        "scaleDown": {"stabilizationWindowSeconds": 300, "selectPolicy": "Max", "policies": [
            {"type": "Percent", "value": 100, "periodSeconds": 15}]},
    }
    st = v2["status"]
    assert st["observedGeneration"] == 3 and st["lastScaleTime"] == "2024-05-01T09:59:00Z"
    assert st["currentMetrics"] == [
        {"type": "Resource", "resource": {"name": "cpu", "current": {"averageValue": "210m", "averageUtilization": 42}}},
        {"type": "Pods", "pods": {"metric": {"name": "packets-per-second"}, "current": {"averageValue": "900"}}},
    ]
    assert [c["reason"] for c in st["conditions"]] == ["ReadyForNewScale", "ValidMetricFound"]
    valid(v2)


def test_hpa_round_trip_v1_v2_v1_keeps_annotations_byte_for_byte() -> None:
    v1 = hpa_v1_annotated()
    back = pure(pure(v1, "autoscaling/v2"), "autoscaling/v1")
    assert back == v1
    valid(back)


def test_hpa_round_trip_v2_v1_v2() -> None:
    v2 = hpa_v2(
        metrics=[
            {"type": "Object", "object": {
                "describedObject": {"kind": "Ingress", "name": "main-route", "apiVersion": "networking.k8s.io/v1"},
                "target": {"type": "Value", "value": "10k"}, "metric": {"name": "requests-per-second"}}},
            {"type": "ContainerResource", "containerResource": {
                "name": "memory", "target": {"type": "AverageValue", "averageValue": "500Mi"}, "container": "app"}},
            {"type": "Resource", "resource": {"name": "memory", "target": {"type": "Utilization", "averageUtilization": 70}}},
            {"type": "External", "external": {"metric": {"name": "lag"}, "target": {"type": "Value", "value": "100"}}},
            CPU50,
        ],
        behavior={"scaleDown": {"stabilizationWindowSeconds": 60, "selectPolicy": "Min",
                                "policies": [{"type": "Pods", "value": 1, "periodSeconds": 60}], "tolerance": "50m"}},
    )
    v2["status"] = {
        "observedGeneration": 7, "currentReplicas": 3, "desiredReplicas": 3,
        "currentMetrics": [
            {"type": "Resource", "resource": {"name": "cpu", "current": {"averageValue": "120m", "averageUtilization": 31}}},
            {"type": "Object", "object": {"metric": {"name": "requests-per-second"}, "current": {"value": "9k"},
                                          "describedObject": {"kind": "Ingress", "name": "main-route",
                                                              "apiVersion": "networking.k8s.io/v1"}}},
            {"type": "External", "external": {"metric": {"name": "lag"}, "current": {"value": "80"}}},
        ],
        "conditions": [{"type": "ScalingLimited", "status": "False", "lastTransitionTime": "2024-05-01T10:00:00Z",
                        "reason": "DesiredWithinRange"}],
    }
    valid(v2)
    v1 = pure(v2, "autoscaling/v1")
    valid(v1)
    assert v1["spec"] == {"scaleTargetRef": {"kind": "Deployment", "name": "web", "apiVersion": "apps/v1"},
                          "minReplicas": 1, "maxReplicas": 10, "targetCPUUtilizationPercentage": 50}
    assert v1["status"] == {"observedGeneration": 7, "currentReplicas": 3, "desiredReplicas": 3,
                            "currentCPUUtilizationPercentage": 31}
    ann = v1["metadata"]["annotations"]
    assert ann[METRIC_SPECS_ANNOTATION] == (
        '[{"type":"Object","object":{"target":{"kind":"Ingress","name":"main-route","apiVersion":"networking.k8s.io/v1"},'
        '"metricName":"requests-per-second","targetValue":"10k"}},'
        '{"type":"ContainerResource","containerResource":{"name":"memory","targetAverageValue":"500Mi","container":"app"}},'
        '{"type":"Resource","resource":{"name":"memory","targetAverageUtilization":70}},'
        '{"type":"External","external":{"metricName":"lag","targetValue":"100"}}]'
    )
    assert ann[BEHAVIOR_SPECS_ANNOTATION] == (
        '{"ScaleUp":null,"ScaleDown":{"StabilizationWindowSeconds":60,"SelectPolicy":"Min",'
        '"Policies":[{"Type":"Pods","Value":1,"PeriodSeconds":60}],"Tolerance":"50m"}}'
    )
    assert json.loads(ann[HPA_CONDITIONS_ANNOTATION]) == [
        {"type": "ScalingLimited", "status": "False", "lastTransitionTime": "2024-05-01T10:00:00Z",
         "reason": "DesiredWithinRange"}]
    back = pure(v1, "autoscaling/v2")
    assert back == v2


def test_hpa_v2_to_v1_replaces_stale_round_trip_annotations() -> None:
    v2 = hpa_v2(metrics=[CPU50])
    v2["metadata"]["annotations"] = {METRIC_SPECS_ANNOTATION: "[garbage", BEHAVIOR_SPECS_ANNOTATION: "{}"}
    v1 = convert(v2, "autoscaling/v1")
    assert "annotations" not in v1["metadata"]  # emptied map goes away, as Go's omitempty
    assert v1["spec"]["targetCPUUtilizationPercentage"] == 50


def test_hpa_v1_bad_or_empty_annotations_are_ignored() -> None:
    v1 = hpa_v1_annotated()
    v1["metadata"]["annotations"].update({
        METRIC_SPECS_ANNOTATION: "not json", BEHAVIOR_SPECS_ANNOTATION: "{}",
        METRIC_STATUSES_ANNOTATION: "{", HPA_CONDITIONS_ANNOTATION: "[]",
    })
    v2 = convert(v1, "autoscaling/v2")
    assert v2["spec"]["metrics"] == [CPU50]
    assert "behavior" not in v2["spec"]
    # The undecodable statuses leave the v1 percentage in charge.
    assert v2["status"]["currentMetrics"] == [
        {"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 42}}}]
    assert "conditions" not in v2["status"]
    assert v2["metadata"]["annotations"] == {"team": "payments"}


def test_hpa_behavior_annotation_reads_field_names_case_insensitively() -> None:
    v1 = hpa_v1_annotated()
    v1["metadata"]["annotations"] = {BEHAVIOR_SPECS_ANNOTATION: '{"scaleDown":{"stabilizationwindowseconds":10}}'}
    assert convert(v1, "autoscaling/v2")["spec"]["behavior"] == {"scaleDown": {"stabilizationWindowSeconds": 10}}


def test_hpa_annotation_json_escapes_like_go() -> None:
    v2 = hpa_v2(metrics=[{"type": "External", "external": {
        "metric": {"name": "q", "selector": {"matchLabels": {"k": "a<b>&c"}}},
        "target": {"type": "AverageValue", "averageValue": "1"}}}])
    raw = convert(v2, "autoscaling/v1")["metadata"]["annotations"][METRIC_SPECS_ANNOTATION]
    assert "a\\u003cb\\u003e\\u0026c" in raw
    assert convert(convert(v2, "autoscaling/v1"), "autoscaling/v2")["spec"]["metrics"] == v2["spec"]["metrics"]


# ---------------------------------------------------------------------------
# Events
# ---------------------------------------------------------------------------

CORE_EVENT = {
    "apiVersion": "v1",
    "kind": "Event",
    "metadata": {"name": "web-1.17a", "namespace": "default", "resourceVersion": "42"},
    "involvedObject": {"kind": "Pod", "namespace": "default", "name": "web-1", "uid": "u-1",
                       "apiVersion": "v1", "resourceVersion": "7", "fieldPath": "spec.containers{web}"},
    "reason": "Pulled",
    "message": "Successfully pulled image \"nginx\"",
    "source": {"component": "kubelet", "host": "node-1"},
    "firstTimestamp": "2024-05-01T10:00:00Z",
    "lastTimestamp": "2024-05-01T10:05:00Z",
    "count": 3,
    "type": "Normal",
    "eventTime": None,
    "reportingComponent": "",
    "reportingInstance": "",
}

NEW_EVENT = {
    "apiVersion": "events.k8s.io/v1",
    "kind": "Event",
    "metadata": {"name": "web.17b", "namespace": "default"},
    "eventTime": "2024-05-01T10:00:00.123456Z",
    "series": {"count": 4, "lastObservedTime": "2024-05-01T10:09:00.000001Z"},
    "reportingController": "example.com/scaler",
    "reportingInstance": "scaler-7d9f",
    "action": "Scaling",
    "reason": "ScaledUp",
    "regarding": {"kind": "Deployment", "namespace": "default", "name": "web", "apiVersion": "apps/v1"},
    "related": {"kind": "ReplicaSet", "namespace": "default", "name": "web-abc", "apiVersion": "apps/v1"},
    "note": "scaled up to 4",
    "type": "Normal",
    "deprecatedSource": {},
    "deprecatedFirstTimestamp": None,
    "deprecatedLastTimestamp": None,
}


def test_core_event_to_events_v1_and_back() -> None:
    ev = pure(CORE_EVENT, "events.k8s.io/v1")
    assert ev["apiVersion"] == "events.k8s.io/v1"
    assert ev["regarding"] == CORE_EVENT["involvedObject"]
    assert ev["note"] == CORE_EVENT["message"]
    assert ev["deprecatedSource"] == {"component": "kubelet", "host": "node-1"}
    assert ev["deprecatedFirstTimestamp"] == "2024-05-01T10:00:00Z"
    assert ev["deprecatedLastTimestamp"] == "2024-05-01T10:05:00Z"
    assert ev["deprecatedCount"] == 3
    assert ev["eventTime"] is None  # a struct in Go: null, not omitted
    for gone in ("involvedObject", "message", "source", "count", "firstTimestamp", "reportingController",
                 "reportingComponent", "reportingInstance"):
        assert gone not in ev
    valid(ev)
    back = pure(ev, "v1")
    assert back == CORE_EVENT
    valid(back)


def test_events_v1_to_core_and_back() -> None:
    core = pure(NEW_EVENT, "v1")
    assert core["involvedObject"] == NEW_EVENT["regarding"]
    assert core["message"] == "scaled up to 4"
    assert core["reportingComponent"] == "example.com/scaler"
    assert core["reportingInstance"] == "scaler-7d9f"
    assert core["eventTime"] == NEW_EVENT["eventTime"]
    assert core["series"] == NEW_EVENT["series"]
    assert core["related"] == NEW_EVENT["related"]
    assert (core["action"], core["reason"], core["type"]) == ("Scaling", "ScaledUp", "Normal")
    assert core["source"] == {} and core["firstTimestamp"] is None and "count" not in core
    valid(core)
    assert pure(core, "events.k8s.io/v1") == NEW_EVENT


def test_event_minimal_core_gets_go_zero_values() -> None:
    core = convert({"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "e"},
                    "eventTime": "2024-05-01T10:00:00.000000Z"}, "v1")
    assert core == {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e"}, "involvedObject": {},
                    "source": {}, "firstTimestamp": None, "lastTimestamp": None,
                    "eventTime": "2024-05-01T10:00:00.000000Z", "reportingComponent": "", "reportingInstance": ""}


def test_event_list_converts_items() -> None:
    lst = {"apiVersion": "v1", "kind": "EventList", "metadata": {"resourceVersion": "9"},
           "items": [{k: v for k, v in CORE_EVENT.items() if k not in ("apiVersion", "kind")}]}
    out = convert(lst, "events.k8s.io/v1")
    assert out["apiVersion"] == "events.k8s.io/v1" and out["kind"] == "EventList"
    assert out["items"][0]["note"] == CORE_EVENT["message"]
    assert "apiVersion" not in out["items"][0] and "kind" not in out["items"][0]


# ---------------------------------------------------------------------------
# Deprecated apps versions
# ---------------------------------------------------------------------------

TEMPLATE = {
    "metadata": {"labels": {"app": "nginx"}},
    "spec": {"containers": [{"name": "nginx", "image": "nginx:1.7.9", "ports": [{"containerPort": 80}]}]},
}


def old(api_version: str, kind: str, **spec) -> dict:
    return {"apiVersion": api_version, "kind": kind, "metadata": {"name": "nginx", "namespace": "default"},
            "spec": {"template": copy.deepcopy(TEMPLATE), **spec}}


def test_extensions_deployment_defaults_into_apps_v1() -> None:
    d = old("extensions/v1beta1", "Deployment", replicas=3, rollbackTo={"revision": 2})
    v1 = pure(d, "apps/v1")
    assert v1["apiVersion"] == "apps/v1"
    spec = v1["spec"]
    assert spec["selector"] == {"matchLabels": {"app": "nginx"}}
    assert v1["metadata"]["labels"] == {"app": "nginx"}
    assert spec["replicas"] == 3
    assert spec["strategy"] == {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 1}}
    assert spec["revisionHistoryLimit"] == MAX_INT32
    assert spec["progressDeadlineSeconds"] == MAX_INT32
    assert "rollbackTo" not in spec
    valid(v1)


def test_apps_v1beta1_deployment_defaults_into_apps_v1() -> None:
    v1 = convert(old("apps/v1beta1", "Deployment"), "apps/v1")
    spec = v1["spec"]
    assert spec["selector"] == {"matchLabels": {"app": "nginx"}}
    assert spec["replicas"] == 1
    assert spec["strategy"] == {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}}
    assert spec["revisionHistoryLimit"] == 2
    assert spec["progressDeadlineSeconds"] == 600
    valid(v1)


def test_old_defaults_never_override_given_values() -> None:
    d = old("extensions/v1beta1", "Deployment", selector={"matchLabels": {"app": "nginx", "tier": "x"}},
            strategy={"type": "Recreate"}, revisionHistoryLimit=5, progressDeadlineSeconds=30)
    d["metadata"]["labels"] = {"owner": "me"}
    d["spec"]["template"]["metadata"]["labels"]["tier"] = "x"
    spec = convert(d, "apps/v1")["spec"]
    assert spec["selector"] == {"matchLabels": {"app": "nginx", "tier": "x"}}
    assert spec["strategy"] == {"type": "Recreate"}
    assert (spec["revisionHistoryLimit"], spec["progressDeadlineSeconds"]) == (5, 30)
    assert convert(d, "apps/v1")["metadata"]["labels"] == {"owner": "me"}


def test_extensions_daemonset_on_delete_and_template_generation() -> None:
    ds = old("extensions/v1beta1", "DaemonSet", templateGeneration=2)
    v1 = pure(ds, "apps/v1")
    assert v1["spec"]["updateStrategy"] == {"type": "OnDelete"}
    assert v1["spec"]["revisionHistoryLimit"] == 10
    assert "templateGeneration" not in v1["spec"]
    assert v1["metadata"]["annotations"] == {DEPRECATED_TEMPLATE_GENERATION: "2"}
    valid(v1)
    back = pure(v1, "extensions/v1beta1")
    assert back["spec"]["templateGeneration"] == 2
    assert "annotations" not in back["metadata"]


def test_extensions_daemonset_rolling_update_gets_max_unavailable() -> None:
    ds = old("extensions/v1beta1", "DaemonSet", updateStrategy={"type": "RollingUpdate"})
    assert convert(ds, "apps/v1")["spec"]["updateStrategy"] == {"type": "RollingUpdate",
                                                                "rollingUpdate": {"maxUnavailable": 1}}


def test_extensions_replicaset_and_v1beta1_statefulset_defaults() -> None:
    rs = convert(old("extensions/v1beta1", "ReplicaSet"), "apps/v1")
    assert rs["spec"]["selector"] == {"matchLabels": {"app": "nginx"}} and rs["spec"]["replicas"] == 1
    valid(rs)
    sts = convert(old("apps/v1beta1", "StatefulSet", serviceName="nginx"), "apps/v1")
    assert sts["spec"]["selector"] == {"matchLabels": {"app": "nginx"}}
    assert sts["spec"]["updateStrategy"] == {"type": "OnDelete"}
    assert sts["spec"]["podManagementPolicy"] == "OrderedReady"
    assert sts["spec"]["revisionHistoryLimit"] == 10
    valid(sts)


def test_apps_v1beta2_is_not_selector_defaulted() -> None:
    # apps/v1beta2 already required spec.selector: upstream never filled it in.
    d = old("apps/v1beta2", "Deployment")
    v1 = convert(d, "apps/v1")
    assert "selector" not in v1["spec"]
    assert v1 == {**d, "apiVersion": "apps/v1"}


APPS_V1 = {
    "Deployment": {"replicas": 2, "selector": {"matchLabels": {"app": "nginx"}}, "template": TEMPLATE,
                   "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}},
                   "revisionHistoryLimit": 10, "progressDeadlineSeconds": 600},
    "DaemonSet": {"selector": {"matchLabels": {"app": "nginx"}}, "template": TEMPLATE,
                  "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}},
                  "revisionHistoryLimit": 10},
    "ReplicaSet": {"replicas": 2, "selector": {"matchLabels": {"app": "nginx"}}, "template": TEMPLATE},
    "StatefulSet": {"replicas": 2, "selector": {"matchLabels": {"app": "nginx"}}, "template": TEMPLATE,
                    "serviceName": "nginx", "podManagementPolicy": "OrderedReady",
                    "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}},
                    "revisionHistoryLimit": 10},
}


def apps_v1_object(kind: str) -> dict:
    meta = {"name": "nginx", "namespace": "default", "labels": {"app": "nginx"}, "generation": 1}
    if kind == "ControllerRevision":
        return {"apiVersion": "apps/v1", "kind": kind, "metadata": meta, "data": {"spec": {}}, "revision": 3}
    if kind == "DaemonSet":
        meta["annotations"] = {DEPRECATED_TEMPLATE_GENERATION: "1"}
    status = {"DaemonSet": {"currentNumberScheduled": 1, "numberMisscheduled": 0, "desiredNumberScheduled": 1,
                            "numberReady": 1, "observedGeneration": 1}}.get(kind, {"replicas": 2, "observedGeneration": 1})
    return {"apiVersion": "apps/v1", "kind": kind, "metadata": meta, "spec": copy.deepcopy(APPS_V1[kind]),
            "status": status}


@pytest.mark.parametrize("group,version,kind,plural,replacement", deprecated_versions())
def test_apps_v1_round_trips_through_every_old_version(group, version, kind, plural, replacement) -> None:
    obj = apps_v1_object(kind)
    valid(obj)
    gv = f"{group}/{version}"
    out = pure(obj, gv)
    assert out["apiVersion"] == gv and out["kind"] == kind
    assert pure(out, replacement) == obj
    assert hub_version(gv, kind) == "apps/v1"


def test_old_to_old_goes_through_apps_v1() -> None:
    ds = old("extensions/v1beta1", "DaemonSet", templateGeneration=4)
    v1beta2 = convert(ds, "apps/v1beta2")
    assert v1beta2["apiVersion"] == "apps/v1beta2"
    assert v1beta2["spec"]["selector"] == {"matchLabels": {"app": "nginx"}}
    assert v1beta2["metadata"]["annotations"][DEPRECATED_TEMPLATE_GENERATION] == "4"


def test_deprecated_versions_and_warnings() -> None:
    got = deprecated_versions()
    assert ("extensions", "v1beta1", "DaemonSet", "daemonsets", "apps/v1") in got
    assert ("apps", "v1beta1", "ControllerRevision", "controllerrevisions", "apps/v1") in got
    assert {(g, v) for g, v, *_ in got} == {("extensions", "v1beta1"), ("apps", "v1beta1"), ("apps", "v1beta2")}
    assert len(got) == 11
    # Versions from upstream's prerelease-lifecycle tags.
    assert deprecation_warning("extensions", "v1beta1", "DaemonSet") == (
        "extensions/v1beta1 DaemonSet is deprecated in v1.8+, unavailable in v1.16+; use apps/v1 DaemonSet")
    assert deprecation_warning("apps", "v1beta1", "Deployment") == (
        "apps/v1beta1 Deployment is deprecated in v1.8+, unavailable in v1.16+; use apps/v1 Deployment")
    assert deprecation_warning("apps", "v1beta2", "StatefulSet") == (
        "apps/v1beta2 StatefulSet is deprecated in v1.9+, unavailable in v1.16+; use apps/v1 StatefulSet")
    assert deprecation_warning("apps", "v1", "Deployment") == ""
    assert deprecation_warning("extensions", "v1beta1", "StatefulSet") == ""


# ---------------------------------------------------------------------------
# Registry and entry point
# ---------------------------------------------------------------------------


def test_registry_keys_and_errors() -> None:
    assert (("autoscaling", "HorizontalPodAutoscaler"), "autoscaling/v1", "autoscaling/v2") in CONVERTERS
    assert (("", "Event"), "events.k8s.io/v1", "v1") in CONVERTERS
    assert (("apps", "DaemonSet"), "extensions/v1beta1", "apps/v1") in CONVERTERS
    fn = CONVERTERS[(("", "Event"), "v1", "events.k8s.io/v1")]
    assert fn(CORE_EVENT, "events.k8s.io/v1") == convert(CORE_EVENT, "events.k8s.io/v1")
    assert can_convert("apps/v1beta1", "Deployment", "extensions/v1beta1")
    assert not can_convert("apps/v1beta1", "DaemonSet", "apps/v1")
    assert not can_convert("v1", "Pod", "apps/v1")
    with pytest.raises(ConversionError):
        convert({"apiVersion": "v1", "kind": "Pod", "metadata": {}}, "v2")
    with pytest.raises(ConversionError):
        convert(hpa_v2(), "events.k8s.io/v1")


def test_same_version_is_a_copy() -> None:
    obj = hpa_v2(metrics=[CPU50])
    out = convert(obj, "autoscaling/v2")
    assert out == obj and out is not obj and out["spec"] is not obj["spec"]


# ---------------------------------------------------------------------------
# Seed: the gpushare device plugin DaemonSet (extensions/v1beta1, no selector),
# from /work/shared/seeds/000_d9a084374b310a50.txt with its comments removed.
# ---------------------------------------------------------------------------

GPUSHARE_DS = """
apiVersion: extensions/v1beta1
kind: DaemonSet
metadata:
  name: gpushare-device-plugin-ds
  namespace: kube-system
spec:
  template:
    metadata:
      annotations:
        scheduler.alpha.kubernetes.io/critical-pod: ""
      labels:
        component: gpushare-device-plugin
        app: gpushare
        name: gpushare-device-plugin-ds
    spec:
      serviceAccount: gpushare-device-plugin
      hostNetwork: true
      nodeSelector:
        gpushare: "true"
      containers:
      - image: registry.cn-hangzhou.aliyuncs.com/acs/k8s-gpushare-plugin:v2-1.12-lihao-test
        name: gpushare
        command:
          - gpushare-device-plugin-v2
          - -logtostderr
          - --v=5
          - --memory-unit=GiB
        resources:
          limits:
            memory: "300Mi"
            cpu: "1"
          requests:
            memory: "300Mi"
            cpu: "1"
        env:
        - name: KUBECONFIG
          value: /etc/kubernetes/kubelet.conf
        - name: NODE_NAME
          valueFrom:
            fieldRef:
              fieldPath: spec.nodeName
        securityContext:
          allowPrivilegeEscalation: false
          capabilities:
            drop: ["ALL"]
        volumeMounts:
          - name: device-plugin
            mountPath: /var/lib/kubelet/device-plugins
      volumes:
        - name: device-plugin
          hostPath:
            path: /var/lib/kubelet/device-plugins
"""


def test_seed_gpushare_daemonset_becomes_valid_apps_v1() -> None:
    ds = yaml.safe_load(GPUSHARE_DS)
    assert "selector" not in ds["spec"]
    v1 = pure(ds, "apps/v1")
    valid(v1)
    labels = {"app": "gpushare", "component": "gpushare-device-plugin", "name": "gpushare-device-plugin-ds"}
    # What `kubectl describe` in the seed shows for Selector and Labels.
    assert v1["spec"]["selector"] == {"matchLabels": labels}
    assert v1["metadata"]["labels"] == labels
    assert v1["spec"]["updateStrategy"] == {"type": "OnDelete"}
    assert v1["spec"]["template"] == ds["spec"]["template"]
    assert v1["metadata"]["name"] == "gpushare-device-plugin-ds"
    assert v1["metadata"]["namespace"] == "kube-system"
    # And back out for an extensions/v1beta1 client.
    back = pure(v1, "extensions/v1beta1")
    assert back["apiVersion"] == "extensions/v1beta1"
    assert back["spec"]["selector"] == {"matchLabels": labels}

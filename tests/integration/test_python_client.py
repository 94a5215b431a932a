"""The official Python client against pyk8s: the dynamic client (discovery, CRUD, patches, server-side
apply, watch), utils.create_from_yaml and the typed watch."""

from __future__ import annotations

import os
import threading
import time

import pytest

from tests.cluster import BOTH_DATASTORES
from tests.shared_reference import MANIFESTS as SHARED_MANIFESTS

pytest.importorskip("kubernetes")
pytestmark = BOTH_DATASTORES  # the same answers from SQLite and from etcd

MANIFESTS = str(SHARED_MANIFESTS)


@pytest.fixture(scope="module")
def api(cluster):
    return cluster.api_client()


def test_dynamic_client_crud_patch_apply_and_watch(api):
    from kubernetes import dynamic

    dc = dynamic.DynamicClient(api)
    cm = dc.resources.get(api_version="v1", kind="ConfigMap")
    created = cm.create(body={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "dyn"},
                              "data": {"a": "1"}}, namespace="default")
    assert created.metadata.name == "dyn" and created.metadata.resourceVersion
    assert "dyn" in [i.metadata.name for i in cm.get(namespace="default").items]
    patched = cm.patch(name="dyn", namespace="default", body={"data": {"b": "2"}},
                       content_type="application/merge-patch+json")
    assert dict(patched.data) == {"a": "1", "b": "2"}
    patched = cm.patch(name="dyn", namespace="default", body=[{"op": "remove", "path": "/data/a"}],
                       content_type="application/json-patch+json")
    assert dict(patched.data) == {"b": "2"}

    dep = dc.resources.get(api_version="apps/v1", kind="Deployment")
    body = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "pyd", "namespace": "default"},
            "spec": {"selector": {"matchLabels": {"a": "b"}},
                     "template": {"metadata": {"labels": {"a": "b"}},
                                  "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}
    applied = dep.server_side_apply(body=body, field_manager="pytest")
    assert applied.spec.replicas == 1  # defaulted
    assert [m.manager for m in applied.metadata.managedFields if m.operation == "Apply"] == ["pytest"]

    # the deprecated workload versions are discoverable, so old manifests map to a resource
    assert dc.resources.get(api_version="extensions/v1beta1", kind="DaemonSet").name == "daemonsets"
    old = dc.resources.get(api_version="apps/v1beta2", kind="Deployment").get(name="pyd", namespace="default")
    assert old.apiVersion == "apps/v1beta2" and old.metadata.uid == applied.metadata.uid

    seen = []
    for ev in dc.watch(cm, namespace="default", timeout=5):
        seen.append((ev["type"], ev["object"].metadata.name))
        if ev["object"].metadata.name == "dyn":
            break
    assert ("ADDED", "dyn") in seen
    cm.delete(name="dyn", namespace="default")
    dep.delete(name="pyd", namespace="default")


def test_create_from_yaml_and_typed_watch(api):
    from kubernetes import client, utils, watch

    created = utils.create_from_yaml(api, os.path.join(MANIFESTS, "testdemo-deploy.yaml"), namespace="default")
    names = [o.metadata.name for group in created for o in (group if isinstance(group, list) else [group])]
    assert names == ["testdemo"]
    with pytest.raises(utils.FailToCreateError) as e:
        utils.create_from_yaml(api, os.path.join(MANIFESTS, "testdemo-deploy.yaml"), namespace="default")
    assert e.value.api_exceptions[0].status == 409

    v1 = client.CoreV1Api(api)

    def make() -> None:
        time.sleep(1)
        v1.create_namespaced_config_map("default", {"metadata": {"name": "typed-watch"}})
        v1.patch_namespaced_config_map("typed-watch", "default", {"data": {"x": "1"}})
        v1.delete_namespaced_config_map("typed-watch", "default")

    t = threading.Thread(target=make)
    t.start()
    events = []
    w = watch.Watch()
    for ev in w.stream(v1.list_namespaced_config_map, "default", timeout_seconds=10):
        if ev["object"].metadata.name == "typed-watch":
            events.append(ev["type"])
            if ev["type"] == "DELETED":
                w.stop()
    t.join()
    assert events == ["ADDED", "MODIFIED", "DELETED"]
    client.AppsV1Api(api).delete_namespaced_deployment(names[0], "default")

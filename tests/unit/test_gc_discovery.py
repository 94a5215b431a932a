"""The garbage collector monitors each stored resource once, even when an old group serves it too."""

from __future__ import annotations

from pyk8s.controllers.garbagecollector_metadata import APIResource, _without_legacy_aliases

VERBS = frozenset({"delete", "list", "watch"})


def res(group: str, version: str, plural: str, kind: str) -> APIResource:
    return APIResource(group, version, plural, kind, True, VERBS)


def test_extensions_aliases_of_apps_resources_are_not_monitored_twice():
    """extensions/v1beta1 replicasets are apps/v1 replicasets: two monitors would flip every owner's identity."""
    apps_rs, apps_deploy = res("apps", "v1", "replicasets", "ReplicaSet"), res("apps", "v1", "deployments", "Deployment")
    ext_rs, ext_deploy = res("extensions", "v1beta1", "replicasets", "ReplicaSet"), \
        res("extensions", "v1beta1", "deployments", "Deployment")
    only_ext = res("extensions", "v1beta1", "widgets", "Widget")
    kept = _without_legacy_aliases([apps_rs, ext_rs, apps_deploy, ext_deploy, only_ext, res("", "v1", "pods", "Pod")])
    assert kept == [apps_rs, apps_deploy, only_ext, res("", "v1", "pods", "Pod")]

"""typemeta: what kind/apiVersion a write may carry (pure logic; the server's answers are in
tests/integration/test_kind_integrity.py)."""

from __future__ import annotations

import pytest

from pyk8s.api.errors import StatusError
from pyk8s.api.resources import builtin_registry
from pyk8s.apiserver.typemeta import after_patch, check_storable, repair_cached
from pyk8s.apiserver.watchcache import CacheSet, ResourceCache

REG = builtin_registry()
CM = REG.get("", "v1", "configmaps")
HPA_V2 = REG.get("autoscaling", "v2", "horizontalpodautoscalers")


@pytest.mark.parametrize("obj, message", [
    ({"kind": "Secret", "apiVersion": "v1"},
     'Secret in version "v1" cannot be handled as a ConfigMap: converting (v1.Secret) to (core.ConfigMap): '
     "unknown conversion"),
    ({"kind": "ConfigMap", "apiVersion": "apps/v1"},
     'no kind "ConfigMap" is registered for version "apps/v1" in scheme "pkg/api/legacyscheme/scheme.go:30"'),
    ({"kind": 5, "apiVersion": "v1"}, "couldn't get version/kind"),
])
def test_a_foreign_kind_is_never_storable(obj: dict, message: str) -> None:
    with pytest.raises(StatusError) as e:
        check_storable(REG, CM, obj)
    assert e.value.code == 400 and message in e.value.message


def test_a_missing_kind_or_version_is_the_resources() -> None:
    for obj in ({}, {"kind": "ConfigMap"}, {"apiVersion": "v1"}, {"kind": "", "apiVersion": ""}):
        check_storable(REG, CM, obj)
        assert (obj["kind"], obj["apiVersion"]) == ("ConfigMap", "v1")


def test_patches_treat_kind_as_upstream() -> None:
    # strategic: ignored
    assert after_patch(REG, CM, {"kind": "Secret", "apiVersion": "apps/v1"}, strategic=True) == \
        {"kind": "ConfigMap", "apiVersion": "v1"}
    # JSON / merge: refused on field "patch", the patched object as the value
    with pytest.raises(StatusError) as e:
        after_patch(REG, CM, {"kind": "Deployment", "apiVersion": "apps/v1", "metadata": {"name": "x"}}, False)
    assert e.value.code == 422 and e.value.status()["details"]["causes"][0]["field"] == "patch"
    assert e.value.message.startswith(' "" is invalid: patch: Invalid value: "{\\"kind\\":\\"Deployment\\"')
    assert e.value.message.endswith("converting (v1.Deployment) to (core.ConfigMap): unknown conversion")
    # another served version of the same kind converts into the endpoint's
    hpa = {"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "h"},
           "spec": {"maxReplicas": 3, "scaleTargetRef": {"kind": "Deployment", "name": "d"},
                    "targetCPUUtilizationPercentage": 50}}
    out = after_patch(REG, HPA_V2, hpa, False)
    assert out["apiVersion"] == "autoscaling/v2"
    assert out["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"] == 50


def test_repair_reports_and_serves_foreign_rows_under_their_resource() -> None:
    good = {"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"name": "a"}}
    bad = {"kind": "Secret", "apiVersion": "v1", "metadata": {"name": "b"}}
    cache = ResourceCache("/registry/configmaps/")
    cache.load([("/registry/configmaps/ns/a", good), ("/registry/configmaps/ns/b", bad)], 7)
    caches = CacheSet(None)  # type: ignore[arg-type]  # (no store: nothing here reads or writes one)
    caches.caches[cache.prefix] = cache
    assert repair_cached(REG, caches) == ["/registry/configmaps/ns/b"]
    assert bad["kind"] == "ConfigMap" and good["kind"] == "ConfigMap"

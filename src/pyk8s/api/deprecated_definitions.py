"""OpenAPI definitions for the deprecated workload versions (extensions/v1beta1, apps/v1beta1, apps/v1beta2).

kubernetes-validate ships schemas from v1.25 on, long after these versions were removed
(v1.16), so their definitions are derived from apps/v1: the same objects under another
group-version-kind, with the few fields only the old versions had (a DaemonSet's
`templateGeneration`, a Deployment's `rollbackTo`) and the old optional selector (those
versions defaulted it from the template's labels). Everything else (strict decoding, patch
strategies, explain, the served OpenAPI) then works for them as for any built-in kind.
"""

from __future__ import annotations

import copy
from typing import Any

__all__ = ["deprecated_workload_definitions"]

_APPS_V1 = "io.k8s.api.apps.v1"
# (group, version, package name part) -> kinds, as in pyk8s.api.conversion's table
_VERSIONS: list[tuple[str, str, str, tuple[str, ...]]] = [
    ("extensions", "v1beta1", "io.k8s.api.extensions.v1beta1", ("DaemonSet", "Deployment", "ReplicaSet")),
    ("apps", "v1beta1", "io.k8s.api.apps.v1beta1", ("ControllerRevision", "Deployment", "StatefulSet")),
    ("apps", "v1beta2", "io.k8s.api.apps.v1beta2",
     ("ControllerRevision", "DaemonSet", "Deployment", "ReplicaSet", "StatefulSet")),
]
_TEMPLATE_GENERATION = {
    "description": "DEPRECATED. A sequence number representing a specific generation of the template. "
                   "Populated by the system. It can be set only during the creation.",
    "format": "int64",
    "type": ["integer", "null"],
}
_ROLLBACK_CONFIG = {
    "description": "DEPRECATED.",
    "properties": {
        "revision": {"description": "The revision to rollback to. If set to 0, rollback to the last revision.",
                     "format": "int64", "type": ["integer", "null"]},
    },
    "type": ["object", "null"],
}


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/$defs/{name}"}


def _retag(d: dict[str, Any], group: str, version: str, kind: str) -> dict[str, Any]:
    out = copy.deepcopy(d)
    props = out.get("properties") or {}
    api_version = f"{group}/{version}"
    if isinstance(props.get("apiVersion"), dict) and "enum" in props["apiVersion"]:
        props["apiVersion"]["enum"] = [api_version]
    if isinstance(props.get("kind"), dict) and "enum" in props["kind"]:
        props["kind"]["enum"] = [kind]
    out["x-kubernetes-group-version-kind"] = [{"group": group, "kind": kind, "version": version}]
    return out


def deprecated_workload_definitions(defs: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """New definitions (by name) for the old workload versions, derived from `defs` (the v1.33 set)."""
    out: dict[str, dict[str, Any]] = {}
    for group, version, pkg, kinds in _VERSIONS:
        old_selectors = group == "extensions" or version == "v1beta1"
        for kind in kinds:
            base = defs.get(f"{_APPS_V1}.{kind}")
            base_list = defs.get(f"{_APPS_V1}.{kind}List")
            if base is None or base_list is None:
                continue
            obj = _retag(base, group, version, kind)
            spec_name = f"{_APPS_V1}.{kind}Spec"
            if spec_name in defs:
                spec = copy.deepcopy(defs[spec_name])
                if old_selectors:
                    spec["required"] = [r for r in spec.get("required") or [] if r != "selector"] or None
                    if spec["required"] is None:
                        del spec["required"]
                if kind == "DaemonSet" and group == "extensions":
                    spec["properties"]["templateGeneration"] = copy.deepcopy(_TEMPLATE_GENERATION)
                if kind == "Deployment" and version == "v1beta1":
                    spec["properties"]["rollbackTo"] = {**_ref(f"{pkg}.RollbackConfig"), "description": "DEPRECATED."}
                    out[f"{pkg}.RollbackConfig"] = copy.deepcopy(_ROLLBACK_CONFIG)
                out[f"{pkg}.{kind}Spec"] = spec
                obj["properties"]["spec"] = {**obj["properties"]["spec"], **_ref(f"{pkg}.{kind}Spec")}
            out[f"{pkg}.{kind}"] = obj
            lst = _retag(base_list, group, version, f"{kind}List")
            items = lst["properties"]["items"]
            items["items"] = _ref(f"{pkg}.{kind}")
            out[f"{pkg}.{kind}List"] = lst
    return out

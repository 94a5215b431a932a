"""The /openapi/v2 and /openapi/v3 documents of a resource registry.

What clients need from them:
- `kubectl explain` reads /openapi/v3: the index, then one document per group-version;
  it finds a resource's kind through x-kubernetes-group-version-kind on its operations
  and the schema carrying the same GVK in components.schemas.
- `kubectl apply` looks for a PATCH operation with that GVK and a fieldValidation
  parameter before trusting server-side validation, and reads strategic merge patch
  metadata (x-kubernetes-patch-merge-key/strategy) from the schemas.

Documents are built lazily, serialized once (compact, sorted keys) and cached per
registry generation; each group-version document is rebuilt only when its own inputs
change, so adding a CRD does not rebuild the core documents.
"""

from __future__ import annotations

import hashlib
import threading
import weakref
from typing import Any

import orjson

from pyk8s import KUBERNETES_VERSION
from pyk8s.api.resources import Registry, Resource

from ._convert import closure, crd_definitions, refs_in
from ._paths import Op, discovery_op, op_to_v2, op_to_v3, path_params_v2, path_params_v3, resource_ops

__all__ = [
    "openapi_v2",
    "openapi_v2_etag",
    "openapi_v3_index",
    "openapi_v3_doc",
    "openapi_v3_etag",
    "gv_path",
]

_INFO = {"title": "Kubernetes", "version": KUBERNETES_VERSION}
_BEARER = {"BearerToken": {"description": "Bearer Token authentication", "in": "header", "name": "authorization",
                           "type": "apiKey"}}
_ALWAYS = {
    "io.k8s.apimachinery.pkg.apis.meta.v1.Status",
    "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions",
    "io.k8s.apimachinery.pkg.apis.meta.v1.WatchEvent",
    "io.k8s.apimachinery.pkg.apis.meta.v1.Patch",
}


def _dumps(doc: Any) -> bytes:
    return orjson.dumps(doc, option=orjson.OPT_SORT_KEYS)


def _hash(data: bytes) -> str:
    # upstream's index hash: uppercase hex SHA-512 of the document
    return hashlib.sha512(data).hexdigest().upper()


def gv_path(group: str, version: str) -> str:
    """The index key of a group-version: `api/v1`, `apis/apps/v1`."""
    return f"apis/{group}/{version}" if group else f"api/{version}"


def _fingerprint(resources: list[Resource]) -> bytes:
    """Everything a group-version document depends on, cheaply comparable."""
    parts = [
        (r.group, r.version, r.resource, r.kind, r.namespaced, sorted(r.verbs), sorted(r.subresources.items()), r.crd)
        for r in resources
    ]
    return orjson.dumps(parts, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS, default=str)


def _custom_defs(resources: list[Resource], v3: bool) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for r in resources:
        if r.crd is not None and "/" not in r.resource:
            out.update(crd_definitions(r.crd, r.version, v3))
    return out


def _assemble(ops: list[Op], v3: bool) -> dict[str, dict[str, Any]]:
    paths: dict[str, dict[str, Any]] = {}
    for o in ops:
        entry = paths.setdefault(o.path, {})
        entry[o.method] = op_to_v3(o) if v3 else op_to_v2(o)
        if "parameters" not in entry:
            entry["parameters"] = path_params_v3(o.path_params) if v3 else path_params_v2(o.path_params)
    return paths


def _schemas(paths: dict[str, Any], custom: dict[str, dict[str, Any]], v3: bool) -> dict[str, dict[str, Any]]:
    roots: set[str] = set(_ALWAYS) | set(custom)
    refs_in(paths, roots)
    return closure(roots, custom, v3)


class _State:
    """Cached documents of one registry."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.generation = -1
        self.groups: dict[str, list[Resource]] = {}  # gv path -> resources
        self.v2: tuple[bytes, str] | None = None
        self.v3: dict[str, tuple[bytes, bytes, str]] = {}  # gv path -> (fingerprint, doc, hash)
        self.index: dict[str, Any] | None = None

    def refresh(self, registry: Registry) -> None:
        if registry.generation == self.generation:
            return
        groups: dict[str, list[Resource]] = {}
        for r in sorted(registry.all(), key=lambda r: (r.group, r.version, r.resource)):
            if "/" in r.resource:
                continue
            groups.setdefault(gv_path(r.group, r.version), []).append(r)
        self.groups = groups
        self.v2 = None
        self.index = None
        self.v3 = {k: v for k, v in self.v3.items() if k in groups}
        self.generation = registry.generation

    def v2_doc(self) -> tuple[bytes, str]:
        if self.v2 is None:
            resources = [r for rs in self.groups.values() for r in rs]
            ops: list[Op] = []
            for rs in self.groups.values():
                ops.append(discovery_op(rs[0].group, rs[0].version))
                for r in rs:
                    ops.extend(resource_ops(r))
            paths = _assemble(ops, v3=False)
            custom = _custom_defs(resources, v3=False)
            doc = {
                "definitions": _schemas(paths, custom, v3=False),
                "info": _INFO,
                "paths": paths,
                "security": [{"BearerToken": []}],
                "securityDefinitions": _BEARER,
                "swagger": "2.0",
            }
            data = _dumps(doc)
            self.v2 = (data, _hash(data))
        return self.v2

    def v3_doc(self, path: str) -> tuple[bytes, str] | None:
        rs = self.groups.get(path)
        if not rs:
            return None
        fp = _fingerprint(rs)
        cached = self.v3.get(path)
        if cached is not None and cached[0] == fp:
            return cached[1], cached[2]
        ops = [discovery_op(rs[0].group, rs[0].version)]
        for r in rs:
            ops.extend(resource_ops(r))
        paths = _assemble(ops, v3=True)
        custom = _custom_defs(rs, v3=True)
        doc = {
            "components": {"schemas": _schemas(paths, custom, v3=True), "securitySchemes": _BEARER},
            "info": _INFO,
            "openapi": "3.0.0",
            "paths": paths,
        }
        data = _dumps(doc)
        h = _hash(data)
        self.v3[path] = (fp, data, h)
        return data, h

    def v3_index(self) -> dict[str, Any]:
        if self.index is None:
            paths = {}
            for path in self.groups:
                built = self.v3_doc(path)
                if built is not None:
                    paths[path] = {"serverRelativeURL": f"/openapi/v3/{path}?hash={built[1]}"}
            self.index = {"paths": paths}
        return self.index


_states: weakref.WeakKeyDictionary[Registry, _State] = weakref.WeakKeyDictionary()
_states_lock = threading.Lock()


def _state(registry: Registry) -> _State:
    with _states_lock:
        st = _states.get(registry)
        if st is None:
            st = _State()
            _states[registry] = st
    return st


def openapi_v2(registry: Registry) -> bytes:
    """The swagger 2.0 document (JSON bytes) for every served resource."""
    st = _state(registry)
    with st.lock:
        st.refresh(registry)
        return st.v2_doc()[0]


def openapi_v2_etag(registry: Registry) -> str:
    """ETag value (quoted hash) of the /openapi/v2 document."""
    st = _state(registry)
    with st.lock:
        st.refresh(registry)
        return f'"{st.v2_doc()[1]}"'


def openapi_v3_index(registry: Registry) -> dict[str, Any]:
    """`{"paths": {"api/v1": {"serverRelativeURL": "/openapi/v3/api/v1?hash=..."}, ...}}`."""
    st = _state(registry)
    with st.lock:
        st.refresh(registry)
        return st.v3_index()


def _normalize(path: str) -> str:
    path = path.split("?", 1)[0].strip("/")
    if path.startswith("openapi/v3/"):
        path = path[len("openapi/v3/"):]
    return path


def openapi_v3_doc(registry: Registry, group_version_path: str) -> bytes | None:
    """The OpenAPI 3.0 document of one group-version (`api/v1`, `apis/apps/v1`), or None."""
    st = _state(registry)
    with st.lock:
        st.refresh(registry)
        built = st.v3_doc(_normalize(group_version_path))
    return built[0] if built else None


def openapi_v3_etag(registry: Registry, group_version_path: str) -> str | None:
    """ETag value (quoted hash, the same hash the index advertises) of one v3 document."""
    st = _state(registry)
    with st.lock:
        st.refresh(registry)
        built = st.v3_doc(_normalize(group_version_path))
    return f'"{built[1]}"' if built else None

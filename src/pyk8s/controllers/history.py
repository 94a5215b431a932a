"""ControllerRevision helpers shared by the DaemonSet and StatefulSet controllers.

As upstream's pkg/controller/history: a revision is an immutable snapshot of a workload's
pod template (`data` holds a strategic-merge patch that replaces `spec.template`), named
`<parent>-<hash>`, numbered by `revision`, owned by its parent through a controller
reference. The hash is FNV-32a rendered with apimachinery's SafeEncodeString alphabet, so
names look like upstream's (`test-ds-7cdb9f7c5c`); the bytes hashed are our canonical JSON,
not Go's struct dump, so the values themselves differ from a real cluster's.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any

import orjson

from ..api.errors import StatusError
from ..client import Client
from .base import GVRS

__all__ = [
    "CONTROLLER_REVISION_HASH_LABEL",
    "STS_REVISION_HASH_LABEL",
    "fnv32a",
    "safe_encode",
    "compute_hash",
    "revision_name",
    "template_patch",
    "new_controller_revision",
    "revisions_equal",
    "sort_revisions",
    "next_revision",
    "max_revision",
    "controller_ref",
    "create_controller_revision",
]

# The pod label naming the revision a pod was made from (both DaemonSet and StatefulSet).
CONTROLLER_REVISION_HASH_LABEL = "controller-revision-hash"
# The label a StatefulSet's ControllerRevisions carry with their own hash.
STS_REVISION_HASH_LABEL = "controller.kubernetes.io/hash"

_ALPHANUMS = "bcdfghjklmnpqrstvwxz2456789"
_NAME_MAX = 223  # leaves room for "-<hash>" within 253, as upstream's ControllerRevisionName


def fnv32a(data: bytes) -> int:
    h = 0x811C9DC5
    for b in data:
        h ^= b
        h = (h * 0x01000193) & 0xFFFFFFFF
    return h


def safe_encode(s: str) -> str:
    """apimachinery's rand.SafeEncodeString: map each byte onto an alphabet without vowels."""
    return "".join(_ALPHANUMS[ord(c) % len(_ALPHANUMS)] for c in s)


def _canonical(obj: Any) -> bytes:
    return orjson.dumps(obj, option=orjson.OPT_SORT_KEYS)


def compute_hash(obj: Any, collision_count: int | None = None) -> str:
    """A stable short hash of a template (or revision data), salted by the collision count
    as upstream's controller.ComputeHash / history.HashControllerRevision."""
    data = _canonical(obj)
    if collision_count:
        # upstream appends the count's little-endian bytes to the hashed data
        data += int(collision_count).to_bytes(4, "little", signed=False)
    return safe_encode(str(fnv32a(data)))


def revision_name(parent: str, hash_: str) -> str:
    return f"{parent[:_NAME_MAX]}-{hash_}"


def template_patch(obj: dict[str, Any]) -> dict[str, Any]:
    """What a revision stores: a patch replacing spec.template (upstream's getPatch)."""
    template = copy.deepcopy((obj.get("spec") or {}).get("template") or {})
    template["$patch"] = "replace"
    return {"spec": {"template": template}}


def controller_ref(owner: dict[str, Any]) -> dict[str, Any]:
    md = owner["metadata"]
    return {"apiVersion": owner.get("apiVersion", ""), "kind": owner.get("kind", ""), "name": md["name"],
            "uid": md["uid"], "controller": True, "blockOwnerDeletion": True}


def new_controller_revision(parent: dict[str, Any], data: dict[str, Any], revision: int, hash_: str,
                            hash_label: str, annotations: dict[str, str] | None = None) -> dict[str, Any]:
    md = parent["metadata"]
    labels = dict((((parent.get("spec") or {}).get("template") or {}).get("metadata") or {}).get("labels") or {})
    labels[hash_label] = hash_
    meta: dict[str, Any] = {"name": revision_name(md["name"], hash_), "namespace": md.get("namespace"),
                            "labels": labels, "ownerReferences": [controller_ref(parent)]}
    if annotations:
        meta["annotations"] = dict(annotations)
    return {"apiVersion": "apps/v1", "kind": "ControllerRevision", "metadata": meta, "data": data,
            "revision": revision}


def revisions_equal(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Two revisions are the same snapshot when their data are equal (upstream compares raw bytes)."""
    return _canonical(a.get("data")) == _canonical(b.get("data"))


def sort_revisions(revisions: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Oldest first: by revision number, then creation time, then name."""
    return sorted(revisions, key=lambda r: (int(r.get("revision") or 0),
                                            (r.get("metadata") or {}).get("creationTimestamp") or "",
                                            (r.get("metadata") or {}).get("name") or ""))


def max_revision(revisions: Iterable[dict[str, Any]]) -> int:
    return max((int(r.get("revision") or 0) for r in revisions), default=0)


def next_revision(revisions: Iterable[dict[str, Any]]) -> int:
    return max_revision(revisions) + 1


async def create_controller_revision(client: Client, parent: dict[str, Any], revision: dict[str, Any],
                                     collision_count: int, hash_label: str) -> tuple[dict[str, Any], int]:
    """Create `revision`, named by the hash of its data salted with the collision count.

    As upstream's history.CreateControllerRevision: when the name is taken by a revision with
    different data (a hash collision), bump the count and try again; when it is taken by an
    equal revision, that one is the answer. Returns the revision and the final collision count.
    """
    ns = parent["metadata"].get("namespace")
    while True:
        clone = copy.deepcopy(revision)
        h = compute_hash(clone.get("data"), collision_count)
        clone["metadata"]["name"] = revision_name(parent["metadata"]["name"], h)
        clone["metadata"].setdefault("labels", {})[hash_label] = h
        try:
            return await client.create(GVRS["controllerrevisions"], clone, ns), collision_count
        except StatusError as e:
            if e.code != 409:
                raise
        existing = await client.get_or_none(GVRS["controllerrevisions"], clone["metadata"]["name"], ns)
        if existing is None:
            continue  # deleted meanwhile: try the same name again
        if revisions_equal(existing, clone):
            return existing, collision_count
        collision_count += 1

"""The garbage collector's dependency graph (upstream's GraphBuilder and node).

Nodes are keyed by uid. An owner that a dependent names but no informer has shown yet is
a *virtual* node, to be verified with a live GET by the collector. Graph changes are
processed on the event loop in informer order, as upstream's single graphChanges loop, and
produce work for two queues: attempt-to-delete and attempt-to-orphan.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger("pyk8s.controllers.garbagecollector")

__all__ = ["Identity", "Node", "Graph", "FOREGROUND", "ORPHAN", "refs_match", "group_of"]

FOREGROUND = "foregroundDeletion"
ORPHAN = "orphan"


def group_of(api_version: str) -> str:
    return api_version.rpartition("/")[0]


@dataclass(frozen=True)
class Identity:
    """An object's coordinates (upstream's objectReference): what an ownerReference names, plus namespace."""

    api_version: str
    kind: str
    name: str
    uid: str
    namespace: str = ""

    def __str__(self) -> str:
        # upstream's objectReference.String(), which appears in its event messages
        return f"[{self.api_version}/{self.kind}, namespace: {self.namespace}, name: {self.name}, uid: {self.uid}]"

    @classmethod
    def of_ref(cls, ref: dict[str, Any], namespace: str) -> Identity:
        return cls(ref.get("apiVersion", ""), ref.get("kind", ""), ref.get("name", ""), ref.get("uid", ""), namespace)

    @classmethod
    def of_obj(cls, obj: dict[str, Any]) -> Identity:
        md = obj.get("metadata") or {}
        return cls(obj.get("apiVersion", ""), obj.get("kind", ""), md.get("name", ""), md.get("uid", ""),
                   md.get("namespace") or "")


def refs_match(ref: dict[str, Any], ident: Identity) -> bool:
    """upstream's ownerReferenceMatchesCoordinates: uid, name, kind and API group (not version)."""
    return (ref.get("uid") == ident.uid and ref.get("name") == ident.name and ref.get("kind") == ident.kind
            and group_of(ref.get("apiVersion", "")) == group_of(ident.api_version))


@dataclass(eq=False)
class Node:
    identity: Identity
    owners: list[dict[str, Any]] = field(default_factory=list)
    dependents: set[Node] = field(default_factory=set)
    being_deleted: bool = False
    deleting_dependents: bool = False
    observed: bool = False

    def __hash__(self) -> int:
        return id(self)

    def blocking_dependents(self) -> list[Node]:
        """Dependents whose reference to this node has blockOwnerDeletion=true."""
        out = []
        for d in self.dependents:
            for r in d.owners:
                if r.get("uid") == self.identity.uid and r.get("blockOwnerDeletion"):
                    out.append(d)
                    break
        return out

    def __repr__(self) -> str:
        return f"Node({self.identity}{'' if self.observed else ', virtual'})"


def _has(obj: dict[str, Any], fin: str) -> bool:
    return fin in ((obj.get("metadata") or {}).get("finalizers") or [])


def _deleting(obj: dict[str, Any]) -> bool:
    return bool((obj.get("metadata") or {}).get("deletionTimestamp"))


def _starts(old: dict[str, Any] | None, new: dict[str, Any], fin: str) -> bool:
    """Deletion with `fin` began with this event (upstream's deletionStartsWithFinalizer)."""
    if not _deleting(new) or not _has(new, fin):
        return False
    return old is None or not _deleting(old) or not _has(old, fin)


def partition_dependents(deps: Iterable[Node], ident: Identity) -> tuple[list[Node], list[Node]]:
    """Dependents whose reference matches ident's coordinates, and those whose reference does not."""
    matching, nonmatching = [], []
    for d in deps:
        match = mismatch = False
        if ident.namespace and ident.namespace != d.identity.namespace:
            mismatch = True
        else:
            for r in d.owners:
                if r.get("uid") == ident.uid:
                    if refs_match(r, ident):
                        match = True
                    else:
                        mismatch = True
        if match:
            matching.append(d)
        if mismatch:
            nonmatching.append(d)
    return matching, nonmatching


class AbsentOwnerCache:
    """A bounded LRU of owner identities verified absent (saves live GETs for siblings)."""

    def __init__(self, size: int = 500) -> None:
        self.size = size
        self._d: OrderedDict[Identity, None] = OrderedDict()

    def add(self, ident: Identity) -> None:
        self._d[ident] = None
        self._d.move_to_end(ident)
        while len(self._d) > self.size:
            self._d.popitem(last=False)

    def __contains__(self, ident: object) -> bool:
        return ident in self._d


class Graph:
    def __init__(self, attempt_to_delete: Callable[[Node], None], attempt_to_orphan: Callable[[Node], None],
                 report_invalid_namespace: Callable[[Node, str], None]) -> None:
        self.nodes: dict[str, Node] = {}
        self.absent = AbsentOwnerCache()
        self._delete = attempt_to_delete
        self._orphan = attempt_to_orphan
        self._invalid_ns = report_invalid_namespace

    # ---- informer events ----------------------------------------------------------------
    def on_add(self, obj: dict[str, Any]) -> None:
        self.observe(obj, None)

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        self.observe(new, old)

    def on_delete(self, obj: dict[str, Any]) -> None:
        self.remove(Identity.of_obj(obj), virtual=False)

    # ---- graph changes ------------------------------------------------------------------
    def observe(self, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        ident = Identity.of_obj(obj)
        md = obj.get("metadata") or {}
        owners = list(md.get("ownerReferences") or [])
        node = self.nodes.get(ident.uid)
        if node is not None and not node.observed:
            if node.identity != ident:
                # the virtual node guessed other coordinates: dependents that disagree need checking
                _, bad = partition_dependents(node.dependents, ident)
                for dep in bad:
                    if ident.namespace and dep.identity.namespace != ident.namespace:
                        self._invalid_ns(dep, ident.uid)
                    self._delete(dep)
                node.identity = ident
            node.observed = True
        if node is None:
            node = Node(ident, owners, being_deleted=_deleting(obj),
                        deleting_dependents=_deleting(obj) and _has(obj, FOREGROUND), observed=True)
            self.nodes[ident.uid] = node
            self._add_to_owners(node, owners)
            self._transitions(old, obj, node)
            return
        if node.identity.api_version != ident.api_version or node.identity.kind != ident.kind:
            node.identity = ident
        added, removed, changed = _ref_diffs(node.owners, owners)
        if added or removed or changed:
            self._unblocked_owners(removed, changed)
            node.owners = owners
            self._add_to_owners(node, added)
            for r in removed:
                o = self.nodes.get(r.get("uid", ""))
                if o is not None:
                    o.dependents.discard(node)
        if _deleting(obj):
            node.being_deleted = True
        self._transitions(old, obj, node)

    def remove(self, ident: Identity, virtual: bool) -> None:
        node = self.nodes.get(ident.uid)
        if node is None:
            return
        remove = True
        if virtual:
            if not node.observed:
                matching, nonmatching = partition_dependents(node.dependents, ident)
                if nonmatching:
                    # some dependents name this uid with other coordinates: keep the node for them
                    remove = False
                    if matching:
                        self.absent.add(ident)
                        for d in matching:
                            self._delete(d)
                    if node.identity == ident:
                        alt = _alternate_identity(nonmatching, ident)
                        if alt is not None:
                            node.identity = alt
                            self._delete(node)
            elif node.identity != ident:
                remove = False  # never drop an observed node on a virtual event naming other coordinates
                matching, _ = partition_dependents(node.dependents, ident)
                if matching:
                    self.absent.add(ident)
                    for d in matching:
                        self._delete(d)
        if not remove:
            return
        del self.nodes[ident.uid]
        for r in node.owners:
            o = self.nodes.get(r.get("uid", ""))
            if o is not None:
                o.dependents.discard(node)
        if node.dependents:
            self.absent.add(ident)
        for d in list(node.dependents):
            self._delete(d)
        for r in node.owners:
            o = self.nodes.get(r.get("uid", ""))
            if o is not None and o.deleting_dependents:
                self._delete(o)  # it may be waiting for this very dependent

    # ---- helpers ------------------------------------------------------------------------
    def _transitions(self, old: dict[str, Any] | None, new: dict[str, Any], node: Node) -> None:
        if _starts(old, new, ORPHAN):
            self._orphan(node)
            return
        if _starts(old, new, FOREGROUND):
            node.deleting_dependents = True
            for d in list(node.dependents):
                self._delete(d)
            self._delete(node)

    def _add_to_owners(self, node: Node, owners: list[dict[str, Any]]) -> None:
        suspicious = False
        for r in owners:
            uid = r.get("uid", "")
            owner = self.nodes.get(uid)
            if owner is None:
                # an owner not seen yet: a virtual node the collector verifies with a live GET
                owner = Node(Identity.of_ref(r, node.identity.namespace), dependents={node})
                self.nodes[uid] = owner
                self._delete(owner)
                continue
            owner.dependents.add(node)
            if suspicious:
                continue
            ons = owner.identity.namespace
            if ons and ons != node.identity.namespace:
                if owner.observed:
                    # a namespaced owner in another namespace: never valid
                    self._invalid_ns(node, uid)
                suspicious = True
            elif not refs_match(r, owner.identity):
                suspicious = True
            elif not ons and ons != node.identity.namespace and not owner.observed:
                suspicious = True  # maybe a namespaced kind referenced by a cluster-scoped object
        if suspicious:
            self._delete(node)

    def _unblocked_owners(self, removed: list[dict[str, Any]], changed: list[tuple[dict[str, Any], dict[str, Any]]]) -> None:
        """A blocking reference went away: the owner may be waiting on it in foreground deletion."""
        for r in removed:
            if r.get("blockOwnerDeletion"):
                o = self.nodes.get(r.get("uid", ""))
                if o is not None:
                    self._delete(o)
        for old, new in changed:
            if old.get("blockOwnerDeletion") and not new.get("blockOwnerDeletion"):
                o = self.nodes.get(new.get("uid", ""))
                if o is not None:
                    self._delete(o)


def _ref_diffs(old: list[dict[str, Any]], new: list[dict[str, Any]]) -> tuple[
        list[dict[str, Any]], list[dict[str, Any]], list[tuple[dict[str, Any], dict[str, Any]]]]:
    by_uid = {r.get("uid"): r for r in old}
    added, changed = [], []
    for r in new:
        o = by_uid.pop(r.get("uid"), None)
        if o is None:
            added.append(r)
        elif o != r:
            changed.append((o, r))
    return added, list(by_uid.values()), changed


def _sort_key(i: Identity) -> tuple[str, str, str, str, str]:
    # kind and apiVersion first so identities of one kind sort together (as upstream's referenceLessThan)
    return (i.kind, i.api_version, i.namespace, i.name, i.uid)


def _alternate_identity(deps: list[Node], absent: Identity) -> Identity | None:
    """Another identity dependents use for absent.uid: the first sorting after absent, else the first."""
    seen = {absent}
    first: Identity | None = None
    following: Identity | None = None
    for d in deps:
        for r in d.owners:
            if r.get("uid") != absent.uid:
                continue
            if refs_match(r, absent) and (not absent.namespace or absent.namespace == d.identity.namespace):
                continue
            alt = Identity.of_ref(r, d.identity.namespace)
            if not absent.namespace and alt.api_version == absent.api_version and alt.kind == absent.kind:
                alt = Identity(alt.api_version, alt.kind, alt.name, alt.uid, "")
            if alt in seen:
                continue
            seen.add(alt)
            if first is None or _sort_key(alt) < _sort_key(first):
                first = alt
            if _sort_key(absent) < _sort_key(alt) and (following is None or _sort_key(alt) < _sort_key(following)):
                following = alt
    return following or first

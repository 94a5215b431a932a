"""API Priority and Fairness' configuration objects, kept as kube-apiserver v1.33 keeps them.

Upstream's config producer (k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap and
pkg/registry/flowcontrol/ensurer) creates the *mandatory* PriorityLevelConfigurations and
FlowSchemas (exempt, catch-all) and the *suggested* ones at start, and re-checks them every
minute:

* a missing object is created, annotated `apf.kubernetes.io/autoupdate-spec: "true"`;
* a mandatory object's spec is always put back (except the exempt level's concurrency
  numbers, which operators may tune);
* a suggested object's spec is put back only while the annotation says "true" (or, with no
  parsable annotation, while its generation is still 1): set it to "false" and edits stay;
* an object annotated "true" that is not in the bootstrap set is deleted.

Its config consumer then writes each FlowSchema's `Dangling` condition: False while the
referenced PriorityLevelConfiguration exists, True when it does not.

The request filter that classifies and queues requests by these objects is flowcontrol.py.

Sources: the objects follow upstream's bootstrap/default.go and a v1.27 cluster's
`kubectl get flowschemas,prioritylevelconfigurations`; the v1 fields the stored copy of
default.go predates (lendablePercent, the exempt level's `exempt` section) and the
endpoint-controller and probes schemas are written from the v1.33 release as we know it,
not checked line by line against its source.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from ..api import errors as E
from ..api.timefmt import now_rfc3339
from .rest import RequestContext

log = logging.getLogger("pyk8s.apiserver.flowcontrol")

__all__ = [
    "AUTO_UPDATE_ANNOTATION",
    "MANDATORY_FLOW_SCHEMAS",
    "MANDATORY_PRIORITY_LEVELS",
    "SUGGESTED_FLOW_SCHEMAS",
    "SUGGESTED_PRIORITY_LEVELS",
    "ensure_configuration",
    "update_dangling_conditions",
    "run",
]

GROUP = "flowcontrol.apiserver.k8s.io"
API_VERSION = GROUP + "/v1"
AUTO_UPDATE_ANNOTATION = "apf.kubernetes.io/autoupdate-spec"
PRODUCER = "api-priority-and-fairness-config-producer-v1"
CONSUMER = "api-priority-and-fairness-config-consumer-v1"
RESYNC_SECONDS = 60.0  # upstream re-ensures the configuration once a minute
DANGLING_CHECK_SECONDS = 2.0

# --- the objects (data of upstream's bootstrap package, v1.33) ---------------------------------


def _limited(shares: int, lendable: int, queues: int = 0, hand_size: int = 0, queue_length: int = 0) -> dict:
    response: dict[str, Any] = {"type": "Reject"}
    if queues:
        response = {"type": "Queue",
                    "queuing": {"queues": queues, "handSize": hand_size, "queueLengthLimit": queue_length}}
    return {"type": "Limited", "limited": {"nominalConcurrencyShares": shares, "lendablePercent": lendable,
                                           "limitResponse": response}}


def _priority_level(name: str, spec: dict) -> dict:
    return {"apiVersion": API_VERSION, "kind": "PriorityLevelConfiguration",
            "metadata": {"name": name, "annotations": {AUTO_UPDATE_ANNOTATION: "true"}}, "spec": spec}


def _group(name: str) -> dict:
    return {"kind": "Group", "group": {"name": name}}


def _user(name: str) -> dict:
    return {"kind": "User", "user": {"name": name}}


def _kube_system_sa(name: str) -> dict:
    return {"kind": "ServiceAccount", "serviceAccount": {"name": name, "namespace": "kube-system"}}


def _resources(verbs: list[str], groups: list[str], resources: list[str], namespaces: list[str],
               cluster_scope: bool) -> dict:
    rule: dict[str, Any] = {"verbs": verbs, "apiGroups": groups, "resources": resources, "namespaces": namespaces}
    if cluster_scope:
        rule["clusterScope"] = True
    return rule


_EVERYTHING = {"resourceRules": [_resources(["*"], ["*"], ["*"], ["*"], True)],
               "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}]}
_ELECTION = ["get", "create", "update"]


def _flow_schema(name: str, level: str, precedence: int, distinguisher: str, subjects: list[dict],
                 rules: dict | None = None) -> dict:
    spec: dict[str, Any] = {"priorityLevelConfiguration": {"name": level}, "matchingPrecedence": precedence}
    if distinguisher:
        spec["distinguisherMethod"] = {"type": distinguisher}
    spec["rules"] = [{"subjects": subjects, **(_EVERYTHING if rules is None else rules)}]
    return {"apiVersion": API_VERSION, "kind": "FlowSchema",
            "metadata": {"name": name, "annotations": {AUTO_UPDATE_ANNOTATION: "true"}}, "spec": spec}


_ALL_USERS = [_group("system:unauthenticated"), _group("system:authenticated")]
_NODES = [_group("system:nodes")]
_KCM = "system:kube-controller-manager"
_SCHEDULER = "system:kube-scheduler"

MANDATORY_PRIORITY_LEVELS = [
    _priority_level("exempt", {"type": "Exempt", "exempt": {"nominalConcurrencyShares": 0, "lendablePercent": 0}}),
    _priority_level("catch-all", _limited(5, 0)),
]
MANDATORY_FLOW_SCHEMAS = [
    _flow_schema("exempt", "exempt", 1, "", [_group("system:masters")]),
    _flow_schema("catch-all", "catch-all", 10000, "ByUser", _ALL_USERS),
]
SUGGESTED_PRIORITY_LEVELS = [
    _priority_level("system", _limited(30, 33, 64, 6, 50)),
    _priority_level("node-high", _limited(40, 25, 64, 6, 50)),
    _priority_level("leader-election", _limited(10, 0, 16, 4, 50)),
    _priority_level("workload-high", _limited(40, 50, 128, 6, 50)),
    _priority_level("workload-low", _limited(100, 90, 128, 6, 50)),
    _priority_level("global-default", _limited(20, 50, 128, 6, 50)),
]
SUGGESTED_FLOW_SCHEMAS = [
    _flow_schema("system-nodes", "system", 500, "ByUser", _NODES),
    _flow_schema("system-node-high", "node-high", 400, "ByUser", _NODES, {"resourceRules": [
        _resources(["*"], [""], ["nodes", "nodes/status"], ["*"], True),
        _resources(["*"], ["coordination.k8s.io"], ["leases"], ["*"], False),
    ]}),
    _flow_schema("probes", "exempt", 2, "", _ALL_USERS, {"nonResourceRules": [
        {"verbs": ["get"], "nonResourceURLs": ["/healthz", "/readyz", "/livez"]},
    ]}),
    _flow_schema("system-leader-election", "leader-election", 100, "ByUser",
                 [_user(_KCM), _user(_SCHEDULER), _kube_system_sa("*")], {"resourceRules": [
                     _resources(_ELECTION, [""], ["endpoints", "configmaps"], ["kube-system"], False),
                     _resources(_ELECTION, ["coordination.k8s.io"], ["leases"], ["*"], False),
                 ]}),
    _flow_schema("endpoint-controller", "workload-high", 150, "ByUser",
                 [_user(_KCM), _kube_system_sa("endpoint-controller"),
                  _kube_system_sa("endpointslicemirroring-controller")], {"resourceRules": [
                      _resources(_ELECTION, [""], ["endpoints"], ["*"], False),
                  ]}),
    _flow_schema("workload-leader-election", "leader-election", 200, "ByUser", [_kube_system_sa("*")],
                 {"resourceRules": [
                     _resources(_ELECTION, [""], ["endpoints", "configmaps"], ["*"], False),
                     _resources(_ELECTION, ["coordination.k8s.io"], ["leases"], ["*"], False),
                 ]}),
    _flow_schema("kube-controller-manager", "workload-high", 800, "ByNamespace", [_user(_KCM)]),
    _flow_schema("kube-scheduler", "workload-high", 800, "ByNamespace", [_user(_SCHEDULER)]),
    _flow_schema("kube-system-service-accounts", "workload-high", 900, "ByNamespace", [_kube_system_sa("*")]),
    _flow_schema("service-accounts", "workload-low", 9000, "ByUser", [_group("system:serviceaccounts")]),
    _flow_schema("global-default", "global-default", 9900, "ByUser", _ALL_USERS),
]

# --- the ensurer ----------------------------------------------------------------------------------


def _parse_bool(value: str | None) -> bool | None:
    """Go's strconv.ParseBool, None where it fails."""
    return {"1": True, "t": True, "T": True, "TRUE": True, "true": True, "True": True,
            "0": False, "f": False, "F": False, "FALSE": False, "false": False, "False": False}.get(value or "")


def _auto_update(obj: dict) -> bool:
    """Upstream's shouldUpdateSpec: the annotation decides; without a boolean there, generation 1 does."""
    parsed = _parse_bool(((obj.get("metadata") or {}).get("annotations") or {}).get(AUTO_UPDATE_ANNOTATION))
    if parsed is not None:
        return parsed
    return (obj.get("metadata") or {}).get("generation") == 1


def _wanted_spec(cur: dict, want: dict) -> dict:
    spec = want["spec"]
    if want["metadata"]["name"] == "exempt" and spec.get("type") == "Exempt":
        # operators may tune the exempt level's concurrency numbers (KEP-1040): keep theirs
        theirs = (cur.get("spec") or {}).get("exempt")
        if theirs is not None:
            spec = dict(spec, exempt=theirs)
    return spec


async def _ensure_one(server: Any, plural: str, want: dict, mandatory: bool) -> None:
    res = server.registry.get(GROUP, "v1", plural)
    name = want["metadata"]["name"]
    ctx = RequestContext(field_manager=PRODUCER)
    cur = await server.rest.get_current(res, None, name)
    if cur is None:
        try:
            await server.rest.create(res, None, want, ctx)
        except E.StatusError as e:
            if e.code != 409:  # another API server made it first
                raise
        return
    if not mandatory and not _auto_update(cur):
        return
    spec = _wanted_spec(cur, want)
    annotations = (cur.get("metadata") or {}).get("annotations") or {}
    if cur.get("spec") == spec and annotations.get(AUTO_UPDATE_ANNOTATION) == "true":
        return

    def put_back(c: dict[str, Any] | None) -> dict[str, Any]:
        assert c is not None
        c["spec"] = spec
        md = c.setdefault("metadata", {})
        md["annotations"] = {**(md.get("annotations") or {}), AUTO_UPDATE_ANNOTATION: "true"}
        return c

    await server.rest.update(res, None, name, put_back, ctx, retry_on_conflict=True)


async def ensure_configuration(server: Any) -> None:
    """Create missing bootstrap objects and put back the specs that auto-update allows (idempotent)."""
    for plural, objs, mandatory in (
        ("prioritylevelconfigurations", SUGGESTED_PRIORITY_LEVELS, False),
        ("flowschemas", SUGGESTED_FLOW_SCHEMAS, False),
        ("prioritylevelconfigurations", MANDATORY_PRIORITY_LEVELS, True),
        ("flowschemas", MANDATORY_FLOW_SCHEMAS, True),
    ):
        for want in objs:
            await _ensure_one(server, plural, want, mandatory)
    await _remove_unwanted(server)


async def _remove_unwanted(server: Any) -> None:
    """As upstream's RemoveUnwantedObjects: an auto-updated object the bootstrap set no longer has goes."""
    for plural, objs in (
        ("prioritylevelconfigurations", MANDATORY_PRIORITY_LEVELS + SUGGESTED_PRIORITY_LEVELS),
        ("flowschemas", MANDATORY_FLOW_SCHEMAS + SUGGESTED_FLOW_SCHEMAS),
    ):
        res = server.registry.get(GROUP, "v1", plural)
        cache = await server.rest.cache_for(res)
        await server.rest.fresh()
        wanted = {o["metadata"]["name"] for o in objs}
        for obj in list(cache.objects.values()):
            md = obj.get("metadata") or {}
            value = (md.get("annotations") or {}).get(AUTO_UPDATE_ANNOTATION)
            if md.get("name") in wanted or _parse_bool(value) is not True or md.get("deletionTimestamp"):
                continue
            try:
                await server.rest.delete(res, None, md["name"], {"preconditions": {"uid": md.get("uid")}},
                                         RequestContext(field_manager=PRODUCER))
            except E.StatusError as e:
                if e.code not in (404, 409):  # gone or replaced meanwhile
                    raise


def _dangling(level: str, exists: bool) -> dict[str, str]:
    prefix = f'This FlowSchema references the PriorityLevelConfiguration object named "{level}"'
    if exists:
        return {"type": "Dangling", "status": "False", "reason": "Found", "message": prefix + " and it exists"}
    return {"type": "Dangling", "status": "True", "reason": "NotFound",
            "message": prefix + " but there is no such object"}


async def update_dangling_conditions(server: Any) -> None:
    """Give every FlowSchema the Dangling condition upstream's config consumer writes."""
    rest = server.rest
    fs_res = server.registry.get(GROUP, "v1", "flowschemas")
    pl_cache = await rest.cache_for(server.registry.get(GROUP, "v1", "prioritylevelconfigurations"))
    fs_cache = await rest.cache_for(fs_res)
    await rest.fresh()
    levels = {(o.get("metadata") or {}).get("name") for o in list(pl_cache.objects.values())}
    ctx = RequestContext(field_manager=CONSUMER)
    for fs in list(fs_cache.objects.values()):
        level = ((fs.get("spec") or {}).get("priorityLevelConfiguration") or {}).get("name", "")
        want = _dangling(level, level in levels)
        conds = (fs.get("status") or {}).get("conditions") or []
        have = next((c for c in conds if c.get("type") == "Dangling"), None)
        if have is not None and all(have.get(k) == v for k, v in want.items()):
            continue

        def set_condition(c: dict[str, Any] | None, want: dict[str, str] = want) -> dict[str, Any]:
            assert c is not None
            status = c.setdefault("status", {})
            others = [x for x in status.get("conditions") or [] if x.get("type") != "Dangling"]
            old = next((x for x in status.get("conditions") or [] if x.get("type") == "Dangling"), None)
            when = old["lastTransitionTime"] if old and old.get("status") == want["status"] else now_rfc3339()
            status["conditions"] = [*others, {**want, "lastTransitionTime": when}]
            return c

        try:
            await rest.update(fs_res, None, fs["metadata"]["name"], set_condition, ctx, subresource="status",
                              retry_on_conflict=True)
        except E.StatusError as e:
            if e.code != 404:  # deleted meanwhile
                raise


async def run(server: Any) -> None:
    """Keep the configuration and the Dangling conditions up to date until cancelled."""
    loop = asyncio.get_running_loop()
    next_ensure = loop.time() + RESYNC_SECONDS
    while True:
        await asyncio.sleep(DANGLING_CHECK_SECONDS)
        try:
            if loop.time() >= next_ensure:
                next_ensure = loop.time() + RESYNC_SECONDS
                await ensure_configuration(server)
            await update_dangling_conditions(server)
        except asyncio.CancelledError:
            raise
        except Exception as e:  # keep the loop alive: the next round retries
            log.warning("API priority and fairness configuration: %s", e)

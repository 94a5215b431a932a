"""The ResourceQuota admission plug-in (upstream's plugin/pkg/admission/resourcequota).

A create (or an update of a service or claim) in a namespace with quotas is checked
against each quota that constrains it: pods must state the cpu/memory the quota limits
("failed quota: ..."), the quota's status must be known ("status unknown for quota:
..."), and used + requested must stay within hard ("exceeded quota: <name>, requested:
..., used: ..., limited: ..."), all 403 Forbidden. The request's usage is then charged to
each quota's status.used with a compare-and-swap write before the object is stored, so
concurrent creates cannot both take the last unit; the quota controller later recounts.
"""

from __future__ import annotations

from typing import Any

from ..api import errors as E
from ..api.quantity import Quantity
from ..api.resources import Resource
from ..quota.usage import (
    add,
    format_usage,
    matches_quota,
    matching_resources,
    pod_constraints,
    pretty,
    quantities,
    usage,
)
from .rest import RequestContext, RestStorage, deep_copy

__all__ = ["admit_quota"]

# updates that can change what an object uses (pods' resources change only through /resize)
_UPDATE_EVALUATED = {("", "services"), ("", "persistentvolumeclaims")}


def _forbidden(res: Resource, obj: dict[str, Any], msg: str) -> E.StatusError:
    return E.new_forbidden(res.resource, (obj.get("metadata") or {}).get("name", ""), msg, res.group)


async def admit_quota(rest: RestStorage, res: Resource, op: str, obj: dict[str, Any],
                      old: dict[str, Any] | None, ctx: RequestContext) -> None:
    if not res.namespaced or ctx.subresource:
        return
    if op == "UPDATE":
        if (res.group, res.resource) not in _UPDATE_EVALUATED:
            return
    elif op != "CREATE":
        return
    ns = (obj.get("metadata") or {}).get("namespace")
    if not ns:
        return
    quota_res = rest.registry.get("", "v1", "resourcequotas")
    if quota_res is None:
        return
    cache = await rest.cache_for(quota_res)
    if not cache.count(ns):  # most namespaces have no quota: every create asks
        return
    plural, group = res.resource, res.group
    quotas = sorted((q for q in cache.list(ns) if matches_quota(q, plural, group, obj)),
                    key=lambda q: q["metadata"]["name"])
    if not quotas:
        return
    for q in quotas:
        st = q.get("status") or {}
        hard_names = list(st.get("hard") or {})
        restricted = matching_resources(plural, group, hard_names)
        if plural == "pods" and not group:
            missing = pod_constraints(restricted, obj)
            if missing:
                raise _forbidden(res, obj, f"failed quota: {q['metadata']['name']}: {missing}")
        used = st.get("used") or {}
        if any(r not in used for r in restricted):
            raise _forbidden(res, obj, f"status unknown for quota: {q['metadata']['name']}, "
                                       f"resources: {','.join(sorted(restricted))}")
    delta = {k: v for k, v in usage(plural, group, obj).items() if not v.is_zero()}
    if op == "UPDATE" and old is not None and (old.get("metadata") or {}).get("resourceVersion"):
        before = usage(plural, group, old)
        delta = {k: v - before[k] if k in before else v for k, v in delta.items()}
        delta = {k: v for k, v in delta.items() if v.nanos > 0}
    if not delta:
        return
    for q in quotas:
        await _charge(rest, quota_res, res, obj, q["metadata"]["name"], ns, delta, ctx)


async def _charge(rest: RestStorage, quota_res: Resource, res: Resource, obj: dict[str, Any], name: str, ns: str,
                  delta: dict[str, Quantity], ctx: RequestContext) -> None:
    """Check against the stored quota and add the request to its used, atomically (retried on conflict)."""

    def mutate(cur: dict[str, Any] | None) -> dict[str, Any]:
        assert cur is not None
        st = cur.setdefault("status", {})
        hard = quantities(st.get("hard"))
        used = quantities(st.get("used"))
        requested = {k: v for k, v in delta.items() if k in hard}
        if not requested:
            return cur
        new_used = add(used, requested)
        exceeded = sorted(k for k in requested if new_used[k] > hard[k])
        if exceeded:
            zero = Quantity.from_int(0)
            raise _forbidden(res, obj, f"exceeded quota: {name}, "
                                       f"requested: {pretty({k: requested[k] for k in exceeded})}, "
                                       f"used: {pretty({k: used.get(k, zero) for k in exceeded})}, "
                                       f"limited: {pretty({k: hard[k] for k in exceeded})}")
        merged = dict(st.get("used") or {})
        merged.update(format_usage({k: new_used[k] for k in requested}))
        st["used"] = dict(sorted(merged.items()))
        return cur

    if ctx.dry_run:
        cur = await rest.get_current(quota_res, ns, name)
        if cur is not None:
            mutate(deep_copy(cur))  # only the check: a dry run charges nothing
        return
    inner = RequestContext(user=ctx.user, subresource="status", user_agent=ctx.user_agent)
    try:
        await rest.update(quota_res, ns, name, mutate, inner, subresource="status", retry_on_conflict=True)
    except E.StatusError as e:
        if e.code == 404:
            return  # the quota went away meanwhile
        raise

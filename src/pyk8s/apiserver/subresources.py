"""Subresources: scale, binding, eviction, serviceaccount token, namespace finalize, and the kubelet-backed ones."""

from __future__ import annotations

import time
from typing import Any

from aiohttp import web

from ..api import errors as E
from ..api.resources import Resource
from ..api.timefmt import format_time, now_rfc3339
from . import appkeys
from .audit.filter import add_annotation
from .negotiation import Output
from .request import RequestInfo
from .rest import RequestContext, deep_copy
from .token_request import ISSUED_CREDENTIAL_ID_ANNOTATION, credential_id, lifetime, resolve_binding

# ---- scale ----------------------------------------------------------------------------------


def _selector_string(obj: dict[str, Any]) -> str:
    sel = (obj.get("spec") or {}).get("selector")
    if sel is None:
        return ""
    if isinstance(sel, dict) and ("matchLabels" in sel or "matchExpressions" in sel):
        parts = [f"{k}={v}" for k, v in sorted((sel.get("matchLabels") or {}).items())]
        for e in sel.get("matchExpressions") or []:
            op, key, vals = e.get("operator"), e.get("key"), e.get("values") or []
            if op == "In":
                parts.append(f"{key} in ({','.join(sorted(vals))})")
            elif op == "NotIn":
                parts.append(f"{key} notin ({','.join(sorted(vals))})")
            elif op == "Exists":
                parts.append(key)
            elif op == "DoesNotExist":
                parts.append(f"!{key}")
        return ",".join(parts)
    if isinstance(sel, dict):  # ReplicationController: a plain map
        return ",".join(f"{k}={v}" for k, v in sorted(sel.items()))
    return ""


def _scale_paths(res: Resource) -> tuple[str, str, str | None]:
    if res.crd is not None:
        for v in (res.crd.get("spec") or {}).get("versions") or []:
            if v.get("name") == res.version:
                sc = ((v.get("subresources") or {}).get("scale")) or {}
                return (sc.get("specReplicasPath", ".spec.replicas"), sc.get("statusReplicasPath", ".status.replicas"),
                        sc.get("labelSelectorPath"))
    return ".spec.replicas", ".status.replicas", None


def _get_path(obj: Any, path: str) -> Any:
    for p in path.strip(".").split("."):
        if not isinstance(obj, dict):
            return None
        obj = obj.get(p)
    return obj


def _set_path(obj: dict[str, Any], path: str, value: Any) -> None:
    parts = path.strip(".").split(".")
    for p in parts[:-1]:
        obj = obj.setdefault(p, {})
    obj[parts[-1]] = value


def to_scale(res: Resource, obj: dict[str, Any]) -> dict[str, Any]:
    spec_p, status_p, sel_p = _scale_paths(res)
    md = obj["metadata"]
    scale: dict[str, Any] = {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {k: md[k] for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp") if k in md},
        "spec": {},
        "status": {"replicas": int(_get_path(obj, status_p) or 0)},
    }
    replicas = _get_path(obj, spec_p)
    if replicas is not None:
        scale["spec"]["replicas"] = replicas
    sel = _get_path(obj, sel_p) if sel_p else _selector_string(obj)
    if sel:
        scale["status"]["selector"] = sel
    return scale


async def get_scale(h: Any, res: Resource, ns: str | None, name: str) -> dict[str, Any]:
    return to_scale(res, await h.rest.get(res, ns, name))


async def _write_scale(h: Any, res: Resource, ns: str | None, name: str, scale: dict[str, Any],
                       ctx: RequestContext) -> dict[str, Any]:
    spec_p, _, _ = _scale_paths(res)
    replicas = (scale.get("spec") or {}).get("replicas", 0)
    if not isinstance(replicas, int) or replicas < 0:
        raise E.new_invalid("Scale", name, [E.FieldError("spec.replicas", "Invalid", replicas,
                                                         "must be greater than or equal to 0")], "autoscaling")
    want_rv = (scale.get("metadata") or {}).get("resourceVersion")

    def mutate(cur: dict[str, Any] | None) -> dict[str, Any]:
        assert cur is not None
        if want_rv and want_rv != cur["metadata"]["resourceVersion"]:
            raise E.new_conflict(res.resource, name, E.OBJECT_MODIFIED, res.group)
        _set_path(cur, spec_p, replicas)
        return cur

    obj, _ = await h.rest.update(res, ns, name, mutate, ctx, subresource="scale", retry_on_conflict=not want_rv)
    return to_scale(res, obj)


async def put_scale(h: Any, request: web.Request, res: Resource, ns: str | None, name: str,
                    ctx: RequestContext) -> dict[str, Any]:
    from .codec import decode_body

    raw = await request.read()
    scale = decode_body(raw, request.headers.get("Content-Type", "application/json"), "Scale")
    if not isinstance(scale, dict):
        from .codec import unrecognized
        from .handlers import not_an_object

        raise unrecognized("Scale", not_an_object(scale), raw)
    return await _write_scale(h, res, ns, name, scale, ctx)


async def patch_scale(h: Any, res: Resource, ns: str | None, name: str, ct: str, patch_doc: Any,
                      ctx: RequestContext) -> dict[str, Any]:
    from ..api import patch as P

    cur = to_scale(res, await h.rest.get(res, ns, name))
    if ct.endswith("json-patch+json"):
        new = P.apply_json_patch(cur, patch_doc)
    elif ct.endswith("strategic-merge-patch+json"):
        new = P.apply_strategic_merge_patch(cur, patch_doc, "autoscaling", "v1", "Scale")
    else:
        new = P.apply_merge_patch(cur, patch_doc)
    new.setdefault("metadata", {}).pop("resourceVersion", None)
    return await _write_scale(h, res, ns, name, new, ctx)


# ---- POST subresources ----------------------------------------------------------------------


# the kinds the POST subresources' bodies must be
_POST_KINDS = {"binding": "Binding", "eviction": "Eviction", "token": "TokenRequest"}
_POST_GROUP_VERSIONS = {"Binding": ("", "v1"), "Eviction": ("policy", "v1"),
                        "TokenRequest": ("authentication.k8s.io", "v1")}


async def post(h: Any, request: web.Request, res: Resource, ns: str | None, info: RequestInfo, out: Output,
               ctx: RequestContext) -> web.StreamResponse:
    from .codec import decode_body

    sub = info.subresource
    if not sub:
        raise E.new_method_not_supported(res.resource, "create", res.group)
    kind = _POST_KINDS.get(sub)
    body = None
    if kind is not None:
        raw = await request.read()
        body = decode_body(raw, request.headers.get("Content-Type", "application/json"), kind)
        if not isinstance(body, dict):
            from .codec import unrecognized
            from .handlers import not_an_object

            raise unrecognized(kind, not_an_object(body), raw)
        from ..api.schema import strict

        # decoded into its Go type, as upstream: values of the wrong type are refused, nulls are zero values
        errs, _ = strict.check_fields(*_POST_GROUP_VERSIONS[kind], kind, body)
        if errs:
            raise E.new_bad_request(errs[0])
    if res.group_kind == ("", "Pod") and sub == "binding":
        result = await bind(h, ns, info.name, body or {}, ctx)
        return h.respond(result, out, None, 201)
    if res.group_kind == ("", "Pod") and sub == "eviction":
        result = await evict(h, ns, info.name, body or {}, ctx)
        return h.respond(result, out, None, 201)
    if res.group_kind == ("", "ServiceAccount") and sub == "token":
        result = await request_token(h, request, ns, info.name, body or {}, ctx)
        return h.respond(result, out, None, 201)
    from . import proxying

    return await proxying.handle(h, request, res, ns, info, ctx)


async def get_other(h: Any, request: web.Request, res: Resource, ns: str | None, info: RequestInfo, out: Output,
                    ctx: RequestContext) -> web.StreamResponse:
    from . import proxying

    return await proxying.handle(h, request, res, ns, info, ctx)


async def bind(h: Any, ns: str | None, name: str, binding: dict[str, Any], ctx: RequestContext) -> dict[str, Any]:
    """Assign a pod to a node, as upstream's BindingREST: only once, and PodScheduled becomes True."""
    pods = h.registry.get("", "v1", "pods")
    target = (binding.get("target") or {})
    node = target.get("name", "")
    if not node:
        raise E.new_invalid("Binding", name, [E.FieldError("target.name", "Required")])
    bmd = binding.get("metadata") or {}

    def mutate(cur: dict[str, Any] | None) -> dict[str, Any]:
        assert cur is not None
        md = cur["metadata"]
        if md.get("deletionTimestamp"):
            raise E.new_conflict("pods/binding", name, f"pod {name} is being deleted, cannot be assigned to a host")
        assigned = (cur.get("spec") or {}).get("nodeName")
        if assigned:
            raise E.new_conflict("pods/binding", name, f'pod {name} is already assigned to node "{assigned}"')
        if bmd.get("uid") and bmd["uid"] != md.get("uid"):
            raise E.new_conflict("pods/binding", name, "Precondition failed: UID in precondition: "
                                 f"{bmd['uid']}, UID in object meta: {md.get('uid')}")
        cur["spec"]["nodeName"] = node
        if bmd.get("annotations"):
            md.setdefault("annotations", {}).update(bmd["annotations"])
        conds = cur.setdefault("status", {}).setdefault("conditions", [])
        for c in conds:
            if c.get("type") == "PodScheduled":
                if c.get("status") != "True":
                    c.update(status="True", lastTransitionTime=now_rfc3339())
                    c.pop("reason", None)
                    c.pop("message", None)
                break
        else:
            conds.append({"type": "PodScheduled", "status": "True", "lastProbeTime": None,
                          "lastTransitionTime": now_rfc3339()})
        return cur

    # binding writes spec and status together: it is its own subresource upstream
    # the cache may keep the bound pod if what the binding adds is plain strings (a YAML body may hold dates)
    ann = bmd.get("annotations")
    share = isinstance(node, str) and (not ann or isinstance(ann, dict) and all(
        isinstance(k, str) and isinstance(v, str) for k, v in ann.items()))
    await h.rest.update(pods, ns, name, mutate, ctx, subresource="binding", retry_on_conflict=True, share=share)
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}


async def evict(h: Any, ns: str | None, name: str, eviction: dict[str, Any], ctx: RequestContext) -> dict[str, Any]:
    """The eviction subresource: delete a pod unless a PodDisruptionBudget forbids it (429)."""
    from . import dryrun

    opts = dict(eviction.get("deleteOptions") or {})
    # (kubectl drain --dry-run=server says so here): the budget is checked, and neither it nor the pod written
    dryrun.from_delete_options(opts, ctx)
    pods = h.registry.get("", "v1", "pods")
    pod = await h.rest.get(pods, ns, name)
    await h.rest.admit_other(pods, "CREATE", ns, name, pod, ctx)
    phase = (pod.get("status") or {}).get("phase")
    if phase not in ("Succeeded", "Failed", "Pending") and not pod["metadata"].get("deletionTimestamp"):
        pdbs_res = h.registry.get("policy", "v1", "poddisruptionbudgets")
        cache = await h.rest.cache_for(pdbs_res)
        labels = pod["metadata"].get("labels") or {}
        from ..api import labels as L

        matching = []
        for pdb in cache.list(ns):
            sel = (pdb.get("spec") or {}).get("selector")
            if sel is None:
                continue
            if L.selector_from_label_selector(sel).matches(labels):
                matching.append(pdb)
        if len(matching) > 1:
            raise E.new_internal_error("This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.")
        for pdb in matching:
            st = pdb.get("status") or {}
            if st.get("observedGeneration", 0) < pdb["metadata"].get("generation", 1) \
                    or int(st.get("disruptionsAllowed", 0)) <= 0:
                raise E.StatusError(
                    429, "TooManyRequests",
                    "Cannot evict pod as it would violate the pod's disruption budget.",
                    {"causes": [{"reason": "DisruptionBudget",
                                 "message": f"The disruption budget {pdb['metadata']['name']} needs "
                                            f"{st.get('desiredHealthy', 0)} healthy pods and has "
                                            f"{st.get('currentHealthy', 0)} currently"}]},
                )

            def dec(cur: dict[str, Any] | None) -> dict[str, Any]:
                assert cur is not None
                s = cur.setdefault("status", {})
                if int(s.get("disruptionsAllowed", 0)) <= 0:
                    raise E.StatusError(429, "TooManyRequests",
                                        "Cannot evict pod as it would violate the pod's disruption budget.")
                s["disruptionsAllowed"] = int(s.get("disruptionsAllowed", 0)) - 1
                s.setdefault("disruptedPods", {})[name] = now_rfc3339()
                return cur

            await h.rest.update(pdbs_res, ns, pdb["metadata"]["name"], dec, ctx, subresource="status",
                                retry_on_conflict=True)
    await h.rest.delete(pods, ns, name, opts, ctx)
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}


async def request_token(h: Any, request: web.Request, ns: str | None, name: str, tr: dict[str, Any],
                        ctx: RequestContext) -> dict[str, Any]:
    """serviceaccounts/token: a bound, expiring JWT (TokenRequest API)."""
    sas = h.registry.get("", "v1", "serviceaccounts")
    sa = await h.rest.get(sas, ns, name)
    await h.rest.admit_other(sas, "CREATE", ns, name, tr, ctx)
    spec = dict(tr.get("spec") or {})
    exp = int(spec.get("expirationSeconds") or 3600)
    if exp < 600:
        raise E.new_invalid("TokenRequest", name, [E.FieldError("spec.expirationSeconds", "Invalid", exp,
                                                               "may not specify a duration less than 10 minutes")],
                            "authentication.k8s.io")
    if exp > 2 ** 32:
        raise E.new_invalid("TokenRequest", name, [E.FieldError("spec.expirationSeconds", "TooLong", exp,
                                                               "may not specify a duration larger than 2^32 seconds")],
                            "authentication.k8s.io")
    api_audiences = [request.app[appkeys.API_AUDIENCE]]
    audiences = spec.get("audiences") or api_audiences
    bound = spec.get("boundObjectRef")
    binding = await resolve_binding(h.rest, h.registry, ns, name, bound)
    valid_for, warn_after = exp, None
    if request.app[appkeys.SERVER].config.extend_token_expiration:  # kube-api-access: a year, warned
        valid_for, warn_after = lifetime(exp, binding, audiences, api_audiences)
    signer = request.app[appkeys.TOKEN_SIGNER]
    issued = time.time()  # before signing: the status's expiry is never after the token's
    token, _ = signer(ns, name, sa["metadata"]["uid"], audiences, valid_for, binding, warn_after)
    if cid := credential_id(token):
        add_annotation(ISSUED_CREDENTIAL_ID_ANNOTATION, cid)
    out = deep_copy(tr)
    out.update({"kind": "TokenRequest", "apiVersion": "authentication.k8s.io/v1"})
    out.setdefault("metadata", {}).update({"name": name, "namespace": ns, "creationTimestamp": format_time(issued)})
    out["spec"] = {"audiences": audiences, "expirationSeconds": exp, "boundObjectRef": bound}
    # the requested lifetime, also for an extended token, as upstream: the kubelet refreshes by it
    out["status"] = {"token": token, "expirationTimestamp": format_time(issued + exp)}
    return out

"""PATCH: JSON patch, merge patch, strategic merge patch and server-side apply, then the update path."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from ..api import errors as E
from ..api.resources import Resource
from ..api.timefmt import now_rfc3339
from . import typemeta
from .codec import decode_body
from .decode_errors import strategic_patch_invalid
from .rest import RequestContext, deep_copy

JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
APPLY = "application/apply-patch+yaml"


async def patch(h: Any, request: web.Request, res: Resource, ns: str | None, name: str,
                ctx: RequestContext) -> tuple[dict[str, Any], bool]:
    from ..api import patch as P

    if "patch" not in res.verbs:
        raise E.new_method_not_supported(res.resource, "patch", res.group)
    ct = request.headers.get("Content-Type", "").split(";")[0].strip().lower()
    if ct not in (JSON_PATCH, MERGE_PATCH, STRATEGIC, APPLY):
        raise E.StatusError(
            415, "UnsupportedMediaType",
            f"the body of the request was in an unknown format - accepted media types include: "
            f"{JSON_PATCH}, {MERGE_PATCH}, {STRATEGIC}, {APPLY}",
        )
    body = await request.read()
    patch_doc = decode_body(body, ct)
    q = request.query
    if ct == STRATEGIC and res.crd is not None:
        # as upstream: custom resources have no patch strategy metadata
        raise E.StatusError(415, "UnsupportedMediaType",
                            "the body of the request was in an unknown format - accepted media types include: "
                            f"{JSON_PATCH}, {MERGE_PATCH}, {APPLY}")
    if ct == JSON_PATCH and not isinstance(patch_doc, list):
        raise E.new_bad_request("json: cannot unmarshal object into Go value of type jsonpatch.Patch")
    if ct in (MERGE_PATCH, STRATEGIC, APPLY) and not isinstance(patch_doc, dict):
        raise E.new_bad_request("json: cannot unmarshal array into Go value of type map[string]interface {}")
    force = q.get("force", "").lower() == "true"
    if ct == APPLY:
        if not q.get("fieldManager"):  # apply names its manager itself: no default from the User-Agent
            from .query_params import options_invalid

            raise options_invalid("PatchOptions", [E.FieldError("fieldManager", "Required",
                                                                detail="is required for apply patch")])
    elif q.get("force"):
        raise E.new_invalid("PatchOptions", "", [E.FieldError("force", "Forbidden", detail="may not be specified for non-apply patch")])
    sub = ctx.subresource
    if sub == "scale":
        from . import subresources

        return await subresources.patch_scale(h, res, ns, name, ct, patch_doc, ctx), False

    def apply_patch(cur: dict[str, Any] | None) -> dict[str, Any]:
        cur_ext = h.from_storage(res, cur) if cur is not None else None
        if ct == APPLY:
            av = patch_doc.get("apiVersion")
            if av and av != res.api_version:  # as upstream's structured merge manager
                raise E.new_bad_request("Incorrect version specified in apply patch. "
                                        f"Specified patch version: {av}, expected: {res.api_version}")
            applied = h.check_object(deep_copy(patch_doc), res, ctx)
            schema = _crd_schema(res)
            new = P.server_side_apply(cur_ext, applied, ctx.field_manager, force, res.api_version, now_rfc3339(),
                                      schema=schema, kind=res.kind, subresource=sub,
                                      reset_fields=["status"] if res.crd is not None and "status" in res.subresources
                                      else None)
            if cur is None:
                new.setdefault("metadata", {})
        else:
            if cur_ext is None:
                raise E.new_not_found(res.resource, name, res.group)
            # cur_ext is this attempt's own copy (RestStorage.update copies the cached object): the
            # merge patches change it rather than copy it again
            if ct == JSON_PATCH:
                new = P.apply_json_patch(cur_ext, patch_doc)
            elif ct == MERGE_PATCH:
                new = P.apply_merge_patch(cur_ext, patch_doc, in_place=True)
            else:
                new = P.apply_strategic_merge_patch(cur_ext, patch_doc, res.group, res.version, res.kind,
                                                    in_place=True)
            if not isinstance(new, dict):
                raise E.new_bad_request("patch produced a non-object")
            new = typemeta.after_patch(h.registry, res, new, strategic=ct == STRATEGIC)
            try:
                h.check_fields(new, res, ctx)
            except E.StatusError as e:
                if ct != STRATEGIC:
                    raise
                # upstream converts the patched map into the typed object and names what it could not restore
                raise strategic_patch_invalid(e.message, patch_doc) or e from None
        return h.to_storage(res, new)

    ctx_apply = ctx
    if ct == APPLY:
        ctx_apply = RequestContext(**{**ctx.__dict__, "field_manager": ""})  # managedFields come from apply itself
        ctx_apply.warnings = ctx.warnings
    # the patched object is built from the cached one's copy and a JSON body (an apply's YAML may hold
    # other values): the watch cache may keep it; the handler only encodes the answer
    share = ct != APPLY and h._storage_api_version(res) == res.api_version
    obj, created = await h.rest.update(h.registry.storage_resource(res), ns, name, apply_patch, ctx_apply, subresource=sub,
                                       allow_create=(ct == APPLY), retry_on_conflict=True, share=share)
    ctx.committed = ctx_apply.committed  # (apply wrote under its own context)
    return obj, created


def _crd_schema(res: Resource) -> dict[str, Any] | None:
    for v in ((res.crd or {}).get("spec") or {}).get("versions") or []:
        if v.get("name") == res.version:
            return (v.get("schema") or {}).get("openAPIV3Schema")
    return None

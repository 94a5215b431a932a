"""The MutatingAdmissionWebhook and ValidatingAdmissionWebhook plug-ins, as upstream's dispatchers.

Mutating webhooks run one after another, ordered by configuration name then by their place in it;
each answer's JSONPatch is applied to the object the next one sees; webhooks with
reinvocationPolicy IfNeeded run once more when the object changed after they ran. Validating
webhooks run in parallel after validation; the first refusal (in webhook order) wins. Errors are
upstream's: `admission webhook "x" denied the request: <msg>` for a refusal, and for a webhook
that could not be called or answered nonsense, `failed calling webhook "x": ...` as an internal
error under failurePolicy Fail, and nothing under Ignore.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import logging
import uuid
from typing import Any

import orjson

from ...api import errors as E
from ...api.conversion import ConversionError, can_convert, convert
from ...api.patch.json_patch import apply_json_patch, decode_json_patch
from ...api.resources import Resource
from ..audit.filter import add_annotation, audited_at
from .client import CallError, WebhookClient
from .matching import ConditionError, Hook, authorizer_for, rule_matches

__all__ = ["Dispatcher", "EXEMPT_RESOURCES"]

log = logging.getLogger("pyk8s.webhooks")

# upstream never sends its admission configuration objects to webhooks (IsExemptAdmissionConfigurationResource)
EXEMPT_RESOURCES = frozenset((
    "validatingwebhookconfigurations", "mutatingwebhookconfigurations", "validatingadmissionpolicies",
    "validatingadmissionpolicybindings", "mutatingadmissionpolicies", "mutatingadmissionpolicybindings"))
_OPTIONS_KIND = {"CREATE": "CreateOptions", "UPDATE": "UpdateOptions", "DELETE": "DeleteOptions"}


class _Rejected(Exception):
    """A webhook's refusal or an error that failurePolicy does not soften."""

    def __init__(self, err: E.StatusError) -> None:
        super().__init__(err.message)
        self.err = err


def _calling_error(name: str, reason: str) -> E.StatusError:
    return E.new_internal_error(f'failed calling webhook "{name}": {reason}')


def _denied(name: str, result: Any) -> E.StatusError:
    """upstream's webhookerrors.ToStatusErr."""
    st = result if isinstance(result, dict) else {}
    code: int = st["code"] if isinstance(st.get("code"), int) else 0
    if code < 400:
        code = 400
    msg, reason = str(st.get("message") or ""), str(st.get("reason") or "")
    by = f'admission webhook "{name}" denied the request'
    if msg:
        text = f"{by}: {msg}"
    elif reason:
        text = f"{by}: {reason}"
    else:
        text = f"{by} without explanation"
    details = st.get("details") if isinstance(st.get("details"), dict) else None
    return E.StatusError(code, reason, text, details)


class Dispatcher:
    """Both plug-ins over the configurations in the watch cache."""

    def __init__(self, server: Any, mutating: bool = True, validating: bool = True,
                 credentials: dict[str, Any] | None = None) -> None:
        self.server = server
        self.enabled = {True: mutating, False: validating}
        self.client = WebhookClient(server, credentials)
        self.mutating_hooks: list[Hook] = []
        self.validating_hooks: list[Hook] = []
        self._equivalents: dict[tuple[str, str], list[Resource]] = {}

    # ---- configurations ---------------------------------------------------------------------
    def _cache(self, resource: str) -> Any:
        s = self.server
        r = s.registry.get("admissionregistration.k8s.io", "v1", resource)
        return s.caches.caches.get(s.registry.storage_resource(r).key_prefix()) if r is not None else None

    def follow(self) -> None:
        for resource, mutating in (("mutatingwebhookconfigurations", True), ("validatingwebhookconfigurations", False)):
            c = self._cache(resource)
            if c is None or not self.enabled[mutating]:
                continue
            c.listeners.append(lambda ce, c=c, m=mutating: self._rebuild(c, m))
            self._rebuild(c, mutating)

    def _rebuild(self, cache: Any, mutating: bool) -> None:
        """Prepare the hooks again on a configuration write (rare): an unchanged configuration
        (same resourceVersion) keeps its prepared hooks and compiled matchConditions."""
        old = {(h.configuration, h.version, h.index): h for h in
               (self.mutating_hooks if mutating else self.validating_hooks)}
        hooks: list[Hook] = []
        for cfg in sorted(cache.list(None), key=lambda o: o["metadata"]["name"]):
            name, rv = cfg["metadata"]["name"], str(cfg["metadata"].get("resourceVersion") or "")
            for i, spec in enumerate(cfg.get("webhooks") or []):
                if isinstance(spec, dict):
                    h = old.get((name, rv, i))
                    hooks.append(h if h is not None else Hook.build(name, spec, mutating, rv, i))
        if mutating:
            self.mutating_hooks = hooks
        else:
            self.validating_hooks = hooks

    # ---- matching ----------------------------------------------------------------------------
    def _equivalent(self, res: Resource) -> list[Resource]:
        """The other versions of the same group/resource: what matchPolicy Equivalent also matches."""
        k = (res.group, res.resource)
        out = self._equivalents.get(k)
        if out is None:
            out = [r for r in self.server.registry.all()
                   if r.group == res.group and r.resource == res.resource and r.version != res.version]
            self._equivalents[k] = out
        return out

    def _match_resource(self, h: Hook, res: Resource, op: str, sub: str) -> Resource | None:
        """The resource (version) the webhook is sent the request as, or None: the request's own
        (res), or under matchPolicy Equivalent another version of it the object converts to."""
        if any(rule_matches(r, op, res.group, res.version, res.resource, sub, res.namespaced) for r in h.rules):
            return res
        if h.exact:
            return None
        for eq in self._equivalent(res):
            if any(rule_matches(r, op, eq.group, eq.version, eq.resource, sub, eq.namespaced) for r in h.rules) \
                    and (eq.crd is not None or can_convert(res.api_version, res.kind, eq.api_version)):
                return eq
        return None

    async def _namespace_labels(self, res: Resource, namespace: str | None,
                                obj: dict[str, Any] | None) -> dict[str, str] | None:
        if res.group_kind == ("", "Namespace"):
            return ((obj or {}).get("metadata") or {}).get("labels") or {}
        if not res.namespaced or not namespace:
            return None  # cluster-scoped: the namespaceSelector does not apply
        ns_res = self.server.registry.get("", "v1", "namespaces")
        ns = await self.server.rest.get_current(ns_res, None, namespace, consistent=False)  # (a lister, as upstream)
        return ((ns or {}).get("metadata") or {}).get("labels") or {}

    async def _matches(self, h: Hook, res: Resource, op: str, sub: str, namespace: str | None,
                       obj: dict[str, Any] | None, old: dict[str, Any] | None, ctx: Any) -> Resource | None:
        as_res = self._match_resource(h, _requested(res, ctx), op, sub)
        if as_res is None:
            return None
        if h.object_selector is not None:
            sel = h.object_selector
            if not any(o is not None and sel.matches(((o.get("metadata") or {}).get("labels")) or {})
                       for o in (obj, old)):
                return None
        if h.namespace_selector is not None:
            labels = await self._namespace_labels(res, namespace, obj if obj is not None else old)
            if labels is not None and not h.namespace_selector.matches(labels):
                return None
        return as_res

    # ---- the review ----------------------------------------------------------------------------
    def _review(self, h: Hook, as_res: Resource, res: Resource, op: str, sub: str, namespace: str | None,
                name: str, obj: dict[str, Any] | None, old: dict[str, Any] | None, ctx: Any) -> dict[str, Any]:
        version = "admission.k8s.io/v1" if "v1" in h.review_versions else "admission.k8s.io/v1beta1"

        def typed(o: dict[str, Any] | None) -> dict[str, Any] | None:
            try:
                return None if o is None else _convert(o, res, as_res)
            except ConversionError as e:
                raise _Rejected(E.new_internal_error(str(e))) from None

        asked = _requested(res, ctx)

        user: Any = getattr(ctx, "user", None)
        ui: dict[str, Any] = {"username": getattr(user, "name", "") or ""}
        if getattr(user, "uid", ""):
            ui["uid"] = user.uid
        if getattr(user, "groups", None):
            ui["groups"] = list(user.groups)
        if getattr(user, "extra", None):
            ui["extra"] = {k: list(v) for k, v in user.extra.items()}
        opts: dict[str, Any] = {"kind": _OPTIONS_KIND.get(op, "CreateOptions"), "apiVersion": "meta.k8s.io/v1"}
        if ctx.dry_run:
            opts["dryRun"] = ["All"]
        if ctx.field_manager and op != "DELETE":
            opts["fieldManager"] = ctx.field_manager
        req: dict[str, Any] = {
            "uid": str(uuid.uuid4()),
            "kind": {"group": as_res.group, "version": as_res.version, "kind": as_res.kind},
            "resource": {"group": as_res.group, "version": as_res.version, "resource": as_res.resource},
            "requestKind": {"group": asked.group, "version": asked.version, "kind": asked.kind},
            "requestResource": {"group": asked.group, "version": asked.version, "resource": asked.resource},
        }
        if sub:
            req["subResource"] = sub
            req["requestSubResource"] = sub
        if name:
            req["name"] = name
        if namespace:
            req["namespace"] = namespace
        req.update({"operation": op, "userInfo": ui, "object": typed(obj), "oldObject": typed(old),
                    "dryRun": bool(ctx.dry_run), "options": opts})
        return {"kind": "AdmissionReview", "apiVersion": version, "request": req}

    def _conditions(self, h: Hook, review: dict[str, Any], ctx: Any) -> bool:
        """matchConditions; False skips the webhook. Errors fail per failurePolicy."""
        if not h.conditions and not h.condition_error:
            return True
        req = review["request"]
        try:
            authz = getattr(self.server, "authorizer", None)
            return h.conditions_match({"object": req["object"], "oldObject": req["oldObject"], "request": req,
                                       "authorizer": authorizer_for(getattr(authz, "authorize", None),
                                                                    getattr(ctx, "user", None))})
        except ConditionError as e:
            if h.fail_open:
                log.warning("webhook %s: matchConditions failed, ignored: %s", h.name, e)
                return False
            raise _Rejected(_calling_error(h.name, f"failed to evaluate match condition: {e}")) from None

    def _check_dry_run(self, h: Hook, ctx: Any) -> None:
        if ctx.dry_run and h.side_effects not in ("None", "NoneOnDryRun"):
            raise _Rejected(E.new_bad_request(f'admission webhook "{h.name}" does not support dry run'))

    async def _call(self, h: Hook, review: dict[str, Any]) -> dict[str, Any] | None:
        """The verified response; None when the call failed under failurePolicy Ignore."""
        try:
            if "v1" not in h.review_versions and "v1beta1" not in h.review_versions:
                raise CallError("webhook does not accept v1 or v1beta1 AdmissionReview")
            try:
                out = await self.client.post(h.spec.get("clientConfig") or {}, review, h.timeout)
                _decodes(out)
            except CallError as e:
                raise CallError(f"failed to call webhook: {e}") from None
            try:
                return _verify(out, review, h.mutating)
            except CallError as e:
                raise CallError(f"received invalid webhook response: {e}") from None
        except CallError as e:
            if h.fail_open:
                log.warning("failed calling webhook, failing open %s: %s", h.name, e)
                return None
            log.warning("failed calling webhook, failing closed %s: %s", h.name, e)
            raise _Rejected(_calling_error(h.name, str(e))) from None

    def _after(self, h: Hook, resp: dict[str, Any], ctx: Any) -> None:
        for w in resp.get("warnings") or []:
            if isinstance(w, str) and w:
                ctx.warnings.append(w)
        for k, v in (resp.get("auditAnnotations") or {}).items():
            if isinstance(v, str):
                add_annotation(f"{h.name}/{k}", v)
        if not resp.get("allowed"):
            raise _Rejected(_denied(h.name, resp.get("status")))

    # ---- mutating ------------------------------------------------------------------------------
    async def mutate(self, rest: Any, res: Resource, op: str, obj: dict[str, Any], old: dict[str, Any] | None,
                     ctx: Any) -> None:
        if not self.mutating_hooks or res.resource in EXEMPT_RESOURCES:
            return
        sub = ctx.subresource or ""
        md = obj.get("metadata") or {}
        namespace = md.get("namespace") if res.namespaced else None
        system = {k: md[k] for k in ("uid", "creationTimestamp") if k in md}
        try:
            await self._mutate(res, op, sub, namespace, obj, old, ctx)
        except _Rejected as r:
            raise r.err from None
        nmd = obj.setdefault("metadata", {})
        # as upstream's EnsureObjectNamespaceMatchesRequestNamespace after admission: a patch may not move
        # the object; an emptied namespace is the request's; a cluster-scoped object has none
        if not res.namespaced:
            nmd.pop("namespace", None)
        elif not nmd.get("namespace"):
            nmd["namespace"] = namespace
        elif nmd["namespace"] != namespace:
            raise E.new_bad_request("the namespace of the provided object does not match the namespace sent on "
                                    "the request")
        if op == "CREATE":
            nmd.update(system)  # upstream fills the system fields after mutating admission

    async def _mutate(self, res: Resource, op: str, sub: str, namespace: str | None, obj: dict[str, Any],
                      old: dict[str, Any] | None, ctx: Any) -> None:
        hooks = list(self.mutating_hooks)
        seen_after: dict[int, bytes] = {}  # reinvocable hook index -> the object as it left it
        for rnd in (0, 1):
            changed_any = False
            for i, h in enumerate(hooks):
                if rnd == 1:
                    if i not in seen_after or seen_after[i] == orjson.dumps(obj, option=orjson.OPT_SORT_KEYS):
                        continue
                mutated = await self._mutate_one(h, i, rnd, res, op, sub, namespace, obj, old, ctx)
                if mutated is None:
                    continue
                changed_any = changed_any or mutated
                if rnd == 0 and h.reinvoke:
                    seen_after[i] = orjson.dumps(obj, option=orjson.OPT_SORT_KEYS)
            if rnd == 0 and not changed_any:
                return

    async def _mutate_one(self, h: Hook, index: int, rnd: int, res: Resource, op: str, sub: str,
                          namespace: str | None, obj: dict[str, Any], old: dict[str, Any] | None,
                          ctx: Any) -> bool | None:
        """Call one mutating webhook and apply its patch: whether it changed the object; None: not called."""
        name = (obj.get("metadata") or {}).get("name") or ""
        as_res = await self._matches(h, res, op, sub, namespace, obj, old, ctx)
        if as_res is None:
            return None
        review = self._review(h, as_res, res, op, sub, namespace, name, obj, old, ctx)
        if not self._conditions(h, review, ctx):
            return None
        self._check_dry_run(h, ctx)
        resp = await self._call(h, review)
        if resp is None:
            return None
        self._after(h, resp, ctx)
        patched = False
        patch_b64 = resp.get("patch")
        if patch_b64:
            ops = _decode_patch(h.name, patch_b64)
            if ops:
                if op == "DELETE":
                    raise _Rejected(E.new_internal_error(
                        f'admission webhook "{h.name}" attempted to modify the object, which is not supported '
                        "for this operation"))
                try:
                    new = apply_json_patch(review["request"]["object"], ops)
                except E.StatusError as e:
                    raise _Rejected(E.new_internal_error(e.message)) from None
                if not isinstance(new, dict):
                    raise _Rejected(E.new_internal_error("json: cannot unmarshal into Go value of type map"))
                try:
                    new = _convert(new, as_res, res)  # back to the version stored
                except ConversionError as e:
                    raise _Rejected(E.new_internal_error(str(e))) from None
                new.pop("apiVersion", None)
                new.pop("kind", None)
                for k in ("apiVersion", "kind"):
                    if k in obj:
                        new[k] = obj[k]
                patched = new != {k: v for k, v in obj.items()}
                obj.clear()
                obj.update(new)
                if audited_at("Request"):  # the patch may carry the object's content, as upstream
                    add_annotation(f"patch.webhook.admission.k8s.io/round_{rnd}_index_{index}", orjson.dumps(
                        {"configuration": h.configuration, "webhook": h.name, "patch": ops,
                         "patchType": "JSONPatch"}).decode())
        add_annotation(f"mutation.webhook.admission.k8s.io/round_{rnd}_index_{index}", orjson.dumps(
            {"configuration": h.configuration, "webhook": h.name, "mutated": patched}).decode())
        return patched

    # ---- validating ----------------------------------------------------------------------------
    async def validate(self, rest: Any, res: Resource, op: str, obj: dict[str, Any], old: dict[str, Any] | None,
                       ctx: Any) -> None:
        if not self.validating_hooks or res.resource in EXEMPT_RESOURCES:
            return
        md = obj.get("metadata") or {}
        try:
            await self._validate(res, op, ctx.subresource or "", md.get("namespace") if res.namespaced else None,
                                 md.get("name") or "", obj, old, ctx)
        except _Rejected as r:
            raise r.err from None

    async def validate_delete(self, rest: Any, res: Resource, op: str, namespace: str | None, name: str,
                              obj: dict[str, Any], ctx: Any) -> None:
        """DELETE (rest.other_admission): the stored object is the oldObject; mutating webhooks see it too."""
        if op != "DELETE" or res.resource in EXEMPT_RESOURCES:
            return
        if self.mutating_hooks:
            try:
                for i, h in enumerate(list(self.mutating_hooks)):
                    await self._mutate_one_delete(h, i, res, namespace, name, obj, ctx)
            except _Rejected as r:
                raise r.err from None
        if self.validating_hooks:
            try:
                await self._validate(res, op, "", namespace, name, None, obj, ctx)
            except _Rejected as r:
                raise r.err from None

    async def _mutate_one_delete(self, h: Hook, index: int, res: Resource, namespace: str | None, name: str,
                                 old: dict[str, Any], ctx: Any) -> None:
        as_res = await self._matches(h, res, "DELETE", "", namespace, None, old, ctx)
        if as_res is None:
            return
        review = self._review(h, as_res, res, "DELETE", "", namespace, name, None, old, ctx)
        if not self._conditions(h, review, ctx):
            return
        self._check_dry_run(h, ctx)
        resp = await self._call(h, review)
        if resp is None:
            return
        self._after(h, resp, ctx)
        if resp.get("patch") and _decode_patch(h.name, resp["patch"]):
            raise _Rejected(E.new_internal_error(
                f'admission webhook "{h.name}" attempted to modify the object, which is not supported '
                "for this operation"))

    async def _validate(self, res: Resource, op: str, sub: str, namespace: str | None, name: str,
                        obj: dict[str, Any] | None, old: dict[str, Any] | None, ctx: Any) -> None:
        todo = []
        for h in list(self.validating_hooks):
            as_res = await self._matches(h, res, op, sub, namespace, obj, old, ctx)
            if as_res is not None:
                todo.append((h, self._review(h, as_res, res, op, sub, namespace, name, obj, old, ctx)))
        if not todo:
            return
        results = await asyncio.gather(*(self._validate_one(h, review, ctx) for h, review in todo),
                                       return_exceptions=True)
        for r in results:
            if isinstance(r, _Rejected):
                raise r.err
            if isinstance(r, BaseException):
                raise r

    async def _validate_one(self, h: Hook, review: dict[str, Any], ctx: Any) -> None:
        if not self._conditions(h, review, ctx):
            return
        self._check_dry_run(h, ctx)
        resp = await self._call(h, review)
        if resp is not None:
            self._after(h, resp, ctx)


def _requested(res: Resource, ctx: Any) -> Resource:
    """The resource the request named: admission is handed the storage one (res)."""
    r = getattr(ctx, "resource", None)
    return r if isinstance(r, Resource) and (r.group, r.resource) == (res.group, res.resource) else res


def _convert(obj: dict[str, Any], src: Resource, dst: Resource) -> dict[str, Any]:
    """obj (of src's version) in dst's version, with dst's apiVersion and kind (matchPolicy Equivalent)."""
    body = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind")}
    if src.api_version == dst.api_version or dst.crd is not None:
        return {"apiVersion": dst.api_version, "kind": dst.kind, **body}
    return convert({"apiVersion": src.api_version, "kind": src.kind, **body}, dst.api_version)


def _decode_patch(name: str, patch_b64: Any) -> list[dict[str, Any]]:
    """The JSONPatch operations of a response's base64 patch; an internal error when it does not decode."""
    try:
        raw = base64.b64decode(str(patch_b64), validate=True)
        return decode_json_patch(orjson.loads(raw))
    except (binascii.Error, ValueError, orjson.JSONDecodeError) as e:
        raise _Rejected(E.new_internal_error(str(e))) from None
    except E.StatusError as e:
        raise _Rejected(E.new_internal_error(e.message)) from None


def _unmarshal(v: Any, field: str, go: str) -> str:
    kind = {bool: "bool", str: "string", int: "number", float: "number", list: "array", dict: "object"}.get(
        type(v), "value")
    return f"json: cannot unmarshal {kind} into Go struct field {field} of type {go}"


def _decodes(out: dict[str, Any]) -> None:
    """What Go's decoding of the answer into an AdmissionReview refuses (a "false" string is no bool)."""
    resp = out.get("response")
    if resp is not None and not isinstance(resp, dict):
        raise CallError(_unmarshal(resp, "AdmissionReview.response", "v1.AdmissionResponse"))
    for field, want, go in (("uid", str, "types.UID"), ("allowed", bool, "bool"), ("patch", str, "[]uint8"),
                            ("patchType", str, "v1.PatchType"), ("warnings", list, "[]string"),
                            ("auditAnnotations", dict, "map[string]string"), ("status", dict, "v1.Status")):
        v = (resp or {}).get(field)
        if v is not None and not isinstance(v, want):
            raise CallError(_unmarshal(v, f"AdmissionResponse.response.{field}", go))


def _verify(out: dict[str, Any], review: dict[str, Any], mutating: bool) -> dict[str, Any]:
    """upstream's VerifyAdmissionResponse: the answer to this review, of the version sent."""
    resp = out.get("response")
    if resp is None:
        raise CallError("webhook response was absent")
    uid = review["request"]["uid"]
    if resp.get("uid") != uid:
        raise CallError(f'expected response.uid="{uid}", got "{resp.get("uid") or ""}"')
    sent = review["apiVersion"]
    if sent == "admission.k8s.io/v1":
        got_gv, got_kind = str(out.get("apiVersion") or ""), str(out.get("kind") or "")
        if (got_gv, got_kind) != (sent, "AdmissionReview"):
            g, _, v = got_gv.rpartition("/")
            raise CallError(f"expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, "
                            f"got {g}/{v}, Kind={got_kind}")
        patch_type = resp.get("patchType") or ""
        if resp.get("patch") or patch_type:
            if not mutating:
                raise CallError("validating webhooks may not return patches")
            if not resp.get("patch"):
                raise CallError("webhook returned response.patchType but not response.patch")
            if patch_type != "JSONPatch":
                raise CallError(f'webhook returned invalid response.patchType of "{patch_type}"')
    elif not mutating:
        resp = {k: v for k, v in resp.items() if k not in ("patch", "patchType")}  # v1beta1: ignored
    return resp

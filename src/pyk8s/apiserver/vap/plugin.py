"""The ValidatingAdmissionPolicy admission plug-in (upstream's admission/plugin/policy/validating).

For each request (not on admissionregistration.k8s.io's own configuration resources, as
upstream exempts them): every policy whose matchConstraints match, with each of its bindings
whose matchResources match, is evaluated once per parameter object its paramRef selects. Its
matchConditions must all be true; then every validation is judged and its audit annotations
computed. A failed validation (or, under failurePolicy Fail, an error) goes to the binding's
validationActions: Deny refuses the request with the first such decision, Warn answers a
`Warning` header, Audit adds the `validation.policy.admission.k8s.io/validation_failure` audit
annotation. Policies and bindings come from the watch cache and are compiled once per generation.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson

from ...api import errors as E
from ...api.resources import Resource
from ..audit.filter import add_annotation
from ..rest import RequestContext, RestStorage
from . import authzlib
from .celenv import EvalError, LazyMap, cel_type_name, to_cel
from .compiled import Compiled, CompiledPolicy, compile_policy
from .matching import Attributes, matches, selector_matches

__all__ = ["ValidatingAdmissionPolicyPlugin"]

GROUP = "admissionregistration.k8s.io"
# upstream's IsExemptAdmissionConfigurationResource: policies never judge the admission configuration
EXEMPT_RESOURCES = frozenset(("validatingwebhookconfigurations", "mutatingwebhookconfigurations",
                              "validatingadmissionpolicies", "validatingadmissionpolicybindings",
                              "mutatingadmissionpolicies", "mutatingadmissionpolicybindings"))
FAILURE_ANNOTATION = "validation.policy.admission.k8s.io/validation_failure"
MAX_MESSAGE_BYTES = 5 * 1024
MAX_AUDIT_VALUE_BYTES = 10 * 1024
_REASON_CODES = {"Invalid": 422, "Forbidden": 403, "Unauthorized": 401, "RequestEntityTooLarge": 413}


@dataclass
class _Decision:
    deny: bool  # the action: deny (goes through validationActions) or admit
    message: str
    reason: str = ""
    index: int | None = None
    error: bool = False


class _ConfigError(Exception):
    """A binding that cannot be evaluated (its paramRef finds nothing to use)."""


class ValidatingAdmissionPolicyPlugin:
    def __init__(self, rest: RestStorage, authorizer: Callable[[], Any]) -> None:
        self.rest = rest
        self._authorizer = authorizer  # the server's, once security is set up
        self._compiled: dict[str, CompiledPolicy] = {}
        self._bindings: dict[str, list[dict[str, Any]]] | None = None
        self._policies: list[dict[str, Any]] | None = None  # sorted by name; None: reread the cache
        self._following = False
        reg = rest.registry
        self._pol_res = reg.get(GROUP, "v1", "validatingadmissionpolicies")
        self._bind_res = reg.get(GROUP, "v1", "validatingadmissionpolicybindings")
        self._ns_res = reg.get("", "v1", "namespaces")

    # ---- caches --------------------------------------------------------------------------
    async def _follow(self) -> None:
        assert self._pol_res is not None and self._bind_res is not None
        pc, bc = await self.rest.cache_for(self._pol_res), await self.rest.cache_for(self._bind_res)
        if not self._following:
            pc.listeners.append(self._policy_event)
            bc.listeners.append(self._binding_event)
            self._following = True

    def _policy_event(self, ce: Any) -> None:
        name = ((ce.obj or ce.prev or {}).get("metadata") or {}).get("name")
        if name:
            self._compiled.pop(name, None)
        self._policies = None

    def _binding_event(self, ce: Any) -> None:
        self._bindings = None

    def policy(self, obj: dict[str, Any]) -> CompiledPolicy:
        """The compiled form of a stored policy, recompiled when its generation moves."""
        md = obj.get("metadata") or {}
        name, gen = md.get("name") or "", int(md.get("generation") or 0)
        cp = self._compiled.get(name)
        if cp is None or cp.generation != gen:
            cp = self._compiled[name] = compile_policy(obj)
        return cp

    async def _bindings_by_policy(self) -> dict[str, list[dict[str, Any]]]:
        if self._bindings is None:
            assert self._bind_res is not None
            by: dict[str, list[dict[str, Any]]] = {}
            for b in (await self.rest.cache_for(self._bind_res)).list(None):
                by.setdefault((b.get("spec") or {}).get("policyName") or "", []).append(b)
            for lst in by.values():
                lst.sort(key=lambda b: b["metadata"]["name"])
            self._bindings = by
        return self._bindings

    # ---- admission entry points ------------------------------------------------------------
    async def admit(self, rest: RestStorage, res: Resource, op: str, obj: dict[str, Any],
                    old: dict[str, Any] | None, ctx: RequestContext) -> None:
        """Creates and updates (the validating chain)."""
        md = obj.get("metadata") or {}
        await self._dispatch(res, op, md.get("namespace") or "", md.get("name") or "", obj, old, ctx)

    async def admit_other(self, rest: RestStorage, res: Resource, op: str, namespace: str | None, name: str,
                          obj: dict[str, Any], ctx: RequestContext) -> None:
        """Deletes: `object` is null and `oldObject` the stored object, as upstream."""
        if op != "DELETE":
            return
        await self._dispatch(res, op, namespace or "", name, None, obj, ctx)

    async def _dispatch(self, res: Resource, op: str, namespace: str, name: str, obj: dict[str, Any] | None,
                        old: dict[str, Any] | None, ctx: RequestContext) -> None:
        if res.group == GROUP and res.resource in EXEMPT_RESOURCES:
            return
        assert self._pol_res is not None
        await self._follow()
        if self._policies is None:
            self._policies = sorted((await self.rest.cache_for(self._pol_res)).list(None),
                                    key=lambda p: p["metadata"]["name"])
        policies = self._policies
        if not policies:
            return
        bindings = await self._bindings_by_policy()
        if not bindings:
            return
        others = tuple(v for v in self.rest.registry.versions(res.group)
                       if v != res.version and self.rest.registry.get(res.group, v, res.resource) is not None)
        attrs = Attributes(res.group, res.version, res.resource, ctx.subresource, res.kind, namespace, name, op,
                           res.namespaced, obj, old, others)
        ns_obj: dict[str, Any] | None = None
        ns_loaded = False

        async def namespace_object() -> dict[str, Any] | None:
            nonlocal ns_obj, ns_loaded
            if not ns_loaded:
                ns_loaded = True
                if res.group == "" and res.resource == "namespaces":
                    ns_obj = obj if obj is not None else old
                elif namespace:
                    assert self._ns_res is not None
                    ns_obj = await self.rest.get_current(self._ns_res, None, namespace, consistent=False)
            return ns_obj

        denials: list[tuple[str, str, _Decision]] = []
        shared: _Lazy | None = None
        for pol in policies:
            pname = pol["metadata"]["name"]
            pbindings = bindings.get(pname)
            if not pbindings:
                continue
            spec = pol.get("spec") or {}
            ns_labels = ((await namespace_object() or {}).get("metadata") or {}).get("labels") or {}
            if not matches(spec.get("matchConstraints"), attrs, ns_labels, require_rules=True):
                continue
            cp = self.policy(pol)
            kind_err = self._param_kind_error(spec)
            if kind_err:  # as upstream: the policy's own error, before (and whatever) its bindings
                if cp.failure_policy == "Fail":
                    denials.append((pname, "", _Decision(True, f"failed to configure policy: {kind_err}", error=True)))
                continue
            collected: dict[str, list[str]] = {}
            for b in pbindings:
                bspec = b.get("spec") or {}
                if not matches(bspec.get("matchResources"), attrs, ns_labels, require_rules=False):
                    continue
                bname = b["metadata"]["name"]
                try:
                    params = await self._params(spec, bspec, namespace)
                except _ConfigError as e:
                    if cp.failure_policy == "Fail":
                        denials.append((pname, bname, _Decision(True, f"failed to configure binding: {e}",
                                                                error=True)))
                    continue
                for param in params:
                    if shared is None:
                        shared = self._request_values(attrs, await namespace_object(), ctx)
                    decisions, annotations = self._evaluate(cp, shared, param)
                    for d in decisions:
                        if d.deny:
                            self._act(pname, b, d, ctx, denials)
                    for key, value, err in annotations:
                        if err:
                            denials.append((pname, bname, _Decision(True, err, error=True)))
                        elif value is not None:
                            vals = collected.setdefault(key, [])
                            if value not in vals:
                                vals.append(value)
            for key, vals in collected.items():
                add_annotation(f"{pname}/{key}", ", ".join(vals))
        if denials:
            raise self._refusal(res, name, *denials[0])

    def _act(self, pname: str, binding: dict[str, Any], d: _Decision, ctx: RequestContext,
             denials: list[tuple[str, str, _Decision]]) -> None:
        bname = binding["metadata"]["name"]
        actions = (binding.get("spec") or {}).get("validationActions") or []
        for action in actions:
            if action == "Deny":
                denials.append((pname, bname, d))
            elif action == "Warn":
                ctx.warnings.append(f"Validation failed for ValidatingAdmissionPolicy '{pname}' with binding "
                                    f"'{bname}': {d.message}")
            elif action == "Audit":
                add_annotation(FAILURE_ANNOTATION, orjson.dumps([{
                    "message": d.message, "policy": pname, "binding": bname, "expressionIndex": d.index or 0,
                    "validationActions": actions}]).decode())

    @staticmethod
    def _refusal(res: Resource, name: str, pname: str, bname: str, d: _Decision) -> E.StatusError:
        message = (f"ValidatingAdmissionPolicy '{pname}' with binding '{bname}' denied request: {d.message}" if bname
                   else f"ValidatingAdmissionPolicy '{pname}' denied request: {d.message}")
        reason = d.reason or "Invalid"
        details: dict[str, Any] = {"name": name, "group": res.group, "kind": res.resource,
                                   "causes": [{"message": message}]}
        if not res.group:
            del details["group"]
        return E.StatusError(_REASON_CODES.get(reason, 422), reason,
                             f'{res.qualified} "{name}" is forbidden: {message}', details)

    # ---- params ---------------------------------------------------------------------------
    def _param_kind_error(self, spec: dict[str, Any]) -> str:
        kind = spec.get("paramKind")
        if not kind:
            return ""
        gv = kind.get("apiVersion") or ""
        group, _, version = gv.rpartition("/")
        if self.rest.registry.by_kind(group, kind.get("kind") or "", version) is None:
            return f"failed to find resource referenced by paramKind: '{gv}, Kind={kind.get('kind')}'"
        return ""

    async def _params(self, spec: dict[str, Any], bspec: dict[str, Any], req_ns: str) -> list[dict[str, Any] | None]:
        kind, ref = spec.get("paramKind"), bspec.get("paramRef")
        if not kind or not ref:
            return [None]
        group, _, version = (kind.get("apiVersion") or "").rpartition("/")
        pres = self.rest.registry.by_kind(group, kind.get("kind") or "", version)
        assert pres is not None  # (_param_kind_error said so)
        ns: str | None = None
        if pres.namespaced:
            ns = ref.get("namespace") or req_ns
            if not ns:
                raise _ConfigError("cannot use namespaced paramRef in policy binding that matches cluster-scoped "
                                   "resources")
        elif ref.get("namespace"):
            raise _ConfigError("paramRef.namespace must not be provided for a cluster-scoped `paramKind`")
        cache = await self.rest.cache_for(pres)
        if ref.get("name"):
            found = cache.objects.get(pres.key(ns, ref["name"]))
            params = [found] if found is not None else []
        elif ref.get("selector") is not None:
            params = sorted((o for o in cache.list(ns)
                             if selector_matches(ref["selector"], (o.get("metadata") or {}).get("labels"))), key=lambda o: o["metadata"]["name"])
        else:
            raise _ConfigError("one of name or selector must be provided")
        if not params and ref.get("parameterNotFoundAction") == "Deny":
            raise _ConfigError("no params found for policy binding with `Deny` parameterNotFoundAction")
        return list(params)

    # ---- evaluation -----------------------------------------------------------------------
    def _request_values(self, a: Attributes, ns_obj: dict[str, Any] | None, ctx: RequestContext) -> _Lazy:
        """What every evaluation of one request shares, each converted to CEL on first use."""
        user = ctx.user

        def request() -> Any:
            user_info = {"username": getattr(user, "name", ""), "uid": getattr(user, "uid", ""),
                         "groups": list(getattr(user, "groups", []) or []),
                         "extra": dict(getattr(user, "extra", {}) or {})}
            gvk = {"group": a.group, "version": a.version, "kind": a.kind}
            gvr = {"group": a.group, "version": a.version, "resource": a.resource}
            return to_cel({"kind": gvk, "resource": gvr, "subResource": a.subresource, "requestKind": gvk,
                           "requestResource": gvr, "requestSubResource": a.subresource, "name": a.name,
                           "namespace": a.namespace, "operation": a.operation, "userInfo": user_info,
                           "dryRun": bool(ctx.dry_run), "options": _options(a.operation, ctx)})

        def authorizer() -> Any:
            authz = self._authorizer()
            if user is None or authz is None:
                return None
            return authzlib.make_authorizer(authz.authorize, user, {
                "group": a.group, "resource": a.resource, "subresource": a.subresource, "namespace": a.namespace,
                "name": a.name})

        return _Lazy({"object": lambda: to_cel(a.obj), "oldObject": lambda: to_cel(a.old), "request": request,
                      "namespaceObject": lambda: to_cel(_namespace_view(ns_obj)), "authorizer": authorizer})

    @staticmethod
    def _activation(cp: CompiledPolicy, shared: _Lazy, param: dict[str, Any] | None) -> _Lazy:
        """One evaluation's: the request's values, this param, and the policy's lazy variables."""
        act = _Lazy({"params": lambda: to_cel(param)}, shared)

        def thunk(c: Compiled) -> Callable[[], Any]:
            return lambda: _run(c, act)
        variables = LazyMap({n: thunk(c) for n, c in cp.variables})
        act.makers["variables"] = lambda: variables
        return act

    def _evaluate(self, cp: CompiledPolicy, shared: _Lazy, param: dict[str, Any] | None
                  ) -> tuple[list[_Decision], list[tuple[str, str | None, str]]]:
        act = self._activation(cp, shared, param)
        fail = cp.failure_policy == "Fail"
        # matchConditions: any false skips; errors fail or skip as the failure policy says
        errs: list[str] = []
        for _name, c in cp.match_conditions:
            try:
                if _run(c, act) is False:
                    return [], []
            except EvalError as e:
                errs.append(str(e))
        if errs:
            if not fail:
                return [], []
            msg = errs[0] if len(errs) == 1 else "[" + ", ".join(errs) + "]"
            return [_Decision(True, f"failed to evaluate matchConditions for policy {cp.name}: {msg}",
                              error=True)], []
        decisions: list[_Decision] = []
        for i, (v, c, mc) in enumerate(cp.validations):
            try:
                ok = _run(c, act)
            except EvalError as e:
                decisions.append(_Decision(fail, str(e), index=i, error=True))
                continue
            if ok is True:
                continue
            if ok is not False:
                decisions.append(_Decision(fail, f"expression '{c.expression}' resulted in error: "
                                                 f"validation expression must evaluate to bool", index=i, error=True))
                continue
            decisions.append(_Decision(True, _message(v, c, mc, act), v.get("reason") or "Invalid", index=i))
        annotations: list[tuple[str, str | None, str]] = []
        for key, c in cp.audit_annotations:
            try:
                value = _run(c, act)
            except EvalError as e:
                if fail:
                    annotations.append((key, None, str(e)))
                continue
            if value is None or isinstance(value, str):
                text = (value or "").strip()
                annotations.append((key, text[:MAX_AUDIT_VALUE_BYTES] or None, ""))
            else:
                annotations.append((key, None, f"valueExpression '{c.expression}' resulted in unsupported return "
                                               f"type: {cel_type_name(value)}. Return type must be either string "
                                               "or null."))
        return decisions, annotations


class _Lazy:
    """An activation whose values are made on first use (most expressions read `object` only)."""

    __slots__ = ("makers", "values", "parent")

    def __init__(self, makers: dict[str, Callable[[], Any]], parent: _Lazy | None = None) -> None:
        self.makers = makers
        self.values: dict[str, Any] = {}
        self.parent = parent

    def get(self, name: str) -> Any:
        if name in self.values:
            return self.values[name]
        if name in self.makers:
            v = self.values[name] = self.makers[name]()
            return v
        return self.parent.get(name) if self.parent is not None else None

    def for_names(self, names: frozenset[str]) -> dict[str, Any]:
        return {n: self.get(n) for n in names if n in _VARIABLES}


_VARIABLES = frozenset(("object", "oldObject", "request", "params", "namespaceObject", "authorizer", "variables"))


def _run(c: Compiled, act: _Lazy) -> Any:
    """Evaluate; errors worded as upstream's `expression '...' resulted in error: ...`."""
    if c.program is None:
        raise EvalError(f"compilation error: {c.error}")
    try:
        value = c.program.evaluate(act.for_names(c.program.references))
    except EvalError as e:
        msg = str(e)
        if msg.startswith(("expression '", "compilation error")):
            raise  # a variable's own error, already worded
        raise EvalError(f"expression '{c.expression}' resulted in error: {msg}") from None
    if value is None or type(value).__name__ == "NullType":
        return None
    if isinstance(value, bool) or type(value).__name__ == "BoolType":
        return bool(value)
    return value


def _message(v: dict[str, Any], c: Compiled, mc: Compiled | None, act: _Lazy) -> str:
    if mc is not None:
        try:
            m = _run(mc, act)
        except EvalError:
            m = None
        if isinstance(m, str):
            text = str(m).strip()
            if text and "\n" not in text and len(text.encode()) <= MAX_MESSAGE_BYTES:
                return text
    if (v.get("message") or "").strip():
        return str(v["message"]).strip()
    return f"failed expression: {c.expression.strip()}"


def _namespace_view(ns: dict[str, Any] | None) -> dict[str, Any] | None:
    """What `namespaceObject` shows: the namespace's metadata (no managedFields), spec and status."""
    if ns is None:
        return None
    md = {k: v for k, v in (ns.get("metadata") or {}).items() if k != "managedFields"}
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": md, "spec": ns.get("spec") or {},
            "status": ns.get("status") or {}}


def _options(op: str, ctx: RequestContext) -> dict[str, Any] | None:
    kind = {"CREATE": "CreateOptions", "UPDATE": "UpdateOptions", "DELETE": "DeleteOptions"}.get(op)
    if kind is None:
        return None
    opts: dict[str, Any] = {"kind": kind, "apiVersion": "meta.k8s.io/v1"}
    if ctx.dry_run:
        opts["dryRun"] = ["All"]
    if ctx.field_manager and op != "DELETE":
        opts["fieldManager"] = ctx.field_manager
    return opts

"""Type checking of ValidatingAdmissionPolicy expressions into `status.typeChecking`.

As upstream's type-checker controller: for each kind the policy's matchConstraints name
(explicit groups, versions and resources; wildcards are not checked, as upstream), each
expression (validations' expression and messageExpression, matchConditions, variables, audit
annotations) is checked against that kind's OpenAPI schema, and problems are written to
`status.typeChecking.expressionWarnings` with `status.observedGeneration`.

cel-python has no type checker, so the check here is of field references: every
`object.a.b` / `oldObject.a.b` chain is walked through the schema (and `params.a.b` through
the paramKind's, where it is a built-in kind) (properties; maps via
additionalProperties; x-kubernetes-preserve-unknown-fields stops the walk), and a name the
schema does not have is reported in upstream's form
`apps/v1, Kind=Deployment: ERROR: <input>:1:12: undefined field 'replicass'` with the caret
lines. Comprehension variables and non-field operations are not typed.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import lark

from ...api.definitions import definition_for_gvk, definitions
from ...api.resources import Registry
from ..rest import RequestContext, RestStorage
from .celenv import CompileError, compile_expression

__all__ = ["check_policy", "TypeChecker"]

log = logging.getLogger(__name__)
_ROOTS = ("object", "oldObject")


def _chain(node: Any) -> tuple[str, list[lark.Token]] | None:
    """(root identifier, field tokens) of a `root.a.b` select chain, else None."""
    fields: list[lark.Token] = []
    while isinstance(node, lark.Tree):
        if node.data == "member_dot":
            fields.append(node.children[1])  # type: ignore[arg-type]
            node = node.children[0]
        elif node.data in ("member", "primary") and len(node.children) == 1:
            node = node.children[0]
        elif node.data == "ident" and node.children:
            fields.reverse()
            return str(node.children[0]), fields
        else:
            return None
    return None


def _resolve(s: dict[str, Any]) -> dict[str, Any]:
    defs = definitions()
    for _ in range(16):
        ref = s.get("$ref")
        if ref:
            s = defs.get(ref.rsplit("/", 1)[-1], {})
            continue
        all_of = s.get("allOf")
        if all_of and len(all_of) == 1 and not s.get("properties"):
            s = all_of[0]
            continue
        break
    return s


def _undefined(schema: dict[str, Any], fields: list[lark.Token]) -> lark.Token | None:
    s = schema
    for f in fields:
        s = _resolve(s)
        if s.get("x-kubernetes-preserve-unknown-fields"):
            return None
        props = s.get("properties")
        if props is not None and str(f) in props:
            s = props[str(f)]
        elif isinstance(s.get("additionalProperties"), dict):
            s = s["additionalProperties"]
        elif props is not None or s.get("type") == "object":
            return f
        else:
            return None  # a scalar or a list: not a field reference we type
    return None


def _caret(expression: str, line: int, col0: int) -> str:
    text = expression.splitlines()[line - 1] if expression else ""
    return f"\n | {text}\n | {'.' * col0}^"


def check_expression(expression: str, gvk_label: str, schema: dict[str, Any],
                     params: dict[str, Any] | None = None) -> list[str]:
    """The problems found in one expression for one kind, as upstream words them."""
    try:
        prog = compile_expression(expression)
    except CompileError:
        return []  # compile errors are validation's to refuse, not the type checker's
    out: list[str] = []
    seen: set[tuple[int, int]] = set()
    for node in prog.ast.iter_subtrees_topdown():
        if node.data != "member_dot":
            continue
        ch = _chain(node)
        if ch is None:
            continue
        root = schema if ch[0] in _ROOTS else params if ch[0] == "params" else None
        if root is None:
            continue
        bad = _undefined(root, ch[1])
        if bad is None:
            continue
        line, col = bad.line or 1, (bad.column or 1) - 2  # the select's position is its dot (0-based)
        if (line, col) in seen:
            continue
        seen.add((line, col))
        out.append(f"{gvk_label}: ERROR: <input>:{line}:{col + 1}: undefined field '{bad}'"
                   + _caret(expression, line, col))
    return out


def _kinds(registry: Registry, spec: dict[str, Any]) -> list[tuple[str, str, str]]:
    out: list[tuple[str, str, str]] = []
    for rule in ((spec.get("matchConstraints") or {}).get("resourceRules") or []):
        for g in rule.get("apiGroups") or []:
            for v in rule.get("apiVersions") or []:
                for r in rule.get("resources") or []:
                    if "*" in (g, v) or "*" in r or "/" in r:
                        continue
                    res = registry.get(g, v, r)
                    if res is not None and (g, v, res.kind) not in out:
                        out.append((g, v, res.kind))
    return out


def _expressions(spec: dict[str, Any]) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for i, v in enumerate(spec.get("validations") or []):
        out.append((f"spec.validations[{i}].expression", v.get("expression") or ""))
        if v.get("messageExpression"):
            out.append((f"spec.validations[{i}].messageExpression", v["messageExpression"]))
    for i, m in enumerate(spec.get("matchConditions") or []):
        out.append((f"spec.matchConditions[{i}].expression", m.get("expression") or ""))
    for i, v in enumerate(spec.get("variables") or []):
        out.append((f"spec.variables[{i}].expression", v.get("expression") or ""))
    for i, a in enumerate(spec.get("auditAnnotations") or []):
        out.append((f"spec.auditAnnotations[{i}].valueExpression", a.get("valueExpression") or ""))
    return out


def check_policy(registry: Registry, policy: dict[str, Any]) -> list[dict[str, str]]:
    """`status.typeChecking.expressionWarnings` for a policy."""
    spec = policy.get("spec") or {}
    kinds = []
    for g, v, k in _kinds(registry, spec):
        name = definition_for_gvk(g, v, k)
        if name is not None:
            kinds.append((f"{g + '/' if g else ''}{v}, Kind={k}", definitions()[name]))
    params = None
    pk = spec.get("paramKind") or {}
    if pk.get("apiVersion") and pk.get("kind"):
        pg, _, pv = str(pk["apiVersion"]).rpartition("/")
        pname = definition_for_gvk(pg, pv, str(pk["kind"]))
        params = definitions()[pname] if pname is not None else None
    warnings: list[dict[str, str]] = []
    for ref, expr in _expressions(spec):
        found: list[str] = []
        for label, schema in kinds:
            found.extend(check_expression(expr, label, schema, params))
        if found:
            warnings.append({"fieldRef": ref, "warning": "\n".join(found)})
    return warnings


class TypeChecker:
    """Follows the policies and writes each generation's type-checking result to its status."""

    def __init__(self, rest: RestStorage) -> None:
        self.rest = rest
        self.res = rest.registry.get("admissionregistration.k8s.io", "v1", "validatingadmissionpolicies")
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        assert self.res is not None
        cache = await self.rest.cache_for(self.res)
        cache.listeners.append(lambda ce: self._wake.set())
        self._wake.set()
        self._task = asyncio.create_task(self._run(), name="vap-typecheck")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()

    async def _run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            try:
                await self.sync()
            except asyncio.CancelledError:
                raise
            except Exception:  # keep checking later policies; the next event retries this one
                log.exception("ValidatingAdmissionPolicy type checking failed")

    async def sync(self) -> None:
        assert self.res is not None
        for pol in (await self.rest.cache_for(self.res)).list(None):
            md = pol.get("metadata") or {}
            gen = int(md.get("generation") or 0)
            if (pol.get("status") or {}).get("observedGeneration") == gen:
                continue
            warnings = check_policy(self.rest.registry, pol)

            def mutate(cur: dict[str, Any] | None, gen: int = gen, w: list[dict[str, str]] = warnings
                       ) -> dict[str, Any]:
                assert cur is not None
                if int((cur.get("metadata") or {}).get("generation") or 0) != gen:
                    return cur  # changed meanwhile: the next pass checks the new generation
                st = cur.setdefault("status", {})
                st["observedGeneration"] = gen
                st["typeChecking"] = {"expressionWarnings": w} if w else {}
                return cur

            await self.rest.update(self.res, None, md["name"], mutate, RequestContext(field_manager="kube-apiserver"),
                                   subresource="status", retry_on_conflict=True)

"""CRD `x-kubernetes-validations`: the rules' checks at CRD create/update and their
evaluation on custom resources, after apiextensions-apiserver's schema/cel package.

`validate_crd_rules` checks every rule of every version's schema (compiles, reason, fieldPath,
message, estimated cost per rule and per CRD). `RuleSet.build(schema)` compiles a schema's
rules once (the CRD manager builds one per CRD generation) and `RuleSet.validate(new, old)`
evaluates each rule at its schema location: `self` is that node's value (each element of a
list or map in turn), `oldSelf` the correlated old value; rules that use `oldSelf`
(transition rules) run only on updates where an old value exists, unless `optionalOldSelf`;
other rules are ratcheted: on update they skip a value equal to its correlated old value.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from typing import Any

from ... import cel
from ...cel import cost as celcost
from ..validation.field import (
    FieldError,
    GoValue,
    child,
    duplicate,
    forbidden,
    go_quote,
    index,
    invalid,
    key,
    not_supported,
    required,
)

__all__ = ["validate_crd_rules", "RuleSet", "STATIC_ESTIMATED_COST_LIMIT", "STATIC_ESTIMATED_CRD_COST_LIMIT"]

# apiextensions' limits
STATIC_ESTIMATED_COST_LIMIT = 10_000_000
STATIC_ESTIMATED_CRD_COST_LIMIT = 100_000_000
RUNTIME_CEL_COST_BUDGET = 10_000_000
# all the rules of one object together may run this long (see cel/cost.py on wall time)
RUNTIME_SECONDS_BUDGET = 1.0
REASONS = ["FieldValueDuplicate", "FieldValueForbidden", "FieldValueInvalid", "FieldValueRequired"]
_NEWLINES = re.compile(r"[\n\r]+")
_ROOT = "<nil>"  # what a nil *field.Path prints: errors of rules on the root


def _root_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """What `self` is at the root: the object with apiVersion, kind and the part of metadata
    rules may see (name, generateName), as upstream's embedded-resource type."""
    s = dict(schema)
    props = dict(s.get("properties") or {})
    props["apiVersion"] = {"type": "string"}
    props["kind"] = {"type": "string"}
    props["metadata"] = {"type": "object", "properties": {"name": {"type": "string"},
                                                          "generateName": {"type": "string"}}}
    s["properties"] = props
    return s


def _node_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A node's schema for the type checker, without its own rules (not needed to type it)."""
    return {k: v for k, v in schema.items() if k not in ("x-kubernetes-validations", "description", "default")}


def _go_rule(rule: dict[str, Any]) -> GoValue:
    reason = rule.get("reason")
    oos = rule.get("optionalOldSelf")
    return GoValue(
        "apiextensions.ValidationRule{"
        f"Rule:{go_quote(str(rule.get('rule') or ''))}, Message:{go_quote(str(rule.get('message') or ''))}, "
        f"MessageExpression:{go_quote(str(rule.get('messageExpression') or ''))}, "
        f"Reason:{'(*apiextensions.FieldValueErrorReason)(nil)' if reason is None else '&' + go_quote(str(reason))}, "
        f"FieldPath:{go_quote(str(rule.get('fieldPath') or ''))}, "
        f"OptionalOldSelf:{'(*bool)(nil)' if oos is None else '&' + str(bool(oos)).lower()}}}")


def cost_message(name: str, cost: int, limit: int) -> str:
    factor = cost / limit
    if factor > 100.0:
        text = "more than 100x"
    elif factor < 1.5:
        text = f"{factor:f}x"
    else:
        text = f"{factor:.1f}x"
    return (f"{name} exceeds budget by factor of {text} (try simplifying the rule, or adding maxItems, "
            "maxProperties, and maxLength where arrays, maps, and strings are declared)")


def _field_path_target(schema: dict[str, Any], path: str) -> list[tuple[str, str]] | None:
    """`.a.b`, `.a['b.c']`, `['x']`: the steps ([("field"|"key", name)]) if the schema has them."""
    steps: list[tuple[str, str]] = []
    s: dict[str, Any] | None = schema
    for m in re.finditer(r"\.([A-Za-z_][A-Za-z0-9_-]*)|\['((?:[^'\\]|\\.)*)'\]|(.)", path):
        if m.group(3) is not None or s is None:
            return None
        name = m.group(1) if m.group(1) is not None else m.group(2)
        props = s.get("properties") or {}
        if name in props:
            steps.append(("field", name))
            s = props[name]
        elif isinstance(s.get("additionalProperties"), dict):
            steps.append(("key", name))
            s = s["additionalProperties"]
        else:
            return None
    return steps if steps else None


# ---- CRD create / update ------------------------------------------------------------------
def validate_crd_rules(crd: dict[str, Any]) -> list[FieldError]:
    spec = crd.get("spec") or {}
    versions = [v for v in spec.get("versions") or [] if isinstance(v, dict)]
    schemas = [((v.get("schema") or {}).get("openAPIV3Schema")) for v in versions]
    errs: list[FieldError] = []
    # upstream's internal type holds one top-level schema when every version has the same
    if schemas and all(json.dumps(s, sort_keys=True) == json.dumps(schemas[0], sort_keys=True) for s in schemas):
        if isinstance(schemas[0], dict):
            errs += _check_schema(schemas[0], "spec.validation.openAPIV3Schema")
        return errs
    for i, s in enumerate(schemas):
        if isinstance(s, dict):
            errs += _check_schema(s, f"spec.versions[{i}].schema.openAPIV3Schema")
    return errs


@dataclass
class _Total:
    cost: int = 0
    rules: list[str] = field(default_factory=list)


def _check_schema(schema: dict[str, Any], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    total = _Total()
    _check_node(schema, path, True, 1, None, errs, total)
    if total.cost > STATIC_ESTIMATED_CRD_COST_LIMIT:
        for p in total.rules:
            errs.append(forbidden(p, "contributed to estimated rule cost total exceeding cost limit for entire "
                                     "OpenAPIv3 schema"))
        errs.append(forbidden(path, cost_message(
            "x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema",
            total.cost, STATIC_ESTIMATED_CRD_COST_LIMIT)))
    return errs


def _check_node(s: Any, path: str, root: bool, cardinality: int, uncorrelatable: str | None,
                errs: list[FieldError], total: _Total) -> None:
    if not isinstance(s, dict):
        return
    rules = s.get("x-kubernetes-validations")
    if isinstance(rules, list) and rules:
        _check_rules(s, rules, path, root, cardinality, uncorrelatable, errs, total)
    for name, sub in (s.get("properties") or {}).items():
        _check_node(sub, f"{path}.properties[{name}]", False, cardinality, uncorrelatable, errs, total)
    if isinstance(s.get("items"), dict):
        n = celcost.max_elements(s)
        unc = uncorrelatable if uncorrelatable or s.get("x-kubernetes-list-type") == "map" else path + ".items"
        _check_node(s["items"], f"{path}.items", False, cardinality * n, unc, errs, total)
    if isinstance(s.get("additionalProperties"), dict):
        n = celcost.max_elements(s)
        _check_node(s["additionalProperties"], f"{path}.additionalProperties", False, cardinality * n,
                    uncorrelatable, errs, total)


def _env(s: dict[str, Any], root: bool) -> cel.Env:
    node = _node_schema(_root_schema(s) if root else s)
    return cel.Env.of({"self": node, "oldSelf": node})


def _check_rules(s: dict[str, Any], rules: list[Any], path: str, root: bool, cardinality: int,
                 uncorrelatable: str | None, errs: list[FieldError], total: _Total) -> None:
    vp = child(path, "x-kubernetes-validations")
    schema_errs: list[FieldError] = []
    for i, r in enumerate(rules):
        if not isinstance(r, dict):
            continue
        rp = index(vp, i)
        rule, msg = str(r.get("rule") or ""), str(r.get("message") or "")
        if not rule.strip():
            schema_errs.append(required(child(rp, "rule"), "rule is not specified"))
        elif msg and not msg.strip():
            schema_errs.append(invalid(child(rp, "message"), msg, "message must be non-empty if specified"))
        elif _NEWLINES.search(msg.strip()):
            schema_errs.append(invalid(child(rp, "message"), msg, "message must not contain line breaks"))
        elif _NEWLINES.search(rule.strip()) and not msg.strip():
            schema_errs.append(required(child(rp, "message"), "message must be specified if rule contains line breaks"))
        mexpr = r.get("messageExpression")
        if mexpr is not None and str(mexpr) and not str(mexpr).strip():
            schema_errs.append(required(child(rp, "messageExpression"), "messageExpression must be non-empty if specified"))
        if r.get("reason") is not None and r.get("reason") not in REASONS:
            schema_errs.append(not_supported(child(rp, "reason"), r.get("reason"), REASONS))
        fp = r.get("fieldPath")
        if fp is not None and str(fp):
            if not str(fp).strip():
                schema_errs.append(invalid(child(rp, "fieldPath"), fp, "fieldPath must be non-empty if specified"))
            elif _NEWLINES.search(str(fp)):
                schema_errs.append(invalid(child(rp, "fieldPath"), fp, "fieldPath must not contain line breaks"))
            elif _field_path_target(s, str(fp)) is None:
                schema_errs.append(invalid(child(rp, "fieldPath"), fp, "fieldPath must be a valid path"))
    errs += schema_errs
    if schema_errs:
        return  # as upstream: CEL is not compiled over a schema with errors
    env = _env(s, root)
    for i, r in enumerate(rules):
        if not isinstance(r, dict) or not str(r.get("rule") or "").strip():
            continue
        rp = index(vp, i)
        try:
            prog = cel.compile(str(r["rule"]), env)
        except cel.CompileError as e:
            errs.append(invalid(child(rp, "rule"), _go_rule(r), str(e)))
            continue
        cost = prog.estimated_cost * cardinality
        if cost > STATIC_ESTIMATED_COST_LIMIT:
            errs.append(forbidden(child(rp, "rule"), cost_message("estimated rule cost", cost,
                                                                   STATIC_ESTIMATED_COST_LIMIT)))
        total.cost += cost
        total.rules.append(child(rp, "rule"))
        if r.get("messageExpression"):
            try:
                mprog = cel.compile(str(r["messageExpression"]), env)
            except cel.CompileError as e:
                errs.append(invalid(child(rp, "messageExpression"), _go_rule(r),
                                    "messageExpression " + str(e)))
            else:
                mcost = mprog.estimated_cost * cardinality
                if mcost > STATIC_ESTIMATED_COST_LIMIT:
                    errs.append(forbidden(child(rp, "messageExpression"), cost_message(
                        "estimated messageExpression cost", mcost, STATIC_ESTIMATED_COST_LIMIT)))
                total.cost += mcost
        if "oldSelf" in prog.references:
            if uncorrelatable:
                errs.append(invalid(child(rp, "rule"), r["rule"],
                                    f"oldSelf cannot be used on the uncorrelatable portion of the schema within "
                                    f"{uncorrelatable}"))
        elif r.get("optionalOldSelf") is not None:
            errs.append(invalid(child(rp, "optionalOldSelf"), bool(r["optionalOldSelf"]),
                                "may not be set if oldSelf is not used in rule"))


# ---- custom resources ---------------------------------------------------------------------
@dataclass
class _Rule:
    spec: dict[str, Any]
    program: cel.Program
    message_program: cel.Program | None
    transition: bool
    optional_old: bool
    field_steps: list[tuple[str, str]]


@dataclass
class _Node:
    type: str
    rules: list[_Rule]
    props: dict[str, _Node]
    items: _Node | None
    additional: _Node | None
    list_map_keys: list[str]


class RuleSet:
    """A schema's rules, compiled once; None from build() when the schema has none."""

    def __init__(self, root: _Node) -> None:
        self.root = root

    @classmethod
    def build(cls, schema: dict[str, Any]) -> RuleSet | None:
        node = _build(schema, True)
        return cls(node) if node is not None else None

    def validate(self, new: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
        errs: list[FieldError] = []
        budget = _Budget(RUNTIME_CEL_COST_BUDGET, time.monotonic() + RUNTIME_SECONDS_BUDGET)
        _walk(self.root, _visible_root(new), _visible_root(old) if old is not None else None,
              old is not None, _ROOT, errs, budget)
        return errs


def _visible_root(obj: dict[str, Any]) -> dict[str, Any]:
    md = obj.get("metadata") or {}
    out = dict(obj)
    out["metadata"] = {k: md[k] for k in ("name", "generateName") if k in md}
    return out


def _build(s: Any, root: bool) -> _Node | None:
    if not isinstance(s, dict):
        return None
    rules: list[_Rule] = []
    raw = s.get("x-kubernetes-validations")
    if isinstance(raw, list) and raw:
        env = _env(s, root)
        for r in raw:
            if not isinstance(r, dict) or not str(r.get("rule") or "").strip():
                continue
            try:
                prog = cel.compile(str(r["rule"]), env)
            except cel.CompileError:
                continue  # refused at CRD validation; a stored CRD from before is not enforced
            mprog = None
            if r.get("messageExpression"):
                try:
                    mprog = cel.compile(str(r["messageExpression"]), env)
                except cel.CompileError:
                    mprog = None
            rules.append(_Rule(r, prog, mprog, "oldSelf" in prog.references, bool(r.get("optionalOldSelf")),
                               _field_path_target(s, str(r["fieldPath"])) or [] if r.get("fieldPath") else []))
    props = {k: n for k, v in (s.get("properties") or {}).items() if (n := _build(v, False)) is not None}
    items = _build(s.get("items"), False)
    additional = _build(s.get("additionalProperties"), False)
    if not rules and not props and items is None and additional is None:
        return None
    return _Node(str(s.get("type") or ""), rules, props, items, additional,
                 list(s.get("x-kubernetes-list-map-keys") or []) if s.get("x-kubernetes-list-type") == "map" else [])


@dataclass
class _Budget:
    remaining: int
    deadline: float
    exhausted: bool = False


def _type_name(node: _Node, value: Any) -> str:
    if node.type:
        return node.type
    return {dict: "object", list: "array", str: "string", bool: "boolean", int: "integer", float: "number"}.get(
        type(value), "object")


def _walk(node: _Node, value: Any, old: Any, has_old: bool, path: str, errs: list[FieldError],
          budget: _Budget) -> None:
    if value is None or budget.exhausted:
        return
    for rule in node.rules:
        if budget.exhausted:
            return
        _run(rule, node, value, old, has_old, path, errs, budget)
    child_path = "" if path == _ROOT else path
    if isinstance(value, dict):
        for name, sub in node.props.items():
            if name in value:
                o_ok = has_old and isinstance(old, dict) and name in old
                _walk(sub, value[name], old.get(name) if o_ok else None, o_ok, child(child_path, name), errs, budget)
        if node.additional is not None:
            for k, v in value.items():
                o_ok = has_old and isinstance(old, dict) and k in old
                _walk(node.additional, v, old.get(k) if o_ok else None, o_ok, key(child_path, k), errs, budget)
    elif isinstance(value, list) and node.items is not None:
        olds = _correlate(node, value, old if has_old else None)
        for i, v in enumerate(value):
            o = olds[i]
            _walk(node.items, v, o[0], o[1], index(child_path, i), errs, budget)


def _correlate(node: _Node, value: list[Any], old: Any) -> list[tuple[Any, bool]]:
    """Old elements of a list-type=map list by their keys; other lists do not correlate."""
    if not node.list_map_keys or not isinstance(old, list):
        return [(None, False)] * len(value)
    keys = node.list_map_keys

    def k(e: Any) -> Any:
        return tuple(json.dumps(e.get(x), sort_keys=True) for x in keys) if isinstance(e, dict) else None

    by_key = {k(e): e for e in old}
    return [(by_key[k(e)], True) if k(e) in by_key else (None, False) for e in value]


def _run(rule: _Rule, node: _Node, value: Any, old: Any, has_old: bool, path: str, errs: list[FieldError],
         budget: _Budget) -> None:
    if rule.transition and not has_old and not rule.optional_old:
        return
    if not rule.transition and has_old and value == old:
        return  # ratcheting (v1.33 default): an unchanged value keeps passing a rule added later
    act: dict[str, Any] = {"self": value}
    if rule.transition:
        act["oldSelf"] = (cel.Optional(cel.to_cel(old), True) if has_old else cel.Optional()) \
            if rule.optional_old else old
    where = path
    for kind, name in rule.field_steps:
        base = "" if where == _ROOT else where
        where = child(base, name) if kind == "field" else key(base, name)
    tname = _type_name(node, value)
    seconds = max(budget.deadline - time.monotonic(), 0.0)
    try:
        result, used = rule.program.evaluate_with_cost(act, min(cel.PER_CALL_LIMIT, budget.remaining),
                                                       min(seconds, celcost.PER_CALL_TIME_LIMIT))
    except cel.CostLimitError as e:
        if budget.remaining < cel.PER_CALL_LIMIT or seconds < celcost.PER_CALL_TIME_LIMIT:
            budget.exhausted = True
            errs.append(invalid(path, tname, "validation failed due to running out of cost budget, "
                                             "no further validation rules will be run"))
        else:
            errs.append(invalid(path, tname, f"'{e}': call cost exceeds limit for rule: {_rule_text(rule)}"))
        return
    except cel.EvalError as e:
        text = str(e)
        if text.startswith("no such overload"):
            errs.append(invalid(path, tname, f"'{text}': call arguments did not match a supported operator, "
                                             f"function or macro signature for rule: {_rule_text(rule)}"))
        else:
            errs.append(invalid(path, tname, f"{text} evaluating rule: {_rule_text(rule)}"))
        return
    budget.remaining -= used
    if result is True or (not isinstance(result, bool) and cel.to_python(result) is True):
        return
    if not isinstance(cel.to_python(result), bool):
        errs.append(invalid(path, tname, f"rule did not evaluate to a bool: {_rule_text(rule)}"))
        return
    detail = _message(rule, act, budget) or _failed_text(rule)
    reason = rule.spec.get("reason")
    if reason == "FieldValueForbidden":
        errs.append(forbidden(where, detail))
    elif reason == "FieldValueRequired":
        errs.append(required(where, detail))
    elif reason == "FieldValueDuplicate":
        errs.append(duplicate(where, tname))
    else:
        errs.append(invalid(where, tname, detail))


def _rule_text(rule: _Rule) -> str:
    """What an error evaluating the rule names it by: its message, or the rule itself."""
    msg = str(rule.spec.get("message") or "").strip()
    return msg or str(rule.spec.get("rule") or "").strip()


def _failed_text(rule: _Rule) -> str:
    """A rule that evaluated to false: its message, or `failed rule: <rule>`."""
    msg = str(rule.spec.get("message") or "").strip()
    return msg or f"failed rule: {str(rule.spec.get('rule') or '').strip()}"


def _message(rule: _Rule, act: dict[str, Any], budget: _Budget) -> str:
    """messageExpression's result; "" (so the message is used) when it fails or is not a
    one-line, non-empty string."""
    if rule.message_program is None:
        return ""
    try:
        v, used = rule.message_program.evaluate_with_cost(act, min(cel.PER_CALL_LIMIT, max(budget.remaining, 0)))
    except cel.CELError:
        return ""
    budget.remaining -= used
    text = cel.to_python(v)
    if not isinstance(text, str) or not text.strip() or _NEWLINES.search(text):
        return ""
    return text.strip()

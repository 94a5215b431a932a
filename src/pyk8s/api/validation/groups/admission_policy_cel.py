"""ValidatingAdmissionPolicy's CEL fields, checked when a policy is written (as upstream's
validateValidatingAdmissionPolicySpec compiles them): validations' expression and
messageExpression, variables (names CEL identifiers, unique), auditAnnotations' valueExpression,
and validations' reason. A compile error is refused with upstream's
`Invalid value: "<expression>": compilation failed: ERROR: <input>:1:7: ...`."""

from __future__ import annotations

import re
from typing import Any

from ...errors import FieldError
from ..field import child, duplicate, index, invalid, not_supported, required

__all__ = ["validate_policy_expressions"]

_REASONS = ("Forbidden", "Invalid", "RequestEntityTooLarge", "Unauthorized")  # sorted, as upstream lists them
_CEL_IDENT = re.compile(r"^[_a-zA-Z][_a-zA-Z0-9]*$")


# the variables a policy's expressions see (apiserver/vap/celenv.py evaluates in the same environment)
ADMISSION_VARIABLES = ("object", "oldObject", "request", "params", "namespaceObject", "authorizer", "variables")


def _compiles(expression: str, path: str) -> list[FieldError]:
    from ....cel import CompileError, Env
    from ....cel import compile as cel_compile

    try:
        cel_compile(expression, Env.of({n: None for n in ADMISSION_VARIABLES}))
    except CompileError as e:
        return [invalid(path, expression, str(e))]
    return []


def validate_policy_expressions(spec: dict[str, Any], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    seen: set[str] = set()
    for i, v in enumerate(spec.get("variables") or []):
        if not isinstance(v, dict):
            continue
        p = index(child(path, "variables"), i)
        name = v.get("name") or ""
        if not name:
            errs.append(required(child(p, "name")))
        elif not _CEL_IDENT.match(name):
            errs.append(invalid(child(p, "name"), name, "name is not a valid CEL identifier"))
        elif name in seen:
            errs.append(duplicate(child(p, "name"), name))
        seen.add(name)
        if not (v.get("expression") or "").strip():
            errs.append(required(child(p, "expression")))
        else:
            errs += _compiles(v["expression"], child(p, "expression"))
    for i, v in enumerate(spec.get("validations") or []):
        if not isinstance(v, dict):
            continue
        p = index(child(path, "validations"), i)
        if (v.get("expression") or "").strip():
            errs += _compiles(v["expression"], child(p, "expression"))
        if v.get("messageExpression"):
            errs += _compiles(v["messageExpression"], child(p, "messageExpression"))
        if v.get("reason") is not None and v["reason"] not in _REASONS:
            errs.append(not_supported(child(p, "reason"), v["reason"], _REASONS))
    for i, a in enumerate(spec.get("auditAnnotations") or []):
        if not isinstance(a, dict):
            continue
        p = index(child(path, "auditAnnotations"), i)
        if not a.get("key"):
            errs.append(required(child(p, "key")))
        if not (a.get("valueExpression") or "").strip():
            errs.append(required(child(p, "valueExpression")))
        else:
            errs += _compiles(a["valueExpression"], child(p, "valueExpression"))
    return errs

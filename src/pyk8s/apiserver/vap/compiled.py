"""A ValidatingAdmissionPolicy's expressions, compiled once per policy generation."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .celenv import CompileError, Program, compile_expression

__all__ = ["CompiledPolicy", "Compiled", "compile_policy"]


@dataclass(frozen=True)
class Compiled:
    """An expression and its program, or the compile error evaluation reports in its place."""

    expression: str
    program: Program | None
    error: str = ""


def _compile(expr: str) -> Compiled:
    try:
        return Compiled(expr, compile_expression(expr))
    except CompileError as e:
        return Compiled(expr, None, str(e))


@dataclass
class CompiledPolicy:
    name: str
    generation: int
    spec: dict[str, Any]
    failure_policy: str
    match_conditions: list[tuple[str, Compiled]] = field(default_factory=list)
    variables: list[tuple[str, Compiled]] = field(default_factory=list)
    # (validation, expression, messageExpression or None)
    validations: list[tuple[dict[str, Any], Compiled, Compiled | None]] = field(default_factory=list)
    audit_annotations: list[tuple[str, Compiled]] = field(default_factory=list)


def compile_policy(policy: dict[str, Any]) -> CompiledPolicy:
    spec = policy.get("spec") or {}
    md = policy.get("metadata") or {}
    cp = CompiledPolicy(md.get("name") or "", int(md.get("generation") or 0), spec,
                        spec.get("failurePolicy") or "Fail")
    cp.match_conditions = [(m.get("name") or "", _compile(m.get("expression") or ""))
                           for m in spec.get("matchConditions") or []]
    cp.variables = [(v.get("name") or "", _compile(v.get("expression") or "")) for v in spec.get("variables") or []]
    cp.validations = [(v, _compile(v.get("expression") or ""),
                       _compile(v["messageExpression"]) if v.get("messageExpression") else None)
                      for v in spec.get("validations") or []]
    cp.audit_annotations = [(a.get("key") or "", _compile(a.get("valueExpression") or ""))
                            for a in spec.get("auditAnnotations") or []]
    return cp

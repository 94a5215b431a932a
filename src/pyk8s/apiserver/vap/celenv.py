"""CEL for admission policies: the shared Kubernetes CEL library (`pyk8s.cel`) with lazy variables.

Expressions compile through `pyk8s.cel.compile` (its cache, libraries and upstream's compile
errors) in the admission environment (`object`, `oldObject`, `request`, `params`,
`namespaceObject`, `authorizer`, `variables`). Evaluation runs cel-python's interpreter under
the library's runtime cost budget (`PerCallLimit` units, one per visited node, plus its wall-time
cap), but here rather than in `Program.evaluate` so `variables` stays lazy: each variable is
computed on its first use and shared by the policy's other expressions.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

import lark
from celpy import celtypes
from celpy.evaluation import CELEvalError, Evaluator

from ...api.validation.groups.admission_policy_cel import ADMISSION_VARIABLES
from ...cel import CompileError, Env, library
from ...cel import compile as cel_compile
from ...cel import cost as C
from ...cel.env import runtime_message
from . import authzlib

__all__ = ["CompileError", "EvalError", "Program", "compile_expression", "to_cel", "cel_type_name", "PER_CALL_LIMIT",
           "LazyMap"]

PER_CALL_LIMIT = C.PER_CALL_LIMIT
_COST_EXCEEDED = "operation cancelled: actual cost limit exceeded"
ENV = Env.of({n: None for n in ADMISSION_VARIABLES})
# the library's functions, with the authorizer's that also know `authorizer.requestResource`
FUNCTIONS: dict[str, Callable[..., Any]] = {**library.FUNCTIONS, **authzlib.FUNCTIONS}
_GLOBALS: dict[str, Any] = {"format": library.FORMAT, "strings": library.STRINGS, "optional": library.OPTIONAL}


class EvalError(Exception):
    """An evaluation error, worded as upstream's."""


_UNDECLARED = re.compile(r"undeclared reference to '([^']*)'")
_MAX_MESSAGE = 1024


def _message(text: str) -> str:
    """cel-python's wording where it would show values (its activation, a param's field) to the
    requester, who may not be allowed to read them: upstream's value-free wording instead."""
    m = _UNDECLARED.match(text)
    if m:
        return f"found no matching overload for '{m.group(1)}'"
    if "does not support field selection" in text:
        return "no such overload"
    return text if len(text) <= _MAX_MESSAGE else text[:_MAX_MESSAGE] + "..."


class _MeteredEvaluator(Evaluator):
    """cel-python's interpreter charging each visited node to the running budget."""

    def sub_evaluator(self, ast: lark.Tree) -> Evaluator:
        return _MeteredEvaluator(ast, self.activation)

    def _visit_tree(self, tree: lark.Tree) -> Any:  # (lark's Interpreter reaches every node through this)
        C.charge(1)
        return super()._visit_tree(tree)


_base_activation: Any = None


def _new_activation() -> Any:
    """The functions' activation, made once: an Evaluator clones it for its variables, never changes it."""
    global _base_activation
    if _base_activation is None:
        import celpy

        runner = celpy.InterpretedRunner(celpy.Environment(), lark.Tree("expr", []), FUNCTIONS)
        _base_activation = runner.new_activation()
    return _base_activation


class Program:
    """One compiled expression; evaluate() is re-entrant."""

    __slots__ = ("expression", "ast", "references")

    def __init__(self, expression: str, ast: lark.Tree, references: frozenset[str]) -> None:
        self.expression = expression
        self.ast = ast
        self.references = references  # the admission variables it names: only those are built

    def evaluate(self, activation: Mapping[str, Any], limit: int = PER_CALL_LIMIT) -> Any:
        """activation values must already be CEL values (to_cel)."""
        _budget, token = C.enter(limit)
        try:
            value = _MeteredEvaluator(self.ast, _new_activation()).evaluate({**_GLOBALS, **activation})
        except C.CostExceeded:
            raise EvalError(_COST_EXCEEDED) from None
        except CELEvalError as e:
            raise EvalError(_message(runtime_message(e))) from None
        except RecursionError:
            raise EvalError("max recursion depth exceeded") from None
        except (TypeError, ValueError, KeyError, ZeroDivisionError, OverflowError, AttributeError, IndexError) as e:
            raise EvalError(_message(str(e)) or type(e).__name__) from None
        finally:
            C.leave(token)
        if isinstance(value, CELEvalError):
            raise EvalError(_message(runtime_message(value)))
        return value


def compile_expression(expression: str) -> Program:
    """Compile (cached by the library per expression) in the admission environment; CompileError
    carries upstream's `compilation failed: ERROR: ...` text."""
    p = cel_compile(expression, ENV)
    return Program(expression, p.ast, p.references)


class LazyMap(celtypes.MapType):
    """A CEL map whose values are computed on first access (policy `variables`)."""

    def __init__(self, thunks: Mapping[str, Callable[[], Any]]) -> None:
        super().__init__()
        self._thunks = dict(thunks)
        for k in thunks:
            dict.__setitem__(self, celtypes.StringType(k), None)

    def __getitem__(self, key: Any) -> Any:
        k = str(key)
        if k not in self._thunks:
            raise KeyError(key)
        v = dict.__getitem__(self, celtypes.StringType(k))
        if v is None:
            v = self._thunks[k]()
            dict.__setitem__(self, celtypes.StringType(k), v)
        return v


_S, _B, _I, _D = celtypes.StringType, celtypes.BoolType, celtypes.IntType, celtypes.DoubleType


def to_cel(value: Any) -> Any:
    """A JSON value as CEL sees it (as `library.to_cel`, without celpy's per-item type checks:
    a decoded request body is only dicts, lists, str, int, float, bool and None)."""
    t = type(value)
    if t is dict:
        m = celtypes.MapType()
        dict.update(m, {str.__new__(_S, k): to_cel(v) for k, v in value.items()})
        return m
    if t is list:
        return celtypes.ListType([to_cel(v) for v in value])
    if t is str:
        return str.__new__(_S, value)
    if t is bool:
        return _B(value)
    if t is int:
        return _I(value)
    if t is float:
        return _D(value)
    return library.to_cel(value)


def cel_type_name(value: Any) -> str:
    """The CEL type name of a value, as upstream's errors name it."""
    for t, name in ((celtypes.BoolType, "bool"), (celtypes.IntType, "int"), (celtypes.UintType, "uint"),
                    (celtypes.DoubleType, "double"), (celtypes.StringType, "string"), (celtypes.BytesType, "bytes"),
                    (celtypes.ListType, "list"), (celtypes.MapType, "map")):
        if isinstance(value, t):
            return name
    return "null_type" if value is None else type(value).__name__

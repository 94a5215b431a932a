"""CEL for admission policies on cel-python: compile once, evaluate with a runtime cost limit.

cel-python has no cost tracking, so evaluation runs in an `Evaluator` that counts the parse-tree
nodes it visits (macro bodies once per element) and stops at upstream's per-call limit
(`PerCallLimit`, 1,000,000 cost units) with upstream's `operation cancelled: actual cost limit
exceeded`. One CEL operation is about ten of cel-python's grammar nodes (expr, conditionalor,
..., primary), so a unit is charged per ten visits; cel-python's ~15 us per visit bounds one
expression at about 1.5 s of CPU.
Errors read as upstream's where cel-python's wording differs (`no such key: x`).
This is the seam to the shared Kubernetes CEL library (`pyk8s.cel`) once it is merged.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping
from typing import Any

import celpy
import lark
from celpy import celtypes
from celpy.evaluation import CELEvalError, Evaluator

__all__ = ["CompileError", "EvalError", "Program", "compile_expression", "to_cel", "cel_type_name", "PER_CALL_LIMIT",
           "LazyMap"]

PER_CALL_LIMIT = 1_000_000  # upstream's celconfig.PerCallLimit
_VISITS_PER_UNIT = 10
_COST_EXCEEDED = "operation cancelled: actual cost limit exceeded"


class CompileError(Exception):
    """An expression that does not parse (message: upstream's `compilation failed: ...` shape)."""


class EvalError(Exception):
    """An evaluation error, worded as upstream's."""


class _Budget:
    __slots__ = ("left",)

    def __init__(self, limit: int) -> None:
        self.left = limit


class _CostExceeded(Exception):
    pass


class _MeteredEvaluator(Evaluator):
    """cel-python's interpreter charging each visited node to a budget shared with macro sub-evaluators."""

    def __init__(self, ast: lark.Tree, activation: Any, budget: _Budget) -> None:
        super().__init__(ast, activation)
        self.budget = budget

    def sub_evaluator(self, ast: lark.Tree) -> Evaluator:
        return _MeteredEvaluator(ast, self.activation, self.budget)

    def _visit_tree(self, tree: lark.Tree) -> Any:  # (lark's Interpreter reaches every node through this)
        b = self.budget
        b.left -= 1
        if b.left < 0:
            raise _CostExceeded()
        return super()._visit_tree(tree)


_env = celpy.Environment()
_NO_KEY = re.compile(r"no such member in mapping: '([^']*)'")


def _translate(msg: str) -> str:
    m = _NO_KEY.search(msg)
    if m:
        return f"no such key: {m.group(1)}"
    if msg.startswith("unsupported operand type") or msg.startswith("'<' not supported"):
        return "no such overload"
    return msg


class Program:
    """One compiled expression; evaluate() is re-entrant."""

    __slots__ = ("expression", "ast", "functions")

    def __init__(self, expression: str, ast: lark.Tree, functions: Mapping[str, Callable[..., Any]]) -> None:
        self.expression = expression
        self.ast = ast
        self.functions = dict(functions)

    def evaluate(self, activation: Mapping[str, Any], limit: int = PER_CALL_LIMIT) -> Any:
        runner = _env.program(self.ast, functions=self.functions)
        ev = _MeteredEvaluator(self.ast, runner.new_activation(), _Budget(limit // _VISITS_PER_UNIT))
        try:
            value = ev.evaluate(dict(activation))
        except _CostExceeded:
            raise EvalError(_COST_EXCEEDED) from None
        except CELEvalError as e:
            raise EvalError(_translate(str(e.args[0]) if e.args else str(e))) from None
        except RecursionError:
            raise EvalError(_COST_EXCEEDED) from None
        except (TypeError, ValueError, KeyError, ZeroDivisionError, OverflowError, AttributeError) as e:
            raise EvalError(_translate(str(e)) or type(e).__name__) from None
        if isinstance(value, CELEvalError):
            raise EvalError(_translate(str(value.args[0]) if value.args else str(value)))
        return value


@functools.lru_cache(maxsize=4096)
def _parse(expression: str) -> lark.Tree:
    try:
        return _env.compile(expression)
    except celpy.CELParseError as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else "syntax error"
        line, col = getattr(e, "line", None) or 1, getattr(e, "column", None) or 1
        raise CompileError(f"compilation failed: ERROR: <input>:{line}:{col}: {first}") from None


def compile_expression(expression: str, functions: Mapping[str, Callable[..., Any]]) -> Program:
    """Parse (cached per expression text) and bind the function library."""
    return Program(expression, _parse(expression), functions)


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


def to_cel(value: Any) -> Any:
    return celpy.json_to_cel(value)


def cel_type_name(value: Any) -> str:
    """The CEL type name of a value, as upstream's errors name it."""
    for t, name in ((celtypes.BoolType, "bool"), (celtypes.IntType, "int"), (celtypes.UintType, "uint"),
                    (celtypes.DoubleType, "double"), (celtypes.StringType, "string"), (celtypes.BytesType, "bytes"),
                    (celtypes.ListType, "list"), (celtypes.MapType, "map")):
        if isinstance(value, t):
            return name
    return "null_type" if value is None else type(value).__name__

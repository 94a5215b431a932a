"""Compile and evaluate Kubernetes CEL expressions on cel-python.

`compile(expression, env)` parses once per (expression, env) and estimates the worst-case
cost; `Program.evaluate(activation)` runs it under a runtime cost limit. Errors read as
upstream's: `compilation failed: ERROR: <input>:1:5: ...`, `no such key: x`,
`operation cancelled: actual cost limit exceeded`.
"""

from __future__ import annotations

import functools
import json
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import celpy
import lark
from celpy import celtypes
from celpy.evaluation import CELEvalError, Evaluator

from . import cost as C
from . import library

__all__ = ["Env", "Program", "CELError", "CompileError", "EvalError", "CostLimitError", "compile",
           "ESTIMATED_COST_LIMIT", "MAX_EXPRESSION_LENGTH"]

# apiextensions' StaticEstimatedCostLimit: what one rule may be estimated to cost
ESTIMATED_COST_LIMIT = 10_000_000
MAX_EXPRESSION_LENGTH = 10 * 1024
COST_LIMIT_MESSAGE = "operation cancelled: actual cost limit exceeded"


class CELError(Exception):
    """An expression that does not compile or fails at run time (message as upstream's)."""


class CompileError(CELError):
    pass


class EvalError(CELError):
    pass


class CostLimitError(EvalError):
    def __init__(self) -> None:
        super().__init__(COST_LIMIT_MESSAGE)


@dataclass(frozen=True)
class Env:
    """What an expression may see: its variables, each with an OpenAPI schema (None: any value).

    Hashable by content, so equal environments share compiled programs."""

    variables: tuple[tuple[str, str], ...] = ()  # (name, canonical JSON of the schema or "null")
    libraries: bool = True  # Kubernetes' CEL libraries (off only for tests of plain CEL)

    @classmethod
    def of(cls, variables: Mapping[str, dict[str, Any] | None]) -> Env:
        return cls(tuple(sorted((k, json.dumps(v, sort_keys=True)) for k, v in variables.items())))

    @functools.cached_property
    def schemas(self) -> dict[str, dict[str, Any] | None]:
        return {k: json.loads(v) for k, v in self.variables}

    @property
    def names(self) -> frozenset[str]:
        return frozenset(k for k, _ in self.variables)


@dataclass
class Program:
    expression: str
    env: Env
    ast: Any
    estimated_cost: int  # worst case, from the schemas' bounds
    references: frozenset[str]  # the variables the expression names (e.g. `oldSelf`: a transition rule)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def evaluate(self, activation: Mapping[str, Any], limit: int = C.PER_CALL_LIMIT,
                 seconds: float = C.PER_CALL_TIME_LIMIT) -> Any:
        """The value (CEL types), or EvalError / CostLimitError as upstream words them."""
        return self.evaluate_with_cost(activation, limit, seconds)[0]

    def evaluate_with_cost(self, activation: Mapping[str, Any], limit: int = C.PER_CALL_LIMIT,
                           seconds: float = C.PER_CALL_TIME_LIMIT) -> tuple[Any, int]:
        """(value, actual cost); `limit` in cost units, `seconds` of wall time (see cost.py)."""
        ctx = {**_GLOBALS, **{k: library.to_cel(v) for k, v in activation.items()}}
        budget, token = C.enter(limit, seconds)
        try:
            ev = _CostEvaluator(self.ast, _activation(self.env))
            value = ev.evaluate(ctx)
        except C.CostExceeded:
            raise CostLimitError() from None
        except CELEvalError as e:
            raise EvalError(runtime_message(e)) from None
        except RecursionError:
            raise EvalError("max recursion depth exceeded") from None
        except (TypeError, ValueError, KeyError, ZeroDivisionError, OverflowError, IndexError) as e:
            raise EvalError(str(e) or type(e).__name__) from None
        finally:
            C.leave(token)
        if isinstance(value, CELEvalError):
            raise EvalError(runtime_message(value))
        return value, budget.used


# variables every expression has: the library namespaces
_GLOBALS: dict[str, Any] = {"format": library.FORMAT, "strings": library.STRINGS, "optional": library.OPTIONAL}


class _CostEvaluator(Evaluator):
    """cel-python's interpreter, charging one unit per node it visits."""

    def sub_evaluator(self, ast: lark.Tree) -> Evaluator:
        return _CostEvaluator(ast, activation=self.activation)

    def _visit_tree(self, tree: lark.Tree) -> Any:
        C.charge(1)
        return super()._visit_tree(tree)

    def addition(self, tree: lark.Tree) -> Any:
        v = super().addition(tree)
        if isinstance(v, (str, list)):  # building strings or lists costs their size
            C.charge(len(v) // 10)
        return v


@functools.lru_cache(maxsize=1)
def _celpy_env() -> Any:
    # building celpy's grammar (lark's LALR tables) takes ~0.4 s: paid on the first expression, not at every start
    return celpy.Environment()


_parse_lock = threading.Lock()  # lark's parser keeps state per call


@functools.lru_cache(maxsize=2)
def _activation_for(libraries: bool) -> Any:
    return _runner_for(libraries).new_activation()


def _activation(env: Env) -> Any:
    # the evaluator clones this base before binding variables: built once, not per evaluation
    return _activation_for(env.libraries)


@functools.lru_cache(maxsize=2)
def _runner_for(libraries: bool) -> Any:
    return celpy.InterpretedRunner(_celpy_env(), lark.Tree("expr", []), library.FUNCTIONS if libraries else None)


_NO_MEMBER = re.compile(r"no such (?:member in mapping|key)[^']*'?([^']*)'?")


def runtime_message(e: CELEvalError) -> str:
    text = str(e.args[0]) if e.args else str(e)
    m = _NO_MEMBER.match(text)
    if m:
        key = m.group(1)
        if not key and len(e.args) > 2 and e.args[2]:
            key = str(e.args[2][0])
        return f"no such key: {key}"
    if text.startswith(("found no matching overload", "no such overload", "unsupported operand")):
        return "no such overload"
    if "divide by zero" in text or "division by zero" in text:
        return "division by zero"
    if "modulus by zero" in text or "modulo by zero" in text:
        return "modulus by zero"
    return text


def _snippet(expression: str, line: int, col: int) -> str:
    src = expression.split("\n")[line - 1] if expression else ""
    return f"\n | {src}\n | {'.' * max(col - 1, 0)}^"


def _syntax_error(expression: str, e: Exception) -> CompileError:
    line = int(getattr(e, "line", 0) or 0)
    col = int(getattr(e, "column", 0) or 0)
    text = str(e).rstrip("\n").split("\n")
    if not col and text and "^" in text[-1]:
        col = text[-1].find("^") + 1
    line = line or 1
    what = "Syntax error: " + (text[0] if text and text[0] != expression else "mismatched input")
    return CompileError(f"compilation failed: ERROR: <input>:{line}:{col}: {what}{_snippet(expression, line, col)}")


def _idents(ast: Any) -> frozenset[str]:
    return frozenset(str(t.children[0]) for t in ast.iter_subtrees() if t.data == "ident" and t.children)


@functools.lru_cache(maxsize=8192)
def compile(expression: str, env: Env = Env()) -> Program:  # noqa: A001 - upstream's verb
    """Parse and estimate once per (expression, env); raises CompileError in upstream's words."""
    if len(expression) > MAX_EXPRESSION_LENGTH:
        raise CompileError(f"compilation failed: ERROR: <input>:1:1: expression too long "
                           f"({len(expression)} > {MAX_EXPRESSION_LENGTH})")
    try:
        return _compile(expression, env)
    except RecursionError:  # as cel-go's parser recursion limit: too deeply nested to check
        raise CompileError(_TOO_DEEP) from None


# cel-python's interpreter recurses a few Python frames per syntax-tree level: deeper trees
# would exhaust Python's stack while evaluating, so they are refused when compiling
MAX_TREE_DEPTH = 160
_TOO_DEEP = "compilation failed: ERROR: <input>:1:1: max recursion depth exceeded"


def _depth(ast: Any) -> int:
    deepest, stack = 0, [(ast, 1)]
    while stack:
        node, d = stack.pop()
        deepest = max(deepest, d)
        stack.extend((c, d + 1) for c in node.children if isinstance(c, lark.Tree))
    return deepest


def _compile(expression: str, env: Env) -> Program:
    with _parse_lock:
        try:
            ast = _celpy_env().compile(expression)
        except Exception as e:  # celpy raises CELParseError and lark's own errors
            raise _syntax_error(expression, e) from None
    if _depth(ast) > MAX_TREE_DEPTH:
        raise CompileError(_TOO_DEEP)
    refs = _idents(ast)
    est = C.Estimator(dict(env.schemas))
    estimated, _ = est.estimate(ast)
    if est.errors:
        col, msg = est.errors[0]
        raise CompileError(f"compilation failed: ERROR: <input>:1:{col}: {msg}{_snippet(expression, 1, col)}")
    declared = env.names | set(_GLOBALS)
    for name in sorted(refs):
        if name not in declared and not _bound_by_macro(ast, name) and name not in library.FUNCTIONS \
                and name not in _BUILTINS:
            col = _first_column(expression, name)
            raise CompileError(f"compilation failed: ERROR: <input>:1:{col}: undeclared reference to '{name}' "
                               f"(in container ''){_snippet(expression, 1, col)}")
    return Program(expression, env, ast, estimated, frozenset(refs & env.names))


_BUILTINS = frozenset({"has", "size", "int", "uint", "double", "string", "bytes", "bool", "type", "dyn",
                       "duration", "timestamp", "matches", "list", "map", "null_type", "true", "false", "null"})


def _bound_by_macro(ast: Any, name: str) -> bool:
    for t in ast.iter_subtrees():
        if t.data == "member_dot_arg" and len(t.children) > 2 and str(t.children[1]) in C.COMPREHENSIONS:
            args = t.children[2]
            if isinstance(args, lark.Tree) and args.children and C._ident_name(args.children[0]) == name:
                return True
    return False


def _first_column(expression: str, name: str) -> int:
    m = re.search(r"(?<![\w.])" + re.escape(name) + r"\b", expression)
    return m.start() + 1 if m else 1


def to_python(v: Any) -> Any:
    """A CEL result as plain Python (bool, int, float, str, list, dict, None)."""
    if isinstance(v, celtypes.BoolType):
        return bool(v)
    if isinstance(v, (celtypes.IntType, celtypes.UintType)):
        return int(v)
    if isinstance(v, celtypes.DoubleType):
        return float(v)
    if isinstance(v, celtypes.StringType):
        return str(v)
    if isinstance(v, list):
        return [to_python(x) for x in v]
    if isinstance(v, dict):
        return {to_python(k): to_python(x) for k, x in v.items()}
    return v

"""CEL device selectors (resource.k8s.io `selectors[].cel.expression`) on cel-python.

As upstream's k8s.io/dynamic-resource-allocation/cel: an expression sees one variable,
`device`, with `driver`, `attributes` and `capacity`; attributes and capacity are maps from
a domain to a map of names, an unqualified name belonging to the driver's own domain
(`device.attributes["gpu.pyk8s.io"].model`). Capacity values are Kubernetes quantities with
the CEL quantity library's methods (`compareTo`, `isGreaterThan`, `isLessThan`, `asInteger`,
`asApproximateFloat`, `add`, `sub`, `sign`, `isInteger`) and `quantity("8Gi")`, `isQuantity()`.

Each expression is parsed once and cached (`compile_selector`). cel-python has no type
checker nor cost estimator, so the cost check is our own static bound: one unit per
operation, comprehensions (`all`, `exists`, `map`, ...) multiplying their body by the size of
what they iterate (a literal's length, or the largest map a device can have). Expressions
above upstream's limit are refused at validation with upstream's message.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import celpy
import lark
from celpy import celtypes
from celpy.evaluation import CELEvalError

from ..cel import quantity
from ..cel.env import runtime_message

__all__ = ["CompiledSelector", "CELError", "compile_selector", "device_matches", "estimate_cost", "MAX_COST",
           "MAX_EXPRESSION_LENGTH"]

# resource.k8s.io's CELSelectorExpressionMaxCost and CELSelectorExpressionMaxLength
MAX_COST = 1_000_000
MAX_EXPRESSION_LENGTH = 10 * 1024
# ResourceSliceMaxAttributesAndCapacitiesPerDevice: the most entries a device map can hold
_MAX_DEVICE_MAP = 32
_COMPREHENSIONS = frozenset({"all", "exists", "exists_one", "map", "filter"})


class CELError(Exception):
    """A selector that does not compile, or fails at run time (message as upstream's)."""


@dataclass(frozen=True)
class CompiledSelector:
    expression: str
    program: Any
    cost: int


_FUNCTIONS: dict[str, Any] = quantity.FUNCTIONS

_env = celpy.Environment()
_lock = threading.Lock()


def _literal_size(node: lark.Tree) -> int | None:
    """The element count of a list or map literal at the root of a member chain, if it is one."""
    while isinstance(node, lark.Tree) and node.data in ("member", "primary") and len(node.children) == 1:
        node = node.children[0]  # type: ignore[assignment]
    if isinstance(node, lark.Tree) and node.data in ("list_lit", "map_lit"):
        inner = node.children[0] if node.children else None
        if not isinstance(inner, lark.Tree):
            return 0
        n = len(inner.children)
        return n // 2 if node.data == "map_lit" else n
    return None


def estimate_cost(tree: Any) -> int:
    """A static upper bound of the work an expression does (see the module docstring)."""
    if not isinstance(tree, lark.Tree):
        return 0
    if tree.data == "member_dot_arg" and len(tree.children) >= 2:
        target, method = tree.children[0], tree.children[1]
        args = tree.children[2] if len(tree.children) > 2 else None
        if str(method) in _COMPREHENSIONS:
            size = _literal_size(target)  # type: ignore[arg-type]
            n = _MAX_DEVICE_MAP if size is None else size
            return 1 + estimate_cost(target) + n * (1 + estimate_cost(args))
    own = 1 if tree.data in ("primary", "member_dot", "member_dot_arg", "member_index", "ident_arg") else 0
    if tree.data.startswith(("relation_", "addition_", "multiplication_", "unary_")):
        own = 1
    return own + sum(estimate_cost(c) for c in tree.children)


def _compile_error(expression: str, e: Exception) -> CELError:
    # upstream: "compilation failed: ERROR: <input>:1:17: Syntax error: ..."; cel-python points
    # at the column with a caret instead
    lines = str(e).rstrip("\n").split("\n")
    col = lines[-1].find("^") + 1 if lines and "^" in lines[-1] else 0
    where = f"<input>:1:{col}: " if col else ""
    return CELError(f"compilation failed: ERROR: {where}Syntax error: {lines[0] if lines else type(e).__name__}")


@functools.lru_cache(maxsize=4096)
def compile_selector(expression: str) -> CompiledSelector:
    """Parse once (cached by the text): raises CELError as a compile error upstream would."""
    with _lock:  # lark's parser keeps state per call; one compile at a time
        try:
            ast = _env.compile(expression)
        except Exception as e:  # celpy raises CELParseError and lark's own errors
            raise _compile_error(expression, e) from None
        cost = estimate_cost(ast)
        program = _env.program(ast, functions=_FUNCTIONS)
    return CompiledSelector(expression, program, cost)


def _domain_maps(driver: str, entries: Mapping[str, Any], capacity: bool) -> celtypes.MapType:
    by_domain: dict[str, dict[Any, Any]] = {}
    for name, value in (entries or {}).items():
        domain, _, short = name.rpartition("/")
        by_domain.setdefault(domain or driver, {})[celtypes.StringType(short)] = (
            _capacity_value(value) if capacity else _attribute_value(value))
    return celtypes.MapType({celtypes.StringType(d): celtypes.MapType(m) for d, m in by_domain.items()})


def _attribute_value(v: Any) -> Any:
    """DeviceAttribute: exactly one of int, bool, string, version."""
    if not isinstance(v, dict):
        return celtypes.NullType()
    if "int" in v:
        return celtypes.IntType(int(v["int"]))
    if "bool" in v:
        return celtypes.BoolType(bool(v["bool"]))
    if "string" in v:
        return celtypes.StringType(str(v["string"]))
    if "version" in v:
        return celtypes.StringType(str(v["version"]))
    return celtypes.NullType()


def _capacity_value(v: Any) -> Any:
    """v1beta1 DeviceCapacity is {value: quantity}."""
    raw = v.get("value") if isinstance(v, dict) else v
    return quantity.quantity_value(raw)


def device_activation(driver: str, basic: Mapping[str, Any]) -> dict[str, Any]:
    """The `device` variable for one device of a ResourceSlice (v1beta1 `basic` fields)."""
    return {"device": celtypes.MapType({
        celtypes.StringType("driver"): celtypes.StringType(driver),
        celtypes.StringType("attributes"): _domain_maps(driver, basic.get("attributes") or {}, False),
        celtypes.StringType("capacity"): _domain_maps(driver, basic.get("capacity") or {}, True),
    })}


def device_matches(selector: CompiledSelector, activation: dict[str, Any]) -> bool:
    """Evaluate against a device: CELError with upstream's wording when it fails or is not bool."""
    try:
        result = selector.program.evaluate(activation)
    except CELEvalError as e:
        raise CELError(f"CEL runtime error: {runtime_message(e)}") from None
    except (TypeError, ValueError, KeyError, ZeroDivisionError, OverflowError) as e:
        raise CELError(f"CEL runtime error: {e}") from None
    if isinstance(result, CELEvalError):
        raise CELError(f"CEL runtime error: {runtime_message(result)}")
    if not isinstance(result, celtypes.BoolType) and not isinstance(result, bool):
        raise CELError("CEL runtime error: must evaluate to bool")
    return bool(result)

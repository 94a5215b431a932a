"""CEL cost: a static estimate at compile time and the actual cost while evaluating.

cel-python has neither, so both are ours, after cel-go's model: one unit per operation
(a field or index lookup, a call, an operator), comprehensions (`all`, `exists`, `map`, ...)
multiplying their body by the size of the list or map they iterate, and string or list
building charged a tenth of a unit per character or element. The estimate takes sizes from
the schema (`maxItems`, `maxProperties`, `maxLength`) or, where unbounded, from the largest
request the API server accepts, as upstream does.
"""

from __future__ import annotations

import contextvars
import time
from dataclasses import dataclass
from typing import Any

import lark

__all__ = ["PER_CALL_LIMIT", "CostExceeded", "Budget", "charge", "Estimator", "MAX_REQUEST_BYTES"]

# upstream's celconfig.PerCallLimit: the runtime cost one evaluation may spend
PER_CALL_LIMIT = 1_000_000
# cel-python interprets about a thousand times slower than cel-go, so upstream's unit limit
# alone would let one evaluation hold the API server for a minute: an evaluation also stops,
# with the same error, after this much wall time.
PER_CALL_TIME_LIMIT = 0.5
# upstream's 3 MiB request limit bounds the size of anything unbounded in a schema
MAX_REQUEST_BYTES = 3 * 1024 * 1024
COMPREHENSIONS = frozenset({"all", "exists", "exists_one", "map", "filter"})


class CostExceeded(Exception):
    """Raised out of an evaluation that spent more than its budget (not a CEL error value)."""


@dataclass
class Budget:
    limit: int
    deadline: float
    used: int = 0
    checks: int = 0


_budget: contextvars.ContextVar[Budget | None] = contextvars.ContextVar("cel_budget", default=None)


def charge(units: int) -> None:
    """Spend units of the running evaluation's budget (no-op outside an evaluation)."""
    b = _budget.get()
    if b is None or units <= 0:
        return
    b.used += units
    if b.used > b.limit:
        raise CostExceeded()
    b.checks += 1
    if b.checks & 63 == 0 and time.monotonic() > b.deadline:
        raise CostExceeded()


def enter(limit: int, seconds: float = PER_CALL_TIME_LIMIT) -> tuple[Budget, contextvars.Token[Budget | None]]:
    b = Budget(limit, time.monotonic() + seconds)
    return b, _budget.set(b)


def leave(token: contextvars.Token[Budget | None]) -> None:
    _budget.reset(token)


# ---- static estimate ----------------------------------------------------------------------
def _min_serialized_size(schema: dict[str, Any] | None) -> int:
    """The fewest bytes one element can take in a request (upstream's estimate of list sizes)."""
    t = (schema or {}).get("type")
    if t == "string":
        return 3 + int((schema or {}).get("minLength") or 0)  # `"",`
    if t in ("integer", "number", "boolean"):
        return 2  # `0,`
    if t == "object" or (schema or {}).get("x-kubernetes-preserve-unknown-fields"):
        return 3  # `{},`
    if t == "array":
        return 3  # `[],`
    return 2


def max_elements(schema: dict[str, Any] | None) -> int:
    """How many elements (or characters) a schema node can hold at most."""
    s = schema or {}
    t = s.get("type")
    if t == "array":
        if s.get("maxItems") is not None:
            return int(s["maxItems"])
        return MAX_REQUEST_BYTES // _min_serialized_size(s.get("items"))
    if t == "object":
        if s.get("maxProperties") is not None:
            return int(s["maxProperties"])
        ap = s.get("additionalProperties")
        return MAX_REQUEST_BYTES // (4 + _min_serialized_size(ap if isinstance(ap, dict) else None))
    if t == "string":
        if s.get("maxLength") is not None:
            return int(s["maxLength"])
        return MAX_REQUEST_BYTES
    return 1


def child_schema(schema: dict[str, Any] | None, name: str | None) -> dict[str, Any] | None:
    """The schema of a field (name) or of an element (None) of a node; None when unknown."""
    if not isinstance(schema, dict):
        return None
    if name is None:
        if schema.get("type") == "array":
            return schema.get("items")
        ap = schema.get("additionalProperties")
        return ap if isinstance(ap, dict) else None
    props = schema.get("properties") or {}
    if name in props:
        return props[name]
    ap = schema.get("additionalProperties")
    return ap if isinstance(ap, dict) else None


# the default size when nothing bounds a value and no schema says (a literal, a function result)
_UNKNOWN_LIST = 1024
_UNKNOWN_STRING = MAX_REQUEST_BYTES
_STRING_FUNCS = frozenset({"matches", "find", "findAll", "contains", "startsWith", "endsWith", "split",
                           "replace", "lowerAscii", "upperAscii", "indexOf", "lastIndexOf", "trim", "join",
                           "validate", "url", "isURL", "quote", "reverse", "ip", "cidr", "isIP", "isCIDR"})


class Estimator:
    """The worst-case cost of a parsed expression; `scope` maps variables to their schemas
    (None: a value of unknown shape)."""

    def __init__(self, scope: dict[str, dict[str, Any] | None]) -> None:
        self.scope = dict(scope)
        self.errors: list[tuple[int, str]] = []  # (column, message): fields the schema does not have

    def _check_field(self, schema: dict[str, Any] | None, tok: Any) -> None:
        """As cel-go's type checker on a typed object: an undeclared field is a compile error.
        Only where the schema closes the object (declared properties, nothing else allowed)."""
        if not isinstance(schema, dict) or schema.get("type") != "object" or not schema.get("properties"):
            return
        if schema.get("x-kubernetes-preserve-unknown-fields") or "additionalProperties" in schema:
            return
        name = str(tok)
        if name in schema["properties"]:
            return
        if schema.get("x-kubernetes-embedded-resource") and name in ("apiVersion", "kind", "metadata"):
            return
        self.errors.append((int(getattr(tok, "column", 0) or 0), f"undefined field '{name}'"))

    # returns (cost, schema of the value or None)
    def estimate(self, tree: Any) -> tuple[int, dict[str, Any] | None]:
        if not isinstance(tree, lark.Tree):
            return 0, None
        d = tree.data
        if d in ("expr", "conditionalor", "conditionaland", "relation", "addition", "multiplication",
                 "unary", "member") and len(tree.children) == 1:
            return self.estimate(tree.children[0])
        if d == "primary":
            c = tree.children[0] if tree.children else None
            if isinstance(c, lark.Tree) and c.data == "ident":
                return 1, self.scope.get(str(c.children[0]))
            if isinstance(c, lark.Tree) and c.data == "list_lit":
                cost, _ = self._sum(c)
                return 1 + cost, {"type": "array", "maxItems": self._literal_len(c)}
            if isinstance(c, lark.Tree) and c.data == "literal" and c.children:
                lit = str(c.children[0])
                if lit[:1] in "\"'" or lit[:2].lower() in ("r'", 'r"', "b'", 'b"'):
                    return 1, {"type": "string", "maxLength": len(lit)}
            cost, _ = self._sum(tree)
            return cost + 1, None
        if d == "member_dot":
            cost, sch = self.estimate(tree.children[0])
            self._check_field(sch, tree.children[1])
            return cost + 1, child_schema(sch, str(tree.children[1]))
        if d == "member_index":
            cost, sch = self.estimate(tree.children[0])
            icost, _ = self.estimate(tree.children[1])
            return cost + icost + 1, child_schema(sch, None)
        if d == "member_dot_arg":
            return self._method(tree)
        cost, _ = self._sum(tree)
        return cost + 1, None

    def _sum(self, tree: lark.Tree) -> tuple[int, None]:
        return sum(self.estimate(c)[0] for c in tree.children), None

    @staticmethod
    def _literal_len(lit: lark.Tree) -> int:
        inner = lit.children[0] if lit.children else None
        return len(inner.children) if isinstance(inner, lark.Tree) else 0

    def _method(self, tree: lark.Tree) -> tuple[int, dict[str, Any] | None]:
        target, method = tree.children[0], str(tree.children[1])
        args = tree.children[2] if len(tree.children) > 2 else None
        tcost, tsch = self.estimate(target)
        if method in COMPREHENSIONS and isinstance(args, lark.Tree) and len(args.children) == 2:
            n = max_elements(tsch) if tsch is not None else _UNKNOWN_LIST
            var = _ident_name(args.children[0])
            elem = child_schema(tsch, None) if (tsch or {}).get("type") == "array" else (
                {"type": "string"} if tsch is not None else None)
            saved = self.scope.get(var, None) if var else None
            if var:
                self.scope[var] = elem
            bcost, bsch = self.estimate(args.children[1])
            if var:
                if saved is None:
                    self.scope.pop(var, None)
                else:
                    self.scope[var] = saved
            out = {"type": "array", "maxItems": n, "items": bsch} if method in ("map", "filter") else None
            return tcost + 1 + n * (bcost + 1), out
        acost = sum(self.estimate(a)[0] for a in (args.children if isinstance(args, lark.Tree) else []))
        work = 0
        if method in _STRING_FUNCS:
            size = max_elements(tsch) if tsch is not None else _UNKNOWN_STRING
            work = size // 10
        elif method in ("isSorted", "sum", "max", "min", "indexOf", "lastIndexOf"):
            work = max_elements(tsch) if tsch is not None else _UNKNOWN_LIST
        elif method == "check":
            work = 350
        return tcost + acost + 1 + work, None


def _ident_name(t: Any) -> str | None:
    if isinstance(t, lark.Tree):
        for sub in t.iter_subtrees():
            if sub.data == "ident":
                return str(sub.children[0])
    return None

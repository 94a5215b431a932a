"""The Kubernetes CEL quantity library (`quantity("8Gi")`, `isQuantity`, `compareTo`, ...).

Shared by CRD validation rules, admission policies and DRA device selectors.
"""

from __future__ import annotations

from typing import Any

from celpy import celtypes
from celpy.evaluation import CELEvalError

from ..api.quantity import Quantity, parse_quantity

__all__ = ["CELQuantity", "FUNCTIONS", "quantity_value"]


class CELQuantity:
    """A Kubernetes quantity as a CEL value (the `kubernetes.Quantity` type)."""

    __slots__ = ("q",)

    def __init__(self, q: Quantity) -> None:
        self.q = q

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CELQuantity) and self.q.cmp(other.q) == 0

    def __hash__(self) -> int:
        return hash(self.q)

    def __repr__(self) -> str:
        return f"quantity({str(self.q)!r})"


def quantity_value(raw: Any) -> CELQuantity:
    """A quantity string or number from an object, as CEL sees it."""
    return CELQuantity(parse_quantity(raw))


def _q(v: Any) -> Quantity:
    if isinstance(v, CELQuantity):
        return v.q
    raise CELEvalError("no such overload", TypeError, None)


def _quantity(s: Any) -> CELQuantity:
    if not isinstance(s, str):
        raise CELEvalError("no such overload", TypeError, None)
    try:
        return CELQuantity(parse_quantity(str(s)))
    except ValueError as e:
        raise CELEvalError(f"quantities must match the regular expression: {e}", ValueError, None) from None


def _is_quantity(s: Any) -> celtypes.BoolType:
    try:
        parse_quantity(str(s))
    except ValueError:
        return celtypes.BoolType(False)
    return celtypes.BoolType(True)


def _as_integer(a: Any) -> celtypes.IntType:
    q = _q(a)
    n = q.to_int()
    if Quantity.from_int(n).cmp(q) != 0 or not -(2**63) <= n < 2**63:
        raise CELEvalError("cannot convert value to integer", ValueError, None)
    return celtypes.IntType(n)


def _is_integer(a: Any) -> celtypes.BoolType:
    q = _q(a)
    n = q.to_int()
    return celtypes.BoolType(Quantity.from_int(n).cmp(q) == 0 and -(2**63) <= n < 2**63)


def _other(b: Any) -> Quantity:
    if isinstance(b, CELQuantity):
        return b.q
    if isinstance(b, int) and not isinstance(b, bool):
        return Quantity.from_int(int(b))
    raise CELEvalError("no such overload", TypeError, None)


FUNCTIONS: dict[str, Any] = {
    "quantity": _quantity,
    "isQuantity": _is_quantity,
    "compareTo": lambda a, b: celtypes.IntType(_q(a).cmp(_q(b))),
    "isGreaterThan": lambda a, b: celtypes.BoolType(_q(a).cmp(_q(b)) > 0),
    "isLessThan": lambda a, b: celtypes.BoolType(_q(a).cmp(_q(b)) < 0),
    "asInteger": _as_integer,
    "asApproximateFloat": lambda a: celtypes.DoubleType(_q(a).to_float()),
    "isInteger": _is_integer,
    "sign": lambda a: celtypes.IntType(_q(a).cmp(Quantity())),
    "add": lambda a, b: CELQuantity(_q(a) + _other(b)),
    "sub": lambda a, b: CELQuantity(_q(a) - _other(b)),
}

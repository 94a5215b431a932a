"""A small JSONPath evaluator covering what CRD printer columns use.

Kubernetes' jsonpath dialect: `.field`, `['field']`, `[n]` (negative counts from the end),
`[start:end:step]`, `[*]` / `.*`, `..field` (recursive descent), unions `[a,b]`, and
filters `[?(@.type=="Ready")]` with == != < > <= >= or bare existence `[?(@.x)]`.
Missing keys yield no result (the CRD convertor sets AllowMissingKeys). A path is parsed
once into steps; evaluation is a fold over a list of current values.
"""

from __future__ import annotations

import json
import re
from decimal import Decimal
from functools import lru_cache
from typing import Any

__all__ = ["JSONPath", "JSONPathError", "compile_path", "find_results", "print_value"]


class JSONPathError(ValueError):
    pass


_NAME_END = re.compile(r"[.\[\]\s()=!<>,]")
_NUMBER = re.compile(r"-?\d+(\.\d+)?([eE][-+]?\d+)?")

# Step kinds
_FIELD, _RECURSE, _INDEX, _SLICE, _WILDCARD, _UNION, _FILTER = range(7)


class _Parser:
    def __init__(self, text: str) -> None:
        self.s = text
        self.i = 0

    def peek(self, n: int = 1) -> str:
        return self.s[self.i : self.i + n]

    def error(self, what: str) -> JSONPathError:
        return JSONPathError(f"unrecognized JSONPath {self.s!r} at {self.i}: {what}")

    def parse_path(self, stop: str = "") -> list[tuple]:
        steps: list[tuple] = []
        while self.i < len(self.s):
            c = self.s[self.i]
            if stop and c in stop:
                break
            if c in " \t":
                break
            if self.peek(2) == "..":
                self.i += 2
                steps.append((_RECURSE,))
                if self.peek() == "[":
                    continue
                if self.peek() == "*":
                    self.i += 1
                    steps.append((_WILDCARD,))
                    continue
                steps.append((_FIELD, self.name()))
            elif c == ".":
                self.i += 1
                if self.peek() == "*":
                    self.i += 1
                    steps.append((_WILDCARD,))
                elif self.i < len(self.s) and self.s[self.i] not in ".[":
                    steps.append((_FIELD, self.name()))
            elif c == "[":
                self.i += 1
                steps.append(self.bracket())
            else:
                raise self.error(f"unexpected {c!r}")
        return steps

    def name(self) -> str:
        m = _NAME_END.search(self.s, self.i)
        end = m.start() if m else len(self.s)
        if end == self.i:
            raise self.error("expected a field name")
        name = self.s[self.i : end]
        self.i = end
        return name

    def bracket(self) -> tuple:
        s = self.s
        if self.peek(2) == "?(":
            self.i += 2
            step = self.filter()
            if self.peek(2) != ")]":
                raise self.error("unterminated filter")
            self.i += 2
            return step
        end = self.find_close()
        body = s[self.i : end].strip()
        self.i = end + 1
        if body == "*":
            return (_WILDCARD,)
        parts = _split_union(body)
        items = [_bracket_item(p.strip(), self) for p in parts]
        if len(items) == 1:
            return items[0]
        return (_UNION, tuple(items))

    def find_close(self) -> int:
        quote = ""
        for j in range(self.i, len(self.s)):
            ch = self.s[j]
            if quote:
                if ch == quote:
                    quote = ""
            elif ch in "'\"":
                quote = ch
            elif ch == "]":
                return j
        raise self.error("missing ']'")

    def filter(self) -> tuple:
        left = self.operand()
        self.skip_ws()
        op = None
        for cand in ("==", "!=", "<=", ">=", "<", ">"):
            if self.s.startswith(cand, self.i):
                op = cand
                self.i += len(cand)
                break
        right = None
        if op is not None:
            self.skip_ws()
            right = self.operand()
            self.skip_ws()
        return (_FILTER, left, op, right)

    def skip_ws(self) -> None:
        while self.i < len(self.s) and self.s[self.i] in " \t":
            self.i += 1

    def operand(self) -> tuple:
        self.skip_ws()
        c = self.peek()
        if c == "@":
            self.i += 1
            return ("path", tuple(self.parse_path(stop=" )=!<>")))
        if c in "'\"":
            end = self.s.find(c, self.i + 1)
            if end < 0:
                raise self.error("unterminated string")
            lit = self.s[self.i + 1 : end]
            self.i = end + 1
            return ("lit", lit)
        m = _NUMBER.match(self.s, self.i)
        if m:
            self.i = m.end()
            txt = m.group(0)
            return ("lit", float(txt) if m.group(1) or m.group(2) else int(txt))
        for word, val in (("true", True), ("false", False), ("nil", None), ("null", None)):
            if self.s.startswith(word, self.i):
                self.i += len(word)
                return ("lit", val)
        raise self.error("expected an operand")


def _split_union(body: str) -> list[str]:
    parts, cur, quote = [], "", ""
    for ch in body:
        if quote:
            cur += ch
            if ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
            cur += ch
        elif ch == ",":
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    return parts


def _bracket_item(p: str, parser: _Parser) -> tuple:
    if len(p) >= 2 and p[0] == p[-1] and p[0] in "'\"":
        return (_FIELD, p[1:-1])
    if ":" in p:
        bits = p.split(":")
        if len(bits) > 3:
            raise parser.error(f"bad slice {p!r}")
        try:
            vals = [int(b) if b.strip() else None for b in bits] + [None] * (3 - len(bits))
        except ValueError:
            raise parser.error(f"bad slice {p!r}") from None
        return (_SLICE, vals[0], vals[1], vals[2])
    try:
        return (_INDEX, int(p))
    except ValueError:
        return (_FIELD, p)  # k8s also accepts bare names inside brackets


def _descendants(v: Any, out: list) -> None:
    out.append(v)
    if isinstance(v, dict):
        for x in v.values():
            _descendants(x, out)
    elif isinstance(v, list):
        for x in v:
            _descendants(x, out)


def _apply(step: tuple, values: list) -> list:
    kind = step[0]
    out: list = []
    if kind == _FIELD:
        key = step[1]
        for v in values:
            if isinstance(v, dict) and key in v:
                out.append(v[key])
    elif kind == _RECURSE:
        for v in values:
            _descendants(v, out)
    elif kind == _INDEX:
        i = step[1]
        for v in values:
            if isinstance(v, list):
                j = i + len(v) if i < 0 else i
                if 0 <= j < len(v):
                    out.append(v[j])
    elif kind == _SLICE:
        for v in values:
            if isinstance(v, list):
                out.extend(v[slice(step[1], step[2], step[3])])
    elif kind == _WILDCARD:
        for v in values:
            if isinstance(v, dict):
                out.extend(v.values())
            elif isinstance(v, list):
                out.extend(v)
    elif kind == _UNION:
        for v in values:
            for sub in step[1]:
                out.extend(_apply(sub, [v]))
    elif kind == _FILTER:
        _, left, op, right = step
        for v in values:
            for item in v if isinstance(v, list) else ():
                if _filter_ok(item, left, op, right):
                    out.append(item)
    return out


def _operand_values(item: Any, operand: tuple) -> list:
    if operand[0] == "lit":
        return [operand[1]]
    vals = [item]
    for step in operand[1]:
        vals = _apply(step, vals)
    return vals


def _filter_ok(item: Any, left: tuple, op: str | None, right: tuple | None) -> bool:
    lv = _operand_values(item, left)
    if op is None:
        return bool(lv)
    rv = _operand_values(item, right) if right is not None else []
    if not lv or not rv:
        return False
    a, b = lv[0], rv[0]
    try:
        if op == "==":
            return a == b
        if op == "!=":
            return a != b
        if op == "<":
            return a < b
        if op == ">":
            return a > b
        if op == "<=":
            return a <= b
        return a >= b
    except TypeError:
        return False


class JSONPath:
    """A compiled path; `find(obj)` returns every match (possibly none)."""

    __slots__ = ("text", "steps")

    def __init__(self, text: str) -> None:
        self.text = text
        t = text.strip()
        if t.startswith("{") and t.endswith("}"):
            t = t[1:-1].strip()
        if t.startswith("$"):
            t = t[1:]
        p = _Parser(t)
        self.steps = tuple(p.parse_path())
        if p.i != len(t):
            raise p.error("trailing characters")

    def find(self, obj: Any) -> list:
        vals = [obj]
        for step in self.steps:
            vals = _apply(step, vals)
            if not vals:
                break
        return vals


@lru_cache(maxsize=1024)
def compile_path(text: str) -> JSONPath:
    return JSONPath(text)


def find_results(text: str, obj: Any) -> list:
    return compile_path(text).find(obj)


def _go_float(f: float) -> str:
    """Go's %v for float64 (strconv 'g', shortest digits): exponent form below 1e-4 or from 1e6."""
    if f != f:
        return "NaN"
    if f in (float("inf"), float("-inf")):
        return "+Inf" if f > 0 else "-Inf"
    if f == 0:
        return "0"
    sign, digit_tuple, exp = Decimal(repr(f)).as_tuple()
    digits = "".join(map(str, digit_tuple))
    lead = int(exp) + len(digits) - 1  # decimal exponent of the leading digit
    digits = digits.rstrip("0") or "0"
    neg = "-" if sign else ""
    if lead < -4 or lead >= 6:
        m = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{neg}{m}e{'-' if lead < 0 else '+'}{abs(lead):02d}"
    if lead < 0:
        return f"{neg}0.{'0' * (-lead - 1)}{digits}"
    whole, frac = digits[: lead + 1], digits[lead + 1 :]
    whole += "0" * (lead + 1 - len(whole))
    return f"{neg}{whole}.{frac}" if frac else f"{neg}{whole}"


def _go_json(v: Any) -> str:
    # encoding/json: sorted map keys, compact, and HTML-safe escaping of <, >, &.
    s = json.dumps(v, separators=(",", ":"), sort_keys=True, ensure_ascii=False)
    return s.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def print_value(v: Any) -> str:
    """How kubectl's jsonpath prints one result: JSON for maps/lists, text for scalars."""
    if isinstance(v, (dict, list)):
        return _go_json(v)
    if isinstance(v, str):
        return v
    if isinstance(v, bool):
        return "true" if v else "false"
    if v is None:
        return "null"
    if isinstance(v, float):
        return _go_float(v)
    return str(v)

"""Label selectors: the string syntax, metav1.LabelSelector, and fast matching.

Parsing follows apimachinery's labels.Parse token for token (a small lexer plus a
recursive-descent parser), so the accepted language and every error message match
upstream's. A parsed selector is compiled once into a tuple of checks; `matches` is on
the hot path of every filtered list and watch event, so it does no parsing, no
allocation beyond the loop, and short-circuits on the first failing requirement.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from functools import lru_cache
from typing import Any

from .errors import StatusError

__all__ = [
    "Requirement",
    "Selector",
    "SelectorParseError",
    "EVERYTHING",
    "NOTHING",
    "parse",
    "parse_selector",
    "selector_from_set",
    "selector_from_label_selector",
    "label_selector_as_selector",
    "selector_to_string",
    "format_labels",
    "format_label_selector",
    "is_qualified_name",
    "is_valid_label_value",
    "is_dns1123_subdomain",
]

# Operators, spelled as upstream's selection.Operator values (they show up in messages).
IN = "in"
NOT_IN = "notin"
EQUALS = "="
DOUBLE_EQUALS = "=="
NOT_EQUALS = "!="
EXISTS = "exists"
DOES_NOT_EXIST = "!"
GREATER_THAN = "gt"
LESS_THAN = "lt"

_BINARY_OPERATORS = (IN, NOT_IN, EQUALS, DOUBLE_EQUALS, NOT_EQUALS, GREATER_THAN, LESS_THAN)
_VALID_OPERATORS = _BINARY_OPERATORS + (EXISTS, DOES_NOT_EXIST)


class SelectorParseError(StatusError, ValueError):
    """A malformed label selector: a 400 BadRequest carrying upstream's parse message."""

    def __init__(self, message: str) -> None:
        super().__init__(400, "BadRequest", message)


# ---------------------------------------------------------------------------------------
# validation.IsQualifiedName / IsValidLabelValue / IsDNS1123Subdomain (messages verbatim)

_QNAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_QNAME_RE = re.compile(r"^" + _QNAME_FMT + r"\Z")
_QNAME_MSG = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
_LABEL_VALUE_FMT = "(" + _QNAME_FMT + ")?"
_LABEL_VALUE_RE = re.compile(r"^" + _LABEL_VALUE_FMT + r"\Z")
_LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character"
)
_DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN_FMT = _DNS1123_LABEL_FMT + "(\\." + _DNS1123_LABEL_FMT + ")*"
_DNS1123_SUBDOMAIN_RE = re.compile(r"^" + _DNS1123_SUBDOMAIN_FMT + r"\Z")
_DNS1123_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character"
)


def _regex_error(msg: str, fmt: str, *examples: str) -> str:
    if not examples:
        return f"{msg} (regex used for validation is '{fmt}')"
    # Upstream joins with " or " after a trailing ", " -- hence the double space.
    return (
        msg + " (e.g. " + " or ".join(f"'{e}', " for e in examples) + f"regex used for validation is '{fmt}')"
    )


def _max_len_error(n: int) -> str:
    return f"must be no more than {n} characters"


def is_dns1123_subdomain(value: str) -> list[str]:
    errs = []
    if len(value) > 253:
        errs.append(_max_len_error(253))
    if not _DNS1123_SUBDOMAIN_RE.match(value):
        errs.append(_regex_error(_DNS1123_SUBDOMAIN_MSG, _DNS1123_SUBDOMAIN_FMT, "example.com"))
    return errs


def is_qualified_name(value: str) -> list[str]:
    """Errors for a label key / qualified name ("prefix/name"), [] when valid."""
    errs: list[str] = []
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            errs.extend("prefix part " + m for m in is_dns1123_subdomain(prefix))
    else:
        return [
            "a qualified name "
            + _regex_error(_QNAME_MSG, _QNAME_FMT, "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    if not name:
        errs.append("name part must be non-empty")
    elif len(name) > 63:
        errs.append("name part " + _max_len_error(63))
    if not _QNAME_RE.match(name):
        errs.append("name part " + _regex_error(_QNAME_MSG, _QNAME_FMT, "MyName", "my.name", "123-abc"))
    return errs


def is_valid_label_value(value: str) -> list[str]:
    errs = []
    if len(value) > 63:
        errs.append(_max_len_error(63))
    if not _LABEL_VALUE_RE.match(value):
        errs.append(_regex_error(_LABEL_VALUE_MSG, _LABEL_VALUE_FMT, "MyValue", "my_value", "12345"))
    return errs


def _go_quote(s: str) -> str:
    # Go's %q; JSON escaping agrees with it for everything a selector can contain.
    return json.dumps(s, ensure_ascii=False)


def _go_value(v: Any) -> str:
    if isinstance(v, str):
        return _go_quote(v)
    if isinstance(v, (list, tuple)):
        return "[]string{" + ", ".join(_go_quote(x) for x in v) + "}"
    return str(v)


def _field_err(path: str, value: Any, detail: str) -> str:
    return f"{path}: Invalid value: {_go_value(value)}: {detail}"


def _aggregate(errs: list[str]) -> str:
    # utilerrors.Aggregate: one error prints bare, several print as "[a, b]".
    return errs[0] if len(errs) == 1 else "[" + ", ".join(errs) + "]"


# ---------------------------------------------------------------------------------------
# Requirements and selectors


class Requirement:
    """One `key op values` term. Values are kept sorted (upstream's sets.String.List())."""

    __slots__ = ("key", "operator", "values", "_valueset")

    def __init__(self, key: str, operator: str, values: Iterable[str] = ()) -> None:
        self.key = key
        self.operator = operator
        self.values: tuple[str, ...] = tuple(values)
        self._valueset = frozenset(self.values)

    def matches(self, labels: Mapping[str, str]) -> bool:
        op = self.operator
        if op in (IN, EQUALS, DOUBLE_EQUALS):
            return labels.get(self.key) in self._valueset
        if op in (NOT_IN, NOT_EQUALS):
            return labels.get(self.key) not in self._valueset
        if op == EXISTS:
            return self.key in labels
        if op == DOES_NOT_EXIST:
            return self.key not in labels
        return _match_gt_lt(self.key, op == GREATER_THAN, self.values, labels)

    def __str__(self) -> str:
        op = self.operator
        if op == EXISTS:
            return self.key
        if op == DOES_NOT_EXIST:
            return "!" + self.key
        vals = self.values[0] if len(self.values) == 1 else ",".join(sorted(self.values))
        if op in (IN, NOT_IN):
            return f"{self.key} {op} ({vals})"
        sym = {GREATER_THAN: ">", LESS_THAN: "<"}.get(op, op)
        return f"{self.key}{sym}{vals}"

    def __repr__(self) -> str:
        return f"Requirement({self.key!r}, {self.operator!r}, {list(self.values)!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Requirement) and (self.key, self.operator, self.values) == (
            other.key,
            other.operator,
            other.values,
        )

    def __hash__(self) -> int:
        return hash((self.key, self.operator, self.values))


def _match_gt_lt(key: str, greater: bool, values: tuple[str, ...], labels: Mapping[str, str]) -> bool:
    v = labels.get(key)
    if v is None or len(values) != 1:
        return False
    try:
        have, want = _go_int(v), _go_int(values[0])
    except ValueError:
        return False
    return have > want if greater else have < want


def _go_int(s: str) -> int:
    """strconv.ParseInt(s, 10, 64): optional sign and ASCII digits only, 64-bit range."""
    if not s or not re.fullmatch(r"[+-]?[0-9]+", s):
        raise ValueError(s)
    n = int(s)
    if not -(2**63) <= n < 2**63:
        raise ValueError(s)
    return n


# Compiled check kinds: (kind, key, payload). Plain tuples keep `matches` branch-cheap.
_K_IN, _K_NOT_IN, _K_EXISTS, _K_ABSENT, _K_EQ, _K_NE, _K_GTLT = range(7)


class Selector:
    """An AND of requirements, sorted by key, compiled for matching.

    `nothing=True` is upstream's Nothing() (what a nil metav1.LabelSelector means): it
    matches no object and prints as "".
    """

    __slots__ = ("requirements", "_checks", "_nothing", "_eq_only")

    def __init__(self, requirements: Iterable[Requirement] = (), nothing: bool = False) -> None:
        reqs = sorted(requirements, key=lambda r: r.key)  # stable, like sort.Sort(ByKey)
        self.requirements: tuple[Requirement, ...] = tuple(reqs)
        self._nothing = nothing
        checks: list[tuple[int, str, Any]] = []
        for r in self.requirements:
            op = r.operator
            if op in (IN, EQUALS, DOUBLE_EQUALS):
                if len(r.values) == 1:
                    checks.append((_K_EQ, r.key, r.values[0]))
                else:
                    checks.append((_K_IN, r.key, r._valueset))
            elif op in (NOT_IN, NOT_EQUALS):
                if len(r.values) == 1:
                    checks.append((_K_NE, r.key, r.values[0]))
                else:
                    checks.append((_K_NOT_IN, r.key, r._valueset))
            elif op == EXISTS:
                checks.append((_K_EXISTS, r.key, None))
            elif op == DOES_NOT_EXIST:
                checks.append((_K_ABSENT, r.key, None))
            else:
                checks.append((_K_GTLT, r.key, r))
        self._checks: tuple[tuple[int, str, Any], ...] = tuple(checks)
        # The overwhelmingly common case (matchLabels, -l a=b) compiles to key/value pairs.
        self._eq_only = tuple((k, p) for kind, k, p in checks) if all(c[0] == _K_EQ for c in checks) else None

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        if self._nothing:
            return False
        if labels is None:
            labels = {}
        eq = self._eq_only
        if eq is not None:
            get = labels.get
            for k, v in eq:
                if get(k) != v:
                    return False
            return True
        for kind, key, p in self._checks:
            if kind == _K_EQ:
                if labels.get(key) != p:
                    return False
            elif kind == _K_NE:
                if labels.get(key) == p:
                    return False
            elif kind == _K_IN:
                if labels.get(key) not in p:
                    return False
            elif kind == _K_NOT_IN:
                if labels.get(key) in p:
                    return False
            elif kind == _K_EXISTS:
                if key not in labels:
                    return False
            elif kind == _K_ABSENT:
                if key in labels:
                    return False
            elif not p.matches(labels):
                return False
        return True

    __call__ = matches

    def empty(self) -> bool:
        """True when the selector does not restrict anything (Nothing() is not empty)."""
        return not self._nothing and not self.requirements

    @property
    def is_nothing(self) -> bool:
        return self._nothing

    def requires_exact_match(self, key: str) -> str | None:
        """The single value `key` must equal (=, ==, or a one-value in), else None."""
        for r in self.requirements:
            if r.key == key:
                if r.operator in (EQUALS, DOUBLE_EQUALS, IN) and len(r.values) == 1:
                    return r.values[0]
                return None
        return None

    def add(self, *reqs: Requirement) -> Selector:
        return Selector(self.requirements + reqs, self._nothing)

    def __str__(self) -> str:
        if self._nothing:
            return ""
        return ",".join(str(r) for r in self.requirements)

    def __repr__(self) -> str:
        return "Selector(NOTHING)" if self._nothing else f"Selector({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Selector)
            and self._nothing == other._nothing
            and self.requirements == other.requirements
        )

    def __hash__(self) -> int:
        return hash((self._nothing, self.requirements))


EVERYTHING = Selector()
NOTHING = Selector(nothing=True)


def _new_requirement(key: str, op: str, values: list[str], path: str = "") -> Requirement:
    """labels.NewRequirement: validate and build, errors aggregated as upstream's."""
    errs: list[str] = []
    key_path = f"{path}.key" if path else "key"
    values_path = f"{path}.values" if path else "values"
    kerrs = is_qualified_name(key)
    if kerrs:
        errs.append(_field_err(key_path, key, "; ".join(kerrs)))
    if op in (IN, NOT_IN):
        if not values:
            errs.append(
                _field_err(values_path, values, "for 'in', 'notin' operators, values set can't be empty")
            )
    elif op in (EQUALS, DOUBLE_EQUALS, NOT_EQUALS):
        if len(values) != 1:
            errs.append(
                _field_err(values_path, values, "exact-match compatibility requires one single value")
            )
    elif op in (EXISTS, DOES_NOT_EXIST):
        if values:
            errs.append(
                _field_err(values_path, values, "values set must be empty for exists and does not exist")
            )
    elif op in (GREATER_THAN, LESS_THAN):
        if len(values) != 1:
            errs.append(
                _field_err(values_path, values, "for 'Gt', 'Lt' operators, exactly one value is required")
            )
        for i, v in enumerate(values):
            try:
                _go_int(v)
            except ValueError:
                errs.append(
                    _field_err(
                        f"{values_path}[{i}]", v, "for 'Gt', 'Lt' operators, the value must be an integer"
                    )
                )
    else:
        supported = ", ".join(_go_quote(o) for o in _VALID_OPERATORS)
        op_path = f"{path}.operator" if path else "operator"
        errs.append(f"{op_path}: Unsupported value: {_go_quote(op)}: supported values: {supported}")
    for i, v in enumerate(values):
        verrs = is_valid_label_value(v)
        if verrs:
            errs.append(_field_err(f"{values_path}[{i}][{key}]", v, "; ".join(verrs)))
    if errs:
        raise SelectorParseError(_aggregate(errs))
    return Requirement(key, op, values)


# ---------------------------------------------------------------------------------------
# The string syntax: lexer and parser (labels.Parse)

(
    _T_ERROR,
    _T_EOS,
    _T_CLOSE,
    _T_COMMA,
    _T_NOT,
    _T_DEQ,
    _T_EQ,
    _T_GT,
    _T_ID,
    _T_IN,
    _T_LT,
    _T_NE,
    _T_NOTIN,
    _T_OPEN,
) = range(14)

_STRING2TOKEN = {
    ")": _T_CLOSE,
    ",": _T_COMMA,
    "!": _T_NOT,
    "==": _T_DEQ,
    "=": _T_EQ,
    ">": _T_GT,
    "in": _T_IN,
    "<": _T_LT,
    "!=": _T_NE,
    "notin": _T_NOTIN,
    "(": _T_OPEN,
}
_SPECIAL = frozenset("=!(),><")
_WHITESPACE = frozenset(" \t\r\n")


def _lex(s: str) -> list[tuple[int, str]]:
    """All tokens of s, ending with end-of-string. Works on bytes' worth of characters."""
    items: list[tuple[int, str]] = []
    n = len(s)
    pos = 0
    while True:
        while pos < n and s[pos] in _WHITESPACE:
            pos += 1
        if pos >= n:
            items.append((_T_EOS, ""))
            return items
        ch = s[pos]
        if ch in _SPECIAL:
            # Greedy: extend while the buffer still spells a known operator.
            buf = ""
            last: tuple[int, str] | None = None
            while pos < n and s[pos] in _SPECIAL:
                cand = buf + s[pos]
                tok = _STRING2TOKEN.get(cand)
                if tok is not None:
                    last = (tok, cand)
                    buf = cand
                    pos += 1
                elif last is not None:
                    break
                else:
                    buf = cand
                    pos += 1
            items.append(last if last is not None else (_T_ERROR, f"error expected: keyword found '{buf}'"))
        else:
            start = pos
            while pos < n and s[pos] not in _SPECIAL and s[pos] not in _WHITESPACE:
                pos += 1
            word = s[start:pos]
            items.append((_STRING2TOKEN.get(word, _T_ID), word))


class _Parser:
    __slots__ = ("items", "pos")

    def __init__(self, s: str) -> None:
        self.items = _lex(s)
        self.pos = 0

    # In "values" context the keywords in/notin are plain identifiers ("x in (in)").
    def lookahead(self, values: bool = True) -> tuple[int, str]:
        tok, lit = self.items[self.pos]
        if values and tok in (_T_IN, _T_NOTIN):
            tok = _T_ID
        return tok, lit

    def consume(self, values: bool = True) -> tuple[int, str]:
        tok, lit = self.lookahead(values)
        self.pos += 1
        return tok, lit

    def parse(self) -> list[Requirement]:
        reqs: list[Requirement] = []
        while True:
            tok, lit = self.lookahead()
            if tok in (_T_ID, _T_NOT):
                try:
                    reqs.append(self.parse_requirement())
                except SelectorParseError as e:
                    raise SelectorParseError(f"unable to parse requirement: {e.message}") from None
                t, lit = self.consume()
                if t == _T_EOS:
                    return reqs
                if t == _T_COMMA:
                    t2, lit2 = self.lookahead()
                    if t2 not in (_T_ID, _T_NOT):
                        raise SelectorParseError(f"found '{lit2}', expected: identifier after ','")
                else:
                    raise SelectorParseError(f"found '{lit}', expected: ',' or 'end of string'")
            elif tok == _T_EOS:
                return reqs
            else:
                raise SelectorParseError(f"found '{lit}', expected: !, identifier, or 'end of string'")

    def parse_requirement(self) -> Requirement:
        key, op = self.parse_key_and_infer_operator()
        if op in (EXISTS, DOES_NOT_EXIST):
            return _new_requirement(key, op, [])
        op = self.parse_operator()
        if op in (IN, NOT_IN):
            values = self.parse_values()
        else:
            values = self.parse_exact_value()
        return _new_requirement(key, op, sorted(values))

    def parse_key_and_infer_operator(self) -> tuple[str, str]:
        op = ""
        tok, lit = self.consume()
        if tok == _T_NOT:
            op = DOES_NOT_EXIST
            tok, lit = self.consume()
        if tok != _T_ID:
            raise SelectorParseError(f"found '{lit}', expected: identifier")
        kerrs = is_qualified_name(lit)
        if kerrs:
            # The parser validates with a nil field path, which Go prints as "<nil>".
            raise SelectorParseError(_field_err("<nil>", lit, "; ".join(kerrs)))
        t, _ = self.lookahead()
        if t in (_T_EOS, _T_COMMA) and op != DOES_NOT_EXIST:
            op = EXISTS
        return lit, op

    def parse_operator(self) -> str:
        tok, lit = self.consume(values=False)
        op = {
            _T_IN: IN,
            _T_EQ: EQUALS,
            _T_DEQ: DOUBLE_EQUALS,
            _T_GT: GREATER_THAN,
            _T_LT: LESS_THAN,
            _T_NOTIN: NOT_IN,
            _T_NE: NOT_EQUALS,
        }.get(tok)
        if op is None:
            raise SelectorParseError(f"found '{lit}', expected: {', '.join(_BINARY_OPERATORS)}")
        return op

    def parse_values(self) -> set[str]:
        tok, lit = self.consume()
        if tok != _T_OPEN:
            raise SelectorParseError(f"found '{lit}' expected: '('")
        tok, lit = self.lookahead()
        if tok in (_T_ID, _T_COMMA):
            s = self.parse_identifiers_list()
            if self.consume()[0] != _T_CLOSE:
                raise SelectorParseError(f"found '{lit}', expected: ')'")
            return s
        if tok == _T_CLOSE:  # "()" means the single empty value
            self.consume()
            return {""}
        raise SelectorParseError(f"found '{lit}', expected: ',', ')' or identifier")

    def parse_identifiers_list(self) -> set[str]:
        s: set[str] = set()
        while True:
            tok, lit = self.consume()
            if tok == _T_ID:
                s.add(lit)
                tok2, lit2 = self.lookahead()
                if tok2 == _T_COMMA:
                    continue
                if tok2 == _T_CLOSE:
                    return s
                raise SelectorParseError(f"found '{lit2}', expected: ',' or ')'")
            if tok == _T_COMMA:  # "(," ",," and ",)" all contribute an empty value
                if not s:
                    s.add("")
                tok2, _ = self.lookahead()
                if tok2 == _T_CLOSE:
                    s.add("")
                    return s
                if tok2 == _T_COMMA:
                    self.consume()
                    s.add("")
                continue
            raise SelectorParseError(f"found '{lit}', expected: ',', or identifier")

    def parse_exact_value(self) -> set[str]:
        tok, _ = self.lookahead()
        if tok in (_T_EOS, _T_COMMA):
            return {""}
        tok, lit = self.consume()
        if tok == _T_ID:
            return {lit}
        raise SelectorParseError(f"found '{lit}', expected: identifier")


@lru_cache(maxsize=1024)
def parse(selector: str) -> Selector:
    """labels.Parse. Raises SelectorParseError (400) with upstream's message.

    Cached: the same selector strings arrive again and again (controllers, kubectl -w).
    """
    return Selector(_Parser(selector).parse())


parse_selector = parse


def selector_from_set(labels: Mapping[str, str] | None) -> Selector:
    """labels.SelectorFromSet: key=value for every pair, unvalidated; empty set = everything."""
    if not labels:
        return EVERYTHING
    return Selector(Requirement(k, EQUALS, (v,)) for k, v in labels.items())


def selector_from_label_selector(ls: Mapping[str, Any] | None) -> Selector:
    """metav1.LabelSelectorAsSelector: nil = nothing, empty = everything.

    Raises SelectorParseError for invalid keys/values or operators, as upstream.
    """
    if ls is None:
        return NOTHING
    match_labels = ls.get("matchLabels") or {}
    exprs = ls.get("matchExpressions") or []
    if not match_labels and not exprs:
        return EVERYTHING
    reqs = [_new_requirement(k, EQUALS, [v]) for k, v in match_labels.items()]
    for e in exprs:
        op = {"In": IN, "NotIn": NOT_IN, "Exists": EXISTS, "DoesNotExist": DOES_NOT_EXIST}.get(
            e.get("operator", "")
        )
        if op is None:
            raise SelectorParseError(
                f"{_go_quote(e.get('operator', ''))} is not a valid label selector operator"
            )
        reqs.append(_new_requirement(e.get("key", ""), op, list(e.get("values") or ())))
    return Selector(reqs)


label_selector_as_selector = selector_from_label_selector


def selector_to_string(selector: Selector | Mapping[str, Any] | None) -> str:
    """The string form of a Selector or of a metav1.LabelSelector dict ("" for nothing)."""
    if isinstance(selector, Selector):
        return str(selector)
    return str(selector_from_label_selector(selector))


def format_labels(labels: Mapping[str, str] | None) -> str:
    """labels.FormatLabels: "k=v,..." sorted by key, "<none>" when empty."""
    if not labels:
        return "<none>"
    return ",".join(f"{k}={labels[k]}" for k in sorted(labels))


def format_label_selector(ls: Mapping[str, Any] | None) -> str:
    """metav1.FormatLabelSelector: the selector string, "<none>" when empty, "<error>" when invalid."""
    try:
        s = str(selector_from_label_selector(ls))
    except SelectorParseError:
        return "<error>"
    return s or "<none>"

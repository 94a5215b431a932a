"""Helpers shared by the patch modules: Status errors shaped as upstream's, Go-compatible
JSON text, Go `%v` rendering for error messages, and a fast deep copy for JSON data."""

from __future__ import annotations

import json
import math
import re
from typing import Any

from pyk8s.api.errors import StatusError

__all__ = [
    "PatchStatusError",
    "bad_request",
    "unprocessable",
    "raw_error",
    "GENERIC_422_MESSAGE",
    "go_json",
    "go_v",
    "go_q",
    "go_type_name",
    "deepcopy_json",
    "json_type",
    "go_equal",
]

GENERIC_422_MESSAGE = "the server rejected our request due to an error in our request"


class PatchStatusError(StatusError):
    """A StatusError that renders exactly as upstream's for the shapes the base class
    cannot express: an empty `details: {}` object and an absent (unknown) reason."""

    def __init__(self, code: int, reason: str, message: str, details: dict[str, Any] | None = None,
                 keep_empty_details: bool = False) -> None:
        super().__init__(code, reason, message, details)
        self.keep_empty_details = keep_empty_details

    def status(self) -> dict[str, Any]:
        s: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
        }
        # metav1.StatusReasonUnknown is "" and is omitted on the wire.
        if self.reason:
            s["reason"] = self.reason
        if self.details or (self.details is not None and self.keep_empty_details):
            s["details"] = self.details
        s["code"] = self.code
        return s


def bad_request(message: str) -> PatchStatusError:
    return PatchStatusError(400, "BadRequest", message)


def unprocessable() -> PatchStatusError:
    """What apiserver answers for a patch that decodes but does not apply:
    NewGenericServerResponse(422, ...) drops the underlying message."""
    return PatchStatusError(422, "Invalid", GENERIC_422_MESSAGE, {}, keep_empty_details=True)


def raw_error(message: str) -> PatchStatusError:
    """A plain Go error reaching the apiserver's error writer: upstream answers 500 with no reason and
    the error's text. The patch is what is wrong, so ours is a 400 with the same text: bad input is
    never a server error."""
    return PatchStatusError(400, "BadRequest", message)


# ---------------------------------------------------------------------------------------------
# Go-compatible JSON text (encoding/json escapes <, > and & and the JS line separators).

_HTML_ESCAPES = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026",
                               "\u2028": "\\u2028", "\u2029": "\\u2029"})


def _normalise_floats(v: Any) -> Any:
    # Go prints integral float64 values without a fraction ("1", not "1.0").
    if isinstance(v, float) and not isinstance(v, bool):
        if math.isfinite(v) and v == int(v) and abs(v) < 1e21:
            return int(v)
        return v
    if isinstance(v, dict):
        return {k: _normalise_floats(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_normalise_floats(x) for x in v]
    return v


def go_json(v: Any, sort_keys: bool = True) -> str:
    """Compact JSON as Go's encoding/json writes it (map keys sorted)."""
    text = json.dumps(_normalise_floats(v), separators=(",", ":"), ensure_ascii=False, sort_keys=sort_keys)
    return text.translate(_HTML_ESCAPES)


# A string Go writes between quotes as it is: no quote, backslash, control character, HTML
# character or U+2028/U+2029 to escape, no lone surrogate.
_PLAIN_STRING = re.compile(r'[^"\\\x00-\x1f<>&\u2028\u2029\ud800-\udfff]*')


def go_json_plain(v: str | int) -> str:
    """go_json of a string or an int (exact types), without json.dumps for the usual strings."""
    if type(v) is str and _PLAIN_STRING.fullmatch(v) is not None:
        return '"' + v + '"'
    if type(v) is int:
        return str(v)
    return go_json(v)


# ---------------------------------------------------------------------------------------------
# Go fmt renderings, used only to reproduce error texts.

def go_q(s: str) -> str:
    """Go's %q for a string."""
    out = ['"']
    for ch in s:
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\r":
            out.append("\\r")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _go_float(f: float) -> str:
    if math.isnan(f):
        return "NaN"
    if math.isinf(f):
        return "+Inf" if f > 0 else "-Inf"
    r = repr(f)
    if "e" in r or "E" in r:
        mant, exp = r.lower().split("e")
        sign = "-" if exp.startswith("-") else "+"
        exp = exp.lstrip("+-").lstrip("0") or "0"
        if len(exp) < 2:
            exp = "0" + exp
        if mant.endswith(".0"):
            mant = mant[:-2]
        return f"{mant}e{sign}{exp}"
    if abs(f) >= 1e21:
        return _go_float(float(f"{f:e}"))
    if r.endswith(".0"):
        return r[:-2]
    return r


def go_v(v: Any) -> str:
    """Go's %v for a value decoded from JSON into interface{}."""
    if v is None:
        return "<nil>"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return _go_float(v)
    if isinstance(v, str):
        return v
    if isinstance(v, dict):
        return "map[" + " ".join(f"{k}:{go_v(v[k])}" for k in sorted(v)) + "]"
    if isinstance(v, list):
        return "[" + " ".join(go_v(x) for x in v) + "]"
    return str(v)


def go_type_name(v: Any) -> str:
    """reflect.TypeOf(v).String() for JSON-decoded values."""
    if v is None:
        return "<nil>"
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, int):
        return "int64"
    if isinstance(v, float):
        return "float64"
    if isinstance(v, str):
        return "string"
    if isinstance(v, dict):
        return "map[string]interface {}"
    if isinstance(v, list):
        return "[]interface {}"
    return type(v).__name__


def json_type(v: Any) -> str:
    """A tag that separates values as Go's reflect.TypeOf does (bool is not an int)."""
    if v is None:
        return "n"
    t = type(v)
    if t is bool:
        return "b"
    if t is int:
        return "i"
    if t is float:
        return "f"
    if t is str:
        return "s"
    if t is dict:
        return "m"
    if t is list:
        return "l"
    if isinstance(v, bool):
        return "b"
    if isinstance(v, int):
        return "i"
    if isinstance(v, float):
        return "f"
    if isinstance(v, str):
        return "s"
    if isinstance(v, dict):
        return "m"
    if isinstance(v, list):
        return "l"
    return "?"


def deepcopy_json(v: Any) -> Any:
    """Deep copy of JSON data, much faster than copy.deepcopy."""
    t = type(v)
    if t is dict:
        return {k: deepcopy_json(x) for k, x in v.items()}
    if t is list:
        return [deepcopy_json(x) for x in v]
    if isinstance(v, dict):
        return {k: deepcopy_json(x) for k, x in v.items()}
    if isinstance(v, list):
        return [deepcopy_json(x) for x in v]
    return v


def go_equal(a: Any, b: Any) -> bool:
    """Deep equality that, like Go's reflect.DeepEqual on decoded JSON, keeps types apart
    (true is not 1, 1 is not 1.0)."""
    ta, tb = json_type(a), json_type(b)
    if ta != tb:
        return False
    if ta == "m":
        if len(a) != len(b):
            return False
        for k, x in a.items():
            if k not in b or not go_equal(x, b[k]):
                return False
        return True
    if ta == "l":
        return len(a) == len(b) and all(go_equal(x, y) for x, y in zip(a, b, strict=True))
    return a == b

"""Bodies in and out: JSON and YAML decoding with upstream's error messages, encoding per Output."""

from __future__ import annotations

from typing import Any

import orjson
import yaml

from ..api import errors as E
from . import nesting
from .jsonwire import NEWLINE, go_escape
from .negotiation import Output
from .yaml_limits import EXCESSIVE_ALIASING, excessive_aliasing

__all__ = ["decode_body", "encode", "MAX_REQUEST_BYTES", "JSON_TYPES", "media_type", "summarize_data", "unrecognized"]

MAX_REQUEST_BYTES = 3 * 1024 * 1024  # upstream's default request body limit

# bodies decode_body reads with orjson alone (their values are plain JSON: no dates, NaNs or tuples)
JSON_TYPES = frozenset(("application/json", "", "application/json-patch+json", "application/merge-patch+json",
                        "application/strategic-merge-patch+json", "*/*"))

_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_YAML_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def media_type(content_type: str) -> str:
    return content_type.split(";", 1)[0].strip().lower()


def summarize_data(data: bytes, max_length: int = 30) -> str:
    """How upstream quotes a body it could not decode: text if it starts like JSON, else hex."""
    if not data:
        return "<empty>"
    head = data[:max_length]
    more = " ..." if len(data) > max_length else ""
    if data[:1] == b"{":
        return head.decode("utf-8", "replace") + more
    return head.hex() + more


def unrecognized(kind: str, err: str, body: bytes) -> E.StatusError:
    """400 for a body whose version/kind could not be read, as upstream's transformDecodeError."""
    return E.new_bad_request(f"the object provided is unrecognized (must be of type {kind}): {err} "
                             f"({summarize_data(body)})")


def decode_body(body: bytes, content_type: str, kind: str = "") -> Any:
    """The decoded body. kind: the type the body must be (the request's object), for upstream's
    decode error texts; without it they are the bare decoder errors."""
    ct = media_type(content_type)
    if len(body) > MAX_REQUEST_BYTES:
        raise E.new_request_entity_too_large(f"limit is {MAX_REQUEST_BYTES}")
    if ct in ("application/yaml", "application/apply-patch+yaml", "application/x-yaml", "text/yaml"):
        try:
            # JSON is YAML: try the fast path first (kubectl sends JSON even for apply-patch+yaml)
            return orjson.loads(body)
        except orjson.JSONDecodeError:
            pass
        return _decode_yaml(body, kind)
    if ct == "application/vnd.kubernetes.protobuf":
        # kubectl's typed clients (create, drain, ...) send protobuf bodies
        try:
            from ..api import protobuf
        except ImportError:  # pragma: no cover
            raise E.new_unsupported_media_type(ct) from None
        try:
            return protobuf.decode(body)
        except E.StatusError:
            raise
        except Exception as e:
            raise E.new_bad_request(f"unable to decode protobuf body: {e}") from None
    if ct in ("application/apply-patch+cbor", "application/cbor"):
        raise E.new_unsupported_media_type(ct)
    if ct not in JSON_TYPES:
        raise E.new_unsupported_media_type(ct)
    try:
        obj = orjson.loads(body)
    except orjson.JSONDecodeError as e:
        err = f"couldn't get version/kind; json parse error: {_json_msg(e, body)}"
        raise (unrecognized(kind, err, body) if kind else E.new_bad_request(err)) from None
    if nesting.exceeds(obj, body):
        err = f"couldn't get version/kind; json parse error: {nesting.too_deep(nesting.deep_char(obj))}"
        raise unrecognized(kind, err, body) if kind else E.new_bad_request(err)
    return obj


def _decode_yaml(body: bytes, kind: str) -> Any:
    def fail(err: str) -> E.StatusError:
        err = f"error converting YAML to JSON: yaml: {err}"
        return unrecognized(kind, err, body) if kind else E.new_bad_request(err)

    loader = _YAML_LOADER(body)
    try:
        root = loader.get_single_node()
        if root is None:
            return None
        if b"*" in body and excessive_aliasing(root):
            raise fail(EXCESSIVE_ALIASING)
        obj = loader.construct_document(root)
    except yaml.YAMLError as e:
        raise fail(_yaml_msg(e)) from None
    except RecursionError:  # PyYAML's constructor recurses per level: far past our limit
        raise fail(f"exceeded max depth of {nesting.MAX_DEPTH}") from None
    finally:
        loader.dispose()
    # YAML to JSON, as upstream converts it before decoding: JSON values only (dates and binary as
    # strings, keys as strings), aliases expanded into copies; the request limit holds for the result
    try:
        data = orjson.dumps(obj, default=_yaml_value, option=orjson.OPT_NON_STR_KEYS)
    except orjson.JSONEncodeError as e:
        if "Recursion limit" in str(e):
            raise fail(f"exceeded max depth of {nesting.MAX_DEPTH}") from None
        raise fail(str(e)) from None
    if len(data) > MAX_REQUEST_BYTES:
        raise E.new_request_entity_too_large(f"limit is {MAX_REQUEST_BYTES}")
    obj = orjson.loads(data)
    if nesting.exceeds(obj, data):
        raise fail(f"exceeded max depth of {nesting.MAX_DEPTH}")
    return obj


def _yaml_value(v: Any) -> Any:
    """The JSON form of a YAML value JSON has no type for (go-yaml gives !!binary's bytes as a string)."""
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    if isinstance(v, (set, frozenset)):
        return sorted(v, key=str)
    return str(v)


def _json_msg(e: orjson.JSONDecodeError, body: bytes) -> str:
    msg = str(e)
    if msg.startswith("depth limit exceeded"):  # orjson's own limit (1024), far past ours
        ch = body[e.pos:e.pos + 1].decode("ascii", "replace")
        return nesting.too_deep(ch if ch in ("{", "[") else "{")
    if "unexpected end" in msg.lower() or "EOF" in msg:
        return "unexpected end of JSON input"
    return msg


def _yaml_msg(e: yaml.YAMLError) -> str:
    mark = getattr(e, "problem_mark", None)
    problem = getattr(e, "problem", None) or str(e)
    if mark is not None:
        return f"line {mark.line + 1}: {problem}"
    return problem


def encode(obj: Any, out: Output | None) -> tuple[bytes, str]:
    if out is not None and out.format == "yaml":
        return yaml.dump(obj, Dumper=_YAML_DUMPER, sort_keys=False, allow_unicode=True).encode(), out.content_type
    # (jsonwire.dumps, one call less: every answer passes here)
    return go_escape(orjson.dumps(obj, option=NEWLINE)), (out.content_type if out else "application/json")

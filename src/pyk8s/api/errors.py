"""API errors as values with a shape: every failure becomes a meta/v1 Status.

Mirrors upstream's k8s.io/apimachinery/pkg/api/errors constructors (NewNotFound,
NewAlreadyExists, NewConflict, NewInvalid, ...) so messages read exactly as upstream's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "StatusError",
    "FieldError",
    "new_not_found",
    "new_already_exists",
    "new_conflict",
    "new_invalid",
    "new_bad_request",
    "new_forbidden",
    "new_unauthorized",
    "new_method_not_supported",
    "new_gone",
    "new_resource_expired",
    "new_internal_error",
    "new_too_many_requests",
    "new_request_entity_too_large",
    "new_unsupported_media_type",
    "new_not_acceptable",
    "new_timeout",
    "new_service_unavailable",
    "new_generic",
    "qualified_resource",
    "OBJECT_MODIFIED",
]


def qualified_resource(resource: str, group: str = "") -> str:
    """`pods` for the core group, `deployments.apps` otherwise, as upstream's GroupResource.String()."""
    return f"{resource}.{group}" if group else resource


class StatusError(Exception):
    """An error that renders as a Kubernetes Status object."""

    def __init__(
        self,
        code: int,
        reason: str,
        message: str,
        details: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details
        self.headers = headers or {}

    def status(self) -> dict[str, Any]:
        s: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
        }
        # as upstream's Status: message, reason, details and code are omitted when empty
        if self.message:
            s["message"] = self.message
        if self.reason:
            s["reason"] = self.reason
        if self.details is not None:  # upstream's NewForbidden/NewNotFound always say details, {} included
            s["details"] = self.details
        if self.code:
            s["code"] = self.code
        return s

    def __repr__(self) -> str:
        return f"StatusError({self.code}, {self.reason!r}, {self.message!r})"


def _details(name: str, group: str, kind: str, **extra: Any) -> dict[str, Any]:
    d: dict[str, Any] = {}
    if name:
        d["name"] = name
    if group:
        d["group"] = group
    if kind:
        d["kind"] = kind
    d.update(extra)
    return d


def new_not_found(resource: str, name: str, group: str = "") -> StatusError:
    qr = qualified_resource(resource, group)
    msg = f'{qr} "{name}" not found' if name else f"{qr} not found"
    return StatusError(404, "NotFound", msg, _details(name, group, resource))


def new_already_exists(resource: str, name: str, group: str = "") -> StatusError:
    qr = qualified_resource(resource, group)
    return StatusError(409, "AlreadyExists", f'{qr} "{name}" already exists', _details(name, group, resource))


def new_conflict(resource: str, name: str, reason_msg: str, group: str = "") -> StatusError:
    qr = qualified_resource(resource, group)
    return StatusError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {qr} "{name}": {reason_msg}',
        _details(name, group, resource),
    )


OBJECT_MODIFIED = "the object has been modified; please apply your changes to the latest version and try again"


@dataclass
class FieldError:
    """One validation failure, as upstream's field.Error.

    type is one of: Invalid, Required, Forbidden, NotSupported, Duplicate, TooLong,
    TooMany, NotFound, InternalError (upstream's field.ErrorType names).
    """

    path: str
    type: str
    value: Any = None
    detail: str = ""
    # for NotSupported: the allowed values
    valid_values: list[str] = field(default_factory=list)
    # for TooLong/TooMany: the limit
    limit: int | None = None
    # whether the value should be omitted from the message (upstream's omitValue)
    omit_value: bool = False

    CAUSE_TYPES = {
        "Invalid": "FieldValueInvalid",
        "Required": "FieldValueRequired",
        "Forbidden": "FieldValueForbidden",
        "NotSupported": "FieldValueNotSupported",
        "Duplicate": "FieldValueDuplicate",
        "TooLong": "FieldValueTooLong",
        "TooMany": "FieldValueTooMany",
        "NotFound": "FieldValueNotFound",
        "InternalError": "InternalError",
        "TypeInvalid": "FieldValueTypeInvalid",
    }
    TYPE_TEXT = {
        "Invalid": "Invalid value",
        "Required": "Required value",
        "Forbidden": "Forbidden",
        "NotSupported": "Unsupported value",
        "Duplicate": "Duplicate value",
        "TooLong": "Too long",
        "TooMany": "Too many",
        "NotFound": "Not found",
        "InternalError": "Internal error",
        "TypeInvalid": "Invalid value",
    }

    def error_body(self) -> str:
        """The text after `path: `, as upstream's field.Error.ErrorBody()."""
        t = self.TYPE_TEXT.get(self.type, self.type)
        if self.type in ("Required", "Forbidden", "TooLong", "InternalError") or self.omit_value:
            s = t
        else:
            s = f"{t}: {_go_value(self.value)}"
        if self.type == "NotSupported" and self.valid_values:
            s += ": supported values: " + ", ".join(f'"{v}"' for v in self.valid_values)
        if self.type == "TooLong" and self.limit is not None and not self.detail:
            s += f": may not be more than {self.limit} bytes"
        if self.type == "TooMany" and self.limit is not None and not self.detail:
            s = f"{t}: {_go_value(self.value)}: must have at most {self.limit} items"
        if self.detail:
            s += f": {self.detail}"
        return s

    def __str__(self) -> str:
        return f"{self.path}: {self.error_body()}"

    def cause(self) -> dict[str, Any]:
        return {
            "reason": self.CAUSE_TYPES.get(self.type, self.type),
            "message": self.error_body(),
            "field": self.path,
        }


def _go_value(v: Any) -> str:
    """Render a value as upstream's field errors do (%q for strings, %v for numbers)."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        import json

        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, (int, float)):
        return str(v)
    if isinstance(v, (list, tuple)):
        return "[" + " ".join(str(x) for x in v) + "]"
    if isinstance(v, dict):
        return "map[" + " ".join(f"{k}:{x}" for k, x in sorted(v.items())) + "]"
    return str(v)


def new_invalid(kind: str, name: str, errs: list[FieldError], group: str = "") -> StatusError:
    """422 Invalid: `Pod "x" is invalid: [a: ..., b: ...]` as upstream's NewInvalid."""
    if len(errs) == 1:
        msg = f'{kind} "{name}" is invalid: {errs[0]}'
    else:
        msg = f'{kind} "{name}" is invalid: [' + ", ".join(str(e) for e in errs) + "]"
    details = _details(name, group, kind, causes=[e.cause() for e in errs])
    return StatusError(422, "Invalid", msg, details)


def new_bad_request(message: str) -> StatusError:
    return StatusError(400, "BadRequest", message)


def new_forbidden(resource: str, name: str, message: str, group: str = "") -> StatusError:
    qr = qualified_resource(resource, group)
    what = f'{qr} "{name}"' if name else qr
    return StatusError(403, "Forbidden", f"{what} is forbidden: {message}", _details(name, group, resource))


def new_forbidden_request(username: str, verb: str, *, path: str = "", group: str = "", resource: str = "",
                          subresource: str = "", namespace: str = "", name: str = "", reason: str = "") -> StatusError:
    """The 403 an authorizer's denial becomes (upstream's responsewriters.Forbidden): a resource
    request when `resource` is given, a non-resource one (`path`) otherwise."""
    if not resource:
        msg = f'User "{username}" cannot {verb} path "{path}"'
    else:
        what = f"{resource}/{subresource}" if subresource else resource
        where = f'in the namespace "{namespace}"' if namespace else "at the cluster scope"
        msg = f'User "{username}" cannot {verb} resource "{what}" in API group "{group}" {where}'
    if reason:
        msg = f"{msg}: {reason}"
    if not resource:
        return StatusError(403, "Forbidden", f"forbidden: {msg}", {})  # NewForbidden with an empty GroupResource
    return new_forbidden(resource, name, msg, group)


def new_unauthorized(message: str = "Unauthorized") -> StatusError:
    return StatusError(401, "Unauthorized", message)


def new_method_not_supported(resource: str, action: str, group: str = "") -> StatusError:
    qr = qualified_resource(resource, group)
    return StatusError(405, "MethodNotAllowed", f"{action} is not supported on resources of kind {qr!r}".replace("'", '"'),
                       _details("", group, resource))


def new_gone(message: str) -> StatusError:
    return StatusError(410, "Gone", message)


def new_resource_expired(message: str) -> StatusError:
    return StatusError(410, "Expired", message)


def new_internal_error(err: BaseException | str) -> StatusError:
    return StatusError(
        500,
        "InternalError",
        f"Internal error occurred: {err}",
        {"causes": [{"message": str(err)}]},
    )


def new_too_many_requests(message: str, retry_after: int = 0) -> StatusError:
    # upstream's NewTooManyRequests always carries details (`{}` when there is no retry hint)
    d = {"retryAfterSeconds": retry_after} if retry_after else {}
    h = {"Retry-After": str(retry_after)} if retry_after else None
    return StatusError(429, "TooManyRequests", message, d, h)


def new_request_entity_too_large(message: str) -> StatusError:
    return StatusError(413, "RequestEntityTooLarge", f"Request entity too large: {message}")


def new_unsupported_media_type(content_type: str) -> StatusError:
    return StatusError(415, "UnsupportedMediaType", "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf")


def new_not_acceptable(message: str) -> StatusError:
    return StatusError(406, "NotAcceptable", message)


def new_timeout(message: str, retry_after: int = 0) -> StatusError:
    """upstream's NewTimeoutError: "Timeout: " before the message, details always set."""
    return StatusError(504, "Timeout", f"Timeout: {message}", {"retryAfterSeconds": retry_after} if retry_after else {})


def new_too_large_resource_version(requested: int, current: int, retry_after: int = 1) -> StatusError:
    """upstream's storage.NewTooLargeResourceVersionError: client-go's reflector recognises the cause."""
    err = new_timeout(f"Too large resource version: {requested}, current: {current}", retry_after)
    err.details = {"causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
                   **(err.details or {})}
    return err


def new_service_unavailable(message: str) -> StatusError:
    return StatusError(503, "ServiceUnavailable", message)


def new_generic(code: int, reason: str, message: str) -> StatusError:
    return StatusError(code, reason, message)

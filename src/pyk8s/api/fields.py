"""Field selectors: parsing, per-kind field label support, and the selectable field sets.

The apiserver treats a field selector in two independent layers, and so does this module:

1. Acceptance: every requirement goes through the kind's field label conversion
   (upstream's AddFieldLabelConversionFunc registrations). An unknown label is a 400 whose
   text differs per kind ("field label not supported: x", `field label "x" not supported
   for batchv1.Job`, or the generic `"x" is not a known field selector: only ...` for
   kinds with no registration, which includes all of apps/v1 and every custom resource).
   Conversion may also rename a label (pods' legacy spec.host, events.k8s.io's regarding.*).
2. Matching: `FIELD_LABELS[(group, kind)](obj)` projects an object to the string map the
   registry strategy's ToSelectableFields builds. A label that is accepted but never set
   (pods' status.podIPs) reads as "", exactly like fields.Set.Get upstream.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from .errors import StatusError, new_bad_request

__all__ = [
    "FieldSelector",
    "FieldSelectorParseError",
    "FIELD_LABELS",
    "FIELD_LABEL_SUPPORT",
    "FieldLabelSupport",
    "parse",
    "parse_selector",
    "validate_field_selector",
    "field_set",
    "default_field_set",
    "escape_value",
    "unescape_value",
    "register_custom_resource",
    "unregister_custom_resource",
    "EVERYTHING",
]

GroupKind = tuple[str, str]


class FieldSelectorParseError(StatusError, ValueError):
    """A malformed field selector: 400 BadRequest with upstream's parse message."""

    def __init__(self, message: str) -> None:
        super().__init__(400, "BadRequest", message)


# ---------------------------------------------------------------------------------------
# Parsing (fields.ParseSelector, with backslash escaping of \ , and = in values)


def escape_value(s: str) -> str:
    return s.replace("\\", "\\\\").replace(",", "\\,").replace("=", "\\=")


def unescape_value(s: str) -> str:
    if "\\" not in s and "," not in s and "=" not in s:
        return s
    out = []
    in_slash = False
    for c in s:
        if in_slash:
            if c not in "\\,=":
                raise FieldSelectorParseError(f"invalid field selector: invalid escape sequence: \\{c}")
            out.append(c)
            in_slash = False
        elif c == "\\":
            in_slash = True
        elif c in ",=":
            # Go formats the rune with %v: its code point.
            raise FieldSelectorParseError(f"invalid field selector: unescaped character in value: {ord(c)}")
        else:
            out.append(c)
    if in_slash:
        raise FieldSelectorParseError("invalid field selector: invalid escape sequence: \\")
    return "".join(out)


def _split_terms(s: str) -> list[str]:
    """Split on commas that are not backslash-escaped (the backslash stays in the term)."""
    if not s:
        return []
    terms = []
    start = 0
    in_slash = False
    for i, c in enumerate(s):
        if in_slash:
            in_slash = False
        elif c == "\\":
            in_slash = True
        elif c == ",":
            terms.append(s[start:i])
            start = i + 1
    terms.append(s[start:])
    return terms


def _split_term(term: str) -> tuple[str, str, str] | None:
    # The first operator occurrence splits; "!=" and "==" are tried before "=".
    for i in range(len(term)):
        rest = term[i:]
        for op in ("!=", "==", "="):
            if rest.startswith(op):
                return term[:i], op, term[i + len(op) :]
    return None


class FieldSelector:
    """An AND of `field=value` / `field!=value` terms (kept in upstream's sorted order)."""

    __slots__ = ("terms",)

    def __init__(self, terms: tuple[tuple[str, bool, str], ...] = ()) -> None:
        # (field, equal?, value)
        self.terms = terms

    def matches(self, fields: Mapping[str, str]) -> bool:
        get = fields.get
        for f, eq, v in self.terms:
            if (get(f, "") == v) != eq:
                return False
        return True

    __call__ = matches

    def empty(self) -> bool:
        return not self.terms

    def requires_exact_match(self, field: str) -> str | None:
        """The value `field` must equal, for index lookups (e.g. the kubelet's spec.nodeName)."""
        for f, eq, v in self.terms:
            if f == field and eq:
                return v
        return None

    def requirements(self) -> list[tuple[str, str, str]]:
        return [(f, "=" if eq else "!=", v) for f, eq, v in self.terms]

    def transform(self, fn: Callable[[str, str], tuple[str, str]]) -> FieldSelector:
        out = []
        for f, eq, v in self.terms:
            nf, nv = fn(f, v)
            if nf or nv:  # upstream drops a term transformed to ("", "")
                out.append((nf, eq, nv))
        return FieldSelector(tuple(out))

    def __str__(self) -> str:
        return ",".join(f"{f}{'=' if eq else '!='}{escape_value(v)}" for f, eq, v in self.terms)

    def __repr__(self) -> str:
        return f"FieldSelector({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FieldSelector) and self.terms == other.terms

    def __hash__(self) -> int:
        return hash(self.terms)


EVERYTHING = FieldSelector()


def parse(selector: str) -> FieldSelector:
    """fields.ParseSelector; raises FieldSelectorParseError (400) with upstream's message.

    Not cached: validate_field_selector converts a FieldSelector in place, so every
    request gets its own object (parsing a few terms is cheap).
    """
    parts = sorted(_split_terms(selector))
    terms = []
    for part in parts:
        if not part:
            continue
        split = _split_term(part)
        if split is None:
            raise FieldSelectorParseError(f"invalid selector: '{selector}'; can't understand '{part}'")
        lhs, op, rhs = split
        terms.append((lhs, op != "!=", unescape_value(rhs)))
    return FieldSelector(tuple(terms))


parse_selector = parse


# ---------------------------------------------------------------------------------------
# Acceptance: which labels each kind's conversion takes, and its error text


class FieldLabelSupport:
    """One kind's field label conversion: accepted labels, renames, and rejection text."""

    __slots__ = ("accepted", "reject")

    def __init__(self, accepted: Mapping[str, str], reject: Callable[[str], str]) -> None:
        self.accepted = dict(accepted)  # client label -> canonical label
        self.reject = reject

    def convert(self, label: str, value: str) -> tuple[str, str]:
        canon = self.accepted.get(label)
        if canon is None:
            raise new_bad_request(self.reject(label))
        return canon, value


def _not_supported(label: str) -> str:
    return f"field label not supported: {label}"


def _go_q(s: str) -> str:
    import json

    return json.dumps(s, ensure_ascii=False)


def _generic_reject(label: str) -> str:
    # runtime.DefaultMetaV1FieldSelectorConversion
    return f'{_go_q(label)} is not a known field selector: only "metadata.name", "metadata.namespace"'


def _support(
    labels: list[str], reject: Callable[[str], str] = _not_supported, **renames: str
) -> FieldLabelSupport:
    accepted = {label: label for label in labels}
    accepted.update({k.replace("__", "."): v for k, v in renames.items()})
    return FieldLabelSupport(accepted, reject)


_META_NS = ["metadata.name", "metadata.namespace"]
_EVENT_LABELS = [
    "involvedObject.kind",
    "involvedObject.namespace",
    "involvedObject.name",
    "involvedObject.uid",
    "involvedObject.apiVersion",
    "involvedObject.resourceVersion",
    "involvedObject.fieldPath",
    "reason",
    "reportingComponent",
    "source",
    "type",
]

_GENERIC_SUPPORT = FieldLabelSupport({k: k for k in _META_NS}, _generic_reject)

FIELD_LABEL_SUPPORT: dict[GroupKind, FieldLabelSupport] = {
    # pkg/apis/core/v1/conversion.go
    ("", "Pod"): _support(
        _META_NS
        + [
            "spec.nodeName",
            "spec.restartPolicy",
            "spec.schedulerName",
            "spec.serviceAccountName",
            "spec.hostNetwork",
            "status.phase",
            "status.podIP",
            "status.podIPs",
            "status.nominatedNodeName",
        ],
        spec__host="spec.nodeName",  # legacy v1 clients
    ),
    ("", "Node"): _support(["metadata.name", "spec.unschedulable"]),
    ("", "ReplicationController"): _support(_META_NS + ["status.replicas"]),
    ("", "Event"): _support(_META_NS + _EVENT_LABELS),
    ("", "Namespace"): _support(["metadata.name", "status.phase"]),
    ("", "Secret"): _support(_META_NS + ["type"]),
    ("", "Service"): _support(_META_NS + ["spec.clusterIP", "spec.type"]),
    # pkg/apis/events/v1/conversion.go: the v1 spellings map onto the core labels
    ("events.k8s.io", "Event"): FieldLabelSupport(
        {
            "reason": "reason",
            "regarding.kind": "involvedObject.kind",
            "regarding.namespace": "involvedObject.namespace",
            "regarding.name": "involvedObject.name",
            "regarding.uid": "involvedObject.uid",
            "regarding.apiVersion": "involvedObject.apiVersion",
            "regarding.resourceVersion": "involvedObject.resourceVersion",
            "regarding.fieldPath": "involvedObject.fieldPath",
            "reportingController": "reportingComponent",
            "type": "type",
            "metadata.namespace": "metadata.namespace",
            "metadata.name": "metadata.name",
        },
        _not_supported,
    ),
    # pkg/apis/batch/v1/conversion.go
    ("batch", "Job"): _support(
        _META_NS + ["status.successful"],
        lambda label: f"field label {_go_q(label)} not supported for batchv1.Job",
    ),
    # pkg/apis/certificates/v1/conversion.go
    ("certificates.k8s.io", "CertificateSigningRequest"): _support(["metadata.name", "spec.signerName"]),
    # pkg/apis/resource/v1beta1/conversion.go
    ("resource.k8s.io", "ResourceSlice"): _support(
        ["metadata.name", "spec.nodeName", "spec.driver"],
        lambda label: f"field label not supported for resource.k8s.io/v1beta1, Kind=ResourceSlice: {label}",
    ),
}


def validate_field_selector(group: str, kind: str, selector: str | FieldSelector) -> FieldSelector:
    """Run every term through the kind's field label conversion, as the list/watch handler does.

    Returns the converted selector (renamed labels such as spec.host -> spec.nodeName). A
    FieldSelector argument is also converted in place, so callers that keep using their own
    object match against canonical labels too. Raises a 400 StatusError for a malformed
    selector or an unsupported label.
    """
    sel = parse(selector) if isinstance(selector, str) else selector
    support = FIELD_LABEL_SUPPORT.get((group, kind), _GENERIC_SUPPORT)
    converted = sel.transform(support.convert)
    if not isinstance(selector, str) and converted.terms != selector.terms:
        selector.terms = converted.terms
        return selector
    return converted


def register_custom_resource(
    group: str, kind: str, selectable_fields: list[dict[str, Any]] | None, namespaced: bool
) -> None:
    """A CRD version's selectableFields (jsonPath ".spec.color" -> label "spec.color")."""
    labels = [f["jsonPath"].lstrip(".") for f in selectable_fields or () if f.get("jsonPath")]
    if not labels:
        FIELD_LABEL_SUPPORT.pop((group, kind), None)
        FIELD_LABELS.pop((group, kind), None)
        return
    FIELD_LABEL_SUPPORT[(group, kind)] = _support(_META_NS + labels)
    paths = [(label, label.split(".")) for label in labels]

    def fields_of(obj: dict[str, Any]) -> dict[str, str]:
        out = _meta(obj, namespaced)
        for label, path in paths:
            v: Any = obj
            for p in path:
                v = v.get(p) if isinstance(v, dict) else None
            if v is not None:
                out[label] = _str(v)
        return out

    FIELD_LABELS[(group, kind)] = fields_of


def unregister_custom_resource(group: str, kind: str) -> None:
    FIELD_LABEL_SUPPORT.pop((group, kind), None)
    FIELD_LABELS.pop((group, kind), None)


# ---------------------------------------------------------------------------------------
# Matching: the selectable field set of each kind (registry strategies' ToSelectableFields)


def _str(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def _meta(obj: Mapping[str, Any], namespaced: bool) -> dict[str, str]:
    md = obj.get("metadata") or {}
    if namespaced:
        return {"metadata.name": md.get("name", ""), "metadata.namespace": md.get("namespace", "")}
    return {"metadata.name": md.get("name", "")}


def default_field_set(obj: Mapping[str, Any], namespaced: bool = True) -> dict[str, str]:
    """generic.DefaultNamespaceScopedAttr / DefaultClusterScopedAttr."""
    return _meta(obj, namespaced)


def _pod_fields(pod: dict[str, Any]) -> dict[str, str]:
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    ips = status.get("podIPs")
    pod_ip = (ips[0].get("ip", "") if ips else "") or status.get("podIP", "")
    out = _meta(pod, True)
    out["spec.nodeName"] = spec.get("nodeName", "")
    out["spec.restartPolicy"] = spec.get("restartPolicy", "")
    out["spec.schedulerName"] = spec.get("schedulerName", "")
    out["spec.serviceAccountName"] = spec.get("serviceAccountName", "") or spec.get("serviceAccount", "")
    out["spec.hostNetwork"] = "true" if spec.get("hostNetwork") else "false"
    out["status.phase"] = status.get("phase", "")
    out["status.podIP"] = pod_ip
    out["status.nominatedNodeName"] = status.get("nominatedNodeName", "")
    return out


def _node_fields(node: dict[str, Any]) -> dict[str, str]:
    out = _meta(node, False)
    out["spec.unschedulable"] = "true" if (node.get("spec") or {}).get("unschedulable") else "false"
    return out


def _namespace_fields(ns: dict[str, Any]) -> dict[str, str]:
    out = _meta(ns, False)
    out["status.phase"] = (ns.get("status") or {}).get("phase", "")
    out["name"] = out["metadata.name"]  # kept upstream for backward compatibility
    return out


def _secret_fields(s: dict[str, Any]) -> dict[str, str]:
    out = _meta(s, True)
    out["type"] = s.get("type", "")
    return out


def _service_fields(s: dict[str, Any]) -> dict[str, str]:
    spec = s.get("spec") or {}
    out = _meta(s, True)
    out["spec.clusterIP"] = spec.get("clusterIP", "")
    out["spec.type"] = spec.get("type", "")
    return out


def _rc_fields(rc: dict[str, Any]) -> dict[str, str]:
    out = _meta(rc, True)
    out["status.replicas"] = str((rc.get("status") or {}).get("replicas", 0))
    return out


def _job_fields(job: dict[str, Any]) -> dict[str, str]:
    out = _meta(job, True)
    out["status.successful"] = str((job.get("status") or {}).get("succeeded", 0))
    return out


def _csr_fields(csr: dict[str, Any]) -> dict[str, str]:
    out = _meta(csr, False)
    out["spec.signerName"] = (csr.get("spec") or {}).get("signerName", "")
    return out


def _resource_slice_fields(s: dict[str, Any]) -> dict[str, str]:
    out = _meta(s, False)
    spec = s.get("spec") or {}
    out["spec.nodeName"] = spec.get("nodeName", "")
    out["spec.driver"] = spec.get("driver", "")
    return out


def _event_fields(ev: dict[str, Any]) -> dict[str, str]:
    # Both wire forms share one storage: core/v1 (involvedObject, source) and
    # events.k8s.io/v1 (regarding, deprecatedSource); selection uses the core labels.
    ref = ev.get("involvedObject")
    if ref is None:
        ref = ev.get("regarding")
    ref = ref or {}
    src = ev.get("source")
    if src is None:
        src = ev.get("deprecatedSource")
    reporting = ev.get("reportingComponent") or ev.get("reportingController") or ""
    source = (src or {}).get("component", "") or reporting
    out = _meta(ev, True)
    out["involvedObject.kind"] = ref.get("kind", "")
    out["involvedObject.namespace"] = ref.get("namespace", "")
    out["involvedObject.name"] = ref.get("name", "")
    out["involvedObject.uid"] = ref.get("uid", "")
    out["involvedObject.apiVersion"] = ref.get("apiVersion", "")
    out["involvedObject.resourceVersion"] = ref.get("resourceVersion", "")
    out["involvedObject.fieldPath"] = ref.get("fieldPath", "")
    out["reason"] = ev.get("reason", "")
    out["reportingComponent"] = reporting
    out["source"] = source
    out["type"] = ev.get("type", "")
    return out


FIELD_LABELS: dict[GroupKind, Callable[[dict[str, Any]], dict[str, str]]] = {
    ("", "Pod"): _pod_fields,
    ("", "Node"): _node_fields,
    ("", "Namespace"): _namespace_fields,
    ("", "Secret"): _secret_fields,
    ("", "Service"): _service_fields,
    ("", "ReplicationController"): _rc_fields,
    ("", "Event"): _event_fields,
    ("events.k8s.io", "Event"): _event_fields,
    ("batch", "Job"): _job_fields,
    ("certificates.k8s.io", "CertificateSigningRequest"): _csr_fields,
    ("resource.k8s.io", "ResourceSlice"): _resource_slice_fields,
}


def field_set(group: str, kind: str, obj: dict[str, Any], namespaced: bool = True) -> dict[str, str]:
    """The selectable fields of obj: FIELD_LABELS for known kinds, metadata otherwise."""
    fn = FIELD_LABELS.get((group, kind))
    if fn is not None:
        return fn(obj)
    return _meta(obj, namespaced)

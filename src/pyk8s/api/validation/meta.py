"""ObjectMeta, labels, annotations and label selectors, as upstream's
apimachinery api/validation (ValidateObjectMeta*), meta/v1/validation (labels, selectors)
and core's extra finalizer-name rule.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import FieldError
from .field import (
    GoValue,
    child,
    forbidden,
    go_string_slice,
    index,
    invalid,
    required,
    too_long,
)
from .names import (
    NameFn,
    is_label_value,
    is_qualified_name,
    name_is_dns_subdomain,
    validate_namespace_name,
)

__all__ = [
    "validate_object_meta", "validate_object_meta_update", "validate_labels", "validate_label_name",
    "validate_annotations", "validate_owner_references", "validate_finalizers", "validate_finalizer_name",
    "validate_kube_finalizer_name", "validate_label_selector", "validate_template_object_meta",
    "validate_nonnegative", "validate_immutable", "meta_of", "FIELD_IMMUTABLE", "IS_NEGATIVE",
    "TOTAL_ANNOTATION_SIZE_LIMIT", "STANDARD_FINALIZERS",
]

FIELD_IMMUTABLE = "field is immutable"
IS_NEGATIVE = "must be greater than or equal to 0"
TOTAL_ANNOTATION_SIZE_LIMIT = 256 * 1024
STANDARD_FINALIZERS = {"kubernetes", "orphan", "foregroundDeletion"}
_BANNED_OWNERS = {("", "v1", "Event")}


def _int(v: Any) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) else 0


def meta_of(obj: dict[str, Any]) -> dict[str, Any]:
    md = obj.get("metadata")
    return md if isinstance(md, dict) else {}


def validate_nonnegative(value: Any, path: str) -> list[FieldError]:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value < 0:
        return [invalid(path, value, IS_NEGATIVE)]
    return []


def _semantic(v: Any) -> Any:
    """Normalize for upstream's Semantic.DeepEqual: nil and empty collections are equal."""
    if isinstance(v, dict):
        out = {k: _semantic(x) for k, x in v.items()}
        return {k: x for k, x in out.items() if x is not None and x != {} and x != []}
    if isinstance(v, list):
        return [_semantic(x) for x in v]
    return v


def validate_immutable(new: Any, old: Any, path: str, shown: Any = None) -> list[FieldError]:
    """ValidateImmutableField: `Invalid value: <new>: field is immutable`."""
    if _semantic(new) != _semantic(old) and not (new in (None, "", {}, []) and old in (None, "", {}, [])):
        return [invalid(path, new if shown is None else shown, FIELD_IMMUTABLE)]
    return []


def validate_label_name(name: str, path: str) -> list[FieldError]:
    return [invalid(path, name, m) for m in is_qualified_name(name)]


def validate_labels(labels: Any, path: str) -> list[FieldError]:
    """Every key a qualified name and every value a label value; errors point at the map."""
    errs: list[FieldError] = []
    if not isinstance(labels, dict):
        return errs
    for k in sorted(labels):
        v = labels[k]
        errs += validate_label_name(k, path)
        v = v if isinstance(v, str) else str(v)
        errs += [invalid(path, v, m) for m in is_label_value(v)]
    return errs


def validate_annotations(annotations: Any, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    if not isinstance(annotations, dict):
        return errs
    total = 0
    for k in sorted(annotations):
        # the rule is QualifiedName except that case does not matter
        errs += [invalid(path, k, m) for m in is_qualified_name(k.lower())]
        v = annotations[k]
        total += len(k.encode()) + len(v.encode() if isinstance(v, str) else str(v).encode())
    if total > TOTAL_ANNOTATION_SIZE_LIMIT:
        errs.append(too_long(path, TOTAL_ANNOTATION_SIZE_LIMIT))
    return errs


def _split_api_version(api_version: str) -> tuple[str, str]:
    if "/" in api_version:
        g, _, v = api_version.partition("/")
        return g, v
    return "", api_version


def validate_owner_references(refs: Any, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    if not isinstance(refs, list):
        return errs
    first_controller = ""
    for ref in refs:
        if not isinstance(ref, dict):
            continue
        api_version = ref.get("apiVersion") or ""
        group, version = _split_api_version(api_version)
        kind = ref.get("kind") or ""
        if not version:
            errs.append(invalid(child(path, "apiVersion"), api_version, "version must not be empty"))
        if not kind:
            errs.append(invalid(child(path, "kind"), kind, "must not be empty"))
        if not ref.get("name"):
            errs.append(invalid(child(path, "name"), ref.get("name") or "", "must not be empty"))
        if not ref.get("uid"):
            errs.append(invalid(child(path, "uid"), ref.get("uid") or "", "must not be empty"))
        if (group, version, kind) in _BANNED_OWNERS:
            gvk = f"/{version}, Kind={kind}"
            errs.append(invalid(path, GoValue(_go_owner_ref(ref)), f"{gvk} is disallowed from being an owner"))
        if ref.get("controller") is True:
            cur = f"{kind}/{ref.get('name') or ''}"
            if first_controller:
                errs.append(invalid(path, GoValue(_go_owner_refs(refs)),
                                    'Only one reference can have Controller set to true. Found "true" in '
                                    f"references for {first_controller} and {cur}"))
            else:
                first_controller = cur
    return errs


def _go_bool_ptr(v: Any) -> str:
    return "(*bool)(nil)" if v is None else f"(*bool)({'true' if v else 'false'})"


def _go_owner_ref(ref: dict[str, Any]) -> str:
    return (f'v1.OwnerReference{{APIVersion:"{ref.get("apiVersion", "")}", Kind:"{ref.get("kind", "")}", '
            f'Name:"{ref.get("name", "")}", UID:"{ref.get("uid", "")}", '
            f'Controller:{_go_bool_ptr(ref.get("controller"))}, '
            f'BlockOwnerDeletion:{_go_bool_ptr(ref.get("blockOwnerDeletion"))}}}')


def _go_owner_refs(refs: list[dict[str, Any]]) -> str:
    return "[]v1.OwnerReference{" + ", ".join(_go_owner_ref(r) for r in refs if isinstance(r, dict)) + "}"


def validate_finalizer_name(name: str, path: str) -> list[FieldError]:
    return [invalid(path, name, m) for m in is_qualified_name(name)]


def validate_kube_finalizer_name(name: str, path: str) -> list[FieldError]:
    """core's extra rule: unqualified finalizers must be one of the standard ones."""
    if "/" not in name and name not in STANDARD_FINALIZERS:
        return [invalid(path, name, "name is neither a standard finalizer name nor is it fully qualified")]
    return []


def validate_finalizers(finalizers: Any, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    if not isinstance(finalizers, list):
        return errs
    for f in finalizers:
        errs += validate_finalizer_name(str(f), path)
    if "orphan" in finalizers and "foregroundDeletion" in finalizers:
        errs.append(invalid(path, go_string_slice(finalizers),
                            "finalizer orphan and foregroundDeletion cannot be both set"))
    return errs


def _validate_managed_fields(entries: Any, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    if not isinstance(entries, list):
        return errs
    for i, e in enumerate(entries):
        if not isinstance(e, dict):
            continue
        p = index(path, i)
        op = e.get("operation") or ""
        if op not in ("Apply", "Update"):
            errs.append(invalid(child(p, "operation"), op, "must be `Apply` or `Update`"))
        ft = e.get("fieldsType") or ""
        if ft and ft != "FieldsV1":
            errs.append(invalid(child(p, "fieldsType"), ft, "must be `FieldsV1`"))
    return errs


_META_MAPS_AND_LISTS: tuple[tuple[str, Callable[[Any, str], list[FieldError]]], ...] = (
    ("labels", validate_labels), ("annotations", validate_annotations), ("ownerReferences", validate_owner_references),
    ("finalizers", validate_finalizers), ("managedFields", _validate_managed_fields),
)


def _common(md: dict[str, Any], namespaced: bool, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    ns = md.get("namespace") or ""
    if namespaced:
        if not ns:
            errs.append(required(child(path, "namespace")))
        else:
            errs += [invalid(child(path, "namespace"), ns, m) for m in validate_namespace_name(ns, False)]
    elif ns:
        errs.append(forbidden(child(path, "namespace"), "not allowed on this type"))
    # each check below finds nothing in an absent or empty field: skip those (the common case)
    gen = md.get("generation")
    if gen is not None:
        errs += validate_nonnegative(gen, child(path, "generation"))
    for f, fn in _META_MAPS_AND_LISTS:
        v = md.get(f)
        if v:
            errs += fn(v, child(path, f))
    return errs


def validate_object_meta(obj: dict[str, Any], namespaced: bool, name_fn: NameFn = name_is_dns_subdomain,
                         path: str = "metadata", kube_finalizers: bool = True) -> list[FieldError]:
    """ValidateObjectMeta for a create (core's variant: kube_finalizers adds the standard-name rule).

    A missing name is accepted when generateName is set: the API server generates the
    name after defaulting (upstream validates after generation, where the name exists).
    """
    md = meta_of(obj)
    errs: list[FieldError] = []
    gen = md.get("generateName") or ""
    name = md.get("name") or ""
    if gen:
        errs += [invalid(child(path, "generateName"), gen, m) for m in name_fn(gen, True)]
    if not name:
        if not gen:
            errs.append(required(child(path, "name"), "name or generateName is required"))
    else:
        errs += [invalid(child(path, "name"), name, m) for m in name_fn(name, False)]
    errs += _common(md, namespaced, path)
    if kube_finalizers:
        for i, f in enumerate(md.get("finalizers") or []):
            errs += validate_kube_finalizer_name(str(f), index(child(path, "finalizers"), i))
    return errs


def validate_object_meta_update(new: dict[str, Any], old: dict[str, Any], path: str = "metadata",
                                kube_finalizers: bool = True) -> list[FieldError]:
    """ValidateObjectMetaUpdate: identity fields immutable, generation not decremented, labels valid."""
    nmd, omd = meta_of(new), meta_of(old)
    errs: list[FieldError] = []
    if omd.get("deletionTimestamp"):
        extra = sorted(set(nmd.get("finalizers") or []) - set(omd.get("finalizers") or []))
        if extra:
            errs.append(forbidden(child(path, "finalizers"),
                                  "no new finalizers can be added if the object is being deleted, found new "
                                  f"finalizers {go_string_slice(extra).text}"))
    # (upstream also requires metadata.resourceVersion here, but its store fills it in from the
    # stored object before validating an unconditional update, so that error never reaches clients)
    ngen, ogen = _int(nmd.get("generation")), _int(omd.get("generation"))
    if ngen < ogen:
        errs.append(invalid(child(path, "generation"), ngen, "must not be decremented"))
    for f in ("name", "namespace", "uid"):
        errs += validate_immutable(nmd.get(f) or "", omd.get(f) or "", child(path, f))
    for f in ("creationTimestamp", "deletionTimestamp"):
        nv, ov = nmd.get(f), omd.get(f)
        if (nv or None) != (ov or None):
            errs.append(invalid(child(path, f), GoValue(_go_time(nv)), FIELD_IMMUTABLE))
    nv, ov = nmd.get("deletionGracePeriodSeconds"), omd.get("deletionGracePeriodSeconds")
    if nv != ov:
        errs.append(invalid(child(path, "deletionGracePeriodSeconds"), "null" if nv is None else nv, FIELD_IMMUTABLE))
    errs += validate_labels(nmd.get("labels"), child(path, "labels"))
    errs += validate_annotations(nmd.get("annotations"), child(path, "annotations"))
    errs += validate_owner_references(nmd.get("ownerReferences"), child(path, "ownerReferences"))
    errs += _validate_managed_fields(nmd.get("managedFields"), child(path, "managedFields"))
    if kube_finalizers:
        for i, f in enumerate(nmd.get("finalizers") or []):
            errs += validate_kube_finalizer_name(str(f), index(child(path, "finalizers"), i))
    return errs


def _go_time(v: Any) -> str:
    """metav1.Time's String(): `2006-01-02 15:04:05 +0000 UTC` (zero time when unset)."""
    if not v:
        return "0001-01-01 00:00:00 +0000 UTC"
    s = str(v)
    if len(s) >= 19 and s[10] == "T":
        return f"{s[:10]} {s[11:19]} +0000 UTC"
    return s


def validate_template_object_meta(md: Any, path: str) -> list[FieldError]:
    """ValidateTemplateObjectMeta (e.g. ephemeral volume claim templates): only labels/annotations."""
    md = md if isinstance(md, dict) else {}
    errs = validate_annotations(md.get("annotations"), child(path, "annotations"))
    errs += validate_labels(md.get("labels"), child(path, "labels"))
    for k in sorted(md):
        if k not in ("labels", "annotations") and md[k] not in (None, "", {}, [], 0):
            errs.append(forbidden(child(path, k), "cannot be set"))
    return errs


def validate_label_selector(sel: Any, path: str, allow_invalid_label_value: bool = False) -> list[FieldError]:
    """metav1 ValidateLabelSelector: matchLabels as labels, matchExpressions operators and keys."""
    errs: list[FieldError] = []
    if not isinstance(sel, dict):
        return errs
    errs += validate_labels(sel.get("matchLabels"), child(path, "matchLabels"))
    for i, expr in enumerate(sel.get("matchExpressions") or []):
        if not isinstance(expr, dict):
            continue
        p = index(child(path, "matchExpressions"), i)
        op = expr.get("operator") or ""
        values = expr.get("values") or []
        if op in ("In", "NotIn"):
            if not values:
                errs.append(required(child(p, "values"), "must be specified when `operator` is 'In' or 'NotIn'"))
        elif op in ("Exists", "DoesNotExist"):
            if values:
                errs.append(forbidden(child(p, "values"),
                                      "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"))
        else:
            errs.append(invalid(child(p, "operator"), op, "not a valid selector operator"))
        errs += validate_label_name(expr.get("key") or "", child(p, "key"))
        if not allow_invalid_label_value:
            for j, v in enumerate(values):
                errs += [invalid(index(child(p, "values"), j), v, m) for m in is_label_value(str(v))]
    return errs

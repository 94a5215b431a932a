"""apiextensions.k8s.io/v1 CustomResourceDefinition validation, after upstream's
apiextensions-apiserver pkg/apis/apiextensions/validation.

Covered: the `<plural>.<group>` name, group, scope, names, versions (DNS-1035 names,
unique, exactly one storage version, a schema for every version), the structural
basics of each schema (typed nodes, an object at the root), subresources, printer
columns, conversion, stored versions and the update immutabilities. Not covered: the
full structural-schema rules (value validations, x-kubernetes-* invariants, CEL rules)
and name conflicts with other CRDs (the naming controller's job).
Paths use the internal field names upstream reports (`spec.conversion.webhookClientConfig`,
`additionalPrinterColumns[0].JSONPath`).
"""

from __future__ import annotations

from typing import Any

from ...errors import FieldError
from ..field import GoValue, child, forbidden, go_string_slice, index, invalid, key, not_supported, required
from ..meta import validate_immutable, validate_object_meta, validate_object_meta_update
from ..names import is_dns1035_label, is_dns1123_subdomain, name_is_dns_subdomain
from ._common import as_dict, as_list, go_generic, spec_of, validate_webhook_service, validate_webhook_url

__all__ = ["validate_crd", "validate_crd_update", "VALIDATORS", "UPDATE_VALIDATORS"]

_OPENAPI_TYPES = ["array", "boolean", "integer", "number", "object", "string"]
_COLUMN_TYPES = ["boolean", "date", "integer", "number", "string"]
_COLUMN_FORMATS = ["byte", "date", "date-time", "double", "float", "int32", "int64", "password"]
_REVIEW_VERSIONS = ["v1", "v1beta1"]


def _dns1035(value: str, path: str, prefix: str = "") -> list[FieldError]:
    msgs = is_dns1035_label(value.lower() if prefix else value)
    return [invalid(path, value, prefix + ",".join(msgs))] if msgs else []


def _names(names: dict[str, Any], path: str) -> list[FieldError]:
    """ValidateCustomResourceDefinitionNames."""
    errs: list[FieldError] = []
    mixed = "may have mixed case, but should otherwise match: "
    for f, prefix in (("plural", ""), ("singular", ""), ("kind", mixed), ("listKind", mixed)):
        v = names.get(f) or ""
        if v:
            errs += _dns1035(v, child(path, f), prefix)
    for i, s in enumerate(names.get("shortNames") or []):
        errs += _dns1035(s, index(child(path, "shortNames"), i))
    kind = names.get("kind") or ""
    if kind and kind == names.get("listKind"):
        errs.append(invalid(child(path, "listKind"), kind, "kind and listKind may not be the same"))
    for i, c in enumerate(names.get("categories") or []):
        errs += _dns1035(c, index(child(path, "categories"), i))
    return errs


def _schema_node(s: Any, path: str, level: str) -> list[FieldError]:
    """The structural basics: every node typed (unless int-or-string or preserving unknown fields)."""
    if not isinstance(s, dict):
        return []
    errs: list[FieldError] = []
    typ = s.get("type") or ""
    if typ and typ not in _OPENAPI_TYPES:
        errs.append(not_supported(child(path, "type"), typ, _OPENAPI_TYPES))
    untyped_ok = s.get("x-kubernetes-int-or-string") or s.get("x-kubernetes-preserve-unknown-fields")
    if s.get("x-kubernetes-embedded-resource") and typ != "object":
        if not typ:
            errs.append(required(child(path, "type"), "must be object if x-kubernetes-embedded-resource is true"))
        else:
            errs.append(invalid(child(path, "type"), typ, "must be object if x-kubernetes-embedded-resource is true"))
    elif not typ and not untyped_ok:
        detail = {"root": "must not be empty at the root", "items": "must not be empty for specified array items",
                  "field": "must not be empty for specified object fields"}[level]
        errs.append(required(child(path, "type"), detail))
    if level == "root" and typ and typ != "object":
        errs.append(invalid(child(path, "type"), typ, "must be object at the root"))
    # as upstream: `additionalProperties: true` (no schema) may stand beside properties; false or a schema may not
    if s.get("properties") and s.get("additionalProperties") not in (None, True):
        errs.append(forbidden(child(path, "additionalProperties"), "additionalProperties and properties are mutual exclusive"))
    for name, sub in (s.get("properties") or {}).items():
        errs += _schema_node(sub, key(child(path, "properties"), name), "field")
    if isinstance(s.get("items"), dict):
        errs += _schema_node(s["items"], child(path, "items"), "items")
    if isinstance(s.get("additionalProperties"), dict):
        errs += _schema_node(s["additionalProperties"], child(path, "additionalProperties"), "field")
    return errs


def _subresources(sub: Any, path: str) -> list[FieldError]:
    scale = (sub or {}).get("scale") if isinstance(sub, dict) else None
    if not isinstance(scale, dict):
        return []
    errs: list[FieldError] = []
    for f, prefixes, where in (("specReplicasPath", (".spec.",), ".spec"),
                               ("statusReplicasPath", (".status.",), ".status")):
        v = scale.get(f) or ""
        p = child(path, f"scale.{f}")
        if not v:
            errs.append(required(p))
        elif not v.startswith(prefixes):
            errs.append(invalid(p, v, f"should be a json path under {where}"))
    lsp = scale.get("labelSelectorPath") or ""
    if lsp and not lsp.startswith((".spec.", ".status.")):
        errs.append(invalid(child(path, "scale.labelSelectorPath"), lsp, "should be a json path under either .spec or .status"))
    return errs


def _column(col: dict[str, Any], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    if not col.get("name"):
        errs.append(required(child(path, "name")))
    typ = col.get("type") or ""
    if not typ:
        errs.append(required(child(path, "type"), "must be one of " + ",".join(_COLUMN_TYPES)))
    elif typ not in _COLUMN_TYPES:
        errs.append(not_supported(child(path, "type"), typ, _COLUMN_TYPES))
    fmt = col.get("format") or ""
    if fmt and fmt not in _COLUMN_FORMATS:
        errs.append(not_supported(child(path, "format"), fmt, _COLUMN_FORMATS))
    if not col.get("jsonPath"):
        errs.append(required(child(path, "JSONPath")))
    return errs


def _version(v: dict[str, Any], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    schema = (v.get("schema") or {}).get("openAPIV3Schema") if isinstance(v.get("schema"), dict) else None
    sp = child(path, "schema", "openAPIV3Schema")
    if not isinstance(schema, dict):
        errs.append(required(sp, "schemas are required"))
    else:
        errs += _schema_node(schema, sp, "root")
    errs += _subresources(v.get("subresources"), child(path, "subresources"))
    for i, col in enumerate(v.get("additionalPrinterColumns") or []):
        if isinstance(col, dict):
            errs += _column(col, index(child(path, "additionalPrinterColumns"), i))
    return errs


def _go_versions(versions: Any) -> GoValue:
    if not isinstance(versions, list):
        return GoValue("[]apiextensions.CustomResourceDefinitionVersion(nil)")
    return GoValue(go_generic(versions, "[]apiextensions.CustomResourceDefinitionVersion"))


def _conversion(conv: Any, path: str) -> list[FieldError]:
    if not isinstance(conv, dict):
        return []
    strategy = conv.get("strategy") or ""
    sp = child(path, "strategy")
    errs: list[FieldError] = []
    if not strategy:
        errs.append(required(sp))
    elif strategy not in ("None", "Webhook"):
        errs.append(not_supported(sp, strategy, ["None", "Webhook"]))
    webhook = conv.get("webhook") if isinstance(conv.get("webhook"), dict) else None
    cc = (webhook or {}).get("clientConfig")
    ccp = child(path, "webhookClientConfig")
    if strategy == "Webhook":
        if not isinstance(cc, dict):
            errs.append(required(ccp, "required when strategy is set to Webhook"))
        elif (cc.get("url") is None) == (cc.get("service") is None):
            errs.append(required(ccp, "exactly one of url or service is required"))
        elif cc.get("url") is not None:
            errs += validate_webhook_url(child(ccp, "url"), cc["url"], True)
        else:
            svc = cc["service"]
            errs += validate_webhook_service(child(ccp, "service"), svc.get("namespace") or "", svc.get("name") or "",
                                             svc.get("path"), svc.get("port", 443))
        versions = (webhook or {}).get("conversionReviewVersions") or []
        vp = child(path, "conversionReviewVersions")
        if not versions:
            errs.append(required(vp, "must specify one of " + ", ".join(_REVIEW_VERSIONS)))
        else:
            seen: set[str] = set()
            for i, rv in enumerate(versions):
                if rv in seen:
                    errs.append(invalid(index(vp, i), rv, "duplicate version"))
                    continue
                seen.add(rv)
                errs += [invalid(index(vp, i), rv, m) for m in is_dns1035_label(rv)]
            if not any(rv in _REVIEW_VERSIONS for rv in versions):
                errs.append(invalid(vp, go_string_slice(versions),
                                    "must include at least one of " + ", ".join(_REVIEW_VERSIONS)))
    elif cc is not None:
        errs.append(forbidden(ccp, "should not be set when strategy is not set to Webhook"))
    return errs


def _spec(spec: dict[str, Any], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    group = spec.get("group") or ""
    gp = child(path, "group")
    if not group:
        errs.append(required(gp))
    elif is_dns1123_subdomain(group):
        errs.append(invalid(gp, group, ",".join(is_dns1123_subdomain(group))))
    elif len(group.split(".")) < 2:
        errs.append(invalid(gp, group, "should be a domain with at least one dot"))
    scope = spec.get("scope") or ""
    if not scope:
        errs.append(required(child(path, "scope")))
    elif scope not in ("Cluster", "Namespaced"):
        errs.append(not_supported(child(path, "scope"), scope, ["Cluster", "Namespaced"]))
    versions = as_list(spec.get("versions"))
    storage = 0
    names: set[str] = set()
    unique = True
    for i, v in enumerate(versions):
        if not isinstance(v, dict):
            continue
        vp = index(child(path, "versions"), i)
        storage += 1 if v.get("storage") else 0
        name = v.get("name") or ""
        unique &= name not in names
        names.add(name)
        errs += _dns1035(name, child(vp, "name"))
        errs += _version(v, vp)
    if not unique:
        errs.append(invalid(child(path, "versions"), _go_versions(spec.get("versions")), "must contain unique version names"))
    if storage != 1:
        errs.append(invalid(child(path, "versions"), _go_versions(spec.get("versions")),
                            "must have exactly one version marked as storage version"))
    names_obj = as_dict(spec.get("names"))
    for f in ("plural", "singular", "kind", "listKind"):
        if not names_obj.get(f):
            errs.append(required(child(path, "names", f)))
    errs += _names(names_obj, child(path, "names"))
    errs += _conversion(spec.get("conversion"), child(path, "conversion"))
    return errs


def _stored_versions(obj: dict[str, Any]) -> list[FieldError]:
    stored = (obj.get("status") or {}).get("storedVersions") or []
    path = "status.storedVersions"
    if not stored:
        return [invalid(path, go_string_slice(stored), "must have at least one stored version")]
    errs: list[FieldError] = []
    remaining = {v: i for i, v in enumerate(stored)}
    for v in spec_of(obj).get("versions") or []:
        if not isinstance(v, dict):
            continue
        name = v.get("name") or ""
        if v.get("storage") and name not in remaining:
            errs.append(invalid(path, GoValue(go_generic(v, "apiextensions.CustomResourceDefinitionVersion")),
                                "must have the storage version " + name))
        remaining.pop(name, None)
    for v, i in remaining.items():
        errs.append(invalid(index(path, i), v, "must appear in spec.versions"))
    return errs


def _preserve_unknown_fields(new: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
    if old is not None and spec_of(old).get("preserveUnknownFields") is True:
        return []  # kept for objects created through v1beta1
    if spec_of(new).get("preserveUnknownFields") is True:
        return [invalid("spec.preserveUnknownFields", True,
                        "cannot set to true, set x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema "
                        "instead")]
    return []


def _name_fn(obj: dict[str, Any]) -> Any:
    spec = spec_of(obj)
    wanted = f"{(spec.get('names') or {}).get('plural') or ''}.{spec.get('group') or ''}"

    def name_fn(name: str, prefix: bool) -> list[str]:
        msgs = name_is_dns_subdomain(name, prefix)
        if name != wanted:
            msgs.append('must be spec.names.plural+"."+spec.group')
        return msgs

    return name_fn


def validate_crd_rules(crd: dict[str, Any]) -> list[FieldError]:
    # imported here: the CEL library imports api.validation (a cycle at import time)
    from ...schema.celrules import validate_crd_rules as check

    return check(crd)


def validate_crd(obj: dict[str, Any]) -> list[FieldError]:
    errs = validate_object_meta(obj, False, _name_fn(obj), kube_finalizers=False)
    errs += _spec(spec_of(obj), "spec")
    errs += _stored_versions(obj)
    errs += validate_crd_rules(obj)
    return errs + _preserve_unknown_fields(obj, None)


def _established(obj: dict[str, Any]) -> bool:
    return any(c.get("type") == "Established" and c.get("status") == "True"
               for c in (obj.get("status") or {}).get("conditions") or [] if isinstance(c, dict))


def validate_crd_update(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    errs = validate_object_meta_update(new, old, kube_finalizers=False)
    spec, old_spec = spec_of(new), spec_of(old)
    errs += _spec(spec, "spec")
    if _established(old):
        errs += validate_immutable(spec.get("scope") or "", old_spec.get("scope") or "", "spec.scope")
        errs += validate_immutable((spec.get("names") or {}).get("kind") or "",
                                   (old_spec.get("names") or {}).get("kind") or "", "spec.names.kind")
    errs += validate_immutable(spec.get("group") or "", old_spec.get("group") or "", "spec.group")
    errs += validate_immutable((spec.get("names") or {}).get("plural") or "",
                               (old_spec.get("names") or {}).get("plural") or "", "spec.names.plural")
    errs += _stored_versions(new)
    errs += validate_crd_rules(new)
    return errs + _preserve_unknown_fields(new, old)


VALIDATORS = {("apiextensions.k8s.io", "CustomResourceDefinition"): validate_crd}
UPDATE_VALIDATORS = {("apiextensions.k8s.io", "CustomResourceDefinition"): validate_crd_update}

"""A small re-implementation of kubectl explain's OpenAPI v3 plaintext template, for tests.

Follows staging/src/k8s.io/kubectl/pkg/explain/v2/templates/plaintext.tmpl: the GVK is
found on the resource's operations, the schema by its x-kubernetes-group-version-kind,
types by the template's typeGuess, text wrapped like go-wordwrap.
"""

from __future__ import annotations

from typing import Any


def _resolve(doc: dict[str, Any], ref: str | None) -> dict[str, Any] | None:
    if not ref:
        return None
    return doc["components"]["schemas"].get(ref.rsplit("/", 1)[-1])


def wrap(s: str, limit: int) -> str:
    """go-wordwrap's WrapString: greedy on spaces, keeps newlines, never splits words."""
    out = []
    for line in s.split("\n"):
        words = line.split(" ")
        cur = ""
        lines = []
        for w in words:
            if not cur:
                cur = w
            elif len(cur) + 1 + len(w) <= limit:
                cur += " " + w
            else:
                lines.append(cur)
                cur = w
        lines.append(cur)
        out.append("\n".join(lines))
    return "\n".join(out)


def indent(s: str, n: int) -> str:
    return "\n".join(" " * n + line for line in s.split("\n"))


def type_guess(doc: dict[str, Any], s: dict[str, Any]) -> str:
    if s.get("items"):
        return "[]" + type_guess(doc, s["items"])
    ap = s.get("additionalProperties")
    if isinstance(ap, dict) and ap:
        return "map[string]" + type_guess(doc, ap)
    if s.get("allOf") and not s.get("properties") and len(s["allOf"]) == 1:
        return type_guess(doc, s["allOf"][0])
    if s.get("$ref"):
        ref = s["$ref"]
        target = _resolve(doc, ref)
        if not target or not target.get("type") or target.get("type") == "object":
            return ref.rsplit("/", 1)[-1].rsplit(".", 1)[-1] or "Object"
        return target["type"]
    if s.get("type") == "object":
        return "Object"
    return s.get("type") or "Object"


def description(doc: dict[str, Any], s: dict[str, Any]) -> str:
    s = _resolve(doc, s.get("$ref")) or s
    out = ""
    if s.get("description"):
        out += s["description"] + "\n"
    for sub in s.get("allOf") or []:
        out += description(doc, sub)
    if s.get("items"):
        out += description(doc, s["items"])
    if isinstance(s.get("additionalProperties"), dict):
        out += description(doc, s["additionalProperties"])
    return out


def _field_list(doc: dict[str, Any], s: dict[str, Any], level: int, recursive: bool, history: set[str]) -> str:
    ref = s.get("$ref") or ""
    if ref and ref in history:
        return ""
    history = history | {ref}
    resolved = _resolve(doc, ref) or s
    out = ""
    for name in sorted(resolved.get("properties") or {}):
        fs = resolved["properties"][name]
        pad = level * 2
        line = " " * pad + name + "\t<" + type_guess(doc, fs) + ">"
        if name in (resolved.get("required") or []):
            line += " -required-"
        out += line + "\n"
        if not recursive:
            out += indent(wrap(fs.get("description") or "<no description>", 78 - pad), pad + 2) + "\n\n"
        else:
            out += _field_list(doc, fs, level + 1, recursive, history)
    for sub in resolved.get("allOf") or []:
        out += _field_list(doc, sub, level, recursive, history)
    if resolved.get("items"):
        out += _field_list(doc, resolved["items"], level, recursive, history)
    if isinstance(resolved.get("additionalProperties"), dict):
        out += _field_list(doc, resolved["additionalProperties"], level, recursive, history)
    return out


def _output(doc: dict[str, Any], s: dict[str, Any], path: list[str], recursive: bool) -> str:
    ref = s.get("$ref") or ""
    resolved = _resolve(doc, ref) or s
    if not path:
        out = "DESCRIPTION:\n" + indent(wrap(description(doc, resolved) or "<empty>", 76), 4) + "\n"
        fields = _field_list(doc, resolved, 1, recursive, set())
        if fields:
            out += "FIELDS:\n" + fields
        return out
    props = resolved.get("properties") or {}
    if path[0] in props:
        sub = props[path[0]]
        head = ""
        if len(path) == 1:
            head = f"FIELD: {path[0]} <{type_guess(doc, sub)}>\n\n\n"
        return head + _output(doc, sub, path[1:], recursive)
    if resolved.get("items"):
        return _output(doc, resolved["items"], path, recursive)
    if isinstance(resolved.get("additionalProperties"), dict):
        return _output(doc, resolved["additionalProperties"], path, recursive)
    for sub in resolved.get("allOf") or []:
        got = _output(doc, sub, path, recursive)
        if got:
            return got
    return ""


def explain(doc: dict[str, Any], group: str, version: str, resource: str, path: list[str], recursive: bool = False) -> str:
    prefix = "/api" if not group else f"/apis/{group}"
    candidates = [
        f"{prefix}/{version}/{resource}",
        f"{prefix}/{version}/{resource}/{{name}}",
        f"{prefix}/{version}/namespaces/{{namespace}}/{resource}",
        f"{prefix}/{version}/namespaces/{{namespace}}/{resource}/{{name}}",
    ]
    gvk = None
    for c in candidates:
        entry = doc["paths"].get(c) or {}
        for m in ("get", "post", "put", "patch", "delete"):
            if m in entry and entry[m].get("x-kubernetes-group-version-kind"):
                gvk = entry[m]["x-kubernetes-group-version-kind"]
                break
        if gvk:
            break
    if gvk is None:
        raise LookupError(f"GVR {group}/{version}/{resource} not found in OpenAPI schema")
    out = ""
    if gvk["group"]:
        out += f"GROUP:      {gvk['group']}\n"
    out += f"KIND:       {gvk['kind']}\nVERSION:    {gvk['version']}\n\n"
    for schema in doc["components"]["schemas"].values():
        if gvk in (schema.get("x-kubernetes-group-version-kind") or []):
            body = _output(doc, schema, path, recursive)
            if not body:
                raise LookupError(f'field "{path[-1]}" does not exist')
            return out + body + "\n"
    raise LookupError(f"GVK {gvk} not found in OpenAPI schema")

"""Generate src/pyk8s/api/openapi_enums.json: the `enum` lists and "Possible enum values"
texts of v1.33's OpenAPI, which the kubernetes-validate copy of the definitions leaves out.

Source: the npm package kubernetes-models 4.5.1, generated from upstream's v1.33 OpenAPI
spec. Its type declarations keep each field's upstream description as a doc comment
(including the "Possible enum values" block kube-openapi appends) and each enum as a union
of string literals. The script checks that the package is v1.33: every description it shares
with the kubernetes-validate v1.33 definitions must be identical once the enum block is cut
off, and the values listed in each block must equal the union.

Usage (no network access at run time; fetch the package with npm first):

    npm pack kubernetes-models@4.5.1 && tar xzf kubernetes-models-4.5.1.tgz
    .venv/bin/python scripts/gen_openapi_enums.py package/

Output, per definition and property: {"enum": [...], "doc": "Possible enum values:\\n - ..."}
for a string field, {"items": {"enum": [...]}} for a list of enum values and
{"additionalProperties": {"enum": [...]}} for a map of them (kube-openapi gives list items
and map values an enum but no description).
"""

from __future__ import annotations

import json
import os
import re
import sys

ENUM_BLOCK = "Possible enum values:\n"
OUT = os.path.join(os.path.dirname(__file__), "..", "src", "pyk8s", "api", "openapi_enums.json")
_LITERALS = r'"(?:[^"\\]|\\.)*"(?: \| "(?:[^"\\]|\\.)*")*'


def _camel(name: str) -> str:
    """`io.k8s.api.core.v1.Container` -> `IoK8sApiCoreV1Container` (the package's export names)."""
    return "".join(p[:1].upper() + p[1:] for p in re.split(r"[.\-]", name))


def _unescape(line: str) -> str:
    # the generator escapes "*" and "/" so that descriptions cannot close the comment
    return line.replace("\\*", "*").replace("\\/", "/")


def _declarations(root: str) -> dict[str, dict[str, tuple[str, str]]]:
    """{export name: {property: (description, TypeScript type)}} from every .d.ts file."""
    out: dict[str, dict[str, tuple[str, str]]] = {}
    for dirpath, _, files in os.walk(root):
        for f in files:
            if not f.endswith(".d.ts"):
                continue
            with open(os.path.join(dirpath, f), encoding="utf-8") as fh:
                text = fh.read()
            m = re.search(r"export \{ I\w+ as I(\w+),", text)
            body = re.search(r"export interface I\w+ \{\n(.*?)\n\}\n", text, re.S)
            if not m or not body:
                continue
            lines = body.group(1).split("\n")
            props: dict[str, tuple[str, str]] = {}
            i = 0
            while i < len(lines):
                if lines[i] != "    /**":
                    i += 1
                    continue
                j = i + 1
                doc: list[str] = []
                while lines[j] != "     */":
                    doc.append(_unescape(lines[j][7:] if lines[j].startswith("     * ") else lines[j][6:]))
                    j += 1
                decl = re.match(r'    "([^"]+)"\??: (.*);$', lines[j + 1])
                if decl:
                    props[decl.group(1)] = ("\n".join(doc), decl.group(2))
                i = j + 2
            out[m.group(1)] = props
    return out


def _values(literals: str) -> list[str]:
    return [json.loads(v) for v in re.findall(r'"(?:[^"\\]|\\.)*"', literals)]


def generate(package_dir: str) -> dict[str, dict[str, dict]]:
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))
    from pyk8s.api.definitions import _load_shipped_definitions

    defs = _load_shipped_definitions()
    by_export = {_camel(name): name for name in defs}
    result: dict[str, dict[str, dict]] = {}
    shared = 0
    for export, props in sorted(_declarations(package_dir).items()):
        name = by_export.get(export)
        if name is None:
            continue  # removed APIs the package still carries
        upstream = defs[name].get("properties") or {}
        for prop, (doc, ts_type) in props.items():
            base, sep, block = doc.partition(ENUM_BLOCK)
            if sep:
                base = base[:-2] if base.endswith("\n\n") else base
            if prop in upstream:
                shared += 1
                if base != upstream[prop].get("description", ""):
                    raise SystemExit(f"{name}.{prop}: description differs from v1.33; wrong package version?")
            entry: dict = {}
            if re.fullmatch(_LITERALS, ts_type):
                values = _values(ts_type)
                listed = [json.loads(v) for v in re.findall(r'^ - `("(?:[^"\\]|\\.)*")`', block, re.M)]
                if listed != values:
                    raise SystemExit(f"{name}.{prop}: enum block {listed} != values {values}")
                entry = {"enum": values, "doc": ENUM_BLOCK + block}
            elif m := re.fullmatch(r"Array<(" + _LITERALS + r")>", ts_type):
                entry = {"items": {"enum": _values(m.group(1))}}
            elif m := re.fullmatch(r"\{\s*\[key: string\]: (" + _LITERALS + r");\s*\}", ts_type):
                entry = {"additionalProperties": {"enum": _values(m.group(1))}}
            elif sep:
                raise SystemExit(f"{name}.{prop}: enum text on a {ts_type!r} field")
            if entry:
                if prop not in upstream:
                    raise SystemExit(f"{name}.{prop}: not a v1.33 field")
                result.setdefault(name, {})[prop] = entry
    if shared < 1000:
        raise SystemExit(f"only {shared} descriptions shared with v1.33: not the kubernetes-models package?")
    return result


def main() -> None:
    data = generate(sys.argv[1])
    with open(OUT, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=1, sort_keys=True, ensure_ascii=False)
        f.write("\n")
    print(f"{sum(len(v) for v in data.values())} enum fields in {len(data)} definitions -> {os.path.normpath(OUT)}")


if __name__ == "__main__":
    main()

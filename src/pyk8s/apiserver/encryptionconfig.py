"""`--encryption-provider-config`: upstream's EncryptionConfiguration file, parsed and validated.

The file (apiserver.config.k8s.io/v1, kind EncryptionConfiguration) lists rules; each names
resources (`secrets`, `deployments.apps`, `*.apps` for a whole group, `*.` for the core group,
`*.*` for everything) and an ordered provider list. For a resource the exact rule wins, then its
group's `*.<group>`, then `*.*`; a rule listed after a wildcard that covers it is refused ("is
masked by earlier rule"), as upstream. The first provider writes, every listed one reads.
Messages follow upstream's: `error while parsing file: resources[0].providers[0].aescbc.keys[0]
.secret: Invalid value: "REDACTED": ...`. KMS providers need a plugin and are refused.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import yaml

from ..api.resources import Registry
from ..storage.value import IdentityTransformer, PrefixTransformers, Transformer

__all__ = ["EncryptionConfigError", "EncryptionConfig", "load_encryption_config", "parse_encryption_config"]

API_VERSION = "apiserver.config.k8s.io/v1"
KIND = "EncryptionConfiguration"
PROVIDERS = ("kms", "aesgcm", "aescbc", "secretbox", "identity")
AES_KEY_SIZES = [16, 24, 32]
SECRETBOX_KEY_SIZES = [32]


class EncryptionConfigError(ValueError):
    pass


@dataclass
class EncryptionConfig:
    """Transformers per (group, resource); "*" stands for any resource, ("*", "*") for all."""

    rules: dict[tuple[str, str], PrefixTransformers] = field(default_factory=dict)

    def transformer_for(self, group: str, resource: str) -> PrefixTransformers | None:
        r = self.rules
        return r.get((group, resource)) or r.get((group, "*")) or r.get(("*", "*"))

    def key_resolver(self, registry: Registry) -> Callable[[str, str], PrefixTransformers | None]:
        """For TransformingStore: /registry/<first>/<second>/ keys to their resource's transformer. A
        built-in's first segment is its storage resource, a custom resource's its group."""
        groups: dict[str, str] = {}
        for r in registry.all():
            if not r.virtual and r.crd is None:
                s = registry.storage_resource(r)
                groups.setdefault(s.storage_resource, s.group if s.storage_group is None else s.storage_group)

        def resolve(first: str, second: str) -> PrefixTransformers | None:
            if "." in first:
                return self.transformer_for(first, second)
            group = groups.get(first)
            return None if group is None else self.transformer_for(group, first)

        return resolve


def _parse_group_resource(s: str) -> tuple[str, str]:
    # as schema.ParseGroupResource: "secrets" -> ("", "secrets"), "*.apps" -> ("apps", "*")
    res, _, group = s.partition(".")
    return group, res


def _gr_string(group: str, resource: str) -> str:
    return f"{resource}.{group}" if group else (f"{resource}." if resource == "*" else resource)


def _keys(keys: Any, path: str, sizes: list[int], errs: list[str]) -> list[tuple[str, bytes]]:
    if not isinstance(keys, list) or not keys:
        errs.append(f"{path}: Required value: at least one keys is required")
        return []
    out = []
    for i, k in enumerate(keys):
        p = f"{path}[{i}]"
        if not isinstance(k, dict):
            errs.append(f"{p}: Invalid value: a key must be an object with name and secret")
            continue
        name, secret = k.get("name") or "", k.get("secret") or ""
        if not name:
            errs.append(f"{p}.name: Required value: name is a mandatory field for a key")
        if not secret:
            errs.append(f"{p}.secret: Required value: secret is a mandatory field for a key")
            continue
        try:
            raw = base64.b64decode(str(secret), validate=True)
        except (binascii.Error, ValueError):
            errs.append(f'{p}.secret: Invalid value: "REDACTED": secrets must be base64 encoded')
            continue
        if len(raw) not in sizes:
            errs.append(f'{p}.secret: Invalid value: "REDACTED": secret is not of the expected length, '
                        f"got {len(raw)}, expected one of [{' '.join(map(str, sizes))}]")
            continue
        out.append((str(name), raw))
    return out


def _provider(p: Any, path: str, errs: list[str]) -> list[tuple[bytes, Transformer]]:
    """The (prefix, transformer) pairs of one provider entry: one per key, the first key writing."""
    found = [n for n in PROVIDERS if isinstance(p, dict) and p.get(n) is not None]
    if not found:
        errs.append(f"{path}: Invalid value: provider does not contain any of the expected providers: "
                    "KMS, AESGCM, AESCBC, Secretbox, Identity")
        return []
    if len(found) > 1:
        errs.append(f"{path}: Invalid value: more than one provider specified in a single element, "
                    "should split into different list elements")
        return []
    kind = found[0]
    body = p[kind]
    if kind == "identity":
        return [(b"", IdentityTransformer())]
    if kind == "kms":
        errs.append(f"{path}.kms: Unsupported value: KMS providers are not supported by pyk8s "
                    "(use aescbc, aesgcm, secretbox or identity)")
        return []
    if not isinstance(body, dict):
        errs.append(f"{path}.{kind}: Invalid value: expected an object with keys")
        return []
    if kind == "secretbox":
        from ..storage.value.secretbox import SecretboxTransformer

        keys = _keys(body.get("keys"), f"{path}.secretbox.keys", SECRETBOX_KEY_SIZES, errs)
        return [(f"k8s:enc:secretbox:v1:{n}:".encode(), SecretboxTransformer(k)) for n, k in keys]
    from ..storage.value.aes import CBCTransformer, GCMTransformer

    keys = _keys(body.get("keys"), f"{path}.{kind}.keys", AES_KEY_SIZES, errs)
    cls = CBCTransformer if kind == "aescbc" else GCMTransformer
    return [(f"k8s:enc:{kind}:v1:{n}:".encode(), cls(k)) for n, k in keys]


def parse_encryption_config(doc: Any) -> EncryptionConfig:
    """An EncryptionConfig from the decoded file; EncryptionConfigError says everything wrong with it."""
    if not isinstance(doc, dict):
        raise EncryptionConfigError("error while parsing file: not a YAML or JSON object")
    if doc.get("kind") != KIND or doc.get("apiVersion") != API_VERSION:
        raise EncryptionConfigError(
            f"error while parsing file: got unexpected object of kind {doc.get('kind')!r} "
            f"and apiVersion {doc.get('apiVersion')!r}, expected kind {KIND!r} and apiVersion {API_VERSION!r}")
    unknown = sorted(set(doc) - {"kind", "apiVersion", "resources"})
    if unknown:
        raise EncryptionConfigError(f'error while parsing file: strict decoding error: unknown field "{unknown[0]}"')
    resources = doc.get("resources")
    errs: list[str] = []
    if not isinstance(resources, list) or not resources:
        raise EncryptionConfigError("error while parsing file: resources: Required value: "
                                    "at least one resources is required")
    built: list[tuple[list[str], list[tuple[bytes, Transformer]]]] = []
    for i, rule in enumerate(resources):
        rp = f"resources[{i}]"
        if not isinstance(rule, dict):
            errs.append(f"{rp}: Invalid value: expected an object with resources and providers")
            continue
        names = rule.get("resources")
        providers = rule.get("providers")
        if not isinstance(names, list) or not names:
            errs.append(f"{rp}.resources: Required value: at least one {rp}.resources is required")
            names = []
        if not isinstance(providers, list) or not providers:
            errs.append(f"{rp}.providers: Required value: at least one {rp}.providers is required")
            providers = []
        for j, n in enumerate(names):
            if not isinstance(n, str) or not n or n != n.lower() or n == "*" or n.startswith(".") or (
                    "*" in n and not n.startswith("*.")):
                errs.append(f"{rp}.resources[{j}]: Invalid value: {n!r}: resource name must be lowercase "
                            "'resource' or 'resource.group', or a wildcard '*.group', '*.' or '*.*'")
        pairs: list[tuple[bytes, Transformer]] = []
        for j, p in enumerate(providers):
            pairs += _provider(p, f"{rp}.providers[{j}]", errs)
        built.append(([str(n) for n in names], pairs))
    if errs:
        raise EncryptionConfigError("error while parsing file: " + ", ".join(errs))
    cfg = EncryptionConfig()
    lists: dict[tuple[str, str], list[tuple[bytes, Transformer]]] = {}
    for names, pairs in built:
        for n in names:
            gr = _parse_group_resource(n)
            for mask in ((gr[0], "*"), ("*", "*")):
                if mask in lists:
                    raise EncryptionConfigError(
                        f"error while building transformers: resource {_gr_string(*gr)!r} is masked by "
                        f"earlier rule {_gr_string(*mask)!r}".replace("'", '"'))
            lists.setdefault(gr, []).extend(pairs)
    cfg.rules = {gr: PrefixTransformers(pairs) for gr, pairs in lists.items()}
    return cfg


def load_encryption_config(path: str) -> EncryptionConfig:
    """The file's config; EncryptionConfigError's message names the file, as kube-apiserver's does."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        raise EncryptionConfigError(f'error reading encryption provider configuration file "{path}": {e}') from None
    try:
        try:
            doc = yaml.safe_load(raw)
        except yaml.YAMLError as e:
            raise EncryptionConfigError(f"error while parsing file: {e}") from None
        return parse_encryption_config(doc)
    except EncryptionConfigError as e:
        raise EncryptionConfigError(f'error while parsing encryption provider configuration file "{path}": {e}'
                                    ) from None

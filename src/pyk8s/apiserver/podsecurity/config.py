"""PodSecurity's configuration from `--admission-control-config-file` (upstream's AdmissionConfiguration
with a `PodSecurity` plugin entry, inline or by `path`, holding a PodSecurityConfiguration of
pod-security.admission.config.k8s.io/v1, v1beta1 or v1alpha1): the default levels and versions for
namespaces without labels, and the exempt usernames, runtimeClasses and namespaces."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..admission_config import plugin_config
from .policy import LevelVersion, Policy, parse_level, parse_version

__all__ = ["PodSecurityConfig", "load", "from_admission_config"]

_PS_VERSIONS = ("pod-security.admission.config.k8s.io/v1", "pod-security.admission.config.k8s.io/v1beta1",
                "pod-security.admission.config.k8s.io/v1alpha1")


@dataclass(frozen=True)
class PodSecurityConfig:
    defaults: Policy = Policy()
    exempt_usernames: frozenset[str] = frozenset()
    exempt_runtime_classes: frozenset[str] = frozenset()
    exempt_namespaces: frozenset[str] = frozenset()


def _parse(doc: Any, where: str) -> PodSecurityConfig:
    if not isinstance(doc, dict):
        raise ValueError(f"{where}: PodSecurityConfiguration must be an object")
    if doc.get("kind") != "PodSecurityConfiguration" or doc.get("apiVersion") not in _PS_VERSIONS:
        raise ValueError(f"{where}: expected kind PodSecurityConfiguration of {', '.join(_PS_VERSIONS)}, got "
                         f"{doc.get('apiVersion')!s}/{doc.get('kind')!s}")
    d = doc.get("defaults") or {}
    errs: list[str] = []
    modes: dict[str, LevelVersion] = {}
    for mode in ("enforce", "audit", "warn"):
        level, minor = "privileged", None
        try:
            level = parse_level(str(d.get(mode, "privileged")))
        except ValueError as e:
            errs.append(f"defaults.{mode}: Invalid value: {d.get(mode)!r}: {e}")
        try:
            minor = parse_version(str(d.get(f"{mode}-version", "latest")))
        except ValueError as e:
            errs.append(f"defaults.{mode}-version: Invalid value: {d.get(f'{mode}-version')!r}: {e}")
        modes[mode] = LevelVersion(level, minor)
    ex = doc.get("exemptions") or {}
    lists: dict[str, frozenset[str]] = {}
    for key in ("usernames", "runtimeClasses", "namespaces"):
        vals = ex.get(key) or []
        if not isinstance(vals, list) or any(not isinstance(v, str) or not v for v in vals):
            errs.append(f"exemptions.{key}: must be a list of non-empty strings")
            vals = []
        lists[key] = frozenset(vals)
    if errs:
        raise ValueError(f"{where}: " + "; ".join(errs))
    return PodSecurityConfig(Policy(**modes), lists["usernames"], lists["runtimeClasses"], lists["namespaces"])


def from_admission_config(path: str) -> PodSecurityConfig | None:
    """The PodSecurity entry of an AdmissionConfiguration file, or None where it has none."""
    found = plugin_config(path, "PodSecurity")
    return None if found is None else _parse(*found)


def load(path: str | None) -> PodSecurityConfig:
    """The configuration `--admission-control-config-file` gives (upstream's defaults where none)."""
    if not path:
        return PodSecurityConfig()
    return from_admission_config(path) or PodSecurityConfig()

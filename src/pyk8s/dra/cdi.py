"""Container Device Interface (CDI) specs: what a fully qualified device name adds to a container.

A DRA driver's NodePrepareResources answers with CDI device IDs (`vendor.com/class=name`); the
driver has written the matching spec (JSON or YAML, `cdiVersion`, `kind: vendor.com/class`,
`devices[].name`, `containerEdits` at spec and device level) into a spec directory, by default
`/etc/cdi` and `/var/run/cdi` (later directories win, as the CDI cache orders them). We apply
the edits a runc container can take: `env`, `deviceNodes` and `mounts`.
"""

from __future__ import annotations

import glob
import json
import os
from dataclasses import dataclass, field
from typing import Any

import yaml

__all__ = ["CDIError", "ContainerEdits", "resolve", "DEFAULT_SPEC_DIRS"]

DEFAULT_SPEC_DIRS = ("/etc/cdi", "/var/run/cdi")


class CDIError(Exception):
    pass


@dataclass
class ContainerEdits:
    env: dict[str, str] = field(default_factory=dict)
    devices: list[tuple[str, str, str]] = field(default_factory=list)  # (container path, host path, permissions)
    mounts: list[tuple[str, str, bool]] = field(default_factory=list)  # (container path, host path, read only)

    def add(self, edits: Any) -> None:
        if not isinstance(edits, dict):
            return
        for e in edits.get("env") or ():
            k, sep, v = str(e).partition("=")
            if sep:
                self.env[k] = v
        for d in edits.get("deviceNodes") or ():
            path = d.get("path", "")
            self.devices.append((path, d.get("hostPath") or path, d.get("permissions") or "rwm"))
        for m in edits.get("mounts") or ():
            self.mounts.append((m.get("containerPath", ""), m.get("hostPath", ""), "ro" in (m.get("options") or ())))


def _load(path: str) -> dict[str, Any] | None:
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        spec = json.loads(text) if path.endswith(".json") else yaml.safe_load(text)
    except (OSError, ValueError, yaml.YAMLError):
        return None  # as the CDI cache: a broken spec file is skipped, the others still count
    return spec if isinstance(spec, dict) else None


def _specs(dirs: tuple[str, ...]) -> dict[str, list[dict[str, Any]]]:
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for d in dirs:
        for path in sorted(glob.glob(os.path.join(d, "*.json")) + glob.glob(os.path.join(d, "*.yaml"))):
            spec = _load(path)
            if spec and isinstance(spec.get("kind"), str):
                by_kind.setdefault(spec["kind"], []).insert(0, spec)  # later directories first
    return by_kind


def resolve(device_ids: list[str], dirs: tuple[str, ...] = DEFAULT_SPEC_DIRS) -> ContainerEdits:
    """The edits of every ID; CDIError names an ID no spec declares."""
    specs = _specs(dirs)
    out = ContainerEdits()
    for qualified in device_ids:
        kind, sep, name = qualified.partition("=")
        if not sep or "/" not in kind:
            raise CDIError(f"invalid CDI device name {qualified!r}: want vendor.com/class=name")
        for spec in specs.get(kind, ()):
            dev = next((d for d in spec.get("devices") or () if d.get("name") == name), None)
            if dev is not None:
                out.add(spec.get("containerEdits"))
                out.add(dev.get("containerEdits"))
                break
        else:
            raise CDIError(f"unresolvable CDI devices {qualified}")
    return out

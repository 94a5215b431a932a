"""A plug-in's entry of `--admission-control-config-file` (upstream's AdmissionConfiguration of
apiserver.config.k8s.io/v1 or apiserver.k8s.io/v1alpha1): its `configuration` inline, or the file its
`path` names (relative to the AdmissionConfiguration file, as upstream reads it)."""

from __future__ import annotations

import os
from typing import Any

import yaml

__all__ = ["plugin_config", "read_yaml"]

ADMISSION_VERSIONS = ("apiserver.config.k8s.io/v1", "apiserver.k8s.io/v1alpha1")


def read_yaml(path: str) -> Any:
    try:
        with open(path, encoding="utf-8") as f:
            return yaml.safe_load(f)
    except yaml.YAMLError as e:
        raise ValueError(f"{path}: {e}") from None


def plugin_config(path: str | None, name: str) -> tuple[Any, str] | None:
    """(the plug-in's configuration document, where it came from), or None where the file has none."""
    if not path:
        return None
    doc = read_yaml(path)
    if not isinstance(doc, dict) or doc.get("kind") != "AdmissionConfiguration" \
            or doc.get("apiVersion") not in ADMISSION_VERSIONS:
        raise ValueError(f"{path}: expected kind AdmissionConfiguration of {', '.join(ADMISSION_VERSIONS)}")
    for plugin in doc.get("plugins") or []:
        if not isinstance(plugin, dict) or plugin.get("name") != name:
            continue
        if plugin.get("configuration") is not None:
            return plugin["configuration"], path
        if plugin.get("path"):
            sub = os.path.join(os.path.dirname(os.path.abspath(path)), plugin["path"])
            return read_yaml(sub), sub
    return None

"""Media types of the OCI image spec and docker's v2 schema 2, and platform matching."""

from __future__ import annotations

import platform as _platform
from typing import Any

OCI_INDEX = "application/vnd.oci.image.index.v1+json"
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_CONFIG = "application/vnd.oci.image.config.v1+json"
OCI_LAYER = "application/vnd.oci.image.layer.v1.tar"
OCI_LAYER_GZIP = "application/vnd.oci.image.layer.v1.tar+gzip"
OCI_LAYER_ZSTD = "application/vnd.oci.image.layer.v1.tar+zstd"
DOCKER_LIST = "application/vnd.docker.distribution.manifest.list.v2+json"
DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
DOCKER_CONFIG = "application/vnd.docker.container.image.v1+json"
DOCKER_LAYER_GZIP = "application/vnd.docker.image.rootfs.diff.tar.gzip"
DOCKER_LAYER_FOREIGN = "application/vnd.docker.image.rootfs.foreign.diff.tar.gzip"

INDEX_TYPES = (OCI_INDEX, DOCKER_LIST)
MANIFEST_TYPES = (OCI_MANIFEST, DOCKER_MANIFEST)
# Accept header for manifest GETs, most specific first.
ACCEPT = ", ".join((OCI_INDEX, DOCKER_LIST, OCI_MANIFEST, DOCKER_MANIFEST))

_ARCH = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64", "armv7l": "arm",
         "armv6l": "arm", "ppc64le": "ppc64le", "s390x": "s390x", "riscv64": "riscv64", "i686": "386"}


def machine_platform() -> dict[str, str]:
    """This machine's OCI platform: os linux and the GOARCH name of the CPU."""
    m = _platform.machine().lower()
    p = {"os": "linux", "architecture": _ARCH.get(m, m)}
    if m.startswith("armv7"):
        p["variant"] = "v7"
    elif m.startswith("armv6"):
        p["variant"] = "v6"
    elif p["architecture"] == "arm64":
        p["variant"] = "v8"
    return p


def media_type_of(doc: dict[str, Any], fallback: str = "") -> str:
    """A manifest's own mediaType, or guessed from its shape (OCI makes the field optional)."""
    mt = doc.get("mediaType")
    if isinstance(mt, str) and mt:
        return mt
    if "manifests" in doc:
        return OCI_INDEX
    if "layers" in doc or "config" in doc:
        return OCI_MANIFEST
    return fallback


def choose_platform(manifests: list[dict[str, Any]], want: dict[str, str] | None = None) -> dict[str, Any]:
    """Pick the descriptor for `want` (default: this machine) from an index's manifests."""
    want = want or machine_platform()
    best: dict[str, Any] | None = None
    best_score = -1
    for d in manifests:
        p = d.get("platform") or {}
        if not p:
            # attestation manifests (buildkit) carry "unknown/unknown"; plain descriptors get a low score
            score = 0
        else:
            if p.get("os") != want["os"] or p.get("architecture") != want["architecture"]:
                continue
            v = p.get("variant", "")
            wv = want.get("variant", "")
            score = 3 if v == wv else 2 if not v else 1
        if score > best_score:
            best, best_score = d, score
    if best is None or (best_score == 0 and len(manifests) > 1):
        raise LookupError(f"no manifest for platform {want.get('os')}/{want.get('architecture')}")
    return best

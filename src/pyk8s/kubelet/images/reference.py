"""Image references, normalized as docker and containerd do (`busybox` -> `docker.io/library/busybox:latest`)."""

from __future__ import annotations

import re
from dataclasses import dataclass

DEFAULT_DOMAIN = "docker.io"
_LEGACY_DOMAIN = "index.docker.io"
_PATH_COMPONENT = re.compile(r"^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$")
_TAG = re.compile(r"^[\w][\w.-]{0,127}$")
_DIGEST = re.compile(r"^[a-z0-9]+(?:[.+_-][a-z0-9]+)*:[a-zA-Z0-9=_-]{32,}$")


class ReferenceError(ValueError):
    pass


@dataclass(frozen=True)
class Reference:
    domain: str
    path: str
    tag: str | None = None
    digest: str | None = None

    @property
    def repository(self) -> str:
        """`docker.io/library/busybox`: the name without tag or digest."""
        return f"{self.domain}/{self.path}"

    @property
    def object(self) -> str:
        """What the registry's manifests endpoint takes: the digest if any, else the tag."""
        return self.digest or self.tag or "latest"

    def __str__(self) -> str:
        s = self.repository
        if self.tag:
            s += ":" + self.tag
        if self.digest:
            s += "@" + self.digest
        return s

    def with_tag(self, tag: str) -> Reference:
        return Reference(self.domain, self.path, tag, None)

    def with_digest(self, digest: str) -> Reference:
        return Reference(self.domain, self.path, None, digest)


def _split_domain(name: str) -> tuple[str, str]:
    first, sep, rest = name.partition("/")
    if sep and ("." in first or ":" in first or first == "localhost" or first != first.lower()):
        domain, path = first, rest
    else:
        domain, path = DEFAULT_DOMAIN, name
    if domain == _LEGACY_DOMAIN:
        domain = DEFAULT_DOMAIN
    if domain == DEFAULT_DOMAIN and "/" not in path:
        path = "library/" + path  # official images live under library/
    return domain, path


def parse_reference(ref: str, default_tag: str = "latest") -> Reference:
    """Parse and normalize a reference; a reference without tag or digest gets `default_tag`."""
    s = ref.strip()
    if not s:
        raise ReferenceError("empty image reference")
    digest = None
    if "@" in s:
        s, digest = s.split("@", 1)
        if not _DIGEST.match(digest):
            raise ReferenceError(f"invalid digest in reference {ref!r}")
    tag = None
    slash = s.rfind("/")
    colon = s.rfind(":")
    if colon > slash:  # a colon after the last slash is a tag, before it a port
        s, tag = s[:colon], s[colon + 1 :]
        if not _TAG.match(tag):
            raise ReferenceError(f"invalid tag in reference {ref!r}")
    domain, path = _split_domain(s)
    for comp in path.split("/"):
        if not _PATH_COMPONENT.match(comp):
            raise ReferenceError(f"invalid reference format: repository name must be lowercase: {ref!r}")
    if tag is None and digest is None:
        tag = default_tag
    return Reference(domain, path, tag, digest)


def is_digest(s: str) -> bool:
    return bool(_DIGEST.match(s))

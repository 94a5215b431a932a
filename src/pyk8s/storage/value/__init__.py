"""Value transformers: how an object's bytes are turned into what the store keeps, and back.

Upstream's `k8s.io/apiserver/pkg/storage/value`: every encrypting provider writes
`k8s:enc:<provider>:v1:<key name>:` followed by its ciphertext; a reader picks the first
configured transformer whose prefix the stored bytes start with, so data written under an
older key (or in plaintext, while `identity` is listed) stays readable during a rotation.
The authenticated data of every value is its storage key, as upstream's etcd3 store passes.
"""

from __future__ import annotations

from typing import Protocol

from ..interface import StoreError

__all__ = ["ENCRYPTED_PREFIX", "IdentityTransformer", "PrefixTransformers", "TransformError", "Transformer"]

ENCRYPTED_PREFIX = b"k8s:enc:"


class TransformError(StoreError):
    """A stored value could not be read back (wrong or missing key, corrupt data)."""


class Transformer(Protocol):
    def from_storage(self, data: bytes, key: bytes) -> tuple[bytes, bool]:
        """The plaintext of a stored value, and whether it is stale (not what a write would store now)."""
        ...

    def to_storage(self, data: bytes, key: bytes) -> bytes: ...


class IdentityTransformer:
    """Stores plaintext; reading encrypted data is an error, so that a later provider is tried."""

    def from_storage(self, data: bytes, key: bytes) -> tuple[bytes, bool]:
        if data.startswith(ENCRYPTED_PREFIX):
            raise TransformError("identity transformer tried to read encrypted data")
        return data, False

    def to_storage(self, data: bytes, key: bytes) -> bytes:
        return data


class PrefixTransformers:
    """Writes with the first transformer (under its prefix); reads with the first whose prefix matches.

    An identity transformer has the empty prefix and matches anything, but refuses encrypted
    data, and then the next candidates are tried (upstream: identity first in the list is how a
    cluster migrates away from encryption). Several candidates may share a prefix (the same
    provider listed twice with different keys): a failure in one does not stop the next.
    """

    def __init__(self, transformers: list[tuple[bytes, Transformer]], no_match: str = "no matching prefix found"
                 ) -> None:
        if not transformers:
            raise ValueError("at least one transformer is required")
        self.transformers = transformers
        self._no_match = no_match

    def from_storage(self, data: bytes, key: bytes) -> tuple[bytes, bool]:
        errors: list[str] = []
        for i, (prefix, t) in enumerate(self.transformers):
            if not data.startswith(prefix):
                continue
            try:
                out, stale = t.from_storage(data[len(prefix):], key)
            except TransformError as e:
                if prefix:
                    errors.append(str(e))
                continue
            return out, stale or i != 0
        if errors:
            raise TransformError(errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]")
        raise TransformError(self._no_match)

    def to_storage(self, data: bytes, key: bytes) -> bytes:
        prefix, t = self.transformers[0]
        return prefix + t.to_storage(data, key)

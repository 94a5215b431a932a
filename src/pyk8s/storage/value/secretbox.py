"""The secretbox provider as upstream's `storage/value/encrypt/secretbox` writes it: a random
24-byte nonce, then NaCl's secretbox (XSalsa20-Poly1305: the 16-byte Poly1305 tag, then the
ciphertext). `cryptography` has no XSalsa20; PyNaCl (libsodium) does."""

from __future__ import annotations

import os

from nacl.exceptions import CryptoError
from nacl.secret import SecretBox

from . import TransformError

__all__ = ["SecretboxTransformer"]

NONCE = SecretBox.NONCE_SIZE  # 24


class SecretboxTransformer:
    def __init__(self, key: bytes) -> None:
        self._box = SecretBox(key)

    def to_storage(self, data: bytes, key: bytes) -> bytes:
        return bytes(self._box.encrypt(data, os.urandom(NONCE)))

    def from_storage(self, data: bytes, key: bytes) -> tuple[bytes, bool]:
        if len(data) < NONCE + SecretBox.MACBYTES:
            raise TransformError("the stored data was shorter than the required size")
        try:
            return self._box.decrypt(data[NONCE:], data[:NONCE]), False
        except CryptoError:
            raise TransformError("output array was not large enough for encryption") from None

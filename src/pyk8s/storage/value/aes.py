"""AES providers, byte for byte as upstream's `storage/value/encrypt/aes` writes them.

- aescbc: a random 16-byte IV, then AES-CBC of the value with PKCS#7 padding (no integrity
  check of its own: upstream documents it as weaker than aesgcm and secretbox).
- aesgcm: a random 12-byte nonce, then AES-GCM's ciphertext and 16-byte tag, with the storage
  key as authenticated data: a value copied under another key does not decrypt.
"""

from __future__ import annotations

import os

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from . import TransformError

__all__ = ["CBCTransformer", "GCMTransformer"]

BLOCK = 16
GCM_NONCE = 12


class CBCTransformer:
    def __init__(self, key: bytes) -> None:
        self._alg = algorithms.AES(key)

    def to_storage(self, data: bytes, key: bytes) -> bytes:
        pad = BLOCK - len(data) % BLOCK
        iv = os.urandom(BLOCK)
        enc = Cipher(self._alg, modes.CBC(iv)).encryptor()
        return iv + enc.update(data + bytes([pad]) * pad) + enc.finalize()

    def from_storage(self, data: bytes, key: bytes) -> tuple[bytes, bool]:
        if len(data) < 2 * BLOCK:
            raise TransformError("the stored data was shorter than the required size")
        if len(data) % BLOCK:
            raise TransformError("the stored data is not a multiple of the block size")
        dec = Cipher(self._alg, modes.CBC(data[:BLOCK])).decryptor()
        plain = dec.update(data[BLOCK:]) + dec.finalize()
        pad = plain[-1]
        # a wrong key gives random bytes: their padding is almost never valid
        if pad == 0 or pad > BLOCK or plain[-pad:] != bytes([pad]) * pad:
            raise TransformError("invalid padding on input")
        return plain[:-pad], False


class GCMTransformer:
    def __init__(self, key: bytes) -> None:
        self._aead = AESGCM(key)

    def to_storage(self, data: bytes, key: bytes) -> bytes:
        nonce = os.urandom(GCM_NONCE)
        return nonce + self._aead.encrypt(nonce, data, key)

    def from_storage(self, data: bytes, key: bytes) -> tuple[bytes, bool]:
        if len(data) < GCM_NONCE + 16:
            raise TransformError("the stored data was shorter than the required size")
        try:
            return self._aead.decrypt(data[:GCM_NONCE], data[GCM_NONCE:], key), False
        except InvalidTag:
            raise TransformError("cipher: message authentication failed") from None

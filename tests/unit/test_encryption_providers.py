"""The encryption-at-rest providers read and write upstream's stored format exactly
(`k8s:enc:<provider>:v1:<key name>:` + ciphertext), and the config file is validated as
kube-apiserver validates its EncryptionConfiguration. Values in upstream's layout are built
here by hand from the documented layout with the primitives themselves, then read back."""

from __future__ import annotations

import base64
import os

import pytest
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from nacl.secret import SecretBox

from pyk8s.apiserver.encryptionconfig import EncryptionConfigError, parse_encryption_config
from pyk8s.storage.value import TransformError

KEY = b"/registry/secrets/default/s1"
K32 = bytes(range(32))
PLAIN = b'{"kind":"Secret","data":{"k":"bWFya2Vy"}}'


def _config(*providers: dict, resources: list[str] | None = None) -> dict:
    return {"apiVersion": "apiserver.config.k8s.io/v1", "kind": "EncryptionConfiguration",
            "resources": [{"resources": resources or ["secrets"], "providers": list(providers)}]}


def _keyed(kind: str, name: str = "key1", key: bytes = K32) -> dict:
    return {kind: {"keys": [{"name": name, "secret": base64.b64encode(key).decode()}]}}


def _secrets(doc: dict):
    t = parse_encryption_config(doc).transformer_for("", "secrets")
    assert t is not None
    return t


def test_aescbc_reads_upstream_layout_iv_then_cbc_with_pkcs7() -> None:
    iv = os.urandom(16)
    pad = 16 - len(PLAIN) % 16
    enc = Cipher(algorithms.AES(K32), modes.CBC(iv)).encryptor()
    stored = b"k8s:enc:aescbc:v1:key1:" + iv + enc.update(PLAIN + bytes([pad]) * pad) + enc.finalize()
    t = _secrets(_config(_keyed("aescbc")))
    assert t.from_storage(stored, KEY) == (PLAIN, False)
    mine = t.to_storage(PLAIN, KEY)
    assert mine.startswith(b"k8s:enc:aescbc:v1:key1:") and PLAIN not in mine
    body = mine[len(b"k8s:enc:aescbc:v1:key1:"):]
    dec = Cipher(algorithms.AES(K32), modes.CBC(body[:16])).decryptor()
    out = dec.update(body[16:]) + dec.finalize()
    assert out[:-out[-1]] == PLAIN and len(body) == 16 + len(PLAIN) + pad


def test_aesgcm_reads_upstream_layout_nonce_then_sealed_with_the_key_as_authenticated_data() -> None:
    nonce = os.urandom(12)
    stored = b"k8s:enc:aesgcm:v1:k:" + nonce + AESGCM(K32).encrypt(nonce, PLAIN, KEY)
    t = _secrets(_config(_keyed("aesgcm", "k")))
    assert t.from_storage(stored, KEY) == (PLAIN, False)
    # the same bytes under another key do not open: a value cannot be moved to another object
    with pytest.raises(TransformError, match="message authentication failed"):
        t.from_storage(stored, b"/registry/secrets/default/other")
    mine = t.to_storage(PLAIN, KEY)[len(b"k8s:enc:aesgcm:v1:k:"):]
    assert AESGCM(K32).decrypt(mine[:12], mine[12:], KEY) == PLAIN


def test_secretbox_reads_upstream_layout_nonce_then_nacl_secretbox() -> None:
    nonce = os.urandom(24)
    sealed = SecretBox(K32).encrypt(PLAIN, nonce)  # nonce + Poly1305 tag + XSalsa20 ciphertext
    stored = b"k8s:enc:secretbox:v1:sb:" + bytes(sealed)
    t = _secrets(_config(_keyed("secretbox", "sb")))
    assert t.from_storage(stored, KEY) == (PLAIN, False)
    mine = t.to_storage(PLAIN, KEY)[len(b"k8s:enc:secretbox:v1:sb:"):]
    assert len(mine) == 24 + 16 + len(PLAIN) and SecretBox(K32).decrypt(mine[24:], mine[:24]) == PLAIN


@pytest.mark.parametrize("kind", ["aescbc", "aesgcm", "secretbox"])
def test_wrong_key_or_tampered_data_is_refused(kind: str) -> None:
    stored = _secrets(_config(_keyed(kind))).to_storage(PLAIN, KEY)
    other = _secrets(_config(_keyed(kind, key=bytes(32))))
    with pytest.raises(TransformError):
        other.from_storage(stored, KEY)
    if kind != "aescbc":  # CBC has no integrity check of its own (upstream documents it as weaker)
        flipped = stored[:-1] + bytes([stored[-1] ^ 1])
        with pytest.raises(TransformError):
            _secrets(_config(_keyed(kind))).from_storage(flipped, KEY)
    with pytest.raises(TransformError):
        _secrets(_config(_keyed(kind))).from_storage(stored[:30], KEY)


def test_first_provider_writes_all_read_older_keys_and_plaintext_are_stale() -> None:
    new, old = _keyed("aesgcm", "new", os.urandom(32)), _keyed("aescbc", "old", os.urandom(16))
    before = _secrets(_config(old, {"identity": {}}))
    by_old, plain = before.to_storage(PLAIN, KEY), PLAIN
    after = _secrets(_config(new, old, {"identity": {}}))
    assert after.from_storage(by_old, KEY) == (PLAIN, True)
    assert after.from_storage(plain, KEY) == (PLAIN, True)
    assert after.to_storage(PLAIN, KEY).startswith(b"k8s:enc:aesgcm:v1:new:")
    assert after.from_storage(after.to_storage(PLAIN, KEY), KEY) == (PLAIN, False)
    # without identity, plaintext is not readable; identity first writes plaintext and still reads the rest
    with pytest.raises(TransformError, match="no matching prefix found"):
        _secrets(_config(new)).from_storage(plain, KEY)
    first = _secrets(_config({"identity": {}}, old))
    assert first.to_storage(PLAIN, KEY) == PLAIN
    assert first.from_storage(by_old, KEY) == (PLAIN, True)


def test_two_keys_of_one_provider_share_its_prefix_and_both_read() -> None:
    k1, k2 = os.urandom(32), os.urandom(32)
    one = _secrets(_config({"aescbc": {"keys": [{"name": "k1", "secret": base64.b64encode(k1).decode()}]}}))
    both = _secrets(_config({"aescbc": {"keys": [{"name": "k2", "secret": base64.b64encode(k2).decode()},
                                                 {"name": "k1", "secret": base64.b64encode(k1).decode()}]}}))
    assert both.from_storage(one.to_storage(PLAIN, KEY), KEY) == (PLAIN, True)
    assert both.to_storage(PLAIN, KEY).startswith(b"k8s:enc:aescbc:v1:k2:")


def test_resource_matching_exact_then_group_wildcard_then_everything() -> None:
    doc = {"apiVersion": "apiserver.config.k8s.io/v1", "kind": "EncryptionConfiguration", "resources": [
        {"resources": ["secrets", "deployments.apps"], "providers": [_keyed("aescbc", "a")]},
        {"resources": ["*.apps"], "providers": [_keyed("aesgcm", "b")]},
        {"resources": ["*."], "providers": [_keyed("secretbox", "c")]},
        {"resources": ["*.*"], "providers": [{"identity": {}}]},
    ]}
    cfg = parse_encryption_config(doc)

    def prefix(group: str, resource: str) -> bytes:
        t = cfg.transformer_for(group, resource)
        assert t is not None
        return t.to_storage(b"x", KEY)[:24]

    assert prefix("", "secrets").startswith(b"k8s:enc:aescbc:v1:a:")
    assert prefix("apps", "deployments").startswith(b"k8s:enc:aescbc:v1:a:")
    assert prefix("apps", "statefulsets").startswith(b"k8s:enc:aesgcm:v1:b:")
    assert prefix("", "configmaps").startswith(b"k8s:enc:secretbox:v1:c:")
    assert prefix("batch", "jobs") == b"x"
    only = parse_encryption_config(_config(_keyed("aescbc")))
    assert only.transformer_for("", "configmaps") is None and only.transformer_for("apps", "secrets") is None


@pytest.mark.parametrize("doc, message", [
    (_config({"aescbc": {"keys": [{"name": "k", "secret": base64.b64encode(b"8 bytes!").decode()}]}}),
     'resources[0].providers[0].aescbc.keys[0].secret: Invalid value: "REDACTED": secret is not of the expected '
     "length, got 8, expected one of [16 24 32]"),
    (_config({"secretbox": {"keys": [{"name": "k", "secret": base64.b64encode(bytes(16)).decode()}]}}),
     "secret is not of the expected length, got 16, expected one of [32]"),
    (_config({"aesgcm": {"keys": [{"name": "k", "secret": "not base64!"}]}}), "secrets must be base64 encoded"),
    (_config({"aesgcm": {"keys": [{"secret": base64.b64encode(K32).decode()}]}}),
     "resources[0].providers[0].aesgcm.keys[0].name: Required value: name is a mandatory field for a key"),
    (_config({"aesgcm": {"keys": []}}), "resources[0].providers[0].aesgcm.keys: Required value"),
    (_config({"aesgcm": {"keys": [{"name": "k", "secret": base64.b64encode(K32).decode()}]}, "identity": {}}),
     "more than one provider specified in a single element, should split into different list elements"),
    (_config({"rot13": {}}), "provider does not contain any of the expected providers"),
    (_config({"kms": {"name": "p", "endpoint": "unix:///tmp/kms.sock", "apiVersion": "v2"}}),
     "KMS providers are not supported by pyk8s"),
    (_config(), "at least one resources[0].providers is required"),
    ({"apiVersion": "apiserver.config.k8s.io/v1", "kind": "EncryptionConfiguration", "resources": [
        {"resources": ["*."], "providers": [{"identity": {}}]},
        {"resources": ["secrets"], "providers": [{"identity": {}}]}]},
     'resource "secrets" is masked by earlier rule "*."'),
    ({"apiVersion": "apiserver.config.k8s.io/v1", "kind": "EncryptionConfiguration", "resources": [
        {"resources": ["*.*", "*.apps"], "providers": [{"identity": {}}]}]},
     'resource "*.apps" is masked by earlier rule "*.*"'),
    (_config({"identity": {}}, resources=["Secrets"]), "resource name must be lowercase"),
    ({"apiVersion": "v1", "kind": "EncryptionConfig", "resources": []}, "expected kind 'EncryptionConfiguration'"),
    ({"apiVersion": "apiserver.config.k8s.io/v1", "kind": "EncryptionConfiguration", "resources": []},
     "at least one resources is required"),
])
def test_bad_config_is_refused_with_upstreams_message(doc: dict, message: str) -> None:
    with pytest.raises(EncryptionConfigError) as e:
        parse_encryption_config(doc)
    assert message in str(e.value)

"""Authentication: token file, service-account JWTs, x509 and the request chain."""

from __future__ import annotations

import base64
import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.hazmat.primitives.serialization import Encoding
from cryptography.x509.oid import NameOID

from pyk8s.api.errors import StatusError
from pyk8s.apiserver.authn import (
    CREDENTIAL_ID_KEY,
    DEFAULT_ISSUER,
    NODE_NAME_KEY,
    POD_NAME_KEY,
    POD_UID_KEY,
    AuthenticationError,
    Authenticator,
    ServiceAccountTokenAuthenticator,
    TokenFileAuthenticator,
    UserInfo,
    X509Authenticator,
    bearer_token_from_headers,
    issue_service_account_token,
    jwks,
    key_id,
    parse_token_file,
)
from pyk8s.apiserver.certs import ensure_pki
from pyk8s.pki import issue_client_cert

NOW = 1_700_000_000


@pytest.fixture(scope="module")
def sa_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def _payload(token: str) -> dict[str, Any]:
    p = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(p + "=" * (-len(p) % 4)))


def _header(token: str) -> dict[str, Any]:
    p = token.split(".")[0]
    return json.loads(base64.urlsafe_b64decode(p + "=" * (-len(p) % 4)))


# --------------------------------------------------------------------------- token file


def test_parse_token_file_formats() -> None:
    text = (
        "t1,alice,uid-1\n"
        '"t2","bob","uid-2","dev,ops"\n'
        "\n"
        't3,carol,uid-3,"system:masters",ignored-extra\n'
        ",empty,uid-4\n"
        "t5,dave,uid-5,\n"
        "t1,alice2,uid-1b\n"
    )
    toks = parse_token_file(text, "/x.csv")
    assert set(toks) == {"t1", "t2", "t3", "t5"}
    assert toks["t1"] == UserInfo("alice2", "uid-1b")  # duplicate: last wins
    assert toks["t2"].groups == ["dev", "ops"]
    assert toks["t3"].groups == ["system:masters"]
    assert toks["t5"].groups == []


def test_parse_token_file_too_few_columns() -> None:
    with pytest.raises(
        ValueError,
        match=r"token file '/f' must have at least 3 columns \(token, user name, user uid\), found 2",
    ):
        parse_token_file("tok,user\n", "/f")


def test_token_file_through_chain(tmp_path: Path) -> None:
    f = tmp_path / "tokens.csv"
    f.write_text('secret,admin,admin-uid,"system:masters,team"\n')
    chain = Authenticator(token_authenticators=[TokenFileAuthenticator.from_file(f)])
    u = chain.authenticate({"authorization": "Bearer secret"})
    assert u == UserInfo("admin", "admin-uid", ["system:masters", "team", "system:authenticated"])
    with pytest.raises(StatusError) as ei:
        chain.authenticate({"Authorization": "Bearer wrong"})
    assert ei.value.code == 401 and ei.value.status()["message"] == "Unauthorized"
    assert ei.value.reason == "Unauthorized"
    with pytest.raises(AuthenticationError, match="invalid bearer token"):
        chain.authenticate_token("wrong")
    # no credentials: None, or anonymous when enabled; Basic auth is not a bearer token
    assert chain.authenticate({}) is None
    assert chain.authenticate({"Authorization": "Basic Zm9vOmJhcg=="}) is None
    anon = Authenticator(token_authenticators=chain.token_authenticators, anonymous=True).authenticate({})
    assert anon == UserInfo("system:anonymous", groups=["system:unauthenticated"])


def test_bearer_token_parsing() -> None:
    assert bearer_token_from_headers({"Authorization": "Bearer abc"}) == "abc"
    assert bearer_token_from_headers({"Authorization": "bearer abc extra"}) == "abc"
    assert bearer_token_from_headers({"Authorization": "Bearer "}) is None
    assert bearer_token_from_headers({"Authorization": "Bearer  abc"}) is None  # empty token (double space)
    ws = base64.urlsafe_b64encode(b"wstoken").rstrip(b"=").decode()
    h = {
        "Connection": "Upgrade",
        "Upgrade": "websocket",
        "Sec-WebSocket-Protocol": f"v4.channel.k8s.io, base64url.bearer.authorization.k8s.io.{ws}",
    }
    assert bearer_token_from_headers(h) == "wstoken"
    assert bearer_token_from_headers({**h, "Upgrade": ""}) is None


# --------------------------------------------------------------------------- service account tokens


def test_sa_token_issue_and_verify(sa_key: rsa.RSAPrivateKey) -> None:
    token, exp = issue_service_account_token(sa_key, "default", "builder", "sa-uid", ["api"], 3600, now=NOW)
    assert exp == NOW + 3600
    assert _header(token) == {"alg": "RS256", "kid": key_id(sa_key.public_key())}
    claims = _payload(token)
    assert claims["iss"] == DEFAULT_ISSUER and claims["aud"] == ["api"]
    assert claims["sub"] == "system:serviceaccount:default:builder"
    assert claims["iat"] == claims["nbf"] == NOW and claims["exp"] == exp
    assert claims["kubernetes.io"] == {
        "namespace": "default",
        "serviceaccount": {"name": "builder", "uid": "sa-uid"},
    }
    assert claims["jti"]

    auth = ServiceAccountTokenAuthenticator(sa_key.public_key(), audiences=["api"], clock=lambda: NOW + 10)
    u = auth.authenticate_token(token)
    assert u is not None
    assert u.name == "system:serviceaccount:default:builder" and u.uid == "sa-uid"
    assert u.groups == ["system:serviceaccounts", "system:serviceaccounts:default"]
    assert u.extra == {CREDENTIAL_ID_KEY: [f"JTI={claims['jti']}"]}

    chain = Authenticator(token_authenticators=[auth])
    cu = chain.authenticate({"Authorization": f"Bearer {token}"})
    assert cu is not None and cu.groups[-1] == "system:authenticated"


def test_sa_token_bound_to_pod_and_node(sa_key: rsa.RSAPrivateKey) -> None:
    pod = {"metadata": {"name": "web-0", "uid": "pod-uid", "namespace": "ns"}}
    token, _ = issue_service_account_token(
        sa_key,
        "ns",
        "sa",
        "sa-uid",
        [DEFAULT_ISSUER],
        600,
        pod,
        bound_node={"name": "n1", "uid": "node-uid"},
        now=NOW,
    )
    k8s = _payload(token)["kubernetes.io"]
    assert k8s["pod"] == {"name": "web-0", "uid": "pod-uid"} and k8s["node"] == {
        "name": "n1",
        "uid": "node-uid",
    }

    class Getter:
        pod_uid = "pod-uid"

        def get_service_account(self, ns: str, name: str) -> dict[str, Any] | None:
            return {"metadata": {"name": name, "namespace": ns, "uid": "sa-uid"}}

        def get_pod(self, ns: str, name: str) -> dict[str, Any] | None:
            return {"metadata": {"name": name, "uid": self.pod_uid}}

        def get_secret(self, ns: str, name: str) -> dict[str, Any] | None:
            return None

        def get_node(self, name: str) -> dict[str, Any] | None:
            return None

    g = Getter()
    auth = ServiceAccountTokenAuthenticator(sa_key.public_key(), getter=g, clock=lambda: NOW)
    u = auth.authenticate_token(token)
    assert u is not None
    assert u.extra[POD_NAME_KEY] == ["web-0"] and u.extra[POD_UID_KEY] == ["pod-uid"]
    assert u.extra[NODE_NAME_KEY] == ["n1"]
    g.pod_uid = "recreated"
    with pytest.raises(AuthenticationError, match=r"pod UID \(recreated\) does not match"):
        auth.authenticate_token(token)


def test_sa_token_expired_and_not_yet_valid(sa_key: rsa.RSAPrivateKey) -> None:
    token, exp = issue_service_account_token(sa_key, "d", "s", "u", [DEFAULT_ISSUER], 600, now=NOW)
    # within go-jose's one-minute leeway: still accepted
    assert ServiceAccountTokenAuthenticator(sa_key.public_key(), clock=lambda: exp + 59).authenticate_token(
        token
    )
    late = ServiceAccountTokenAuthenticator(sa_key.public_key(), clock=lambda: exp + 61)
    with pytest.raises(AuthenticationError, match="service account token has expired"):
        late.authenticate_token(token)
    early = ServiceAccountTokenAuthenticator(sa_key.public_key(), clock=lambda: NOW - 120)
    with pytest.raises(AuthenticationError, match="not valid yet"):
        early.authenticate_token(token)
    chain = Authenticator(token_authenticators=[late], anonymous=True)
    with pytest.raises(StatusError) as ei:  # an expired token is never anonymous
        chain.authenticate({"Authorization": f"Bearer {token}"})
    assert ei.value.code == 401


def test_sa_token_wrong_audience(sa_key: rsa.RSAPrivateKey) -> None:
    token, _ = issue_service_account_token(sa_key, "d", "s", "u", ["vault"], 600, now=NOW)
    auth = ServiceAccountTokenAuthenticator(sa_key.public_key(), clock=lambda: NOW)
    with pytest.raises(AuthenticationError) as ei:
        auth.authenticate_token(token)
    assert str(ei.value) == (
        f'token audiences ["vault"] is invalid for the target audiences ["{DEFAULT_ISSUER}"]'
    )
    # but TokenReview may ask for that audience explicitly
    assert auth.authenticate_token(token, audiences=["vault"]) is not None


def test_sa_token_tampered_or_foreign(sa_key: rsa.RSAPrivateKey) -> None:
    token, _ = issue_service_account_token(sa_key, "d", "s", "u", [DEFAULT_ISSUER], 600, now=NOW)
    auth = ServiceAccountTokenAuthenticator(sa_key.public_key(), clock=lambda: NOW)
    h, p, s = token.split(".")
    claims = _payload(token)
    claims["kubernetes.io"]["serviceaccount"]["name"] = "admin"
    forged = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode()
    with pytest.raises(AuthenticationError):
        auth.authenticate_token(f"{h}.{forged}.{s}")
    with pytest.raises(AuthenticationError):
        auth.authenticate_token(f"{h}.{p}.{s[:-4]}AAAA")
    # alg=none is rejected
    none_h = base64.urlsafe_b64encode(b'{"alg":"none"}').rstrip(b"=").decode()
    with pytest.raises(AuthenticationError):
        auth.authenticate_token(f"{none_h}.{p}.")
    # signed by another key
    other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    t2, _ = issue_service_account_token(other, "d", "s", "u", [DEFAULT_ISSUER], 600, now=NOW)
    with pytest.raises(AuthenticationError):
        auth.authenticate_token(t2)
    # another issuer is not ours at all
    t3, _ = issue_service_account_token(
        sa_key, "d", "s", "u", [DEFAULT_ISSUER], 600, issuer="https://other", now=NOW
    )
    assert auth.authenticate_token(t3) is None
    assert auth.authenticate_token("not-a-jwt") is None


def test_es256_signing_key_and_jwks() -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    token, _ = issue_service_account_token(key, "d", "s", "u", [DEFAULT_ISSUER], 600, now=NOW)
    assert _header(token)["alg"] == "ES256"
    u = ServiceAccountTokenAuthenticator(key.public_key(), clock=lambda: NOW).authenticate_token(token)
    assert u is not None and u.name == "system:serviceaccount:d:s"
    rsa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    ks = jwks([rsa_key.public_key(), key.public_key()])["keys"]
    assert [k["kty"] for k in ks] == ["RSA", "EC"] and ks[0]["e"] == "AQAB" and ks[1]["crv"] == "P-256"


# --------------------------------------------------------------------------- x509 and the chain


def _foreign_cert(cn: str) -> bytes:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(1)
        .not_valid_before(now - dt.timedelta(hours=1))
        .not_valid_after(now + dt.timedelta(hours=1))
        .sign(key, hashes.SHA256())
    )
    return cert.public_bytes(Encoding.DER)


def test_x509_and_chain(tmp_path: Path, sa_key: rsa.RSAPrivateKey) -> None:
    pki = ensure_pki(tmp_path)
    cert_pem, _ = issue_client_cert(pki, "jane", ["dev", "qa"])
    der = x509.load_pem_x509_certificate(cert_pem).public_bytes(Encoding.DER)
    xa = X509Authenticator(pki.ca_cert)
    u = xa.authenticate(der)
    assert u is not None and u.name == "jane" and u.groups == ["dev", "qa"]
    assert (
        u.extra[CREDENTIAL_ID_KEY][0].startswith("X509SHA256=")
        and len(u.extra[CREDENTIAL_ID_KEY][0]) == 11 + 64
    )
    with pytest.raises(AuthenticationError, match="unknown authority"):
        xa.authenticate(_foreign_cert("mallory"))
    no_cn_pem, _ = issue_client_cert(pki, "", ["g"])
    assert xa.authenticate(x509.load_pem_x509_certificate(no_cn_pem).public_bytes(Encoding.DER)) is None

    chain = Authenticator.for_pki(pki)
    got = chain.authenticate({}, der)
    assert got is not None and got.groups == ["dev", "qa", "system:authenticated"]
    with pytest.raises(StatusError):
        chain.authenticate({}, _foreign_cert("mallory"))
    # a bad cert does not block a good token (union semantics)
    token, _ = issue_service_account_token(pki.sa_private_key, "d", "s", "u", [DEFAULT_ISSUER], 600)
    got = chain.authenticate({"Authorization": f"Bearer {token}"}, _foreign_cert("mallory"))
    assert got is not None and got.name == "system:serviceaccount:d:s"
    assert UserInfo("a", "1", ["g"], {"k": ["v"]}).to_wire() == {
        "username": "a",
        "uid": "1",
        "groups": ["g"],
        "extra": {"k": ["v"]},
    }

"""Pure parts of the impersonation filter: which header names ask for it, ServiceAccount user
names (upstream's serviceaccount.SplitUsername) and extra keys (url.PathUnescape)."""

import pytest
from multidict import CIMultiDict, CIMultiDictProxy

from pyk8s.api.errors import StatusError
from pyk8s.apiserver.impersonation import (
    _parts,
    _unescape_extra_key,
    requested,
    split_service_account_username,
)


def headers(*pairs: tuple[str, str]) -> CIMultiDictProxy[str]:
    return CIMultiDictProxy(CIMultiDict(pairs))


@pytest.mark.parametrize("pairs,asked", [
    ((("Accept", "application/json"), ("User-Agent", "kubectl")), False),
    ((("Impersonate-User", "x"),), True),
    ((("impersonate-group", "g"),), True),  # header names are case-insensitive
    ((("IMPERSONATE-EXTRA-scopes", "v"),), True),
    ((("Impersonation", "x"), ("If-None-Match", "e")), False),
])
def test_requested(pairs, asked):
    assert requested(headers(*pairs)) is asked


@pytest.mark.parametrize("username,split", [
    ("system:serviceaccount:default:esc", ("default", "esc")),
    ("system:serviceaccount:kube-system:a.b", ("kube-system", "a.b")),
    ("system:serviceaccount:default", None),  # no name
    ("system:serviceaccount:default:esc:x", None),  # three parts
    ("system:serviceaccount::esc", None),  # empty namespace
    ("system:serviceaccount:Bad_NS:esc", None),  # not a namespace name
    ("system:serviceaccount:default:Bad_Name", None),  # not a ServiceAccount name
    ("system:serviceaccounts:default:esc", None),
    ("esc", None),
])
def test_split_service_account_username(username, split):
    assert split_service_account_username(username) == split


@pytest.mark.parametrize("encoded,key", [
    ("scopes", "scopes"),
    ("example.com%2fteam", "example.com/team"),
    ("a%20b", "a b"),
    ("bad%zzkey", "bad%zzkey"),  # malformed: kept as sent, as upstream does
    ("trailing%2", "trailing%2"),
])
def test_unescape_extra_key(encoded, key):
    assert _unescape_extra_key(encoded) == key


def test_parts_order_and_bad_request():
    parts = _parts(headers(("Impersonate-Uid", "u"), ("Impersonate-Extra-K", "v"), ("Impersonate-Group", "g"),
                           ("Impersonate-User", "system:serviceaccount:ns:sa")))
    assert [(p.kind, p.name, p.namespace) for p in parts] == [
        ("ServiceAccount", "sa", "ns"), ("Group", "g", ""), ("UserExtra", "v", ""), ("UID", "u", "")]
    with pytest.raises(StatusError) as e:
        _parts(headers(("Impersonate-Group", "a"), ("Impersonate-Group", "b")))
    assert (e.value.code, e.value.message) == (400, "requested [{Group  a    } {Group  b    }] without impersonating "
                                                    "a user")

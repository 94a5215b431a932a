"""go_json_plain (the key and value path elements of list items, written without json.dumps)
gives what go_json gives, for every kind of string and int."""

from __future__ import annotations

import random

import pytest

from pyk8s.api.patch import _typed
from pyk8s.api.patch._common import go_json, go_json_plain

_SPECIAL = ['"', "\\", "<", ">", "&", "\u2028", "\u2029", "\x00", "\x1f", "\x7f", "\n", "\t", "\b", "\f", "é", "😀",
            "\ud800", "\udfff", "\ue000", "/", "'", " ", "kube-api-access-", "a", "Z", "0"]


@pytest.mark.parametrize("seed", range(200))
def test_strings_and_ints(seed: int) -> None:
    r = random.Random(seed)
    s = "".join(r.choice(_SPECIAL) for _ in range(r.randint(0, 6)))
    assert go_json_plain(s) == go_json(s)
    n = r.choice([0, 1, -1, 2**31, -(2**63), 2**64, 10**30, r.randint(-10**6, 10**6)])
    assert go_json_plain(n) == go_json(n)


@pytest.mark.parametrize("seed", range(100))
def test_plain_key_path_elements(seed: int) -> None:
    r = random.Random(seed)
    pairs = tuple((r.choice(["name", "port", "protocol", "a<b", "ü"]), r.choice([*_SPECIAL, 1, 80, -5]))
                  for _ in range(r.randint(1, 3)))
    assert _typed._plain_key_pe.__wrapped__(pairs) == ("k", go_json(dict(pairs), sort_keys=True))
    s = "".join(r.choice(_SPECIAL) for _ in range(3))
    assert _typed._str_value_pe.__wrapped__(s) == ("v", go_json(s, sort_keys=True))

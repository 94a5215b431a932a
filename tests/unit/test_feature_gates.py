"""`pyk8s server --feature-gates` parsing (apiserver/feature_gates.py) and its passing to API workers."""

from __future__ import annotations

import argparse
import types

import pytest

from pyk8s.apiserver import feature_gates
from pyk8s.apiserver.feature_gates import parse_feature_gates
from pyk8s.apiserver.server import ServerConfig
from pyk8s.apiserver.workers import worker_argv


def test_known_gates_parse_as_go_bools() -> None:
    assert parse_feature_gates("ListFromCacheSnapshot=false") == {"ListFromCacheSnapshot": False}
    assert parse_feature_gates(" ListFromCacheSnapshot=T ,") == {"ListFromCacheSnapshot": True}


@pytest.mark.parametrize("value,message", [
    ("NoSuchGate=true", "unrecognized feature gate: NoSuchGate"),
    ("ListFromCacheSnapshot", "missing bool value for ListFromCacheSnapshot"),
    ("ListFromCacheSnapshot=yes",
     'invalid value of ListFromCacheSnapshot: yes, err: strconv.ParseBool: parsing "yes": invalid syntax'),
])
def test_bad_gates_are_refused(value: str, message: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match=message):
        parse_feature_gates(value)


def test_workers_get_the_gates_set_away_from_their_defaults() -> None:
    def argv(gates: dict[str, bool]) -> list[str]:
        server = types.SimpleNamespace(config=ServerConfig(feature_gates=gates), port=6443,
                                       advertise_address="127.0.0.1")
        return worker_argv(server, types.SimpleNamespace(v=0), "/tmp/store.sock")

    assert "--feature-gates=ListFromCacheSnapshot=false" in argv({"ListFromCacheSnapshot": False})
    assert not any(a.startswith("--feature-gates") for a in argv(dict(feature_gates.DEFAULTS)))

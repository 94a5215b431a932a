"""The bounded memos behind the validation fast paths: same answers, bounded memory, fresh lists."""

from __future__ import annotations

from pyk8s.api.validation._memo import memo_str
from pyk8s.api.validation.names import is_dns1123_subdomain, is_qualified_name
from pyk8s.api.validation.quantity import parse_quantity


def test_memo_str_computes_once_and_stays_bounded() -> None:
    calls: list[str] = []

    @memo_str(maxsize=2, key_max=4)
    def upper(s: str) -> str:
        calls.append(s)
        return s.upper()

    assert upper("ab") == "AB" and upper("ab") == "AB"
    assert calls == ["ab"]
    upper("cd")
    upper("ef")  # the table was full: emptied, then refilled
    upper("ab")
    assert calls == ["ab", "cd", "ef", "ab"]
    upper("longer")
    upper("longer")  # over key_max: never kept
    assert calls[-2:] == ["longer", "longer"]


def test_name_checks_hand_out_fresh_lists() -> None:
    first = is_dns1123_subdomain("Bad_Name")
    first.append("mutated by a caller")
    assert is_dns1123_subdomain("Bad_Name") == first[:-1]
    assert is_qualified_name("example.com/ok") == []
    assert is_qualified_name(None) == is_qualified_name("")


def test_quantity_cmp_matches_fraction_order() -> None:
    texts = ["-1", "0", "1m", "999m", "1", "1Ki", "1k", "0.5", "2Gi"]
    for a in texts:
        for b in texts:
            qa, qb = parse_quantity(a), parse_quantity(b)
            assert qa.cmp(qb) == (qa.value > qb.value) - (qa.value < qb.value)
        assert parse_quantity(a).cmp(0) == (parse_quantity(a).value > 0) - (parse_quantity(a).value < 0)


def test_round_up_keeps_values_already_at_precision() -> None:
    q = parse_quantity("100m")
    assert q.round_up(-3) is q
    assert parse_quantity("0.0001").round_up(-3).canonical() == "1m"
    assert parse_quantity("-0.0001").round_up(-3).canonical() == "-1m"


def test_content_key_refuses_values_that_could_alias() -> None:
    import datetime

    from pyk8s.api.validation._memo import content_key

    assert content_key({"a": 1}) == b'{"a":1}'
    assert content_key({"a": 1}) != content_key({"a": 1.0}) != content_key({"a": True})
    assert content_key({"a": float("nan")}) is None  # written as null, like None
    assert content_key({"a": None}) is None
    assert content_key({"a": datetime.date(2024, 1, 1)}) is None  # not the same as its ISO text

    class Text(str):
        pass

    assert content_key({"a": Text("x")}) is None
    assert content_key({"a": "x" * 5000}) is None


def test_projected_volume_errors_are_the_same_when_remembered() -> None:
    from pyk8s.api.validation.volumes import validate_volumes

    good = {"name": "kube-api-access-abcde", "projected": {"defaultMode": 420, "sources": [
        {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
        {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}}]}}
    bad = {"name": "v", "projected": {"sources": [{"serviceAccountToken": {"expirationSeconds": 10, "path": "../t"}}]}}
    for _ in range(2):
        assert validate_volumes([good], "", "spec.volumes")[1] == []
        errs = validate_volumes([good, bad], "", "spec.volumes")[1]
        assert [str(e) for e in errs] == [
            "spec.volumes[1].projected.sources[0].serviceAccountToken.expirationSeconds: Invalid value: 10: "
            "may not specify a duration less than 10 minutes",
            "spec.volumes[1].projected.path: Invalid value: \"../t\": must not contain '..'",
        ]

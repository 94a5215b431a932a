"""Label selector parsing, matching and LabelSelector conversion (apimachinery labels.Parse).

Transcript pins (shared/reference/upstream-observed.md):
- L171 / L176: the label key and value validation texts, which selector errors embed verbatim.
- L420-425 (`kubectl get pod -l app=testdemo`): an equality selector selecting the pod labels
  {app: testdemo, pod-template-hash: 665685df7}.
"""

from __future__ import annotations

import pytest

from pyk8s.api import labels as L
from pyk8s.api.errors import StatusError

KEY_ERR = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
VALUE_ERR = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must "
    "start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for "
    "validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)


def test_validation_texts_match_transcript() -> None:
    # L171: metadata.labels: Invalid value: "bad key": <KEY_ERR>
    assert L.is_qualified_name("bad key") == [KEY_ERR]
    # L176: invalid label value: "key=-bad-": <VALUE_ERR>
    assert L.is_valid_label_value("-bad-") == [VALUE_ERR]
    assert L.is_qualified_name("example.com/ok-Name_1") == []
    assert L.is_qualified_name("a" * 64) == ["name part must be no more than 63 characters"]
    assert L.is_qualified_name("/x") == ["prefix part must be non-empty"]
    assert L.is_valid_label_value("") == []


@pytest.mark.parametrize(
    "text, canonical",
    [
        ("a=b", "a=b"),
        ("a==b", "a==b"),
        ("a!=b", "a!=b"),
        ("  a = b ,  c  ", "a=b,c"),
        ("!a", "!a"),
        ("a", "a"),
        ("x in (foo,,baz),y,z notin ()", "x in (,baz,foo),y,z notin ()"),
        ("a in (in, notin)", "a in (in,notin)"),  # keywords are values inside parentheses
        ("b=1,a=2", "a=2,b=1"),  # requirements sort by key
        ("a=", "a="),
        ("x>1", "x>1"),
        ("x<10", "x<10"),
        ("", ""),
        ("app.kubernetes.io/name=web", "app.kubernetes.io/name=web"),
    ],
)
def test_parse_and_string(text: str, canonical: str) -> None:
    assert str(L.parse(text)) == canonical


@pytest.mark.parametrize(
    "text, message",
    [
        ("bad key", "unable to parse requirement: found 'key', expected: in, notin, =, ==, !=, gt, lt"),
        ("app:monolith", f'unable to parse requirement: <nil>: Invalid value: "app:monolith": {KEY_ERR}'),
        ("a=-bad-", f'unable to parse requirement: values[0][a]: Invalid value: "-bad-": {VALUE_ERR}'),
        (
            "x>a",
            "unable to parse requirement: values[0]: Invalid value: \"a\": for 'Gt', 'Lt' operators, the value must be an integer",
        ),
        ("a in (b", "unable to parse requirement: found '', expected: ',' or ')'"),
        ("a in b", "unable to parse requirement: found 'b' expected: '('"),
        ("a=(b", "unable to parse requirement: found '(', expected: identifier"),
        ("a,", "found '', expected: identifier after ','"),
        ("=a", "found '=', expected: !, identifier, or 'end of string'"),
        ("a=b=c", "found '=', expected: ',' or 'end of string'"),
    ],
)
def test_parse_errors(text: str, message: str) -> None:
    with pytest.raises(L.SelectorParseError) as ei:
        L.parse(text)
    assert ei.value.message == message
    # usable both as a ValueError and as a 400 Status
    assert isinstance(ei.value, ValueError) and isinstance(ei.value, StatusError)
    assert ei.value.code == 400 and ei.value.reason == "BadRequest"


POD_LABELS = {"app": "testdemo", "pod-template-hash": "665685df7"}  # L425-427


@pytest.mark.parametrize(
    "selector, labels, expected",
    [
        ("app=testdemo", POD_LABELS, True),
        ("app=web", POD_LABELS, False),
        ("app!=web", POD_LABELS, True),
        ("app!=web", {}, True),  # != matches a missing key
        ("app in (web,testdemo)", POD_LABELS, True),
        ("app notin (web,testdemo)", POD_LABELS, False),
        ("app notin (web)", {}, True),
        ("pod-template-hash", POD_LABELS, True),
        ("!pod-template-hash", POD_LABELS, False),
        ("!missing", POD_LABELS, True),
        ("app=testdemo,pod-template-hash=665685df7", POD_LABELS, True),
        ("app=testdemo,pod-template-hash=x", POD_LABELS, False),
        ("a=", {"a": ""}, True),
        ("a=", {}, False),
        ("x>5", {"x": "7"}, True),
        ("x>5", {"x": "5"}, False),
        ("x<5", {"x": "abc"}, False),
        ("x<5", {}, False),
        ("", POD_LABELS, True),
    ],
)
def test_matches(selector: str, labels: dict, expected: bool) -> None:
    sel = L.parse(selector)
    assert sel.matches(labels) is expected
    assert sel(labels) is expected


def test_matches_none_labels() -> None:
    assert L.parse("!a").matches(None)
    assert not L.parse("a").matches(None)


@pytest.mark.parametrize(
    "ls, text, matches_pod",
    [
        (None, "", False),  # nil selector: Nothing
        ({}, "", True),  # empty selector: Everything
        ({"matchLabels": {"app": "testdemo"}}, "app=testdemo", True),
        (
            {
                "matchLabels": {"app": "testdemo"},
                "matchExpressions": [
                    {"key": "tier", "operator": "NotIn", "values": ["db", "cache"]},
                    {"key": "pod-template-hash", "operator": "Exists"},
                    {"key": "gone", "operator": "DoesNotExist"},
                ],
            },
            "app=testdemo,!gone,pod-template-hash,tier notin (cache,db)",
            True,
        ),
        (
            {"matchExpressions": [{"key": "app", "operator": "In", "values": ["a", "b"]}]},
            "app in (a,b)",
            False,
        ),
    ],
)
def test_label_selector_conversion(ls: dict | None, text: str, matches_pod: bool) -> None:
    sel = L.selector_from_label_selector(ls)
    assert str(sel) == text
    assert L.selector_to_string(ls) == text
    assert sel.matches(POD_LABELS) is matches_pod


def test_label_selector_errors() -> None:
    with pytest.raises(L.SelectorParseError) as ei:
        L.selector_from_label_selector(
            {"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]}
        )
    assert ei.value.message == '"Gt" is not a valid label selector operator'
    with pytest.raises(L.SelectorParseError) as ei:
        L.selector_from_label_selector({"matchExpressions": [{"key": "a", "operator": "In", "values": []}]})
    assert (
        ei.value.message
        == "values: Invalid value: []string{}: for 'in', 'notin' operators, values set can't be empty"
    )
    assert L.format_label_selector({"matchExpressions": [{"key": "a", "operator": "Bogus"}]}) == "<error>"


def test_format_helpers() -> None:
    # L256: the DaemonSet's empty node selector prints <none>
    assert L.format_labels(None) == "<none>"
    assert L.format_labels({"b": "2", "a": "1"}) == "a=1,b=2"
    assert L.format_label_selector(None) == "<none>"
    assert L.format_label_selector({"matchLabels": {"name": "my-test"}}) == "name=my-test"


def test_empty_and_exact_match() -> None:
    assert L.parse("").empty()
    assert not L.NOTHING.empty() and not L.NOTHING.matches({})
    assert L.selector_from_set({}).empty()
    assert L.selector_from_set({"a": "1"}).matches({"a": "1", "b": "2"})
    sel = L.parse("spec=1,app in (x),b in (c,d)")
    assert sel.requires_exact_match("app") == "x"
    assert sel.requires_exact_match("spec") == "1"
    assert sel.requires_exact_match("b") is None
    assert L.parse("b=1,a=2") == L.parse("a=2, b=1")

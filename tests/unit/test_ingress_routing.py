"""The Ingress controller's pure routing logic (pyk8s.ingress.routing, .endpoints), pinned to the
examples of the Kubernetes Ingress documentation ("Examples" table of path matching, hostname
wildcards)."""

from __future__ import annotations

from typing import Any

import pytest

from pyk8s.ingress.endpoints import RoundRobin, ready_endpoints, service_port
from pyk8s.ingress.routing import BadPath, build_table, normalize_path


def _ing(name: str, paths: list[tuple[str, str]], host: str = "", created: str = "2026-01-01T00:00:00Z",
         default: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"rules": [{"host": host, "http": {"paths": [
        {"path": p, "pathType": t, "backend": {"service": {"name": f"{t}:{p}", "port": {"number": 80}}}}
        for p, t in paths]}}]}
    if default:
        spec["defaultBackend"] = {"service": {"name": default, "port": {"name": "http"}}}
    return {"metadata": {"name": name, "namespace": "ns", "creationTimestamp": created}, "spec": spec}


def _svc(table: Any, path: str, host: str = "") -> str | None:
    b = table.match(host, path)
    return None if b is None else b.service


# the documentation's table: (rules, request path, the rule that matches or None)
DOC_EXAMPLES = [
    ([("/", "Prefix")], "/anything/at/all", "Prefix:/"),
    ([("/foo", "Exact")], "/foo", "Exact:/foo"),
    ([("/foo", "Exact")], "/bar", None),
    ([("/foo", "Exact")], "/foo/", None),
    ([("/foo/", "Exact")], "/foo", None),
    ([("/foo", "Prefix")], "/foo", "Prefix:/foo"),
    ([("/foo", "Prefix")], "/foo/", "Prefix:/foo"),
    ([("/foo/", "Prefix")], "/foo", "Prefix:/foo/"),
    ([("/foo/", "Prefix")], "/foo/", "Prefix:/foo/"),
    ([("/aaa/bb", "Prefix")], "/aaa/bbb", None),
    ([("/aaa/bbb", "Prefix")], "/aaa/bbb", "Prefix:/aaa/bbb"),
    ([("/aaa/bbb/", "Prefix")], "/aaa/bbb", "Prefix:/aaa/bbb/"),
    ([("/aaa/bbb", "Prefix")], "/aaa/bbb/", "Prefix:/aaa/bbb"),
    ([("/aaa/bbb", "Prefix")], "/aaa/bbb/ccc", "Prefix:/aaa/bbb"),
    ([("/aaa/bbb", "Prefix")], "/aaa/bbbxyz", None),
    ([("/", "Prefix"), ("/aaa", "Prefix")], "/aaa/ccc", "Prefix:/aaa"),
    ([("/", "Prefix"), ("/aaa", "Prefix"), ("/aaa/bbb", "Prefix")], "/aaa/bbb", "Prefix:/aaa/bbb"),
    ([("/", "Prefix"), ("/aaa", "Prefix"), ("/aaa/bbb", "Prefix")], "/ccc", "Prefix:/"),
    ([("/aaa", "Prefix")], "/ccc", None),
    ([("/foo", "Prefix"), ("/foo", "Exact")], "/foo", "Exact:/foo"),
    ([("/foo", "Exact"), ("/foo", "Prefix")], "/foo", "Exact:/foo"),
    ([("/foo", "ImplementationSpecific")], "/foo/bar", "ImplementationSpecific:/foo"),  # ours: a prefix
    ([("/foo", "ImplementationSpecific")], "/foobar", None),
]


@pytest.mark.parametrize(("rules", "path", "want"), DOC_EXAMPLES)
def test_path_matching_follows_the_documented_examples(rules: list[tuple[str, str]], path: str,
                                                       want: str | None) -> None:
    assert _svc(build_table([_ing("i", rules)]), path) == want


def test_hosts_exact_beats_wildcard_and_a_wildcard_covers_one_label() -> None:
    t = build_table([_ing("w", [("/", "Prefix")], host="*.foo.com"),
                     _ing("e", [("/x", "Prefix")], host="bar.foo.com"),
                     _ing("any", [("/", "Exact")])])
    assert _svc(t, "/x", "bar.foo.com") == "Prefix:/x"
    assert _svc(t, "/y", "bar.foo.com") is None  # the exact host's rules only
    assert _svc(t, "/y", "baz.foo.com") == "Prefix:/"
    assert _svc(t, "/y", "baz.bar.foo.com") is None
    assert _svc(t, "/y", "foo.com") is None
    assert _svc(t, "/", "other.org") == "Exact:/"  # a rule without host: every other host


def test_the_oldest_ingress_keeps_a_contested_path_and_gives_the_default_backend() -> None:
    newer = _ing("newer", [("/a", "Prefix")], created="2026-02-01T00:00:00Z", default="new-default")
    older = _ing("older", [("/a", "Prefix")], created="2026-01-01T00:00:00Z", default="old-default")
    t = build_table([newer, older])
    b = t.match("", "/a")
    assert b is not None and b.ingress == "older"
    d = t.match("", "/zzz")
    assert d is not None and (d.service, d.port) == ("old-default", "http")


def test_resource_backends_are_kept_as_such() -> None:
    ing = {"metadata": {"name": "r", "namespace": "ns"}, "spec": {"defaultBackend": {
        "resource": {"apiGroup": "k8s.example.com", "kind": "StorageBucket", "name": "static"}}}}
    b = build_table([ing]).match("h", "/")
    assert b is not None and b.resource == "StorageBucket/static" and not b.service


@pytest.mark.parametrize(("raw", "want"), [
    ("/", "/"), ("/a/b", "/a/b"), ("/a/b/", "/a/b/"), ("/a/../b", "/b"), ("/a/./b", "/a/b"),
    ("//a//b", "/a/b"), ("/..", "/"), ("/../../etc/passwd", "/etc/passwd"), ("/a/%2e%2e/b", "/b"),
    ("/%61dmin", "/admin"), ("/a/b/..", "/a/"), ("/caf%C3%A9", "/café"),
])
def test_normalize_path(raw: str, want: str) -> None:
    assert normalize_path(raw) == want


@pytest.mark.parametrize("raw", ["/a%2fb", "/a%2F..%2Fb", "/a%5c..", "/a\\b", "/a%00", "/a%zz", "/a%2", "a/b",
                                 "http://x/", "/%ff"])
def test_normalize_path_refuses_what_could_route_one_way_and_resolve_another(raw: str) -> None:
    with pytest.raises(BadPath):
        normalize_path(raw)


def test_ready_endpoints_and_ports_by_name_and_number() -> None:
    svc = {"spec": {"ports": [{"name": "http", "port": 80}, {"name": "admin", "port": 81}]}}
    assert service_port(svc, 80) == {"name": "http", "port": 80}
    assert service_port(svc, "admin") == {"name": "admin", "port": 81}
    assert service_port(svc, 82) is None and service_port(svc, "nope") is None
    slices = [
        {"addressType": "IPv4", "ports": [{"name": "http", "port": 8080}, {"name": "admin", "port": 9090}],
         "endpoints": [{"addresses": ["10.0.0.1"], "conditions": {"ready": True}},
                       {"addresses": ["10.0.0.2"], "conditions": {"ready": False}},
                       {"addresses": ["10.0.0.3"]}]},  # ready unset counts as ready
        {"addressType": "IPv6", "ports": [{"name": "http", "port": 8080}],
         "endpoints": [{"addresses": ["fd00::1"], "conditions": {}}]},
    ]
    assert ready_endpoints(slices, "http") == [("10.0.0.1", 8080), ("10.0.0.3", 8080), ("[fd00::1]", 8080)]
    assert ready_endpoints(slices, "admin") == [("10.0.0.1", 9090), ("10.0.0.3", 9090)]
    assert ready_endpoints(slices, "") == []


def test_round_robin_rotates_per_backend() -> None:
    rr, eps = RoundRobin(), [("a", 1), ("b", 1), ("c", 1)]
    assert [rr.order("x", eps)[0] for _ in range(4)] == [("a", 1), ("b", 1), ("c", 1), ("a", 1)]
    assert rr.order("x", eps) == [("b", 1), ("c", 1), ("a", 1)]  # the others follow, for retries
    assert rr.order("y", eps)[0] == ("a", 1)
    assert rr.order("x", eps[:1]) == [("a", 1)]  # fewer endpoints than the counter


def test_control_characters_are_refused_even_unencoded() -> None:
    with pytest.raises(BadPath):
        normalize_path("/a\x00b")
    with pytest.raises(BadPath):
        normalize_path("/a\\b")


def test_default_ingress_class_is_the_newest_then_the_lower_name() -> None:
    """Upstream's DefaultIngressClass since 1.25 (kubernetes#110974): newest first, name ascending."""
    from pyk8s.apiserver.default_ingress_class import choose_default

    def ic(name: str, ts: str, default: str | None = "true") -> dict[str, Any]:
        ann = {} if default is None else {"ingressclass.kubernetes.io/is-default-class": default}
        return {"metadata": {"name": name, "creationTimestamp": ts, "annotations": ann}}

    assert choose_default([]) is None
    assert choose_default([ic("a", "2026-01-01T00:00:00Z", None), ic("b", "2026-01-01T00:00:00Z", "false")]) is None
    assert choose_default([ic("old", "2026-01-01T00:00:00Z"), ic("new", "2026-01-02T00:00:00Z")]) == "new"
    assert choose_default([ic("zz", "2026-01-02T00:00:00Z"), ic("aa", "2026-01-02T00:00:00Z"),
                           ic("a0", "2026-01-01T00:00:00Z")]) == "aa"
    assert choose_default([ic("x", "2026-01-01T00:00:00Z", "True")]) is None  # exactly "true", as upstream


def test_the_api_servers_bootstrap_names_what_the_controller_goes_by() -> None:
    """The two sides of one identity, written out on each side of the layering line."""
    from pyk8s.apiserver import ingress_bootstrap
    from pyk8s.ingress import policy

    role, binding = ingress_bootstrap.rbac_objects()
    assert binding["subjects"] == [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": policy.USER}]
    assert binding["roleRef"]["name"] == role["metadata"]["name"]
    ic = ingress_bootstrap.ingress_class()
    assert ic["metadata"]["name"] == policy.CLASS_NAME and ic["spec"]["controller"] == policy.CONTROLLER_NAME
    assert ic["metadata"]["annotations"] == {policy.DEFAULT_CLASS_ANNOTATION: "true"}

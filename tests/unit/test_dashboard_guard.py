"""Pure pieces of the dashboard's defences: which Host headers it answers, which watch paths the
watch socket runs, and how sessions expire."""

from __future__ import annotations

import time

import pytest

from pyk8s.dashboard.guard import allowed_hosts
from pyk8s.dashboard.session import SessionStore
from pyk8s.dashboard.watchmux import _valid


def test_allowed_hosts_are_loopback_names_with_our_port():
    hosts = allowed_hosts("127.0.0.1", 9090)
    assert hosts == {"127.0.0.1:9090", "localhost:9090", "[::1]:9090"}
    # a wildcard listen address adds no name: a rebinding name is never the address itself
    assert allowed_hosts("0.0.0.0", 9090) == hosts
    assert "10.0.0.5:9090" in allowed_hosts("10.0.0.5", 9090)
    assert "[fd00::1]:9090" in allowed_hosts("fd00::1", 9090)


@pytest.mark.parametrize("path", [
    "/api/v1/pods?watch=1",
    "/api/v1/namespaces/default/pods?watch=true&resourceVersion=12&allowWatchBookmarks=true",
    "/apis/apps/v1/deployments?labelSelector=app%3Dweb&watch=1",
])
def test_watch_socket_runs_watches_of_the_api(path: str):
    assert _valid(path) == path


@pytest.mark.parametrize("path", [
    None, 7, "", "/api/v1/pods", "/api/v1/pods?watch=0", "/version?watch=1", "/dashboard/watch?watch=1",
    "http://evil.example/api/v1/pods?watch=1", "//evil.example/api/v1/pods?watch=1",
    "/api/../version?watch=1", "/api/v1/pods/x/exec?watch=1&..", "/apis\\..\\version?watch=1", "api/v1/pods?watch=1",
])
def test_watch_socket_refuses_anything_else(path: object):
    assert _valid(path) is None


def test_sessions_expire_and_are_bounded():
    store = SessionStore(ttl=0.05, max_sessions=2)
    a = store.create("t1")
    assert store.get(a.id) is a and store.get("forged") is None and store.get(None) is None
    time.sleep(0.06)
    assert store.get(a.id) is None
    b, c, d = store.create(), store.create(), store.create()
    assert store.get(b.id) is None and store.get(c.id) is c and store.get(d.id) is d  # the oldest went
    assert len({c.id, d.id}) == 2 and len(c.id) >= 43  # 256 random bits
    store.delete(c.id)
    assert store.get(c.id) is None

"""The cluster DNS catalog as informer events shape it (pure: dicts in, lookups out)."""

from __future__ import annotations

from pyk8s.dns.catalog import Catalog


def _slice(name: str, service: str, ip: str, ready: bool | None = True) -> dict:
    conditions = {} if ready is None else {"ready": ready}
    return {"metadata": {"name": name, "namespace": "ns", "labels": {"kubernetes.io/service-name": service}},
            "ports": [{"name": "p", "port": 80, "protocol": "TCP"}],
            "endpoints": [{"addresses": [ip], "conditions": conditions}]}


def test_a_slice_moved_to_another_service_leaves_the_first() -> None:
    c = Catalog()
    old = _slice("s1", "a", "10.0.0.1")
    c.set_slice(old)
    c.replace_slice(old, _slice("s1", "b", "10.0.0.1"))
    assert c.endpoints("ns", "a") == [] and [e.ip for e in c.endpoints("ns", "b")] == ["10.0.0.1"]
    assert c.reverse("10.0.0.1", "cluster.local") == ["10-0-0-1.b.ns.svc.cluster.local"]


def test_readiness_unset_counts_as_ready_false_does_not() -> None:
    c = Catalog()
    c.set_slice(_slice("s1", "a", "10.0.0.1", ready=None))
    c.set_slice(_slice("s2", "a", "10.0.0.2", ready=False))
    assert [e.ip for e in c.endpoints("ns", "a")] == ["10.0.0.1"]
    gen = c.generation
    c.delete_slice(_slice("s1", "a", "10.0.0.1"))
    assert c.endpoints("ns", "a") == [] and c.generation > gen

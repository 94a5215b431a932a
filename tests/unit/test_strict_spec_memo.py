"""check_fields skips a spec it found clean before: the same type errors and unknown fields as a
full walk, over generated objects with good and bad specs and metadata."""

from __future__ import annotations

import copy
import random
from typing import Any

import pytest

from pyk8s.api.schema import strict

_VALUES: list[Any] = ["x", "", 1, -1, 2**40, 1.5, True, [], {}, {"a": "b"}, ["x"], "10m", "1Gi", "nope",
                      "2024-01-01T00:00:00Z", None]


def _full(group: str, version: str, kind: str, obj: Any) -> tuple[list[str], list[str]]:
    node = strict._root(group, version, kind)
    assert node is not None
    w = strict._TypeWalk()
    w.check(node, obj, node.goname, "")
    return strict._wrapped_type_errors(w, kind, version), w.unknown


def _objects() -> list[tuple[str, str, str, dict[str, Any]]]:
    pod_spec = {"containers": [{"name": "c", "image": "busybox", "ports": [{"containerPort": 80}],
                                "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}],
                "restartPolicy": "Always"}
    deploy_spec = {"replicas": 2, "selector": {"matchLabels": {"a": "b"}},
                   "template": {"metadata": {"labels": {"a": "b"}}, "spec": copy.deepcopy(pod_spec)}}
    return [("", "v1", "Pod", {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": pod_spec}),
            ("apps", "v1", "Deployment", {"apiVersion": "apps/v1", "kind": "Deployment",
                                          "metadata": {"name": "d"}, "spec": deploy_spec}),
            ("", "v1", "Service", {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
                                   "spec": {"ports": [{"port": 80}], "selector": {"a": "b"}}})]


def _mutate(v: Any, rng: random.Random) -> None:
    """Set one random member somewhere below v (a dict or list) to a random value or key."""
    cur = v
    while True:
        keys = list(cur) if isinstance(cur, dict) else list(range(len(cur)))
        if not keys:
            return
        k = rng.choice(keys)
        nxt = cur[k]
        if isinstance(nxt, (dict, list)) and nxt and rng.random() < 0.7:
            cur = nxt
            continue
        if isinstance(cur, dict) and rng.random() < 0.3:
            cur["unknownField"] = rng.choice(_VALUES)
        else:
            cur[k] = copy.deepcopy(rng.choice(_VALUES))
        return


@pytest.mark.parametrize("seed", range(3))
def test_skipped_specs_give_the_full_walks_answer(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(seed)
    hits = [0]

    class Counting(strict.KnownValid):
        def __contains__(self, key: bytes) -> bool:
            found = super().__contains__(key)
            hits[0] += found
            return found

    monkeypatch.setattr(strict, "_CLEAN_SPECS", Counting(100_000))
    for _ in range(400):
        group, version, kind, base = rng.choice(_objects())
        obj = copy.deepcopy(base)
        part = rng.choice(["spec", "metadata", "both", "none"])
        if part in ("spec", "both"):
            _mutate(obj["spec"], rng)
        if part in ("metadata", "both"):
            _mutate(obj, rng) if rng.random() < 0.3 else _mutate(obj["metadata"], rng)
        assert strict.check_fields(group, version, kind, obj) == _full(group, version, kind, obj), obj
    assert hits[0] > 100  # the skip was taken, with good and bad metadata

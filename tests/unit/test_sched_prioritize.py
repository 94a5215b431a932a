"""Profile.prioritize checks every plugin's normalised scores in one pass and sums them with one
weighted product: the totals and per-plugin scores are the plugins' own, and a score out of range
is still reported against the first plugin (in profile order) that returned one."""

from __future__ import annotations

import numpy as np

from pyk8s.scheduler.framework import Code, CycleState, Plugin, Profile
from pyk8s.scheduler.podinfo import pod_info

from .scheduler._fixtures import cluster, node, pod


def _scorer(name: str, values: list[int]) -> type[Plugin]:
    def score(self, state, p, table, rows):  # type: ignore[no-untyped-def]
        return np.array(values, dtype=np.int64)[rows]

    return type(name, (Plugin,), {"name": name, "score": score})


def _profile(h, plugins, weights):  # type: ignore[no-untyped-def]
    inst = {c.name: c({}, h) for c in plugins}
    return Profile("t", inst, {"score": [c.name for c in plugins]}, weights, h)


def test_weighted_totals_and_per_plugin_scores() -> None:
    h = cluster([node(f"n{i}") for i in range(4)])
    a, b, c = _scorer("A", [0, 10, 100, 55]), _scorer("B", [7, 7, 0, 100]), _scorer("C", [1, 2, 3, 4])
    prof = _profile(h, [a, b, c], {"A": 3, "B": 1, "C": 2})
    rows = np.array([0, 1, 2, 3])
    total, per = prof.prioritize(CycleState(), pod_info(pod()), h.cache.table, rows)
    assert total.tolist() == [3 * 0 + 7 + 2, 30 + 7 + 4, 300 + 0 + 6, 165 + 100 + 8]
    assert {k: v.tolist() for k, v in per.items()} == {"A": [0, 10, 100, 55], "B": [7, 7, 0, 100], "C": [1, 2, 3, 4]}


def test_first_invalid_plugin_in_order_is_named() -> None:
    h = cluster([node(f"n{i}") for i in range(3)])
    ok, low, high = _scorer("Ok", [1, 2, 3]), _scorer("Low", [5, -4, 0]), _scorer("High", [101, 0, 0])
    r = _profile(h, [ok, low, high], {}).schedule_one(pod())
    assert r.status.code == Code.ERROR and r.status.plugin == "Low"
    assert "plugin 'Low' returns an invalid score -4, it should in the range of [0, 100]" in r.status.message()
    r = _profile(h, [high, low], {}).schedule_one(pod())
    assert r.status.plugin == "High" and "invalid score 101" in r.status.message()

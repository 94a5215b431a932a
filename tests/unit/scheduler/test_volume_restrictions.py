"""VolumeRestrictions (ReadWriteOncePod): a claim of that mode serves one pod in the whole cluster, as
upstream's volumerestrictions plugin (v1.33)."""

from __future__ import annotations

from typing import Any

from pyk8s.scheduler.framework import CycleState
from pyk8s.scheduler.plugins.volume_restrictions import ERR_REASON_RWOP_CONFLICT, VolumeRestrictions
from pyk8s.scheduler.podinfo import pod_info

from ._fixtures import cluster, feasible, node, one_plugin, pod, run_filter

NODES = [node("a"), node("b")]


def vol(claim: str) -> list[dict[str, Any]]:
    return [{"name": "d", "persistentVolumeClaim": {"claimName": claim}}]


CLAIMS = {("default", "once"): {"spec": {"accessModes": ["ReadWriteOncePod"]}},
          ("default", "shared"): {"spec": {"accessModes": ["ReadWriteOnce"]}},
          ("other", "once"): {"spec": {"accessModes": ["ReadWriteOncePod"]}}}


def _prof(pods: list[dict[str, Any]]) -> Any:
    return one_plugin(VolumeRestrictions, cluster(NODES, pods, pvc=lambda ns, n: CLAIMS.get((ns, n))))


def test_second_pod_on_a_read_write_once_pod_claim_fits_no_node():
    prof = _prof([pod("holder", node_name="a", volumes=vol("once"))])
    out, _, _ = run_filter(prof, pod("second", volumes=vol("once")))
    assert out["a"].reasons == (ERR_REASON_RWOP_CONFLICT,) and out["b"].reasons == (ERR_REASON_RWOP_CONFLICT,)
    assert out["a"].code.name == "UNSCHEDULABLE"  # preemption may free it


def test_other_claims_namespaces_and_modes_do_not_conflict():
    prof = _prof([pod("holder", node_name="a", volumes=vol("once")), pod("s", node_name="a", volumes=vol("shared"))])
    assert feasible(prof, pod("shared-user", volumes=vol("shared"))) == ["a", "b"]
    assert feasible(prof, pod("elsewhere", namespace="other", volumes=vol("once"))) == ["a", "b"]
    assert feasible(_prof([]), pod("first", volumes=vol("once"))) == ["a", "b"]


def test_missing_claim_is_unresolvable():
    _, st, _ = run_filter(_prof([]), pod("p", volumes=vol("nope")))
    assert st.code.name == "UNSCHEDULABLE_AND_UNRESOLVABLE" and st.reasons == ('persistentvolumeclaim "nope" not found',)


def test_removing_the_holder_in_preemption_frees_the_claim():
    holder = pod("holder", node_name="a", volumes=vol("once"))
    prof = _prof([holder])
    plugin = prof.plugins["VolumeRestrictions"]
    table = prof.handle.cache.table
    state, p = CycleState(), pod_info(pod("second", volumes=vol("once")))
    plugin.pre_filter(state, p, table)
    import numpy as np

    rows = np.arange(table.n)
    assert plugin.filter(state, p, table, rows) is not None
    plugin.remove_pod(state, p, pod_info(holder), table, 0)
    assert plugin.filter(state, p, table, rows) is None
    plugin.add_pod(state, p, pod_info(holder), table, 0)
    assert plugin.filter(state, p, table, rows) is not None

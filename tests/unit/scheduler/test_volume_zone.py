"""VolumeZone: zone/region labels of bound PVs against node labels."""

from __future__ import annotations

from typing import Any

from pyk8s.scheduler.plugins.volume_zone import ERR_REASON_CONFLICT, VolumeZone

from ._fixtures import cluster, feasible, node, one_plugin, pod, run_filter

VOL = [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}]
ZONE, BETA_ZONE, REGION = ("topology.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/zone",
                           "topology.kubernetes.io/region")


def _prof(pv_labels: dict[str, str], nodes: list[dict[str, Any]], bound: bool = True) -> Any:
    pvc = {"metadata": {"name": "data", "namespace": "default"}, "spec": {"volumeName": "pv1" if bound else ""}}
    pv = {"metadata": {"name": "pv1", "labels": pv_labels}, "spec": {}}
    return one_plugin(VolumeZone, cluster(nodes, pvc=lambda ns, n: pvc if n == "data" else None,
                                          pv=lambda n: pv if n == "pv1" else None))


NODES = [node("a", labels={ZONE: "z1", REGION: "r1"}), node("b", labels={ZONE: "z2", REGION: "r1"}),
         node("c", labels={BETA_ZONE: "z3"}), node("plain")]


def test_zone_label_keeps_pod_in_zone_and_unlabelled_nodes_pass():
    out, _, _ = run_filter(_prof({ZONE: "z1"}, NODES), pod(volumes=VOL))
    assert [n for n, s in out.items() if s is None] == ["a", "plain"]
    assert out["b"].reasons == (ERR_REASON_CONFLICT,) and out["b"].code.name == "UNSCHEDULABLE_AND_UNRESOLVABLE"


def test_multi_zone_values_region_and_beta_equivalence():
    assert feasible(_prof({ZONE: "z2__z3"}, NODES), pod(volumes=VOL)) == ["b", "c", "plain"]
    assert feasible(_prof({BETA_ZONE: "z1"}, NODES), pod(volumes=VOL)) == ["a", "plain"]
    assert feasible(_prof({ZONE: "z1", REGION: "r2"}, NODES), pod(volumes=VOL)) == ["plain"]


def test_skips_without_zone_labels_unbound_claims_or_claims():
    for prof, p in ((_prof({"other": "x"}, NODES), pod(volumes=VOL)), (_prof({ZONE: "z9"}, NODES, bound=False),
                                                                        pod(volumes=VOL)),
                    (_prof({ZONE: "z9"}, NODES), pod())):
        _, st, _ = run_filter(prof, p)
        assert st.is_success()
        assert feasible(prof, p) == ["a", "b", "c", "plain"]

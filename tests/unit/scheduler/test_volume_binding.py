"""VolumeBinding: claims, PV node affinity, WaitForFirstConsumer feasibility and Reserve's choices."""

from __future__ import annotations

from typing import Any

import numpy as np

from pyk8s.scheduler.framework import CycleState, Status
from pyk8s.scheduler.plugins.volume_binding import (
    ERR_BIND_CONFLICT,
    ERR_NODE_CONFLICT,
    ERR_PV_NOT_EXIST,
    ERR_UNBOUND_IMMEDIATE,
    STATE_KEY,
    VolumeBinding,
    pv_matches_claim,
)
from pyk8s.scheduler.podinfo import pod_info

from ._fixtures import cluster, feasible, node, one_plugin, pod, run_filter

VOL = [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}]


def test_pod_without_claims_skips():
    prof = one_plugin(VolumeBinding, cluster([node("n1")]))
    _, st, _ = run_filter(prof, pod())
    assert st.is_success()


def test_claims_pass_when_no_lookup_is_wired():
    prof = one_plugin(VolumeBinding, cluster([node("n1")]))
    assert feasible(prof, pod(volumes=VOL)) == ["n1"]


def test_missing_or_deleting_claim_is_unresolvable():
    claims = {("default", "data"): {"metadata": {"name": "data", "deletionTimestamp": "2026-01-01T00:00:00Z"}}}
    prof = one_plugin(VolumeBinding, cluster([node("n1")], pvc=lambda ns, n: claims.get((ns, n))))
    _, st, _ = run_filter(prof, pod(volumes=VOL))
    assert st.reasons == ('persistentvolumeclaim "data" is being deleted',)
    claims.clear()
    _, st, _ = run_filter(prof, pod(volumes=VOL))
    assert st.reasons == ('persistentvolumeclaim "data" not found',)
    assert st.code.name == "UNSCHEDULABLE_AND_UNRESOLVABLE"
    claims[("default", "data")] = {"metadata": {"name": "data"}, "spec": {"volumeName": "pv1"},
                                   "status": {"phase": "Bound"}}
    prof.handle.pv = lambda name: _pv(name) if name == "pv1" else None
    assert feasible(prof, pod(volumes=VOL)) == ["n1"]


def _pv(name: str, node_name: str | None = None, size: str = "1Gi", cls: str = "local", phase: str = "Available",
        claim: tuple[str, str] | None = None, labels: dict[str, str] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"capacity": {"storage": size}, "accessModes": ["ReadWriteOnce"], "storageClassName": cls,
                            "local": {"path": f"/mnt/{name}"}}
    if node_name:
        spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": "kubernetes.io/hostname", "operator": "In", "values": [node_name]}]}]}}
    if claim:
        spec["claimRef"] = {"namespace": claim[0], "name": claim[1]}
    return {"metadata": {"name": name, "labels": labels or {}, "resourceVersion": "1"}, "spec": spec,
            "status": {"phase": phase}}


def _pvc(name: str, cls: str = "local", size: str = "1Gi", volume: str = "", bound: bool = False,
         annotations: dict[str, str] | None = None, selector: dict[str, Any] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"accessModes": ["ReadWriteOnce"], "storageClassName": cls,
                            "resources": {"requests": {"storage": size}}}
    if volume:
        spec["volumeName"] = volume
    if selector:
        spec["selector"] = selector
    md: dict[str, Any] = {"name": name, "namespace": "default", "uid": f"uid-{name}", "annotations": annotations or {}}
    if bound:
        md["annotations"]["pv.kubernetes.io/bind-completed"] = "yes"
    return {"metadata": md, "spec": spec, "status": {"phase": "Bound" if bound else "Pending"}}


WFFC = {"metadata": {"name": "local"}, "provisioner": "kubernetes.io/no-provisioner",
        "volumeBindingMode": "WaitForFirstConsumer"}
LOCAL_PATH = {"metadata": {"name": "local-path"}, "provisioner": "pyk8s.io/local-path",
              "volumeBindingMode": "WaitForFirstConsumer"}
IMMEDIATE = {"metadata": {"name": "fast"}, "provisioner": "pyk8s.io/local-path", "volumeBindingMode": "Immediate"}


def _world(nodes: list[dict[str, Any]], pvcs: list[dict[str, Any]], pvs: list[dict[str, Any]],
           classes: tuple[dict[str, Any], ...] = (WFFC, LOCAL_PATH, IMMEDIATE)) -> Any:
    claims = {(c["metadata"]["namespace"], c["metadata"]["name"]): c for c in pvcs}
    vols = {v["metadata"]["name"]: v for v in pvs}
    scs = {c["metadata"]["name"]: c for c in classes}
    h = cluster(nodes, pvc=lambda ns, n: claims.get((ns, n)), pv=vols.get, pvs=lambda: list(vols.values()),
                storage_class=scs.get)
    return one_plugin(VolumeBinding, h)


NODES = [node("n1"), node("n2"), node("n3", labels={"zone": "b"})]


def test_bound_pv_node_affinity_restricts_nodes():
    prof = _world(NODES, [_pvc("data", volume="pv1", bound=True)], [_pv("pv1", "n2", phase="Bound")])
    out, st, _ = run_filter(prof, pod(volumes=VOL))
    assert st.is_success()
    assert [n for n, s in out.items() if s is None] == ["n2"]
    assert out["n1"].reasons == (ERR_NODE_CONFLICT,)
    assert out["n1"].code.name == "UNSCHEDULABLE_AND_UNRESOLVABLE"


def test_bound_to_missing_pv():
    prof = _world(NODES, [_pvc("data", volume="gone", bound=True)], [])
    out, _, _ = run_filter(prof, pod(volumes=VOL))
    assert all(s is not None and s.reasons == (ERR_PV_NOT_EXIST,) for s in out.values())


def test_unbound_immediate_claim_rejects_pod():
    for cls in ("fast", ""):
        prof = _world(NODES, [_pvc("data", cls=cls)], [_pv("pv1", cls=cls)])
        _, st, _ = run_filter(prof, pod(volumes=VOL))
        assert st.reasons == (ERR_UNBOUND_IMMEDIATE,)
        assert st.code.name == "UNSCHEDULABLE_AND_UNRESOLVABLE"


def test_missing_storage_class():
    prof = _world(NODES, [_pvc("data", cls="nope")], [])
    _, st, _ = run_filter(prof, pod(volumes=VOL))
    assert st.reasons == ('storageclass.storage.k8s.io "nope" not found',)


def test_wait_for_first_consumer_static_pvs():
    # A PV too small, one in another class and one bound elsewhere do not count.
    pvs = [_pv("small", "n1", size="100Mi"), _pv("other", "n1", cls="x"), _pv("taken", "n1", claim=("default", "x")),
           _pv("fit", "n3")]
    prof = _world(NODES, [_pvc("data", size="500Mi")], pvs)
    out, _, _ = run_filter(prof, pod(volumes=VOL))
    assert [n for n, s in out.items() if s is None] == ["n3"]
    assert out["n1"].reasons == (ERR_BIND_CONFLICT,)
    assert out["n1"].code.name == "UNSCHEDULABLE"


def test_wait_for_first_consumer_provisioner_everywhere_or_allowed_topologies():
    prof = _world(NODES, [_pvc("data", cls="local-path")], [])
    assert feasible(prof, pod(volumes=VOL)) == ["n1", "n2", "n3"]
    zoned = dict(LOCAL_PATH, allowedTopologies=[{"matchLabelExpressions": [{"key": "zone", "values": ["b"]}]}])
    prof = _world(NODES, [_pvc("data", cls="local-path")], [], classes=(zoned,))
    assert feasible(prof, pod(volumes=VOL)) == ["n3"]


def test_selected_node_pins_provisioning():
    prof = _world(NODES, [_pvc("data", cls="local-path", annotations={"volume.kubernetes.io/selected-node": "n2"})], [])
    assert feasible(prof, pod(volumes=VOL)) == ["n2"]


def test_bound_and_waiting_claims_combine():
    vols = [{"name": "a", "persistentVolumeClaim": {"claimName": "a"}},
            {"name": "b", "persistentVolumeClaim": {"claimName": "b"}}]
    prof = _world(NODES, [_pvc("a", volume="pva", bound=True), _pvc("b")],
                  [_pv("pva", "n1", phase="Bound"), _pv("pvb", "n2")])
    out, _, _ = run_filter(prof, pod(volumes=vols))
    assert all(s is not None for s in out.values())
    assert out["n2"].reasons == (ERR_NODE_CONFLICT,)
    assert out["n1"].reasons == (ERR_BIND_CONFLICT,)


def test_selector_and_prebound_claim_ref():
    sel = {"matchLabels": {"tier": "gold"}}
    assert not pv_matches_claim(_pv("p"), _pvc("data", selector=sel))
    assert pv_matches_claim(_pv("p", labels={"tier": "gold"}), _pvc("data", selector=sel))
    assert pv_matches_claim(_pv("p", claim=("default", "data")), _pvc("data"))
    assert not pv_matches_claim(_pv("p", phase="Released"), _pvc("data"))
    assert not pv_matches_claim(_pv("p", size="1Gi"), _pvc("data", size="2Gi"))


def _reserve(prof: Any, p: dict[str, Any], node_name: str) -> tuple[Any, CycleState]:
    state = CycleState()
    table = prof.handle.cache.table
    state.table = table
    pi = pod_info(p)
    _, st, _ = prof.run_pre_filter(state, pi, table)
    assert st.is_success()
    st = prof.plugins["VolumeBinding"].reserve(state, pi, node_name)  # one_plugin wires no Reserve point
    return st or Status(), state


def test_reserve_picks_smallest_reachable_pv_and_assumes_it():
    pvs = [_pv("big", "n1", size="10Gi"), _pv("mid", "n1", size="2Gi"), _pv("elsewhere", "n2", size="1Gi")]
    prof = _world(NODES, [_pvc("data"), _pvc("data2")], pvs)
    p1 = pod("p1", volumes=VOL)
    st, state = _reserve(prof, p1, "n1")
    assert st.is_success()
    assert [v["metadata"]["name"] for _, v in state.read(STATE_KEY).static_bindings] == ["mid"]
    # A second pod may not take the PV the first one reserved.
    st2, state2 = _reserve(prof, pod("p2", volumes=[{"name": "d", "persistentVolumeClaim": {"claimName": "data2"}}]),
                           "n1")
    assert st2.is_success()
    assert [v["metadata"]["name"] for _, v in state2.read(STATE_KEY).static_bindings] == ["big"]
    # Unreserve frees it.
    pl = prof.plugins["VolumeBinding"]
    pl.unreserve(state, pod_info(p1), "n1")
    assert "mid" not in pl.assumed_pvs


def test_reserve_provisions_when_no_static_pv():
    prof = _world(NODES, [_pvc("data", cls="local-path")], [])
    st, state = _reserve(prof, pod(volumes=VOL), "n2")
    assert st.is_success()
    pv = state.read(STATE_KEY)
    assert [c["metadata"]["name"] for c in pv.provisions] == ["data"] and not pv.static_bindings


def test_reserve_refuses_when_the_only_pv_is_assumed_by_another_pod():
    prof = _world(NODES, [_pvc("data"), _pvc("data2")], [_pv("only", "n1")])
    st, _ = _reserve(prof, pod("p1", volumes=VOL), "n1")
    assert st.is_success()
    p2 = pod("p2", volumes=[{"name": "d", "persistentVolumeClaim": {"claimName": "data2"}}])
    st2, _ = _reserve(prof, p2, "n1")
    assert st2.reasons == (ERR_BIND_CONFLICT,)
    # and the filter already sees the PV as taken: no node has one for the second pod
    out, _, _ = run_filter(prof, p2)
    assert out["n1"].reasons == (ERR_BIND_CONFLICT,)


def test_filter_mask_is_per_row_vectorised():
    prof = _world([node(f"n{i}") for i in range(50)], [_pvc("data", volume="pv1", bound=True)],
                  [_pv("pv1", "n37", phase="Bound")])
    out, _, _ = run_filter(prof, pod(volumes=VOL))
    ok = np.array([s is None for s in out.values()])
    assert ok.sum() == 1 and list(out)[int(ok.argmax())] == "n37"

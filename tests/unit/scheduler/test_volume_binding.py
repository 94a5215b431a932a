"""VolumeBinding hook: pods without claims skip it; claims are checked only when a lookup is wired."""

from __future__ import annotations

from pyk8s.scheduler.plugins.volume_binding import VolumeBinding

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
    claims[("default", "data")] = {"metadata": {"name": "data"}, "status": {"phase": "Bound"}}
    assert feasible(prof, pod(volumes=VOL)) == ["n1"]

"""Which volume a claim binds (upstream's pkg/controller/volume/persistentvolume/index.go)."""

from __future__ import annotations

from typing import Any

from pyk8s.controllers.persistentvolume_index import check_volume_satisfies_claim, find_matching_volume


def pv(name: str, size: str, modes: tuple[str, ...] = ("ReadWriteOnce",), cls: str = "", phase: str = "Available",
       **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": name}, "status": {"phase": phase},
            "spec": {"capacity": {"storage": size}, "accessModes": list(modes), "storageClassName": cls, **spec}}


def claim(size: str, modes: tuple[str, ...] = ("ReadWriteOnce",), cls: str = "", **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "c", "namespace": "ns", "uid": "u1"},
            "spec": {"accessModes": list(modes), "resources": {"requests": {"storage": size}},
                     "storageClassName": cls, **spec}}


def name(v: dict[str, Any] | None) -> str | None:
    return None if v is None else v["metadata"]["name"]


def test_fewest_access_modes_first_then_smallest_capacity():
    vols = [pv("rwo-rwx-2", "2Gi", ("ReadWriteOnce", "ReadWriteMany")), pv("rwo-9", "9Gi"), pv("rwo-3", "3Gi"),
            pv("rwo-1", "1Gi")]
    assert name(find_matching_volume(claim("2Gi"), vols, False)) == "rwo-3"
    # only the group with every requested mode
    assert name(find_matching_volume(claim("1Gi", ("ReadWriteMany",)), vols, False)) == "rwo-rwx-2"


def test_phase_class_mode_and_deletion_exclude_a_volume():
    vols = [pv("pending", "1Gi", phase="Pending"), pv("classy", "1Gi", cls="gold"),
            pv("block", "1Gi", volumeMode="Block"), {**pv("dying", "1Gi"), "metadata": {
                "name": "dying", "deletionTimestamp": "2026-01-01T00:00:00Z"}}]
    assert find_matching_volume(claim("1Gi"), vols, False) is None
    assert name(find_matching_volume(claim("1Gi", cls="gold"), vols, False)) == "classy"
    assert name(find_matching_volume(claim("1Gi", volumeMode="Block"), vols, False)) == "block"


def test_prebound_volume_wins_and_delayed_binding_takes_only_prebound():
    ref = {"namespace": "ns", "name": "c"}
    vols = [pv("free", "1Gi"), pv("held", "5Gi", phase="Pending", claimRef=ref),
            pv("other", "1Gi", claimRef={"namespace": "ns", "name": "x"})]
    assert name(find_matching_volume(claim("1Gi"), vols, False)) == "held"
    assert name(find_matching_volume(claim("1Gi"), vols, True)) == "held"
    assert find_matching_volume(claim("1Gi"), vols[:1], True) is None
    # a claimRef with another claim's UID is not this claim's
    assert name(find_matching_volume(claim("1Gi"), [pv("stale", "1Gi", claimRef={**ref, "uid": "old"}), vols[0]],
                                     False)) == "free"


def test_selector_and_named_volume_reasons():
    vols = [pv("plain", "1Gi"), {**pv("labelled", "4Gi"), "metadata": {"name": "labelled", "labels": {"tier": "db"}}}]
    c = claim("1Gi", selector={"matchExpressions": [{"key": "tier", "operator": "In", "values": ["db"]}]})
    assert name(find_matching_volume(c, vols, False)) == "labelled"
    assert check_volume_satisfies_claim(pv("s", "1Gi"), claim("2Gi")) == "requested PV is too small"
    assert check_volume_satisfies_claim(pv("s", "1Gi", cls="a"), claim("1Gi")) == "storageClassName does not match"
    assert check_volume_satisfies_claim(pv("s", "1Gi", volumeMode="Block"), claim("1Gi")) == "incompatible volumeMode"
    assert check_volume_satisfies_claim(pv("s", "1Gi"), claim("1Gi", ("ReadWriteMany",))) == "incompatible accessMode"
    assert check_volume_satisfies_claim(pv("s", "1Gi"), claim("1Gi")) is None


def test_default_class_newest_then_first_by_name():
    from pyk8s.api.storage_classes import default_class

    def sc(name: str, ts: str, default: bool = True) -> dict[str, Any]:
        ann = {"storageclass.kubernetes.io/is-default-class": "true"} if default else {}
        return {"metadata": {"name": name, "creationTimestamp": ts, "annotations": ann}}

    assert default_class([sc("a", "2026-01-01T00:00:00Z", False)]) is None
    assert name(default_class([sc("old", "2026-01-01T00:00:00Z"), sc("new", "2026-01-02T00:00:00Z"),
                               sc("newest-not-default", "2026-01-03T00:00:00Z", False)])) == "new"
    assert name(default_class([sc("b", "2026-01-02T00:00:00Z"), sc("a", "2026-01-02T00:00:00Z")])) == "a"

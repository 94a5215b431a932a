"""`pyk8s controller-manager` flags as kube-controller-manager's: --controllers and the leader election durations."""

from __future__ import annotations

import argparse

import pytest

from pyk8s.cli.controller_manager_cmd import go_duration, validate
from pyk8s.controllers.manager import DISABLED_BY_DEFAULT, KNOWN, select_controllers

ON_BY_DEFAULT = [n for n in KNOWN if n not in DISABLED_BY_DEFAULT]


def test_star_runs_every_controller_and_minus_disables_one():
    assert select_controllers(["*"]) == ON_BY_DEFAULT
    assert select_controllers(["*", "-garbage-collector-controller"]) == [n for n in ON_BY_DEFAULT
                                                                          if n != "garbagecollector"]


def test_token_controllers_only_when_named():
    """As upstream's: bootstrapsigner and tokencleaner are off under '*' (kubeadm names them)."""
    assert "bootstrapsigner" not in select_controllers(["*"])
    assert {"bootstrapsigner", "tokencleaner"} <= set(select_controllers(["*", "bootstrap-signer-controller",
                                                                          "tokencleaner"]))


def test_canonical_names_and_aliases_name_the_same_controller():
    """Upstream's aliases (cmd/kube-controller-manager/names) stay accepted: replicaset == replicaset-controller."""
    assert select_controllers(["replicaset-controller", "podgc"]) == ["replicaset", "podgc"]
    assert select_controllers(["endpoint", "node-lifecycle-controller"]) == ["endpoints", "nodelifecycle"]
    assert select_controllers(["replicaset", "-replicaset-controller"]) == []


def test_unknown_controller_is_an_error():
    with pytest.raises(ValueError, match="'nope' is not in the list of known controllers"):
        select_controllers(["*", "-nope"])


def test_go_durations():
    assert go_duration("15s") == 15.0
    assert go_duration("1m30s") == 90.0
    assert go_duration("500ms") == 0.5
    with pytest.raises(argparse.ArgumentTypeError):
        go_duration("15")
    with pytest.raises(argparse.ArgumentTypeError):
        go_duration("0s")


def test_leader_election_durations_are_checked_as_upstream():
    def args(lease: float, renew: float, retry: float, elect: bool = True) -> argparse.Namespace:
        return argparse.Namespace(leader_elect=elect, leader_elect_lease_duration=lease,
                                  leader_elect_renew_deadline=renew, leader_elect_retry_period=retry)

    assert validate(args(15, 10, 2)) is None
    assert validate(args(10, 10, 2)) == "leaseDuration must be greater than renewDeadline"
    assert validate(args(15, 2.4, 2)) == "renewDeadline must be greater than retryPeriod*JitterFactor"
    assert validate(args(1, 10, 2, elect=False)) is None


def test_every_controller_has_its_upstream_name():
    """A controller added to KNOWN needs its canonical --controllers name in CANONICAL too."""
    from pyk8s.controllers.manager import CANONICAL

    assert set(KNOWN) == set(CANONICAL)
    assert all(name.endswith("-controller") for name in CANONICAL.values())


def test_signing_files_come_in_pairs_and_must_read(tmp_path):
    """--cluster-signing-cert-file/--cluster-signing-key-file: both or neither, and readable PEM (the
    controller manager refuses to start otherwise, as kube-controller-manager does)."""
    from pyk8s.controllers.csrsigning import load_signing_ca

    base = dict(leader_elect=False)
    assert validate(argparse.Namespace(**base, cluster_signing_cert_file="ca.crt", cluster_signing_key_file=None)) == (
        "cannot specify --cluster-signing-cert-file without --cluster-signing-key-file or the other way around")
    assert validate(argparse.Namespace(**base, cluster_signing_cert_file="a", cluster_signing_key_file="b")) is None
    not_pem = tmp_path / "x.pem"
    not_pem.write_text("hello")
    with pytest.raises(ValueError, match="error reading CA cert file"):
        load_signing_ca(str(not_pem), str(not_pem))
    with pytest.raises(OSError):
        load_signing_ca(str(tmp_path / "missing"), str(not_pem))


def test_storage_controllers_by_upstream_name_and_the_server_only_provisioner():
    assert select_controllers(["persistentvolume-binder-controller", "persistentvolumeclaim-protection-controller",
                               "pv-protection", "persistentvolume-expander"]) == [
        "persistentvolume-binder", "persistentvolume-expander", "pvc-protection", "pv-protection"]
    # not kube-controller-manager's: never in '*', only when named
    assert "local-path-provisioner" not in select_controllers(["*"])
    assert select_controllers(["*", "local-path-provisioner"])[-1] == "local-path-provisioner"
    assert "local-path-provisioner" not in select_controllers(["*", "local-path-provisioner", "-local-path-provisioner"])

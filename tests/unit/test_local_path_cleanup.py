"""Which paths the node's local-path clean-up removes (kubelet/local_path_cleanup.py): only
`<root>/<pv name>_*` directories, never a symlink, never through a linked parent, never the root."""

from __future__ import annotations

import os

import pytest

from pyk8s.kubelet.local_path_cleanup import RefusedPath, check_removable, remove_volume_dir, wants_cleanup


def test_volume_directory_inside_root_is_removed_with_links_inside_untouched(tmp_path):
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "pvc-1_ns_c" / "sub").mkdir(parents=True)
    outside.mkdir()
    (outside / "keep").write_text("x")
    os.symlink(outside, root / "pvc-1_ns_c" / "sub" / "link")
    remove_volume_dir(str(root / "pvc-1_ns_c"), str(root), "pvc-1")
    assert not (root / "pvc-1_ns_c").exists() and (outside / "keep").read_text() == "x"
    assert check_removable(str(root / "pvc-1_ns_c"), str(root), "pvc-1") == ""  # already gone: done


@pytest.mark.parametrize("rel", ["../outside", "pvc-1_ns_c/../../outside", "pvc-2_ns_c", "", "pvc-1_ns_c/deeper",
                                 "link/pvc-1_ns_c", "pvc-1_ns_c_link", "."])
def test_refused(tmp_path, rel):
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    (outside / "pvc-1_ns_c").mkdir(parents=True)
    os.symlink(outside, root / "link")
    os.symlink(outside, root / "pvc-1_ns_c_link")
    path = str(root / rel) if rel else "relative/pvc-1_x"
    with pytest.raises(RefusedPath):
        remove_volume_dir(path, str(root), "pvc-1")
    assert (outside / "pvc-1_ns_c").is_dir()


def test_only_deleted_unbound_volumes_of_this_node():
    pv = {"metadata": {"deletionTimestamp": "2026-01-01T00:00:00Z", "finalizers": ["storage.pyk8s.io/local-path-cleanup"]},
          "spec": {"nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
              {"key": "kubernetes.io/hostname", "operator": "In", "values": ["n1"]}]}]}}},
          "status": {"phase": "Released"}}
    assert wants_cleanup(pv, "n1") and not wants_cleanup(pv, "n2")
    assert not wants_cleanup({**pv, "status": {"phase": "Bound"}}, "n1")
    assert not wants_cleanup({**pv, "metadata": {**pv["metadata"], "finalizers": ["other"]}}, "n1")
    assert not wants_cleanup({**pv, "metadata": {"finalizers": pv["metadata"]["finalizers"]}}, "n1")


def test_agent_refuses_an_unreadable_local_path_kubeconfig(tmp_path):
    """`pyk8s agent --local-path-kubeconfig` that cannot be read: a clear error and exit 2, before any pod runs."""
    import subprocess
    import sys
    import types

    from pyk8s.apiserver.certs import ensure_pki
    from tests.cluster import client_kubeconfig

    ensure_pki(tmp_path / "server")  # a node's kubeconfig from a CA of its own: the agent never gets to use it
    node = client_kubeconfig(types.SimpleNamespace(data_dir=str(tmp_path / "server"), url="https://127.0.0.1:9"),
                             "system:node:n1", ["system:nodes"], "kubelet")  # type: ignore[arg-type]
    missing = tmp_path / "missing.conf"
    r = subprocess.run([sys.executable, "-m", "pyk8s.cli", "agent", "--kubeconfig", node, "--data-dir",
                        str(tmp_path / "d"), "--local-path-kubeconfig", str(missing)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2, r.stderr
    assert r.stderr.startswith("pyk8s agent: --local-path-kubeconfig: ") and "missing.conf" in r.stderr, r.stderr

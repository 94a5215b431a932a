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

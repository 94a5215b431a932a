"""The kubelet's persistent-volume helpers on a real filesystem: subPath creation and escapes,
fsGroup ownership, local-path directories."""

from __future__ import annotations

import os
import stat

import pytest

from pyk8s.kubelet.volumes import (
    MountedVolume,
    VolumeError,
    VolumeManager,
    _ensure_local_path_dir,
    set_volume_ownership,
)
from tests.conftest import require


def test_subpath_takes_the_volume_root_mode(tmp_path):
    root = tmp_path / "vol"
    root.mkdir()
    os.chmod(root, 0o2775)
    got = VolumeManager._subpath(MountedVolume("v", str(root)), "a/b")
    assert got == str(root / "a" / "b")
    for d in (root / "a", root / "a" / "b"):
        assert stat.S_IMODE(os.stat(d).st_mode) == 0o2775


def test_subpath_through_a_link_out_creates_nothing_outside(tmp_path):
    root, outside = tmp_path / "vol", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    os.symlink(str(outside), root / "esc")
    with pytest.raises(VolumeError, match="not within volume path"):
        VolumeManager._subpath(MountedVolume("v", str(root)), "esc/new")
    assert not (outside / "new").exists()
    with pytest.raises(VolumeError, match="may not contain"):
        VolumeManager._subpath(MountedVolume("v", str(root)), "../outside")


def test_subpath_missing_in_read_only_volume(tmp_path):
    with pytest.raises(VolumeError, match="does not exist"):
        VolumeManager._subpath(MountedVolume("v", str(tmp_path), readonly=True), "nope")


def test_fs_group_ownership_and_on_root_mismatch(tmp_path):
    require("root (chown)", os.geteuid() == 0)
    root = tmp_path / "vol"
    (root / "d").mkdir(parents=True)
    (root / "d" / "f").write_text("x")
    os.chmod(root / "d" / "f", 0o600)
    os.symlink("/etc/passwd", root / "link")
    before = os.lstat("/etc/passwd")
    set_volume_ownership(str(root), 4321, readonly=False, on_root_mismatch=False)
    for p in (root, root / "d"):
        st = os.stat(p)
        assert st.st_gid == 4321 and st.st_mode & stat.S_ISGID and st.st_mode & 0o070 == 0o070
    f = os.stat(root / "d" / "f")
    assert f.st_gid == 4321 and stat.S_IMODE(f.st_mode) == 0o660
    after = os.lstat("/etc/passwd")  # a link is never followed
    assert (after.st_gid, after.st_mode) == (before.st_gid, before.st_mode)
    # OnRootMismatch: a root already right means the tree is left alone
    os.chown(root / "d" / "f", -1, 0)
    set_volume_ownership(str(root), 4321, readonly=False, on_root_mismatch=True)
    assert os.stat(root / "d" / "f").st_gid == 0
    set_volume_ownership(str(root), 4321, readonly=False, on_root_mismatch=False)
    assert os.stat(root / "d" / "f").st_gid == 4321


def test_local_path_directory(tmp_path):
    d = tmp_path / "lp" / "pvc-1_default_c"
    _ensure_local_path_dir(str(d))
    assert stat.S_IMODE(os.stat(d).st_mode) == 0o777
    for bad in ("relative/dir", f"{tmp_path}/../x"):
        with pytest.raises(VolumeError, match="clean absolute path"):
            _ensure_local_path_dir(bad)

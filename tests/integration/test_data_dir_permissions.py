"""The data dir holds every object (Secrets included) and the cluster's keys: like etcd's and k3s's,
it is created 0700 and its state files 0600 whatever the umask, and a looser one left by an earlier
run is tightened at start, with a warning in the server log naming each path it tightened."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.cluster import Cluster

pytestmark = pytest.mark.timeout(120)

PRIVATE_FILES = ("state.db", "state.db-wal", "state.db-shm", "kubeconfig.yaml", "scheduler.conf",
                 "controller-manager.conf", "store.sock", "pki/ca.key", "pki/apiserver.key", "pki/admin.key",
                 "pki/sa.key")


def _mode(p: Path) -> int:
    return stat.S_IMODE(os.lstat(p).st_mode)


@contextmanager
def _umask(mask: int) -> Iterator[None]:
    old = os.umask(mask)  # the server subprocess inherits it
    try:
        yield
    finally:
        os.umask(old)


def _start(data: Path) -> Cluster:
    with _umask(0):
        return Cluster(str(data), extra_args=["--api-workers", "2", "--controller-manager-process"]).start()


def test_fresh_data_dir_and_state_files_are_private_under_umask_0(tmp_path: Path) -> None:
    data = tmp_path / "data"
    c = _start(data)
    try:
        c.kubectl("create", "secret", "generic", "s1", "--from-literal=k=v")
        assert _mode(data) == 0o700 and _mode(data / "pki") == 0o700
        for name in PRIVATE_FILES:
            assert (name, oct(_mode(data / name))) == (name, oct(0o600))
        # nothing under it is writable by group or others either (certificates are 0644)
        for p in data.rglob("*"):
            assert _mode(p) & 0o022 == 0, p
    finally:
        c.stop()


def test_an_existing_loose_data_dir_is_tightened_with_a_warning(tmp_path: Path) -> None:
    data = tmp_path / "data"
    c = Cluster(str(data)).start()
    try:
        c.kubectl("create", "secret", "generic", "kept", "--from-literal=k=v")
    finally:
        c.stop()
    loose = {data: 0o755, data / "pki": 0o755, data / "state.db": 0o644, data / "pki" / "ca.key": 0o644,
             data / "pki" / "sa.key": 0o666}
    for name in ("state.db-wal", "state.db-shm"):
        if (data / name).exists():
            loose[data / name] = 0o644
    for p, m in loose.items():
        os.chmod(p, m)
    c = _start(data)
    try:
        assert c.kubectl("get", "secret", "kept", "-o", "name").stdout.strip() == "secret/kept"
        log = "".join(c.output)
        for p, m in loose.items():
            want = 0o700 if p.is_dir() else 0o600
            assert _mode(p) == want, p
            assert f"{p.resolve()} was readable or writable by others (mode {m:04o}): tightened to {want:04o}" in log
    finally:
        c.stop()

"""Data dirs and state files only their owner can read, whatever the umask.

As etcd (data dir 0700) and k3s do: the data dir holds the cluster's state (every Secret) and
its keys, so `pyk8s server` and `pyk8s agent` create it 0700 and the store's files 0600, and a
dir or file left looser by an earlier run (an older version, a umask of 0, a copy) is tightened
at start with a warning naming the path. Modes are set explicitly, never left to the umask.
"""

from __future__ import annotations

import contextlib
import logging
import os
import stat
import tempfile
from pathlib import Path

__all__ = ["PRIVATE_DIR", "PRIVATE_FILE", "ensure_private_dir", "ensure_private_file", "create_private_file", "write_atomic"]

log = logging.getLogger("pyk8s.datadir")

PRIVATE_DIR = 0o700
PRIVATE_FILE = 0o600


def _tighten(path: str | os.PathLike[str], allowed: int, what: str) -> None:
    cur = stat.S_IMODE(os.stat(path).st_mode)
    if cur & ~allowed & 0o777:
        os.chmod(path, cur & (allowed | ~0o777))
        log.warning("%s %s was readable or writable by others (mode %04o): tightened to %04o", what,
                    os.path.abspath(path), cur, cur & (allowed | ~0o777))


def ensure_private_dir(path: str | os.PathLike[str]) -> None:
    """Create path (parents as usual) as 0700, or tighten an existing one to at most 0700."""
    try:
        os.makedirs(path, mode=PRIVATE_DIR)
    except FileExistsError:
        _tighten(path, PRIVATE_DIR, "directory")
    else:
        os.chmod(path, PRIVATE_DIR)  # the umask may have taken bits away, never adds: this is exact


def ensure_private_file(path: str | os.PathLike[str]) -> None:
    """Tighten an existing file to at most 0600 (a missing one is left missing)."""
    try:
        _tighten(path, PRIVATE_FILE, "file")
    except FileNotFoundError:
        pass


def create_private_file(path: str | os.PathLike[str]) -> None:
    """Make sure path exists as a file of at most 0600: created empty if missing, else tightened."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE)
    except FileExistsError:
        ensure_private_file(path)
    else:
        os.fchmod(fd, PRIVATE_FILE)
        os.close(fd)


def write_atomic(path: str | os.PathLike[str], data: bytes, mode: int = PRIVATE_FILE) -> None:
    """Write through a temp file in the same dir, fsync'd, then rename: a crash never leaves a
    half-written key or kubeconfig, and the file has its mode before it holds anything."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise

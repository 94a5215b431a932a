"""Unix socket addresses for directories too deep for them.

gRPC refuses a unix socket path longer than about 104 bytes (sun_path is 108 with its NUL, and
gRPC keeps a margin), and a kubelet root inside a deep data dir reaches that. A path that is too
long is reached through a short alias instead: a symlink to the directory, inside a fresh 0700
directory of our own under /tmp. The socket file itself is still made in (and dialled in) the real
directory, whose 0700 mode keeps guarding it; only the address the kernel parses is short.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile

MAX_ADDRESS = 100  # bytes of a unix socket path gRPC binds and dials reliably


class SocketDir:
    def __init__(self, directory: str) -> None:
        self.directory = directory
        self._alias_root: str | None = None

    def address(self, name: str) -> str:
        """A path naming `<directory>/<name>` that gRPC accepts."""
        full = os.path.join(self.directory, name)
        if len(full.encode()) <= MAX_ADDRESS:
            return full
        if self._alias_root is None:
            root = tempfile.mkdtemp(prefix="pyk8s-sock-")  # 0700, a name nobody else can have taken
            os.symlink(self.directory, os.path.join(root, "d"))
            self._alias_root = root
        return os.path.join(self._alias_root, "d", name)

    def close(self) -> None:
        if self._alias_root is not None:
            with contextlib.suppress(OSError):
                shutil.rmtree(self._alias_root)
            self._alias_root = None

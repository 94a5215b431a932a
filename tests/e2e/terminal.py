"""A program (kubectl) on a real pseudo-terminal, for the `-it` tests: read until, type, resize, wait for its exit."""

from __future__ import annotations

import contextlib
import fcntl
import os
import pty
import select
import signal
import struct
import termios
import time


class Terminal:
    def __init__(self, argv: list[str], env: dict[str, str], rows: int = 24, cols: int = 80) -> None:
        pid, fd = pty.fork()
        if pid == 0:  # the child: the program on the pty's slave side
            try:
                fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
                os.execve(argv[0], argv, env)
            finally:
                os._exit(127)
        self.pid, self.fd = pid, fd
        self.out = b""
        self.status: int | None = None  # the exit code, once it has exited

    def _read(self, timeout: float) -> int:
        """Read what is there within `timeout`: how many bytes, 0 for none yet, -1 once the program's side closed."""
        if not select.select([self.fd], [], [], timeout)[0]:
            return 0
        try:
            chunk = os.read(self.fd, 4096)
        except OSError:
            chunk = b""
        self.out += chunk
        return len(chunk) or -1

    def read_until(self, want: bytes, timeout: float = 20) -> bytes:
        deadline = time.monotonic() + timeout
        while want not in self.out and time.monotonic() < deadline:
            if self._read(0.2) < 0:
                break
        assert want in self.out, self.out
        return self.out

    def type(self, data: bytes) -> None:
        os.write(self.fd, data)

    def resize(self, rows: int, cols: int) -> None:
        fcntl.ioctl(self.fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGWINCH)

    def wait(self, timeout: float = 30) -> int:
        """The exit code, reading its last output meanwhile."""
        deadline = time.monotonic() + timeout
        while self.status is None and time.monotonic() < deadline:
            got = self._read(0.2)
            if got > 0:
                continue
            done, st = os.waitpid(self.pid, os.WNOHANG)
            if done:
                self.status = os.waitstatus_to_exitcode(st)
            elif got < 0:
                time.sleep(0.05)
        if self.status is None:
            done, st = os.waitpid(self.pid, os.WNOHANG)
            if done:
                self.status = os.waitstatus_to_exitcode(st)
        assert self.status is not None, f"still running after {timeout}s: {self.out!r}"
        return self.status

    def close(self) -> None:
        if self.status is None:
            with contextlib.suppress(OSError):
                os.kill(self.pid, signal.SIGKILL)
                os.waitpid(self.pid, 0)
        with contextlib.suppress(OSError):
            os.close(self.fd)

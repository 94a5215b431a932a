"""Starting container shims: forked by one long-lived zygote (`shim.py --zygote`) rather than exec'd one by one.

Each container's shim used to be a fresh `python -S -P shim.py`: an interpreter start and the shim's imports (~25 ms
of CPU) plus a vfork+exec that holds the kubelet's event loop, per container. The zygote is started once per runtime
object and forks a shim per request; the shims daemonize as before, so they outlive both the zygote and the kubelet.
"""

from __future__ import annotations

import array
import asyncio
import contextlib
import os
import socket
import subprocess
import sys

SHIM = os.path.join(os.path.dirname(os.path.abspath(__file__)), "shim.py")


class ShimLauncher:
    def __init__(self, log_path: str) -> None:
        self.log_path = log_path  # the zygote's own stderr (its shims write to their shim.log)
        self._sock: socket.socket | None = None
        self._proc: subprocess.Popen[bytes] | None = None

    def _start(self) -> socket.socket:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            with open(self.log_path, "ab") as log:
                # started synchronously (once): no asyncio child watcher, so the object works from any event loop
                self._proc = subprocess.Popen([sys.executable, "-S", "-P", SHIM, "--zygote", str(theirs.fileno())],
                                              stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                              pass_fds=(theirs.fileno(),), start_new_session=True)
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        ours.setblocking(False)
        self._sock = ours
        return ours

    async def _send(self, sock: socket.socket, payload: bytes, fds: list[int]) -> None:
        anc = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds).tobytes())]
        while True:
            try:
                sock.sendmsg([payload], anc)
                return
            except BlockingIOError:  # the zygote's queue is full: wait until it reads
                await _ready(sock.fileno(), write=True)

    async def launch(self, args: list[str], ready_fd: int, log_fd: int) -> None:
        """Have a shim started with `args` plus `--ready-fd`, stdout/stderr on `log_fd`. The fds are copied across:
        the caller closes its own. A dead zygote is replaced once; OSError when no zygote can take the request."""
        payload = "\0".join(args).encode()
        for attempt in (0, 1):
            sock = self._sock or self._start()
            try:
                await self._send(sock, payload, [ready_fd, log_fd])
                return
            except (BrokenPipeError, ConnectionError):
                self.close()
                if attempt:
                    raise

    def close(self) -> None:
        """Stop the zygote (it exits when its socket closes); shims it started keep running."""
        if self._sock is not None:
            self._sock.close()
            self._sock = None
        if self._proc is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._proc.wait(2)
            self._proc = None


def _settle(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)


async def _ready(fd: int, write: bool = False) -> None:
    """Wait on the event loop until `fd` is readable (or writable)."""
    loop = asyncio.get_running_loop()
    ready: asyncio.Future[None] = loop.create_future()
    (loop.add_writer if write else loop.add_reader)(fd, _settle, ready)
    try:
        await ready
    finally:
        (loop.remove_writer if write else loop.remove_reader)(fd)


async def read_pipe(fd: int) -> bytes:
    """Everything from a pipe until EOF, on the event loop (not a worker thread: with 100 pods starting at once the
    default executor's few threads would each sit out a shim's whole start)."""
    os.set_blocking(fd, False)
    chunks: list[bytes] = []
    while True:
        try:
            b = os.read(fd, 65536)
        except BlockingIOError:
            await _ready(fd)
            continue
        if not b:
            return b"".join(chunks)
        chunks.append(b)

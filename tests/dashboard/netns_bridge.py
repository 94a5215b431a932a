"""Headless Chromium in a network namespace of its own, with TCP ports bridged in and out.

Why: Chromium drops every open connection (net::ERR_NETWORK_CHANGED) when an address appears on
any host interface, and each pod a kubelet starts adds a veth (with an IPv6 link-local address)
on the host: watches, and the very request a test is making, fail at random. In a namespace of
its own the browser sees no such changes (as infrahub's e2e tests do it; chromium issue 41465264).

The bridge is a few asyncio forwarders in this process: a socket made inside the namespace (a
thread enters it with setns(2), makes the socket and leaves) is bound there or connected from
there; the other end is an ordinary host socket. `expose_in(port)`: the namespace's
127.0.0.1:port reaches the host's (the dashboard); `expose_out(port)`: the host's 127.0.0.1:port
reaches the namespace's (chromedriver, which runs inside with the browser).
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import ctypes
import os
import socket
import subprocess
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

CLONE_NEWNET = 0x40000000
_libc = ctypes.CDLL(None, use_errno=True)


def _in_netns(path: str, make: Callable[[], socket.socket]) -> socket.socket:
    """`make()` run on a thread inside the network namespace at `path` (sockets keep their namespace)."""
    out: dict[str, Any] = {}

    def run() -> None:
        own = os.open(f"/proc/self/task/{threading.get_native_id()}/ns/net", os.O_RDONLY)
        target = os.open(path, os.O_RDONLY)
        try:
            if _libc.setns(target, CLONE_NEWNET) != 0:
                raise OSError(ctypes.get_errno(), f"setns {path}")
            try:
                out["sock"] = make()
            finally:
                if _libc.setns(own, CLONE_NEWNET) != 0:  # pragma: no cover (the thread ends anyway)
                    raise OSError(ctypes.get_errno(), "setns back")
        except BaseException as e:  # noqa: BLE001 (re-raised on the caller's thread)
            out["error"] = e
        finally:
            os.close(own)
            os.close(target)

    t = threading.Thread(target=run)
    t.start()
    t.join()
    if "error" in out:
        raise out["error"]
    return out["sock"]  # type: ignore[no-any-return]


class NetnsBridge:
    def __init__(self) -> None:
        self.name = f"dash-br-{uuid.uuid4().hex[:8]}"
        self.path = f"/run/netns/{self.name}"
        subprocess.run(["ip", "netns", "add", self.name], check=True)
        # removed at exit too, should the test process end without close() (interrupted, timed out)
        atexit.register(subprocess.run, ["ip", "netns", "del", self.name], check=False, stderr=subprocess.DEVNULL)
        subprocess.run(["ip", "-n", self.name, "link", "set", "lo", "up"], check=True)
        self.loop = asyncio.new_event_loop()
        self._servers: list[asyncio.base_events.Server] = []
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True, name=self.name)
        self._thread.start()
        self.exposed_in: set[int] = set()
        self._conns: dict[asyncio.StreamWriter, int] = {}  # the page side of each bridged connection: port

    def _call(self, coro: Any) -> Any:
        f: Future[Any] = asyncio.run_coroutine_threadsafe(coro, self.loop)
        return f.result(30)

    @staticmethod
    async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            with contextlib.suppress(Exception):
                writer.close()

    async def _join(self, r1: asyncio.StreamReader, w1: asyncio.StreamWriter, r2: asyncio.StreamReader,
                    w2: asyncio.StreamWriter, port: int = 0) -> None:
        self._conns[w1] = port
        try:
            await asyncio.gather(self._pipe(r1, w2), self._pipe(r2, w1))
        finally:
            self._conns.pop(w1, None)

    def drop(self, port: int) -> int:
        """Cut every open connection the browser has to the host's `port` (as a network change would);
        how many were cut."""
        async def cut() -> int:
            victims = [w for w, p in self._conns.items() if p == port]
            for w in victims:
                w.transport.abort()
            return len(victims)

        return int(self._call(cut()))

    def expose_in(self, port: int) -> None:
        """The namespace's 127.0.0.1:port forwards to the host's 127.0.0.1:port."""
        if port in self.exposed_in:
            return

        def listener() -> socket.socket:
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind(("127.0.0.1", port))
            s.listen(64)
            s.setblocking(False)
            return s

        sock = _in_netns(self.path, listener)

        async def serve() -> None:
            async def on(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
                try:
                    r2, w2 = await asyncio.open_connection("127.0.0.1", port)
                except OSError:
                    w.close()
                    return
                await self._join(r, w, r2, w2, port)

            self._servers.append(await asyncio.start_server(on, sock=sock))

        self._call(serve())
        self.exposed_in.add(port)

    def expose_out(self, port: int) -> None:
        """The host's 127.0.0.1:port forwards to the namespace's 127.0.0.1:port (retried while the
        namespace's listener is not up yet)."""

        async def connect_inside() -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
            deadline = time.monotonic() + 20
            while True:
                def make() -> socket.socket:
                    return socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                s = _in_netns(self.path, make)
                s.setblocking(False)
                try:
                    await self.loop.sock_connect(s, ("127.0.0.1", port))
                    return await asyncio.open_connection(sock=s)
                except OSError:
                    s.close()
                    if time.monotonic() > deadline:
                        raise
                    await asyncio.sleep(0.05)

        async def serve() -> None:
            async def on(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
                try:
                    r2, w2 = await connect_inside()
                except OSError:
                    w.close()
                    return
                await self._join(r, w, r2, w2)

            self._servers.append(await asyncio.start_server(on, "127.0.0.1", port))

        self._call(serve())

    def command(self, argv: list[str]) -> list[str]:
        return ["nsenter", f"--net={self.path}", *argv]

    def close(self) -> None:
        async def stop() -> None:
            for s in self._servers:
                s.close()
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        with contextlib.suppress(Exception):
            self._call(stop())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(5)
        subprocess.run(["ip", "netns", "del", self.name], check=False, stderr=subprocess.DEVNULL)

"""Port forwarding into a pod's network namespace, over SPDY streams or WebSocket channels.

SPDY ("portforward.k8s.io"): for every forwarded connection the client opens an
error stream and a data stream carrying the same `port` and `requestID` headers; once
both are there we connect to localhost:port inside the pod, splice the data stream and
the socket (FIN either way is a half-close), write any failure as text on the error
stream, and close both streams when done. kubectl 1.30+ runs that same SPDY session
inside a WebSocket ("SPDY/3.1+portforward.k8s.io", one binary message per write).

WebSocket ("v4.channel.k8s.io" and friends, `?ports=80,443`): one connection per port for
the life of the WebSocket; channel 2i carries data and 2i+1 errors for the i-th port, and
each channel starts with the port number as two little-endian bytes.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import logging
import os
import socket
import struct
import threading
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import WSMsgType, web

from . import channels as ch
from . import spdy

log = logging.getLogger("pyk8s.kubelet.streaming")

PORTFORWARD_V1 = "portforward.k8s.io"
TUNNEL_PROTOCOL = "SPDY/3.1+" + PORTFORWARD_V1
CLONE_NEWNET = 0x40000000

Dialer = Callable[[int], Awaitable[tuple[asyncio.StreamReader, asyncio.StreamWriter]]]


class ForwardError(Exception):
    pass


# ---------------------------------------------------------------------------- reaching the pod


def _sockets_in_netns(netns_path: str) -> tuple[socket.socket, socket.socket | None]:
    """A TCP/IPv4 and a TCP/IPv6 socket created inside the namespace at `netns_path`.

    Sockets belong to the namespace they were created in, so only their creation needs
    the namespace; it happens on a thread of its own, which is the only thread that
    ever switches (setns changes the calling thread's namespace).
    """
    result: dict[str, Any] = {}

    def work() -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        own = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
        target = os.open(netns_path, os.O_RDONLY)
        try:
            if libc.setns(target, CLONE_NEWNET) != 0:
                e = ctypes.get_errno()
                raise OSError(e, f"setns {netns_path}: {os.strerror(e)}")
            try:
                result["v4"] = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                try:
                    result["v6"] = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
                except OSError:
                    result["v6"] = None
            finally:
                if libc.setns(own, CLONE_NEWNET) != 0:
                    result["fatal"] = True  # never happens in practice; this thread dies anyway
        except BaseException as e:  # noqa: BLE001 - handed to the caller
            result["error"] = e
        finally:
            os.close(own)
            os.close(target)

    t = threading.Thread(target=work, name="netns-socket", daemon=True)
    t.start()
    t.join()
    if "error" in result:
        raise result["error"]
    return result["v4"], result["v6"]


async def dial_localhost(port: int, netns_path: str = "", sandbox: str = "") -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """Connect to localhost:port in the pod's network namespace (the host's for hostNetwork pods)."""
    if netns_path:
        v4, v6 = await asyncio.to_thread(_sockets_in_netns, netns_path)
    else:
        v4 = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            v6 = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
        except OSError:
            v6 = None
    loop = asyncio.get_running_loop()
    errors = []
    for sock, addr, label in ((v4, ("127.0.0.1", port), f"dial tcp4 127.0.0.1:{port}"),
                              (v6, ("::1", port), f"dial tcp6 [::1]:{port}")):
        if sock is None:
            continue
        sock.setblocking(False)
        try:
            await asyncio.wait_for(loop.sock_connect(sock, addr), 10)
        except (OSError, TimeoutError) as e:
            sock.close()
            reason = os.strerror(e.errno).lower() if isinstance(e, OSError) and e.errno else "i/o timeout"
            errors.append(f"{label}: connect: {reason}")
            continue
        other = v6 if sock is v4 else None
        if other is not None:
            other.close()
        return await asyncio.open_connection(sock=sock)
    where = f' inside namespace "{sandbox}"' if sandbox else ""
    raise ForwardError(f"failed to connect to localhost:{port}{where}, IPv4: {errors[0] if errors else ''} "
                       f"IPv6 {errors[1] if len(errors) > 1 else ''} ")


async def splice(read: Callable[[], Awaitable[bytes]], write: Callable[[bytes], Awaitable[None]],
                 close_write: Callable[[], Awaitable[None]]) -> None:
    try:
        while True:
            data = await read()
            if not data:
                break
            await write(data)
    except (ConnectionError, OSError):
        pass
    finally:
        with contextlib.suppress(Exception):
            await close_write()


async def forward(port: int, dial: Dialer, stream_read: Callable[[], Awaitable[bytes]],
                  stream_write: Callable[[bytes], Awaitable[None]], stream_close: Callable[[], Awaitable[None]],
                  describe: str) -> str | None:
    """One forwarded connection; returns an error message for the error stream, or None."""
    try:
        reader, writer = await dial(port)
    except ForwardError as e:
        return f"error forwarding port {port} to pod {describe}: {e}"
    except OSError as e:
        return f"error forwarding port {port} to pod {describe}: {e}"

    async def sock_write(data: bytes) -> None:
        writer.write(data)
        await writer.drain()

    async def sock_close_write() -> None:
        if writer.can_write_eof():
            writer.write_eof()  # a half-close: the pod's server still answers what it got

    async def sock_read() -> bytes:
        try:
            return await reader.read(65536)
        except (ConnectionError, OSError):
            return b""

    try:
        # both directions to their ends, as containerd does: an HTTP client half-closes and still waits for the reply
        await asyncio.gather(splice(stream_read, sock_write, sock_close_write),
                             splice(sock_read, stream_write, stream_close))
    finally:
        writer.close()
        with contextlib.suppress(Exception):
            await writer.wait_closed()
    return None


# ---------------------------------------------------------------------------- SPDY


async def serve_spdy(session: spdy.Session, dial: Dialer, describe: str, creation_timeout: float = 30.0) -> None:
    """Serve port-forward streams on an upgraded SPDY session until the client goes away."""
    pairs: dict[str, dict[str, spdy.Stream]] = {}
    tasks: set[asyncio.Task[None]] = set()
    loop = asyncio.get_running_loop()

    async def run_pair(rid: str, pair: dict[str, spdy.Stream]) -> None:
        data, err = pair["data"], pair["error"]
        try:
            port = int(data.header("port"))
            msg = await forward(port, dial, data.read, data.write, data.close, describe)
            if msg:
                log.info("%s", msg)
                with contextlib.suppress(Exception):
                    await err.write(msg.encode())
        finally:
            with contextlib.suppress(Exception):
                await err.close()
            with contextlib.suppress(Exception):
                await data.close()
            data.abandon()
            err.abandon()
            pairs.pop(rid, None)

    async def expire(rid: str) -> None:
        # a half-made pair (only one of its streams arrived) is dropped after the creation timeout
        await asyncio.sleep(creation_timeout)
        pair = pairs.get(rid)
        if pair is not None and len(pair) < 2:
            pairs.pop(rid, None)
            for s in pair.values():
                if "error" in pair and s is pair["error"]:
                    with contextlib.suppress(Exception):
                        await s.write(f"timed out waiting for streams for request {rid}".encode())
                with contextlib.suppress(Exception):
                    await s.reset()

    try:
        while True:
            s = await session.accept()
            if s is None:
                break
            kind = s.header("streamtype")
            port = s.header("port")
            if not port:
                await s.reset(spdy.PROTOCOL_ERROR)  # "port header missing", as upstream refuses such a stream
                continue
            try:
                if not 0 < int(port) < 65536:
                    raise ValueError
            except ValueError:
                await s.reset(spdy.PROTOCOL_ERROR)
                continue
            rid = s.header("requestid")
            if not rid:
                # clients before kubectl 1.5 sent no requestID: the error stream precedes its data stream by one id
                rid = str(s.id if kind == "error" else s.id - 2)
            if kind not in ("data", "error"):
                await s.reset(spdy.PROTOCOL_ERROR)
                continue
            pair = pairs.setdefault(rid, {})
            if kind in pair:
                await s.reset(spdy.PROTOCOL_ERROR)
                continue
            pair[kind] = s
            if len(pair) == 1:
                t = loop.create_task(expire(rid))
                tasks.add(t)
                t.add_done_callback(tasks.discard)
            else:
                t = loop.create_task(run_pair(rid, pair))
                tasks.add(t)
                t.add_done_callback(tasks.discard)
    finally:
        for t in list(tasks):
            t.cancel()
        for t in list(tasks):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await t
        await session.close()


class WSTunnel:
    """A ByteConn over WebSocket binary messages (kubectl's SPDY-over-WebSocket tunnel)."""

    def __init__(self, ws: web.WebSocketResponse) -> None:
        self.ws = ws
        self._lock = asyncio.Lock()

    async def read(self) -> bytes:
        while True:
            msg = await self.ws.receive()
            if msg.type == WSMsgType.BINARY:
                if msg.data:
                    return bytes(msg.data)
                continue
            if msg.type in (WSMsgType.CLOSE, WSMsgType.CLOSING, WSMsgType.CLOSED, WSMsgType.ERROR):
                return b""

    async def write(self, data: bytes) -> None:
        async with self._lock:
            if self.ws.closed:
                raise ConnectionResetError("websocket closed")
            await self.ws.send_bytes(data)

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.ws.close(), 5)


# ---------------------------------------------------------------------------- WebSocket channels


def parse_ports(values: list[str]) -> list[int]:
    ports: list[int] = []
    for v in values:
        for p in v.split(","):
            p = p.strip()
            if not p:
                continue
            try:
                n = int(p)
            except ValueError:
                raise ValueError(f'unable to parse "{p}" as a port: strconv.ParseUint: parsing "{p}": invalid syntax') from None
            if not 0 < n < 65536:
                raise ValueError(f"port {n} must be > 0")
            ports.append(n)
    return ports


async def serve_websocket(ws: web.WebSocketResponse, ports: list[int], dial: Dialer, describe: str) -> None:
    mux = ch.WSChannels(ws, ws.ws_protocol or "", readable=[2 * i for i in range(len(ports))])
    mux.start()
    try:
        for i, port in enumerate(ports):
            prefix = struct.pack("<H", port)
            await mux.send(2 * i, prefix)
            await mux.send(2 * i + 1, prefix)

        async def one(i: int, port: int) -> None:
            data_r = mux.reader(2 * i)
            data_w = mux.writer(2 * i)
            msg = await forward(port, dial, data_r.read, data_w.write, data_w.close, describe)
            mux.abandon(2 * i)
            if msg:
                with contextlib.suppress(Exception):
                    await mux.send(2 * i + 1, msg.encode())

        work: asyncio.Future[Any] = asyncio.gather(*(one(i, p) for i, p in enumerate(ports)))
        closed: asyncio.Future[Any] = asyncio.ensure_future(mux.closed.wait())
        await asyncio.wait({work, closed}, return_when=asyncio.FIRST_COMPLETED)
        if not work.done():
            work.cancel()
        closed.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await work
    finally:
        await mux.close()

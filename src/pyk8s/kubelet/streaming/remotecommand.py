"""exec and attach: the remotecommand protocols over WebSocket channels or SPDY streams.

Negotiation follows the kubelet's streaming server: a WebSocket request picks one of
the channel subprotocols (v5/v4 binary, v4 base64, or the pre-v4 channel.k8s.io ones);
anything else must be a SPDY/3.1 upgrade whose X-Stream-Protocol-Version list shares a
version with ours (v4 .. v1), after which the client opens one stream per standard
stream (plus error, and resize for a TTY) within the stream-creation timeout. The error
stream/channel carries the outcome: a metav1.Status as JSON from v4 on (exit codes
included), a plain message on failure before that.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import logging
import os
import signal
import struct
import termios
import tty as _tty
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from aiohttp import web

from ...streaming.hijack import hijack
from . import channels as ch
from . import spdy

log = logging.getLogger("pyk8s.kubelet.streaming")

STDIN, STDOUT, STDERR, ERROR, RESIZE = 0, 1, 2, 3, 4

# SPDY remotecommand versions the kubelet accepts (X-Stream-Protocol-Version), newest first
SPDY_PROTOCOLS = ("v4.channel.k8s.io", "v3.channel.k8s.io", "v2.channel.k8s.io", "channel.k8s.io")
STATUS_JSON_PROTOCOLS = {ch.V5, ch.V4, ch.V4_BASE64, "v4.channel.k8s.io"}
RESIZE_PROTOCOLS = {ch.V5, ch.V4, ch.V4_BASE64, "v4.channel.k8s.io", "v3.channel.k8s.io"}

EXIT_GRACE = 2.0  # how long output may keep flowing after the process exited (a background child holding it)
INITIAL_SIZE_WAIT = 0.5  # how long a TTY command waits for the client's first terminal size


class Reader(Protocol):
    async def read(self) -> bytes: ...


class Writer(Protocol):
    async def write(self, data: bytes) -> None: ...

    async def close(self) -> None: ...


class StreamOptionsError(ValueError):
    pass


def _flag(q: Mapping[str, str], name: str) -> bool:
    return q.get(name, "").lower() in ("1", "true", "t")


@dataclass
class Options:
    stdin: bool = False
    stdout: bool = False
    stderr: bool = False
    tty: bool = False

    @classmethod
    def from_query(cls, q: Mapping[str, str]) -> Options:
        o = cls(_flag(q, "stdin"), _flag(q, "stdout"), _flag(q, "stderr"), _flag(q, "tty"))
        if o.tty and o.stderr:
            o.stderr = False  # a terminal has one output; upstream drops stderr the same way
        if not (o.stdin or o.stdout or o.stderr):
            raise StreamOptionsError("you must specify at least 1 of stdin, stdout, stderr")
        return o


# ---------------------------------------------------------------------------- statuses


def success_status() -> dict[str, Any]:
    return {"metadata": {}, "status": "Success"}


def exit_status(cmd: list[str], code: int) -> dict[str, Any]:
    return {"metadata": {}, "status": "Failure",
            "message": f"command terminated with non-zero exit code: command '{' '.join(cmd)}' exited with {code}: ",
            "reason": "NonZeroExitCode",
            "details": {"causes": [{"reason": "ExitCode", "message": str(code)}]}}


def internal_error_status(message: str) -> dict[str, Any]:
    return {"metadata": {}, "status": "Failure", "message": f"Internal error occurred: {message}",
            "reason": "InternalError", "details": {"causes": [{"message": message}]}, "code": 500}


# ---------------------------------------------------------------------------- negotiated sessions


class Streams:
    """The standard streams of one exec/attach request, whatever carries them."""

    def __init__(self, protocol: str, opts: Options) -> None:
        self.protocol = protocol
        self.opts = opts
        self.stdin: Reader | None = None
        self.stdout: Writer | None = None
        self.stderr: Writer | None = None
        self.resize: Reader | None = None
        self.error: Writer | None = None
        self.gone = asyncio.Event()  # the client went away

    async def write_status(self, status: dict[str, Any]) -> None:
        if self.error is None:
            return
        try:
            if self.protocol in STATUS_JSON_PROTOCOLS:
                await self.error.write(json.dumps(status, separators=(",", ":")).encode())
            elif status.get("status") != "Success":
                await self.error.write(str(status.get("message", "")).encode())
            await self.error.close()
        except (ConnectionError, OSError, RuntimeError):
            pass

    async def finish(self) -> None:
        raise NotImplementedError


class WSStreams(Streams):
    def __init__(self, mux: ch.WSChannels, opts: Options) -> None:
        super().__init__(mux.protocol, opts)
        self.mux = mux
        if opts.stdin:
            self.stdin = mux.reader(STDIN)
        if opts.stdout:
            self.stdout = mux.writer(STDOUT)
        if opts.stderr:
            self.stderr = mux.writer(STDERR)
        self.error = mux.writer(ERROR)
        if opts.tty:
            self.resize = mux.reader(RESIZE)

    async def finish(self) -> None:
        await self.mux.close()


class SPDYStreams(Streams):
    def __init__(self, session: spdy.Session, protocol: str, opts: Options) -> None:
        super().__init__(protocol, opts)
        self.session = session
        self.by_type: dict[str, spdy.Stream] = {}

    async def finish(self) -> None:
        for s in self.by_type.values():
            s.abandon()
            with contextlib.suppress(Exception):
                await s.close()
        await self.session.close()


async def open_websocket(request: web.Request, opts: Options,
                         protocols: tuple[str, ...] = ch.EXEC_PROTOCOLS) -> tuple[web.WebSocketResponse, WSStreams]:
    ws = web.WebSocketResponse(protocols=protocols, autoping=True, max_msg_size=16 * 1024 * 1024)
    await ws.prepare(request)
    mux = ch.WSChannels(ws, ws.ws_protocol or "", readable=[STDIN, RESIZE])
    mux.start()
    streams = WSStreams(mux, opts)
    # An empty message on the lowest writable channel tells the client the session is up (as upstream).
    first = STDOUT if opts.stdout else STDERR if opts.stderr else ERROR
    await mux.send(first, b"")
    asyncio.get_running_loop().create_task(_set_when(mux.closed, streams.gone))
    return ws, streams


async def _set_when(src: asyncio.Event, dst: asyncio.Event) -> None:
    await src.wait()
    dst.set()


def is_websocket(request: web.BaseRequest) -> bool:
    return (request.headers.get("Upgrade", "").lower() == "websocket"
            and "upgrade" in request.headers.get("Connection", "").lower())


def negotiate_spdy(request: web.BaseRequest, supported: tuple[str, ...]) -> tuple[str | None, web.Response | None]:
    """The X-Stream-Protocol-Version handshake: (chosen version or "" when the client named none, error response)."""
    client: list[str] = []
    for v in request.headers.getall("X-Stream-Protocol-Version", []):
        client.extend(p.strip() for p in v.split(",") if p.strip())
    if not client:
        return "", None
    for p in client:
        if p in supported:
            return p, None
    resp = web.Response(status=403, text=f"unable to upgrade: unable to negotiate protocol: client supports "
                                         f"{_golist(client)}, server accepts {_golist(list(supported))}")
    for p in supported:
        resp.headers.add("X-Accepted-Stream-Protocol-Versions", p)
    return None, resp


def _golist(items: list[str]) -> str:
    return "[" + " ".join(items) + "]"


def spdy_upgrade_error(request: web.BaseRequest) -> web.Response | None:
    conn = request.headers.get("Connection", "").lower()
    upg = request.headers.get("Upgrade", "").lower()
    if "upgrade" not in conn or "spdy/3.1" not in upg:
        return web.Response(status=400, text="unable to upgrade: missing upgrade headers in request")
    return None


async def upgrade_spdy(request: web.Request, protocol: str) -> tuple[web.StreamResponse, spdy.Session]:
    headers = [("Connection", "Upgrade"), ("Upgrade", "SPDY/3.1")]
    if protocol:
        headers.append(("X-Stream-Protocol-Version", protocol))
    resp, conn = await hijack(request, headers)
    session = spdy.Session(conn, server=True)
    session.start()
    return resp, session


async def open_spdy(request: web.Request, opts: Options, protocol: str,
                    creation_timeout: float) -> tuple[web.StreamResponse, SPDYStreams | None]:
    """Upgrade, then wait for the client's streams (None when they do not all arrive in time)."""
    resp, session = await upgrade_spdy(request, protocol)
    streams = SPDYStreams(session, protocol or "channel.k8s.io", opts)
    expected = 1 + opts.stdin + opts.stdout + opts.stderr + (opts.tty and protocol in RESIZE_PROTOCOLS)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + creation_timeout
    while len(streams.by_type) < expected:
        try:
            s = await asyncio.wait_for(session.accept(), max(0.0, deadline - loop.time()))
        except TimeoutError:
            log.info("timed out waiting for client to create streams (%d of %d)", len(streams.by_type), expected)
            await session.close()
            return resp, None
        if s is None:
            return resp, None
        kind = s.header("streamtype")
        if kind not in ("error", "stdin", "stdout", "stderr", "resize") or kind in streams.by_type:
            log.info("unexpected stream type %r", kind)
            await s.reset(spdy.PROTOCOL_ERROR)
            continue
        streams.by_type[kind] = s
    b = streams.by_type
    streams.error = b.get("error")
    streams.stdin, streams.stdout, streams.stderr = b.get("stdin"), b.get("stdout"), b.get("stderr")
    streams.resize = b.get("resize")
    loop.create_task(_set_when(session.closed, streams.gone))
    return resp, streams


# ---------------------------------------------------------------------------- running a command


def _set_winsize(fd: int, width: int, height: int) -> None:
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", height, width, 0, 0))


def _make_controlling_tty() -> None:  # runs in the child between fork and exec
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


class ResizeEvents:
    """Terminal sizes from the resize stream: JSON objects {"Width": w, "Height": h}, split or joined across frames."""

    def __init__(self, reader: Reader) -> None:
        self.reader = reader
        self._dec = json.JSONDecoder()
        self._buf = ""
        self._ready: list[tuple[int, int]] = []

    async def next(self) -> tuple[int, int] | None:
        """The next (width, height); None once the stream ended."""
        while not self._ready:
            data = await self.reader.read()
            if not data:
                return None
            self._buf += data.decode("utf-8", "replace")
            while True:
                self._buf = self._buf.lstrip()
                if not self._buf:
                    break
                try:
                    obj, end = self._dec.raw_decode(self._buf)
                except ValueError:
                    break
                self._buf = self._buf[end:]
                if isinstance(obj, dict):
                    with contextlib.suppress(TypeError, ValueError):
                        w, h = int(obj.get("Width", 0)), int(obj.get("Height", 0))
                        if w > 0 and h > 0:
                            self._ready.append((w, h))
        return self._ready.pop(0)


async def _pump_resize(events: ResizeEvents, apply: Callable[[int, int], None]) -> None:
    while (size := await events.next()) is not None:
        with contextlib.suppress(OSError):
            apply(*size)


async def _copy_out(read: Callable[[], Awaitable[bytes]], writer: Writer | None) -> None:
    while True:
        data = await read()
        if not data:
            break
        if writer is not None:
            try:
                await writer.write(data)
            except (ConnectionError, OSError, RuntimeError):
                writer = None  # the client is gone: keep draining so the process is not blocked on a full pipe
    if writer is not None:
        with contextlib.suppress(Exception):
            await writer.close()


class _PtyMaster:
    """Non-blocking reads and writes on a pty master; EIO (the last slave holder closed) is EOF."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        os.set_blocking(fd, False)
        self.loop = asyncio.get_running_loop()

    async def read(self) -> bytes:
        while True:
            try:
                return os.read(self.fd, 65536)
            except BlockingIOError:
                pass
            except OSError:
                return b""
            await self._ready(self.loop.add_reader, self.loop.remove_reader)

    async def write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            try:
                n = os.write(self.fd, view)
                view = view[n:]
                continue
            except BlockingIOError:
                pass
            await self._ready(self.loop.add_writer, self.loop.remove_writer)

    async def _ready(self, add: Callable[..., Any], remove: Callable[[int], Any]) -> None:
        fut: asyncio.Future[None] = self.loop.create_future()
        add(self.fd, lambda: None if fut.done() else fut.set_result(None))
        try:
            await fut
        finally:
            remove(self.fd)


async def run_command(argv_for: Callable[[tuple[int, int] | None], list[str]], streams: Streams,
                      display_cmd: list[str]) -> dict[str, Any]:
    """Run the command wired to the client's streams; the Status to report.

    `argv_for(console_size)` gives the argv; for a TTY the client's first terminal size (kubectl sends it
    at once) is awaited briefly first, so the command can start at the right size.
    """
    opts = streams.opts
    master = -1
    events = ResizeEvents(streams.resize) if opts.tty and streams.resize is not None else None
    size: tuple[int, int] | None = None
    if events is not None:
        with contextlib.suppress(TimeoutError):
            size = await asyncio.wait_for(events.next(), INITIAL_SIZE_WAIT)
    try:
        argv = argv_for(size)
    except Exception as e:  # noqa: BLE001 - reported to the client like upstream's exec errors
        return internal_error_status(f"error executing command in container: {e}")
    try:
        if opts.tty:
            master, slave = os.openpty()
            _tty.setraw(slave)  # the container's terminal does the line discipline; ours passes bytes through
            _set_winsize(slave, *(size or (80, 24)))
            try:
                proc = await asyncio.create_subprocess_exec(
                    *argv, stdin=slave, stdout=slave, stderr=slave, start_new_session=True,
                    preexec_fn=_make_controlling_tty)
            finally:
                os.close(slave)
        else:
            PIPE, NULL = asyncio.subprocess.PIPE, asyncio.subprocess.DEVNULL
            proc = await asyncio.create_subprocess_exec(
                *argv, stdin=PIPE if opts.stdin else NULL, stdout=PIPE if opts.stdout else NULL,
                stderr=PIPE if opts.stderr else NULL, start_new_session=True)
    except OSError as e:
        if master >= 0:
            os.close(master)
        return internal_error_status(f"error executing command in container: {e}")

    tasks: list[asyncio.Task[Any]] = []
    outputs: list[asyncio.Task[Any]] = []
    loop = asyncio.get_running_loop()
    pty: _PtyMaster | None = None
    try:
        if opts.tty:
            pty = _PtyMaster(master)
            outputs.append(loop.create_task(_copy_out(pty.read, streams.stdout)))
            if streams.stdin is not None:
                tasks.append(loop.create_task(_copy_in(streams.stdin, pty.write, None)))
            if events is not None:
                # the kernel signals SIGWINCH to the terminal's foreground group (runc passes it on)
                tasks.append(loop.create_task(_pump_resize(events, lambda w, h: _set_winsize(master, w, h))))
        else:
            if proc.stdout is not None:
                outputs.append(loop.create_task(_copy_out(lambda: proc.stdout.read(65536), streams.stdout)))  # type: ignore[union-attr]
            if proc.stderr is not None:
                outputs.append(loop.create_task(_copy_out(lambda: proc.stderr.read(65536), streams.stderr)))  # type: ignore[union-attr]
            if streams.stdin is not None and proc.stdin is not None:
                stdin_w = proc.stdin

                async def write_stdin(data: bytes) -> None:
                    stdin_w.write(data)
                    await stdin_w.drain()

                tasks.append(loop.create_task(_copy_in(streams.stdin, write_stdin, stdin_w.close)))
        waiter = loop.create_task(proc.wait())
        gone = loop.create_task(streams.gone.wait())
        await asyncio.wait({waiter, gone}, return_when=asyncio.FIRST_COMPLETED)
        if not waiter.done():
            # the client left mid-command: hang up on it, as closing its terminal would
            _signal(proc, signal.SIGHUP)
            try:
                await asyncio.wait_for(asyncio.shield(waiter), 5)
            except TimeoutError:
                _signal(proc, signal.SIGKILL)
                await waiter
        gone.cancel()
        rc = waiter.result()
        if outputs:
            _, pending = await asyncio.wait(outputs, timeout=EXIT_GRACE)
            for t in pending:
                t.cancel()
    finally:
        for t in tasks + outputs:
            t.cancel()
        for t in tasks + outputs:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await t
        if master >= 0:
            os.close(master)
    if rc < 0:
        rc = 128 - rc  # killed by a signal, as a shell reports it
    return success_status() if rc == 0 else exit_status(display_cmd, rc)


def _signal(proc: asyncio.subprocess.Process, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, OSError):
        os.killpg(proc.pid, sig)


async def _copy_in(reader: Reader, write: Callable[[bytes], Awaitable[None]] | None,
                   close: Callable[[], object] | None) -> None:
    try:
        while True:
            data = await reader.read()
            if not data:
                break
            if write is not None:
                try:
                    await write(data)
                except (ConnectionError, OSError):
                    # the command stopped reading: keep consuming the client's input so it cannot hold up
                    # the connection the other streams share
                    write = None
    finally:
        if close is not None:
            with contextlib.suppress(Exception):
                close()


# ---------------------------------------------------------------------------- attaching


async def run_attach(streams: Streams, log_path: str, is_running: Callable[[], Awaitable[bool]]) -> dict[str, Any]:
    """Stream what the container prints from now on until it exits (or the client leaves), from its log.

    The fallback for a runtime whose shim serves no attach socket (run_attach_shim): the
    shim writes the container's stdio to the CRI log, so attach follows that log from its
    current end; there is no way into the container's stdin, so client input is dropped.
    """
    from .logs import LogOptions, stream_log

    loop = asyncio.get_running_loop()
    tasks: list[asyncio.Task[Any]] = []
    if streams.stdin is not None:
        tasks.append(loop.create_task(_discard(streams.stdin)))
    if streams.resize is not None:
        tasks.append(loop.create_task(_discard(streams.resize)))
    targets = {"stdout": streams.stdout, "stderr": streams.stderr if not streams.opts.tty else streams.stdout}

    async def write_stream(stream: str, data: bytes) -> None:
        w = targets.get(stream)
        if w is not None:
            await w.write(data)

    follow = loop.create_task(stream_log(log_path, LogOptions(follow=True), None, is_running, from_end=True,
                                         stop=streams.gone, write_stream=write_stream))
    gone = loop.create_task(streams.gone.wait())
    try:
        await asyncio.wait({follow, gone}, return_when=asyncio.FIRST_COMPLETED)
        if follow.done() and follow.exception() is not None and not isinstance(
                follow.exception(), (ConnectionError, OSError)):
            raise follow.exception()  # type: ignore[misc]
    finally:
        for t in (*tasks, follow, gone):
            t.cancel()
        for t in (*tasks, follow, gone):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await t
    for w in (streams.stdout, streams.stderr):
        if w is not None:
            with contextlib.suppress(Exception):
                await w.close()
    return success_status()


_FRAME = struct.Struct(">BI")
_OUT_STDOUT, _OUT_STDERR, _OUT_ATTACHED = 1, 2, 5
_IN_STDIN, _IN_CLOSE, _IN_RESIZE = 0, 3, 4


async def _open_unix(path: str) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    # through the directory's fd: a state dir's path may not fit in sun_path's 108 bytes
    dirfd = os.open(os.path.dirname(path), os.O_PATH | os.O_DIRECTORY)
    try:
        return await asyncio.open_unix_connection(f"/proc/self/fd/{dirfd}/{os.path.basename(path)}")
    finally:
        os.close(dirfd)


async def run_attach_shim(streams: Streams, socket_path: str) -> dict[str, Any] | None:
    """Attach through the container's shim: its output as it is written, the client's stdin and terminal sizes
    into it (the shim keeps a `stdin: true` container's stdin open, and a TTY container's pty master).

    None when the shim did not take us (the container just exited: the caller answers that it is not running, so
    kubectl prints the log). A connect() to its socket succeeds as soon as the kernel queues it, before the shim
    accepts; when the container exits first, the shim closes its socket over the queued connection, which hangs up
    without a frame. The shim's first frame on a connection it took says so (an older shim's sends none: then any
    frame at all does).
    """
    try:
        reader, writer = await _open_unix(socket_path)
    except OSError:
        return None
    taken = False
    loop = asyncio.get_running_loop()
    tty = streams.opts.tty
    targets = {_OUT_STDOUT: streams.stdout, _OUT_STDERR: streams.stdout if tty else streams.stderr}
    wlock = asyncio.Lock()

    async def send(kind: int, data: bytes) -> None:
        async with wlock:
            writer.write(_FRAME.pack(kind, len(data)) + data)
            await writer.drain()

    async def output() -> None:
        nonlocal taken
        while True:
            try:
                head = await reader.readexactly(_FRAME.size)
                kind, n = _FRAME.unpack(head)
                data = await reader.readexactly(n)
            except (asyncio.IncompleteReadError, ConnectionError, OSError):
                return  # the container exited (its shim hung up)
            taken = True
            w = targets.get(kind)
            if w is not None:
                try:
                    await w.write(data)
                except (ConnectionError, OSError, RuntimeError):
                    targets[kind] = None

    async def stdin_in() -> None:
        assert streams.stdin is not None
        await send(_IN_STDIN, b"")  # this client holds stdin (stdinOnce closes it when we leave)
        while data := await streams.stdin.read():
            await send(_IN_STDIN, data)
        await send(_IN_CLOSE, b"")

    async def resizes() -> None:
        assert streams.resize is not None
        events = ResizeEvents(streams.resize)
        while (size := await events.next()) is not None:
            await send(_IN_RESIZE, struct.pack(">HH", min(size[0], 65535), min(size[1], 65535)))

    tasks: list[asyncio.Task[Any]] = []
    if streams.stdin is not None:
        tasks.append(loop.create_task(stdin_in()))
    if streams.resize is not None:
        tasks.append(loop.create_task(resizes()))
    out = loop.create_task(output())
    gone = loop.create_task(streams.gone.wait())
    unaccepted = False
    try:
        done, _ = await asyncio.wait({out, gone}, return_when=asyncio.FIRST_COMPLETED)
        unaccepted = out in done and not taken
    finally:
        for t in (*tasks, out, gone):
            t.cancel()
        for t in (*tasks, out, gone):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await t
        writer.close()
        with contextlib.suppress(Exception):
            await writer.wait_closed()
    if unaccepted:
        return None  # the streams stay open for the caller's error status
    for w in (streams.stdout, streams.stderr):
        if w is not None:
            with contextlib.suppress(Exception):
                await w.close()
    return success_status()


async def _discard(reader: Reader) -> None:
    while await reader.read():
        pass

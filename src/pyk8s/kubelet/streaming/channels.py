"""The "channel.k8s.io" WebSocket subprotocols: numbered channels multiplexed over one WebSocket.

Binary variants prefix each message with the channel byte; base64 variants send text
messages of '0'+channel followed by base64 data. v5 adds a control message
[255, channel]: the peer closed its side of that channel (stdin EOF for `kubectl cp`).
Which channel numbers mean what is the caller's business (exec: 0 stdin, 1 stdout,
2 stderr, 3 error, 4 resize; port-forward: 2i data and 2i+1 error for the i-th port).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import logging

from aiohttp import WSMsgType, web

log = logging.getLogger("pyk8s.kubelet.streaming")

V5 = "v5.channel.k8s.io"
V4 = "v4.channel.k8s.io"
V4_BASE64 = "v4.base64.channel.k8s.io"
V1 = "channel.k8s.io"
V1_BASE64 = "base64.channel.k8s.io"
CLOSE_SIGNAL = 255

# The kubelet's exec/attach WebSocket subprotocols, in the order we prefer them ("" = none asked for: binary v1).
EXEC_PROTOCOLS = (V5, V4, V4_BASE64, V1, V1_BASE64)
# Port-forward over WebSocket (one connection per port, as the kubelet's websocket.go).
PORTFORWARD_PROTOCOLS = (V4, V4_BASE64, V1, V1_BASE64)


def protocol_refusal(offered_header: str, supported: tuple[str, ...]) -> str | None:
    """Why a WebSocket handshake offering these subprotocols is refused (upstream answers 403), or None.

    Offering none is fine (the binary channel protocol without a name)."""
    offered = [p.strip() for p in offered_header.split(",") if p.strip()]
    if not offered or any(p in supported for p in offered):
        return None
    return (f"requested protocol(s) are not supported: [{' '.join(offered)}]; "
            f"supports [{' '.join(('', *supported))}]")


class ChannelReader:
    def __init__(self, queue: asyncio.Queue[bytes]) -> None:
        self._q = queue
        self._eof = False

    async def read(self) -> bytes:
        if self._eof:
            return b""
        data = await self._q.get()
        if not data:
            self._eof = True
        return data


class ChannelWriter:
    def __init__(self, mux: WSChannels, channel: int) -> None:
        self.mux = mux
        self.channel = channel
        self.closed = False

    async def write(self, data: bytes) -> None:
        if self.closed:
            raise ConnectionResetError(f"write on closed channel {self.channel}")
        await self.mux.send(self.channel, data)

    async def close(self) -> None:
        # Nothing on the wire: the kubelet never half-closes its output channels (a v5 client logs an
        # "unknown stream id 255" error for a CLOSE signal it did not expect); the connection's end says it.
        self.closed = True


class WSChannels:
    """Demultiplexes a prepared aiohttp WebSocketResponse into per-channel readers and writers."""

    def __init__(self, ws: web.WebSocketResponse, protocol: str, readable: list[int], queue_size: int = 32) -> None:
        self.ws = ws
        self.protocol = protocol
        self.base64 = "base64" in protocol
        self.queues: dict[int, asyncio.Queue[bytes]] = {ch: asyncio.Queue(queue_size) for ch in readable}
        self._wlock = asyncio.Lock()
        self._task: asyncio.Task[None] | None = None
        self.closed = asyncio.Event()

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._read_loop(), name="ws-channels")

    def reader(self, channel: int) -> ChannelReader:
        return ChannelReader(self.queues[channel])

    def writer(self, channel: int) -> ChannelWriter:
        return ChannelWriter(self, channel)

    def abandon(self, channel: int) -> None:
        """Nobody reads `channel` any more: drop what arrives on it instead of holding up the connection."""
        q = self.queues.pop(channel, None)
        while q is not None and not q.empty():
            q.get_nowait()

    async def _read_loop(self) -> None:
        try:
            async for msg in self.ws:
                # Upstream's kubelet reads every frame as bytes whatever its opcode, so a text frame carries
                # a channel too (the official Python client sends stdin as text: '\x00' + data).
                if msg.type == WSMsgType.BINARY:
                    data: bytes = msg.data
                elif msg.type == WSMsgType.TEXT:
                    data = msg.data.encode()
                else:
                    continue
                if self.base64 and data:
                    ch = data[0] - ord("0")
                    if not 0 <= ch < CLOSE_SIGNAL:
                        continue
                    try:
                        payload = base64.b64decode(data[1:], validate=False)
                    except (binascii.Error, ValueError):
                        log.info("bad base64 frame on channel %d", ch)
                        continue
                    data = bytes([ch]) + payload
                if not data:
                    continue
                ch, payload = data[0], data[1:]
                if ch == CLOSE_SIGNAL and self.protocol == V5:
                    if payload and payload[0] in self.queues:
                        await self.queues[payload[0]].put(b"")
                    continue
                q = self.queues.get(ch)
                if q is None or not payload:
                    continue  # not a readable channel here: ignored, as upstream
                await q.put(payload)
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            self.closed.set()
            for q in self.queues.values():
                # the connection is gone: every reader sees EOF (make room if a reader stopped reading)
                while q.full():
                    q.get_nowait()
                q.put_nowait(b"")

    async def send(self, channel: int, data: bytes) -> None:
        if self.base64:
            await self._send_str(chr(ord("0") + channel) + base64.b64encode(data).decode())
        else:
            await self.send_raw(bytes([channel]) + data)

    async def send_raw(self, frame: bytes) -> None:
        async with self._wlock:
            if self.ws.closed:
                raise ConnectionResetError("websocket closed")
            await self.ws.send_bytes(frame)

    async def _send_str(self, text: str) -> None:
        async with self._wlock:
            if self.ws.closed:
                raise ConnectionResetError("websocket closed")
            await self.ws.send_str(text)

    async def close(self) -> None:
        # Stop our reader first: with a receive() pending, aiohttp's close() would drop the connection
        # without waiting for the peer's close frame (the client then sees 1006, not a normal closure).
        if self._task is not None and self._task is not asyncio.current_task():
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.ws.close(), 5)

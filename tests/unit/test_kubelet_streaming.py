"""Pure parts of the kubelet's streaming server: CRI log reading and SPDY framing."""

from __future__ import annotations

import asyncio
import os

import pytest

from pyk8s.kubelet.streaming import spdy
from pyk8s.kubelet.streaming.logs import LogOptions, parse_rfc3339_ns, stream_log, tail_offset


def _write(path, records):
    with open(path, "ab") as f:
        for ts, stream, tag, text in records:
            f.write(f"{ts} {stream} {tag} {text}\n".encode())


def _logs(path, **q) -> bytes:
    out = bytearray()

    async def write(b: bytes) -> None:
        out.extend(b)

    asyncio.run(stream_log(str(path), LogOptions.from_query({k: str(v) for k, v in q.items()}), write))
    return bytes(out)


T1, T2, T3 = "2024-05-01T10:00:00.000000001Z", "2024-05-01T10:00:01.500000000Z", "2024-05-01T10:00:02.000000000Z"


def test_partial_lines_timestamps_since_tail_limit(tmp_path):
    p = tmp_path / "0.log"
    _write(p, [(T1, "stdout", "P", "abc"), (T1, "stdout", "F", "def"), (T2, "stderr", "F", "oops"),
               (T3, "stdout", "F", "last"), (T3, "stdout", "F", "")])
    assert _logs(p) == b"abcdef\noops\nlast\n\n"
    # a partial line is one line: its continuation gets no second timestamp
    assert _logs(p, timestamps="true") == f"{T1} abcdef\n{T2} oops\n{T3} last\n{T3} \n".encode()
    assert _logs(p, sinceTime="2024-05-01T10:00:01Z") == b"oops\nlast\n\n"
    assert _logs(p, sinceTime="2024-05-01T12:00:01+02:00") == b"oops\nlast\n\n"
    assert _logs(p, tailLines=2) == b"last\n\n"  # records are counted, as upstream
    assert _logs(p, tailLines=100) == b"abcdef\noops\nlast\n\n"
    assert _logs(p, limitBytes=5) == b"abcde"
    assert _logs(p, stream="Stderr") == b"oops\n"
    with pytest.raises(ValueError, match="at most one of"):
        LogOptions.from_query({"sinceSeconds": "1", "sinceTime": T1})


def test_tail_offset(tmp_path):
    p = tmp_path / "f"
    p.write_bytes(b"a\nbb\nccc\n")
    fd = os.open(p, os.O_RDONLY)
    try:
        assert [tail_offset(fd, 9, n) for n in (0, 1, 2, 3, 4)] == [9, 5, 2, 0, 0]
    finally:
        os.close(fd)


def test_rfc3339():
    assert parse_rfc3339_ns("1970-01-01T00:00:01.5Z") == 1_500_000_000
    assert parse_rfc3339_ns("1970-01-01T01:00:00+01:00") == 0


def test_follow_across_rotation(tmp_path):
    p = tmp_path / "0.log"
    _write(p, [(T1, "stdout", "F", "before")])
    out = bytearray()
    running = {"yes": True}

    async def write(b: bytes) -> None:
        out.extend(b)

    async def is_running() -> bool:
        return running["yes"]

    async def go():
        task = asyncio.create_task(stream_log(str(p), LogOptions(follow=True), write, is_running))
        await asyncio.sleep(0.1)
        _write(p, [(T2, "stdout", "F", "late in old file")])
        os.rename(p, str(p) + ".20240501-100000")  # the shim rotates: rename, then a new file
        _write(p, [(T3, "stdout", "F", "in new file")])
        await asyncio.sleep(0.6)
        running["yes"] = False
        await asyncio.wait_for(task, 5)

    asyncio.run(go())
    assert bytes(out) == b"before\nlate in old file\nin new file\n"


def test_spdy_header_codec_and_frames():
    a, b = spdy.HeaderCodec(), spdy.HeaderCodec()
    for headers in ({"streamtype": ["error"]}, {"streamtype": ["data"], "port": ["80"], "requestid": ["0"]}, {}):
        # one compression context per direction: blocks decode in order
        assert b.decode(a.encode(headers)) == headers
    assert len(spdy.DICTIONARY) == 1423
    frames = spdy.FrameReader().feed(spdy.data_frame(5, b"xyz", fin=True) + spdy.control_frame(spdy.PING, 0, b"\0\0\0\1"))
    assert [(f.control, f.stream_id, f.flags, f.payload) for f in frames] == [
        (False, 5, spdy.FLAG_FIN, b"xyz"), (True, 0, 0, b"\0\0\0\1")]
    r = spdy.FrameReader()
    whole = spdy.data_frame(3, b"a" * 100)
    assert r.feed(whole[:50]) == [] and len(r.feed(whole[50:])) == 1


def test_spdy_session_pair():
    """A client and a server session over a socket pair: stream setup, data both ways, FIN, ping."""

    async def pair():
        import socket

        x, y = socket.socketpair()
        cr, cw = await asyncio.open_connection(sock=x)
        sr, sw = await asyncio.open_connection(sock=y)
        client = spdy.Session(spdy.StreamsConn(cr, cw), server=False)
        server = spdy.Session(spdy.StreamsConn(sr, sw), server=True)
        client.start()
        server.start()
        st = await client.open_stream({"streamType": "stdin", "X": "1"})
        peer = await server.accept()
        assert peer is not None and peer.id == 1 and peer.header("streamtype") == "stdin" and peer.header("x") == "1"
        await asyncio.wait_for(st.replied.wait(), 5)
        await st.write(b"hello" * 20000)
        await st.close()
        got = b""
        while chunk := await peer.read():
            got += chunk
        assert got == b"hello" * 20000
        await peer.write(b"back")
        await peer.close()
        assert await st.read() == b"back" and await st.read() == b""
        await client.ping()
        await client.close()
        assert await server.accept() is None
        await server.close()

    asyncio.run(pair())

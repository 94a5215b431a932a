"""Reading CRI-format container logs for `kubectl logs` (the kubelet's containerLogs endpoint).

Each record is `<RFC3339Nano> <stdout|stderr> <F|P> <text>`; P marks a partial line
continued by the next record. As upstream's kuberuntime log reader: only the current
file is read (rotated files are not), `tailLines` counts records from the end,
`sinceTime`/`sinceSeconds` drop older records, `timestamps` prefixes each new line with
the record's time, `limitBytes` caps the output, and `follow` keeps reading (across
rotations) until the container is no longer running.
"""

from __future__ import annotations

import asyncio
import calendar
import os
import re
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass

_TS = re.compile(r"^(\d{4})-(\d\d)-(\d\d)[Tt](\d\d):(\d\d):(\d\d)(?:\.(\d{1,9}))?([Zz]|[+-]\d\d:\d\d)$")

FOLLOW_POLL_MIN = 0.02
FOLLOW_POLL_MAX = 0.25
READ_CHUNK = 64 * 1024


def parse_rfc3339_ns(s: str) -> int:
    """RFC 3339 (optionally with fractional seconds) to integer nanoseconds since the epoch."""
    m = _TS.match(s.strip())
    if not m:
        raise ValueError(f"invalid RFC3339 time {s!r}")
    y, mo, d, h, mi, sec = (int(m.group(i)) for i in range(1, 7))
    frac = (m.group(7) or "").ljust(9, "0")
    secs = calendar.timegm((y, mo, d, h, mi, sec, 0, 0, 0))
    tz = m.group(8)
    if tz not in ("Z", "z"):
        sign = 1 if tz[0] == "+" else -1
        secs -= sign * (int(tz[1:3]) * 3600 + int(tz[4:6]) * 60)
    return secs * 1_000_000_000 + int(frac)


def parse_record(line: bytes) -> tuple[bytes, str, bool, bytes] | None:
    """(timestamp token, stream, partial, content) of one record, or None when it is not a CRI record."""
    parts = line.split(b" ", 3)
    if len(parts) < 3:
        return None
    ts, stream, tag = parts[0], parts[1], parts[2]
    if stream not in (b"stdout", b"stderr"):
        return None
    return ts, stream.decode(), tag == b"P", parts[3] if len(parts) == 4 else b""


def _bool(v: str | None) -> bool:
    if v is None:
        return False
    low = v.lower()
    if low in ("1", "t", "true"):
        return True
    if low in ("", "0", "f", "false"):
        return False
    raise ValueError(f'strconv.ParseBool: parsing "{v}": invalid syntax')


def _int(q: Mapping[str, str], name: str) -> int | None:
    v = q.get(name)
    if v is None or v == "":
        return None
    try:
        return int(v)
    except ValueError:
        raise ValueError(f'{name}: strconv.ParseInt: parsing "{v}": invalid syntax') from None


@dataclass
class LogOptions:
    follow: bool = False
    previous: bool = False
    timestamps: bool = False
    since_ns: int | None = None
    tail_lines: int | None = None
    limit_bytes: int | None = None
    stream: str = "All"  # All, Stdout, Stderr (PodLogOptions.stream, 1.32+)

    @classmethod
    def from_query(cls, q: Mapping[str, str], now: float | None = None) -> LogOptions:
        o = cls(follow=_bool(q.get("follow")), previous=_bool(q.get("previous")),
                timestamps=_bool(q.get("timestamps")))
        o.tail_lines = _int(q, "tailLines")
        o.limit_bytes = _int(q, "limitBytes")
        since_s = _int(q, "sinceSeconds")
        since_t = q.get("sinceTime")
        if since_s is not None and since_t:
            raise ValueError("at most one of `sinceTime` or `sinceSeconds` may be specified")
        if since_s is not None:
            if since_s < 1:
                raise ValueError("sinceSeconds: Invalid value: must be greater than 0")
            o.since_ns = int(((now if now is not None else time.time()) - since_s) * 1e9)
        elif since_t:
            o.since_ns = parse_rfc3339_ns(since_t)
        if o.tail_lines is not None and o.tail_lines < 0:
            raise ValueError("tailLines: Invalid value: must be greater than or equal to 0")
        if o.limit_bytes is not None and o.limit_bytes < 1:
            raise ValueError("limitBytes: Invalid value: must be greater than 0")
        stream = q.get("stream") or "All"
        if stream not in ("All", "Stdout", "Stderr"):
            raise ValueError(f'stream: Unsupported value: "{stream}": supported values: "All", "Stderr", "Stdout"')
        if stream != "All" and o.tail_lines is not None:
            raise ValueError("tailLines: Forbidden: must not be specified when stream is not All")
        o.stream = stream
        return o


def tail_offset(fd: int, size: int, n: int) -> int:
    """Offset where the last `n` newline-terminated records of the first `size` bytes of `fd` start."""
    if n <= 0:
        return size
    count = 0
    # the newline ending the last record is not a record boundary to count
    pos = size - 1 if size > 0 and os.pread(fd, 1, size - 1) == b"\n" else size
    while pos > 0:
        step = min(READ_CHUNK, pos)
        block = os.pread(fd, step, pos - step)
        i = len(block)
        while True:
            i = block.rfind(b"\n", 0, i)
            if i < 0:
                break
            count += 1
            if count == n:
                return pos - step + i + 1
        pos -= step
    return 0


class _Formatter:
    """Turns records into what the client sees, applying stream/since/timestamps/limit."""

    def __init__(self, opts: LogOptions) -> None:
        self.opts = opts
        self.want = {"All": None, "Stdout": "stdout", "Stderr": "stderr"}[opts.stream]
        self.partial: dict[str, bool] = {"stdout": False, "stderr": False}  # mid-line per stream
        self.left = opts.limit_bytes
        self.done = False

    def format(self, lines: list[bytes]) -> list[tuple[str, bytes]]:
        """Output for these records as (stream, bytes) runs, in order."""
        runs: list[tuple[str, bytearray]] = []
        since = self.opts.since_ns
        for line in lines:
            rec = parse_record(line)
            if rec is None:
                continue
            ts, stream, partial, content = rec
            if self.want is not None and stream != self.want:
                continue
            if since is not None:
                try:
                    if parse_rfc3339_ns(ts.decode()) < since:
                        continue
                except ValueError:
                    continue
            if not runs or runs[-1][0] != stream:
                runs.append((stream, bytearray()))
            out = runs[-1][1]
            if self.opts.timestamps and not self.partial[stream]:
                out += ts + b" "
            out += content
            if not partial:
                out += b"\n"
            self.partial[stream] = partial
        result: list[tuple[str, bytes]] = []
        for stream, out in runs:
            if self.left is not None:
                if len(out) >= self.left:
                    del out[self.left:]
                    self.done = True
                self.left -= len(out)
            if out:
                result.append((stream, bytes(out)))
            if self.done:
                break
        return result


async def stream_log(path: str, opts: LogOptions, write: Callable[[bytes], Awaitable[None]] | None,
                     is_running: Callable[[], Awaitable[bool]] | None = None, *, from_end: bool = False,
                     stop: asyncio.Event | None = None,
                     write_stream: Callable[[str, bytes], Awaitable[None]] | None = None) -> None:
    """Write the log at `path` as `opts` says, to `write`, or per stream to `write_stream` (attach).

    `from_end` starts at the current end of the file instead of its beginning (attach).
    """
    fmt = _Formatter(opts)
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        if not opts.follow:
            return
        fd = -1
    pending = b""
    delay = FOLLOW_POLL_MIN
    rotated = False
    try:
        if fd >= 0:
            size = os.fstat(fd).st_size
            if from_end:
                pos = size
            elif opts.tail_lines is not None:
                pos = await asyncio.to_thread(tail_offset, fd, size, opts.tail_lines)
            else:
                pos = 0
        else:
            pos = 0
        while True:
            chunk = os.pread(fd, READ_CHUNK, pos) if fd >= 0 else b""
            if chunk:
                pos += len(chunk)
                buf = pending + chunk
                cut = buf.rfind(b"\n")
                if cut < 0:
                    pending = buf
                    continue
                pending = buf[cut + 1:]
                runs = fmt.format(buf[:cut].split(b"\n"))
                if write_stream is not None:
                    for stream, data in runs:
                        await write_stream(stream, data)
                elif runs and write is not None:
                    await write(b"".join(data for _, data in runs))
                if fmt.done:
                    return
                delay = FOLLOW_POLL_MIN
                continue
            # at the end of what is written so far
            if not opts.follow:
                return
            if stop is not None and stop.is_set():
                return
            if rotated:
                # the old file is read to its end (after the rename was seen): go on with the new one
                rotated = False
                if fd >= 0:
                    os.close(fd)
                fd = -1
                fd = os.open(path, os.O_RDONLY)
                pos = 0
                pending = b""
                continue
            # rotated (renamed away and recreated) or truncated: read the old file once more, then switch
            try:
                st = os.stat(path)
                cur = os.fstat(fd) if fd >= 0 else None
                if cur is None or (st.st_ino, st.st_dev) != (cur.st_ino, cur.st_dev) or st.st_size < pos:
                    rotated = True
                    continue
            except FileNotFoundError:
                pass
            if is_running is not None and not await is_running():
                # one last look: the writer may have flushed between our read and its exit
                if fd >= 0 and os.fstat(fd).st_size > pos:
                    continue
                return
            await asyncio.sleep(delay)
            delay = min(delay * 2, FOLLOW_POLL_MAX)
    finally:
        if fd >= 0:
            os.close(fd)

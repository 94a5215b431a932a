"""The audit log backend: event lines to a file (rotated as upstream's lumberjack does) or stdout.

Lines are gathered on the event loop and handed to one writer thread every FLUSH_DELAY
seconds (or sooner past FLUSH_LINES), so a request pays for encoding its events and an
append to a list, never for a write(2) or a rotation; handing over once per turn of the loop
instead woke the thread so often that the GIL switches cost more than the writes (bench api
with every request audited at Metadata). Upstream's log backend writes in the request's
goroutine ("blocking" mode); the thread keeps that order and loses nothing on a clean stop.

Rotation follows gopkg.in/natefinch/lumberjack.v2, which upstream's --audit-log-* flags
drive: before a write that would take the file past --audit-log-maxsize megabytes (100
when 0), the file is renamed to `<name>-<UTC time 2006-01-02T15-04-05.000><ext>` beside it
and a new one is opened with the old one's mode; then backups beyond --audit-log-maxbackup
(0: all kept) and older than --audit-log-maxage days (0: no limit) are removed, and with
--audit-log-compress gzipped. API worker processes (--api-workers) append to the same file:
a rotation takes a lock on the directory, and a writer that finds the file renamed under it
reopens the path before writing.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import errno
import fcntl
import gzip
import logging
import os
import queue
import re
import shutil
import threading

__all__ = ["LogBackend", "backup_name", "DEFAULT_MAX_SIZE_MB"]

log = logging.getLogger("pyk8s.apiserver.audit")

DEFAULT_MAX_SIZE_MB = 100  # lumberjack's default when MaxSize is 0
_MB = 1024 * 1024
FLUSH_DELAY = 0.01  # seconds an event waits at most before its batch goes to the writer thread
FLUSH_LINES = 1024
_BACKUP_TIME = "%Y-%m-%dT%H-%M-%S"


def backup_name(path: str, when: dt.datetime) -> str:
    """lumberjack's backupName: <dir>/<name without ext>-<2006-01-02T15-04-05.000><ext>, in UTC."""
    d, base = os.path.split(path)
    stem, ext = os.path.splitext(base)
    stamp = when.strftime(_BACKUP_TIME) + f".{when.microsecond // 1000:03d}"
    return os.path.join(d, f"{stem}-{stamp}{ext}")


class LogBackend:
    """Writes audit lines (bytes ending in a newline) in order, from a thread of its own."""

    def __init__(self, path: str, max_age_days: int = 0, max_backups: int = 0, max_size_mb: int = 0,
                 compress: bool = False) -> None:
        self.path = path
        self.stdout = path == "-"
        self.max_age_days = max_age_days
        self.max_backups = max_backups
        self.max_size = (max_size_mb or DEFAULT_MAX_SIZE_MB) * _MB
        self.compress = compress
        self._pending: list[bytes] = []
        self._queue: queue.SimpleQueue[list[bytes] | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._fd = -1
        self._ino = -1
        self._loop: asyncio.AbstractEventLoop | None = None
        self._timer: asyncio.TimerHandle | None = None

    # ---- on the event loop ------------------------------------------------------------------
    def open(self, loop: asyncio.AbstractEventLoop) -> None:
        """Create the file (0600, its directory 0700 as upstream's ensureLogFile) and start writing."""
        if not self.stdout:
            _make_dirs(os.path.dirname(os.path.abspath(self.path)))
            self._reopen()
        self._loop = loop
        self._thread = threading.Thread(target=self._run, name="audit-log", daemon=True)
        self._thread.start()

    def write(self, line: bytes) -> None:
        pending = self._pending
        pending.append(line)
        if len(pending) >= FLUSH_LINES:
            self._flush()
        elif self._timer is None and self._loop is not None:
            self._timer = self._loop.call_later(FLUSH_DELAY, self._flush)

    def _flush(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._pending:
            batch, self._pending = self._pending, []
            self._queue.put(batch)

    def close(self) -> None:
        """Write what is pending and stop the thread (the server's stop)."""
        self._flush()
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join(10)
            self._thread = None
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    # ---- the writer thread ------------------------------------------------------------------
    def _run(self) -> None:
        while True:
            batch = self._queue.get()
            if batch is None:
                return
            try:
                if self.stdout:
                    _write_all(1, b"".join(batch))
                else:
                    self._write_file(batch)
            except OSError as e:  # as upstream's HandlePluginError: the events are lost, the server goes on
                log.error("Error in audit plugin 'log' affecting %d audit events: %s", len(batch), e)

    def _reopen(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
        self._ino = os.fstat(self._fd).st_ino

    def _write_file(self, batch: list[bytes]) -> None:
        try:
            if os.stat(self.path).st_ino != self._ino:
                self._reopen()  # another API process rotated the file
        except FileNotFoundError:
            self._reopen()
        size = os.fstat(self._fd).st_size
        chunk: list[bytes] = []
        chunk_len = 0
        for line in batch:
            n = len(line)
            if n > self.max_size:
                log.error("Error in audit plugin 'log' affecting 1 audit events: "
                          "write length %d exceeds maximum file size %d", n, self.max_size)
                continue
            if size + chunk_len + n > self.max_size:
                if chunk:
                    _write_all(self._fd, b"".join(chunk))
                    chunk, chunk_len = [], 0
                size = self._rotate(n)
            chunk.append(line)
            chunk_len += n
        if chunk:
            _write_all(self._fd, b"".join(chunk))

    def _rotate(self, need: int) -> int:
        """Rename the file to a backup and open a new one; the new file's size."""
        dirfd = os.open(os.path.dirname(os.path.abspath(self.path)), os.O_RDONLY | os.O_CLOEXEC)
        try:
            fcntl.flock(dirfd, fcntl.LOCK_EX)
            try:
                st = os.stat(self.path)
            except FileNotFoundError:
                st = None
            if st is not None and st.st_ino == self._ino and st.st_size + need > self.max_size:
                os.rename(self.path, backup_name(self.path, dt.datetime.now(dt.UTC)))
                fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC,
                             st.st_mode & 0o777)
                os.fchmod(fd, st.st_mode & 0o777)  # the old file's mode, whatever the umask
                os.close(fd)
            self._reopen()  # ours, or the one another process made
            self._mill()
        finally:
            os.close(dirfd)  # releases the lock
        return os.fstat(self._fd).st_size

    def _mill(self) -> None:
        """Remove backups beyond max_backups or older than max_age_days; compress the rest if asked."""
        d, base = os.path.split(os.path.abspath(self.path))
        stem, ext = os.path.splitext(base)
        pattern = re.compile(re.escape(stem) + r"-(\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d\.\d{3})" + re.escape(ext)
                             + r"(\.gz)?$")
        backups: list[tuple[dt.datetime, str]] = []
        for name in os.listdir(d):
            m = pattern.match(name)
            if m:
                try:
                    when = dt.datetime.strptime(m.group(1), _BACKUP_TIME + ".%f").replace(tzinfo=dt.UTC)
                except ValueError:
                    continue
                backups.append((when, name))
        backups.sort(reverse=True)  # newest first
        remove: list[str] = []
        if self.max_backups > 0:
            kept: set[str] = set()
            for _, name in backups:
                key = name.removesuffix(".gz")  # a backup and its compressed form count once
                if key in kept or len(kept) < self.max_backups:
                    kept.add(key)
                else:
                    remove.append(name)
        if self.max_age_days > 0:
            cutoff = dt.datetime.now(dt.UTC) - dt.timedelta(days=self.max_age_days)
            remove += [name for when, name in backups if when < cutoff and name not in remove]
        for name in remove:
            _remove(os.path.join(d, name))
        if self.compress:
            for _, name in backups:
                if name not in remove and not name.endswith(".gz"):
                    _gzip(os.path.join(d, name))


def _make_dirs(path: str) -> None:
    """Go's os.MkdirAll(dir, 0700): every directory it creates is private, not only the last."""
    if os.path.isdir(path):
        return
    _make_dirs(os.path.dirname(path))
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def _remove(path: str) -> None:
    try:
        os.remove(path)
    except OSError as e:
        if e.errno != errno.ENOENT:
            log.error("audit log: cannot remove old backup %s: %s", path, e)


def _gzip(path: str) -> None:
    try:
        st = os.stat(path)
        # created with the backup's mode: the events are never readable by others, not even briefly
        fd = os.open(path + ".gz", os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, st.st_mode & 0o777)
        with open(path, "rb") as src, os.fdopen(fd, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb") as dst:
            shutil.copyfileobj(src, dst)
        os.remove(path)
    except FileNotFoundError:
        pass  # another API process compressed it first

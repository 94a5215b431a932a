"""Logging as upstream's components log with klog: a header per line and `--v` verbosity levels.

A line reads `I1127 11:02:36.123456   12345 kubelet node.py:218] "Successfully registered node" node="n1"`: the
severity letter (I, W, E, F) and month/day, the time, the process id, then our component (the
logger's package under pyk8s) with file and line, as klog's `file.go:123]`. Verbosity follows
upstream's conventions: 0 for startup, shutdown, components started, nodes registered and
warnings (`log.info`), 2 for per-object controller actions (`log.log(V2, ...)`), 3 and more
for requests (httplog) and detail; `log.debug` shows from 4 on.
"""

from __future__ import annotations

import logging
import sys
import time

V1, V2, V3 = logging.INFO - 1, logging.INFO - 2, logging.INFO - 3
_LETTER = {logging.DEBUG: "I", logging.INFO: "I", logging.WARNING: "W", logging.ERROR: "E", logging.CRITICAL: "F"}


def level_for(verbosity: int) -> int:
    """The logging threshold for `--v N`: V(n) records show when n <= N; debug from 4."""
    return logging.DEBUG if verbosity >= 4 else logging.INFO - max(verbosity, 0)


class KlogFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        letter = _LETTER.get(record.levelno) or ("I" if record.levelno < logging.WARNING else "E")
        t = time.localtime(record.created)
        micros = int((record.created % 1) * 1_000_000)
        name = record.name
        component = name[6:].split(".", 1)[0] if name.startswith("pyk8s.") else name
        head = (f"{letter}{t.tm_mon:02d}{t.tm_mday:02d} {t.tm_hour:02d}:{t.tm_min:02d}:{t.tm_sec:02d}.{micros:06d} "
                f"{record.process:7d} {component} {record.filename}:{record.lineno}] ")
        msg = head + record.getMessage()
        if record.exc_info:
            msg += "\n" + self.formatException(record.exc_info)
        return msg


def setup(verbosity: int) -> None:
    """Configure the root logger for a command's `--v` (stderr, klog's header)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(KlogFormatter())
    root = logging.getLogger()
    for h in list(root.handlers):
        root.removeHandler(h)
    root.addHandler(handler)
    root.setLevel(level_for(verbosity))
    for noisy in ("aiohttp.access", "asyncio"):  # their own request and debug lines: ours say it
        logging.getLogger(noisy).setLevel(max(logging.WARNING, level_for(verbosity)))

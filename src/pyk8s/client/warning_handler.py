"""Warning headers an API server sends, surfaced as client-go's default WarningHandler does.

client-go logs each `Warning: 299 - "<text>"` of every answer (rest.WarningLogger, klog's
warning level); kubectl prints them instead. Our components log them likewise, so a
controller that reads a deprecated version says so in the server's log, whether its watch
went over the network or in-process (apiserver/loopback.py).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable

__all__ = ["parse_warning", "log_warnings"]

log = logging.getLogger("pyk8s.client")

# RFC 7234's warn-value as upstream writes it: code, agent, quoted text (with \" and \\ escapes),
# an optional date we do not need
_WARNING = re.compile(r'^\s*(\d{3})\s+(\S+)\s+"((?:[^"\\]|\\.)*)"')


def parse_warning(value: str) -> str | None:
    """The text of one Warning header value; None for anything but code 299, as client-go keeps only those."""
    m = _WARNING.match(value)
    if m is None or m.group(1) != "299":
        return None
    return re.sub(r"\\(.)", r"\1", m.group(3))


def log_warnings(values: Iterable[str]) -> list[str]:
    """Log each 299 warning's text; returns the texts."""
    texts = [t for t in (parse_warning(v) for v in values) if t]
    for text in texts:
        log.warning("%s", text)
    return texts

"""Warning response headers, as upstream's apiserver writes them.

`299 - "<text>"`, with `"` and `\\` escaped (apimachinery's NewWarningHeader). The text goes on
the wire as UTF-8, as Go writes a string's bytes: an unknown field named `名前` is warned about
as `Warning: 299 - "unknown field \\"名前\\""`. A text upstream cannot put in a header (a control
character: CR and LF would split the response; not valid UTF-8) is dropped, as upstream's
warning recorder drops it, rather than fail the answer to a write that is already stored.
Each text is written once, and past 4096 runes in all every warning is cut to 256 runes, then
the rest dropped (the recorder's truncateAtTotalRunes / truncateItemRunes).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

__all__ = ["warning_value", "warning_headers", "add_warnings"]

# unicode.IsControl (C0, DEL, C1) and lone surrogates (not encodable as UTF-8)
_UNWRITABLE = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff]")
_WARNINGS_TOTAL_RUNES = 4 * 1024  # upstream's truncateAtTotalRunes
_WARNING_ITEM_RUNES = 256  # upstream's truncateItemRunes


def warning_value(text: str) -> str:
    """A Warning header value as upstream writes it: code 299, agent "-", quoted text with escapes."""
    return '299 - "' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def warning_headers(texts: Iterable[str]) -> list[str]:
    """Warning header values for texts, as upstream's warning recorder writes them (see the module)."""
    out: list[str] = []
    seen: set[str] = set()
    ordered: list[str] = []
    written = 0
    truncating = False
    for text in texts:
        if not text or text in seen:
            continue
        if truncating and written >= _WARNINGS_TOTAL_RUNES:
            break
        seen.add(text)
        ordered.append(text)
        if truncating:
            text = text[:_WARNING_ITEM_RUNES]
        if _UNWRITABLE.search(text) is not None:
            continue
        if written + len(text) <= _WARNINGS_TOTAL_RUNES or truncating:
            written += len(text)
            out.append(warning_value(text))
            continue
        truncating, written, out = True, 0, []  # replay all of them, truncated
        for t in ordered:
            t = t[:_WARNING_ITEM_RUNES]
            if _UNWRITABLE.search(t) is None:
                written += len(t)
                out.append(warning_value(t))
    return out


def add_warnings(headers: Any, texts: Iterable[str]) -> None:
    """Add the Warning headers upstream would send for texts to a response's headers."""
    for value in warning_headers(texts):
        headers.add("Warning", value)

"""Warning response headers, as upstream's apiserver writes them.

`299 - "<text>"`, with `"` and `\\` escaped (apimachinery's NewWarningHeader). The text goes on
the wire as UTF-8, as Go writes a string's bytes: an unknown field named `名前` is warned about
as `Warning: 299 - "unknown field \\"名前\\""`. A text upstream cannot put in a header (a control
character: CR and LF would split the response; not valid UTF-8) is dropped, as upstream's
warning recorder drops it, rather than fail the answer to a write that is already stored.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

__all__ = ["warning_value", "add_warnings"]

# unicode.IsControl (C0, DEL, C1) and lone surrogates (not encodable as UTF-8)
_UNWRITABLE = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff]")


def warning_value(text: str) -> str:
    """A Warning header value as upstream writes it: code 299, agent "-", quoted text with escapes."""
    return '299 - "' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def add_warnings(headers: Any, texts: Iterable[str]) -> None:
    """Add a Warning header per text that upstream would send (see the module's docstring)."""
    for t in texts:
        if _UNWRITABLE.search(t) is None:
            headers.add("Warning", warning_value(t))

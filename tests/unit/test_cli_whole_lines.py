"""Each line a pyk8s command prints leaves in one write (cli/main.py _whole_lines): unbuffered, print()
wrote a line's text and its newline apart, and a child sharing the server's output (the scheduler's
"running") landed inside the server's "API at https://...:PORT" line, which a test then misread."""

from __future__ import annotations

import io
import os
import sys
from typing import Any

from pyk8s.cli.main import _whole_lines


class _CountingFile(io.FileIO):
    def __init__(self, fd: int) -> None:
        super().__init__(fd, "w", closefd=False)
        self.writes: list[bytes] = []

    def write(self, b: Any) -> int:
        self.writes.append(bytes(b))
        return super().write(b)


def test_unbuffered_prints_leave_one_write_per_line(monkeypatch: Any) -> None:
    r, w = os.pipe()
    try:
        raw = _CountingFile(w)
        out = io.TextIOWrapper(raw, encoding="utf-8", write_through=True)  # as python -u makes stdout
        print("before", file=out)
        assert raw.writes == [b"before", b"\n"]  # what went wrong
        raw.writes.clear()
        monkeypatch.setattr(sys, "stdout", out)
        _whole_lines()
        print("pyk8s 0.1.0: Kubernetes v1.33.1 API at https://127.0.0.1:34799", flush=True)
        print("a", "b")
        assert raw.writes == [b"pyk8s 0.1.0: Kubernetes v1.33.1 API at https://127.0.0.1:34799\n", b"a b\n"]
        out.flush()
    finally:
        os.close(r)
        os.close(w)

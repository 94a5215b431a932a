"""PYK8S_STALL_TRACE: the stall watcher names the code that held the event loop."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from pyk8s.stalls import watched


def _hog() -> None:
    time.sleep(0.5)


async def _work() -> str:
    await asyncio.sleep(0.1)
    _hog()  # a synchronous stretch on the loop
    await asyncio.sleep(0.2)  # the watcher writes once the loop runs again
    return "done"


def test_a_stall_is_caught_with_its_stack(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    trace = tmp_path / "stalls"
    monkeypatch.setenv("PYK8S_STALL_TRACE", str(trace))
    monkeypatch.setenv("PYK8S_STALL_SECONDS", "0.2")
    assert asyncio.run(watched(_work())) == "done"
    text = trace.read_text()
    assert trace.stat().st_mode & 0o777 == 0o600  # stacks name our code and paths: not for other users
    assert text.count("loop held") == 1, text
    assert "loop held 0." in text and "in _hog\n    time.sleep(0.5)" in text, text


def test_off_without_the_variable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PYK8S_STALL_TRACE", raising=False)
    assert asyncio.run(watched(_work())) == "done"

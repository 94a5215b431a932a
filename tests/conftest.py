"""Shared test helpers: system-part requirements that fail (not skip) under CI=true."""

from __future__ import annotations

import os
import shutil

import pytest

IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


def require(what: str, ok: bool) -> None:
    """Skip a test whose system part is missing; under CI=true fail instead, so CI cannot go green by skipping."""
    if ok:
        return
    if IN_CI:
        pytest.fail(f"missing system part under CI: {what}", pytrace=False)
    pytest.skip(f"missing system part: {what}")


def require_binary(name: str) -> str:
    path = shutil.which(name)
    require(name, path is not None)
    assert path is not None
    return path

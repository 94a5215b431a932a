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


# ---- scheduling under `pytest -n N --dist loadgroup` (make test)

def pytest_configure(config: pytest.Config) -> None:
    # xdist orders work units by test count unless told not to; collection order (tests/e2e, then integration,
    # then unit) starts the long real-node modules first and leaves the quick unit modules to fill the tail
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # a module without an xdist_group of its own is one work unit, as under --dist loadscope: its tests share
    # one module-scoped server on one worker instead of each worker starting its own
    for item in items:
        if item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::", 1)[0]))

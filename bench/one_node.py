"""One real node for a benchmark: a `pyk8s server` and a `pyk8s agent` (runc) in a temp dir."""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from typing import Any


def runc_skip_reason() -> str | None:
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from pyk8s.kubelet.runtime.choose import runc_unusable_reason

    return runc_unusable_reason()


@contextlib.contextmanager
def one_node(prefix: str, agent_args: list[str]) -> Iterator[Any]:
    """The started Env (tests/e2e/kubelet_harness); stopped and its directory removed after."""
    from tests.e2e.kubelet_harness import Env

    base = tempfile.mkdtemp(prefix=prefix)
    env = Env(base, agent_args)
    try:
        env.start()
        yield env
    finally:
        env.stop()
        with open("/proc/self/mountinfo") as f:
            mounted = any(line.split()[4].startswith(base + "/") for line in f)
        if not mounted:  # env.stop unmounted what the pods left; never delete through a mount
            shutil.rmtree(base, ignore_errors=True)

"""PYK8S_PROFILE=<file>: a cProfile of a component's event-loop thread, for the benches.

Written at exit; SIGUSR1 discards what was profiled so far (a bench sends it as its measured phase
begins, so start-up is left out). The API server's processes write to <file>
(its workers to <file>.workerN), the scheduler process to <file>.scheduler, so one variable set for
a bench profiles every control-plane process it starts. Off unless the variable is set."""

from __future__ import annotations

import os
import time
from typing import Any

__all__ = ["profile_from_env"]

_started = False


def profile_from_env(suffix: str = "") -> None:
    global _started
    base = os.environ.get("PYK8S_PROFILE")
    if not base or _started:
        return
    _started = True
    import atexit
    import cProfile
    import signal

    path = base + suffix
    profs = [cProfile.Profile(time.thread_time)]  # CPU time: the shared machine's load does not skew it

    def restart(*_: Any) -> None:
        profs[0].disable()
        profs[0] = cProfile.Profile(time.thread_time)
        profs[0].enable()

    def final() -> None:
        profs[0].disable()
        profs[0].dump_stats(path)

    signal.signal(signal.SIGUSR1, restart)
    atexit.register(final)
    profs[0].enable()

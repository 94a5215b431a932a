"""PYK8S_PROFILE (pyk8s/profiling.py): a component's cProfile, started afresh by SIGUSR1, written at exit.

The benches send SIGUSR1 to the server and scheduler processes when their measured phase begins, so
the profile must hold what ran after the signal and nothing from before it."""

from __future__ import annotations

import os
import pstats
import subprocess
import sys
from pathlib import Path

CHILD = """
import os, signal
from pyk8s.profiling import profile_from_env

def start_up_work():
    return sum(range(1000))

def measured_work():
    return sum(range(1000))

profile_from_env(".scheduler")
profile_from_env(".scheduler")  # a second call (another module importing it) changes nothing
start_up_work()
os.kill(os.getpid(), signal.SIGUSR1)
measured_work()
"""


def _functions(path: Path) -> set[str]:
    stats = pstats.Stats(str(path))
    return {name for (_, _, name) in stats.stats}  # type: ignore[attr-defined]


def test_profile_holds_what_ran_after_sigusr1(tmp_path: Path) -> None:
    base = tmp_path / "prof"
    env = dict(os.environ, PYK8S_PROFILE=str(base))
    subprocess.run([sys.executable, "-c", CHILD], env=env, check=True, timeout=60)
    out = tmp_path / "prof.scheduler"  # the component's suffix
    assert out.is_file() and not base.exists()
    names = _functions(out)
    assert "measured_work" in names
    assert "start_up_work" not in names


def test_no_profile_without_the_variable(tmp_path: Path) -> None:
    """Off unless set: no file, and SIGUSR1 keeps its default meaning."""
    child = ("import signal; from pyk8s.profiling import profile_from_env; profile_from_env('.scheduler'); "
             "assert signal.getsignal(signal.SIGUSR1) == signal.SIG_DFL")
    env = {k: v for k, v in os.environ.items() if k != "PYK8S_PROFILE"}
    subprocess.run([sys.executable, "-c", child], env=env, check=True, timeout=60, cwd=tmp_path)
    assert list(tmp_path.iterdir()) == []

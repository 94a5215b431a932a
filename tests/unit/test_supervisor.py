"""supervisor.die_with_parent: a child goes with its server however it goes, and whatever the child does."""
from __future__ import annotations

import os
import subprocess
import sys
import time

from pyk8s.supervisor import die_with_parent

# A child that ignores SIGTERM, as a busy or hung clean shutdown does: only SIGKILL stops it.
STUBBORN = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('up', flush=True); time.sleep(60)"


def _gone(pid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X"):
                    return True
        except OSError:
            return True
        time.sleep(0.02)
    return False


def test_a_child_that_ignores_sigterm_dies_with_a_killed_parent() -> None:
    # the "server": starts the child as ChildProcess does, prints its pid, and is then killed -9
    parent = subprocess.Popen(
        [sys.executable, "-c",
         "import os, subprocess, sys, time\n"
         "from pyk8s.supervisor import die_with_parent\n"
         f"p = subprocess.Popen([sys.executable, '-c', {STUBBORN!r}], stdout=subprocess.PIPE, text=True,\n"
         "                      preexec_fn=die_with_parent(os.getpid()), start_new_session=True)\n"
         "p.stdout.readline(); print(p.pid, flush=True); time.sleep(60)\n"],
        stdout=subprocess.PIPE, text=True)
    assert parent.stdout is not None
    child = int(parent.stdout.readline())
    parent.kill()
    parent.wait()
    try:
        assert _gone(child, 5.0), "the child outlived its killed parent"
    finally:
        if not _gone(child, 0):
            os.kill(child, 9)


def test_a_child_whose_parent_died_before_it_was_set_up_exits() -> None:
    """The race between fork and prctl: if the server is already gone (the child's parent is no
    longer the pid it was started by), no signal will ever come, so the child must not go on."""
    not_our_parent = os.getpid() + 1_000_000  # stands for the server that died in between
    p = subprocess.Popen([sys.executable, "-c", STUBBORN], stdout=subprocess.PIPE, text=True,
                         preexec_fn=die_with_parent(not_our_parent))
    try:
        assert p.wait(5) == 1
        assert p.stdout is not None and p.stdout.read() == ""  # it never ran
    finally:
        if p.poll() is None:
            p.kill()

"""What a component process loads at start: libraries it rarely needs are loaded on first use.

cel-python (with lark and pendulum) costs a process ~19 MB of RSS; the scheduler needs it only
for DRA device selectors, so `pyk8s scheduler` must start without it (docs/memory.md); the
allocator's selector tests (test_dra_cel_allocator.py) load it on first use.
"""

from __future__ import annotations

import subprocess
import sys

_PROBE = """
import sys
import pyk8s.cli.scheduler_cmd
import pyk8s.scheduler.runner
import pyk8s.dra.allocator
print(",".join(m for m in ("celpy", "lark", "pendulum") if m in sys.modules))
"""


def test_the_scheduler_starts_without_cel_python() -> None:
    out = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, check=True, timeout=120)
    assert out.stdout.strip() == ""


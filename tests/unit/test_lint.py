"""`make lint` stays green: ruff over the code and tests, mypy over the package (issue 2)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def _run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_ruff_passes() -> None:
    r = _run(str(BIN / "ruff"), "check", "src", "tests", "bench")
    assert r.returncode == 0, r.stdout + r.stderr


def test_mypy_passes() -> None:
    r = _run(str(BIN / "mypy"), "src/pyk8s")
    assert r.returncode == 0, r.stdout + r.stderr

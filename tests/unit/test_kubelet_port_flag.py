"""`pyk8s agent --port` and `pyk8s server --kubelet-port`: a kubelet port out of 1..65535 is refused at startup
with upstream's kubelet configuration message, before anything is started."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.cluster import REPO


@pytest.mark.parametrize("cmd,flag", [("agent", "--port"), ("server", "--kubelet-port")])
@pytest.mark.parametrize("value", ["0", "65536", "-1", "10250x"])
def test_out_of_range_kubelet_port_is_refused(tmp_path, cmd: str, flag: str, value: str) -> None:
    r = subprocess.run([sys.executable, "-m", "pyk8s.cli", cmd, "--data-dir", str(tmp_path / "d"), f"{flag}={value}"],
                       capture_output=True, text=True, timeout=60, cwd=str(REPO))
    assert r.returncode == 2, r.stderr
    if value == "10250x":
        assert f"argument {flag}: invalid port: '10250x'" in r.stderr, r.stderr
    else:
        assert (f"argument {flag}: invalid configuration: port (--port) {int(value)} must be between 1 and 65535, "
                "inclusive") in r.stderr, r.stderr
    assert not (tmp_path / "d").exists()  # refused before any state is written


def test_help_documents_the_port_flags() -> None:
    for cmd, flag in (("agent", "--port"), ("server", "--kubelet-port")):
        r = subprocess.run([sys.executable, "-m", "pyk8s.cli", cmd, "--help"], capture_output=True, text=True,
                           timeout=60, cwd=str(REPO))
        assert r.returncode == 0 and flag in r.stdout, r.stdout

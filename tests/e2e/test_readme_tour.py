"""The README's tour, replayed as a user pastes it: every fenced line between its tour markers, in one bash.

The server runs with its built-in kubelet (as `make run` does) in `<work>/data`; the work
dir links `.venv` and `examples/` from the repository, so the lines run verbatim with the
real kubectl on PATH. One substitution: the local registry listens on a free port instead
of 5000, so that parallel tests do not share it (the built-in kubelet, too, gets a free port).
"""

from __future__ import annotations

import os
import re
import subprocess

import pytest

from tests.cluster import REPO
from tests.conftest import require_binary
from tests.e2e.kubelet_harness import requirements
from tests.e2e.registry import free_port
from tests.e2e.test_kubelet_inprocess import InProcess

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("runc-readme-tour"), pytest.mark.timeout(300)]


def tour_lines() -> list[str]:
    text = (REPO / "README.md").read_text()
    m = re.search(r"<!-- tour:begin.*?-->(.*?)<!-- tour:end -->", text, re.S)
    assert m, "README.md has no tour markers"
    blocks = re.findall(r"^```[^\n]*\n(.*?)^```", m.group(1), re.S | re.M)
    return [line for b in blocks for line in b.splitlines() if line.strip()]


def test_tour_lines_are_the_documented_ones():
    lines = tour_lines()
    assert any("examples/crd.yaml" in line for line in lines)
    for line in lines:  # every file the tour names is shipped
        for path in re.findall(r"examples/[\w.-]+", line):
            assert (REPO / path).is_file(), path


def test_readme_tour_runs_top_to_bottom(tmp_path):
    requirements()
    require_binary("kubectl")
    require_binary("docker-registry")
    require_binary("busybox")
    env = InProcess(str(tmp_path))
    work = tmp_path / "work"
    work.mkdir()
    os.symlink(env.cluster.data_dir, work / "data")
    os.symlink(REPO / ".venv", work / ".venv")
    os.symlink(REPO / "examples", work / "examples")
    port = free_port()
    script = "\n".join(line.replace("pyk8s image registry", f"pyk8s image registry --address 127.0.0.1:{port}")
                       for line in tour_lines())
    try:
        env.cluster.start(60)
        env.wait(env.node_ready, 60, "node Ready")
        r = subprocess.run(["bash", "-e", "-o", "pipefail", "-x", "-c", script], cwd=work, capture_output=True,
                           text=True, timeout=240, env=dict(os.environ, HOME=env.cluster.home))
        assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-6000:]
        assert "my-new-cron-object" in r.stdout
        assert re.search(r"^hello from web-", r.stdout, re.M), r.stdout[-2000:]
        assert len(env.pods(selector="app=web")) == 3
        assert 'Successfully pulled image "busybox"' in r.stdout
    finally:
        pid = os.path.join(env.data, "registry", "registry.pid")
        if os.path.exists(pid):
            with open(pid) as f:
                os.kill(int(f.read()), 15)
        env.stop()

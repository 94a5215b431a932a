"""tests/e2e/podnet.py: two test clusters on one machine never draw the same pod /16."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.cluster import REPO
from tests.conftest import require
from tests.e2e.podnet import reserve_pod_net

SPARE = range(251, 253)  # second octets no harness draws from


def test_a_held_network_is_not_handed_out_again_until_released() -> None:
    require("root (lock files under /run)", os.geteuid() == 0)
    a = reserve_pod_net(SPARE)
    b = reserve_pod_net(SPARE)
    try:
        assert a.prefix != b.prefix and {a.prefix, b.prefix} == {"10.251", "10.252"}
        with pytest.raises(RuntimeError, match="no free 10.x.0.0/16"):
            reserve_pod_net(SPARE)
        held = a.prefix
        a.release()
        c = reserve_pod_net(SPARE)
        assert c.prefix == held and c.cidr == f"{held}.0.0/16"
        c.release()
    finally:
        a.release()
        b.release()


def test_another_process_holding_a_network_keeps_it() -> None:
    require("root (lock files under /run)", os.geteuid() == 0)
    code = ("import sys; from tests.e2e.podnet import reserve_pod_net; n = reserve_pod_net(range(251, 252)); "
            "print(n.prefix, flush=True); sys.stdin.read()")
    holder = subprocess.Popen([sys.executable, "-c", code], cwd=str(REPO), stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "10.251"
        n = reserve_pod_net(SPARE)
        assert n.prefix == "10.252"
        n.release()
    finally:
        assert holder.stdin is not None
        holder.stdin.close()  # the holder exits: its lock goes with it
        holder.wait(10)
    n = reserve_pod_net(range(251, 252))
    assert n.prefix == "10.251"
    n.release()

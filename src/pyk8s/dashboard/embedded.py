"""The dashboard `pyk8s server --dashboard` runs: `pyk8s dashboard --auth token` as a supervised child.

Token mode only: the server's own kubeconfig is the cluster admin's, and handing it to whoever
reaches the port would be a back door; each user signs in with a bearer token instead (for
example `kubectl create token NAME`), so RBAC decides. The child trusts the cluster CA.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import sys
from typing import Any

from ..supervisor import ChildProcess

__all__ = ["DashboardProcess", "start"]

log = logging.getLogger("pyk8s.dashboard")


def _free_port(address: str) -> int:
    with socket.socket(socket.AF_INET6 if ":" in address else socket.AF_INET) as s:
        s.bind((address, 0))
        return int(s.getsockname()[1])


class DashboardProcess:
    def __init__(self, server: Any, address: str, port: int) -> None:
        self.address = address
        self.port = port or _free_port(address)  # chosen here: the URL is printed before the child binds
        host = f"[{address}]" if ":" in address else address
        self.url = f"http://{host}:{self.port}/"
        ca = str(server.pki.ca_cert_path)
        argv = [sys.executable, "-m", "pyk8s.cli", "dashboard", "--auth", "token", "--server", server.url,
                "--certificate-authority", ca, "--address", address, "--port", str(self.port)]
        self.child = ChildProcess("dashboard", argv, b"pyk8s dashboard: serving",
                                  identity=["dashboard", "--auth", "token", "--server", server.url])
        self.child.start()
        self._task = asyncio.get_running_loop().create_task(self._announce(), name="dashboard")

    async def _announce(self) -> None:
        await self.child.ready.wait()
        print(f"  dashboard:  {self.url} (sign in with a bearer token, e.g. `kubectl create token NAME`)",
              flush=True)

    async def stop(self) -> None:
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        await self.child.stop()


def start(server: Any, args: Any) -> DashboardProcess | None:
    address = getattr(args, "dashboard_address", "127.0.0.1")
    try:
        return DashboardProcess(server, address, int(getattr(args, "dashboard_port", 9090)))
    except OSError as e:
        log.error("dashboard not started: cannot listen on %s: %s", address, e)
        return None

"""API worker processes: `pyk8s server --api-workers N`.

CPython runs one process's Python code on one core at a time, so one API server process
tops out at one core however many the machine has. With N > 1 the main process serves its
embedded store on `<data-dir>/store.sock` (storage/remote.py) and starts N
`pyk8s server --api-worker` processes on the same port (SO_REUSEPORT: the kernel spreads
new connections over them), then stops accepting connections itself. Workers run the whole
request path; the main process writes the database, bootstraps, compacts and runs the
controllers, scheduler and kubelet (their requests go to the workers like anyone's).
Workers die with the main process (supervisor.py) and are restarted if they exit.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from typing import Any

from ..storage.remote import StoreServer
from ..supervisor import ChildProcess
from . import feature_gates

log = logging.getLogger(__name__)

SOCKET_NAME = "store.sock"


def worker_argv(server: Any, args: Any, socket_path: str) -> list[str]:
    """The command line of one worker: the main server's listening and cluster settings."""
    cfg = server.config
    argv = [sys.executable, "-m", "pyk8s.cli", "server", "--api-worker",
            "--data-dir", os.path.abspath(cfg.data_dir), "--bind-address", cfg.bind_address, "--port", str(server.port),
            "--datastore-endpoint", f"unix://{socket_path}",
            "--advertise-address", server.advertise_address,
            "--service-cluster-ip-range", cfg.service_cidr, "--cluster-cidr", cfg.cluster_cidr,
            "--v", str(getattr(args, "v", 0)),
            # each worker enforces priority and fairness (or the in-flight limits) on what it serves
            f"--enable-priority-and-fairness={str(cfg.enable_priority_and_fairness).lower()}",
            "--max-requests-inflight", str(cfg.max_requests_inflight),
            "--max-mutating-requests-inflight", str(cfg.max_mutating_requests_inflight)]
    for san in cfg.extra_sans:
        argv += ["--tls-san", san]
    if cfg.token_auth_file:
        argv += ["--token-auth-file", cfg.token_auth_file]
    if not cfg.anonymous_auth:
        argv.append("--anonymous-auth=false")
    if not cfg.enable_bootstrap_token_auth:
        argv.append("--enable-bootstrap-token-auth=false")
    if "metrics" in cfg.disabled_components:  # docs/metrics.md: each worker counts what it serves
        argv += ["--disable", "metrics"]
    if not cfg.extend_token_expiration:  # workers answer TokenRequests too
        argv.append("--service-account-extend-token-expiration=false")
    if cfg.audit is not None:
        argv += cfg.audit.argv()
    # workers authorize and admit what they serve: the same modes and plugins
    argv.append("--authorization-mode=" + ",".join(cfg.authorization_modes))
    if cfg.client_ca_file:
        argv += ["--client-ca-file", cfg.client_ca_file]
    if cfg.admission_enable:
        argv.append("--enable-admission-plugins=" + ",".join(sorted(cfg.admission_enable)))
    if cfg.admission_disable:
        argv.append("--disable-admission-plugins=" + ",".join(sorted(cfg.admission_disable)))
    if cfg.admission_control_config_file:
        argv += ["--admission-control-config-file", cfg.admission_control_config_file]
    argv += feature_gates.argv(cfg.feature_gates)  # workers serve the lists
    return argv


class APIWorkers:
    """Serves the store to, starts and keeps alive the extra API server processes."""

    def __init__(self, server: Any, args: Any, count: int) -> None:
        self.server = server
        self.args = args
        self.count = count
        self.socket_path = os.path.join(os.path.abspath(server.config.data_dir), SOCKET_NAME)
        self.store_server = StoreServer(server.store, self.socket_path)
        self.children: list[ChildProcess] = []

    async def start(self) -> None:
        await self.store_server.start()
        argv = worker_argv(self.server, self.args, self.socket_path)
        for i in range(self.count):
            child = ChildProcess(f"API worker {i + 1}", argv, b"pyk8s api worker ready", env=self._env(i),
                                 identity=argv[3:7])  # server --api-worker --data-dir <data-dir>
            child.start()
            self.children.append(child)
        await self.wait_ready()
        # The main process keeps the store, whose every write passes through its event loop: it
        # stops answering requests itself so that loop never makes the workers' writes wait.
        await self.server.stop_listening()

    @staticmethod
    def _env(i: int) -> Any:
        def env() -> dict[str, str]:
            e = dict(os.environ)
            if e.get("PYK8S_PROFILE"):  # each process profiles into its own file
                e["PYK8S_PROFILE"] += f".worker{i + 1}"
            return e
        return env

    async def wait_ready(self, timeout: float = 30.0) -> None:
        """Until every worker listens (it says so on stdout), so the first requests already spread."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while loop.time() < deadline and sum(self._ready) < self.count:
            await asyncio.sleep(0.05)
        if sum(self._ready) < self.count:
            log.warning("only %d of %d API workers started in %.0fs", sum(self._ready), self.count, timeout)

    @property
    def _ready(self) -> list[int]:
        return [1 if c.ready.is_set() else 0 for c in self.children]

    async def stop(self) -> None:
        await asyncio.gather(*(c.stop() for c in self.children))
        await self.store_server.stop()

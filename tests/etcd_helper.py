"""Real etcd processes for tests: one member or a 3-member cluster on free loopback ports.

Each member writes its log to <data dir>/etcd.log (never a pipe that could fill up), runs
in its own session, and is killed by pid; `EtcdCluster` is a context manager, so a failing
test still stops every member it started.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from pathlib import Path

from .conftest import require_binary

__all__ = ["EtcdMember", "EtcdCluster", "free_port", "etcdctl"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def etcdctl(endpoints: str, *args: str, timeout: float = 10.0) -> subprocess.CompletedProcess[str]:
    binary = require_binary("etcdctl")
    env = dict(os.environ, ETCDCTL_API="3")
    return subprocess.run([binary, f"--endpoints={endpoints}", "--command-timeout=5s", *args],
                          capture_output=True, text=True, env=env, timeout=timeout)


class EtcdMember:
    def __init__(self, name: str, data_dir: Path, client_port: int, peer_port: int) -> None:
        self.tls: dict[str, str] | None = None  # cert, key, ca: serve clients over TLS, require client certs
        self.name = name
        self.data_dir = data_dir
        self.client_port = client_port
        self.peer_port = peer_port
        self.proc: subprocess.Popen[bytes] | None = None
        self.initial_cluster = ""
        self.cluster_state = "new"

    @property
    def endpoint(self) -> str:
        return f"127.0.0.1:{self.client_port}"

    @property
    def client_url(self) -> str:
        return f"{'https' if self.tls else 'http'}://{self.endpoint}"

    @property
    def peer_url(self) -> str:
        return f"http://127.0.0.1:{self.peer_port}"

    def start(self) -> None:
        binary = require_binary("etcd")
        self.data_dir.mkdir(parents=True, exist_ok=True)
        cmd = [
            binary, "--name", self.name, "--data-dir", str(self.data_dir / "data"),
            "--listen-client-urls", self.client_url, "--advertise-client-urls", self.client_url,
            "--listen-peer-urls", self.peer_url, "--initial-advertise-peer-urls", self.peer_url,
            "--initial-cluster", self.initial_cluster or f"{self.name}={self.peer_url}",
            "--initial-cluster-state", self.cluster_state, "--initial-cluster-token", "pyk8s-test",
            # quick elections keep failover tests short
            "--heartbeat-interval", "50", "--election-timeout", "500",
            "--logger", "zap", "--log-level", "warn",
        ]
        if self.tls:
            cmd += ["--cert-file", self.tls["cert"], "--key-file", self.tls["key"],
                    "--trusted-ca-file", self.tls["ca"], "--client-cert-auth"]
        log = open(self.data_dir / "etcd.log", "ab")
        try:
            self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        finally:
            log.close()

    def kill(self) -> None:
        """SIGKILL: the member stops at once, as in a crash."""
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)
        self.proc = None

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.kill()
        self.proc = None

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def log_tail(self, n: int = 30) -> str:
        try:
            return "\n".join((self.data_dir / "etcd.log").read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return ""


class EtcdCluster:
    """`size` members on loopback; `endpoint` is the etcd:// URL naming all of them."""

    def __init__(self, base_dir: Path, size: int = 1, tls: dict[str, str] | None = None) -> None:
        """tls: {"cert", "key", "ca"} files for client connections; probes then use tls["client_cert"/"client_key"]."""
        self.tls = tls
        self.members = [EtcdMember(f"m{i}", base_dir / f"m{i}", free_port(), free_port()) for i in range(size)]
        for m in self.members:
            m.tls = tls
        initial = ",".join(f"{m.name}={m.peer_url}" for m in self.members)
        for m in self.members:
            m.initial_cluster = initial

    @property
    def endpoints(self) -> list[str]:
        return [m.endpoint for m in self.members]

    @property
    def endpoint(self) -> str:
        return "etcd://" + ",".join(self.endpoints)

    @property
    def client_urls(self) -> str:
        return ",".join(m.client_url for m in self.members)

    def etcdctl(self, m: EtcdMember, *args: str) -> subprocess.CompletedProcess[str]:
        """etcdctl against one member (with the client certificate when TLS is on)."""
        extra: list[str] = []
        if self.tls:
            extra = [f"--cacert={self.tls['ca']}", f"--cert={self.tls['client_cert']}",
                     f"--key={self.tls['client_key']}"]
        return etcdctl(m.client_url, *extra, *args)

    def start(self, timeout: float = 20.0) -> EtcdCluster:
        try:
            for m in self.members:
                m.start()
            self.wait_healthy(timeout)
        except BaseException:
            self.stop()
            raise
        for m in self.members:
            m.cluster_state = "existing"  # restarts rejoin from their data dirs
        return self

    def wait_healthy(self, timeout: float = 20.0, members: list[EtcdMember] | None = None) -> None:
        """Until every given (default: running) member answers a linearizable read."""
        deadline = time.monotonic() + timeout
        todo = list(members if members is not None else [m for m in self.members if m.running])
        while todo:
            m = todo[0]
            if not m.running:
                raise RuntimeError(f"etcd member {m.name} exited:\n{m.log_tail()}")
            r = self.etcdctl(m, "get", "/health-probe")
            if r.returncode == 0:
                todo.pop(0)
                continue
            if time.monotonic() > deadline:
                raise RuntimeError(f"etcd member {m.name} not healthy: {r.stderr}\n{m.log_tail()}")
            time.sleep(0.1)

    def restart(self, m: EtcdMember, timeout: float = 20.0) -> None:
        m.start()
        self.wait_healthy(timeout, [m])

    def stop(self) -> None:
        for m in self.members:
            m.kill()

    def __enter__(self) -> EtcdCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

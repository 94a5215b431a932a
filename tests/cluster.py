"""A real pyk8s server in a subprocess for tests, plus the real kubectl binaries and the official client.

A server keeps its state in SQLite (the default) or in etcd: `Cluster(..., datastore="etcd", etcd=...)`;
"sqlite-workers" is SQLite with a second API process serving the same store (`--api-workers 2`).
The module-scoped `cluster` fixture runs on the backend named by the `datastore` fixture (SQLite
unless a module opts in with `pytestmark = BOTH_DATASTORES`, which runs all its tests once on
each backend). For etcd every worker process shares one etcd (`shared_etcd`, started on first
use); each server gets its own key prefix there, so servers never see each other's objects.
"""

from __future__ import annotations

import atexit
import glob
import hashlib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

from .conftest import require

REPO = Path(__file__).resolve().parents[1]


def kubectl_binaries() -> dict[str, str]:
    """Installed versioned kubectl binaries by minor version ("1.27" ... "1.33")."""
    real = shutil.which("kubectl")
    out: dict[str, str] = {}
    if real:
        d = os.path.dirname(os.path.realpath(real))
        for p in glob.glob(os.path.join(d, "kubectl.1.*")):
            m = re.search(r"kubectl\.(1\.\d+)$", p)
            if m:
                out[m.group(1)] = p
    return dict(sorted(out.items(), key=lambda kv: int(kv[0].split(".")[1])))


def newest_kubectl() -> str:
    bins = kubectl_binaries()
    require("kubectl (versioned binaries kubectl.1.27 ... kubectl.1.33)", bool(bins))
    return list(bins.values())[-1]


DATASTORES = ["sqlite", "sqlite-workers", "etcd"]
# run every test of a module once per backend (the `datastore` fixture, parametrised per module)
BOTH_DATASTORES = pytest.mark.parametrize("datastore", DATASTORES, indirect=True, scope="module")

_shared_etcd: Any = None


def scratch_dir(prefix: str) -> str:
    """A temporary directory removed when this test process exits."""
    d = tempfile.mkdtemp(prefix=prefix)
    atexit.register(shutil.rmtree, d, True)
    return d


def shared_etcd() -> Any:
    """This process's etcd for tests (one per xdist worker), started on first use, stopped at exit."""
    global _shared_etcd
    if _shared_etcd is None:
        from .etcd_helper import EtcdCluster

        base = Path(tempfile.mkdtemp(prefix="pyk8s-test-etcd-"))
        c = EtcdCluster(base, 1)
        c.start()

        def cleanup() -> None:
            c.stop()
            shutil.rmtree(base, ignore_errors=True)

        atexit.register(cleanup)
        # etcd runs in its own session: if this worker dies without running atexit (killed, or an
        # interrupted xdist run), a watchdog stops it, so no etcd outlives its worker
        pids = " ".join(str(m.proc.pid) for m in c.members if m.proc is not None)
        subprocess.Popen(["sh", "-c", f"while kill -0 {os.getpid()} 2>/dev/null; do sleep 1; done; "
                                      f"kill -9 {pids} 2>/dev/null; rm -rf '{base}'"],
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         start_new_session=True)
        _shared_etcd = c
    return _shared_etcd


def etcd_prefix_for(data_dir: str) -> str:
    """One key prefix per data dir: a restarted server finds its objects, others never see them."""
    return "/pyk8s-test/" + hashlib.sha1(os.path.abspath(data_dir).encode()).hexdigest()[:16]


class Cluster:
    def __init__(self, data_dir: str, extra_args: list[str] | None = None, env: dict[str, str] | None = None,
                 datastore: str = "sqlite", etcd: Any = None) -> None:
        """datastore: "sqlite" (<data_dir>/state.db) or "etcd" (`etcd`, an EtcdCluster; default: shared_etcd(),
        under etcd_prefix_for(data_dir) unless extra_args name a prefix)."""
        self.data_dir = data_dir
        self.datastore = datastore
        self.extra_args = list(extra_args or [])
        if datastore == "etcd":
            e = etcd if etcd is not None else shared_etcd()
            self.etcd = e
            self.extra_args = ["--datastore-endpoint", e.endpoint, *self.extra_args]
            if "--etcd-prefix" not in self.extra_args:
                self.etcd_prefix = etcd_prefix_for(data_dir)
                self.extra_args += ["--etcd-prefix", self.etcd_prefix]
        elif datastore == "sqlite-workers":  # the embedded store served to a second API process
            self.extra_args = ["--api-workers", "2", *self.extra_args]
        elif datastore != "sqlite":
            raise ValueError(f"unknown datastore {datastore!r} (sqlite, sqlite-workers or etcd)")
        self.env = env or {}
        self.proc: subprocess.Popen[str] | None = None
        self.url = ""
        self.kubeconfig = os.path.join(data_dir, "kubeconfig.yaml")
        self.home = scratch_dir("kubectl-home-")
        self.port = 0

    def start(self, timeout: float = 30.0) -> Cluster:
        cmd = [sys.executable, "-m", "pyk8s.cli", "server", "--data-dir", self.data_dir,
               "--port", str(self.port), "--disable-agent", *self.extra_args]
        env = dict(os.environ, PYTHONUNBUFFERED="1", **self.env)
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                                     cwd=str(REPO))
        deadline = time.monotonic() + timeout
        lines = []
        assert self.proc.stdout is not None
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                if self.proc.poll() is not None:
                    raise RuntimeError("pyk8s server exited:\n" + "".join(lines))
                continue
            lines.append(line)
            m = re.search(r"API at (https?://\S+)", line)
            if m:
                self.url = m.group(1)
                self.port = int(self.url.rsplit(":", 1)[1])
            if "kubeconfig:" in line:
                break
        else:
            raise RuntimeError("pyk8s server did not start:\n" + "".join(lines))
        # keep draining output so the server never blocks on a full pipe
        import threading

        self.output: list[str] = lines
        threading.Thread(target=self._drain, daemon=True).start()
        return self

    def _drain(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        for line in self.proc.stdout:
            self.output.append(line)

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def kill9(self) -> None:
        assert self.proc is not None
        self.proc.kill()
        self.proc.wait()

    def kubectl(self, *args: str, version: str | None = None, input: str | None = None, check: bool = True,
                timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
        bins = kubectl_binaries()
        require("kubectl", bool(bins))
        binary = bins[version] if version else list(bins.values())[-1]
        env = dict(os.environ, KUBECONFIG=self.kubeconfig, HOME=self.home)
        env.pop("KUBECTL_EXTERNAL_DIFF", None)
        r = subprocess.run([binary, *args], input=input, capture_output=True, text=True, env=env, timeout=timeout)
        if check and r.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed ({r.returncode}):\n{r.stdout}\n{r.stderr}")
        return r

    def api_client(self) -> Any:
        from kubernetes import client, config

        cfg = client.Configuration()
        config.load_kube_config(self.kubeconfig, client_configuration=cfg)
        return client.ApiClient(cfg)


@pytest.fixture(scope="module")
def datastore(request: pytest.FixtureRequest) -> str:
    """The backend of this module's servers: "sqlite", or each of DATASTORES under BOTH_DATASTORES."""
    ds = str(getattr(request, "param", "sqlite"))
    if ds == "etcd":
        from .conftest import require_binary

        require_binary("etcd")
    return ds


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory, datastore: str):
    c = Cluster(str(tmp_path_factory.mktemp(f"pyk8s-data-{datastore}")), datastore=datastore)
    c.start()
    yield c
    c.stop()


class RawResponse:
    def __init__(self, status: int, headers: Any, body: bytes) -> None:
        self.status = status
        self.headers = headers
        self.body = body

    def json(self) -> Any:
        import json

        return json.loads(self.body)


def raw_request(c: Cluster, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None,
                auth: bool = True, timeout: float = 30.0) -> RawResponse:
    """One HTTPS request with the admin client certificate (or none), for wire-level assertions."""
    import http.client
    import json
    import ssl
    from urllib.parse import urlparse

    from pyk8s.client.kubeconfig import load_kubeconfig

    kc = load_kubeconfig(c.kubeconfig)
    ctx = kc.ssl_client_context()
    if not auth:
        ctx = ssl.create_default_context(cafile=os.path.join(c.data_dir, "pki", "ca.crt"))
    u = urlparse(c.url)
    conn = http.client.HTTPSConnection(u.hostname, u.port, context=ctx, timeout=timeout)
    data = None
    hdrs = dict(headers or {})
    if body is not None:
        data = body if isinstance(body, (bytes, str)) else json.dumps(body)
        hdrs.setdefault("Content-Type", "application/json")
    conn.request(method, path, body=data, headers=hdrs)
    r = conn.getresponse()
    out = RawResponse(r.status, r.headers, r.read())
    conn.close()
    return out


def node_kubeconfig(c: Cluster, node: str) -> str:
    """A kubeconfig with a kubelet's own credentials (CN=system:node:<node>, O=system:nodes), issued by the
    server's CA, as a node joining the cluster would hold."""
    return client_kubeconfig(c, f"system:node:{node}", ["system:nodes"], f"kubelet-{node}")


def client_kubeconfig(c: Cluster, user: str, groups: list[str], name: str) -> str:
    """<data dir>/<name>.conf: a client certificate for `user` in `groups` from the server's CA."""
    import types

    from cryptography import x509
    from cryptography.hazmat.primitives import serialization

    from pyk8s.client.kubeconfig import write_kubeconfig
    from pyk8s.pki import issue_client_cert

    pki = os.path.join(c.data_dir, "pki")
    with open(os.path.join(pki, "ca.crt"), "rb") as f:
        ca_pem = f.read()
    with open(os.path.join(pki, "ca.key"), "rb") as f:
        ca_key = serialization.load_pem_private_key(f.read(), None)
    ca = types.SimpleNamespace(ca_cert=x509.load_pem_x509_certificate(ca_pem), ca_key=ca_key)
    cert, key = issue_client_cert(ca, user, groups)  # type: ignore[arg-type]
    path = os.path.join(c.data_dir, f"{name}.conf")
    write_kubeconfig(path, c.url, ca_pem, cert, key, user=user)
    return path

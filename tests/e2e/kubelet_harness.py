"""A real pyk8s control plane plus a real kubelet (`pyk8s agent`, runc) for the kubelet e2e tests.

Each test module gets its own server, node name, Linux bridge, pod /16 (reserved across processes:
podnet.py), runc root and kubelet port, so nothing collides with other tests or with a `make run`
on the same machine: give each module an xdist_group of its own (`runc-<module>`), which keeps its
tests, and so its one cluster, on one worker while other modules run beside it; teardown
deletes every pod through the API (the kubelet's own clean-up path), stops the agent and
then removes whatever a failed test may have left: sandboxes, the bridge, the runc root.
"""

from __future__ import annotations

import contextlib
import glob
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

from tests.cluster import REPO, Cluster, raw_request
from tests.conftest import require, require_binary
from tests.e2e.podnet import reserve_pod_net

CRI_LINE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z (stdout|stderr) (F|P) (.*)$")
IMAGE = "busybox:e2e"


def requirements() -> None:
    require("root", os.geteuid() == 0)
    require_binary("runc")
    require_binary("unshare")
    require_binary("iptables")
    require("CNI plugins in /usr/lib/cni", all(os.path.exists(f"/usr/lib/cni/{p}")
                                                for p in ("bridge", "host-local", "loopback", "portmap")))


def import_images(data_dir: str, refs: tuple[str, ...] = (IMAGE,)) -> None:
    from pyk8s.kubelet.images.archive import import_rootfs
    from pyk8s.kubelet.images.store import ImageStore
    from tests.e2e.imagebuild import build_busybox_rootfs

    store = ImageStore(os.path.join(data_dir, "images"))
    tmp = tempfile.mkdtemp(prefix="bb-")
    try:
        root = build_busybox_rootfs(os.path.join(tmp, "rootfs"))
        for i, ref in enumerate(refs):
            with open(os.path.join(root, "etc", "image-version"), "w") as f:
                f.write(f"{ref}\n")  # each tag gets its own content, so its own image ID
            store.unpack(import_rootfs(store, root, ref, cmd=["sh"],
                                              env=["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                                                   f"IMAGE_GEN={i}"]))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def free_kubelet_port() -> int:
    """A port free on every address for a host-network kubelet: two test modules each running a kubelet on
    10250 at the same time had the API server dial the other's."""
    with socket.socket() as s:
        s.bind(("", 0))
        return int(s.getsockname()[1])


class Agent:
    """`pyk8s agent` in a subprocess."""

    def __init__(self, cluster: Cluster, data_dir: str, name: str, bridge: str, runc_root: str,
                 extra: list[str] | None = None, port: int | None = None) -> None:
        self.cluster = cluster
        self.data_dir = data_dir
        self.name = name
        self.bridge = bridge
        self.runc_root = runc_root
        self.extra = extra or []
        self.prefix: list[str] = []  # e.g. nsenter into the node's network namespace (netns_cluster)
        self.port = port  # the kubelet's --port; None: upstream's 10250 in its own namespace, else a free one
        self.proc: subprocess.Popen[str] | None = None
        self.output: list[str] = []

    def start(self, timeout: float = 60.0) -> Agent:
        if self.port is None:
            self.port = 10250 if self.prefix else free_kubelet_port()
        cmd = [*self.prefix, sys.executable, "-m", "pyk8s.cli", "agent", *self.connection_args(),
               "--node-name", self.name, "--data-dir", self.data_dir, "--cni-bridge", self.bridge,
               "--runc-root", self.runc_root, "--file-check-frequency", "1", "--v", "1", "--port", str(self.port), *self.extra]
        if not self.prefix:  # on the host's network: no nftables table in the host's namespace
            cmd += ["--disable-network-policy", "--disable-proxy"]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=str(REPO),
                                     env=dict(os.environ, PYTHONUNBUFFERED="1"))
        deadline = time.monotonic() + timeout
        assert self.proc.stdout is not None
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                if self.proc.poll() is not None:
                    raise RuntimeError("pyk8s agent exited:\n" + "".join(self.output[-50:]))
                continue
            self.output.append(line)
            if "pyk8s agent: node" in line:
                break
        else:
            raise RuntimeError("pyk8s agent did not start:\n" + "".join(self.output[-50:]))
        threading.Thread(target=self._drain, daemon=True).start()
        return self

    def connection_args(self) -> list[str]:
        """How the agent reaches the server (a test joining with a bootstrap token gives --server and --token)."""
        return ["--kubeconfig", self.cluster.kubeconfig]

    def _drain(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        for line in self.proc.stdout:
            self.output.append(line)

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def kill9(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


class Env:
    """One cluster with one real node."""

    def __init__(self, base: str, agent_args: list[str] | None = None, node: str | None = None) -> None:
        tag = uuid.uuid4().hex[:8]
        self.tag = tag
        self.base = base
        self.pod_net = reserve_pod_net(range(20, 60))  # one /16 per cluster: their kubelets' bridges never overlap
        self.net = self.pod_net.prefix
        self.cluster = Cluster(os.path.join(base, "server"), extra_args=["--cluster-cidr", f"{self.net}.0.0/16"])
        self.node = node or f"e2e-{tag}"  # a manifest may name its node (the seeds' node1)
        self.data = os.path.join(base, "agent")
        self.bridge = f"pk{tag}"
        self.runc_root = f"/run/pyk8s/e2e-{tag}"
        self.agent = Agent(self.cluster, self.data, self.node, self.bridge, self.runc_root, agent_args)

    def start(self, images: tuple[str, ...] = (IMAGE,)) -> Env:
        os.makedirs(self.data, exist_ok=True)
        import_images(self.data, images)
        self.cluster.start()
        self.agent.start()
        self.wait(lambda: self.node_ready(), 60, "node Ready")
        return self

    # ---- API access

    def api(self, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None) -> Any:
        r = raw_request(self.cluster, method, path, body, headers)
        if r.status >= 400:
            raise AssertionError(f"{method} {path}: {r.status} {r.body[:500]!r}")
        return r.json() if r.body else None

    def get(self, path: str) -> Any | None:
        r = raw_request(self.cluster, "GET", path)
        if r.status == 404:
            return None
        assert r.status < 400, (path, r.status, r.body[:300])
        return r.json()

    def pod(self, name: str, ns: str = "default") -> dict[str, Any] | None:
        return self.get(f"/api/v1/namespaces/{ns}/pods/{name}")

    def pods(self, ns: str = "default", selector: str = "") -> list[dict[str, Any]]:
        q = f"?labelSelector={selector}" if selector else ""
        return self.get(f"/api/v1/namespaces/{ns}/pods{q}")["items"]

    def create(self, obj: dict[str, Any]) -> dict[str, Any]:
        ns = (obj.get("metadata") or {}).get("namespace") or "default"
        if obj["kind"] == "PersistentVolume":
            return self.api("POST", "/api/v1/persistentvolumes", obj)
        plural = {"Pod": "pods", "ConfigMap": "configmaps", "Secret": "secrets", "Service": "services",
                  "PersistentVolumeClaim": "persistentvolumeclaims"}[obj["kind"]]
        return self.api("POST", f"/api/v1/namespaces/{ns}/{plural}", obj)

    def delete_pod(self, name: str, grace: int | None = None, ns: str = "default") -> None:
        body = {"gracePeriodSeconds": grace} if grace is not None else None
        r = raw_request(self.cluster, "DELETE", f"/api/v1/namespaces/{ns}/pods/{name}", body)
        assert r.status in (200, 202, 404), r.body[:300]

    def node_obj(self) -> dict[str, Any]:
        return self.get(f"/api/v1/nodes/{self.node}")

    def node_ready(self) -> bool:
        n = self.get(f"/api/v1/nodes/{self.node}")
        if not n:
            return False
        return any(c["type"] == "Ready" and c["status"] == "True" for c in (n.get("status") or {}).get("conditions", []))

    def events(self, name: str, ns: str = "default") -> list[dict[str, Any]]:
        evs = self.get(f"/api/v1/namespaces/{ns}/events?fieldSelector=involvedObject.name={name}")["items"]
        return sorted(evs, key=lambda e: (e.get("firstTimestamp") or "", e["metadata"]["name"]))

    def kubectl(self, *args: str, **kw: Any) -> str:
        return self.cluster.kubectl(*args, **kw).stdout

    # ---- waiting and reading

    @staticmethod
    def wait(pred: Callable[[], Any], timeout: float, what: str, interval: float = 0.2) -> Any:
        deadline = time.monotonic() + timeout
        last: Any = None
        while time.monotonic() < deadline:
            last = pred()
            if last:
                return last
            time.sleep(interval)
        raise AssertionError(f"timed out after {timeout}s waiting for {what} (last: {str(last)[:500]})")

    def wait_pod(self, name: str, pred: Callable[[dict[str, Any]], bool], timeout: float = 30, ns: str = "default",
                 what: str = "") -> dict[str, Any]:
        holder: dict[str, Any] = {}

        def check() -> bool:
            p = self.pod(name, ns)
            holder["p"] = p
            try:
                return p is not None and bool(pred(p))
            except (AssertionError, KeyError, IndexError, TypeError):
                return False  # not there yet

        try:
            self.wait(check, timeout, what or f"pod {name}")
        except AssertionError as e:
            raise AssertionError(f"{e}\nstatus: {json.dumps((holder.get('p') or {}).get('status'), indent=1)[:3000]}"
                                 f"\nagent log tail:\n{''.join(self.agent.output[-30:])}") from None
        return holder["p"]

    def wait_running(self, name: str, timeout: float = 30, ns: str = "default") -> dict[str, Any]:
        return self.wait_pod(name, lambda p: all_started(p), timeout, ns, f"pod {name} running")

    def wait_gone(self, name: str, timeout: float = 60, ns: str = "default") -> None:
        self.wait(lambda: self.pod(name, ns) is None, timeout, f"pod {name} deleted")

    def log_files(self, pod: dict[str, Any], container: str) -> list[str]:
        md = pod["metadata"]
        d = os.path.join(self.data, "logs", f"{md.get('namespace', 'default')}_{md['name']}_{md['uid']}", container)
        return sorted(glob.glob(os.path.join(d, "*.log")), key=lambda p: int(os.path.basename(p).split(".")[0]))

    def log_text(self, pod: dict[str, Any], container: str, attempt: int | None = None) -> list[str]:
        files = self.log_files(pod, container)
        if not files:
            return []
        path = files[-1] if attempt is None else os.path.join(os.path.dirname(files[0]), f"{attempt}.log")
        out = []
        with contextlib.suppress(FileNotFoundError):
            with open(path) as f:
                for line in f.read().splitlines():
                    m = CRI_LINE.match(line)
                    assert m, f"not a CRI log line: {line!r}"
                    out.append(m.group(3))
        return out

    def wait_log(self, name: str, container: str, pred: Callable[[list[str]], bool], timeout: float = 20,
                 ns: str = "default") -> list[str]:
        def check() -> list[str] | None:
            p = self.pod(name, ns)
            if p is None:
                return None
            lines = self.log_text(p, container)
            return lines if pred(lines) else None

        return self.wait(check, timeout, f"log of {name}/{container}")

    # ---- teardown

    def delete_all_pods(self, timeout: float = 60) -> None:
        orphan = {"propagationPolicy": "Orphan"}  # the owners go first, so nothing re-creates the pods
        for kind in ("deployments", "replicasets", "statefulsets", "daemonsets"):
            for d in self.get(f"/apis/apps/v1/{kind}")["items"]:
                md = d["metadata"]
                raw_request(self.cluster, "DELETE", f"/apis/apps/v1/namespaces/{md['namespace']}/{kind}/{md['name']}",
                            orphan)
        for p in self.get("/api/v1/pods")["items"]:
            self.delete_pod(p["metadata"]["name"], 2, p["metadata"]["namespace"])
        self.wait(lambda: not self.get("/api/v1/pods")["items"], timeout, "every pod deleted", 0.5)

    def stop(self) -> None:
        try:
            if self.agent.proc and self.agent.proc.poll() is None and self.cluster.proc \
                    and self.cluster.proc.poll() is None:
                with contextlib.suppress(Exception):
                    self.delete_all_pods()
        finally:
            self.agent.stop()
            self.cluster.stop()
            force_cleanup(self.data, self.bridge, self.runc_root)
            unmount_under(self.base)  # volumes under a --root-dir of the test's own
            self.pod_net.release()


def unmount_under(base: str) -> None:
    """Lazily unmount whatever is still mounted below base (deepest first), so the directory can go."""
    prefix = os.path.realpath(base) + "/"
    with open("/proc/self/mountinfo") as f:
        mounts = [line.split()[4] for line in f if line.split()[4].startswith(prefix)]
    for mp in sorted(mounts, key=len, reverse=True):
        subprocess.run(["umount", "-l", mp], capture_output=True)


def force_cleanup(data: str, bridge: str, runc_root: str) -> None:
    """Remove sandboxes and containers a failed test left, the bridge and the runc root."""
    from pyk8s.devcluster.cleanup import remove_pods_left

    remove_pods_left(data, runc_root, bridge)
    subprocess.run(["ip", "link", "del", bridge], capture_output=True)
    rules = subprocess.run(["iptables", "-t", "nat", "-S", "POSTROUTING"], capture_output=True, text=True).stdout
    for line in rules.splitlines():  # the kubelet's node-wide masquerade rule for this bridge
        if f"pyk8s {bridge} pod network masquerade" in line:
            import shlex

            subprocess.run(["iptables", "-t", "nat", "-D", *shlex.split(line)[1:]], capture_output=True)


def all_started(p: dict[str, Any]) -> bool:
    st = p.get("status") or {}
    cs = st.get("containerStatuses") or []
    return st.get("phase") == "Running" and bool(cs) and all((c.get("state") or {}).get("running") for c in cs)


def container_status(p: dict[str, Any], name: str, init: bool = False) -> dict[str, Any]:
    key = "initContainerStatuses" if init else "containerStatuses"
    for c in (p.get("status") or {}).get(key) or []:
        if c["name"] == name:
            return c
    raise AssertionError(f"no status for container {name}: {p.get('status')}")


def condition(p: dict[str, Any], ctype: str) -> dict[str, Any]:
    for c in (p.get("status") or {}).get("conditions") or []:
        if c["type"] == ctype:
            return c
    return {}


def busybox_pod(name: str, script: str, **spec: Any) -> dict[str, Any]:
    containers = spec.pop("containers", None) or [{"name": "c", "image": IMAGE, "imagePullPolicy": "IfNotPresent",
                                                   "command": ["sh", "-c", script]}]
    labels = spec.pop("labels", {"test": name})
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": labels},
            "spec": {"terminationGracePeriodSeconds": 2, **spec, "containers": containers}}


def container(name: str, script: str, **kw: Any) -> dict[str, Any]:
    return {"name": name, "image": IMAGE, "imagePullPolicy": "IfNotPresent", "command": ["sh", "-c", script], **kw}


def uid_leftovers(uid: str, data: str) -> list[str]:
    """Traces a pod may leave on the host: netns, cgroups, mounts, runtime state, volume and log dirs."""
    out = []
    for ctrl in ("memory", "cpu", "pids"):
        out += glob.glob(f"/sys/fs/cgroup/{ctrl}/kubepods/**/pod{uid}", recursive=True)
    with open("/proc/self/mountinfo") as f:
        out += [line.split()[4] for line in f if uid in line.split()[4]]
    out += glob.glob(os.path.join(data, "kubelet", "pods", uid))
    out += glob.glob(os.path.join(data, "logs", f"*_{uid}"))
    return out


def watch_pod(env: Env, name: str, until_deleted: float, ns: str = "default") -> list[tuple[str, dict[str, Any]]]:
    """Every watch event of one pod (starting now) until it is DELETED or `until_deleted` seconds pass."""
    import http.client
    import ssl
    from urllib.parse import urlparse

    from pyk8s.client.kubeconfig import load_kubeconfig

    p = env.pod(name, ns)
    assert p is not None
    rv = p["metadata"]["resourceVersion"]
    kc = load_kubeconfig(env.cluster.kubeconfig)
    u = urlparse(env.cluster.url)
    conn = http.client.HTTPSConnection(u.hostname, u.port, context=kc.ssl_client_context(), timeout=until_deleted)
    conn.request("GET", f"/api/v1/namespaces/{ns}/pods?watch=1&fieldSelector=metadata.name%3D{name}"
                        f"&resourceVersion={rv}&timeoutSeconds={int(until_deleted)}")
    r = conn.getresponse()
    out: list[tuple[str, dict[str, Any]]] = []
    try:
        for line in r:
            if not line.strip():
                continue
            ev = json.loads(line)
            out.append((ev["type"], ev["object"]))
            if ev["type"] == "DELETED":
                break
    except (TimeoutError, ssl.SSLError, OSError):
        pass
    finally:
        conn.close()
    return out

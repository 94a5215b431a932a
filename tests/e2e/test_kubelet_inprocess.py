"""`pyk8s server` runs a kubelet for this machine in its own process, as `make run` does."""

from __future__ import annotations

import os
import socket
import stat
import uuid

import pytest

from tests.cluster import Cluster
from tests.e2e.kubelet_harness import (
    Env,
    busybox_pod,
    container,
    force_cleanup,
    free_kubelet_port,
    import_images,
    requirements,
)

# a group of its own: its kubelet has its own port, bridge, pod /16 and runc root (runs beside the
# other kubelet modules with -n 2)
pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("kubelet-inprocess"), pytest.mark.timeout(90)]


class ServerWithKubelet(Cluster):
    """tests.cluster.Cluster minus its --disable-agent."""

    def start(self, timeout: float = 30.0) -> ServerWithKubelet:
        import subprocess

        real = subprocess.Popen

        def popen(cmd: list[str], *a: object, **kw: object) -> subprocess.Popen[str]:
            return real([c for c in cmd if c != "--disable-agent"], *a, **kw)  # type: ignore[call-overload]

        subprocess.Popen = popen  # type: ignore[assignment,misc]
        try:
            super().start(timeout)
        finally:
            subprocess.Popen = real  # type: ignore[misc]
        return self


class InProcess(Env):
    """A server with its built-in kubelet (no --disable-agent): node name = hostname, data in <data-dir>/agent."""

    def __init__(self, base: str) -> None:
        super().__init__(base)
        self.node = socket.gethostname().lower()
        self.data = os.path.join(base, "server", "agent")
        tag = uuid.uuid4().hex[:8]
        self.bridge, self.runc_root = f"pk{tag}", f"/run/pyk8s/e2e-{tag}"
        self.agent.port = free_kubelet_port()  # the built-in kubelet's, not upstream's shared 10250
        self.cluster = ServerWithKubelet(os.path.join(base, "server"), extra_args=["--cluster-cidr", f"{self.net}.0.0/16",
                                                                                   "--kubelet-port", str(self.agent.port),
                                                                                   "--disable", "ingress",
                                                                                   # no nftables table in the host's namespace
                                                                                   "--disable", "network-policy",
                                                                                   "--disable", "proxy",
                                                                                   *self._audit(base)],
                               env={"PYK8S_AGENT_CNI_BRIDGE": self.bridge, "PYK8S_AGENT_RUNC_ROOT": self.runc_root})

    def _audit(self, base: str) -> list[str]:
        """Who renews the node's Lease, from the audit log: the kubelet's identity."""
        os.makedirs(base, exist_ok=True)
        policy = os.path.join(base, "audit-policy.yaml")
        with open(policy, "w") as f:
            f.write("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n"
                    "  resources: [{group: coordination.k8s.io, resources: [leases]}]\n  namespaces: [kube-node-lease]\n"
                    "- level: None\n")
        self.audit_log = os.path.join(base, "audit.log")
        return ["--audit-policy-file", policy, "--audit-log-path", self.audit_log]

    def lease_writers(self) -> list[dict[str, object]]:
        import json

        with open(self.audit_log) as f:
            events = [json.loads(line) for line in f if line.strip()]
        return [e["user"] for e in events if e.get("verb") in ("create", "update", "patch")
                and e["objectRef"].get("name") == self.node]

    def start(self, images: tuple[str, ...] = ("busybox:e2e",)) -> InProcess:
        import_images(self.data, images)
        self.cluster.start(120)  # the control plane and its kubelet start in one process: 60 s ran out under load
        self.wait(self.node_ready, 60, "node Ready")
        return self

    def stop(self) -> None:
        try:
            if self.cluster.proc and self.cluster.proc.poll() is None:
                self.delete_all_pods()
        finally:
            self.cluster.stop()
            force_cleanup(self.data, self.bridge, self.runc_root)


def test_server_runs_a_kubelet(tmp_path):
    requirements()
    env = InProcess(str(tmp_path))
    try:
        try:
            env.start()
        except Exception:
            print("".join(getattr(env.cluster, "output", [])[-60:]))
            raise
        node = env.node_obj()
        assert node["status"]["nodeInfo"]["kubeletVersion"] == "v1.33.1"
        # the server's kubelet is the node itself, not system:masters (Node authorizer and NodeRestriction)
        writers = env.wait(env.lease_writers, 20, "the node's lease written")
        assert {w["username"] for w in writers} == {f"system:node:{env.node}"}
        assert all("system:masters" not in w.get("groups", []) for w in writers), writers
        assert {m["manager"] for m in node["metadata"].get("managedFields") or []} >= {"kubelet"}
        for sock in ("device-plugins/kubelet.sock", "pod-resources/kubelet.sock"):  # docs/device-plugins.md
            st = os.stat(os.path.join(env.data, "kubelet", sock))
            assert stat.S_ISSOCK(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o600, sock
        env.create(busybox_pod("inproc", "echo in-process kubelet; sleep 3600"))
        p = env.wait_running("inproc", 30)
        assert p["spec"]["nodeName"] == env.node
        env.wait_log("inproc", "c", lambda ls: "in-process kubelet" in ls)
        for version in ("1.27", "1.33"):  # SPDY and WebSocket v5 attach through the API server
            _kubectl_run_it_rm(env, version)
        _local_path_claim_cleaned_up(env)
    finally:
        env.stop()


def _kubectl_run_it_rm(env: InProcess, version: str) -> None:
    """`kubectl run -it --rm` on a real terminal: the pod (stdin, stdinOnce, tty) starts, kubectl attaches to its
    shell (TERM and the window size are the terminal's), `exit` ends the session and kubectl deletes the pod."""
    from tests.cluster import kubectl_binaries
    from tests.conftest import require
    from tests.e2e.terminal import Terminal

    bins = kubectl_binaries()
    require(f"kubectl {version}", version in bins)
    name = f"it-{version.replace('.', '-')}"
    term = Terminal([bins[version], "run", name, "--image=busybox:e2e", "--image-pull-policy=IfNotPresent",
                     "--restart=Never", "-it", "--rm", "--", "sh"],
                    dict(os.environ, KUBECONFIG=env.cluster.kubeconfig, HOME=env.cluster.home), rows=33, cols=111)
    try:
        term.read_until(b"If you don't see a command prompt, try pressing enter.", 30)
        term.type(b"\r")
        term.read_until(b"# ")
        term.type(b"echo term=$TERM; stty size\r")
        term.read_until(b"term=xterm")
        term.read_until(b"33 111")
        p = env.pod(name)
        assert p is not None
        c = p["spec"]["containers"][0]
        assert (c.get("stdin"), c.get("stdinOnce"), c.get("tty")) == (True, True, True)
        term.type(b"exit\r")
        assert term.wait(60) == 0, term.out
        assert f'pod "{name}" deleted'.encode() in term.out, term.out
    finally:
        term.close()
    env.wait_gone(name, 30)


def _local_path_claim_cleaned_up(env: InProcess) -> None:
    """The server's node removes a deleted local-path volume's directory (its cleaner runs in the server with
    its own identity, kubelet/local_path_cleanup.py): default class, claim, pod writes, both deleted."""
    root = env.node_obj()["metadata"]["annotations"]["storage.pyk8s.io/local-path-root"]
    assert root == os.path.join(os.path.abspath(env.data), "storage")
    env.create({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "lp"},
                "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "16Mi"}}}})
    env.create(busybox_pod("lp-writer", "", volumes=[{"name": "d", "persistentVolumeClaim": {"claimName": "lp"}}],
                           containers=[container("c", "echo x > /data/f && echo WROTE; sleep 3600",
                                                 volumeMounts=[{"name": "d", "mountPath": "/data"}])]))
    env.wait_log("lp-writer", "c", lambda ls: "WROTE" in ls, 30)
    pv = env.get("/api/v1/namespaces/default/persistentvolumeclaims/lp")["spec"]["volumeName"]
    path = os.path.join(root, f"{pv}_default_lp")
    assert open(os.path.join(path, "f")).read() == "x\n"
    env.delete_pod("lp-writer", 0)
    env.wait_gone("lp-writer")
    env.api("DELETE", "/api/v1/namespaces/default/persistentvolumeclaims/lp")
    env.wait(lambda: env.get(f"/api/v1/persistentvolumes/{pv}") is None, 30, "PV gone")
    assert not os.path.lexists(path)

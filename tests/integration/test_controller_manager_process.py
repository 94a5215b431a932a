"""`pyk8s server --controller-manager-process` runs the controllers as their own `pyk8s
controller-manager` process (as upstream deploys kube-controller-manager): the server announces
itself once that process made the default ServiceAccount, the controllers act through the API
under the manager's identity, a killed manager is restarted and takes the Lease over, and it
stops with the server (after kill -9 too)."""

from __future__ import annotations

import os

from tests.cluster import Cluster
from tests.integration.test_scheduler import get, wait_for
from tests.integration.test_scheduler_process import alive, children, gone_after_kill9, server


def manager_pid(c: Cluster) -> int | None:
    assert c.proc is not None
    return next((p for p, cmd in children(c.proc.pid) if " controller-manager --kubeconfig" in cmd), None)


def pods_of(c: Cluster, app: str) -> int:
    return len(get(c, "pods", "-l", f"app={app}")["items"])


def test_controller_manager_runs_as_its_own_process(tmp_path):
    with server(tmp_path, "--controller-manager-process") as c:
        pid = manager_pid(c)
        assert pid is not None  # started before the server announced itself
        conf = os.path.join(c.data_dir, "controller-manager.conf")
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            assert conf.encode() in f.read()
        assert os.stat(conf).st_mode & 0o077 == 0  # a client key inside: owner only
        assert get(c, "sa", "default")["metadata"]["name"] == "default"  # ready for pods at once

        # the controllers work: a Deployment gets its ReplicaSet and pods
        c.kubectl("create", "deployment", "web", "--image=busybox", "--replicas=2")
        wait_for(lambda: pods_of(c, "web") == 2, what="2 pods of the deployment")
        lease = get(c, "lease", "-n", "kube-system", "kube-controller-manager")
        holder = lease["spec"]["holderIdentity"]
        assert holder

        # killed: the server starts another, which takes the Lease over (released on the way out)
        os.kill(pid, 15)
        pid2 = wait_for(lambda: (p := manager_pid(c)) not in (None, pid) and p, what="a restarted manager")
        wait_for(lambda: get(c, "lease", "-n", "kube-system", "kube-controller-manager")["spec"].get(
            "holderIdentity") not in (None, "", holder), timeout=30, what="the new manager holding the Lease")
        c.kubectl("scale", "deployment", "web", "--replicas=3")
        wait_for(lambda: pods_of(c, "web") == 3, timeout=30, what="3 pods after scaling")

        # the server stops it first
        assert "controller-manager exited with 0; restarting" in "".join(c.output)
        before = len(c.output)
        c.stop()
        assert not alive(pid2)
        assert "restarting" not in "".join(c.output[before:])


def test_controller_manager_dies_with_a_killed_server(tmp_path):
    with server(tmp_path, "--controller-manager-process") as c:
        pid = manager_pid(c)
        assert pid is not None
        gone_after_kill9(c, pid)


def test_controllers_stay_on_the_server_loop_by_default(tmp_path):
    with server(tmp_path) as c:
        assert manager_pid(c) is None
        assert not os.path.exists(os.path.join(c.data_dir, "controller-manager.conf"))
        c.kubectl("create", "deployment", "web", "--image=busybox", "--replicas=1")
        wait_for(lambda: pods_of(c, "web") == 1, what="the deployment's pod")

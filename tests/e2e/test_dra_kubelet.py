"""The kubelet's DRA side with a real `pyk8s agent` and runc pods, against a DRA driver written
here on the protocol (pluginregistration v1 + dra v1beta1, our protos, grpcio): the driver
registers through `<root-dir>/plugins_registry/`, the scheduler allocates its ResourceSlice's
device to a claim, the kubelet calls NodePrepareResources before the container starts, and the
CDI spec the driver wrote reaches the container as env; deleting the pod unprepares the claim.
A driver announcing only versions the kubelet does not speak is told so and never called."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import uuid
from collections.abc import Iterator
from concurrent import futures
from typing import Any

import grpc
import pytest

from pyk8s.dra.api import dra_v1beta1_pb2 as dra_pb
from pyk8s.dra.api import dra_v1beta1_pb2_grpc as dra_grpc
from pyk8s.dra.api import pluginregistration_v1_pb2 as reg_pb
from pyk8s.dra.api import pluginregistration_v1_pb2_grpc as reg_grpc
from tests.cluster import REPO
from tests.e2e.kubelet_harness import Env, busybox_pod, container, requirements

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("runc-dra-kubelet"), pytest.mark.timeout(180)]

CDI_DIR = "/var/run/cdi"


class Driver(reg_grpc.RegistrationServicer, dra_grpc.DRAPluginServicer):
    """A DRA driver: registration + NodePrepareResources writing one CDI spec per claim."""

    def __init__(self, env: Env, name: str, versions: list[str]) -> None:
        self.env = env
        self.name = name
        self.versions = versions
        self.sock_dir = tempfile.mkdtemp(prefix="dra-")  # short: AF_UNIX paths are at most 107 bytes
        self.endpoint = os.path.join(self.sock_dir, "dra.sock")
        self.reg_sock = os.path.join(env.data, "kubelet", "plugins_registry", f"{name}-reg.sock")
        self.status: list[tuple[bool, str]] = []
        self.prepared: list[str] = []
        self.unprepared: list[str] = []
        self.server: grpc.Server | None = None
        self.lock = threading.Lock()

    # Registration
    def GetInfo(self, request: Any, context: Any) -> Any:
        return reg_pb.PluginInfo(type="DRAPlugin", name=self.name, endpoint=self.endpoint,
                                 supported_versions=self.versions)

    def NotifyRegistrationStatus(self, request: Any, context: Any) -> Any:
        with self.lock:
            self.status.append((request.plugin_registered, request.error))
        return reg_pb.RegistrationStatusResponse()

    # DRAPlugin
    def NodePrepareResources(self, request: Any, context: Any) -> Any:
        out = dra_pb.NodePrepareResourcesResponse()
        for c in request.claims:
            claim = self.env.get(f"/apis/resource.k8s.io/v1beta1/namespaces/{c.namespace}/resourceclaims/{c.name}")
            results = [r for r in claim["status"]["allocation"]["devices"]["results"] if r["driver"] == self.name]
            spec = {"cdiVersion": "0.6.0", "kind": f"{self.name}/gpu", "devices": [
                {"name": c.uid, "containerEdits": {"env": [
                    "DRA_E2E_DEVICES=" + ",".join(r["device"] for r in results), f"DRA_E2E_CLAIM={c.name}"]}}]}
            with open(self._cdi_file(c.uid), "w") as f:
                json.dump(spec, f)
            out.claims[c.uid].devices.extend(
                dra_pb.PreparedDevice(request_names=[r["request"]], pool_name=r["pool"], device_name=r["device"],
                                      cdi_device_ids=[f"{self.name}/gpu={c.uid}"]) for r in results)
            with self.lock:
                self.prepared.append(c.uid)
        return out

    def NodeUnprepareResources(self, request: Any, context: Any) -> Any:
        out = dra_pb.NodeUnprepareResourcesResponse()
        for c in request.claims:
            if os.path.exists(self._cdi_file(c.uid)):
                os.unlink(self._cdi_file(c.uid))
            out.claims[c.uid].error = ""
            with self.lock:
                self.unprepared.append(c.uid)
        return out

    def _cdi_file(self, uid: str) -> str:
        return os.path.join(CDI_DIR, f"{self.name}-{uid}.json")

    def start(self) -> None:
        os.makedirs(CDI_DIR, exist_ok=True)
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        dra_grpc.add_DRAPluginServicer_to_server(self, self.server)
        self.server.add_insecure_port(f"unix://{self.endpoint}")
        reg = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
        reg_grpc.add_RegistrationServicer_to_server(self, reg)
        reg.add_insecure_port(f"unix://{self.reg_sock}")
        self.server.start()
        reg.start()
        self.reg_server = reg

    def stop(self) -> None:
        for s in (getattr(self, "reg_server", None), self.server):
            if s is not None:
                s.stop(0)
        for f in os.listdir(CDI_DIR) if os.path.isdir(CDI_DIR) else ():
            if f.startswith(self.name + "-"):
                os.unlink(os.path.join(CDI_DIR, f))
        shutil.rmtree(self.sock_dir, ignore_errors=True)
        if os.path.exists(self.reg_sock):
            os.unlink(self.reg_sock)


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    requirements()
    # a short base: the kubelet's plugins_registry sockets must fit AF_UNIX's 107 bytes
    base = tempfile.mkdtemp(prefix="drak-", dir="/tmp")
    e = Env(base)
    try:
        e.start()
        yield e
    finally:
        e.stop()
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def driver(env: Env) -> Iterator[Driver]:
    d = Driver(env, f"dra-{uuid.uuid4().hex[:6]}.pyk8s.io", ["v1beta1.DRAPlugin"])
    d.start()
    try:
        yield d
    finally:
        d.stop()


def _create(e: Env, obj: dict[str, Any]) -> dict[str, Any]:
    """resource.k8s.io objects (the harness creates core kinds only)."""
    plural = {"ResourceSlice": "resourceslices", "DeviceClass": "deviceclasses", "ResourceClaim": "resourceclaims",
              "ResourceClaimTemplate": "resourceclaimtemplates"}
    ns = obj["metadata"].get("namespace")
    path = f"/apis/resource.k8s.io/v1beta1/{f'namespaces/{ns}/' if ns else ''}{plural[obj['kind']]}"
    return e.api("POST", path, obj)


def _publish(e: Env, d: Driver) -> None:
    _create(e, {"apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceSlice",
              "metadata": {"name": f"{e.node}-{d.name}"},
              "spec": {"driver": d.name, "nodeName": e.node, "pool": {"name": e.node, "resourceSliceCount": 1},
                       "devices": [{"name": "dev-0", "basic": {}}, {"name": "dev-1", "basic": {}}]}})
    _create(e, {"apiVersion": "resource.k8s.io/v1beta1", "kind": "DeviceClass", "metadata": {"name": d.name},
              "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{d.name}"'}}]}})


def test_driver_registers_prepares_and_the_container_sees_its_cdi_env(env: Env, driver: Driver) -> None:
    e, d = env, driver
    e.wait(lambda: (True, "") in d.status, 20, "registration accepted")
    _publish(e, d)
    _create(e, {"apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceClaim",
              "metadata": {"name": "two", "namespace": "default"},
              "spec": {"devices": {"requests": [{"name": "r", "deviceClassName": d.name, "count": 2}]}}})
    script = "env | grep ^DRA_E2E | sort; echo DONE; sleep 3600"
    e.create(busybox_pod("dra", script, resourceClaims=[{"name": "gpus", "resourceClaimName": "two"}],
                         containers=[container("c", script, resources={"claims": [{"name": "gpus"}]}),
                                     container("other", "env | grep ^DRA_E2E; echo DONE; sleep 3600")]))
    e.wait_running("dra", 60)
    lines = e.wait_log("dra", "c", lambda ls: any(x.startswith("DONE") for x in ls), 30)
    assert "DRA_E2E_DEVICES=dev-0,dev-1" in lines and "DRA_E2E_CLAIM=two" in lines
    # a container that does not name the claim gets nothing of it
    other = e.wait_log("dra", "other", lambda ls: any(x.startswith("DONE") for x in ls), 30)
    assert not [x for x in other if x.startswith("DRA_E2E")]
    claim = e.get("/apis/resource.k8s.io/v1beta1/namespaces/default/resourceclaims/two")
    assert d.prepared == [claim["metadata"]["uid"]]
    e.delete_pod("dra", grace=0)
    e.wait_gone("dra")
    e.wait(lambda: d.unprepared == [claim["metadata"]["uid"]], 30, "claim unprepared")
    assert not [f for f in os.listdir(CDI_DIR) if f.startswith(d.name)]


def test_driver_with_unsupported_versions_is_refused(env: Env) -> None:
    d = Driver(env, f"dra-{uuid.uuid4().hex[:6]}.pyk8s.io", ["v1alpha3.Node"])
    d.start()
    try:
        env.wait(lambda: d.status, 20, "registration status")
        ok, err = d.status[0]
        assert not ok and "v1beta1.DRAPlugin" in err
        _publish(env, d)
        _create(env, {"apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceClaim",
                    "metadata": {"name": "refused", "namespace": "default"},
                    "spec": {"devices": {"requests": [{"name": "r", "deviceClassName": d.name}]}}})
        env.create(busybox_pod("refused", "sleep 3600", resourceClaims=[{"name": "g", "resourceClaimName": "refused"}],
                               containers=[container("c", "sleep 3600", resources={"claims": [{"name": "g"}]})]))

        def failed() -> bool:
            evs = env.events("refused")
            return any(f"DRA driver {d.name} is not registered" in (ev.get("message") or "") for ev in evs)

        env.wait(failed, 60, "CreateContainerConfigError for the unregistered driver")
        assert d.prepared == []
        env.delete_pod("refused", grace=0)
    finally:
        d.stop()


def _gpu_env(e: Env, name: str) -> dict[str, str]:
    lines = e.wait_log(name, "c", lambda ls: any(x.startswith("DONE") for x in ls), 30)
    return dict(x.split("=", 1) for x in lines if "=" in x)


def test_our_gpu_driver_shares_and_whole_gpus_reach_containers(env: Env) -> None:
    """`pyk8s dra-driver gpu --fake-gpus 2x16Gi`: an 8Gi share (two 4Gi shares of one parent) and a
    whole GPU land on different GPUs, and each container sees its GPU's UUID in its env."""
    e = env
    proc = subprocess.Popen(
        [sys.executable, "-m", "pyk8s.cli", "dra-driver", "gpu", "--fake-gpus", "2x16Gi", "--node-name", e.node,
         "--kubelet-root-dir", os.path.join(e.data, "kubelet"), "--kubeconfig", e.cluster.kubeconfig],
        cwd=str(REPO), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    slice_path = f"/apis/resource.k8s.io/v1beta1/resourceslices/{e.node}-gpu.pyk8s.io"
    try:
        s = e.wait(lambda: e.get(slice_path), 30, "the driver's ResourceSlice")
        assert len(s["spec"]["devices"]) == 10 and s["spec"]["nodeName"] == e.node
        _create(e, {"apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceClaimTemplate",
                    "metadata": {"name": "gpu-8gi", "namespace": "default"},
                    "spec": {"spec": {"devices": {
                        "requests": [{"name": "mem", "deviceClassName": "gpu-share.pyk8s.io", "count": 2}],
                        "constraints": [{"matchAttribute": "gpu.pyk8s.io/parent"}]}}}})
        _create(e, {"apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceClaimTemplate",
                    "metadata": {"name": "gpu-whole", "namespace": "default"},
                    "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "deviceClassName": "gpu.pyk8s.io"}]}}}})
        script = "env | grep -E '^(NVIDIA|PYK8S_GPU)' | sort; echo DONE; sleep 3600"
        for name, tmpl in (("share", "gpu-8gi"), ("whole", "gpu-whole")):
            e.create(busybox_pod(name, script, resourceClaims=[{"name": "g", "resourceClaimTemplateName": tmpl}],
                                 containers=[container("c", script, resources={"claims": [{"name": "g"}]})]))
            e.wait_running(name, 60)
        share, whole = _gpu_env(e, "share"), _gpu_env(e, "whole")
        assert share["PYK8S_GPU_MEMORY"] == "8Gi" and "PYK8S_GPU_MEMORY" not in whole
        gpus = {f"GPU-fake-{e.node}-0", f"GPU-fake-{e.node}-1"}
        assert {share["NVIDIA_VISIBLE_DEVICES"], whole["NVIDIA_VISIBLE_DEVICES"]} == gpus
        for name in ("share", "whole"):
            e.delete_pod(name, grace=0)
            e.wait_gone(name)
        e.wait(lambda: not [f for f in os.listdir(CDI_DIR) if f.startswith("gpu.pyk8s.io-")], 30,
               "CDI specs removed on unprepare")
    finally:
        proc.terminate()
        proc.wait(10)
        e.api("DELETE", slice_path)


def test_claims_prepared_before_a_kubelet_restart_are_unprepared_after_it(env: Env, driver: Driver) -> None:
    e, d = env, driver
    e.wait(lambda: (True, "") in d.status, 20, "registration accepted")
    _publish(e, d)
    _create(e, {"apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceClaim",
                "metadata": {"name": "kept", "namespace": "default"},
                "spec": {"devices": {"requests": [{"name": "r", "deviceClassName": d.name}]}}})
    e.create(busybox_pod("kept", "sleep 3600", resourceClaims=[{"name": "g", "resourceClaimName": "kept"}],
                         containers=[container("c", "sleep 3600", resources={"claims": [{"name": "g"}]})]))
    e.wait_running("kept", 60)
    cuid = e.get("/apis/resource.k8s.io/v1beta1/namespaces/default/resourceclaims/kept")["metadata"]["uid"]
    state = os.path.join(e.data, "kubelet", "dra_manager_state")
    assert os.stat(state).st_mode & 0o777 == 0o600
    with open(state) as f:
        assert cuid in json.dumps(json.load(f))
    e.agent.stop()
    e.agent.start()
    e.wait(lambda: e.node_ready(), 60, "node Ready again")
    e.wait(lambda: d.status.count((True, "")) >= 2, 20, "the driver registered with the new kubelet")
    e.delete_pod("kept", grace=0)
    e.wait_gone("kept")
    e.wait(lambda: cuid in d.unprepared, 30, "claim unprepared by the restarted kubelet")

"""The kubelet end to end with real runc pods: node registration, pod status, logs, env, volumes, networking, teardown."""

from __future__ import annotations

import ipaddress
import os
import random
import time
import urllib.request

import pytest

from tests.e2e.kubelet_harness import (
    IMAGE,
    Env,
    busybox_pod,
    condition,
    container,
    container_status,
    requirements,
    uid_leftovers,
)

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("runc-kubelet-pods"), pytest.mark.timeout(120)]


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    requirements()
    e = Env(str(tmp_path_factory.mktemp("kubelet-pods")),
            ["--node-labels", "e2e.pyk8s.io/role=test,team=kubelet",
             "--register-with-taints", "e2e.pyk8s.io/soft=yes:PreferNoSchedule"])
    try:
        e.start()
        yield e
    finally:
        e.stop()


def test_node_registration_status_and_lease(env):
    n = env.node_obj()
    md, st = n["metadata"], n["status"]
    assert md["labels"]["kubernetes.io/hostname"] == env.node and md["labels"]["kubernetes.io/os"] == "linux"
    assert md["labels"]["e2e.pyk8s.io/role"] == "test" and md["labels"]["team"] == "kubelet"
    assert {"key": "e2e.pyk8s.io/soft", "value": "yes", "effect": "PreferNoSchedule"} in n["spec"]["taints"]
    cidr = ipaddress.ip_network(n["spec"]["podCIDR"])
    assert cidr.prefixlen == 24 and str(cidr).startswith(env.net + ".")
    info = st["nodeInfo"]
    assert info["kubeletVersion"] == "v1.33.1" and info["containerRuntimeVersion"].startswith("runc://1.")
    assert "+" not in info["containerRuntimeVersion"] and info["operatingSystem"] == "linux"
    assert info["kernelVersion"] == os.uname().release and info["machineID"]
    assert st["capacity"]["pods"] == "110" and int(st["capacity"]["cpu"]) >= 1
    assert st["capacity"]["memory"].endswith("Ki") and st["allocatable"]["memory"] != st["capacity"]["memory"]
    assert st["daemonEndpoints"] == {"kubeletEndpoint": {"Port": env.agent.port}}
    types = [c["type"] for c in st["conditions"]]
    assert types == ["MemoryPressure", "DiskPressure", "PIDPressure", "Ready"]
    ready = condition(n, "Ready")
    assert (ready["reason"], ready["message"]) == ("KubeletReady", "kubelet is posting ready status")
    assert condition(n, "MemoryPressure")["reason"] == "KubeletHasSufficientMemory"
    assert {a["type"] for a in st["addresses"]} == {"InternalIP", "Hostname"}
    assert any("docker.io/library/busybox:e2e" in i["names"] for i in st["images"])
    assert not any(t["key"] == "node.kubernetes.io/not-ready" for t in n["spec"].get("taints") or [])
    # the Lease is written after the Node's status: absent for a moment on a loaded machine
    lease = env.wait(lambda: env.get(f"/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/{env.node}"),
                     30, "node Lease")
    assert lease["spec"]["holderIdentity"] == env.node and lease["spec"]["leaseDurationSeconds"] == 40
    assert lease["metadata"]["ownerReferences"][0]["kind"] == "Node"
    env.first_renew = lease["spec"]["renewTime"]  # checked to have moved on in the last test
    reasons = {e["reason"] for e in env.events(env.node, "default")}
    assert {"Starting", "NodeReady", "NodeHasSufficientMemory"} <= reasons


def test_pod_runs_logs_and_status(env):
    env.create(busybox_pod("hello", "echo hello from $(hostname); echo to-stderr >&2; sleep 3600"))
    p = env.wait_running("hello", 30)
    st = p["status"]
    assert ipaddress.ip_address(st["podIP"]) in ipaddress.ip_network(env.node_obj()["spec"]["podCIDR"])
    assert st["hostIP"] == next(a["address"] for a in env.node_obj()["status"]["addresses"] if a["type"] == "InternalIP")
    assert st["qosClass"] == "BestEffort" and st["startTime"]
    assert [c["type"] for c in st["conditions"]][:4] == ["PodReadyToStartContainers", "Initialized", "Ready",
                                                          "ContainersReady"]
    assert all(c["status"] == "True" for c in st["conditions"])
    c = container_status(p, "c")
    assert c["containerID"].startswith("runc://") and c["imageID"].startswith("sha256:")
    assert c["image"] == "docker.io/library/busybox:e2e" and c["ready"] and c["started"] and c["restartCount"] == 0
    env.wait_log("hello", "c", lambda ls: "hello from hello" in ls and "to-stderr" in ls)
    log = env.log_files(p, "c")[-1]
    assert log.endswith(f"default_hello_{p['metadata']['uid']}/c/0.log")
    evs = [(e["reason"], e["message"]) for e in env.events("hello")]
    assert ("Pulled", f'Container image "{IMAGE}" already present on machine') in evs
    assert ("Created", "Created container: c") in evs and ("Started", "Started container c") in evs
    assert all(e["source"]["component"] == "kubelet" for e in env.events("hello") if e["reason"] != "Scheduled")
    out = env.kubectl("get", "pod", "hello", "-o", "wide")
    head, row = out.splitlines()[:2]
    assert head.split() == ["NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE", "NOMINATED", "NODE",
                            "READINESS", "GATES"]
    assert row.split()[:3] == ["hello", "1/1", "Running"] and st["podIP"] in row and env.node in row


def test_env_volumes_and_propagation(env):
    env.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm-e2e"},
                "data": {"greeting": "hello", "extra": "x"}})
    env.create({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s-e2e"}, "stringData": {"password": "hunter2"}})
    script = (
        "echo ENV_GREETING=$GREETING; echo POD_IP=$POD_IP; echo NODE=$NODE; echo MEM=$MEM; "
        "echo KSH=$KUBERNETES_SERVICE_HOST; echo EXPANDED=$EXPANDED; echo FROM_extra=$CM_extra; "
        "awk '$2==\"/sec\" || $2==\"/mem\" {print \"MOUNT\", $2, $3}' /proc/mounts; "
        "sed 's/^/RESOLV /' /etc/resolv.conf; grep alias /etc/hosts | sed 's/^/HOSTS /'; "
        "test -s /var/run/secrets/kubernetes.io/serviceaccount/token && echo TOKEN=yes; "
        "echo NS=$(cat /var/run/secrets/kubernetes.io/serviceaccount/namespace); "
        "echo SECRET=$(cat /sec/password); ls -lL /sec/password | sed 's/^/SECMODE /'; "
        "echo sub > /sub/file && echo SUBPATH=ok; "
        "while true; do echo CM=$(cat /cfg/greeting) LABELS=$(tr '\\n' ' ' < /info/labels); sleep 0.3; done")
    pod = busybox_pod("vols", script, labels={"app": "vols"}, containers=[container(
        "c", script,
        env=[{"name": "GREETING", "valueFrom": {"configMapKeyRef": {"name": "cm-e2e", "key": "greeting"}}},
             {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
             {"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
             {"name": "MEM", "valueFrom": {"resourceFieldRef": {"resource": "limits.memory", "divisor": "1Mi"}}},
             {"name": "EXPANDED", "value": "$(GREETING)-world"}],
        envFrom=[{"prefix": "CM_", "configMapRef": {"name": "cm-e2e"}}],
        resources={"limits": {"memory": "64Mi"}},
        volumeMounts=[{"name": "cfg", "mountPath": "/cfg"}, {"name": "sec", "mountPath": "/sec"},
                      {"name": "info", "mountPath": "/info"}, {"name": "mem", "mountPath": "/mem"},
                      {"name": "scratch", "mountPath": "/sub", "subPath": "deep/dir"}])],
        volumes=[{"name": "cfg", "configMap": {"name": "cm-e2e"}},
                 {"name": "sec", "secret": {"secretName": "s-e2e", "defaultMode": 0o400}},
                 {"name": "info", "downwardAPI": {"items": [{"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}}]}},
                 {"name": "mem", "emptyDir": {"medium": "Memory", "sizeLimit": "8Mi"}},
                 {"name": "scratch", "emptyDir": {}}],
        hostAliases=[{"ip": "10.1.2.3", "hostnames": ["alias-one", "alias-two"]}],
        dnsConfig={"searches": ["extra.example"], "options": [{"name": "ndots", "value": "2"}]})
    env.create(pod)
    p = env.wait_running("vols", 30)
    lines = env.wait_log("vols", "c", lambda ls: any(x.startswith("CM=") for x in ls))
    text = "\n".join(lines)
    assert "ENV_GREETING=hello" in lines and f"POD_IP={p['status']['podIP']}" in lines and f"NODE={env.node}" in lines
    assert "MEM=64" in lines and "KSH=10.96.0.1" in lines and "EXPANDED=hello-world" in lines and "FROM_extra=x" in lines
    assert "MOUNT /sec tmpfs" in lines and "MOUNT /mem tmpfs" in lines
    assert "RESOLV search default.svc.cluster.local svc.cluster.local cluster.local extra.example" in text
    assert "RESOLV nameserver 10.96.0.10" in lines and "RESOLV options ndots:2" in lines
    assert "HOSTS 10.1.2.3\talias-one\talias-two" in lines
    assert "TOKEN=yes" in lines and "NS=default" in lines and "SECRET=hunter2" in lines and "SUBPATH=ok" in lines
    assert any(x.startswith("SECMODE -r--------") for x in lines)
    uid = p["metadata"]["uid"]
    assert open(os.path.join(env.data, "kubelet", "pods", uid, "volumes", "kubernetes.io~empty-dir", "scratch",
                             "deep", "dir", "file")).read() == "sub\n"
    assert any('app="vols"' in x for x in lines if x.startswith("CM=hello"))
    # a ConfigMap update and a label change reach the running container's files
    t0 = time.monotonic()
    env.api("PATCH", "/api/v1/namespaces/default/configmaps/cm-e2e", {"data": {"greeting": "updated"}},
            {"Content-Type": "application/merge-patch+json"})
    env.api("PATCH", "/api/v1/namespaces/default/pods/vols", {"metadata": {"labels": {"tier": "gold"}}},
            {"Content-Type": "application/merge-patch+json"})
    env.wait_log("vols", "c", lambda ls: any(x.startswith("CM=updated") and 'tier="gold"' in x for x in ls), 30)
    print(f"\nconfigMap/label propagation: {time.monotonic() - t0:.1f}s")
    # the env var took its value at start and keeps it
    assert env.log_text(env.pod("vols"), "c").count("ENV_GREETING=hello") == 1


def test_host_network_host_port_and_pod_traffic(env):
    node_ip = next(a["address"] for a in env.node_obj()["status"]["addresses"] if a["type"] == "InternalIP")
    host_port = random.randint(20000, 29999)
    web = busybox_pod("web", "", containers=[container(
        "web", "mkdir -p /www && echo hello-web > /www/index.html && exec httpd -f -p 8080 -h /www",
        ports=[{"containerPort": 8080, "hostPort": host_port, "name": "http"}],
        readinessProbe={"httpGet": {"path": "/index.html", "port": "http"}, "periodSeconds": 1},
        livenessProbe={"tcpSocket": {"port": 8080}, "periodSeconds": 2})])
    env.create(web)
    env.create(busybox_pod("hostnet", "echo HOST=$(hostname); ip -o -4 addr | awk '{print \"ADDR\", $4}'; sleep 3600",
                           hostNetwork=True))
    p = env.wait_pod("web", lambda p: condition(p, "Ready").get("status") == "True", 30, what="web Ready")
    web_ip = p["status"]["podIP"]
    env.create(busybox_pod("client", f"while true; do wget -q -O- http://{web_ip}:8080/index.html; sleep 0.5; done"))
    env.wait_log("client", "c", lambda ls: "hello-web" in ls, 30)
    body = urllib.request.urlopen(f"http://{node_ip}:{host_port}/index.html", timeout=5).read().decode()
    assert body == "hello-web\n"
    h = env.wait_running("hostnet")
    assert h["status"]["podIP"] == node_ip
    lines = env.wait_log("hostnet", "c", lambda ls: any(x.startswith("ADDR") for x in ls))
    assert f"HOST={os.uname().nodename}" in lines and any(x.startswith(f"ADDR {node_ip}/") for x in lines)


def test_pvc_and_fs_group(env, tmp_path):
    host_dir = str(tmp_path / "pv")
    env.create({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv-e2e"},
                "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "storageClassName": "manual",
                         "hostPath": {"path": host_dir, "type": "DirectoryOrCreate"}}})
    for name, vol in (("claim", "pv-e2e"), ("unbound", "")):
        env.create({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name},
                    "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "manual", "volumeName": vol,
                             "resources": {"requests": {"storage": "1Gi"}}}})
    env.wait(lambda: env.get("/api/v1/namespaces/default/persistentvolumeclaims/claim"), 5, "claim")
    if (env.get("/api/v1/namespaces/default/persistentvolumeclaims/claim").get("status") or {}).get("phase") != "Bound":
        # no PV controller in this cluster: bind by hand, as it would
        env.api("PATCH", "/api/v1/namespaces/default/persistentvolumeclaims/claim/status", {"status": {"phase": "Bound"}},
                {"Content-Type": "application/merge-patch+json"})
    env.create(busybox_pod("pvc", "", securityContext={"fsGroup": 2345, "runAsUser": 1000},
                           containers=[container("c", "echo GROUPS=$(id -G); echo DATA_GID=$(stat -c %g /scratch); "
                                                      "echo hi > /data/from-pod && echo WROTE; sleep 3600",
                                                 volumeMounts=[{"name": "d", "mountPath": "/data"},
                                                               {"name": "s", "mountPath": "/scratch"}])],
                           volumes=[{"name": "d", "persistentVolumeClaim": {"claimName": "claim"}},
                                    {"name": "s", "emptyDir": {}}]))
    # placed by hand: the scheduler's VolumeBinding keeps pods with unbound Immediate claims out
    env.create(busybox_pod("pvc-unbound", "sleep 3600", nodeName=env.node, volumes=[{"name": "d", "persistentVolumeClaim": {
        "claimName": "unbound"}}]))
    os.makedirs(host_dir, exist_ok=True)
    os.chmod(host_dir, 0o777)
    lines = env.wait_log("pvc", "c", lambda ls: "WROTE" in ls, 30)
    assert open(os.path.join(host_dir, "from-pod")).read() == "hi\n"
    assert "2345" in next(x for x in lines if x.startswith("GROUPS=")).split("=")[1].split()
    assert "DATA_GID=2345" in lines
    p = env.wait_pod("pvc-unbound", lambda p: any(e["reason"] == "FailedMount" for e in env.events("pvc-unbound")), 20)
    assert p["status"]["containerStatuses"][0]["state"]["waiting"]["reason"] == "ContainerCreating"
    msg = next(e["message"] for e in env.events("pvc-unbound") if e["reason"] == "FailedMount")
    assert msg.endswith("failed to process volumes=[d]: error processing PVC default/unbound: PVC is not bound"), msg
    env.delete_pod("pvc-unbound", 0)


def test_teardown_leaves_nothing(env):
    from pyk8s.kubelet.runtime.sandbox import NETNS_DIR

    env.create(busybox_pod("doomed", "sleep 3600", volumes=[{"name": "m", "emptyDir": {"medium": "Memory"}}],
                           containers=[container("c", "sleep 3600", volumeMounts=[{"name": "m", "mountPath": "/m"}])]))
    p = env.wait_running("doomed")
    uid = p["metadata"]["uid"]
    sandboxes = os.listdir(os.path.join(env.data, "runtime", "sandboxes"))
    assert sandboxes and uid_leftovers(uid, env.data)
    env.delete_all_pods()
    assert not uid_leftovers(uid, env.data)
    assert os.listdir(os.path.join(env.data, "runtime", "sandboxes")) == []
    assert os.listdir(os.path.join(env.data, "runtime", "containers")) == []
    assert not [n for n in os.listdir(NETNS_DIR) if any(n == f"pyk8s-{s[:16]}" for s in sandboxes)]
    assert os.listdir(os.path.join(env.data, "kubelet", "pods")) == []
    assert os.listdir(os.path.join(env.data, "logs")) == []
    veths = os.popen(f"ip -br link show master {env.bridge}").read().strip()
    assert veths == "", veths
    assert os.listdir(env.runc_root) == []


def test_lease_renewed(env):
    env.wait(lambda: env.get(f"/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/{env.node}")
             ["spec"]["renewTime"] != getattr(env, "first_renew", ""), 15, "lease renewal")

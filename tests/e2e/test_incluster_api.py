"""The API from inside pods (issue 18): in-cluster config in real runc pods, as a pod's ServiceAccount.

Pods reach the API server on the address the `kubernetes` Endpoints advertise (the node's address,
where the server now listens) with the projected `kube-api-access-*` volume: a bound token, the
cluster CA from `kube-root-ca.crt` and the namespace. kubectl (a static binary mounted from the
host) and the official Python client (the host's interpreter and this venv's site-packages,
mounted read-only) run inside busybox pods without a kubeconfig and act as the ServiceAccount:
RBAC decides, the serving certificate is verified against ca.crt, bound tokens die with their pod.

The pods run on a node in a network namespace of its own (netns_cluster), whose service proxy
DNATs `kubernetes.default.svc` (10.96.0.1:443) to the advertised address: in-cluster config goes
through the Service, as in a real cluster (`IN_CLUSTER_ENV_OVERRIDE = True` names the advertised
address in each pod's own env instead, which also checks that a container's env wins over the
kubelet's service variables).
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import sysconfig
from typing import Any

import pytest

from tests.cluster import kubectl_binaries, raw_request
from tests.conftest import require, require_binary
from tests.e2e.kubelet_harness import IMAGE, Env, requirements
from tests.e2e.netns_cluster import NetnsCluster

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("incluster-netns"), pytest.mark.timeout(240)]

# the pods name the advertised address in their own env instead of going through 10.96.0.1
IN_CLUSTER_ENV_OVERRIDE = False

NS = "incluster"
SA = "reader"
SA_USER = f"system:serviceaccount:{NS}:{SA}"
TOKEN_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Any:
    requirements()
    require("kubectl (versioned binaries kubectl.1.27 ... kubectl.1.33)", bool(kubectl_binaries()))
    e = NetnsCluster(str(tmp_path_factory.mktemp("incluster")), nodes=1)
    try:
        e.start()
        prepare(e)
        yield e
    finally:
        e.stop()


def prepare(e: Env) -> None:
    """The test namespace, its ServiceAccount, and the CA ConfigMap the pods' projected volume needs."""
    e.api("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
    e.api("POST", f"/api/v1/namespaces/{NS}/serviceaccounts",
          {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": SA}})
    e.wait(lambda: e.get(f"/api/v1/namespaces/{NS}/configmaps/kube-root-ca.crt"), 30, "kube-root-ca.crt")


def advertised(env: Env) -> tuple[str, int]:
    """The API server's address and port as the `kubernetes` Endpoints and EndpointSlice publish them."""
    ep = env.get("/api/v1/namespaces/default/endpoints/kubernetes")
    sl = env.get("/apis/discovery.k8s.io/v1/namespaces/default/endpointslices/kubernetes")
    assert ep is not None and sl is not None
    host = ep["subsets"][0]["addresses"][0]["ip"]
    port = ep["subsets"][0]["ports"][0]["port"]
    assert sl["endpoints"][0]["addresses"] == [host] and sl["ports"][0]["port"] == port
    return host, port


def service_env(env: Env) -> list[dict[str, str]]:
    if not IN_CLUSTER_ENV_OVERRIDE:
        return []
    host, port = advertised(env)
    return [{"name": "KUBERNETES_SERVICE_HOST", "value": host}, {"name": "KUBERNETES_SERVICE_PORT", "value": str(port)}]


def host_python() -> tuple[str, str, list[dict[str, Any]], list[dict[str, Any]]]:
    """This test's interpreter for a busybox pod: (python, PYTHONPATH, volumes, mounts), all read-only hostPaths
    at their host paths: the installation, the venv's site-packages and the shared libraries they load."""
    require_binary("ldd")
    exe = os.path.realpath(sys.executable)
    site = sysconfig.get_paths()["purelib"]
    dirs = {os.path.realpath(sys.base_prefix), os.path.realpath(site)}
    ssl_ext = __import__("_ssl").__file__
    for binary in (exe, ssl_ext):
        out = subprocess.run(["ldd", binary], capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            parts = line.split()
            path = parts[2] if len(parts) > 2 and parts[1] == "=>" else parts[0]
            if path.startswith("/"):
                dirs.add(os.path.dirname(path))  # as the loader names it: it searches those paths
    chosen = sorted(d for d in dirs if not any(d != o and d.startswith(o + "/") for o in dirs))
    vols, mounts = [], []
    for i, d in enumerate(chosen):
        vols.append({"name": f"py{i}", "hostPath": {"path": os.path.realpath(d), "type": "Directory"}})
        mounts.append({"name": f"py{i}", "mountPath": d, "readOnly": True})
    return exe, site, vols, mounts


def kubectl_volume() -> tuple[dict[str, Any], dict[str, Any]]:
    binary = list(kubectl_binaries().values())[-1]  # the newest: the server's minor where installed
    return ({"name": "kubectl", "hostPath": {"path": binary, "type": "File"}},
            {"name": "kubectl", "mountPath": "/opt/bin/kubectl", "readOnly": True})


def pod(env: Env, name: str, script: str, *, python: bool = False, extra_env: list[dict[str, str]] | None = None,
        **spec: Any) -> dict[str, Any]:
    """A busybox pod of `SA` running `script` once, with kubectl on its PATH (and the host's Python)."""
    kvol, kmount = kubectl_volume()
    vols, mounts = [kvol, *spec.pop("volumes", [])], [kmount, *spec.pop("volumeMounts", [])]
    envs = [{"name": "PATH", "value": "/opt/bin:/bin"}, {"name": "HOME", "value": "/tmp"},
            *service_env(env), *(extra_env or [])]
    if python:
        exe, site, pvols, pmounts = host_python()
        vols += pvols
        mounts += pmounts
        envs += [{"name": "PYTHON", "value": exe}, {"name": "PYTHONPATH", "value": site}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NS},
            "spec": {"serviceAccountName": SA, "restartPolicy": "Never", "terminationGracePeriodSeconds": 1,
                     "volumes": vols, **spec,
                     "containers": [{"name": "c", "image": IMAGE, "imagePullPolicy": "IfNotPresent",
                                     "command": ["sh", "-c", script], "env": envs, "volumeMounts": mounts}]}}


def run_to_end(env: Env, obj: dict[str, Any], timeout: float = 90) -> list[str]:
    """Create the pod, wait for it to finish, and return its log lines (asserting it succeeded)."""
    name = obj["metadata"]["name"]
    env.api("POST", f"/api/v1/namespaces/{NS}/pods", obj)
    p = env.wait_pod(name, lambda p: p["status"]["phase"] in ("Succeeded", "Failed"), timeout, NS)
    lines = env.log_text(p, "c")
    assert p["status"]["phase"] == "Succeeded", "\n".join(lines)
    return lines


def value(lines: list[str], key: str) -> str:
    found = [ln[len(key) + 1:] for ln in lines if ln.startswith(key + " ")]
    assert found, f"no {key!r} line in:\n" + "\n".join(lines)
    return found[-1]


def grant_pod_reader(env: Env) -> None:
    env.api("POST", f"/apis/rbac.authorization.k8s.io/v1/namespaces/{NS}/roles",
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "pod-reader"},
             "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]}]})
    env.api("POST", f"/apis/rbac.authorization.k8s.io/v1/namespaces/{NS}/rolebindings",
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "reader-pods"},
             "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "pod-reader"},
             "subjects": [{"kind": "ServiceAccount", "name": SA, "namespace": NS}]})


def forbidden(verb: str, resource: str, ns: str, user: str = SA_USER) -> str:
    return (f'Error from server (Forbidden): {resource} is forbidden: User "{user}" cannot {verb} resource '
            f'"{resource}" in API group "" in the namespace "{ns}"')


def test_kubectl_in_a_pod_is_its_service_account_under_rbac(env: Env) -> None:
    """kubectl with no kubeconfig uses in-cluster config: whoami, forbidden, then allowed by a RoleBinding."""
    host, port = advertised(env)
    script = """
echo "host $KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT"
echo "service-addr $KUBERNETES_PORT_443_TCP_ADDR"
echo "whoami $(kubectl auth whoami -o jsonpath='{.status.userInfo.username}' 2>&1)"
echo "first $(kubectl get pods -o name 2>&1)"
touch /tmp/waiting
until kubectl get pods -o name >/tmp/pods 2>&1; do sleep 0.2; done
echo "pods $(cat /tmp/pods | tr '\\n' ' ')"
echo "other-ns $(kubectl get pods -n default -o name 2>&1)"
echo "secrets $(kubectl get secrets 2>&1)"
"""
    obj = pod(env, "kubectl-sa", script)
    env.api("POST", f"/api/v1/namespaces/{NS}/pods", obj)
    lines = env.wait_log("kubectl-sa", "c", lambda ls: any(ln.startswith("first ") for ln in ls), 60, NS)
    if IN_CLUSTER_ENV_OVERRIDE:  # the container's env wins over the kubelet's service variables
        assert value(lines, "host") == f"{host}:{port}"
        assert value(lines, "service-addr") == "10.96.0.1"  # the kubelet's own, still there
    else:
        assert value(lines, "host") == "10.96.0.1:443"
    assert value(lines, "whoami") == SA_USER
    assert value(lines, "first") == forbidden("list", "pods", NS)
    grant_pod_reader(env)
    p = env.wait_pod("kubectl-sa", lambda p: p["status"]["phase"] in ("Succeeded", "Failed"), 60, NS)
    lines = env.log_text(p, "c")
    assert p["status"]["phase"] == "Succeeded", lines
    assert "pod/kubectl-sa" in value(lines, "pods").split()
    assert value(lines, "other-ns") == forbidden("list", "pods", "default")  # a Role binds in its namespace only
    assert value(lines, "secrets") == forbidden("list", "secrets", NS)


PY_CLIENT = r"""
import json, socket, ssl, sys
from kubernetes import client, config

config.load_incluster_config()
cfg = client.Configuration.get_default_copy()
print("config", cfg.host, cfg.verify_ssl, cfg.ssl_ca_cert is not None)
v1 = client.CoreV1Api()
print("pods", " ".join(sorted(p.metadata.name for p in v1.list_namespaced_pod("%(ns)s").items)))
try:
    v1.list_namespaced_secret("%(ns)s")
    print("secrets listed")
except client.ApiException as e:
    print("secrets", e.status, json.loads(e.body)["reason"])
review = client.AuthenticationV1Api().create_self_subject_review({"apiVersion": "authentication.k8s.io/v1",
                                                                   "kind": "SelfSubjectReview"})
print("user", review.status.user_info.username)
print("pod-name", review.status.user_info.extra["authentication.kubernetes.io/pod-name"][0])
ctx = ssl.create_default_context(cafile="%(dir)s/ca.crt")
host, port = cfg.host[len("https://"):].rsplit(":", 1)
for name in sys.argv[1:]:
    try:
        with socket.create_connection((host.strip("[]"), int(port)), 5) as s, ctx.wrap_socket(s, server_hostname=name):
            print("tls", name, "verified")
    except ssl.SSLCertVerificationError as e:
        print("tls", name, "refused", e.verify_message)
"""


def test_python_client_in_a_pod_uses_in_cluster_config(env: Env) -> None:
    """The official client's load_incluster_config(): verified TLS, the SA's RBAC, the SANs pods rely on."""
    host, _ = advertised(env)
    names = ["kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local",
             "localhost", "10.96.0.1", host, "not-the-apiserver.example"]
    code = PY_CLIENT % {"ns": NS, "dir": TOKEN_DIR}
    lines = run_to_end(env, pod(env, "python-client", '"$PYTHON" -c "$CODE" ' + " ".join(names), python=True,
                                extra_env=[{"name": "CODE", "value": code}]))
    assert value(lines, "config").split() == [f"https://{host}:{advertised(env)[1]}" if IN_CLUSTER_ENV_OVERRIDE
                                             else "https://10.96.0.1:443", "True", "True"]
    assert "python-client" in value(lines, "pods").split()  # the RoleBinding of the test above
    assert value(lines, "secrets") == "403 Forbidden"
    assert value(lines, "user") == SA_USER and value(lines, "pod-name") == "python-client"
    for name in names[:-1]:
        assert value(lines, f"tls {name}") == "verified", name
    assert value(lines, "tls not-the-apiserver.example").startswith("refused")  # the check can fail


ANONYMOUS = r"""
import json, os, ssl, urllib.error, urllib.request
from kubernetes import config

try:
    config.load_incluster_config()
    print("in-cluster loaded")
except config.ConfigException as e:
    print("in-cluster", e)
url = "https://%s:%s/api/v1/namespaces/%(ns)s/pods" % (os.environ["KUBERNETES_SERVICE_HOST"],
                                                     os.environ["KUBERNETES_SERVICE_PORT"])
try:
    urllib.request.urlopen(url, context=ssl.create_default_context(cafile="/ca/ca.crt"), timeout=10)
    print("anonymous listed")
except urllib.error.HTTPError as e:
    print("anonymous", e.code, json.loads(e.read())["message"])
"""


def test_no_automount_means_anonymous(env: Env) -> None:
    """automountServiceAccountToken: false: no token in the pod, and the API sees system:anonymous."""
    ca = {"name": "ca", "configMap": {"name": "kube-root-ca.crt"}}
    code = ANONYMOUS.replace("%(ns)s", NS)
    lines = run_to_end(env, pod(env, "no-token", f'echo "sa-dir $(ls {TOKEN_DIR} 2>&1)"; "$PYTHON" -c "$CODE"',
                                python=True, extra_env=[{"name": "CODE", "value": code}],
                                automountServiceAccountToken=False, volumes=[ca],
                                volumeMounts=[{"name": "ca", "mountPath": "/ca", "readOnly": True}]))
    stored = env.get(f"/api/v1/namespaces/{NS}/pods/no-token")
    assert not any(v["name"].startswith("kube-api-access-") for v in stored["spec"]["volumes"])
    assert value(lines, "sa-dir").endswith("No such file or directory")
    assert value(lines, "in-cluster") == "Service token file does not exist."
    assert value(lines, "anonymous") == ('403 pods is forbidden: User "system:anonymous" cannot list resource "pods" '
                                         f'in API group "" in the namespace "{NS}"')


def _claims(token: str) -> dict[str, Any]:
    payload = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))


def _whoami(env: Env, token: str) -> tuple[int, dict[str, Any]]:
    r = raw_request(env.cluster, "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews",
                    {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"},
                    {"Authorization": f"Bearer {token}"}, auth=False)
    return r.status, r.json()


def test_bound_token_dies_with_its_pod(env: Env) -> None:
    """The projected token is bound to its pod: audience, expiry, pod name and UID. Another pod that got hold
    of it (no token of its own) is that ServiceAccount only while the pod lives; the API rejects it once the pod
    is deleted, also when a pod of the same name replaces it (another UID)."""
    obj = pod(env, "token-holder", f"cat {TOKEN_DIR}/token; echo; echo; sleep 3600")
    env.api("POST", f"/api/v1/namespaces/{NS}/pods", obj)
    lines = env.wait_log("token-holder", "c", lambda ls: len(ls) >= 2, 60, NS)
    token = lines[0]
    first = env.pod("token-holder", NS)
    assert first is not None
    c = _claims(token)
    assert c["aud"] == ["https://kubernetes.default.svc.cluster.local"] and c["sub"] == SA_USER
    # the kubelet asks for 3607 s; the API server extends that to a year and flags use after 3607 s
    assert c["exp"] - c["iat"] == 365 * 24 * 3600 and c["kubernetes.io"]["warnafter"] == c["iat"] + 3607
    assert c["kubernetes.io"]["pod"] == {"name": "token-holder", "uid": first["metadata"]["uid"]}
    assert c["kubernetes.io"]["node"] == {"name": env.node, "uid": env.node_obj()["metadata"]["uid"]}

    whoami = ('kubectl --server "https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT" '
              '--certificate-authority /ca/ca.crt --token "$STOLEN" auth whoami -o jsonpath={.status.userInfo.username}')
    script = f"""
echo "while-alive $({whoami} 2>&1)"
until ! {whoami} >/tmp/out 2>&1; do sleep 0.2; done
echo "after-delete $(cat /tmp/out)"
"""
    thief = pod(env, "thief", script, automountServiceAccountToken=False, extra_env=[{"name": "STOLEN", "value": token}],
                volumes=[{"name": "ca", "configMap": {"name": "kube-root-ca.crt"}}],
                volumeMounts=[{"name": "ca", "mountPath": "/ca", "readOnly": True}])
    env.api("POST", f"/api/v1/namespaces/{NS}/pods", thief)
    lines = env.wait_log("thief", "c", lambda ls: any(ln.startswith("while-alive ") for ln in ls), 60, NS)
    assert value(lines, "while-alive") == SA_USER

    env.delete_pod("token-holder", 0, NS)
    env.wait_gone("token-holder", 60, NS)
    p = env.wait_pod("thief", lambda p: p["status"]["phase"] in ("Succeeded", "Failed"), 60, NS)
    lines = env.log_text(p, "c")
    assert value(lines, "after-delete") == "error: You must be logged in to the server (Unauthorized)"
    status, body = _whoami(env, token)
    assert (status, body["reason"]) == (401, "Unauthorized"), body

    env.api("POST", f"/api/v1/namespaces/{NS}/pods", pod(env, "token-holder", "sleep 3600"))
    assert env.pod("token-holder", NS)["metadata"]["uid"] != first["metadata"]["uid"]
    status, body = _whoami(env, token)
    assert (status, body["reason"]) == (401, "Unauthorized"), body


def test_pod_on_another_node_reaches_the_address_the_server_advertises(tmp_path_factory: pytest.TempPathFactory
                                                                       ) -> None:
    """The layout of machines on one link: the server on the host bound to its link address, a node in its own
    network namespace. With no --advertise-address the server advertises its bind address (upstream's
    ResolveBindAddress), which a pod on that node reaches: in-cluster kubectl there is its ServiceAccount."""
    require("kubectl (versioned binaries kubectl.1.27 ... kubectl.1.33)", bool(kubectl_binaries()))
    nc = NetnsCluster(tmp_path_factory.mktemp("incluster-netns"), nodes=1)
    args = nc.cluster.extra_args
    del args[args.index("--advertise-address"):args.index("--advertise-address") + 2]  # its default is the point
    with nc:
        assert advertised(nc) == (nc.host_ip, nc.cluster.port)
        prepare(nc)
        script = """
echo "whoami $(kubectl auth whoami -o jsonpath='{.status.userInfo.username}' 2>&1)"
echo "pods $(kubectl get pods 2>&1)"
"""
        lines = run_to_end(nc, pod(nc, "remote-kubectl", script))
        assert value(lines, "whoami") == SA_USER
        assert value(lines, "pods") == forbidden("list", "pods", NS)

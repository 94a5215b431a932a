"""Every installed kubectl (1.27 ... 1.33) against one pyk8s server: the everyday commands print what they
print against upstream v1.33. Messages and columns are pinned to ../shared/reference/upstream-observed.md
where it has them, otherwise to upstream kubectl's own formats."""

from __future__ import annotations

import json
import os
import re
import time

import pytest

from .kubectl_compat import MANIFESTS, VERSIONS, Kubectl, ensure_nodes, ensure_ns, table

# `kubectl api-versions` of upstream-observed.md, plus the deprecated workload versions pyk8s advertises
UPSTREAM_API_VERSIONS = """admissionregistration.k8s.io/v1 apiextensions.k8s.io/v1 apiregistration.k8s.io/v1 apps/v1
authentication.k8s.io/v1 authorization.k8s.io/v1 autoscaling/v1 autoscaling/v2 batch/v1 certificates.k8s.io/v1
coordination.k8s.io/v1 discovery.k8s.io/v1 events.k8s.io/v1 flowcontrol.apiserver.k8s.io/v1 networking.k8s.io/v1
node.k8s.io/v1 policy/v1 rbac.authorization.k8s.io/v1 scheduling.k8s.io/v1 storage.k8s.io/v1 v1""".split()
DEPRECATED_API_VERSIONS = ["apps/v1beta1", "apps/v1beta2", "extensions/v1beta1"]
# beta in v1.33 and off by default there; served here as a cluster with --runtime-config=resource.k8s.io/v1beta1=true,resource.k8s.io/v1beta2=true
# (and the DynamicResourceAllocation gate) serves it (docs/dra.md)
BETA_API_VERSIONS = ["resource.k8s.io/v1beta1", "resource.k8s.io/v1beta2"]
# aggregated: the built-in metrics server's APIService, as a cluster running metrics-server lists it
AGGREGATED_API_VERSIONS = ["metrics.k8s.io/v1beta1"]

DEPLOYMENT = """apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {app: web}
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: nginx
        image: nginx:1.25
        ports:
        - containerPort: 80
        env:
        - name: MODE
          value: "one"
"""


@pytest.fixture(scope="module")
def k_by_version(cluster):
    return {v: Kubectl(cluster, v) for v in VERSIONS if v != "none"}


def _k(k_by_version, version) -> Kubectl:
    if version not in k_by_version:
        pytest.skip("no kubectl binaries")
    return k_by_version[version]


@pytest.mark.parametrize("version", VERSIONS)
def test_discovery_api_versions_and_resources(k_by_version, version):
    k = _k(k_by_version, version)
    got = k.out("api-versions").split()
    deadline = time.monotonic() + 30  # the metrics server registers its APIService once it serves
    while not set(AGGREGATED_API_VERSIONS) <= set(got) and time.monotonic() < deadline:
        time.sleep(0.5)
        got = k.out("api-versions").split()
    assert got == sorted(UPSTREAM_API_VERSIONS + DEPRECATED_API_VERSIONS + BETA_API_VERSIONS
                         + AGGREGATED_API_VERSIONS)
    rows = {tuple(r) for r in table(k.out("api-resources"))}
    assert ("NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND") in rows
    for row in [("pods", "po", "v1", "true", "Pod"), ("bindings", "v1", "true", "Binding"),
                ("deployments", "deploy", "apps/v1", "true", "Deployment"),
                ("horizontalpodautoscalers", "hpa", "autoscaling/v2", "true", "HorizontalPodAutoscaler"),
                ("customresourcedefinitions", "crd,crds", "apiextensions.k8s.io/v1", "false",
                 "CustomResourceDefinition"),
                ("daemonsets", "extensions/v1beta1", "true", "DaemonSet")]:
        assert row in rows, row
    # kubectl's own short-name expansion still lands on apps/v1, with no "could also match" warning
    r = k.run("get", "ds", "-A")
    assert "could also match" not in r.stderr


@pytest.mark.parametrize("version", VERSIONS)
def test_component_statuses_and_local_api_services(k_by_version, version):
    k = _k(k_by_version, version)
    r = k.run("get", "componentstatuses")
    assert r.stderr == "Warning: v1 ComponentStatus is deprecated in v1.19+\n"
    assert sorted(table(r.stdout)[1:]) == [["controller-manager", "Healthy", "ok"], ["etcd-0", "Healthy", "ok"],
                                           ["scheduler", "Healthy", "ok"]]
    rows = table(k.out("get", "apiservices"))
    assert rows[0] == ["NAME", "SERVICE", "AVAILABLE", "AGE"]
    by_name = {r[0]: r[1:3] for r in rows[1:]}
    assert by_name["v1."] == ["Local", "True"] and by_name["v1.apps"] == ["Local", "True"]
    assert {f"{v.split('/')[-1]}.{v.split('/')[0] if '/' in v else ''}" for v in UPSTREAM_API_VERSIONS} <= set(by_name)


@pytest.mark.parametrize("version", VERSIONS)
def test_client_side_apply_diff_and_patches(k_by_version, version, tmp_path):
    k = _k(k_by_version, version)
    ns = ensure_ns(k)
    f = tmp_path / "web.yaml"
    f.write_text(DEPLOYMENT)
    kn = lambda *a, **kw: k.run("-n", ns, *a, **kw)  # noqa: E731
    assert kn("apply", "-f", str(f)).stdout == "deployment.apps/web created\n"
    assert kn("apply", "-f", str(f)).stdout == "deployment.apps/web unchanged\n"
    last = json.loads(k.json("-n", ns, "get", "deploy", "web")["metadata"]["annotations"][
        "kubectl.kubernetes.io/last-applied-configuration"])
    assert last["spec"]["template"]["spec"]["containers"][0]["env"] == [{"name": "MODE", "value": "one"}]

    changed = tmp_path / "web2.yaml"
    changed.write_text(DEPLOYMENT.replace('"one"', '"two"'))
    r = kn("diff", "-f", str(changed), check=False)
    assert r.returncode == 1, r.stderr  # 1: differences found
    assert "-          value: one\n" in r.stdout and "+          value: two\n" in r.stdout
    assert kn("diff", "-f", str(f)).stdout == ""
    assert kn("apply", "-f", str(changed)).stdout == "deployment.apps/web configured\n"

    # a field removed from the manifest is removed from the object (three-way merge via last-applied)
    removed = tmp_path / "web3.yaml"
    removed.write_text(re.sub(r"        env:\n.*\n.*\n", "", DEPLOYMENT))
    assert kn("apply", "-f", str(removed)).stdout == "deployment.apps/web configured\n"
    c = k.json("-n", ns, "get", "deploy", "web")["spec"]["template"]["spec"]["containers"][0]
    assert "env" not in c

    assert kn("patch", "deploy", "web", "--type", "json",
              "-p", '[{"op":"replace","path":"/spec/replicas","value":3}]').stdout == "deployment.apps/web patched\n"
    assert kn("patch", "deploy", "web", "--type", "merge",
              "-p", '{"metadata":{"labels":{"tier":"front"}}}').stdout == "deployment.apps/web patched\n"
    assert kn("patch", "deploy", "web", "-p",
              '{"spec":{"template":{"spec":{"containers":[{"name":"nginx","image":"nginx:1.26"}]}}}}'
              ).stdout == "deployment.apps/web patched\n"
    # kubectl reports "(no change)" by comparing the object it read before patching with the reply; the
    # deployment controller may write status in between (the rollout above), so allow it a few tries
    outs = []
    for _ in range(5):
        outs.append(kn("patch", "deploy", "web", "-p", '{"spec":{"replicas":3}}').stdout)
        if outs[-1] == "deployment.apps/web patched (no change)\n":
            break
        time.sleep(1)
    assert outs[-1] == "deployment.apps/web patched (no change)\n", outs
    d = k.json("-n", ns, "get", "deploy", "web")
    assert d["spec"]["replicas"] == 3 and d["metadata"]["labels"]["tier"] == "front"
    # strategic merge: the container list merged by name, the port kept
    c = d["spec"]["template"]["spec"]["containers"]
    assert len(c) == 1 and c[0]["image"] == "nginx:1.26" and c[0]["ports"][0]["containerPort"] == 80

    assert kn("label", "deploy", "web", "stage=a").stdout == "deployment.apps/web labeled\n"
    r = kn("label", "deploy", "web", "stage=b", check=False)
    assert r.stderr == "error: 'stage' already has a value (a), and --overwrite is false\n"
    assert kn("label", "deploy", "web", "stage=b", "--overwrite").stdout == "deployment.apps/web labeled\n"
    assert kn("label", "deploy", "web", "stage-").stdout == "deployment.apps/web unlabeled\n"
    annotated = "deployment.apps/web annotate\n" if k.minor == 27 else "deployment.apps/web annotated\n"
    assert kn("annotate", "deploy", "web", "note=hi").stdout == annotated  # (kubectl 1.27 itself says "annotate")
    assert kn("annotate", "deploy", "web", "note-").stdout == annotated
    assert kn("scale", "deploy", "web", "--replicas=1").stdout == "deployment.apps/web scaled\n"
    assert kn("set", "image", "deploy/web", "nginx=nginx:1.27").stdout == "deployment.apps/web image updated\n"
    d = k.json("-n", ns, "get", "deploy", "web")
    assert d["spec"]["replicas"] == 1
    assert "stage" not in d["metadata"]["labels"] and "note" not in d["metadata"].get("annotations", {})

    # output formats
    assert kn("get", "deploy", "-o", "name").stdout == "deployment.apps/web\n"
    assert kn("get", "deploy", "web", "-o", "jsonpath={.spec.template.spec.containers[0].image}").stdout == \
        "nginx:1.27"
    assert table(kn("get", "deploy", "-o", "custom-columns=NAME:.metadata.name,REPLICAS:.spec.replicas").stdout) \
        == [["NAME", "REPLICAS"], ["web", "1"]]
    wide = table(kn("get", "deploy", "web", "-o", "wide").stdout)
    assert wide[0] == ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE", "CONTAINERS", "IMAGES", "SELECTOR"]
    assert wide[1][0] == "web" and wide[1][5:] == ["nginx", "nginx:1.27", "app=web"]
    assert table(kn("get", "deploy", "-L", "app").stdout)[0][-1] == "APP"
    assert table(kn("get", "deploy", "--field-selector", "metadata.name=web").stdout)[1][0] == "web"
    r = kn("get", "deploy", "--field-selector", "spec.replicas=1", check=False)
    assert r.stderr.strip() == (
        'Error from server (BadRequest): Unable to find "apps/v1, Resource=deployments" that match label selector '
        '"", field selector "spec.replicas=1": "spec.replicas" is not a known field selector: only '
        '"metadata.name", "metadata.namespace"')
    y = kn("get", "deploy", "web", "-o", "yaml").stdout
    assert y.startswith("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n")

    # dry runs write nothing
    assert kn("create", "deployment", "dry", "--image=busybox", "--dry-run=server", "-o", "name").stdout == \
        "deployment.apps/dry\n"
    assert kn("create", "deployment", "dry", "--image=busybox", "--dry-run=client").stdout == \
        "deployment.apps/dry created (dry run)\n"
    assert kn("apply", "-f", str(f), "--dry-run=server").stdout == "deployment.apps/web configured (server dry run)\n"
    assert kn("get", "deploy", "dry", check=False).returncode == 1

    assert kn("delete", "deploy", "web", "--cascade=orphan").stdout == 'deployment.apps "web" deleted\n'


@pytest.mark.parametrize("version", VERSIONS)
def test_server_side_apply_conflicts_and_migration(k_by_version, version, tmp_path):
    k = _k(k_by_version, version)
    ns = ensure_ns(k, k.ns + "-ssa")
    f = tmp_path / "web.yaml"
    f.write_text(DEPLOYMENT)
    kn = lambda *a, **kw: k.run("-n", ns, *a, **kw)  # noqa: E731
    kn("apply", "-f", str(f))  # client-side first: then --server-side migrates its field ownership
    assert kn("apply", "-f", str(f), "--server-side").stdout == "deployment.apps/web serverside-applied\n"
    managers = {m["manager"]: m for m in k.json("-n", ns, "get", "deploy", "web", "--show-managed-fields")[
        "metadata"]["managedFields"]}
    assert "kubectl-client-side-apply" not in managers
    assert managers["kubectl"]["operation"] == "Apply"
    assert "f:replicas" in managers["kubectl"]["fieldsV1"]["f:spec"]

    other = tmp_path / "other.yaml"
    other.write_text(DEPLOYMENT.replace("replicas: 2", "replicas: 4"))
    r = kn("apply", "-f", str(other), "--server-side", "--field-manager=other", check=False)
    assert r.returncode == 1
    # as upstream's manager identifier: an applier is named without its apiVersion, an updater with it
    assert r.stderr.startswith('error: Apply failed with 1 conflict: conflict with "kubectl": .spec.replicas\n'), \
        r.stderr
    assert kn("apply", "-f", str(other), "--server-side", "--field-manager=other", "--force-conflicts").stdout == \
        "deployment.apps/web serverside-applied\n"
    d = k.json("-n", ns, "get", "deploy", "web", "--show-managed-fields")
    assert d["spec"]["replicas"] == 4
    owners = {m["manager"]: m["fieldsV1"].get("f:spec", {}) for m in d["metadata"]["managedFields"]}
    assert "f:replicas" in owners["other"] and "f:replicas" not in owners["kubectl"]

    # kubectl scale writes through the scale subresource: its manager conflicts by subresource
    kn("scale", "deploy", "web", "--replicas=5")
    r = kn("apply", "-f", str(other), "--server-side", "--field-manager=other", check=False)
    # (the manager comes from the user agent, which kubectl builds from its binary's name: kubectl.1.33/v1.33.1)
    assert re.match(r'error: Apply failed with 1 conflict: conflict with "kubectl[.0-9]*" with subresource "scale" '
                    r'using apps/v1: \.spec\.replicas\n', r.stderr), r.stderr
    k.run("delete", "ns", ns, "--wait=false")


@pytest.mark.parametrize("version", VERSIONS)
def test_create_subcommands(k_by_version, version, tmp_path):
    k = _k(k_by_version, version)
    ns = ensure_ns(k, k.ns + "-create")
    kn = lambda *a, **kw: k.run("-n", ns, *a, **kw)  # noqa: E731
    (tmp_path / "app.env").write_text("A=1\nB=two\n")
    (tmp_path / "file.txt").write_text("hello\n")
    key, crt = _self_signed(tmp_path)
    expect = [
        (["create", "configmap", "lit", "--from-literal=a=1", "--from-literal=b=2"], "configmap/lit created"),
        (["create", "configmap", "env", f"--from-env-file={tmp_path / 'app.env'}"], "configmap/env created"),
        (["create", "configmap", "file", f"--from-file={tmp_path / 'file.txt'}"], "configmap/file created"),
        (["create", "secret", "generic", "gen", "--from-literal=p=q"], "secret/gen created"),
        (["create", "secret", "docker-registry", "reg", "--docker-username=u", "--docker-password=p",
          "--docker-server=r.example"], "secret/reg created"),
        (["create", "secret", "tls", "tls", f"--cert={crt}", f"--key={key}"], "secret/tls created"),
        (["create", "service", "clusterip", "cip", "--tcp=80:8080"], "service/cip created"),
        (["create", "service", "nodeport", "np", "--tcp=80:8080"], "service/np created"),
        (["create", "serviceaccount", "robot"], "serviceaccount/robot created"),
        (["create", "role", "reader", "--verb=get", "--resource=pods"], "role.rbac.authorization.k8s.io/reader created"),
        (["create", "rolebinding", "rb", "--role=reader", f"--serviceaccount={ns}:robot"],
         "rolebinding.rbac.authorization.k8s.io/rb created"),
        (["create", "deployment", "dep", "--image=nginx", "--replicas=2", "--port=80"], "deployment.apps/dep created"),
        (["create", "job", "jb", "--image=busybox", "--", "sh", "-c", "exit 0"], "job.batch/jb created"),
        (["create", "cronjob", "cj", "--image=busybox", "--schedule=0 0 29 2 *", "--", "date"],  # never fires mid-test
         "cronjob.batch/cj created"),
    ]
    for args, line in expect:
        assert kn(*args).stdout == line + "\n", args
    pc = f"pc-{k.ns}"
    assert k.out("create", "priorityclass", pc, "--value=100") == f"priorityclass.scheduling.k8s.io/{pc} created\n"
    token = kn("create", "token", "robot", "--duration=10m").stdout.strip()
    assert token.count(".") == 2
    data = k.json("-n", ns, "get", "cm", "env")["data"]
    assert data == {"A": "1", "B": "two"}
    assert k.json("-n", ns, "get", "cm", "file")["data"] == {"file.txt": "hello\n"}
    assert k.json("-n", ns, "get", "secret", "reg")["type"] == "kubernetes.io/dockerconfigjson"
    rows = table(kn("get", "secret").stdout)
    assert rows[0] == ["NAME", "TYPE", "DATA", "AGE"]
    assert {r[0]: r[1:3] for r in rows[1:]} == {"gen": ["Opaque", "1"], "reg": ["kubernetes.io/dockerconfigjson", "1"],
                                                "tls": ["kubernetes.io/tls", "2"]}
    rows = table(kn("get", "svc", "-o", "wide").stdout)
    assert rows[0] == ["NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE", "SELECTOR"]
    np = next(r for r in rows if r[0] == "np")
    assert np[1] == "NodePort" and re.fullmatch(r"80:3\d{4}/TCP", np[4]) and np[6] == "app=np"
    rows = table(kn("get", "cronjob").stdout)
    assert rows[0] == ["NAME", "SCHEDULE", "TIMEZONE", "SUSPEND", "ACTIVE", "LAST SCHEDULE", "AGE"]
    assert rows[1][:6] == ["cj", "0 0 29 2 *", "<none>", "False", "0", "<none>"]
    rows = table(kn("get", "sa").stdout)
    assert rows[0] == ["NAME", "SECRETS", "AGE"] and ["robot", "0"] == next(r for r in rows if r[0] == "robot")[:2]
    rows = table(kn("get", "rolebinding", "-o", "wide").stdout)
    assert rows[0] == ["NAME", "ROLE", "AGE", "USERS", "GROUPS", "SERVICEACCOUNTS"]
    assert rows[1][0:2] == ["rb", "Role/reader"] and rows[1][-1] == f"{ns}/robot"

    # deletes
    assert kn("delete", "cm", "lit", "env").stdout == 'configmap "lit" deleted\nconfigmap "env" deleted\n'
    r = kn("delete", "secret", "-l", "nothing=here")
    assert r.stdout + r.stderr == "No resources found\n"
    out = kn("delete", "secret", "--all").stdout
    assert sorted(out.splitlines()) == ['secret "gen" deleted', 'secret "reg" deleted', 'secret "tls" deleted']
    r = kn("delete", "job", "jb", "--grace-period=0", "--force")
    assert r.stdout == 'job.batch "jb" force deleted\n'
    assert r.stderr.startswith("Warning: Immediate deletion does not wait for confirmation")
    assert kn("delete", "cm", "nope", check=False).stderr == 'Error from server (NotFound): configmaps "nope" not found\n'
    k.run("delete", "priorityclass", pc)
    k.run("delete", "ns", ns, "--wait=false")


@pytest.mark.parametrize("version", VERSIONS)
def test_old_tutorial_versions_apply_as_written(k_by_version, version):
    """The gpushare DaemonSet of seed 000 is extensions/v1beta1 with no selector: it applies, with upstream's
    deprecation warning, and reads back both as extensions/v1beta1 and as apps/v1."""
    k = _k(k_by_version, version)
    ns = ensure_ns(k, k.ns + "-old")
    manifest = open(os.path.join(MANIFESTS, "gpushare-ds.yaml")).read().replace("namespace: kube-system",
                                                                                f"namespace: {ns}")
    warn = ("Warning: extensions/v1beta1 DaemonSet is deprecated in v1.8+, unavailable in v1.16+; "
            "use apps/v1 DaemonSet\n")
    r = k.run("apply", "-f", "-", input=manifest)
    assert r.stdout == "daemonset.extensions/gpushare-device-plugin-ds created\n"
    assert r.stderr == warn
    r = k.run("apply", "-f", "-", input=manifest)
    assert r.stdout == "daemonset.extensions/gpushare-device-plugin-ds unchanged\n"
    old = k.json("-n", ns, "get", "daemonsets.v1beta1.extensions", "gpushare-device-plugin-ds")
    assert old["apiVersion"] == "extensions/v1beta1"
    assert old["spec"]["selector"] == {"matchLabels": {"app": "gpushare", "component": "gpushare-device-plugin",
                                                       "name": "gpushare-device-plugin-ds"}}
    new = k.json("-n", ns, "get", "ds", "gpushare-device-plugin-ds")
    assert new["apiVersion"] == "apps/v1" and new["metadata"]["uid"] == old["metadata"]["uid"]
    rows = table(k.out("-n", ns, "get", "ds"))
    assert rows[0] == ["NAME", "DESIRED", "CURRENT", "READY", "UP-TO-DATE", "AVAILABLE", "NODE SELECTOR", "AGE"]
    assert rows[1][0] == "gpushare-device-plugin-ds" and rows[1][6] == "gpushare=true"
    # an apps/v1beta2 Deployment from an older tutorial, converted to apps/v1
    dep = DEPLOYMENT.replace("apps/v1", "apps/v1beta2").replace("name: web", "name: old-web")
    r = k.run("-n", ns, "apply", "-f", "-", input=dep)
    assert r.stdout == "deployment.apps/old-web created\n"
    assert "apps/v1beta2 Deployment is deprecated in v1.9+, unavailable in v1.16+; use apps/v1 Deployment" in r.stderr
    k.run("delete", "ns", ns, "--wait=false")


@pytest.mark.parametrize("version", VERSIONS)
def test_strict_validation_rejects_seed_typos(k_by_version, version):
    k = _k(k_by_version, version)
    ns = ensure_ns(k)
    typo = open(os.path.join(MANIFESTS, "typo-pod.yaml")).read()
    r = k.run("-n", ns, "apply", "-f", "-", input=typo, check=False)
    assert r.returncode == 1
    assert r.stderr == ('Error from server (BadRequest): error when creating "STDIN": Pod in version "v1" cannot be '
                        'handled as a Pod: strict decoding error: unknown field '
                        '"spec.containers[0].ports[0].containnerPort"\n')
    r = k.run("-n", ns, "apply", "-f", "-", "--validate=warn", input=typo, check=False)
    assert r.stderr == ('Warning: unknown field "spec.containers[0].ports[0].containnerPort"\n'
                        'The Pod "typo" is invalid: spec.containers[0].ports[0].containerPort: Required value\n')
    # seed 003's E11 typo: emptuDir
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "volume-pod"},
           "spec": {"containers": [{"name": "c", "image": "busybox"}], "volumes": [{"name": "v", "emptuDir": {}}]}}
    r = k.run("-n", ns, "create", "-f", "-", input=json.dumps(pod), check=False)
    assert 'strict decoding error: unknown field "spec.volumes[0].emptuDir"' in r.stderr


def _self_signed(tmp_path) -> tuple[str, str]:
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    from pyk8s.apiserver.certs import ensure_pki  # noqa: F401  (cryptography is a dependency already)

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "example")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(1).not_valid_before(now).not_valid_after(now + datetime.timedelta(days=1))
            .sign(key, hashes.SHA256()))
    kp, cp = tmp_path / "tls.key", tmp_path / "tls.crt"
    kp.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                     serialization.NoEncryption()))
    cp.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return str(kp), str(cp)


@pytest.fixture(scope="module", autouse=True)
def _nodes(k_by_version):
    if k_by_version:
        ensure_nodes(next(iter(k_by_version.values())))

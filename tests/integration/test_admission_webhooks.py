"""Admission webhooks (Mutating/ValidatingWebhookConfiguration), as upstream's plug-ins.

The webhooks are third parties written here: one aiohttp HTTPS app with a CA of its own, on this
machine's global address, answering AdmissionReviews per path (deny, patch, sleep, lie). Each test
scopes its configuration to its own objects with an objectSelector on the label `t`, so the
configurations of one test never see another's objects.
"""

from __future__ import annotations

import asyncio
import base64
import datetime
import json
import os
import shutil
import ssl
import tempfile
import time
from collections.abc import Iterator
from typing import Any

import pytest
from aiohttp import web

from pyk8s.pki import certificate_pem, issue_leaf, new_ca, new_ec_key, private_key_pem, x509_name
from tests.cluster import Cluster, raw_request
from tests.https_app import ThreadedHTTPSApp, host_ip

pytestmark = pytest.mark.xdist_group("admission-webhooks")

NS = "wh"
ADM = "/apis/admissionregistration.k8s.io/v1"


def _patch(ops: list[dict[str, Any]]) -> str:
    return base64.b64encode(json.dumps(ops).encode()).decode()


class Hooks:
    """The webhook server: what each path answers, and the reviews it was sent."""

    def __init__(self, require_client_cert: bool = False) -> None:
        self.ip = host_ip()
        self.seen: dict[str, list[dict[str, Any]]] = {}
        self.authorization: list[str | None] = []
        d = self.dir = tempfile.mkdtemp(prefix="webhook-tls-")
        ca, ca_key = new_ca("webhook-test-ca", datetime.timedelta(days=1))
        key = new_ec_key()
        cert = issue_leaf(ca, ca_key, x509_name("webhook"), key, server=True, sans=[self.ip, f"hook.{NS}.svc",
                                                                                     f"hookc.{NS}.svc"])
        self.ca_pem = certificate_pem(ca)
        other, _ = new_ca("unrelated-ca", datetime.timedelta(days=1))
        self.other_ca_pem = certificate_pem(other)
        crt, kp = os.path.join(d, "tls.crt"), os.path.join(d, "tls.key")
        with open(crt, "wb") as f:
            f.write(certificate_pem(cert))
        with open(kp, "wb") as f:
            f.write(private_key_pem(key))
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(crt, kp)
        self.ca, self.ca_key = ca, ca_key
        if require_client_cert:  # only the API server holding a certificate from our CA may call
            ctx.verify_mode = ssl.CERT_REQUIRED
            ctx.load_verify_locations(cadata=self.ca_pem.decode())
        self.app = ThreadedHTTPSApp(self.ip, ctx, self.handle, client_max_size=8 * 1024 * 1024)
        self.port = self.app.port

    def url(self, path: str) -> str:
        return f"https://{self.ip}:{self.port}{path}"

    async def handle(self, request: web.Request) -> web.StreamResponse:
        review = await request.json()
        self.authorization.append(request.headers.get("Authorization"))
        path = request.path
        self.seen.setdefault(path, []).append(review)
        req = review["request"]
        uid = req["uid"]
        obj = req.get("object") or {}
        labels = (obj.get("metadata") or {}).get("labels") or {}
        resp: dict[str, Any] = {"uid": uid, "allowed": True}
        if path == "/deny":
            if labels.get("deny") == "yes":
                resp = {"uid": uid, "allowed": False, "status": {"message": "objects labelled deny=yes are refused",
                                                                 "code": 403, "reason": "Forbidden"}}
            resp["warnings"] = ["checked by the deny webhook"]
        elif path == "/label":
            resp.update(patchType="JSONPatch", patch=_patch([
                {"op": "add", "path": "/metadata/labels/mutated", "value": "yes"}]))
        elif path == "/reinvoke-a":  # reports whether it saw b's label; first in order
            saw = "true" if "b" in labels else "false"
            resp.update(patchType="JSONPatch", patch=_patch([
                {"op": "add", "path": "/metadata/annotations", "value": {"a-saw-b": saw}}]))
        elif path == "/reinvoke-b":
            resp.update(patchType="JSONPatch", patch=_patch([{"op": "add", "path": "/metadata/labels/b", "value": "1"}]))
        elif path == "/slow":
            await asyncio.sleep(4)
        elif path == "/namespace":
            resp.update(patchType="JSONPatch", patch=_patch([
                {"op": "replace", "path": "/metadata/namespace", "value": "default"}]))
        elif path == "/drop-namespace":
            resp.update(patchType="JSONPatch", patch=_patch([{"op": "remove", "path": "/metadata/namespace"}]))
        elif path == "/uid":
            resp.update(patchType="JSONPatch", patch=_patch([
                {"op": "replace", "path": "/metadata/uid", "value": "00000000-0000-0000-0000-000000000000"}]))
        elif path == "/badpatch":
            resp.update(patchType="JSONPatch", patch=_patch([{"op": "remove", "path": "/spec/nothing/here"}]))
        elif path == "/notbase64":
            resp.update(patchType="JSONPatch", patch="%%% not base64 %%%")
        elif path == "/validating-patch":
            resp.update(patchType="JSONPatch", patch=_patch([
                {"op": "add", "path": "/metadata/labels/sneaky", "value": "yes"}]))
        elif path == "/wrong-uid":
            resp["uid"] = "not-the-request-uid"
        elif path == "/allowed-string":
            resp["allowed"] = "false"  # truthy to Python, no bool to Go
        elif path == "/huge":
            return web.Response(body=b'{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","x":"'
                                + b"a" * (20 * 1024 * 1024) + b'"}', content_type="application/json")
        return web.json_response({"apiVersion": review["apiVersion"], "kind": "AdmissionReview", "response": resp})

    def stop(self) -> None:
        self.app.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


# configmaps in wh-req at level Request (the patch annotation's level), the others at Metadata
AUDIT_POLICY = json.dumps({"apiVersion": "audit.k8s.io/v1", "kind": "Policy", "rules": [
    {"level": "Request", "resources": [{"group": "", "resources": ["configmaps"]}], "namespaces": ["wh-req"]},
    {"level": "Metadata", "resources": [{"group": "", "resources": ["configmaps"]}]},
    {"level": "None"}]})


def _credentials_config(tmp: Any, hc: Hooks) -> str:
    """An AdmissionConfiguration whose kubeConfigFile gives hc's address a client certificate and a token."""
    key = new_ec_key()
    cert = issue_leaf(hc.ca, hc.ca_key, x509_name("kube-apiserver-webhook-client"), key, server=False)
    kubeconfig = tmp / "webhook-kubeconfig.yaml"
    kubeconfig.write_text(json.dumps({"apiVersion": "v1", "kind": "Config", "users": [
        {"name": "*.example.com", "user": {"token": "wrong-entry"}},
        {"name": f"{hc.ip}:{hc.port}", "user": {
            "client-certificate-data": base64.b64encode(certificate_pem(cert)).decode(),
            "client-key-data": base64.b64encode(private_key_pem(key)).decode(), "token": "s3cret"}}]}))
    admission = tmp / "admission.yaml"
    admission.write_text(json.dumps({"apiVersion": "apiserver.config.k8s.io/v1", "kind": "AdmissionConfiguration",
                                     "plugins": [{"name": n, "configuration": {
                                         "apiVersion": "apiserver.config.k8s.io/v1",
                                         "kind": "WebhookAdmissionConfiguration",
                                         "kubeConfigFile": str(kubeconfig)}}
                                         for n in ("ValidatingAdmissionWebhook", "MutatingAdmissionWebhook")]}))
    return str(admission)


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Cluster, Hooks]]:
    tmp = tmp_path_factory.mktemp("pyk8s-webhooks")
    (tmp / "audit.yaml").write_text(AUDIT_POLICY)
    h, hc = Hooks(), Hooks(require_client_cert=True)
    try:
        c = Cluster(str(tmp / "data"), extra_args=[
            "--disable", "metrics-server", "--disable", "controller-manager", "--disable", "scheduler",
            "--disable", "dns", "--audit-policy-file", str(tmp / "audit.yaml"), "--audit-log-path",
            str(tmp / "audit.log"), "--admission-control-config-file", _credentials_config(tmp, hc)]).start()
        c.audit_log = tmp / "audit.log"  # type: ignore[attr-defined]
        c.creds_hooks = hc  # type: ignore[attr-defined]
        try:
            c.kubectl("create", "namespace", NS)
            c.kubectl("create", "namespace", "wh-req")
            yield c, h
        finally:
            c.stop()
    finally:
        h.stop()
        hc.stop()


def _hook(name: str, path: str, test: str, hooks: Hooks, **kw: Any) -> dict[str, Any]:
    ca = kw.pop("ca", hooks.ca_pem)
    client_config = kw.pop("clientConfig", {"url": hooks.url(path)})
    client_config.setdefault("caBundle", base64.b64encode(ca).decode())
    out = {"name": name, "clientConfig": client_config,
           "rules": kw.pop("rules", [{"operations": ["CREATE", "UPDATE"], "apiGroups": [""], "apiVersions": ["v1"],
                                      "resources": ["configmaps"]}]),
           "objectSelector": kw.pop("objectSelector", {"matchLabels": {"t": test}}),
           "sideEffects": kw.pop("sideEffects", "None"), "admissionReviewVersions": kw.pop("versions", ["v1"])}
    out.update(kw)
    return out


def _configure(c: Cluster, kind: str, name: str, webhooks: list[dict[str, Any]]) -> None:
    plural = "mutatingwebhookconfigurations" if kind.startswith("Mutating") else "validatingwebhookconfigurations"
    r = raw_request(c, "POST", f"{ADM}/{plural}", {"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
                                                   "metadata": {"name": name}, "webhooks": webhooks})
    assert r.status == 201, r.body


def _remove(c: Cluster, kind: str, name: str) -> None:
    plural = "mutatingwebhookconfigurations" if kind.startswith("Mutating") else "validatingwebhookconfigurations"
    raw_request(c, "DELETE", f"{ADM}/{plural}/{name}")


def _cm(name: str, test: str, ns: str = NS, **labels: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": ns,
                                                                  "labels": {"t": test, **labels}},
            "data": {"k": "v"}}


def _service_to(c: Cluster, name: str, hooks: Hooks) -> None:
    """A Service without selector whose EndpointSlice points at the webhook server (a third party's pod)."""
    assert raw_request(c, "POST", f"/api/v1/namespaces/{NS}/services", {
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": NS},
        "spec": {"ports": [{"name": "https", "port": 443, "protocol": "TCP"}]}}).status == 201
    assert raw_request(c, "POST", f"/apis/discovery.k8s.io/v1/namespaces/{NS}/endpointslices", {
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": name, "namespace": NS, "labels": {"kubernetes.io/service-name": name}},
        "addressType": "IPv4", "endpoints": [{"addresses": [hooks.ip], "conditions": {"ready": True}}],
        "ports": [{"name": "https", "port": hooks.port, "protocol": "TCP"}]}).status == 201


def _wait_audit(c: Cluster, name: str) -> dict[str, Any]:
    """The ResponseComplete event of the object's create."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        evs = [ev for line in c.audit_log.read_text().splitlines()  # type: ignore[attr-defined]
               if (ev := json.loads(line)).get("stage") == "ResponseComplete" and ev.get("verb") == "create"
               and (ev.get("objectRef") or {}).get("name") == name]
        if evs:
            return evs[-1]
        time.sleep(0.05)
    raise AssertionError(f"no audit event for {name}")


def _create(c: Cluster, obj: dict[str, Any], query: str = "") -> Any:
    ns = obj["metadata"].get("namespace", NS)
    return raw_request(c, "POST", f"/api/v1/namespaces/{ns}/configmaps{query}", obj)


def test_validating_webhook_denies_with_its_message_kubectl_and_client(env: tuple[Cluster, Hooks]) -> None:
    c, h = env
    _configure(c, "ValidatingWebhookConfiguration", "deny", [_hook("deny.example.com", "/deny", "deny", h)])
    try:
        for version in ("1.27", None):  # the oldest and newest kubectl
            r = c.kubectl("apply", "-f", "-", input=json.dumps(_cm("refused", "deny", deny="yes")), check=False,
                          version=version)
            assert r.returncode != 0
            assert ('admission webhook "deny.example.com" denied the request: objects labelled deny=yes are refused'
                    in r.stderr)
        r2 = _create(c, _cm("refused", "deny", deny="yes"))
        assert r2.status == 403
        st = r2.json()
        assert st["reason"] == "Forbidden" and st["code"] == 403
        # the official client sees the same Status; an allowed object passes with the webhook's warning
        from kubernetes import client as k8s
        from kubernetes.client.rest import ApiException

        api = k8s.CoreV1Api(c.api_client())
        with pytest.raises(ApiException) as ei:
            api.create_namespaced_config_map(NS, _cm("refused2", "deny", deny="yes"))
        assert ei.value.status == 403 and "denied the request" in json.loads(ei.value.body)["message"]
        ok = _create(c, _cm("allowed", "deny"))
        assert ok.status == 201
        assert "checked by the deny webhook" in ok.headers.get("Warning", "")
        review = h.seen["/deny"][-1]
        assert review["apiVersion"] == "admission.k8s.io/v1" and review["kind"] == "AdmissionReview"
        req = review["request"]
        assert req["operation"] == "CREATE" and req["namespace"] == NS and req["name"] == "allowed"
        assert req["kind"] == {"group": "", "version": "v1", "kind": "ConfigMap"}
        assert req["resource"] == {"group": "", "version": "v1", "resource": "configmaps"}
        assert req["requestKind"] == req["kind"] and req["requestResource"] == req["resource"]
        assert req["userInfo"]["username"] and "system:masters" in req["userInfo"]["groups"]
        assert req["object"]["kind"] == "ConfigMap" and req["oldObject"] is None and req["dryRun"] is False
        assert req["options"]["kind"] == "CreateOptions"
        # an update of it with the deny label is refused too, and the webhook sees the old object
        cm = ok.json()
        cm["metadata"]["labels"]["deny"] = "yes"
        up = raw_request(c, "PUT", f"/api/v1/namespaces/{NS}/configmaps/allowed", cm)
        assert up.status == 403
        assert h.seen["/deny"][-1]["request"]["oldObject"]["metadata"]["name"] == "allowed"
        assert h.seen["/deny"][-1]["request"]["operation"] == "UPDATE"
    finally:
        _remove(c, "ValidatingWebhookConfiguration", "deny")


def test_mutating_webhook_adds_label_and_audit_of_order(env: tuple[Cluster, Hooks]) -> None:
    c, h = env
    _configure(c, "MutatingWebhookConfiguration", "label", [_hook("label.example.com", "/label", "label", h)])
    try:
        r = c.kubectl("create", "-f", "-", "-o", "json", input=json.dumps(_cm("m1", "label")))
        assert json.loads(r.stdout)["metadata"]["labels"]["mutated"] == "yes"
        got = raw_request(c, "GET", f"/api/v1/namespaces/{NS}/configmaps/m1").json()
        assert got["metadata"]["labels"]["mutated"] == "yes"
        ann = _wait_audit(c, "m1")["annotations"]
        assert json.loads(ann["mutation.webhook.admission.k8s.io/round_0_index_0"]) == {
            "configuration": "label", "webhook": "label.example.com", "mutated": True}
        assert "patch.webhook.admission.k8s.io/round_0_index_0" not in ann  # only at level Request and above
        assert _create(c, _cm("m3", "label", ns="wh-req")).status == 201
        ann = _wait_audit(c, "m3")["annotations"]
        assert json.loads(ann["patch.webhook.admission.k8s.io/round_0_index_0"]) == {
            "configuration": "label", "webhook": "label.example.com", "patchType": "JSONPatch",
            "patch": [{"op": "add", "path": "/metadata/labels/mutated", "value": "yes"}]}
        # an object outside the objectSelector is not sent
        n = len(h.seen.get("/label", []))
        assert _create(c, _cm("m2", "other")).status == 201
        assert len(h.seen.get("/label", [])) == n
    finally:
        _remove(c, "MutatingWebhookConfiguration", "label")


def test_reinvocation_if_needed(env: tuple[Cluster, Hooks]) -> None:
    c, h = env
    # configurations run in name order: a (reinvocable) before b, which changes the object after a ran
    _configure(c, "MutatingWebhookConfiguration", "reinv-a", [
        _hook("a.example.com", "/reinvoke-a", "reinv", h, reinvocationPolicy="IfNeeded")])
    _configure(c, "MutatingWebhookConfiguration", "reinv-b", [_hook("b.example.com", "/reinvoke-b", "reinv", h)])
    try:
        r = _create(c, _cm("r1", "reinv"))
        assert r.status == 201, r.body
        md = r.json()["metadata"]
        assert md["labels"]["b"] == "1" and md["annotations"]["a-saw-b"] == "true"
        raw_request(c, "PATCH", f"{ADM}/mutatingwebhookconfigurations/reinv-a",
                    [{"op": "replace", "path": "/webhooks/0/reinvocationPolicy", "value": "Never"}],
                    headers={"Content-Type": "application/json-patch+json"})
        r = _create(c, _cm("r2", "reinv"))
        assert r.json()["metadata"]["annotations"]["a-saw-b"] == "false"
    finally:
        _remove(c, "MutatingWebhookConfiguration", "reinv-a")
        _remove(c, "MutatingWebhookConfiguration", "reinv-b")


def test_timeout_fail_and_ignore(env: tuple[Cluster, Hooks]) -> None:
    c, h = env
    _configure(c, "ValidatingWebhookConfiguration", "slow", [
        _hook("slow-fail.example.com", "/slow", "slow-fail", h, timeoutSeconds=1),
        _hook("slow-ignore.example.com", "/slow", "slow-ignore", h, timeoutSeconds=1, failurePolicy="Ignore")])
    try:
        t0 = time.monotonic()
        r = _create(c, _cm("s1", "slow-fail"))
        assert time.monotonic() - t0 < 3.5
        assert r.status == 500
        st = r.json()
        assert st["reason"] == "InternalError"
        assert st["message"] == (f'Internal error occurred: failed calling webhook "slow-fail.example.com": failed to '
                                 f'call webhook: Post "{h.url("/slow")}?timeout=1s": context deadline exceeded')
        assert _create(c, _cm("s2", "slow-ignore")).status == 201
    finally:
        _remove(c, "ValidatingWebhookConfiguration", "slow")


def test_wrong_ca_bundle_is_x509_error(env: tuple[Cluster, Hooks]) -> None:
    c, h = env
    _configure(c, "ValidatingWebhookConfiguration", "wrongca", [
        _hook("wrongca.example.com", "/deny", "wrongca", h, ca=h.other_ca_pem)])
    try:
        r = _create(c, _cm("x1", "wrongca"))
        assert r.status == 500
        assert r.json()["message"] == (
            'Internal error occurred: failed calling webhook "wrongca.example.com": failed to call webhook: '
            f'Post "{h.url("/deny")}?timeout=10s": tls: failed to verify certificate: x509: certificate signed by '
            'unknown authority')
    finally:
        _remove(c, "ValidatingWebhookConfiguration", "wrongca")


def test_namespace_object_selectors_and_match_conditions(env: tuple[Cluster, Hooks]) -> None:
    c, h = env
    for ns, env_label in (("wh-prod", "prod"), ("wh-dev", "dev")):
        raw_request(c, "POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                      "metadata": {"name": ns, "labels": {"env": env_label}}})
    _configure(c, "ValidatingWebhookConfiguration", "sel", [
        _hook("nssel.example.com", "/deny", "nssel", h, namespaceSelector={"matchLabels": {"env": "prod"}}),
        _hook("cond.example.com", "/deny", "cond", h, matchConditions=[
            {"name": "not-exempt", "expression": "!has(object.metadata.annotations) || "
                                                 "!('exempt' in object.metadata.annotations)"},
            {"name": "by-a-user", "expression": "request.userInfo.username != ''"}]),
        # the authorizer answers for the requesting user (the admin may delete secrets: skipped)
        _hook("authz.example.com", "/deny", "authz", h, matchConditions=[
            {"name": "not-admin", "expression": "!authorizer.group('').resource('secrets').namespace('wh')"
                                                ".check('delete').allowed()"}]),
        # ... and for a service account named in the expression (which may not: skipped)
        _hook("authz-sa.example.com", "/deny", "authz-sa", h, matchConditions=[
            {"name": "sa-may", "expression": "authorizer.serviceAccount('wh', 'nobody').group('')"
                                             ".resource('secrets').namespace('wh').check('delete').allowed()"}])])
    try:
        assert _create(c, _cm("n1", "nssel", ns="wh-prod", deny="yes")).status == 403
        assert _create(c, _cm("n1", "nssel", ns="wh-dev", deny="yes")).status == 201
        # the objectSelector matches on the old object too: an update removing the label is still sent
        assert _create(c, _cm("o1", "other", ns="wh-prod", deny="yes")).status == 201
        cm = _cm("c1", "cond", deny="yes")
        assert _create(c, cm).status == 403
        cm["metadata"]["annotations"] = {"exempt": "true"}
        assert _create(c, cm).status == 201
        assert _create(c, _cm("az1", "authz", deny="yes")).status == 201
        assert _create(c, _cm("az2", "authz-sa", deny="yes")).status == 201
    finally:
        _remove(c, "ValidatingWebhookConfiguration", "sel")


def test_match_condition_error_fails_per_policy(env: tuple[Cluster, Hooks]) -> None:
    c, h = env
    _configure(c, "ValidatingWebhookConfiguration", "conderr", [
        _hook("conderr.example.com", "/deny", "conderr", h, matchConditions=[
            {"name": "bad", "expression": "object.metadata.nosuchfield == 'x'"}]),
        _hook("condignore.example.com", "/deny", "condignore", h, failurePolicy="Ignore", matchConditions=[
            {"name": "bad", "expression": "object.metadata.nosuchfield == 'x'"}])])
    try:
        r = _create(c, _cm("ce1", "conderr"))
        assert r.status == 500 and 'failed calling webhook "conderr.example.com"' in r.json()["message"]
        assert "no such key: nosuchfield" in r.json()["message"]
        assert _create(c, _cm("ce2", "condignore", deny="yes")).status == 201
    finally:
        _remove(c, "ValidatingWebhookConfiguration", "conderr")
    # a condition that does not compile is refused when the configuration is written
    r = raw_request(c, "POST", f"{ADM}/validatingwebhookconfigurations", {
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "uncompilable"}, "webhooks": [_hook("x.example.com", "/deny", "x", h, matchConditions=[
            {"name": "syntax", "expression": "object.metadata.name =="},
            {"name": "undeclared", "expression": "params.x == 1"}])]})
    assert r.status == 422, r.body
    causes = {x["field"]: x["message"] for x in r.json()["details"]["causes"]}
    assert "compilation failed" in causes["webhooks[0].matchConditions[0].expression"]
    assert "undeclared reference to 'params'" in causes["webhooks[0].matchConditions[1].expression"]


def test_dry_run_and_side_effects(env: tuple[Cluster, Hooks]) -> None:
    c, h = env
    _configure(c, "ValidatingWebhookConfiguration", "dry", [
        _hook("some.example.com", "/deny", "dry-some", h, sideEffects="NoneOnDryRun"),
        _hook("none.example.com", "/deny", "dry-none", h)])
    try:
        # sideEffects NoneOnDryRun is called with dryRun true; validation refuses Some/Unknown in v1
        n = len(h.seen.get("/deny", []))
        assert _create(c, _cm("d1", "dry-some"), "?dryRun=All").status == 201
        assert h.seen["/deny"][n]["request"]["dryRun"] is True
        assert h.seen["/deny"][n]["request"]["options"]["dryRun"] == ["All"]
        r = c.kubectl("create", "--dry-run=server", "-f", "-", input=json.dumps(_cm("d2", "dry-none", deny="yes")),
                      check=False)
        assert 'admission webhook "none.example.com" denied the request' in r.stderr
    finally:
        _remove(c, "ValidatingWebhookConfiguration", "dry")


def test_service_reference_resolved_to_endpoint_slice(env: tuple[Cluster, Hooks]) -> None:
    c, h = env
    _service_to(c, "hook", h)
    _configure(c, "ValidatingWebhookConfiguration", "svc", [
        _hook("svc.example.com", "/deny", "svc", h, clientConfig={"service": {"namespace": NS, "name": "hook",
                                                                             "path": "/deny"}}),
        _hook("nosvc.example.com", "/deny", "nosvc", h, clientConfig={"service": {"namespace": NS, "name": "absent",
                                                                                 "path": "/deny"}})])
    try:
        r = _create(c, _cm("sv1", "svc", deny="yes"))
        assert r.status == 403 and 'admission webhook "svc.example.com" denied' in r.json()["message"]
        assert _create(c, _cm("sv2", "svc")).status == 201
        r = _create(c, _cm("sv3", "nosvc"))
        assert r.status == 500
        assert r.json()["message"].startswith('Internal error occurred: failed calling webhook "nosvc.example.com": '
                                              f'failed to call webhook: Post "https://absent.{NS}.svc:443/deny'
                                              '?timeout=10s": ')
    finally:
        _remove(c, "ValidatingWebhookConfiguration", "svc")


@pytest.mark.parametrize(("path", "code", "message"), [
    ("/namespace", 400, "the namespace of the provided object does not match the namespace sent on the request"),
    ("/badpatch", 500, "Internal error occurred: "),
    ("/notbase64", 500, "Internal error occurred: "),
    ("/wrong-uid", 500, 'failed calling webhook "attack.example.com": received invalid webhook response: '
                        'expected response.uid='),
    ("/huge", 500, 'failed calling webhook "attack.example.com": failed to call webhook: '),
    ("/allowed-string", 500, 'failed to call webhook: json: cannot unmarshal string into Go struct field '
                             'AdmissionResponse.response.allowed of type bool'),
])
def test_hostile_mutating_answers_refused(env: tuple[Cluster, Hooks], path: str, code: int, message: str) -> None:
    c, h = env
    test = "attack" + path.replace("/", "-")
    _configure(c, "MutatingWebhookConfiguration", test, [_hook("attack.example.com", path, test, h)])
    try:
        r = _create(c, _cm("a1", test))
        assert r.status == code, r.body
        assert message in r.json()["message"]
        assert raw_request(c, "GET", f"/api/v1/namespaces/{NS}/configmaps/a1").status == 404
        assert raw_request(c, "GET", "/api/v1/namespaces/default/configmaps/a1").status == 404
    finally:
        _remove(c, "MutatingWebhookConfiguration", test)


def test_patched_uid_is_the_servers(env: tuple[Cluster, Hooks]) -> None:
    c, h = env
    _configure(c, "MutatingWebhookConfiguration", "uid", [_hook("uid.example.com", "/uid", "uid", h)])
    try:
        r = _create(c, _cm("u1", "uid"))
        assert r.status == 201
        uid = r.json()["metadata"]["uid"]
        assert uid != "00000000-0000-0000-0000-000000000000"
        cm = r.json()
        cm["data"] = {"k": "changed"}
        up = raw_request(c, "PUT", f"/api/v1/namespaces/{NS}/configmaps/u1", cm)
        assert up.status == 422 and "metadata.uid" in up.json()["message"]
        assert raw_request(c, "GET", f"/api/v1/namespaces/{NS}/configmaps/u1").json()["metadata"]["uid"] == uid
    finally:
        _remove(c, "MutatingWebhookConfiguration", "uid")


def test_patch_removing_namespace_keeps_the_requests(env: tuple[Cluster, Hooks]) -> None:
    c, h = env
    _configure(c, "MutatingWebhookConfiguration", "dropns", [_hook("dropns.example.com", "/drop-namespace", "dropns", h)])
    try:
        r = _create(c, _cm("dn1", "dropns"))
        assert r.status == 201, r.body
        assert r.json()["metadata"]["namespace"] == NS
        assert raw_request(c, "GET", f"/api/v1/namespaces/{NS}/configmaps/dn1").status == 200
    finally:
        _remove(c, "MutatingWebhookConfiguration", "dropns")


def test_validating_webhook_patch_refused_v1_ignored_v1beta1(env: tuple[Cluster, Hooks]) -> None:
    c, h = env
    _configure(c, "ValidatingWebhookConfiguration", "vpatch", [
        _hook("vpatch.example.com", "/validating-patch", "vpatch", h),
        _hook("vpatch-beta.example.com", "/validating-patch", "vpatch-beta", h, versions=["v1beta1"])])
    try:
        r = _create(c, _cm("vp1", "vpatch"))
        assert r.status == 500
        assert r.json()["message"] == ('Internal error occurred: failed calling webhook "vpatch.example.com": '
                                       'received invalid webhook response: validating webhooks may not return patches')
        r = _create(c, _cm("vp2", "vpatch-beta"))
        assert r.status == 201 and "sneaky" not in r.json()["metadata"]["labels"]
        assert h.seen["/validating-patch"][-1]["apiVersion"] == "admission.k8s.io/v1beta1"
    finally:
        _remove(c, "ValidatingWebhookConfiguration", "vpatch")


def test_webhook_pointing_at_the_api_server_does_not_hang(env: tuple[Cluster, Hooks]) -> None:
    c, h = env
    with open(os.path.join(c.data_dir, "pki", "ca.crt"), "rb") as f:
        server_ca = f.read()
    _configure(c, "ValidatingWebhookConfiguration", "self", [
        _hook("self.example.com", "", "self", h, ca=server_ca, timeoutSeconds=2,
              clientConfig={"url": f"{c.url}/api/v1/namespaces/{NS}/configmaps"})])
    try:
        t0 = time.monotonic()
        r = _create(c, _cm("self1", "self"))
        assert time.monotonic() - t0 < 5
        # the API server answers the anonymous POST with a Status, not an AdmissionReview: refused
        assert r.status == 500 and 'failed calling webhook "self.example.com"' in r.json()["message"]
    finally:
        _remove(c, "ValidatingWebhookConfiguration", "self")


def test_delete_is_sent_with_old_object(env: tuple[Cluster, Hooks]) -> None:
    c, h = env
    assert _create(c, _cm("del1", "del", deny="yes")).status == 201
    _configure(c, "ValidatingWebhookConfiguration", "del", [
        _hook("del.example.com", "/deny", "del", h, rules=[{"operations": ["DELETE"], "apiGroups": [""],
                                                            "apiVersions": ["v1"], "resources": ["configmaps"]}])])
    try:
        n = len(h.seen.get("/deny", []))
        r = raw_request(c, "DELETE", f"/api/v1/namespaces/{NS}/configmaps/del1")
        assert r.status == 200, r.body  # the deny webhook judges `object`, which a DELETE does not have
        req = h.seen["/deny"][n]["request"]
        assert req["operation"] == "DELETE" and req["object"] is None
        assert req["oldObject"]["metadata"]["name"] == "del1" and req["options"]["kind"] == "DeleteOptions"
    finally:
        _remove(c, "ValidatingWebhookConfiguration", "del")


def test_webhook_configurations_are_exempt(env: tuple[Cluster, Hooks]) -> None:
    c, h = env
    everything = [{"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"]}]
    _configure(c, "ValidatingWebhookConfiguration", "lockout", [
        _hook("lockout.example.com", "/slow", "", h, rules=everything, objectSelector={}, timeoutSeconds=1)])
    assert _create(c, _cm("locked", "lockout")).status == 500  # everything else fails
    # ... but not configurations: a webhook that fails everything cannot stop its own removal
    _configure(c, "MutatingWebhookConfiguration", "during-lockout", [_hook("m.example.com", "/label", "none", h)])
    _remove(c, "MutatingWebhookConfiguration", "during-lockout")
    r = raw_request(c, "DELETE", f"{ADM}/validatingwebhookconfigurations/lockout")
    assert r.status == 200, r.body


def test_match_policy_equivalent_converts_and_exact_does_not_match(env: tuple[Cluster, Hooks]) -> None:
    c, h = env
    v1_rule = [{"operations": ["CREATE"], "apiGroups": ["autoscaling"], "apiVersions": ["v1"],
                "resources": ["horizontalpodautoscalers"]}]
    _configure(c, "MutatingWebhookConfiguration", "equiv", [
        _hook("equiv.example.com", "/label", "equiv", h, rules=v1_rule),
        _hook("exact.example.com", "/deny", "equiv", h, rules=v1_rule, matchPolicy="Exact")])
    try:
        n_label, n_deny = len(h.seen.get("/label", [])), len(h.seen.get("/deny", []))
        hpa = {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
               "metadata": {"name": "eq1", "namespace": NS, "labels": {"t": "equiv"}},
               "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"},
                        "minReplicas": 1, "maxReplicas": 3, "metrics": [{"type": "Resource", "resource": {
                            "name": "cpu", "target": {"type": "Utilization", "averageUtilization": 60}}}]}}
        r = raw_request(c, "POST", f"/apis/autoscaling/v2/namespaces/{NS}/horizontalpodautoscalers", hpa)
        assert r.status == 201, r.body
        # the v1 webhook was sent the object in v1 (converted), saying the request was for v2
        req = h.seen["/label"][n_label]["request"]
        assert req["kind"] == {"group": "autoscaling", "version": "v1", "kind": "HorizontalPodAutoscaler"}
        assert req["requestKind"] == {"group": "autoscaling", "version": "v2", "kind": "HorizontalPodAutoscaler"}
        assert req["resource"]["version"] == "v1" and req["requestResource"]["version"] == "v2"
        assert req["object"]["apiVersion"] == "autoscaling/v1"
        assert req["object"]["spec"]["targetCPUUtilizationPercentage"] == 60
        # its patch (made to the v1 object) is kept, and the v2 fields survive the round trip
        assert r.json()["metadata"]["labels"]["mutated"] == "yes"
        assert r.json()["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"] == 60
        # the Exact webhook only matches v1 requests
        assert len(h.seen.get("/deny", [])) == n_deny
        hpa["apiVersion"], hpa["metadata"]["name"] = "autoscaling/v1", "eq2"
        hpa["spec"] = {"scaleTargetRef": hpa["spec"]["scaleTargetRef"], "maxReplicas": 3}
        r = raw_request(c, "POST", f"/apis/autoscaling/v1/namespaces/{NS}/horizontalpodautoscalers", hpa)
        assert r.status == 201, r.body
        assert h.seen["/deny"][n_deny]["request"]["requestKind"]["version"] == "v1"
    finally:
        _remove(c, "MutatingWebhookConfiguration", "equiv")


def test_kube_config_file_credentials_presented(env: tuple[Cluster, Hooks]) -> None:
    c, _ = env
    hc: Hooks = c.creds_hooks  # type: ignore[attr-defined]
    _service_to(c, "hookc", hc)
    _configure(c, "ValidatingWebhookConfiguration", "creds", [
        _hook("creds.example.com", "/deny", "creds", hc),
        # the same server as hookc.wh.svc: the kubeconfig names no credentials for that host
        _hook("nocreds.example.com", "/deny", "nocreds", hc,
              clientConfig={"service": {"namespace": NS, "name": "hookc", "path": "/deny"}})])
    try:
        r = _create(c, _cm("cr1", "creds", deny="yes"))
        assert r.status == 403 and 'admission webhook "creds.example.com" denied' in r.json()["message"]
        assert hc.authorization == ["Bearer s3cret"]
        r = _create(c, _cm("cr2", "nocreds", deny="yes"))  # the webhook refuses the handshake
        assert r.status == 500 and f'Post "https://hookc.{NS}.svc:443/deny?timeout=10s": ' in r.json()["message"], r.body
        assert hc.authorization == ["Bearer s3cret"]
    finally:
        _remove(c, "ValidatingWebhookConfiguration", "creds")

"""The audit log (`--audit-policy-file`, `--audit-log-*`): upstream's audit.k8s.io/v1 events written
by a real server for requests of the real kubectl, the official client and raw HTTPS.

Upstream's formats: staging/src/k8s.io/apiserver/pkg/apis/audit/v1/types.go (Event, Policy),
pkg/endpoints/filters/audit.go (stages), authn_audit.go (failed authentication), and lumberjack's
backup names for rotation."""

from __future__ import annotations

import json
import os
import re
import ssl
import stat
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cluster import Cluster, raw_request

pytestmark = pytest.mark.xdist_group("audit")

UUID_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")
MICRO_RE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")
EVE_TOKEN = "eve-token-0123456789"
QUIET_TOKEN = "quiet-token-0123456789"

POLICY = """\
apiVersion: audit.k8s.io/v1
kind: Policy
rules:
# nothing from the quiet user, nor discovery and namespace reads
- level: None
  users: ["quiet"]
- level: None
  nonResourceURLs: ["/api*", "/version", "/openapi/*"]
- level: None
  verbs: ["get"]
  resources: [{group: "", resources: ["namespaces"]}]
# config maps with their bodies, without the RequestReceived stage
- level: RequestResponse
  omitStages: ["RequestReceived"]
  omitManagedFields: true
  resources: [{group: "", resources: ["configmaps"]}]
# secrets: never their data
- level: Metadata
  resources: [{group: "", resources: ["secrets"]}]
# one pod's log subresource named in the pods/log form
- level: Request
  resources: [{group: "", resources: ["pods/log"], resourceNames: ["chatty"]}]
- level: Request
  userGroups: ["auditors"]
- level: Metadata
"""


def _write(path: Path, text: str) -> str:
    path.write_text(text)
    return str(path)


def start_audited(tmp: Path, log_path: str, *extra: str, policy: str = POLICY) -> Cluster:
    tokens = _write(tmp / "tokens.csv", f'{EVE_TOKEN},eve,uid-eve,"auditors,devs"\n{QUIET_TOKEN},quiet,uid-q\n')
    c = Cluster(str(tmp / "data"), ["--disable", "controller-manager", "--disable", "scheduler",
                                    "--token-auth-file", tokens, "--audit-policy-file",
                                    _write(tmp / "policy.yaml", policy), "--audit-log-path", log_path, *extra])
    return c.start()


@pytest.fixture(scope="module")
def audited(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Cluster, Path]]:
    tmp = tmp_path_factory.mktemp("audit")
    log = tmp / "logs" / "sub" / "audit.log"  # directories that do not exist yet
    c = start_audited(tmp, str(log))
    yield c, log
    c.stop()


def read_events(log: Path) -> list[dict[str, Any]]:
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines() if line]


def wait_events(log: Path, pred: Callable[[dict[str, Any]], bool], count: int,
                timeout: float = 10.0) -> list[dict[str, Any]]:
    """The events matching pred once there are at least count (the log is written by a thread)."""
    deadline = time.monotonic() + timeout
    while True:
        evs = [e for e in read_events(log) if pred(e)]
        if len(evs) >= count or time.monotonic() > deadline:
            return evs
        time.sleep(0.05)


def named(name: str, resource: str | None = None) -> Callable[[dict[str, Any]], bool]:
    def pred(e: dict[str, Any]) -> bool:
        ref = e.get("objectRef") or {}
        return ref.get("name") == name and (resource is None or ref.get("resource") == resource)
    return pred


def token_kubectl(c: Cluster, token: str, *args: str) -> subprocess.CompletedProcess[str]:
    from tests.cluster import newest_kubectl

    env = dict(os.environ, HOME=c.home, KUBECONFIG=os.devnull)
    return subprocess.run([newest_kubectl(), "--server", c.url, "--certificate-authority",
                           os.path.join(c.data_dir, "pki", "ca.crt"), "--token", token, *args],
                          capture_output=True, text=True, env=env, timeout=60)


def tls_request(c: Cluster, method: str, path: str, headers: dict[str, str]) -> Any:
    """A request with no client certificate (bearer tokens or nothing)."""
    import http.client
    from urllib.parse import urlparse

    ctx = ssl.create_default_context(cafile=os.path.join(c.data_dir, "pki", "ca.crt"))
    u = urlparse(c.url)
    conn = http.client.HTTPSConnection(u.hostname, u.port, context=ctx, timeout=30)
    conn.request(method, path, headers=headers)
    r = conn.getresponse()
    r.read()
    conn.close()
    return r


# ---------------------------------------------------------------------------------------------------------


def test_create_configmap_request_response_without_request_received(audited: tuple[Cluster, Path]) -> None:
    """RequestResponse for configmaps: request and response bodies, managedFields omitted, and the
    rule's omitStages drops RequestReceived."""
    c, log = audited
    c.kubectl("create", "configmap", "cm-create", "--from-literal=k=v1")
    evs = wait_events(log, named("cm-create"), 1)
    assert [e["stage"] for e in evs] == ["ResponseComplete"]
    e = evs[0]
    assert list(e)[:12] == ["kind", "apiVersion", "level", "auditID", "stage", "requestURI", "verb", "user",
                            "sourceIPs", "userAgent", "objectRef", "responseStatus"]
    assert e["kind"] == "Event" and e["apiVersion"] == "audit.k8s.io/v1" and e["level"] == "RequestResponse"
    assert UUID_RE.match(e["auditID"])
    assert e["verb"] == "create"
    assert e["requestURI"].startswith("/api/v1/namespaces/default/configmaps?")
    assert "fieldManager=kubectl-create" in e["requestURI"]
    assert e["user"]["username"] == "admin" and "system:masters" in e["user"]["groups"]
    assert e["sourceIPs"] == ["127.0.0.1"]
    assert e["userAgent"].startswith("kubectl")
    assert e["objectRef"] == {"resource": "configmaps", "namespace": "default", "name": "cm-create",
                              "apiVersion": "v1"}
    assert e["responseStatus"] == {"metadata": {}, "code": 201}
    assert e["requestObject"]["data"] == {"k": "v1"}
    assert e["responseObject"]["data"] == {"k": "v1"} and e["responseObject"]["metadata"]["uid"]
    assert "managedFields" not in e["responseObject"]["metadata"]  # omitManagedFields
    assert MICRO_RE.match(e["requestReceivedTimestamp"]) and MICRO_RE.match(e["stageTimestamp"])
    assert e["stageTimestamp"] >= e["requestReceivedTimestamp"]
    assert e["annotations"] == {"authorization.k8s.io/decision": "allow", "authorization.k8s.io/reason": ""}


def test_secret_is_audited_at_metadata_without_its_data(audited: tuple[Cluster, Path]) -> None:
    c, log = audited
    c.kubectl("create", "secret", "generic", "sec-meta", "--from-literal=password=hunter2-SECRET")
    c.kubectl("get", "secret", "sec-meta", "-o", "json")
    done = wait_events(log, named("sec-meta", "secrets"), 3)
    # upstream names a created object in objectRef once its body is decoded: not at RequestReceived
    ids = {e["auditID"] for e in done}
    evs = [e for e in read_events(log) if e["auditID"] in ids]
    assert [(e["verb"], e["stage"]) for e in evs] == [
        ("create", "RequestReceived"), ("create", "ResponseComplete"),
        ("get", "RequestReceived"), ("get", "ResponseComplete")]
    for e in evs:
        assert e["level"] == "Metadata"
        assert "requestObject" not in e and "responseObject" not in e
    rr, done = evs[0], evs[1]
    assert rr["auditID"] == done["auditID"] and "responseStatus" not in rr
    assert rr["stageTimestamp"] == rr["requestReceivedTimestamp"]
    assert done["responseStatus"] == {"metadata": {}, "code": 201}
    # an attacker reading the audit log learns no secret: neither the value nor its base64
    text = log.read_text()
    assert "hunter2-SECRET" not in text and "aHVudGVyMi1TRUNSRVQ=" not in text


def test_get_list_patch_delete_of_a_configmap(audited: tuple[Cluster, Path]) -> None:
    c, log = audited
    c.kubectl("create", "configmap", "cm-verbs", "--from-literal=k=v1")
    c.kubectl("get", "configmap", "cm-verbs", "-o", "json")
    c.kubectl("patch", "configmap", "cm-verbs", "--type=merge", "-p", '{"data":{"k":"v2"}}')
    c.kubectl("delete", "configmap", "cm-verbs")
    evs = wait_events(log, named("cm-verbs"), 5)
    verbs = [e["verb"] for e in evs]
    assert verbs[:2] == ["create", "get"] and "patch" in verbs and "delete" in verbs, verbs
    get, patch, delete = evs[1], evs[verbs.index("patch")], evs[verbs.index("delete")]
    assert get["responseObject"]["data"] == {"k": "v1"} and "requestObject" not in get
    assert patch["requestObject"] == {"data": {"k": "v2"}}  # the patch document, as upstream's LogRequestPatch
    assert patch["responseObject"]["data"] == {"k": "v2"}
    assert delete["responseStatus"]["code"] == 200
    # a list has no name: found by its URI
    c.kubectl("get", "configmaps", "-n", "default", "--chunk-size=7")
    lists = wait_events(log, lambda e: e["verb"] == "list" and "limit=7" in e["requestURI"], 1)
    assert lists and lists[0]["objectRef"] == {"resource": "configmaps", "namespace": "default", "apiVersion": "v1"}
    assert lists[0]["responseObject"]["kind"] in ("Table", "ConfigMapList")


def test_watch_has_request_received_response_started_and_complete(audited: tuple[Cluster, Path]) -> None:
    c, log = audited
    r = raw_request(c, "GET", "/api/v1/namespaces/default/secrets?watch=true&timeoutSeconds=1",
                    headers={"Audit-ID": "watch-audit-1"})
    assert r.status == 200 and r.headers["Audit-Id"] == "watch-audit-1"
    evs = wait_events(log, lambda e: e["auditID"] == "watch-audit-1", 3)
    assert [e["stage"] for e in evs] == ["RequestReceived", "ResponseStarted", "ResponseComplete"]
    assert all(e["verb"] == "watch" for e in evs)
    assert evs[1]["responseStatus"] == {"metadata": {}, "code": 200}
    assert evs[2]["responseStatus"] == {"metadata": {}, "code": 200}
    # the watch ran for its timeout between the two stages
    assert evs[2]["stageTimestamp"] > evs[1]["stageTimestamp"]


def test_forbidden_request_is_audited_with_decision_forbid(audited: tuple[Cluster, Path]) -> None:
    """eve is authenticated by token and has no RBAC grant: 403, decision forbid, at the level
    her group's rule gives (Request) even though secrets' own rule comes first... it does not:
    the secrets rule matches first, so Metadata."""
    c, log = audited
    r = token_kubectl(c, EVE_TOKEN, "get", "secrets", "-n", "kube-system", "sec-nope")
    assert r.returncode != 0 and "Forbidden" in r.stderr
    evs = wait_events(log, named("sec-nope"), 2)
    assert [e["stage"] for e in evs] == ["RequestReceived", "ResponseComplete"]
    e = evs[1]
    assert e["level"] == "Metadata"
    assert e["user"] == {"username": "eve", "uid": "uid-eve", "groups": ["auditors", "devs", "system:authenticated"]}
    assert e["annotations"] == {"authorization.k8s.io/decision": "forbid", "authorization.k8s.io/reason": ""}
    st = e["responseStatus"]
    assert st["code"] == 403 and st["status"] == "Failure" and st["reason"] == "Forbidden"
    assert st["message"] == ('secrets "sec-nope" is forbidden: User "eve" cannot get resource "secrets" in API '
                             'group "" in the namespace "kube-system"')
    assert st["details"] == {"name": "sec-nope", "kind": "secrets"}
    # her group's rule (Request) applies where no earlier rule does: a configmap create she may not make
    r = token_kubectl(c, EVE_TOKEN, "create", "deployment", "dep-nope", "--image=x")
    assert r.returncode != 0
    evs = wait_events(log, lambda e: e["user"].get("username") == "eve" and e["verb"] == "create", 2)
    assert [e["stage"] for e in evs] == ["RequestReceived", "ResponseComplete"]
    assert all(e["level"] == "Request" and e["objectRef"]["resource"] == "deployments" for e in evs)
    assert evs[1]["annotations"]["authorization.k8s.io/decision"] == "forbid"
    assert "requestObject" not in evs[1]  # refused before its body was read


def test_unauthenticated_requests_get_one_response_started_event(audited: tuple[Cluster, Path]) -> None:
    """Upstream's WithFailedAuthenticationAudit: a bad token is audited once, at ResponseStarted,
    with an empty user. A request with no credentials at all is system:anonymous (--anonymous-auth
    defaults to true), which RBAC refuses: audited as that user, with the decision."""
    c, log = audited
    r = tls_request(c, "GET", "/api/v1/namespaces/default/pods/badtoken-pod",
                    {"Authorization": "Bearer not-a-token", "Audit-ID": "unauth-1"})
    assert r.status == 401 and r.getheader("Audit-Id") == "unauth-1"
    wait_events(log, lambda e: e["auditID"] == "unauth-1", 1)
    time.sleep(0.2)
    evs = [e for e in read_events(log) if e["auditID"] == "unauth-1"]
    assert [e["stage"] for e in evs] == ["ResponseStarted"], evs
    e = evs[0]
    assert e["user"] == {} and e["verb"] == "get" and "annotations" not in e
    assert e["responseStatus"] == {"metadata": {}, "status": "Failure", "message": "Unauthorized",
                                   "reason": "Unauthorized", "code": 401}
    r = tls_request(c, "DELETE", "/api/v1/namespaces/default/pods/nocreds-pod", {"Audit-ID": "unauth-2"})
    assert r.status == 403
    evs = wait_events(log, lambda e: e["auditID"] == "unauth-2" and e["stage"] == "ResponseComplete", 1)
    e = evs[-1]
    assert e["user"]["username"] == "system:anonymous" and "system:unauthenticated" in e["user"]["groups"]
    assert e["verb"] == "delete" and e["responseStatus"]["code"] == 403
    assert e["annotations"]["authorization.k8s.io/decision"] == "forbid"


def test_audit_id_header_is_answered_and_taken_from_the_request(audited: tuple[Cluster, Path]) -> None:
    c, log = audited
    r = raw_request(c, "GET", "/api/v1/namespaces/default/configmaps/kube-root-ca.crt-nope")
    aid = r.headers["Audit-Id"]
    assert r.status == 404 and UUID_RE.match(aid)
    evs = wait_events(log, lambda e: e["auditID"] == aid, 1)
    assert evs and evs[0]["responseStatus"]["code"] == 404 and evs[0]["responseStatus"]["reason"] == "NotFound"
    r = raw_request(c, "GET", "/api/v1/namespaces/default/configmaps/x-given-id", headers={"Audit-ID": "my-own-id"})
    assert r.headers["Audit-Id"] == "my-own-id"
    assert wait_events(log, lambda e: e["auditID"] == "my-own-id", 1)
    # an ID that is not UTF-8 is logged as Go's encoder writes it (U+FFFD) and not echoed: a client
    # cannot keep its requests out of the log with a crafted ID or User-Agent
    r = raw_request(c, "GET", "/api/v1/namespaces/default/configmaps/x-odd-id",
                    headers={"Audit-ID": "a\u00e9b", "User-Agent": "ua\u00ff"})
    assert r.status == 404 and "Audit-Id" not in r.headers
    evs = wait_events(log, named("x-odd-id"), 1)  # configmaps: ResponseComplete only
    assert [e["auditID"] for e in evs] == ["a\ufffdb"] and evs[0]["userAgent"] == "ua\ufffd"
    # control characters cannot come back as a header either
    r = raw_request(c, "GET", "/api/v1/namespaces/default/configmaps/x-tab-id", headers={"Audit-ID": "a\tb"})
    assert r.status == 404 and "Audit-Id" not in r.headers


def test_spoofed_source_and_long_user_agent(audited: tuple[Cluster, Path]) -> None:
    """X-Forwarded-For and X-Real-Ip are logged as upstream's SourceIPs does, but the connection's
    own address always ends the list; a User-Agent over 1024 characters is cut and marked."""
    c, log = audited
    r = raw_request(c, "GET", "/api/v1/namespaces/default/secrets/spoof-me",
                    headers={"X-Forwarded-For": "203.0.113.7, not-an-ip", "X-Real-Ip": "198.51.100.9",
                             "User-Agent": "A" * 5000})
    assert r.status == 404
    evs = wait_events(log, named("spoof-me"), 2)
    assert evs[0]["sourceIPs"] == ["203.0.113.7", "198.51.100.9", "127.0.0.1"]
    assert evs[0]["userAgent"] == "A" * 1024 + "...TRUNCATED"


def test_policy_none_rules_skip_users_and_urls(audited: tuple[Cluster, Path]) -> None:
    c, log = audited
    r = token_kubectl(c, QUIET_TOKEN, "get", "configmap", "quiet-cm")
    assert r.returncode != 0
    raw_request(c, "GET", "/version", headers={"Audit-ID": "version-none"})
    c.kubectl("get", "configmap", "after-quiet", "--ignore-not-found")
    assert wait_events(log, named("after-quiet"), 1)  # later events are in: the earlier ones were skipped
    evs = read_events(log)
    assert not [e for e in evs if e.get("user", {}).get("username") == "quiet"]
    assert not [e for e in evs if e["auditID"] == "version-none"]


def test_log_file_is_private(audited: tuple[Cluster, Path]) -> None:
    _, log = audited
    assert stat.S_IMODE(log.stat().st_mode) == 0o600
    assert stat.S_IMODE(log.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(log.parent.parent.stat().st_mode) == 0o700


def test_no_policy_no_log_but_audit_id_still_answered(cluster: Cluster) -> None:
    r = raw_request(cluster, "GET", "/api/v1/namespaces/default/configmaps/none")
    assert UUID_RE.match(r.headers["Audit-Id"])
    r = raw_request(cluster, "GET", "/api/v1/namespaces/default/configmaps?watch=1&timeoutSeconds=1",
                    headers={"Audit-ID": "w-no-policy"})
    assert r.headers["Audit-Id"] == "w-no-policy"


# ---- rotation, stdout, legacy format, bad policies -------------------------------------------------------

BACKUP_RE = re.compile(r"^audit-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d\.\d{3}\.log$")


def test_rotation_by_size_keeps_maxbackup_files(tmp_path: Path) -> None:
    log = tmp_path / "logs" / "audit.log"
    c = start_audited(tmp_path, str(log), "--audit-log-maxsize", "1", "--audit-log-maxbackup", "2")
    try:
        (tmp_path / "k").write_text("x" * 200_000)  # logged twice (request and response): ~400 KB an event
        for i in range(12):
            c.kubectl("create", "configmap", f"big-{i}", f"--from-file=k={tmp_path / 'k'}")
        # The server goes on logging (and may rotate) while we look: read the directory and every file
        # as one snapshot, again if a file went away meanwhile, until big-11 is in.
        deadline = time.monotonic() + 30
        while True:
            names = sorted(os.listdir(log.parent))
            backups = [n for n in names if n != "audit.log"]
            try:
                files = {n: ((p := log.parent / n).stat(), p.read_text()) for n in ["audit.log", *backups]}
            except FileNotFoundError:
                assert time.monotonic() < deadline, names
                continue
            live = files["audit.log"][1]
            if live and not live.endswith("\n") and time.monotonic() < deadline:  # a line being written
                time.sleep(0.05)
                continue
            # (every line whole: a partial one fails to parse; not every event names an object)
            seen = [(json.loads(line).get("objectRef") or {}).get("name") for _, text in files.values()
                    for line in text.splitlines()]
            if "big-11" in seen or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        assert len(backups) == 2 and all(BACKUP_RE.match(n) for n in backups), names
        for st, _ in files.values():
            assert st.st_size <= 1024 * 1024
            assert stat.S_IMODE(st.st_mode) == 0o600
        assert "big-11" in seen and "big-0" not in seen  # the oldest went with the removed backups
    finally:
        c.stop()


def test_stdout_with_legacy_format(tmp_path: Path) -> None:
    c = start_audited(tmp_path, "-", "--audit-log-format", "legacy")
    try:
        c.kubectl("create", "configmap", "cm-stdout", "--from-literal=a=b")
        line_re = re.compile(r'^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z AUDIT: id="[0-9a-f-]{36}" '
                             r'stage="ResponseComplete" ip="127.0.0.1" method="create" user="admin" '
                             r'groups="\\"system:masters\\",\\"system:authenticated\\"" as="<self>" '
                             r'asgroups="<lookup>" user-agent="kubectl[^"]+" namespace="default" '
                             r'uri="/api/v1/namespaces/default/configmaps\?[^"]*" response="201"$')
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not any(line_re.match(x.strip()) for x in c.output):
            time.sleep(0.05)
        assert any(line_re.match(x.strip()) for x in c.output), "".join(c.output[-20:])
    finally:
        c.stop()


def test_api_workers_audit_to_one_file(tmp_path: Path) -> None:
    """With --api-workers 2 both workers append whole lines to the same log, and rotate it together;
    --audit-log-maxage removes backups older than its days by the time in their names, and nothing else."""
    log = tmp_path / "audit.log"
    old = tmp_path / "audit-2020-01-02T03-04-05.678.log"
    old.write_text("{}\n")
    unrelated = tmp_path / "audit-notes.log"
    unrelated.write_text("mine\n")
    tokens = _write(tmp_path / "tokens.csv", f"{EVE_TOKEN},eve,uid-eve\n")
    c = Cluster(str(tmp_path / "data"), ["--disable", "controller-manager", "--disable", "scheduler", "--disable", "dns",
                                         "--token-auth-file", tokens, "--audit-policy-file",
                                         _write(tmp_path / "policy.yaml", POLICY), "--audit-log-path", str(log),
                                         "--audit-log-maxsize", "1", "--audit-log-compress",
                                         "--audit-log-maxage", "1"],
                datastore="sqlite-workers").start()
    try:
        (tmp_path / "k").write_text("y" * 150_000)
        for i in range(10):  # new connections: the kernel spreads them over the workers
            c.kubectl("create", "configmap", f"w-{i}", f"--from-file=k={tmp_path / 'k'}")
        names = set()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and len(names) < 10:
            import gzip

            names = set()
            for p in tmp_path.iterdir():
                if p.name.startswith("audit") and p != unrelated:
                    try:
                        text = gzip.open(p, "rt").read() if p.name.endswith(".gz") else p.read_text()
                    except (FileNotFoundError, EOFError):  # being compressed right now
                        continue
                    for line in text.splitlines():
                        e = json.loads(line)  # every line whole
                        if e.get("verb") == "create" and e["stage"] == "ResponseComplete" \
                                and e["objectRef"]["resource"] == "configmaps":  # not the components' leases
                            names.add(e["objectRef"]["name"])
            time.sleep(0.1)
        assert names == {f"w-{i}" for i in range(10)}
        gz = [p for p in tmp_path.iterdir() if p.name.endswith(".log.gz")]
        assert gz and all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in gz)
        assert not old.exists() and not Path(f"{old}.gz").exists() and unrelated.read_text() == "mine\n"
    finally:
        c.stop()


@pytest.mark.parametrize(("policy", "message"), [
    ("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Everything\n",
     'rules[0].level: Unsupported value: "Everything": supported values: "None", "Metadata", "Request", '
     '"RequestResponse"'),
    ("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: []\n", "loaded illegal policy with 0 rules"),
    ("apiVersion: audit.k8s.io/v1beta1\nkind: Policy\nrules:\n- level: None\n", "audit.k8s.io/v1beta1"),
    ("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: None\n  nonResourceURLs: [api]\n",
     "non-resource URL rules must begin with a '/' character"),
])
def test_a_bad_policy_stops_the_server(tmp_path: Path, policy: str, message: str) -> None:
    with pytest.raises(RuntimeError) as ei:
        start_audited(tmp_path, str(tmp_path / "audit.log"), policy=policy)
    assert message in str(ei.value)

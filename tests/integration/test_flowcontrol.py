"""API Priority and Fairness enforced: every answer names its FlowSchema and PriorityLevel by UID
(X-Kubernetes-PF-*-UID, as upstream), a level with one seat and one one-request queue answers a
flood with 429 TooManyRequests and Retry-After while other levels and exempt users are served, a
FlowSchema change applies to the next request, a client that leaves its queue leaks no seat, and
--enable-priority-and-fairness=false falls back to the two in-flight limits.

A request holds its seat while its handler runs; these tests hold one by sending a POST's chunked
body slowly (the handler waits for it, as upstream's does after its filters).
"""

from __future__ import annotations

import json
import socket
import ssl
import subprocess
import sys
import time
from urllib.parse import urlparse

import pytest

from tests.cluster import Cluster, raw_request

pytestmark = pytest.mark.xdist_group("flowcontrol")

FS_HEADER = "X-Kubernetes-PF-FlowSchema-UID"
PL_HEADER = "X-Kubernetes-PF-PriorityLevel-UID"
TOKENS = {
    "flooder": "flood-token",
    "bob": "bob-token",
    "mallory-admin": "mal-masters",  # the same user name twice: once in system:masters, once not
    "mallory": "mal-plain",
    "ann": "ann-token",  # the fair-queuing test's flooder and quiet user
    "ben": "ben-token",
}


def _tokens_file(path) -> str:
    path.write_text("flood-token,flooder,1001,\nbob-token,bob,1002,\nmal-masters,mallory,1003,\"system:masters\"\n"
                    "mal-plain,mallory,1004,\nann-token,ann,1005,\nben-token,ben,1006,\n")
    return str(path)


def _uid(c: Cluster, plural: str, name: str) -> str:
    return json.loads(c.kubectl("get", plural, name, "-o", "json").stdout)["metadata"]["uid"]


def _wait_for(pred, what: str, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


class _Conn:
    """A raw HTTPS connection for requests whose body we send (or hold back) ourselves."""

    def __init__(self, c: Cluster, token: str | None) -> None:
        u = urlparse(c.url)
        ctx = ssl.create_default_context(cafile=f"{c.data_dir}/pki/ca.crt")
        if token is None:  # the admin's client certificate
            from pyk8s.client.kubeconfig import load_kubeconfig

            ctx = load_kubeconfig(c.kubeconfig).ssl_client_context()
        self.sock = ctx.wrap_socket(socket.create_connection((u.hostname, u.port), timeout=30),
                                    server_hostname=u.hostname)
        self.auth = f"Authorization: Bearer {token}\r\n" if token else ""
        self.early = b""  # answer bytes read by answered()

    def start_chunked_post(self, path: str) -> None:
        self.sock.sendall((f"POST {path} HTTP/1.1\r\nHost: x\r\n{self.auth}Content-Type: application/json\r\n"
                           "Transfer-Encoding: chunked\r\n\r\n").encode() + b"2\r\n{\"\r\n")

    def finish_chunked_post(self, name: str) -> None:
        rest = f'apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"{name}"}}}}'.encode()
        self.sock.sendall(b"%x\r\n%s\r\n0\r\n\r\n" % (len(rest), rest))

    def answered(self) -> bool:
        """Whether an answer has come (the server refused the request without reading its body)."""
        self.sock.setblocking(False)
        try:
            self.early += self.sock.recv(65536)  # TLS records that carry no data (session tickets) give nothing
        except (ssl.SSLWantReadError, BlockingIOError):
            pass
        finally:
            self.sock.settimeout(30)
        return bool(self.early)

    def response(self) -> tuple[int, dict[str, str], bytes]:
        data, self.early = self.early, b""
        while b"\r\n\r\n" not in data:
            chunk = self.sock.recv(65536)
            assert chunk, "connection closed before an answer"
            data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        lines = head.decode().split("\r\n")
        headers = {k.strip().lower(): v.strip() for k, _, v in (ln.partition(":") for ln in lines[1:])}
        if "content-length" in headers:
            n = int(headers["content-length"])
            while len(body) < n:
                body += self.sock.recv(65536)
        return int(lines[0].split()[1]), headers, body

    def close(self) -> None:
        self.sock.close()


def _get(c: Cluster, path: str, token: str | None, timeout: float = 30.0):
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return raw_request(c, "GET", path, headers=headers, auth=token is None, timeout=timeout)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    d = tmp_path_factory.mktemp("pyk8s-pf")
    # a server-wide concurrency of 2: the test level's single share gets one seat
    c = Cluster(str(d / "data"), ["--token-auth-file", _tokens_file(d / "tokens.csv"),
                                  "--max-requests-inflight", "2", "--max-mutating-requests-inflight", "0"])
    c.start()
    for user in ("flooder", "bob", "mallory", "ann", "ben"):
        c.kubectl("create", "clusterrolebinding", f"{user}-edit", "--clusterrole=cluster-admin", f"--user={user}")
    c.kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "PriorityLevelConfiguration",
         "metadata": {"name": "tiny"},
         "spec": {"type": "Limited", "limited": {"nominalConcurrencyShares": 1, "lendablePercent": 0,
                                                 "borrowingLimitPercent": 0,
                                                 "limitResponse": {"type": "Queue", "queuing": {
                                                     "queues": 1, "handSize": 1, "queueLengthLimit": 1}}}}},
        {"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema", "metadata": {"name": "flood"},
         "spec": {"priorityLevelConfiguration": {"name": "tiny"}, "matchingPrecedence": 50,
                  "distinguisherMethod": {"type": "ByUser"},
                  "rules": [{"subjects": [{"kind": "User", "user": {"name": "flooder"}}],
                             "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"],
                                                "namespaces": ["*"], "clusterScope": True}]}]}},
        {"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "PriorityLevelConfiguration",
         "metadata": {"name": "fair"},
         "spec": {"type": "Limited", "limited": {"nominalConcurrencyShares": 1, "lendablePercent": 0,
                                                 "borrowingLimitPercent": 0,
                                                 "limitResponse": {"type": "Queue", "queuing": {
                                                     "queues": 64, "handSize": 2, "queueLengthLimit": 20}}}}},
        {"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema", "metadata": {"name": "fair"},
         "spec": {"priorityLevelConfiguration": {"name": "fair"}, "matchingPrecedence": 40,
                  "distinguisherMethod": {"type": "ByUser"},
                  "rules": [{"subjects": [{"kind": "User", "user": {"name": "ann"}},
                                          {"kind": "User", "user": {"name": "ben"}}],
                             "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"],
                                                "namespaces": ["*"], "clusterScope": True}]}]}},
    ]}))
    c.kubectl("create", "namespace", "fair")
    yield c
    c.stop()


def test_answers_name_the_flow_schema_and_priority_level(server):
    exempt = (_uid(server, "flowschemas", "exempt"), _uid(server, "prioritylevelconfigurations", "exempt"))
    default = (_uid(server, "flowschemas", "global-default"),
               _uid(server, "prioritylevelconfigurations", "global-default"))
    tiny = (_uid(server, "flowschemas", "flood"), _uid(server, "prioritylevelconfigurations", "tiny"))
    for path, status in (("/api/v1/namespaces", 200), ("/api/v1/namespaces/default/configmaps/nope", 404),
                         ("/apis", 200), ("/api/v1/namespaces/default/pods?watch=1&timeoutSeconds=1", 200)):
        r = _get(server, path, None)
        assert r.status == status
        assert (r.headers[FS_HEADER], r.headers[PL_HEADER]) == exempt, path  # admin: system:masters
        r = _get(server, path, TOKENS["bob"])
        assert r.status == status
        assert (r.headers[FS_HEADER], r.headers[PL_HEADER]) == default, path
        r = _get(server, path, TOKENS["flooder"])
        if path != "/apis":  # the flood schema names resources only: discovery goes to global-default
            assert (r.headers[FS_HEADER], r.headers[PL_HEADER]) == tiny, path
    # a name that only looks long-running is classified (and limited) like any other request
    r = _get(server, "/api/v1/namespaces/proxy-x/configmaps", TOKENS["flooder"])
    assert r.status == 200 and r.headers[PL_HEADER] == tiny[1]
    r = _get(server, "/api/v1/namespaces/default/configmaps/exec-log-proxy", TOKENS["flooder"])
    assert r.status == 404 and r.headers[PL_HEADER] == tiny[1]
    # logs, exec, attach, port-forward and proxies are not held by APF (upstream: no headers either)
    r = _get(server, "/api/v1/namespaces/default/pods/nope/log", TOKENS["flooder"])
    assert r.status == 404 and PL_HEADER not in r.headers
    # the same user name without system:masters is not exempt (classification is per user and groups)
    assert _get(server, "/api/v1/namespaces", TOKENS["mallory-admin"]).headers[PL_HEADER] == exempt[1]
    assert _get(server, "/api/v1/namespaces", TOKENS["mallory"]).headers[PL_HEADER] == default[1]
    assert _get(server, "/api/v1/namespaces", TOKENS["mallory-admin"]).headers[PL_HEADER] == exempt[1]


def test_flood_gets_429_while_other_levels_and_exempt_are_served(server):
    holder = _Conn(server, TOKENS["flooder"])
    queued = _Conn(server, TOKENS["flooder"])
    try:
        holder.start_chunked_post("/api/v1/namespaces/default/configmaps")  # takes tiny's one seat
        time.sleep(0.3)
        queued.start_chunked_post("/api/v1/namespaces/default/configmaps")  # waits in tiny's one queue
        time.sleep(0.3)
        r = _get(server, "/api/v1/namespaces/default/configmaps", TOKENS["flooder"])
        assert r.status == 429
        status = r.json()
        assert status["reason"] == "TooManyRequests" and status["code"] == 429
        assert status["message"] == "Too many requests, please try again later."
        assert int(r.headers["Retry-After"]) >= 1
        assert status["details"]["retryAfterSeconds"] == int(r.headers["Retry-After"])
        assert r.headers[PL_HEADER] == _uid(server, "prioritylevelconfigurations", "tiny")
        # another user's flow at another level, and an exempt user, are served meanwhile
        assert _get(server, "/api/v1/namespaces/default/configmaps", TOKENS["bob"]).status == 200
        assert _get(server, "/api/v1/namespaces/default/configmaps", None).status == 200
        # the held request finishes; the queued one gets the seat
        holder.finish_chunked_post("held-1")
        assert holder.response()[0] == 201
        queued.finish_chunked_post("held-2")
        code, headers, _ = queued.response()
        assert code == 201 and headers[PL_HEADER.lower()]
        assert _get(server, "/api/v1/namespaces/default/configmaps/held-2", TOKENS["flooder"]).status == 200
    finally:
        holder.close()
        queued.close()


def test_a_flows_backlog_does_not_delay_another_flow(server):
    """ann queues 10 creates behind a held one; ben's one create, queued last at the same level, is
    served after at most one of ann's per queue of her hand (2), not after all 10."""
    import threading

    holder = _Conn(server, TOKENS["ann"])
    threads = []

    def create(user: str, name: str) -> None:
        r = raw_request(server, "POST", "/api/v1/namespaces/fair/configmaps",
                        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}},
                        headers={"Authorization": f"Bearer {TOKENS[user]}"}, auth=False, timeout=60)
        assert r.status == 201, r.body

    try:
        holder.start_chunked_post("/api/v1/namespaces/fair/configmaps")  # the level's one seat
        time.sleep(0.3)
        for i in range(10):
            threads.append(threading.Thread(target=create, args=("ann", f"ann-{i}")))
            threads[-1].start()
        time.sleep(1.0)  # all ten queued
        threads.append(threading.Thread(target=create, args=("ben", "ben")))
        threads[-1].start()
        time.sleep(0.5)
        holder.finish_chunked_post("ann-held")
        assert holder.response()[0] == 201
        for t in threads:
            t.join(60)
    finally:
        holder.close()
    items = json.loads(server.kubectl("get", "configmaps", "-n", "fair", "-o", "json").stdout)["items"]
    order = [o["metadata"]["name"] for o in sorted(items, key=lambda o: int(o["metadata"]["resourceVersion"]))
             if o["metadata"]["name"] != "kube-root-ca.crt"]
    assert order[0] == "ann-held" and len(order) == 12
    assert order.index("ben") <= 3, order  # FIFO would make it last


def test_our_client_retries_a_429_after_retry_after(server):
    """pyk8s' own client (every component's) sends a refused request again after Retry-After, as client-go."""
    import asyncio
    import ssl
    import threading

    from pyk8s.client.rest import Client

    holder = _Conn(server, TOKENS["flooder"])
    queued = _Conn(server, TOKENS["flooder"])
    try:
        holder.start_chunked_post("/api/v1/namespaces/default/configmaps")
        time.sleep(0.3)
        queued.start_chunked_post("/api/v1/namespaces/default/configmaps")
        time.sleep(0.3)
        assert _get(server, "/api/v1/namespaces/default/configmaps", TOKENS["flooder"]).status == 429

        def free_the_level() -> None:
            time.sleep(0.5)  # after the client's first try was refused
            holder.finish_chunked_post("retry-1")
            queued.finish_chunked_post("retry-2")

        async def get() -> dict:
            ctx = ssl.create_default_context(cafile=f"{server.data_dir}/pki/ca.crt")
            client = Client(server.url, ctx, token=TOKENS["flooder"])
            try:
                return await client.request("GET", "/api/v1/namespaces/default/configmaps")
            finally:
                await client.close()

        t = threading.Thread(target=free_the_level)
        t0 = time.monotonic()
        t.start()
        assert asyncio.run(get())["kind"] == "ConfigMapList"
        assert time.monotonic() - t0 >= 0.9  # it waited Retry-After (at least 1 s) once refused
        t.join()
        assert holder.response()[0] == 201 and queued.response()[0] == 201
    finally:
        holder.close()
        queued.close()


def test_a_client_leaving_its_queue_leaks_no_seat(server):
    holder = _Conn(server, TOKENS["flooder"])
    try:
        holder.start_chunked_post("/api/v1/namespaces/default/configmaps")
        time.sleep(0.3)
        leaver = _Conn(server, TOKENS["flooder"])
        leaver.start_chunked_post("/api/v1/namespaces/default/configmaps")  # queued
        time.sleep(0.3)
        leaver.close()  # gives up while queued
        holder.finish_chunked_post("held-3")
        assert holder.response()[0] == 201
        for _ in range(5):  # the seat came back once; nothing is stuck in the queue
            assert _get(server, "/api/v1/namespaces/default/configmaps", TOKENS["flooder"]).status == 200
    finally:
        holder.close()


def test_a_request_whose_client_left_the_queue_never_runs(server):
    holder = _Conn(server, TOKENS["flooder"])
    try:
        holder.start_chunked_post("/api/v1/namespaces/default/configmaps")
        time.sleep(0.3)
        leaver = _Conn(server, TOKENS["flooder"])
        body = b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"left-behind"}}'
        leaver.sock.sendall(b"POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: x\r\n"
                            + leaver.auth.encode() + b"Content-Type: application/json\r\n"
                            + b"Content-Length: %d\r\n\r\n" % len(body) + body)
        time.sleep(0.3)  # queued behind the holder
        leaver.close()
        time.sleep(0.3)
        holder.finish_chunked_post("held-4")
        assert holder.response()[0] == 201
        time.sleep(0.5)
        assert _get(server, "/api/v1/namespaces/default/configmaps/left-behind", None).status == 404
        assert _get(server, "/api/v1/namespaces/default/configmaps", TOKENS["flooder"]).status == 200
    finally:
        holder.close()


# any value but "0" and "false" makes a watch, as the handlers read it (upstream's bool conversion):
# APF must count each as the watch it is served as, or a watch=yes would hold a list's seats for its life
@pytest.mark.parametrize("watch", ["1", "yes", "True"])
def test_a_watch_holds_its_seat_only_while_it_starts(server, watch):
    watcher = _Conn(server, TOKENS["flooder"])
    try:
        watcher.sock.sendall(f"GET /api/v1/namespaces/default/configmaps?watch={watch} HTTP/1.1\r\nHost: x\r\n"
                             f"{watcher.auth}\r\n".encode())
        code, headers, _ = watcher.response()
        assert code == 200
        assert headers[PL_HEADER.lower()] == _uid(server, "prioritylevelconfigurations", "tiny")
        for _ in range(3):  # tiny's one seat is free again although the watch stays open
            assert _get(server, "/api/v1/namespaces/default/configmaps", TOKENS["flooder"]).status == 200
    finally:
        watcher.close()


def test_exempt_requests_are_never_refused(server):
    conns = [_Conn(server, None) for _ in range(6)]  # more than the server's concurrency of 2
    try:
        for c in conns:
            c.start_chunked_post("/api/v1/namespaces/default/configmaps")
        time.sleep(0.3)
        for _ in range(5):
            assert _get(server, "/api/v1/namespaces/default/configmaps", None).status == 200
        for i, c in enumerate(conns):
            c.finish_chunked_post(f"exempt-{i}")
        assert all(c.response()[0] == 201 for c in conns)
    finally:
        for c in conns:
            c.close()


def test_flow_schema_changes_apply_without_restart(server):
    tiny = _uid(server, "prioritylevelconfigurations", "tiny")
    default = _uid(server, "prioritylevelconfigurations", "global-default")
    assert _get(server, "/api/v1/namespaces", TOKENS["flooder"]).headers[PL_HEADER] == tiny
    server.kubectl("patch", "flowschema", "flood", "--type=merge",
                   "-p", '{"spec":{"priorityLevelConfiguration":{"name":"global-default"}}}')
    _wait_for(lambda: _get(server, "/api/v1/namespaces", TOKENS["flooder"]).headers[PL_HEADER] == default,
              "the FlowSchema's new level")
    server.kubectl("patch", "flowschema", "flood", "--type=merge",
                   "-p", '{"spec":{"priorityLevelConfiguration":{"name":"tiny"}}}')
    _wait_for(lambda: _get(server, "/api/v1/namespaces", TOKENS["flooder"]).headers[PL_HEADER] == tiny,
              "the FlowSchema's level back")
    # a schema naming a level that does not exist (dangling) matches nothing
    server.kubectl("patch", "flowschema", "flood", "--type=merge",
                   "-p", '{"spec":{"priorityLevelConfiguration":{"name":"no-such-level"}}}')
    _wait_for(lambda: _get(server, "/api/v1/namespaces", TOKENS["flooder"]).headers[PL_HEADER] == default,
              "the dangling FlowSchema ignored")
    server.kubectl("delete", "flowschema", "flood")
    _wait_for(lambda: _get(server, "/api/v1/namespaces", TOKENS["flooder"]).headers[FS_HEADER] ==
              _uid(server, "flowschemas", "global-default"), "the deleted FlowSchema gone")
    # the mandatory catch-all pointed at a missing level (until the ensurer puts it back): requests
    # still go to the catch-all level, none fails
    server.kubectl("patch", "flowschema", "catch-all", "--type=merge",
                   "-p", '{"spec":{"priorityLevelConfiguration":{"name":"no-such-level"}}}')
    server.kubectl("patch", "flowschema", "global-default", "--type=merge",
                   "-p", '{"metadata":{"annotations":{"apf.kubernetes.io/autoupdate-spec":"false"}},'
                         '"spec":{"rules":[{"subjects":[{"kind":"User","user":{"name":"nobody"}}],'
                         '"nonResourceRules":[{"verbs":["*"],"nonResourceURLs":["*"]}]}]}}')
    catch_all = _uid(server, "prioritylevelconfigurations", "catch-all")
    _wait_for(lambda: _get(server, "/api/v1/namespaces", TOKENS["flooder"]).headers[PL_HEADER] == catch_all,
              "the built-in catch-all")
    r = _get(server, "/api/v1/namespaces", TOKENS["bob"])
    assert r.status == 200 and r.headers[PL_HEADER] == catch_all


def test_without_priority_and_fairness_the_in_flight_limits_apply(tmp_path):
    c = Cluster(str(tmp_path / "data"), ["--token-auth-file", _tokens_file(tmp_path / "tokens.csv"),
                                         "--enable-priority-and-fairness=false", "--max-requests-inflight", "0",
                                         "--max-mutating-requests-inflight", "1"]).start()
    holder = _Conn(c, TOKENS["bob"])
    try:
        c.kubectl("create", "clusterrolebinding", "bob-edit", "--clusterrole=cluster-admin", "--user=bob")
        r = _get(c, "/api/v1/namespaces", TOKENS["bob"])
        assert r.status == 200 and FS_HEADER not in r.headers and PL_HEADER not in r.headers
        holder.start_chunked_post("/api/v1/namespaces/default/configmaps")  # the one mutating slot
        # until the held request has the slot (a dry run stores nothing). The in-process controllers'
        # writes take the free slot for a moment too (as system:masters they are never refused): the
        # held POST itself can be refused then (it is sent again), and a probe can be refused before
        # the held POST is read: three refusals in a row, 0.1 s apart, say it holds the slot
        deadline, refused = time.monotonic() + 20, 0
        while refused < 3:
            if holder.answered():
                assert holder.response()[0] == 429
                holder.close()
                holder = _Conn(c, TOKENS["bob"])
                holder.start_chunked_post("/api/v1/namespaces/default/configmaps")
                refused = 0
            status = raw_request(c, "POST", "/api/v1/namespaces/default/configmaps?dryRun=All",
                                 {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "probe"}},
                                 headers={"Authorization": f"Bearer {TOKENS['bob']}"}, auth=False).status
            refused = refused + 1 if status == 429 else 0
            assert time.monotonic() < deadline, "the held POST never took the mutating slot"
            time.sleep(0.1 if refused else 0.05)
        r = raw_request(c, "POST", "/api/v1/namespaces/default/configmaps",
                        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "second"}},
                        headers={"Authorization": f"Bearer {TOKENS['bob']}"}, auth=False)
        assert r.status == 429 and r.headers["Retry-After"] == "1"
        assert r.json()["reason"] == "TooManyRequests"
        assert _get(c, "/api/v1/namespaces", TOKENS["bob"]).status == 200  # reads: no limit (0)
        r = raw_request(c, "POST", "/api/v1/namespaces/default/configmaps",
                        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "by-admin"}})
        assert r.status == 201  # system:masters is answered over the limit
        holder.finish_chunked_post("held")
        assert holder.response()[0] == 201
    finally:
        holder.close()
        c.stop()


@pytest.mark.parametrize("args, message", [
    (["--enable-priority-and-fairness=maybe"], "invalid boolean value"),
    (["--max-requests-inflight", "-1"], "cannot be negative"),
    (["--max-requests-inflight", "0", "--max-mutating-requests-inflight", "0"], "must be positive"),
])
def test_bad_flag_values_are_refused(tmp_path, args, message):
    p = subprocess.run([sys.executable, "-m", "pyk8s.cli", "server", "--data-dir", str(tmp_path), "--port", "0",
                        "--disable-agent", *args], capture_output=True, text=True, timeout=60)
    assert p.returncode != 0 and message in p.stderr


@pytest.mark.parametrize("apf", [True, False])
def test_api_workers_enforce_the_same_filter(tmp_path, apf):
    """--api-workers: the worker processes answer, each with the main server's APF setting."""
    args = ["--token-auth-file", _tokens_file(tmp_path / "tokens.csv")]
    if not apf:
        args += ["--enable-priority-and-fairness=false"]
    c = Cluster(str(tmp_path / "data"), args, datastore="sqlite-workers").start()
    try:
        for _ in range(4):  # connections spread over the workers
            r = _get(c, "/api/v1/namespaces", TOKENS["bob"])
            assert r.status == 403  # bob has no role here: classified (and limited) before authorization
            if apf:
                assert r.headers[PL_HEADER] == _uid(c, "prioritylevelconfigurations", "global-default")
            else:
                assert PL_HEADER not in r.headers
    finally:
        c.stop()

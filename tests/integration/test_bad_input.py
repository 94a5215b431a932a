"""Bad input gets upstream's 4xx Status, never a 500.

Each row was a 500 (or another wrong answer) before; the expected answers are those an
upstream v1.32 API server gave (/work/shared/reference/upstream-observed-safety.md), or a 4xx
where upstream itself answers 5xx (bindings with null metadata, a resourceVersion out of range).
"""

from __future__ import annotations

import socket
from typing import Any

import pytest

from tests.cluster import raw_request

NS = "/api/v1/namespaces/default"
GO_STRUCT = 'struct { APIVersion string "json:\\"apiVersion,omitempty\\""; Kind string "json:\\"kind,omitempty\\"" }'
RV = "99999999999999999999999"
RV_RANGE = f'resourceVersion: Invalid value: "{RV}": strconv.ParseUint: parsing "{RV}": value out of range'


def _unrecognized(kind: str) -> str:
    return (f"the object provided is unrecognized (must be of type {kind}): couldn't get version/kind; json parse "
            f"error: json: cannot unmarshal array into Go value of type {GO_STRUCT} (5b6e756c6c2c6e756c6c5d)")


# (method, path, body, content type, code, reason, message)
CASES: list[tuple[str, str, Any, str, int, str, str]] = [
    ("POST", f"{NS}/pods/nope/binding", "[null,null]", "", 400, "BadRequest", _unrecognized("Binding")),
    ("POST", f"{NS}/pods/nope/eviction", "[null,null]", "", 400, "BadRequest", _unrecognized("Eviction")),
    ("POST", f"{NS}/serviceaccounts/default/token", "[null,null]", "", 400, "BadRequest",
     _unrecognized("TokenRequest")),
    ("POST", f"{NS}/configmaps", "[null,null]", "", 400, "BadRequest", _unrecognized("ConfigMap")),
    ("POST", f"{NS}/pods/nope/binding", '{"target":[]}', "", 400, "BadRequest",
     'Binding in version "v1" cannot be handled as a Binding: json: cannot unmarshal array into Go struct field '
     "Binding.target of type v1.ObjectReference"),
    ("POST", f"{NS}/bindings", '{"metadata":null}', "", 422, "Invalid", 'Binding "" is invalid: target.name: Required value'),
    ("PUT", f"{NS}/pods/nope/status", '{"metadata":null}', "", 400, "BadRequest",
     "the name of the object (nope based on URL) was undeterminable: name must be provided"),
    ("PUT", f"{NS}/configmaps/nope", '{"data":{}}', "", 400, "BadRequest",
     "the name of the object (nope based on URL) was undeterminable: name must be provided"),
    ("POST", f"{NS}/services", '{"metadata":{"name":"s0"},"spec":{"ports":[null]}}', "", 422, "Invalid",
     'Service "s0" is invalid: [spec.ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive, '),
    ("POST", f"{NS}/pods", '{"metadata":{"name":"p0"},"spec":{"containers":[null]}}', "", 422, "Invalid",
     'Pod "p0" is invalid: [spec.containers[0].name: Required value, spec.containers[0].image: Required value]'),
    ("POST", f"{NS}/configmaps?fieldValidation=Strict", '{"metadata":{"name":"d0"},"data":{"a":"1","a":"2"}}', "",
     400, "BadRequest",
     'ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: duplicate field "data.a"'),
    ("POST", f"{NS}/configmaps?fieldValidation=Strict", '{"":1,"metadata":{"name":"e0"}}', "", 400, "BadRequest",
     'ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: unknown field ""'),
    ("PATCH", f"{NS}/configmaps/bad-input", '{"metadata":{"name":"bad-input"}}', "application/apply-patch+yaml",
     422, "Invalid",
     'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch'),
    ("PATCH", f"{NS}/configmaps/bad-input?fieldManager={'m' * 129}", '{"metadata":{"name":"bad-input"}}',
     "application/apply-patch+yaml", 422, "Invalid",
     'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Too long: may not be more than 128 bytes'),
    ("POST", f"{NS}/configmaps?fieldManager={'m' * 129}", '{"metadata":{"name":"f0"}}', "", 422, "Invalid",
     'CreateOptions.meta.k8s.io "" is invalid: fieldManager: Too long: may not be more than 128 bytes'),
    ("GET", f"/api/v1/pods?resourceVersion={RV}", None, "", 400, "BadRequest", RV_RANGE),
    ("GET", f"{NS}/pods?resourceVersion={RV}&limit=1", None, "", 400, "BadRequest", RV_RANGE),
    ("GET", f"{NS}/pods?resourceVersion={RV}&resourceVersionMatch=Exact", None, "", 400, "BadRequest", RV_RANGE),
    ("GET", f"{NS}/pods?watch=1&resourceVersion={RV}", None, "", 400, "BadRequest", RV_RANGE),
    ("GET", f"{NS}/configmaps/bad-input?resourceVersion={RV}", None, "", 400, "BadRequest", RV_RANGE),
    ("GET", f"{NS}/pods?resourceVersion=-1", None, "", 400, "BadRequest",
     'resourceVersion: Invalid value: "-1": strconv.ParseUint: parsing "-1": invalid syntax'),
    ("PUT", f"{NS}/configmaps/bad-input", f'{{"metadata":{{"name":"bad-input","resourceVersion":"{RV}"}}}}', "",
     400, "BadRequest", RV_RANGE),
    ("GET", f"{NS}/pods?limit={RV}", None, "", 400, "BadRequest",
     f'strconv.ParseInt: parsing "{RV}": value out of range'),
    ("GET", f"{NS}/pods?limit=ten", None, "", 400, "BadRequest", 'strconv.ParseInt: parsing "ten": invalid syntax'),
    ("GET", f"{NS}/pods?watch=1&timeoutSeconds=soon", None, "", 400, "BadRequest",
     'strconv.ParseInt: parsing "soon": invalid syntax'),
    ("DELETE", f"{NS}/configmaps/bad-input?gracePeriodSeconds=later", None, "", 400, "BadRequest",
     'strconv.ParseInt: parsing "later": invalid syntax'),
]


@pytest.fixture(scope="module")
def seeded(cluster):
    r = raw_request(cluster, "POST", f"{NS}/configmaps", {"metadata": {"name": "bad-input"}})
    assert r.status == 201, r.body
    return cluster


@pytest.mark.parametrize("method,path,body,ct,code,reason,message", CASES,
                         ids=[f"{c[0]} {c[1][:60]} {str(c[2])[:30]}" for c in CASES])
def test_bad_input_gets_upstream_status(seeded, method, path, body, ct, code, reason, message):
    headers = {"Content-Type": ct} if ct else None
    r = raw_request(seeded, method, path, body, headers)
    st = r.json()
    assert (r.status, st.get("kind"), st.get("code"), st.get("reason")) == (code, "Status", code, reason), r.body
    if message.endswith(", "):  # upstream's message goes on with more causes
        assert st["message"].startswith(message), st["message"]
    else:
        assert st["message"] == message


@pytest.mark.parametrize("kind,path,body", [
    ("ConfigMap", f"{NS}/configmaps", {"": 1, "metadata": {"name": "empty-key-cm"}}),
    ("Secret", f"{NS}/secrets", {"": 1, "metadata": {"name": "empty-key-secret"}}),
    ("ServiceAccount", f"{NS}/serviceaccounts", {"": 1, "metadata": {"name": "empty-key-sa"}}),
    ("Namespace", "/api/v1/namespaces", {"": 1, "metadata": {"name": "empty-key-ns"}}),
    ("ClusterRole", "/apis/rbac.authorization.k8s.io/v1/clusterroles", {"": 1, "metadata": {"name": "empty-key"}}),
])
def test_empty_top_level_key_is_an_unknown_field(seeded, kind, path, body):
    """As upstream: 201 with `Warning: 299 - "unknown field \\"\\""` (fieldValidation=Warn), the key dropped."""
    r = raw_request(seeded, "POST", path + "?fieldValidation=Warn", body)
    assert r.status == 201, r.body
    assert r.headers.get_all("Warning") == ['299 - "unknown field \\"\\""']
    assert "" not in r.json()


def test_empty_nested_key_is_dropped(seeded):
    r = raw_request(seeded, "POST", f"{NS}/configmaps?fieldValidation=Warn",
                    {"metadata": {"name": "nested-empty", "": 1, "labels": {"a": "b"}}, "data": {"k": "kept"}})
    assert r.status == 201, r.body
    assert r.headers.get_all("Warning") == ['299 - "unknown field \\"metadata.\\""']
    obj = r.json()
    assert "" not in obj["metadata"] and obj["metadata"]["labels"] == {"a": "b"} and obj["data"] == {"k": "kept"}


def test_warning_for_a_non_latin1_field_is_utf8(seeded):
    """Upstream: `Warning: 299 - "unknown field \"名前\""`, UTF-8 in the header (it had been an empty 500)."""
    r = raw_request(seeded, "POST", f"{NS}/configmaps?fieldValidation=Warn",
                    {"metadata": {"name": "utf8-warning"}, "名前": "x"})
    assert r.status == 201, r.body
    assert [w.encode("latin-1").decode() for w in r.headers.get_all("Warning")] == ['299 - "unknown field \\"名前\\""']


@pytest.mark.parametrize("field", ["a\r\nX-Injected: yes", "a\nb", "a\x00b", "a\x85b"])
def test_warning_with_control_characters_is_dropped(seeded, field):
    """As upstream's NewWarningHeader: a text with control characters is no Warning (never a split header)."""
    r = raw_request(seeded, "POST", f"{NS}/configmaps?fieldValidation=Warn",
                    {"metadata": {"name": "ctl-" + str(abs(hash(field)))}, field: "x", "plain": 1})
    assert r.status == 201, r.body
    assert r.headers.get("X-Injected") is None
    assert r.headers.get_all("Warning") == ['299 - "unknown field \\"plain\\""']


def test_duplicate_key_under_warn_is_a_warning(seeded):
    r = raw_request(seeded, "POST", f"{NS}/configmaps?fieldValidation=Warn",
                    b'{"metadata":{"name":"dup-warn"},"data":{"a":"1", "a":"2"}}')
    assert r.status == 201, r.body
    assert r.headers.get_all("Warning") == ['299 - "duplicate field \\"data.a\\""']
    assert r.json()["data"] == {"a": "2"}
    r = raw_request(seeded, "POST", f"{NS}/configmaps?fieldValidation=Ignore",
                    b'{"metadata":{"name":"dup-ignore"},"data":{"a":"1","a":"2"}}')
    assert r.status == 201 and r.headers.get_all("Warning") is None


def test_null_list_and_map_elements_decode_as_zero_values(seeded):
    """As Go decodes them: a null string in a list or map is "", not a 500 or a stored null."""
    r = raw_request(seeded, "POST", f"{NS}/configmaps",
                    {"metadata": {"name": "nulls", "labels": {"a": None}},
                     "data": {"k": None}})
    assert r.status == 201, r.body
    obj = r.json()
    assert obj["data"] == {"k": ""}
    assert obj["metadata"]["labels"] == {"a": ""}


def test_watch_parameter_converts_as_upstream(seeded):
    """watch=maybe is a watch upstream (any value but "0" and "false"): a stream, not a 400 or a list."""
    r = raw_request(seeded, "GET", f"{NS}/configmaps?watch=maybe&timeoutSeconds=1")
    assert r.status == 200
    assert r.body.startswith(b'{"type":"ADDED"'), r.body[:100]
    r = raw_request(seeded, "GET", f"{NS}/configmaps?watch=false")
    assert r.status == 200 and r.json()["kind"] == "ConfigMapList"


# ---- YAML aliases -------------------------------------------------------------------------------

def _alias_bomb() -> bytes:
    levels = ["a: &a [" + ",".join(['"lol"'] * 9) + "]"]
    for i, name in enumerate("bcdefg"):
        prev = "abcdefg"[i]
        levels.append(f"{name}: &{name} [" + ",".join([f"*{prev}"] * 9) + "]")
    return ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: bomb}\nx:\n  " + "\n  ".join(levels) + "\n").encode()


def test_yaml_alias_bomb_is_refused(seeded):
    body = _alias_bomb()
    assert len(body) < 600
    r = raw_request(seeded, "POST", f"{NS}/configmaps", body, {"Content-Type": "application/yaml"})
    st = r.json()
    assert r.status == 400 and st["reason"] == "BadRequest", r.body[:300]
    assert st["message"] == ("the object provided is unrecognized (must be of type ConfigMap): error converting YAML "
                             "to JSON: yaml: document contains excessive aliasing (" + body[:30].hex() + " ...)")


def test_yaml_aliases_within_limits_still_decode(seeded):
    body = (b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: aliased, labels: &l {a: b}, annotations: *l}\n"
            b"data: {x: y}\n")
    r = raw_request(seeded, "POST", f"{NS}/configmaps", body, {"Content-Type": "application/yaml"})
    assert r.status == 201, r.body
    assert r.json()["metadata"]["annotations"] == {"a": "b"}


def test_yaml_that_decodes_past_the_request_limit_is_refused(seeded):
    """Few aliases (within go-yaml's ratio) of one big string: the decoded object is over 3 MiB."""
    big = "x" * (1 << 20)
    body = (f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: big}}\ndata: {{a: &s {big}, b: *s, c: *s, d: *s}}\n"
            ).encode()
    assert len(body) < 3 * 1024 * 1024
    r = raw_request(seeded, "POST", f"{NS}/configmaps", body, {"Content-Type": "application/yaml"})
    st = r.json()
    assert (r.status, st["reason"], st["message"]) == (413, "RequestEntityTooLarge",
                                                       "Request entity too large: limit is 3145728"), r.body[:300]


# ---- the header limit, on each HTTP path ---------------------------------------------------------

def _send(c, raw: bytes, first: bytes = b"") -> bytes:
    from pyk8s.client.kubeconfig import load_kubeconfig

    ctx = load_kubeconfig(c.kubeconfig).ssl_client_context()
    with socket.create_connection(("127.0.0.1", c.port), timeout=20) as s, \
            ctx.wrap_socket(s, server_hostname="127.0.0.1") as ss:
        if first:  # a watch: aiohttp owns the connection from then on
            ss.sendall(first)
            data = b""
            while not data.endswith(b"0\r\n\r\n"):
                chunk = ss.recv(65536)
                assert chunk, data
                data += chunk
        try:
            ss.sendall(raw)
        except OSError:
            pass  # the server may answer and close before it has read it all
        data = b""
        while True:
            try:
                chunk = ss.recv(65536)
            except OSError:
                break
            if not chunk:
                break
            data += chunk
            if b"\r\n\r\n" in data and len(data) > 40:
                break
        return data


def _get(path: str, header_bytes: int, count: int = 1) -> bytes:
    per = header_bytes // count
    hs = b"".join(b"X-Big-%d: %s\r\n" % (i, b"a" * per) for i in range(count))
    return b"GET " + path.encode() + b" HTTP/1.1\r\nHost: k\r\n" + hs + b"\r\n"


WATCH = f"{NS}/configmaps?watch=1&timeoutSeconds=1"


@pytest.mark.parametrize("path,size,count,first", [
    (f"{NS}/configmaps", 1100 * 1024, 1, b""),  # answered by http1.py
    (f"{NS}/configmaps", 1100 * 1024, 20, b""),
    (WATCH, 1100 * 1024, 1, b""),  # a watch: http1.py refuses before it hands over
    (WATCH, 100 * 1024, 1, _get(WATCH, 10)),  # aiohttp's own parser, on a connection it owns
])
def test_header_over_the_limit_is_431(seeded, path, size, count, first):
    data = _send(seeded, _get(path, size, count), first)
    assert data.split(b"\r\n", 1)[0].split(b" ", 1)[1] == b"431 Request Header Fields Too Large", data[:200]
    assert data.endswith(b"431 Request Header Fields Too Large")


def test_header_under_the_limit_is_served(seeded):
    data = _send(seeded, _get(f"{NS}/configmaps/bad-input", 40 * 1024, 4))
    assert data.startswith(b"HTTP/1.1 200 OK"), data[:200]


# ---- nesting -------------------------------------------------------------------------------------

DEEP = "/apis/example.com/v1/namespaces/default/deeps"


@pytest.fixture(scope="module")
def deep_crd(seeded):
    import time

    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": "deeps.example.com"},
           "spec": {"group": "example.com", "scope": "Namespaced",
                    "names": {"plural": "deeps", "singular": "deep", "kind": "Deep"},
                    "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                        "type": "object",
                        "properties": {"spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}}}]}}
    r = raw_request(seeded, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
    assert r.status == 201, r.body
    deadline = time.monotonic() + 30
    while raw_request(seeded, "GET", DEEP).status != 200:
        assert time.monotonic() < deadline, "the custom resource is not served"
        time.sleep(0.1)
    return seeded


def _deep_body(name: str, levels: int, opener: str = '{"a":', closer: str = "}") -> str:
    """A Deep whose whole document nests `levels` containers (the outermost object counted)."""
    inner = opener * (levels - 1) + "1" + closer * (levels - 1)
    return '{"apiVersion":"example.com/v1","kind":"Deep","metadata":{"name":"' + name + '"},"spec":' + inner + "}"


def test_nesting_within_the_limit_is_stored_and_watched(deep_crd):
    from pyk8s.apiserver.nesting import MAX_DEPTH

    r = raw_request(deep_crd, "POST", DEEP, _deep_body("at-limit", MAX_DEPTH))
    assert r.status == 201, r.body[:300]
    r = raw_request(deep_crd, "GET", DEEP + "?watch=1&timeoutSeconds=1")
    assert r.status == 200 and b'"at-limit"' in r.body
    r = raw_request(deep_crd, "GET", DEEP, headers={"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"})
    assert r.status == 200 and b'"at-limit"' in r.body


@pytest.mark.parametrize("levels,opener,closer,char", [
    (201, '{"a":', "}", "{"), (201, "[", "]", "["), (10_001, '{"a":', "}", "{"), (20_000, "[", "]", "["),
])
def test_nesting_past_the_limit_is_400(deep_crd, levels, opener, closer, char):
    """Upstream refuses past 10,000 levels with Go's scanner error; ours stops at MAX_DEPTH (docs/bad-input.md)."""
    body = _deep_body(f"deep-{levels}", levels, opener, closer)
    r = raw_request(deep_crd, "POST", DEEP, body)
    st = r.json()
    assert (r.status, st["reason"]) == (400, "BadRequest"), r.body[:300]
    assert st["message"] == ("the object provided is unrecognized (must be of type Deep): couldn't get version/kind; "
                             f"json parse error: invalid character '{char}' exceeded max nesting depth "
                             f"({body[:30]} ...)")


def test_a_patch_that_nests_past_the_limit_is_400(deep_crd):
    r = raw_request(deep_crd, "POST", DEEP, _deep_body("patched", 150))
    assert r.status == 201, r.body[:200]
    path = "/spec" + "/a" * 148 + "/b"
    value: Any = 1
    for _ in range(60):
        value = {"c": value}
    r = raw_request(deep_crd, "PATCH", DEEP + "/patched", [{"op": "add", "path": path, "value": value}],
                    {"Content-Type": "application/json-patch+json"})
    st = r.json()
    assert (r.status, st["reason"], st["message"]) == (400, "BadRequest",
                                                       "invalid character '{' exceeded max nesting depth"), r.body[:300]
    r = raw_request(deep_crd, "GET", DEEP + "?watch=1&timeoutSeconds=1")
    assert r.status == 200 and b'"patched"' in r.body


def test_deep_yaml_is_400(deep_crd):
    body = "apiVersion: example.com/v1\nkind: Deep\nmetadata: {name: deep-yaml}\nspec:\n"
    body += "".join("  " * (i + 1) + "a:\n" for i in range(300)) + "  " * 301 + "b: 1\n"
    r = raw_request(deep_crd, "POST", DEEP, body.encode(), {"Content-Type": "application/yaml"})
    st = r.json()
    assert (r.status, st["reason"]) == (400, "BadRequest"), r.body[:300]
    assert "error converting YAML to JSON: yaml: exceeded max depth of 200" in st["message"]


def _continue_token(rv: Any) -> str:
    import base64
    import json

    raw = json.dumps({"v": "meta.k8s.io/v1", "rv": rv, "start": "a"}).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


@pytest.mark.parametrize("rv,code", [(2 ** 62, 504), (2 ** 63 + 5, 400), (10 ** 30, 400), (-5, 400)])
def test_forged_continue_token_revision_is_not_a_500(seeded, rv, code):
    """A token's revision in the future answers as upstream's store does (504 Too large resource version);
    one no int64 holds is not a valid token (400)."""
    r = raw_request(seeded, "GET", f"{NS}/configmaps?limit=1&continue={_continue_token(rv)}")
    st = r.json()
    assert (r.status, st["code"]) == (code, code), r.body
    if code == 504:
        assert st["reason"] == "Timeout" and st["message"].startswith(f"Timeout: Too large resource version: {rv}, current: ")
    else:
        assert st["message"] == ("continue key is not valid: incorrect encoded start resourceVersion "
                                 "(version meta.k8s.io/v1)")


def test_exact_list_past_int64_is_not_asked_of_the_store(seeded):
    r = raw_request(seeded, "GET", f"{NS}/configmaps?resourceVersion={2 ** 64 - 1}&resourceVersionMatch=Exact")
    st = r.json()
    assert (r.status, st["reason"]) == (504, "Timeout"), r.body
    assert st["message"].startswith(f"Timeout: Too large resource version: {2 ** 64 - 1}, current: ")


def test_type_error_message_is_wrapped_once(seeded):
    r = raw_request(seeded, "POST", f"{NS}/configmaps", {"metadata": {"name": "typed"}, "data": 5})
    st = r.json()
    assert (r.status, st["reason"], st["message"]) == (
        400, "BadRequest", 'ConfigMap in version "v1" cannot be handled as a ConfigMap: json: cannot unmarshal number '
        "into Go struct field ConfigMap.data of type map[string]string"), r.body


SMP = {"Content-Type": "application/strategic-merge-patch+json"}


@pytest.mark.parametrize("patch,message", [
    ({"spec": {"containers": [{"$patch": "delete"}]}}, "map: map[$patch:delete] does not contain declared merge key: name"),
    ({"spec": {"$setElementOrder/containers": "x"}}, "expected a []interface {}, but received a string"),
    ({"spec": {"containers": [{"name": "c", "$patch": "bogus"}]}},
     "unknown patch type: bogus in map: map[$patch:bogus name:c]"),
])
def test_strategic_patch_errors_are_400(seeded, patch, message):
    """Upstream answers these with a reason-less 500 (a plain error reaching its error writer): ours is a 400."""
    pod = {"metadata": {"name": "smp"}, "spec": {"containers": [{"name": "c", "image": "i"}]}}
    raw_request(seeded, "POST", f"{NS}/pods", pod)
    r = raw_request(seeded, "PATCH", f"{NS}/pods/smp", patch, SMP)
    st = r.json()
    assert (r.status, st["reason"], st["message"]) == (400, "BadRequest", message), r.body


def test_json_patch_setting_metadata_null_is_not_a_500(seeded):
    r = raw_request(seeded, "PATCH", f"{NS}/configmaps/bad-input", [{"op": "replace", "path": "/metadata", "value": None}],
                    {"Content-Type": "application/json-patch+json"})
    assert r.status < 500 and r.json()["kind"] in ("Status", "ConfigMap"), r.body


@pytest.mark.parametrize("doc,expect", [
    (b"data: {a: !!binary aGVsbG8=}", {"a": "hello"}),
    (b"data: {a: 2001-12-14}", {"a": "2001-12-14"}),
])
def test_yaml_values_json_has_no_type_for_are_converted(seeded, doc, expect):
    name = f"yaml-{abs(hash(doc))}"
    body = b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: " + name.encode() + b"}\n" + doc
    r = raw_request(seeded, "POST", f"{NS}/configmaps", body, {"Content-Type": "application/yaml"})
    assert r.status == 201, r.body
    assert r.json()["data"] == expect


@pytest.mark.parametrize("body,message", [
    ({"preconditions": "x"}, 'DeleteOptions in version "v1" cannot be handled as a DeleteOptions: json: cannot unmarshal '
                             "string into Go struct field DeleteOptions.preconditions of type v1.Preconditions"),
    ({"gracePeriodSeconds": "x"}, 'DeleteOptions in version "v1" cannot be handled as a DeleteOptions: json: cannot '
                                  "unmarshal string into Go struct field DeleteOptions.gracePeriodSeconds of type int64"),
    ([1, 2], "couldn't get version/kind; json parse error: json: cannot unmarshal array into Go value of type " + GO_STRUCT),
])
def test_malformed_delete_options_are_400(seeded, body, message):
    r = raw_request(seeded, "DELETE", f"{NS}/configmaps/bad-input", body)
    st = r.json()
    assert (r.status, st["reason"], st["message"]) == (400, "BadRequest", message), r.body


@pytest.mark.parametrize("meta,message", [
    ({"name": 5}, "json: cannot unmarshal number into Go struct field ObjectMeta.metadata.name of type string"),
    ({"name": "labels-list", "labels": [1]},
     "json: cannot unmarshal array into Go struct field ObjectMeta.metadata.labels of type map[string]string"),
])
def test_custom_resource_metadata_is_decoded_as_object_meta(deep_crd, meta, message):
    """A number for a custom resource's name was stored, and every later list of the resource was a 500."""
    body = {"apiVersion": "example.com/v1", "kind": "Deep", "metadata": meta, "spec": {}}
    r = raw_request(deep_crd, "POST", DEEP, body)
    st = r.json()
    assert (r.status, st["reason"], st["message"]) == (
        400, "BadRequest", f'Deep in version "v1" cannot be handled as a Deep: {message}'), r.body
    assert raw_request(deep_crd, "GET", DEEP).status == 200

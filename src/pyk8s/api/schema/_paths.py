"""REST operations of the registry's resources, in OpenAPI v2 and v3 form.

One Op per upstream operation (readCoreV1NamespacedPod, patchAppsV1NamespacedDeploymentScale ...),
with the vendor extensions clients rely on: x-kubernetes-action and
x-kubernetes-group-version-kind (kubectl explain finds a resource's kind through them,
kubectl apply checks the PATCH operation for the fieldValidation parameter).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pyk8s.api.definitions import definition_for_gvk
from pyk8s.api.resources import Resource

from ._convert import V2_REF, V3_REF, crd_definition_name

__all__ = ["Op", "resource_ops", "discovery_op", "gv_prefix", "op_to_v2", "op_to_v3"]

_META = "io.k8s.apimachinery.pkg.apis.meta.v1."
_STATUS = _META + "Status"
_DELETE_OPTIONS = _META + "DeleteOptions"
_WATCH_EVENT = _META + "WatchEvent"
_PATCH = _META + "Patch"

PRODUCES = ["application/json", "application/yaml", "application/vnd.kubernetes.protobuf"]
PRODUCES_WATCH = PRODUCES + ["application/json;stream=watch", "application/vnd.kubernetes.protobuf;stream=watch"]
PATCH_TYPES = [
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/apply-patch+yaml",
]

# (name, type, description)
_Q = {
    "allowWatchBookmarks": ("boolean", "allowWatchBookmarks requests watch events with type \"BOOKMARK\". Servers that do not implement bookmarks may ignore this flag and bookmarks are sent at the server's discretion. Clients should not assume bookmarks are returned at any specific interval, nor may they assume the server will send any BOOKMARK event during a session. If this is not a watch, this field is ignored."),
    "continue": ("string", "The continue option should be set when retrieving more results from the server. Since this value is server defined, clients may only use the continue value from a previous query result with identical query parameters (except for the value of continue) and the server may reject a continue value it does not recognize. If the specified continue value is no longer valid whether due to expiration (generally five to fifteen minutes) or a configuration change on the server, the server will respond with a 410 ResourceExpired error together with a continue token. If the client needs a consistent list, it must restart their list without the continue field. Otherwise, the client may send another list request with the token received with the 410 error, the server will respond with a list starting from the next key, but from the latest snapshot, which is inconsistent from the previous list results - objects that are created, modified, or deleted after the first list request will be included in the response, as long as their keys are after the \"next key\".\n\nThis field is not supported when watch is true. Clients may start a watch from the last resourceVersion value returned by the server and not miss any modifications."),
    "fieldSelector": ("string", "A selector to restrict the list of returned objects by their fields. Defaults to everything."),
    "labelSelector": ("string", "A selector to restrict the list of returned objects by their labels. Defaults to everything."),
    "limit": ("integer", "limit is a maximum number of responses to return for a list call. If more items exist, the server will set the `continue` field on the list metadata to a value that can be used with the same initial query to retrieve the next set of results. Setting a limit may return fewer than the requested amount of items (up to zero items) in the event all requested objects are filtered out and clients should only use the presence of the continue field to determine whether more results are available. Servers may choose not to support the limit argument and will return all of the available results. If limit is specified and the continue field is empty, clients may assume that no more results are available. This field is not supported if watch is true.\n\nThe server guarantees that the objects returned when using continue will be identical to issuing a single list call without a limit - that is, no objects created, modified, or deleted after the first request is issued will be included in any subsequent continued requests. This is sometimes referred to as a consistent snapshot, and ensures that a client that is using limit to receive smaller chunks of a very large result can ensure they see all possible objects. If objects are updated during a chunked list the version of the object that was present at the time the first list result was calculated is returned."),
    "resourceVersion": ("string", "resourceVersion sets a constraint on what resource versions a request may be served from. See https://kubernetes.io/docs/reference/using-api/api-concepts/#resource-versions for details.\n\nDefaults to unset"),
    "resourceVersionMatch": ("string", "resourceVersionMatch determines how resourceVersion is applied to list calls. It is highly recommended that resourceVersionMatch be set for list calls where resourceVersion is set See https://kubernetes.io/docs/reference/using-api/api-concepts/#resource-versions for details.\n\nDefaults to unset"),
    "sendInitialEvents": ("boolean", "`sendInitialEvents=true` may be set together with `watch=true`. In that case, the watch stream will begin with synthetic events to produce the current state of objects in the collection. Once all such events have been sent, a synthetic \"Bookmark\" event  will be sent. The bookmark will report the ResourceVersion (RV) corresponding to the set of objects, and be marked with `\"k8s.io/initial-events-end\": \"true\"` annotation. Afterwards, the watch stream will proceed as usual, sending watch events corresponding to changes (subsequent to the RV) to objects watched.\n\nWhen `sendInitialEvents` option is set, we require `resourceVersionMatch` option to also be set. The semantic of the watch request is as following: - `resourceVersionMatch` = NotOlderThan\n  is interpreted as \"data at least as new as the provided `resourceVersion`\"\n  and the bookmark event is send when the state is synced\n  to a `resourceVersion` at least as fresh as the one provided by the ListOptions.\n  If `resourceVersion` is unset, this is interpreted as \"consistent read\" and the\n  bookmark event is send when the state is synced at least to the moment\n  when request started being processed.\n- `resourceVersionMatch` set to any other value or unset\n  Invalid error is returned.\n\nDefaults to true if `resourceVersion=\"\"` or `resourceVersion=\"0\"` (for backward compatibility reasons) and to false otherwise."),
    "timeoutSeconds": ("integer", "Timeout for the list/watch call. This limits the duration of the call, regardless of any activity or inactivity."),
    "watch": ("boolean", "Watch for changes to the described resources and return them as a stream of add, update, and remove notifications. Specify resourceVersion."),
    "dryRun": ("string", "When present, indicates that modifications should not be persisted. An invalid or unrecognized dryRun directive will result in an error response and no further processing of the request. Valid values are: - All: all dry run stages will be processed"),
    "fieldManager": ("string", "fieldManager is a name associated with the actor or entity that is making these changes. The value must be less than or 128 characters long, and only contain printable characters, as defined by https://golang.org/pkg/unicode/#IsPrint."),
    "fieldManagerPatch": ("string", "fieldManager is a name associated with the actor or entity that is making these changes. The value must be less than or 128 characters long, and only contain printable characters, as defined by https://golang.org/pkg/unicode/#IsPrint. This field is required for apply requests (application/apply-patch) but optional for non-apply patch types (JsonPatch, MergePatch, StrategicMergePatch)."),
    "fieldValidation": ("string", "fieldValidation instructs the server on how to handle objects in the request (POST/PUT/PATCH) containing unknown or duplicate fields. Valid values are: - Ignore: This will ignore any unknown fields that are silently dropped from the object, and will ignore all but the last duplicate field that the decoder encounters. This is the default behavior prior to v1.23. - Warn: This will send a warning via the standard warning response header for each unknown field that is dropped from the object, and for each duplicate field that is encountered. The request will still succeed if there are no other errors, and will only persist the last of any duplicate fields. This is the default in v1.23+ - Strict: This will fail the request with a BadRequest error if any unknown fields would be dropped from the object, or if any duplicate fields are present. The error returned from the server will contain all unknown and duplicate fields encountered."),
    "force": ("boolean", "Force is going to \"force\" Apply requests. It means user will re-acquire conflicting fields owned by other people. Force flag must be unset for non-apply patch requests."),
    "gracePeriodSeconds": ("integer", "The duration in seconds before the object should be deleted. Value must be non-negative integer. The value zero indicates delete immediately. If this value is nil, the default grace period for the specified type will be used. Defaults to a per object value if not specified. zero means delete immediately."),
    "ignoreStoreReadErrorWithClusterBreakingPotential": ("boolean", "if set to true, it will trigger an unsafe deletion of the resource in case the normal deletion flow fails with a corrupt object error. A resource is considered corrupt if it can not be retrieved from the underlying storage successfully because of a) its data can not be transformed e.g. decryption failure, or b) it fails to decode into an object. NOTE: unsafe deletion ignores finalizer constraints, skips precondition checks, and removes the object from the storage. WARNING: This may potentially break the cluster if the workload associated with the resource being unsafe-deleted relies on normal deletion flow. Use only if you REALLY know what you are doing. The default value is false, and the user must opt in to enable it"),
    "orphanDependents": ("boolean", "Deprecated: please use the PropagationPolicy, this field will be deprecated in 1.7. Should the dependent objects be orphaned. If true/false, the \"orphan\" finalizer will be added to/removed from the object's finalizers list. Either this field or PropagationPolicy may be set, but not both."),
    "propagationPolicy": ("string", "Whether and how garbage collection will be performed. Either this field or OrphanDependents may be set, but not both. The default policy is decided by the existing finalizer set in the metadata.finalizers and the resource-specific default policy. Acceptable values are: 'Orphan' - orphan the dependents; 'Background' - allow the garbage collector to delete the dependents in the background; 'Foreground' - a cascading policy that deletes all dependents in the foreground."),
    "pretty": ("string", "If 'true', then the output is pretty printed. Defaults to 'false' unless the user-agent indicates a browser or command-line HTTP tool (curl and wget)."),
    "container": ("string", "The container for which to stream logs. Defaults to only container if there is one container in the pod."),
    "follow": ("boolean", "Follow the log stream of the pod. Defaults to false."),
    "limitBytes": ("integer", "If set, the number of bytes to read from the server before terminating the log output. This may not display a complete final line of logging, and may return slightly more or slightly less than the specified limit."),
    "previous": ("boolean", "Return previous terminated container logs. Defaults to false."),
    "sinceSeconds": ("integer", "A relative time in seconds before the current time from which to show logs. If this value precedes the time a pod was started, only logs since the pod start will be returned. If this value is in the future, no logs will be returned. Only one of sinceSeconds or sinceTime may be specified."),
    "tailLines": ("integer", "If set, the number of lines from the end of the logs to show. If not specified, logs are shown from the creation of the container or sinceSeconds or sinceTime"),
    "timestamps": ("boolean", "If true, add an RFC3339 or RFC3339Nano timestamp at the beginning of every line of log output. Defaults to false."),
    "command": ("string", "Command is the remote command to execute. argv array. Not executed within a shell."),
    "stderr": ("boolean", "Redirect the standard error stream of the pod for this call."),
    "stdin": ("boolean", "Redirect the standard input stream of the pod for this call. Defaults to false."),
    "stdout": ("boolean", "Redirect the standard output stream of the pod for this call."),
    "tty": ("boolean", "TTY if true indicates that a tty will be allocated for the exec call. Defaults to false."),
    "ports": ("integer", "List of ports to forward Required when using WebSockets"),
    "path": ("string", "Path is the URL path to use for the current proxy request to pod."),
}
_LIST_PARAMS = ["allowWatchBookmarks", "continue", "fieldSelector", "labelSelector", "limit", "resourceVersion",
                "resourceVersionMatch", "sendInitialEvents", "timeoutSeconds", "watch"]
_DELETECOLLECTION_PARAMS = ["continue", "dryRun", "fieldSelector", "gracePeriodSeconds",
                            "ignoreStoreReadErrorWithClusterBreakingPotential", "labelSelector", "limit",
                            "orphanDependents", "propagationPolicy", "resourceVersion", "resourceVersionMatch",
                            "sendInitialEvents", "timeoutSeconds"]
_DELETE_PARAMS = ["dryRun", "gracePeriodSeconds", "ignoreStoreReadErrorWithClusterBreakingPotential",
                  "orphanDependents", "propagationPolicy"]
_WRITE_PARAMS = ["dryRun", "fieldManager", "fieldValidation"]
_PATCH_PARAMS = ["dryRun", "fieldManagerPatch", "fieldValidation", "force"]
_LOG_PARAMS = ["container", "follow", "insecureSkipTLSVerifyBackend", "limitBytes", "previous", "sinceSeconds",
               "stream", "tailLines", "timestamps"]
_Q["insecureSkipTLSVerifyBackend"] = ("boolean", "insecureSkipTLSVerifyBackend indicates that the apiserver should not confirm the validity of the serving certificate of the backend it is connecting to.  This will make the HTTPS connection between the apiserver and the backend insecure. This means the apiserver cannot verify the log data it is receiving came from the real kubelet.  If the kubelet is configured to verify the apiserver's TLS credentials, it does not mean the connection to the real kubelet is vulnerable to a man in the middle attack (e.g. an attacker could not intercept the actual log data coming from the real kubelet).")
_Q["stream"] = ("string", "Specify which container log stream to return to the client. Acceptable values are \"All\", \"Stdout\" and \"Stderr\". If not specified, \"All\" is used, and both stdout and stderr are returned interleaved. Note that when \"TailLines\" is specified, \"Stream\" can only be set to nil or \"All\".")
_EXEC_PARAMS = ["command", "container", "stderr", "stdin", "stdout", "tty"]
_ATTACH_PARAMS = ["container", "stderr", "stdin", "stdout", "tty"]

# kinds served by subresources live in other groups
_SUB_KIND_GV = {"Scale": ("autoscaling", "v1"), "Eviction": ("policy", "v1"),
                "TokenRequest": ("authentication.k8s.io", "v1")}
_CONNECT = {"exec": ("get", "post"), "attach": ("get", "post"), "portforward": ("get", "post"),
            "proxy": ("delete", "get", "head", "options", "patch", "post", "put")}


@dataclass
class Op:
    path: str
    method: str  # get, post, put, patch, delete ...
    op_id: str
    action: str  # x-kubernetes-action
    gvk: dict[str, str]
    description: str
    tag: str
    query: list[str] = field(default_factory=list)
    path_params: list[tuple[str, str]] = field(default_factory=list)  # (name, description)
    body: str | None = None  # definition name of the request body
    body_types: list[str] = field(default_factory=lambda: ["*/*"])
    response: str | None = None  # definition name of the 200 response; None means a string
    codes: tuple[str, ...] = ("200", "401")
    watch: bool = False
    custom: bool = False  # custom resources: no protobuf, no strategic merge patch


def _camel(group: str) -> str:
    if not group:
        return "Core"
    g = group[: -len(".k8s.io")] if group.endswith(".k8s.io") else group
    return "".join(p[:1].upper() + p[1:] for p in g.replace("-", ".").split(".") if p)


def gv_prefix(group: str, version: str) -> str:
    """`CoreV1`, `AppsV1`, `RbacAuthorizationV1`, `ExampleComV1`: the operationId infix."""
    return _camel(group) + version[:1].upper() + version[1:]


def _tag(group: str, version: str) -> str:
    c = _camel(group)
    return f"{c[:1].lower()}{c[1:]}_{version}"


def _def_name(r: Resource, kind: str, group: str | None = None, version: str | None = None) -> str | None:
    g = r.group if group is None else group
    v = r.version if version is None else version
    if r.crd is not None and g == r.group and v == r.version:
        names = (r.crd.get("spec") or {}).get("names") or {}
        if kind == r.kind:
            return crd_definition_name(g, v, kind)
        if kind == (names.get("listKind") or r.kind + "List"):
            return crd_definition_name(g, v, kind)
    return definition_for_gvk(g, v, kind)


def resource_ops(r: Resource) -> list[Op]:
    """Every operation upstream publishes for one resource (and its subresources)."""
    if "/" in r.resource:
        return []
    base = "/api/v1" if not r.group else f"/apis/{r.group}/{r.version}"
    gv = gv_prefix(r.group, r.version)
    tag = _tag(r.group, r.version)
    gvk = {"group": r.group, "kind": r.kind, "version": r.version}
    ns = "Namespaced" if r.namespaced else ""
    kind = r.kind
    obj = _def_name(r, kind)
    list_kind = (((r.crd or {}).get("spec") or {}).get("names") or {}).get("listKind") or kind + "List"
    lst = _def_name(r, list_kind)
    ns_param = [("namespace", "object name and auth scope, such as for teams and projects")] if r.namespaced else []
    name_param = [("name", f"name of the {kind}")]
    coll = f"{base}/namespaces/{{namespace}}/{r.resource}" if r.namespaced else f"{base}/{r.resource}"
    item = coll + "/{name}"
    verbs = set(r.verbs)
    ops: list[Op] = []

    custom = r.crd is not None

    def op(path: str, method: str, op_id: str, action: str, desc: str, **kw: Any) -> None:
        ops.append(Op(path, method, op_id, action, dict(kw.pop("gvk", gvk)), desc, tag, custom=custom, **kw))

    if "list" in verbs:
        op(coll, "get", f"list{gv}{ns}{kind}", "list", f"list or watch objects of kind {kind}",
           query=_LIST_PARAMS, path_params=ns_param, response=lst, watch=True)
        if r.namespaced:
            op(f"{base}/{r.resource}", "get", f"list{gv}{kind}ForAllNamespaces", "list",
               f"list or watch objects of kind {kind}", query=_LIST_PARAMS, response=lst, watch=True)
    if "create" in verbs:
        op(coll, "post", f"create{gv}{ns}{kind}", "post", f"create a {kind}", query=_WRITE_PARAMS,
           path_params=ns_param, body=obj, response=obj, codes=("200", "201", "202", "401"))
    if "deletecollection" in verbs:
        op(coll, "delete", f"delete{gv}Collection{ns}{kind}", "deletecollection", f"delete collection of {kind}",
           query=_DELETECOLLECTION_PARAMS, path_params=ns_param, body=_DELETE_OPTIONS, response=_STATUS)
    if "get" in verbs:
        op(item, "get", f"read{gv}{ns}{kind}", "get", f"read the specified {kind}",
           path_params=name_param + ns_param, response=obj)
    if "update" in verbs:
        op(item, "put", f"replace{gv}{ns}{kind}", "put", f"replace the specified {kind}", query=_WRITE_PARAMS,
           path_params=name_param + ns_param, body=obj, response=obj, codes=("200", "201", "401"))
    if "patch" in verbs:
        op(item, "patch", f"patch{gv}{ns}{kind}", "patch", f"partially update the specified {kind}",
           query=_PATCH_PARAMS, path_params=name_param + ns_param, body=_PATCH, body_types=PATCH_TYPES,
           response=obj, codes=("200", "201", "401"))
    if "delete" in verbs:
        op(item, "delete", f"delete{gv}{ns}{kind}", "delete", f"delete a {kind}", query=_DELETE_PARAMS,
           path_params=name_param + ns_param, body=_DELETE_OPTIONS, response=obj, codes=("200", "202", "401"))
    if "watch" in verbs:
        wbase = f"{base}/watch/namespaces/{{namespace}}/{r.resource}" if r.namespaced else f"{base}/watch/{r.resource}"
        op(wbase, "get", f"watch{gv}{ns}{kind}List", "watchlist",
           f"watch individual changes to a list of {kind}. deprecated: use the 'watch' parameter with a list operation instead.",
           query=_LIST_PARAMS, path_params=ns_param, response=_WATCH_EVENT, watch=True)
        op(wbase + "/{name}", "get", f"watch{gv}{ns}{kind}", "watch",
           f"watch changes to an object of kind {kind}. deprecated: use the 'watch' parameter with a list operation, filtered to a single item with the 'fieldSelector' parameter.",
           query=_LIST_PARAMS, path_params=name_param + ns_param, response=_WATCH_EVENT, watch=True)
        if r.namespaced:
            op(f"{base}/watch/{r.resource}", "get", f"watch{gv}{kind}ListForAllNamespaces", "watchlist",
               f"watch individual changes to a list of {kind}. deprecated: use the 'watch' parameter with a list operation instead.",
               query=_LIST_PARAMS, response=_WATCH_EVENT, watch=True)
    for sub, sub_kind in sorted(r.subresources.items()):
        ops.extend(_sub_ops(r, sub, sub_kind, item, gv, tag, ns, name_param + ns_param, obj))
    return ops


def _sub_ops(r: Resource, sub: str, sub_kind: str, item: str, gv: str, tag: str, ns: str,
             params: list[tuple[str, str]], obj: str | None) -> list[Op]:
    path = f"{item}/{sub}"
    name = sub[:1].upper() + sub[1:]
    stem = f"{gv}{ns}{r.kind}{name}"
    sg, sv = _SUB_KIND_GV.get(sub_kind, (r.group, r.version) if sub_kind == r.kind else ("", "v1"))
    gvk = {"group": sg, "kind": sub_kind, "version": sv}
    sdef = obj if sub_kind == r.kind else _def_name(r, sub_kind, sg, sv)
    params = [(n, d if n != "name" else f"name of the {sub_kind if sub not in ('status',) else r.kind}")
              for n, d in params]
    out: list[Op] = []

    def op(method: str, verb: str, action: str, desc: str, **kw: Any) -> None:
        out.append(Op(kw.pop("path", path), method, f"{verb}{stem}{kw.pop('suffix', '')}", action, gvk, desc, tag,
                      path_params=kw.pop("path_params", params), custom=r.crd is not None, **kw))

    if sub in _CONNECT:
        for method in _CONNECT[sub]:
            q = {"exec": _EXEC_PARAMS, "attach": _ATTACH_PARAMS, "portforward": ["ports"]}.get(sub, ["path"])
            verb = "connect" + method[:1].upper() + method[1:]
            desc = f"connect {method.upper()} requests to {sub} of {r.kind}"
            op(method, verb, "connect", desc, query=q)
            if sub == "proxy":
                op(method, verb, "connect", desc, path=path + "/{path}", suffix="WithPath",
                   path_params=params + [("path", "path to the resource")], query=["path"])
        return out
    if sub == "log":
        op("get", "read", "get", f"read log of the specified {r.kind}", query=_LOG_PARAMS)
        return out
    if sub in ("binding", "eviction", "token"):
        op("post", "create", "post", f"create {sub} of a {r.kind}", query=_WRITE_PARAMS, body=sdef, response=sdef,
           codes=("200", "201", "202", "401"))
        return out
    if sub == "finalize":
        op("put", "replace", "put", f"replace finalize of the specified {r.kind}", query=_WRITE_PARAMS, body=sdef,
           response=sdef, codes=("200", "201", "401"))
        return out
    op("get", "read", "get", f"read {sub} of the specified {r.kind}", response=sdef)
    op("patch", "patch", "patch", f"partially update {sub} of the specified {r.kind}", query=_PATCH_PARAMS,
       body=_PATCH, body_types=PATCH_TYPES, response=sdef, codes=("200", "201", "401"))
    op("put", "replace", "put", f"replace {sub} of the specified {r.kind}", query=_WRITE_PARAMS, body=sdef,
       response=sdef, codes=("200", "201", "401"))
    return out


def discovery_op(group: str, version: str) -> Op:
    base = "/api/v1/" if not group else f"/apis/{group}/{version}/"
    return Op(base, "get", f"get{gv_prefix(group, version)}APIResources", "", {}, "get available resources",
              _tag(group, version), response=_META + "APIResourceList")


_CODE_TEXT = {"200": "OK", "201": "Created", "202": "Accepted", "401": "Unauthorized"}


def _produces(o: Op) -> list[str]:
    if not o.response:
        return ["*/*"]
    if o.custom:
        return ["application/json", "application/yaml"]
    return PRODUCES_WATCH if o.watch else PRODUCES


def _consumes(o: Op) -> list[str]:
    if o.custom and o.body_types == PATCH_TYPES:
        return [t for t in PATCH_TYPES if t != "application/strategic-merge-patch+json"]
    return o.body_types


def _param_name(q: str) -> str:
    return "fieldManager" if q == "fieldManagerPatch" else q


def op_to_v2(o: Op) -> dict[str, Any]:
    params: list[dict[str, Any]] = []
    if o.body:
        params.append({"in": "body", "name": "body", "required": o.method != "delete",
                       "schema": {"$ref": V2_REF + o.body}})
    for q in o.query:
        t, d = _Q[q]
        params.append({"description": d, "in": "query", "name": _param_name(q), "type": t, "uniqueItems": True})
    out: dict[str, Any] = {
        "consumes": _consumes(o) if o.method in ("post", "put", "patch", "delete") else ["*/*"],
        "description": o.description,
        "operationId": o.op_id,
        "produces": _produces(o),
        "responses": {},
        "schemes": ["https"],
        "tags": [o.tag],
    }
    if params:
        out["parameters"] = params
    for c in o.codes:
        resp: dict[str, Any] = {"description": _CODE_TEXT[c]}
        if c != "401":
            resp["schema"] = {"$ref": V2_REF + o.response} if o.response else {"type": "string"}
        out["responses"][c] = resp
    if o.action:
        out["x-kubernetes-action"] = o.action
    if o.gvk:
        out["x-kubernetes-group-version-kind"] = o.gvk
    return out


def op_to_v3(o: Op) -> dict[str, Any]:
    params: list[dict[str, Any]] = []
    for q in o.query:
        t, d = _Q[q]
        params.append({"description": d, "in": "query", "name": _param_name(q),
                       "schema": {"type": t, "uniqueItems": True}})
    out: dict[str, Any] = {"description": o.description, "operationId": o.op_id, "responses": {}, "tags": [o.tag]}
    if params:
        out["parameters"] = params
    if o.body:
        body: dict[str, Any] = {"content": {t: {"schema": {"$ref": V3_REF + o.body}} for t in _consumes(o)}}
        if o.method != "delete":
            body["required"] = True
        out["requestBody"] = body
    types = _produces(o)
    schema = {"$ref": V3_REF + o.response} if o.response else {"type": "string"}
    for c in o.codes:
        resp: dict[str, Any] = {"description": _CODE_TEXT[c]}
        if c != "401":
            resp["content"] = {t: {"schema": schema} for t in types}
        out["responses"][c] = resp
    if o.action:
        out["x-kubernetes-action"] = o.action
    if o.gvk:
        out["x-kubernetes-group-version-kind"] = o.gvk
    return out


def path_params_v2(params: list[tuple[str, str]]) -> list[dict[str, Any]]:
    out = [{"description": d, "in": "path", "name": n, "required": True, "type": "string", "uniqueItems": True}
           for n, d in params]
    out.append({"description": _Q["pretty"][1], "in": "query", "name": "pretty", "type": "string",
                "uniqueItems": True})
    return out


def path_params_v3(params: list[tuple[str, str]]) -> list[dict[str, Any]]:
    out = [{"description": d, "in": "path", "name": n, "required": True,
            "schema": {"type": "string", "uniqueItems": True}} for n, d in params]
    out.append({"description": _Q["pretty"][1], "in": "query", "name": "pretty",
                "schema": {"type": "string", "uniqueItems": True}})
    return out

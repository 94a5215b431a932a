"""Defaulting for the core/v1 kinds, as upstream's pkg/apis/core/v1/defaults.go and the
generated SetObjectDefaults_* walk, plus the wire-level effects of decoding (quantities come
back in canonical form, Secret stringData is merged into data, template metadata shows
`creationTimestamp: null`, containers show `resources: {}`).

Feature gates are at their v1.33 defaults: no ResizePolicy defaulting (removed in 1.33),
PodLevelResources off, DefaultHostNetworkHostPortsInPodTemplates off.
"""

from __future__ import annotations

import base64
import re
import time
from datetime import UTC, datetime
from typing import Any

import orjson

from ..validation._memo import content_key, memo_str
from ..validation.quantity import Quantity, parse_quantity
from . import DEFAULTERS, STATUS_ON_CREATE

__all__ = [
    "default_pod", "default_pod_spec", "default_pod_template", "default_container", "default_resource_list",
    "default_service", "default_namespace", "default_secret", "default_node", "default_endpoints",
    "default_limit_range", "default_resource_quota", "default_pv", "default_pvc", "default_pvc_spec",
    "default_replication_controller", "default_pod_template_object", "compute_pod_qos", "image_pull_policy",
    "service_patch_allocated_values",
]

Obj = dict[str, Any]


def _d(parent: Obj, key: str) -> Obj:
    """parent[key] as a dict, created when missing (pointer-struct defaulting)."""
    v = parent.get(key)
    if not isinstance(v, dict):
        v = {}
        parent[key] = v
    return v


def _g(parent: Any, key: str) -> Obj:
    """parent[key] as a dict, or an empty (detached) one: for reading."""
    v = parent.get(key) if isinstance(parent, dict) else None
    return v if isinstance(v, dict) else {}


def _l(v: Any) -> list[Any]:
    return v if isinstance(v, list) else []


def _dicts(v: Any) -> list[Obj]:
    return [x for x in _l(v) if isinstance(x, dict)]


# ---- quantities ----------------------------------------------------------------------------------

def default_resource_list(rl: Any, round_milli: bool = True) -> None:
    """SetDefaults_ResourceList: round up to milli precision; values serialize in canonical form."""
    if not isinstance(rl, dict):
        return
    for k, v in list(rl.items()):
        try:
            qty = parse_quantity(v)
        except ValueError:
            continue  # validation reports it
        if round_milli:
            qty = qty.round_up(-3)
        rl[k] = qty.canonical()


def _canonical(parent: Obj, key: str) -> None:
    v = parent.get(key)
    if v is None:
        return
    try:
        parent[key] = parse_quantity(v).canonical()
    except ValueError:
        pass


# ---- containers ----------------------------------------------------------------------------------

_DOMAIN_COMP = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_DOMAIN = rf"(?:{_DOMAIN_COMP}(?:\.{_DOMAIN_COMP})*|\[[0-9a-fA-F:.]+\])(?::[0-9]+)?"
_PATH_COMP = r"[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*"
_TAG = r"[\w][\w.-]{0,127}"
_DIGEST = r"[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}"
_REF = re.compile(rf"(?:(?P<domain>{_DOMAIN})/)?(?P<path>{_PATH_COMP}(?:/{_PATH_COMP})*)"
                  rf"(?::(?P<tag>{_TAG}))?(?:@(?P<digest>{_DIGEST}))?")


def _image_tag(image: str) -> str:
    """The tag upstream's parsers.ParseImageName finds: `latest` when neither tag nor digest, "" on errors."""
    if not isinstance(image, str) or not image:
        return ""
    return _parse_image_tag(image)


@memo_str()  # images repeat across pods, and parsing one is a large regex
def _parse_image_tag(image: str) -> str:
    first, sep, _ = image.partition("/")
    if sep and not any(c in first for c in ".:") and first != "localhost" and first == first.lower():
        # no registry host: docker.io is implied, so the whole string is a path
        m = _REF.fullmatch("docker.io/" + image)
    else:
        m = _REF.fullmatch(image if sep else "docker.io/" + image)
    if m is None:
        return ""
    tag, digest = m.group("tag") or "", m.group("digest") or ""
    return "latest" if not tag and not digest else tag


def image_pull_policy(image: str) -> str:
    return "Always" if _image_tag(image) == "latest" else "IfNotPresent"


def _default_http_get(h: Obj) -> None:
    if not h.get("path"):
        h["path"] = "/"
    if not h.get("scheme"):
        h["scheme"] = "HTTP"


def _default_probe(p: Obj) -> None:
    for f, v in (("timeoutSeconds", 1), ("periodSeconds", 10), ("successThreshold", 1), ("failureThreshold", 3)):
        if not p.get(f):
            p[f] = v
    if isinstance(p.get("httpGet"), dict):
        _default_http_get(p["httpGet"])


def _default_field_ref(ref: Any) -> None:
    if isinstance(ref, dict) and not ref.get("apiVersion"):
        ref["apiVersion"] = "v1"


def default_container(c: Obj) -> None:
    """SetDefaults_Container and the nested defaults the generated walk applies to a container."""
    if not c.get("imagePullPolicy"):
        c["imagePullPolicy"] = image_pull_policy(c.get("image") or "")
    if not c.get("terminationMessagePath"):
        c["terminationMessagePath"] = "/dev/termination-log"
    if not c.get("terminationMessagePolicy"):
        c["terminationMessagePolicy"] = "File"
    for port in _dicts(c.get("ports")):
        if not port.get("protocol"):
            port["protocol"] = "TCP"
    for env in _dicts(c.get("env")):
        if isinstance(env.get("valueFrom"), dict):
            _default_field_ref(env["valueFrom"].get("fieldRef"))
    res = _d(c, "resources")  # a non-pointer struct: always serialized, `resources: {}` when empty
    default_resource_list(res.get("limits"))
    default_resource_list(res.get("requests"))
    for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
        if isinstance(c.get(probe), dict):
            _default_probe(c[probe])
    lc = c.get("lifecycle")
    if isinstance(lc, dict):
        for hook in ("postStart", "preStop"):
            h = lc.get(hook)
            if isinstance(h, dict) and isinstance(h.get("httpGet"), dict):
                _default_http_get(h["httpGet"])


# ---- volumes -------------------------------------------------------------------------------------

_VOLUME_SOURCES = (
    "hostPath", "emptyDir", "gcePersistentDisk", "awsElasticBlockStore", "gitRepo", "secret", "nfs", "iscsi",
    "glusterfs", "persistentVolumeClaim", "rbd", "flexVolume", "cinder", "cephfs", "flocker", "downwardAPI", "fc",
    "azureFile", "configMap", "vsphereVolume", "quobyte", "azureDisk", "photonPersistentDisk", "projected",
    "portworxVolume", "scaleIO", "storageos", "csi", "ephemeral", "image",
)


def _default_source_specifics(v: Obj) -> None:
    """Defaults shared by pod volumes and PV sources (RBD, iSCSI, AzureDisk, ScaleIO, hostPath)."""
    if isinstance(v.get("hostPath"), dict) and v["hostPath"].get("type") is None:
        v["hostPath"]["type"] = ""
    if isinstance(v.get("iscsi"), dict) and not v["iscsi"].get("iscsiInterface"):
        v["iscsi"]["iscsiInterface"] = "default"
    rbd = v.get("rbd")
    if isinstance(rbd, dict):
        for f, d in (("pool", "rbd"), ("user", "admin"), ("keyring", "/etc/ceph/keyring")):
            if not rbd.get(f):
                rbd[f] = d
    az = v.get("azureDisk")
    if isinstance(az, dict):
        az_defaults: tuple[tuple[str, Any], ...] = (
            ("cachingMode", "ReadWrite"), ("kind", "Shared"), ("fsType", "ext4"), ("readOnly", False))
        for f, d in az_defaults:
            if az.get(f) is None:
                az[f] = d
    sio = v.get("scaleIO")
    if isinstance(sio, dict):
        if not sio.get("storageMode"):
            sio["storageMode"] = "ThinProvisioned"
        if not sio.get("fsType"):
            sio["fsType"] = "xfs"


_VOLUME_SOURCE_SET = frozenset(_VOLUME_SOURCES)


def _default_volume(v: Obj) -> None:
    if not any(x is not None and k in _VOLUME_SOURCE_SET for k, x in v.items()):
        v["emptyDir"] = {}
    _default_source_specifics(v)
    for kind in ("secret", "configMap", "downwardAPI", "projected"):
        src = v.get(kind)
        if isinstance(src, dict) and src.get("defaultMode") is None:
            src["defaultMode"] = 420
    if isinstance(v.get("emptyDir"), dict):
        _canonical(v["emptyDir"], "sizeLimit")
    if isinstance(v.get("downwardAPI"), dict):
        for item in _dicts(v["downwardAPI"].get("items")):
            _default_field_ref(item.get("fieldRef"))
    if isinstance(v.get("projected"), dict):
        for src in _dicts(v["projected"].get("sources")):
            if isinstance(src.get("downwardAPI"), dict):
                for item in _dicts(src["downwardAPI"].get("items")):
                    _default_field_ref(item.get("fieldRef"))
            sat = src.get("serviceAccountToken")
            if isinstance(sat, dict) and sat.get("expirationSeconds") is None:
                sat["expirationSeconds"] = 3600
    eph = v.get("ephemeral")
    if isinstance(eph, dict) and isinstance(eph.get("volumeClaimTemplate"), dict):
        default_pvc_spec(_d(eph["volumeClaimTemplate"], "spec"))


# ---- pods ----------------------------------------------------------------------------------------

def default_pod_spec(spec: Obj) -> None:
    """SetDefaults_PodSpec plus the nested container/volume defaults (applies to templates too)."""
    if not spec.get("dnsPolicy"):
        spec["dnsPolicy"] = "ClusterFirst"
    if not spec.get("restartPolicy"):
        spec["restartPolicy"] = "Always"
    if spec.get("securityContext") is None:
        spec["securityContext"] = {}
    if spec.get("terminationGracePeriodSeconds") is None:
        spec["terminationGracePeriodSeconds"] = 30
    if not spec.get("schedulerName"):
        spec["schedulerName"] = "default-scheduler"
    # v1's deprecated alias, kept in step by conversion
    if not spec.get("serviceAccountName") and spec.get("serviceAccount"):
        spec["serviceAccountName"] = spec["serviceAccount"]
    if spec.get("serviceAccountName"):
        spec["serviceAccount"] = spec["serviceAccountName"]
    for v in _dicts(spec.get("volumes")):
        _default_volume(v)
    for kind in ("initContainers", "containers", "ephemeralContainers"):
        for c in _dicts(spec.get(kind)):
            default_container(c)
    default_resource_list(spec.get("overhead"))


def _requests_from_limits(containers: Any) -> None:
    for c in _dicts(containers):
        res = c.get("resources")
        if not isinstance(res, dict) or res.get("limits") is None:
            continue
        limits = res["limits"] if isinstance(res["limits"], dict) else {}
        reqs = res.get("requests")
        if not isinstance(reqs, dict):
            reqs = res["requests"] = {}
        for k, v in limits.items():
            reqs.setdefault(k, v)


def default_pod(pod: Obj) -> None:
    """SetObjectDefaults_Pod: SetDefaults_Pod (requests from limits, service links, host ports) + the spec."""
    spec = _d(pod, "spec")
    _requests_from_limits(spec.get("containers"))
    _requests_from_limits(spec.get("initContainers"))
    if spec.get("enableServiceLinks") is None:
        spec["enableServiceLinks"] = True
    if spec.get("hostNetwork"):
        for kind in ("containers", "initContainers"):
            for c in _dicts(spec.get(kind)):
                for port in _dicts(c.get("ports")):
                    if not port.get("hostPort"):
                        port["hostPort"] = port.get("containerPort") or 0
    default_pod_spec(spec)


# Pods of one template arrive with one spec: the defaulted spec is remembered by the raw one's
# content (default_pod reads and writes nothing else) and handed out as a fresh copy.
_POD_SPEC_DEFAULTS: dict[bytes, bytes] = {}


def _default_pod_remembered(pod: Obj) -> None:
    spec = pod.get("spec")
    key = content_key(spec, 16384) if type(spec) is dict else None
    if key is None:
        default_pod(pod)
        return
    done = _POD_SPEC_DEFAULTS.get(key)
    if done is not None:
        pod["spec"] = orjson.loads(done)
        return
    default_pod(pod)
    if len(_POD_SPEC_DEFAULTS) >= 1024:
        _POD_SPEC_DEFAULTS.clear()
    _POD_SPEC_DEFAULTS[key] = orjson.dumps(pod["spec"])


def default_pod_template(tpl: Obj) -> None:
    """Defaults for an embedded PodTemplateSpec (Deployments, Jobs, ...): the PodSpec defaults only."""
    md = _d(tpl, "metadata")
    # upstream serializes the template's zero creationTimestamp as null
    md.setdefault("creationTimestamp", None)
    default_pod_spec(_d(tpl, "spec"))


def default_pod_template_object(obj: Obj) -> None:
    default_pod_template(_d(obj, "template"))


# The class depends on the containers' resources alone, which pods of one template share.
_QOS_MEMO: dict[bytes, str] = {}


def compute_pod_qos(pod: Obj) -> str:
    """qos.ComputePodQOS: Guaranteed when every container has equal cpu and memory requests and limits."""
    spec = _g(pod, "spec")
    containers = _dicts(spec.get("containers")) + _dicts(spec.get("initContainers"))
    key = content_key([c.get("resources") for c in containers])
    if key is None:
        return _qos(containers)
    qos = _QOS_MEMO.get(key)
    if qos is None:
        if len(_QOS_MEMO) >= 1024:
            _QOS_MEMO.clear()
        qos = _QOS_MEMO[key] = _qos(containers)
    return qos


def _qos(containers: list[Obj]) -> str:
    requests: dict[str, Quantity] = {}
    limits: dict[str, Quantity] = {}
    guaranteed = True
    for c in containers:
        res = _g(c, "resources")
        lists: tuple[tuple[dict[str, Quantity], Obj, set[str] | None], ...] = (
            (requests, _g(res, "requests"), None), (limits, _g(res, "limits"), set()))
        for into, raw_list, found in lists:
            for name, raw in raw_list.items():
                if name not in ("cpu", "memory"):
                    continue
                try:
                    qty = parse_quantity(raw)
                except ValueError:
                    continue
                if qty.value > 0:
                    into[name] = into[name] + qty if name in into else qty
                    if found is not None:
                        found.add(name)
            # every container needs positive cpu and memory limits for Guaranteed
            if found is not None and not {"cpu", "memory"} <= found:
                guaranteed = False
    if not requests and not limits:
        return "BestEffort"
    if guaranteed:
        for name, req in requests.items():
            lim = limits.get(name)
            if lim is None or lim.cmp(req) != 0:
                guaranteed = False
                break
    if guaranteed and len(requests) == len(limits):
        return "Guaranteed"
    return "Burstable"


def _pod_status_on_create(pod: Obj) -> None:
    pod["status"] = {"phase": "Pending", "qosClass": compute_pod_qos(pod)}


# ---- services ------------------------------------------------------------------------------------

def default_service(svc: Obj) -> None:
    """SetDefaults_Service plus the IP-family fields the registry fills on a single-stack IPv4 cluster."""
    spec = _d(svc, "spec")
    if not spec.get("sessionAffinity"):
        spec["sessionAffinity"] = "None"
    if spec["sessionAffinity"] == "None":
        spec.pop("sessionAffinityConfig", None)
    elif spec["sessionAffinity"] == "ClientIP":
        sac = spec.get("sessionAffinityConfig")
        cip = sac.get("clientIP") if isinstance(sac, dict) else None
        if not isinstance(cip, dict) or cip.get("timeoutSeconds") is None:
            spec["sessionAffinityConfig"] = {"clientIP": {"timeoutSeconds": 10800}}
    if not spec.get("type"):
        spec["type"] = "ClusterIP"
    for p in _dicts(spec.get("ports")):
        if not p.get("protocol"):
            p["protocol"] = "TCP"
        if p.get("targetPort") in (None, 0, ""):
            p["targetPort"] = p.get("port") or 0
    t = spec["type"]
    externally = t in ("NodePort", "LoadBalancer") or (t == "ClusterIP" and bool(_l(spec.get("externalIPs"))))
    if externally and not spec.get("externalTrafficPolicy"):
        spec["externalTrafficPolicy"] = "Cluster"
    if spec.get("internalTrafficPolicy") is None and t in ("NodePort", "LoadBalancer", "ClusterIP"):
        spec["internalTrafficPolicy"] = "Cluster"
    if t == "LoadBalancer":
        if spec.get("allocateLoadBalancerNodePorts") is None:
            spec["allocateLoadBalancerNodePorts"] = True
        for ing in _dicts(_g(_g(svc, "status"), "loadBalancer").get("ingress")):
            if ing.get("ip") and ing.get("ipMode") is None:
                ing["ipMode"] = "VIP"
    if t == "ExternalName":
        return
    # the registry keeps clusterIP and clusterIPs[0] in step
    cip, cips = spec.get("clusterIP"), _l(spec.get("clusterIPs"))
    if cip and not cips:
        spec["clusterIPs"] = [cip]
    elif cips and not cip:
        spec["clusterIP"] = cips[0]
    headless = spec.get("clusterIP") == "None"
    if headless and not spec.get("selector"):
        # headless and selectorless: "everything", both families unless SingleStack was asked for
        fams = _l(spec.get("ipFamilies")) or ["IPv4"]
        if spec.get("ipFamilyPolicy") is None:
            spec["ipFamilyPolicy"] = "RequireDualStack"
        if spec["ipFamilyPolicy"] != "SingleStack" and len(fams) == 1:
            fams = fams + (["IPv6"] if fams[0] == "IPv4" else ["IPv4"])
        spec["ipFamilies"] = fams
        return
    if spec.get("ipFamilyPolicy") is None:
        spec["ipFamilyPolicy"] = "SingleStack"
    if not _l(spec.get("ipFamilies")):
        ips = [ip for ip in _l(spec.get("clusterIPs")) if ip and ip != "None"]
        spec["ipFamilies"] = ["IPv6" if ":" in ips[0] else "IPv4"] if ips else ["IPv4"]


def service_patch_allocated_values(new: Obj, old: Obj) -> None:
    """What upstream's service REST does on update: keep allocated clusterIPs and nodePorts the
    client left out (e.g. `kubectl apply` of a manifest without them)."""
    ns, os_ = _d(new, "spec"), _g(old, "spec")
    if ns.get("type") != "ExternalName" and os_.get("type") != "ExternalName":
        if not ns.get("clusterIP") and os_.get("clusterIP"):
            ns["clusterIP"] = os_["clusterIP"]
        if not ns.get("clusterIPs") and os_.get("clusterIPs"):
            ns["clusterIPs"] = list(os_["clusterIPs"])
    if ns.get("type") in ("NodePort", "LoadBalancer") and os_.get("type") in ("NodePort", "LoadBalancer"):
        old_ports = {(p.get("protocol") or "TCP", p.get("port")): p.get("nodePort") for p in _dicts(os_.get("ports"))}
        for p in _dicts(ns.get("ports")):
            if not p.get("nodePort"):
                np_ = old_ports.get((p.get("protocol") or "TCP", p.get("port")))
                if np_:
                    p["nodePort"] = np_
        if ns.get("externalTrafficPolicy") == "Local" and os_.get("externalTrafficPolicy") == "Local" \
                and not ns.get("healthCheckNodePort") and os_.get("healthCheckNodePort"):
            ns["healthCheckNodePort"] = os_["healthCheckNodePort"]


def _service_status_on_create(svc: Obj) -> None:
    svc["status"] = {"loadBalancer": {}}


# ---- other kinds ---------------------------------------------------------------------------------

def default_namespace(ns: Obj) -> None:
    """SetDefaults_Namespace: the immutable kubernetes.io/metadata.name label (and status phase)."""
    md = _d(ns, "metadata")
    if md.get("name"):
        labels = md.get("labels")
        if not isinstance(labels, dict):
            labels = md["labels"] = {}
        labels["kubernetes.io/metadata.name"] = md["name"]
    st = ns.get("status")
    if isinstance(st, dict) and not st.get("phase"):
        st["phase"] = "Active"


def _namespace_status_on_create(ns: Obj) -> None:
    """Namespace PrepareForCreate: Active, and the `kubernetes` finalizer (create only: it goes later)."""
    ns["status"] = {"phase": "Active"}
    spec = _d(ns, "spec")
    fins = _l(spec.get("finalizers"))
    if "kubernetes" not in fins:
        spec["finalizers"] = fins + ["kubernetes"]


def default_secret(s: Obj) -> None:
    """SetDefaults_Secret, plus v1 decoding's merge of stringData into data."""
    if not s.get("type"):
        s["type"] = "Opaque"
    sd = s.pop("stringData", None)
    if isinstance(sd, dict) and sd:
        data = s.get("data")
        if not isinstance(data, dict):
            data = s["data"] = {}
        for k, v in sd.items():
            data[k] = base64.b64encode(str(v).encode()).decode()


def default_node(node: Obj) -> None:
    st = node.get("status")
    if not isinstance(st, dict):
        return
    if st.get("allocatable") is None and isinstance(st.get("capacity"), dict):
        st["allocatable"] = dict(st["capacity"])
    default_resource_list(st.get("capacity"))
    default_resource_list(st.get("allocatable"))


def default_endpoints(ep: Obj) -> None:
    for ss in _dicts(ep.get("subsets")):
        for p in _dicts(ss.get("ports")):
            if not p.get("protocol"):
                p["protocol"] = "TCP"


def default_limit_range(lr: Obj) -> None:
    """SetDefaults_LimitRangeItem: container defaults from max, default requests from default or min."""
    for item in _dicts(_g(lr, "spec").get("limits")):
        if item.get("type") == "Container":
            default, default_req = _g(item, "default"), _g(item, "defaultRequest")
            for k, v in _g(item, "max").items():
                default.setdefault(k, v)
            for k, v in default.items():
                default_req.setdefault(k, v)
            for k, v in _g(item, "min").items():
                default_req.setdefault(k, v)
            item["default"], item["defaultRequest"] = default, default_req
        for f in ("max", "min", "default", "defaultRequest", "maxLimitRequestRatio"):
            default_resource_list(item.get(f))


def default_resource_quota(rq: Obj) -> None:
    default_resource_list(_g(rq, "spec").get("hard"))
    st = rq.get("status")
    if isinstance(st, dict):
        default_resource_list(st.get("hard"))
        default_resource_list(st.get("used"))


def default_pvc_spec(spec: Obj) -> None:
    if spec.get("volumeMode") is None:
        spec["volumeMode"] = "Filesystem"
    res = spec.get("resources")
    if isinstance(res, dict):
        default_resource_list(res.get("limits"))
        default_resource_list(res.get("requests"))


def default_pvc(pvc: Obj) -> None:
    default_pvc_spec(_d(pvc, "spec"))
    st = pvc.get("status")
    if isinstance(st, dict):
        if not st.get("phase"):
            st["phase"] = "Pending"
        default_resource_list(st.get("capacity"))
        default_resource_list(st.get("allocatedResources"))


def default_pv(pv: Obj) -> None:
    spec = _d(pv, "spec")
    if not spec.get("persistentVolumeReclaimPolicy"):
        spec["persistentVolumeReclaimPolicy"] = "Retain"
    if spec.get("volumeMode") is None:
        spec["volumeMode"] = "Filesystem"
    default_resource_list(spec.get("capacity"))
    _default_source_specifics(spec)
    st = pv.get("status")
    if isinstance(st, dict) and not st.get("phase"):
        st["phase"] = "Pending"


def _now_rfc3339() -> str:
    return datetime.fromtimestamp(int(time.time()), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _pv_status_on_create(pv: Obj) -> None:
    pv["status"] = {"phase": "Pending", "lastPhaseTransitionTime": _now_rfc3339()}


def _pvc_status_on_create(pvc: Obj) -> None:
    pvc["status"] = {"phase": "Pending"}


def default_replication_controller(rc: Obj) -> None:
    """SetDefaults_ReplicationController: selector and labels from the template, one replica."""
    spec = _d(rc, "spec")
    tpl = spec.get("template")
    if isinstance(tpl, dict):
        labels = (tpl.get("metadata") or {}).get("labels") if isinstance(tpl.get("metadata"), dict) else None
        if isinstance(labels, dict) and labels is not None:
            if not spec.get("selector"):
                spec["selector"] = dict(labels)
            md = _d(rc, "metadata")
            if not md.get("labels"):
                md["labels"] = dict(labels)
        default_pod_template(tpl)
    if spec.get("replicas") is None:
        spec["replicas"] = 1


def _rc_status_on_create(rc: Obj) -> None:
    rc["status"] = {"replicas": 0}


def _quota_status_on_create(rq: Obj) -> None:
    rq["status"] = {}


_DEFAULTERS = {
    "Pod": _default_pod_remembered,
    "PodTemplate": default_pod_template_object,
    "ReplicationController": default_replication_controller,
    "Service": default_service,
    "Namespace": default_namespace,
    "Secret": default_secret,
    "Node": default_node,
    "Endpoints": default_endpoints,
    "LimitRange": default_limit_range,
    "ResourceQuota": default_resource_quota,
    "PersistentVolume": default_pv,
    "PersistentVolumeClaim": default_pvc,
}
_STATUS = {
    "Pod": _pod_status_on_create,
    "Namespace": _namespace_status_on_create,
    "Service": _service_status_on_create,
    "PersistentVolume": _pv_status_on_create,
    "PersistentVolumeClaim": _pvc_status_on_create,
    "ReplicationController": _rc_status_on_create,
    "ResourceQuota": _quota_status_on_create,
}
for _k, _fn in _DEFAULTERS.items():
    DEFAULTERS[("", _k)] = _fn
for _k, _fn in _STATUS.items():
    STATUS_ON_CREATE[("", _k)] = _fn

"""The registry of served resources: group, version, resource, kind, scope, names, verbs.

Everything the handlers need to route a request and everything discovery prints lives
here, keyed the way upstream's RESTMapper keys it. Kind-specific behaviour (defaulting,
validation, tables, field selectors) lives in its own modules, keyed by (group, kind).
Custom resources are added and removed at run time by the CRD machinery.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass, field

__all__ = ["Resource", "Registry", "builtin_registry", "ALL_VERBS", "GroupKind"]

ALL_VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]
NS_VERBS = ["create", "delete", "get", "list", "patch", "update", "watch"]

GroupKind = tuple[str, str]


@dataclass
class Resource:
    group: str
    version: str
    resource: str  # plural, lower case: "pods"
    kind: str
    namespaced: bool = True
    short_names: list[str] = field(default_factory=list)
    categories: list[str] = field(default_factory=list)
    verbs: list[str] = field(default_factory=lambda: list(ALL_VERBS))
    # subresource name -> kind served there ("status" -> same kind, "scale" -> Scale ...)
    subresources: dict[str, str] = field(default_factory=dict)
    singular: str = ""
    # key prefix in the store: /registry/<storage_resource>/...
    storage_resource: str = ""
    # the version objects are stored in (others are converted on the way in and out)
    storage_version: str = ""
    # the group objects are stored in when it is not their own (events.k8s.io events are core events)
    storage_group: str | None = None
    # preferred version of its group (discovery lists it first)
    preferred: bool = True
    # deprecated versions carry a Warning header naming their replacement
    deprecated_replacement: str = ""
    # True when the resource is not stored (reviews, bindings, ...): create-only virtual kinds
    virtual: bool = False
    # for custom resources: the CRD object that defines it
    crd: dict | None = None
    # a CRD version marked deprecated: the Warning header every request to it gets
    deprecation_warning: str = ""

    def __post_init__(self) -> None:
        if not self.singular:
            self.singular = self.kind.lower()
        if not self.storage_resource:
            self.storage_resource = self.resource if not self.crd else f"{self.group}/{self.resource}"
        if not self.storage_version:
            self.storage_version = self.version

    @property
    def group_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def api_version(self) -> str:
        return self.group_version

    @property
    def group_kind(self) -> GroupKind:
        return (self.group, self.kind)

    @property
    def qualified(self) -> str:
        """`pods`, `deployments.apps`: the name upstream puts in error messages."""
        return f"{self.resource}.{self.group}" if self.group else self.resource

    def key_prefix(self, namespace: str | None = None) -> str:
        base = f"/registry/{self.storage_resource}/"
        if self.namespaced and namespace:
            return f"{base}{namespace}/"
        return base

    def key(self, namespace: str | None, name: str) -> str:
        if self.namespaced:
            return f"/registry/{self.storage_resource}/{namespace}/{name}"
        return f"/registry/{self.storage_resource}/{name}"


class Registry:
    """Resources by group/version/resource, with lookups by kind and short name."""

    def __init__(self, resources: Iterable[Resource] = ()) -> None:
        self._lock = threading.Lock()
        self._by_gvr: dict[tuple[str, str, str], Resource] = {}
        self._group_order: list[str] = []
        self._version_order: dict[str, list[str]] = {}
        self.generation = 0  # bumped on every change: discovery caches key on it
        for r in resources:
            self.add(r)

    def add(self, r: Resource) -> None:
        with self._lock:
            self._by_gvr[(r.group, r.version, r.resource)] = r
            if r.group not in self._group_order:
                self._group_order.append(r.group)
            vs = self._version_order.setdefault(r.group, [])
            if r.version not in vs:
                if r.preferred:
                    vs.insert(0, r.version)
                else:
                    vs.append(r.version)
            self.generation += 1

    def remove(self, group: str, version: str, resource: str) -> None:
        with self._lock:
            self._by_gvr.pop((group, version, resource), None)
            for sub in [k for k in self._by_gvr if k[0] == group and k[1] == version and k[2].startswith(resource + "/")]:
                self._by_gvr.pop(sub, None)
            if not any(k[0] == group and k[1] == version for k in self._by_gvr):
                vs = self._version_order.get(group, [])
                if version in vs:
                    vs.remove(version)
                if not vs:
                    self._version_order.pop(group, None)
                    if group in self._group_order:
                        self._group_order.remove(group)
            self.generation += 1

    def get(self, group: str, version: str, resource: str) -> Resource | None:
        return self._by_gvr.get((group, version, resource))

    def all(self) -> list[Resource]:
        return list(self._by_gvr.values())

    def groups(self) -> list[str]:
        """Group names in discovery order (legacy core group "" first)."""
        return list(self._group_order)

    def versions(self, group: str) -> list[str]:
        """Versions of a group, preferred first."""
        return list(self._version_order.get(group, []))

    def resources_in(self, group: str, version: str) -> list[Resource]:
        return [r for (g, v, _), r in self._by_gvr.items() if g == group and v == version]

    def by_kind(self, group: str, kind: str, version: str | None = None) -> Resource | None:
        """The resource serving a kind, in the given version or the group's preferred one."""
        versions = [version] if version else self.versions(group)
        for v in versions:
            for (g, vv, _), r in self._by_gvr.items():
                if g == group and vv == v and r.kind == kind:
                    return r
        return None

    def storage_resource(self, r: Resource) -> Resource:
        """The Resource entry of the version r is stored in."""
        group = r.group if r.storage_group is None else r.storage_group
        if r.version == r.storage_version and group == r.group:
            return r
        return self._by_gvr.get((group, r.storage_version, r.resource), r)


def _r(group: str, version: str, resource: str, kind: str, namespaced: bool = True, **kw) -> Resource:
    return Resource(group, version, resource, kind, namespaced, **kw)


def _builtin() -> list[Resource]:
    SC = {"status": "", "scale": "Scale"}  # kinds filled below: "" means the main kind
    S = {"status": ""}
    rs = [
        # core/v1
        _r("", "v1", "bindings", "Binding", verbs=["create"], virtual=True),
        _r("", "v1", "componentstatuses", "ComponentStatus", False, short_names=["cs"], verbs=["get", "list"], virtual=True),
        _r("", "v1", "configmaps", "ConfigMap", short_names=["cm"]),
        _r("", "v1", "endpoints", "Endpoints", short_names=["ep"], singular="endpoints"),
        _r("", "v1", "events", "Event", short_names=["ev"]),
        _r("", "v1", "limitranges", "LimitRange", short_names=["limits"]),
        _r("", "v1", "namespaces", "Namespace", False, short_names=["ns"], verbs=list(NS_VERBS),
           subresources={"status": "", "finalize": ""}),
        _r("", "v1", "nodes", "Node", False, short_names=["no"], subresources={"status": "", "proxy": "NodeProxyOptions"}),
        _r("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", short_names=["pvc"], subresources=dict(S)),
        _r("", "v1", "persistentvolumes", "PersistentVolume", False, short_names=["pv"], subresources=dict(S)),
        _r("", "v1", "pods", "Pod", short_names=["po"], categories=["all"],
           subresources={"status": "", "binding": "Binding", "eviction": "Eviction", "log": "Pod",
                         "exec": "PodExecOptions", "attach": "PodAttachOptions",
                         "portforward": "PodPortForwardOptions", "proxy": "PodProxyOptions",
                         "ephemeralcontainers": "", "resize": ""}),
        _r("", "v1", "podtemplates", "PodTemplate"),
        _r("", "v1", "replicationcontrollers", "ReplicationController", short_names=["rc"], categories=["all"],
           subresources={"status": "", "scale": "Scale"}),
        _r("", "v1", "resourcequotas", "ResourceQuota", short_names=["quota"], subresources=dict(S)),
        _r("", "v1", "secrets", "Secret"),
        _r("", "v1", "serviceaccounts", "ServiceAccount", short_names=["sa"], subresources={"token": "TokenRequest"}),
        _r("", "v1", "services", "Service", short_names=["svc"], categories=["all"],
           subresources={"status": "", "proxy": "ServiceProxyOptions"}, verbs=list(ALL_VERBS)),
        # admissionregistration
        _r("admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations", "MutatingWebhookConfiguration", False,
           categories=["api-extensions"]),
        _r("admissionregistration.k8s.io", "v1", "validatingadmissionpolicies", "ValidatingAdmissionPolicy", False,
           categories=["api-extensions"], subresources=dict(S)),
        _r("admissionregistration.k8s.io", "v1", "validatingadmissionpolicybindings", "ValidatingAdmissionPolicyBinding",
           False, categories=["api-extensions"]),
        _r("admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations", "ValidatingWebhookConfiguration", False,
           categories=["api-extensions"]),
        # apiextensions
        _r("apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", False,
           short_names=["crd", "crds"], categories=["api-extensions"], subresources=dict(S)),
        # apiregistration
        _r("apiregistration.k8s.io", "v1", "apiservices", "APIService", False, categories=["api-extensions"],
           subresources=dict(S)),
        # apps/v1
        _r("apps", "v1", "controllerrevisions", "ControllerRevision"),
        _r("apps", "v1", "daemonsets", "DaemonSet", short_names=["ds"], categories=["all"], subresources=dict(S)),
        _r("apps", "v1", "deployments", "Deployment", short_names=["deploy"], categories=["all"], subresources=dict(SC)),
        _r("apps", "v1", "replicasets", "ReplicaSet", short_names=["rs"], categories=["all"], subresources=dict(SC)),
        _r("apps", "v1", "statefulsets", "StatefulSet", short_names=["sts"], categories=["all"], subresources=dict(SC)),
        # authentication / authorization (virtual, create-only)
        _r("authentication.k8s.io", "v1", "selfsubjectreviews", "SelfSubjectReview", False, verbs=["create"], virtual=True),
        _r("authentication.k8s.io", "v1", "tokenreviews", "TokenReview", False, verbs=["create"], virtual=True),
        _r("authorization.k8s.io", "v1", "localsubjectaccessreviews", "LocalSubjectAccessReview", verbs=["create"],
           virtual=True),
        _r("authorization.k8s.io", "v1", "selfsubjectaccessreviews", "SelfSubjectAccessReview", False, verbs=["create"],
           virtual=True),
        _r("authorization.k8s.io", "v1", "selfsubjectrulesreviews", "SelfSubjectRulesReview", False, verbs=["create"],
           virtual=True),
        _r("authorization.k8s.io", "v1", "subjectaccessreviews", "SubjectAccessReview", False, verbs=["create"],
           virtual=True),
        # autoscaling: v2 is stored and preferred, v1 served too
        _r("autoscaling", "v2", "horizontalpodautoscalers", "HorizontalPodAutoscaler", short_names=["hpa"],
           categories=["all"], subresources=dict(S)),
        _r("autoscaling", "v1", "horizontalpodautoscalers", "HorizontalPodAutoscaler", short_names=["hpa"],
           categories=["all"], subresources=dict(S), storage_version="v2", preferred=False),
        # batch
        _r("batch", "v1", "cronjobs", "CronJob", short_names=["cj"], categories=["all"], subresources=dict(S)),
        _r("batch", "v1", "jobs", "Job", categories=["all"], subresources=dict(S)),
        # certificates
        _r("certificates.k8s.io", "v1", "certificatesigningrequests", "CertificateSigningRequest", False,
           short_names=["csr"], subresources={"status": "", "approval": ""}),
        # coordination
        _r("coordination.k8s.io", "v1", "leases", "Lease"),
        # discovery
        _r("discovery.k8s.io", "v1", "endpointslices", "EndpointSlice"),
        # events.k8s.io shares storage with core events
        _r("events.k8s.io", "v1", "events", "Event", short_names=["ev"], storage_group="", storage_version="v1"),
        # flowcontrol
        _r("flowcontrol.apiserver.k8s.io", "v1", "flowschemas", "FlowSchema", False, subresources=dict(S)),
        _r("flowcontrol.apiserver.k8s.io", "v1", "prioritylevelconfigurations", "PriorityLevelConfiguration", False,
           subresources=dict(S)),
        # networking
        _r("networking.k8s.io", "v1", "ingressclasses", "IngressClass", False),
        _r("networking.k8s.io", "v1", "ingresses", "Ingress", short_names=["ing"], subresources=dict(S)),
        _r("networking.k8s.io", "v1", "networkpolicies", "NetworkPolicy", short_names=["netpol"]),
        # node
        _r("node.k8s.io", "v1", "runtimeclasses", "RuntimeClass", False),
        # policy
        _r("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", short_names=["pdb"], subresources=dict(S)),
        # rbac
        _r("rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", False),
        _r("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", False),
        _r("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding"),
        _r("rbac.authorization.k8s.io", "v1", "roles", "Role"),
        # resource (Dynamic Resource Allocation, beta in v1.33: docs/dra.md)
        _r("resource.k8s.io", "v1beta1", "deviceclasses", "DeviceClass", False),
        _r("resource.k8s.io", "v1beta1", "resourceclaims", "ResourceClaim", subresources=dict(S)),
        _r("resource.k8s.io", "v1beta1", "resourceclaimtemplates", "ResourceClaimTemplate"),
        _r("resource.k8s.io", "v1beta1", "resourceslices", "ResourceSlice", False),
        # v1beta2 too, stored as v1beta1 (api/conversion_resource.py), as v1.33 serves both
        _r("resource.k8s.io", "v1beta2", "deviceclasses", "DeviceClass", False, storage_version="v1beta1",
           preferred=False),
        _r("resource.k8s.io", "v1beta2", "resourceclaims", "ResourceClaim", subresources=dict(S),
           storage_version="v1beta1", preferred=False),
        _r("resource.k8s.io", "v1beta2", "resourceclaimtemplates", "ResourceClaimTemplate", storage_version="v1beta1",
           preferred=False),
        _r("resource.k8s.io", "v1beta2", "resourceslices", "ResourceSlice", False, storage_version="v1beta1",
           preferred=False),
        # scheduling
        _r("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", False, short_names=["pc"]),
        # storage
        _r("storage.k8s.io", "v1", "csidrivers", "CSIDriver", False),
        _r("storage.k8s.io", "v1", "csinodes", "CSINode", False),
        _r("storage.k8s.io", "v1", "csistoragecapacities", "CSIStorageCapacity"),
        _r("storage.k8s.io", "v1", "storageclasses", "StorageClass", False, short_names=["sc"]),
        _r("storage.k8s.io", "v1", "volumeattachments", "VolumeAttachment", False, subresources=dict(S)),
    ]
    rs.extend(_deprecated_workloads())
    for r in rs:
        r.subresources = {k: (v or r.kind) for k, v in r.subresources.items()}
    return rs


def _deprecated_workloads() -> list[Resource]:
    """extensions/v1beta1, apps/v1beta1 and apps/v1beta2 workloads, stored as apps/v1.

    Served (with a deprecation Warning) so manifests from older tutorials apply as written.
    kubectl can only map `apiVersion: extensions/v1beta1` to a resource through discovery, so
    they are advertised. They come after every other group and version (so `daemonsets`
    resolves to apps/v1, as kubectl takes the first match) and carry no short names (kubectl
    1.30+ would warn that `ds` "could also match" them) and no categories (`get all` would
    list each object twice).
    """
    from .conversion import deprecated_versions

    out = []
    for group, version, kind, plural, replacement in deprecated_versions():
        subs = {} if kind == "ControllerRevision" else {"status": ""}
        out.append(_r(group, version, plural, kind, subresources=subs, storage_version="v1",
                      storage_group="apps" if group != "apps" else None, preferred=group != "apps",
                      deprecated_replacement=replacement))
    return sorted(out, key=lambda r: (r.group != "apps", r.group, r.version, r.resource))


def builtin_registry() -> Registry:
    return Registry(_builtin())

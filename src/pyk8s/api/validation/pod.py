"""Pod, PodSpec and PodTemplateSpec validation, as upstream's pkg/apis/core/validation
(ValidatePodCreate, ValidatePodSpec, ValidatePodUpdate, ValidatePodTemplateSpec, ...).

Feature gates are taken at their v1.33 defaults (RelaxedEnvironmentVariableValidation,
RelaxedDNSSearchValidation, PodLifecycleSleepActionAllowZero, SidecarContainers on;
PodLevelResources off).
"""

from __future__ import annotations

import copy
import json
from typing import Any

from ..errors import FieldError
from ._json import as_dict as _d
from ._json import as_int as _n
from ._json import as_list as _l
from ._json import as_str as _s
from ._json import is_int as _is_int
from ._memo import KnownValid, content_key
from .containers import (
    image_whitespace_errors,
    validate_containers,
    validate_ephemeral_containers,
    validate_init_containers,
    validate_pod_security_context,
)
from .field import (
    GoValue,
    child,
    duplicate,
    forbidden,
    go_string_map,
    index,
    invalid,
    key,
    not_supported,
    readable_diff,
    required,
)
from .meta import (
    _semantic,
    meta_of,
    validate_annotations,
    validate_immutable,
    validate_label_name,
    validate_label_selector,
    validate_labels,
    validate_object_meta,
    validate_object_meta_update,
)
from .names import (
    inclusive_range_error,
    is_dns1123_label,
    is_dns1123_subdomain,
    is_dns1123_subdomain_with_underscore,
    is_label_value,
    is_qualified_name,
    is_valid_ip,
    name_is_dns_subdomain,
    validate_namespace_name,
)
from .resources import validate_resource_requirements
from .volumes import (
    validate_local_descending_path,
    validate_node_selector,
    validate_node_selector_term,
    validate_volumes,
)

__all__ = [
    "validate_pod", "validate_pod_update", "validate_pod_status_update", "validate_pod_spec",
    "validate_pod_template_spec", "validate_pod_template", "validate_pod_template_update", "validate_binding",
    "validate_tolerations", "validate_affinity", "validate_containers", "UPDATABLE_POD_SPEC_FIELDS",
]

MAX_INT32 = 2**31 - 1
UPDATABLE_POD_SPEC_FIELDS = [
    "`spec.containers[*].image`",
    "`spec.initContainers[*].image`",
    "`spec.activeDeadlineSeconds`",
    "`spec.tolerations` (only additions to existing tolerations)",
    "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)",
]
MIRROR_POD_ANNOTATION = "kubernetes.io/config.mirror"
TOLERATIONS_ANNOTATION = "scheduler.alpha.kubernetes.io/tolerations"
DELETION_COST_ANNOTATION = "controller.kubernetes.io/pod-deletion-cost"
APPARMOR_PREFIX = "container.apparmor.security.beta.kubernetes.io/"
SECCOMP_POD_ANNOTATION = "seccomp.security.alpha.kubernetes.io/pod"
SECCOMP_CONTAINER_PREFIX = "container.seccomp.security.alpha.kubernetes.io/"

V = dict[str, Any]







# ---- scheduling ----------------------------------------------------------------------------------

def validate_tolerations(tolerations: Any, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    for i, t in enumerate(_l(tolerations)):
        t = _d(t)
        p = index(path, i)
        k, op, val, eff = t.get("key") or "", t.get("operator") or "", t.get("value") or "", t.get("effect") or ""
        if k:
            errs += validate_label_name(k, child(p, "key"))
        if not k and op != "Exists":
            errs.append(invalid(child(p, "operator"), op,
                                'operator must be Exists when `key` is empty, which means "match all values and all keys"'))
        if t.get("tolerationSeconds") is not None and eff != "NoExecute":
            errs.append(invalid(child(p, "effect"), eff, "effect must be 'NoExecute' when `tolerationSeconds` is set"))
        if op in ("Equal", ""):
            msgs = is_label_value(val)
            if msgs:
                errs.append(invalid(child(p, "operator"), val, ";".join(msgs)))
        elif op == "Exists":
            if val:
                errs.append(invalid(child(p, "operator"), val, "value must be empty when `operator` is 'Exists'"))
        else:
            errs.append(not_supported(child(p, "operator"), op, ["Equal", "Exists"]))
        if eff and eff not in ("NoSchedule", "PreferNoSchedule", "NoExecute"):
            errs.append(not_supported(child(p, "effect"), eff, ["NoSchedule", "PreferNoSchedule", "NoExecute"]))
    return errs


def _pod_affinity_term(term: V, path: str) -> list[FieldError]:
    errs = validate_label_selector(term.get("labelSelector"), child(path, "labelSelector"))
    errs += validate_label_selector(term.get("namespaceSelector"), child(path, "namespaceSelector"))
    for ns in _l(term.get("namespaces")):
        errs += [invalid(child(path, "namespace"), ns, m) for m in validate_namespace_name(str(ns), False)]
    sel = term.get("labelSelector")
    mk, mmk = _l(term.get("matchLabelKeys")), _l(term.get("mismatchLabelKeys"))
    for field_name, keys in (("matchLabelKeys", mk), ("mismatchLabelKeys", mmk)):
        if keys and sel is None:
            errs.append(forbidden(child(path, field_name), "must not be specified when labelSelector is not set"))
        elif keys:
            for j, k in enumerate(keys):
                errs += validate_label_name(str(k), index(child(path, field_name), j))
    mism = set(mmk)
    for j, k in enumerate(mk):
        if k in mism:
            errs.append(invalid(index(child(path, "matchLabelKeys"), j), k,
                                "exists in both matchLabelKeys and mismatchLabelKeys"))
    tk = term.get("topologyKey") or ""
    if not tk:
        errs.append(required(child(path, "topologyKey"), "can not be empty"))
    return errs + validate_label_name(tk, child(path, "topologyKey"))


def _weight(w: Any, path: str) -> list[FieldError]:
    w = w or 0
    if not _is_int(w) or w <= 0 or w > 100:
        return [invalid(path, w, "must be in the range 1-100")]
    return []


def validate_affinity(aff: Any, path: str) -> list[FieldError]:
    if aff is None:
        return []
    aff = _d(aff)
    errs: list[FieldError] = []
    na = aff.get("nodeAffinity")
    if na is not None:
        na, np_ = _d(na), child(path, "nodeAffinity")
        req = na.get("requiredDuringSchedulingIgnoredDuringExecution")
        if req is not None:
            errs += validate_node_selector(_d(req), child(np_, "requiredDuringSchedulingIgnoredDuringExecution"))
        pp = child(np_, "preferredDuringSchedulingIgnoredDuringExecution")
        for i, term in enumerate(_l(na.get("preferredDuringSchedulingIgnoredDuringExecution"))):
            term = _d(term)
            errs += _weight(term.get("weight"), child(index(pp, i), "weight"))
            # invalid label values are always allowed in preferences
            errs += validate_node_selector_term(_d(term.get("preference")), True, child(index(pp, i), "preference"))
    for kind in ("podAffinity", "podAntiAffinity"):
        pa = aff.get(kind)
        if pa is None:
            continue
        pa, kp = _d(pa), child(path, kind)
        rp = child(kp, "requiredDuringSchedulingIgnoredDuringExecution")
        for i, term in enumerate(_l(pa.get("requiredDuringSchedulingIgnoredDuringExecution"))):
            errs += _pod_affinity_term(_d(term), index(rp, i))
        pp = child(kp, "preferredDuringSchedulingIgnoredDuringExecution")
        for i, wt in enumerate(_l(pa.get("preferredDuringSchedulingIgnoredDuringExecution"))):
            wt = _d(wt)
            errs += _weight(wt.get("weight"), child(index(pp, i), "weight"))
            errs += _pod_affinity_term(_d(wt.get("podAffinityTerm")), child(index(pp, i), "podAffinityTerm"))
    return errs


def _topology_spread(constraints: Any, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    cs = [_d(c) for c in _l(constraints)]
    for i, c in enumerate(cs):
        p = index(path, i)
        ms = _n(c.get("maxSkew"))
        if ms <= 0:
            errs.append(invalid(child(p, "maxSkew"), ms, "must be greater than zero"))
        if not c.get("topologyKey"):
            errs.append(required(child(p, "topologyKey"), "can not be empty"))
        wu = c.get("whenUnsatisfiable") or ""
        if wu not in ("DoNotSchedule", "ScheduleAnyway"):
            errs.append(not_supported(child(p, "whenUnsatisfiable"), wu, ["DoNotSchedule", "ScheduleAnyway"]))
        for other in cs[i + 1:]:
            if other.get("topologyKey") == c.get("topologyKey") and other.get("whenUnsatisfiable") == wu:
                errs.append(duplicate(child(p, "{topologyKey, whenUnsatisfiable}"),
                                      f"{{{c.get('topologyKey') or ''}, {wu}}}"))
                break
        md = c.get("minDomains")
        if md is not None:
            if _n(md) <= 0:
                errs.append(invalid(child(p, "minDomains"), md, "must be greater than zero"))
            if wu != "DoNotSchedule":
                errs.append(invalid(child(p, "minDomains"), md,
                                    f"can only use minDomains if whenUnsatisfiable=DoNotSchedule, not {wu}"))
        for f in ("nodeAffinityPolicy", "nodeTaintsPolicy"):
            v = c.get(f)
            if v is not None and v not in ("Honor", "Ignore"):
                errs.append(not_supported(child(p, f), v, ["Honor", "Ignore"]))
        mlk = _l(c.get("matchLabelKeys"))
        sel = c.get("labelSelector")
        if mlk:
            sel_keys = set(_d(_d(sel).get("matchLabels"))) | {_d(e).get("key") for e in _l(_d(sel).get("matchExpressions"))}
            if sel is None:
                errs.append(forbidden(child(p, "matchLabelKeys"), "must not be specified when labelSelector is not set"))
            for j, k in enumerate(mlk):
                errs += validate_label_name(str(k), index(child(p, "matchLabelKeys"), j))
                if k in sel_keys:
                    errs.append(invalid(index(child(p, "matchLabelKeys"), j), k, "exists in both matchLabelKeys and labelSelector"))
        errs += validate_label_selector(sel, child(p, "labelSelector"))
    return errs


def _dns_config(cfg: Any, policy: str, path: str) -> list[FieldError]:
    if policy == "None":
        if cfg is None:
            return [required(path, "must provide `dnsConfig` when `dnsPolicy` is None")]
        if not _l(_d(cfg).get("nameservers")):
            return [required(child(path, "nameservers"), "must provide at least one DNS nameserver when `dnsPolicy` is None")]
    if cfg is None:
        return []
    cfg = _d(cfg)
    errs: list[FieldError] = []
    ns = _l(cfg.get("nameservers"))
    if len(ns) > 3:
        errs.append(invalid(child(path, "nameservers"), GoValue("[" + " ".join(map(str, ns)) + "]"),
                            "must not have more than 3 nameservers"))
    for i, n in enumerate(ns):
        errs += [invalid(index(child(path, "nameservers"), i), n, m) for m in is_valid_ip(str(n))]
    searches = [str(s) for s in _l(cfg.get("searches"))]
    if len(searches) > 32:
        errs.append(invalid(child(path, "searches"), GoValue("[" + " ".join(searches) + "]"),
                            "must not have more than 32 search paths"))
    if len(" ".join(searches)) > 2048:
        errs.append(invalid(child(path, "searches"), GoValue("[" + " ".join(searches) + "]"),
                            "must not have more than 2048 characters (including spaces) in the search list"))
    for i, s in enumerate(searches):
        if s != ".":
            s = s[:-1] if s.endswith(".") else s
            errs += [invalid(index(child(path, "searches"), i), s, m) for m in is_dns1123_subdomain_with_underscore(s)]
    for i, o in enumerate(_l(cfg.get("options"))):
        if not _d(o).get("name"):
            errs.append(required(index(child(path, "options"), i), "must not be empty"))
    return errs


# ---- the pod spec --------------------------------------------------------------------------------

# Pods of one template have one spec, up to the name of the kube-api-access volume that the
# ServiceAccount admission draws at random for each pod: specs found valid are remembered with
# that name replaced by a marker (a NUL byte, which JSON text never holds unescaped).
_VALID_SPECS = KnownValid()
_SA_ALNUM = b"bcdfghjklmnpqrstvwxz2456789"


def _spec_memo_key(spec: V, pod_name: str, resource_is_pod: bool) -> bytes | None:
    """A key equal for two specs only when one is the other with its kube-api-access volume
    renamed. Such a renaming keeps every check's outcome: both names are DNS labels of one length
    and alphabet, each spec holds just one of them, and only as whole strings; what differs is
    which text an error would quote, and only error-free specs are remembered."""
    if pod_name and any(isinstance(v, dict) and "ephemeral" in v for v in _l(spec.get("volumes"))):
        return None  # ephemeral volumes' claims are named after the pod
    k = content_key(spec, 16384)
    if k is None:
        return None
    n = b""
    i = k.find(b"kube-api-access-")
    while i >= 0:  # every occurrence must be one whole string, the same one, of the admission's alphabet
        name = k[i:i + 21]
        if k[i - 1:i] != b'"' or k[i - 2] not in b':,[{' or k[i + 21:i + 22] != b'"' \
                or name[16:].translate(None, _SA_ALNUM) or n and name != n:
            return None
        n = name
        i = k.find(b"kube-api-access-", i + 21)
    if n:
        k = k.replace(b'"' + n + b'"', b'"kube-api-access-\x00"')
    return (b"P" if resource_is_pod else b"T") + k


def validate_pod_spec(spec: Any, path: str = "spec", pod_name: str = "",
                      resource_is_pod: bool = False) -> list[FieldError]:
    """ValidatePodSpec. pod_name is set for real pods (ephemeral volume PVC names)."""
    spec = _d(spec)
    key = _spec_memo_key(spec, pod_name, resource_is_pod)
    if key is not None and key in _VALID_SPECS:
        return []
    errs = _pod_spec_errors(spec, path, pod_name, resource_is_pod)
    if not errs and key is not None:
        _VALID_SPECS.add(key)
    return errs


def _pod_spec_errors(spec: V, path: str, pod_name: str, resource_is_pod: bool) -> list[FieldError]:
    errs: list[FieldError] = []
    grace = spec.get("terminationGracePeriodSeconds")
    if grace is None:
        errs.append(required(child(path, "terminationGracePeriodSeconds")))
    host_users = spec.get("hostUsers") is not False  # a PodSpec field (not the security context's)
    restart = spec.get("restartPolicy") or ""
    vols, verrs = validate_volumes(spec.get("volumes"), pod_name, child(path, "volumes"), resource_is_pod)
    errs += verrs
    # checks of optional lists and maps find nothing when those are absent or empty: they are skipped then
    rcs = spec.get("resourceClaims")
    claims = {_s(_d(c).get("name")) for c in _l(rcs) if _d(c).get("name")}
    if rcs:
        errs += _resource_claims(rcs, child(path, "resourceClaims"))
    errs += validate_containers(spec.get("containers"), vols, claims, grace, child(path, "containers"), restart, host_users)
    if spec.get("initContainers"):
        errs += validate_init_containers(spec["initContainers"], spec.get("containers"), vols, claims, grace,
                                         child(path, "initContainers"), restart, host_users)
    if spec.get("ephemeralContainers"):
        errs += validate_ephemeral_containers(spec["ephemeralContainers"], spec, vols, claims,
                                              child(path, "ephemeralContainers"), restart, host_users)
    if spec.get("hostNetwork"):
        for i, ctr in enumerate(_l(spec.get("containers"))):
            for j, port in enumerate(_l(_d(ctr).get("ports"))):
                port = _d(port)
                hp, cp = port.get("hostPort") or 0, port.get("containerPort") or 0
                if (resource_is_pod or hp != 0) and hp != cp:
                    errs.append(invalid(child(index(child(index(child(path, "containers"), i), "ports"), j), "hostPort"),
                                        hp, "must match `containerPort` when `hostNetwork` is true"))
    if restart not in ("Always", "OnFailure", "Never"):
        errs.append(required(child(path, "restartPolicy")) if not restart else
                    not_supported(child(path, "restartPolicy"), restart, ["Always", "OnFailure", "Never"]))
    dns = spec.get("dnsPolicy") or ""
    if dns not in ("ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"):
        errs.append(required(child(path, "dnsPolicy")) if not dns else
                    not_supported(child(path, "dnsPolicy"), dns, ["ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"]))
    if spec.get("nodeSelector"):
        errs += validate_labels(spec["nodeSelector"], child(path, "nodeSelector"))
    if spec.get("securityContext"):  # an empty one (the default) has nothing to check
        errs += validate_pod_security_context(spec, child(path, "securityContext"))
    if spec.get("affinity") is not None:
        errs += validate_affinity(spec["affinity"], child(path, "affinity"))
    if spec.get("dnsConfig") is not None or dns == "None":
        errs += _dns_config(spec.get("dnsConfig"), dns, child(path, "dnsConfig"))
    for i, g in enumerate(_l(spec.get("readinessGates"))):
        ct = _d(g).get("conditionType") or ""
        errs += [invalid(child(index(child(path, "readinessGates"), i), "conditionType"), ct, m)
                 for m in is_qualified_name(ct)]
    seen_gates: set[str] = set()
    for i, g in enumerate(_l(spec.get("schedulingGates"))):
        gn = _d(g).get("name") or ""
        gp = index(child(path, "schedulingGates"), i)
        errs += [invalid(gp, gn, m) for m in is_qualified_name(gn)]
        if gn in seen_gates:
            errs.append(duplicate(gp, gn))
        seen_gates.add(gn)
    if spec.get("topologySpreadConstraints"):
        errs += _topology_spread(spec["topologySpreadConstraints"], child(path, "topologySpreadConstraints"))
    if not host_users:
        for f, label in (("hostNetwork", "hostNetwork"), ("hostPID", "HostPID"), ("hostIPC", "HostIPC")):
            if spec.get(f):
                errs.append(forbidden(child(path, label), "when `pod.Spec.HostUsers` is false"))
    for f, fn in (("serviceAccountName", name_is_dns_subdomain), ("nodeName", name_is_dns_subdomain)):
        v = spec.get(f) or ""
        if v:
            errs += [invalid(child(path, f), v, m) for m in fn(v, False)]
    ads = spec.get("activeDeadlineSeconds")
    if ads is not None and (ads < 1 or ads > MAX_INT32):
        errs.append(invalid(child(path, "activeDeadlineSeconds"), ads, inclusive_range_error(1, MAX_INT32)))
    for f in ("hostname", "subdomain"):
        v = spec.get(f) or ""
        if v:
            errs += [invalid(child(path, f), v, m) for m in is_dns1123_label(v)]
    if spec.get("tolerations"):
        errs += validate_tolerations(spec["tolerations"], child(path, "tolerations"))
    for i, ha in enumerate(_l(spec.get("hostAliases"))):
        ha = _d(ha)
        hp = index(child(path, "hostAliases"), i)
        errs += [invalid(child(hp, "ip"), ha.get("ip") or "", m) for m in is_valid_ip(ha.get("ip") or "")]
        for j, h in enumerate(_l(ha.get("hostnames"))):
            errs += [invalid(index(child(hp, "hostnames"), j), h, m) for m in is_dns1123_subdomain(str(h))]
    for f in ("priorityClassName", "runtimeClassName"):
        v = spec.get(f)
        if v or (f == "runtimeClassName" and v is not None):
            errs += [invalid(child(path, f), v, m) for m in name_is_dns_subdomain(str(v), False)]
    pp = spec.get("preemptionPolicy")
    if pp is not None and pp not in ("PreemptLowerPriority", "Never"):
        errs.append(required(child(path, "preemptionPolicy")) if not pp else
                    not_supported(child(path, "preemptionPolicy"), pp, ["PreemptLowerPriority", "Never"]))
    if spec.get("overhead") is not None:
        errs += validate_resource_requirements({"limits": spec["overhead"]}, child(path, "overhead"))
    errs += _os(spec, path)
    return errs


def _resource_claims(claims: Any, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    names: set[str] = set()
    for i, c in enumerate(_l(claims)):
        c = _d(c)
        p = index(path, i)
        name = c.get("name") or ""
        if not name:
            errs.append(required(child(p, "name")))
        elif name in names:
            errs.append(duplicate(child(p, "name"), name))
        else:
            errs += [invalid(child(p, "name"), name, m) for m in is_dns1123_label(name)]
            names.add(name)
        rcn, rctn = c.get("resourceClaimName"), c.get("resourceClaimTemplateName")
        if rcn is not None and rctn is not None:
            errs.append(invalid(p, GoValue("core.PodResourceClaim{...}"),
                                "at most one of `resourceClaimName` or `resourceClaimTemplateName` may be specified"))
        if rcn is None and rctn is None:
            errs.append(invalid(p, GoValue("core.PodResourceClaim{...}"),
                                "must specify one of: `resourceClaimName`, `resourceClaimTemplateName`"))
        for f, v in (("resourceClaimName", rcn), ("resourceClaimTemplateName", rctn)):
            if v is not None:
                errs += [invalid(child(p, f), v, m) for m in name_is_dns_subdomain(str(v), False)]
    return errs


_WINDOWS_POD_FORBIDDEN = ("appArmorProfile", "seLinuxOptions", "seccompProfile", "fsGroup", "fsGroupChangePolicy",
                          "sysctls", "runAsUser", "runAsGroup", "supplementalGroups", "supplementalGroupsPolicy",
                          "seLinuxChangePolicy")
_WINDOWS_CTR_FORBIDDEN = ("appArmorProfile", "seLinuxOptions", "seccompProfile", "capabilities", "readOnlyRootFilesystem",
                          "privileged", "allowPrivilegeEscalation", "procMount", "runAsUser", "runAsGroup")


def _all_containers(spec: V, path: str) -> list[tuple[V, str]]:
    out = []
    for kind in ("initContainers", "containers", "ephemeralContainers"):
        for i, c in enumerate(_l(spec.get(kind))):
            out.append((_d(c), index(child(path, kind), i)))
    return out


def _os(spec: V, path: str) -> list[FieldError]:
    os_ = spec.get("os")
    if os_ is None:
        return []
    name = _d(os_).get("name") or ""
    if not name:
        return [required(child(path, "os", "name"), "cannot be empty")]
    if name not in ("linux", "windows"):
        return [not_supported(child(path, "os"), name, ["linux", "windows"])]
    errs: list[FieldError] = []
    sc = _d(spec.get("securityContext"))
    if name == "linux":
        if sc.get("windowsOptions") is not None:
            errs.append(forbidden(child(path, "securityContext", "windowsOptions"), "windows options cannot be set for a linux pod"))
        for c, cp in _all_containers(spec, path):
            if _d(c.get("securityContext")).get("windowsOptions") is not None:
                errs.append(forbidden(child(cp, "securityContext", "windowsOptions"), "windows options cannot be set for a linux pod"))
        return errs
    if spec.get("securityContext") is not None:
        for f in _WINDOWS_POD_FORBIDDEN:
            if sc.get(f) not in (None, []):
                errs.append(forbidden(child(path, "securityContext", f), "cannot be set for a windows pod"))
        for f in ("hostUsers", "hostPID", "hostIPC", "shareProcessNamespace"):
            v = sc.get(f) if f == "hostUsers" else spec.get(f)
            if (v is not None and f in ("hostUsers", "shareProcessNamespace")) or (v and f in ("hostPID", "hostIPC")):
                errs.append(forbidden(child(path, f), "cannot be set for a windows pod"))
    for c, cp in _all_containers(spec, path):
        csc = c.get("securityContext")
        if csc is None:
            continue
        for f in _WINDOWS_CTR_FORBIDDEN:
            if _d(csc).get(f) is not None:
                errs.append(forbidden(child(cp, "securityContext", f), "cannot be set for a windows pod"))
    return errs


# ---- pod annotations -----------------------------------------------------------------------------

def _valid_first_digit(s: str) -> bool:
    return bool(s) and (s[0] == "-" or s == "0" or "1" <= s[0] <= "9")


def _seccomp_profile_annotation(p: str, path: str) -> list[FieldError]:
    if p in ("runtime/default", "docker/default", "unconfined"):
        return []
    if p.startswith("localhost/"):
        return validate_local_descending_path(p[len("localhost/"):], path)
    return [invalid(path, p, "must be a valid seccomp profile")]


def _pod_annotations(annotations: Any, spec: V, path: str) -> list[FieldError]:
    ann = _d(annotations)
    errs: list[FieldError] = []
    if MIRROR_POD_ANNOTATION in ann and not spec.get("nodeName"):
        errs.append(invalid(key(path, MIRROR_POD_ANNOTATION), ann[MIRROR_POD_ANNOTATION],
                            "must set spec.nodeName if mirror pod annotation is set"))
    if ann.get(TOLERATIONS_ANNOTATION):
        try:
            tols = json.loads(ann[TOLERATIONS_ANNOTATION])
        except ValueError as e:
            errs.append(invalid(path, TOLERATIONS_ANNOTATION, str(e)))
        else:
            errs += validate_tolerations(tols, child(path, TOLERATIONS_ANNOTATION))
    if DELETION_COST_ANNOTATION in ann:
        v = ann[DELETION_COST_ANNOTATION]
        ok = _valid_first_digit(v)
        if ok:
            try:
                ok = -(2**31) <= int(v) < 2**31
            except ValueError:
                ok = False
        if not ok:
            errs.append(invalid(key(path, DELETION_COST_ANNOTATION), v, "must be a 32bit integer"))
    if SECCOMP_POD_ANNOTATION in ann:
        errs += _seccomp_profile_annotation(ann[SECCOMP_POD_ANNOTATION], child(path, SECCOMP_POD_ANNOTATION))
    per_container = [k for k in ann if k.startswith(SECCOMP_CONTAINER_PREFIX) or k.startswith(APPARMOR_PREFIX)]
    if not per_container:
        return errs  # (almost every pod)
    names = {_s(c.get("name")) for c, _ in _all_containers(spec, "spec")}
    for k in sorted(per_container):
        if k.startswith(SECCOMP_CONTAINER_PREFIX):
            errs += _seccomp_profile_annotation(ann[k], child(path, k))
        if k.startswith(APPARMOR_PREFIX):
            cname = k[len(APPARMOR_PREFIX):]
            if cname not in names:
                errs.append(invalid(key(path, k), cname, "container not found"))
            v = ann[k]
            if v not in ("", "runtime/default", "unconfined") and not v.startswith("localhost/"):
                errs.append(invalid(key(path, k), v, f"invalid AppArmor profile name: {json.dumps(v)}"))
    return errs


def _pod_annotation_updates(new: V, old: V, path: str) -> list[FieldError]:
    na, oa = _d(meta_of(new).get("annotations")), _d(meta_of(old).get("annotations"))
    errs: list[FieldError] = []
    for k in sorted(oa):
        if k in na and na[k] == oa[k]:
            continue
        if k.startswith(APPARMOR_PREFIX):
            errs.append(forbidden(key(path, k), "may not remove or update AppArmor annotations"))
        if k == MIRROR_POD_ANNOTATION:
            errs.append(forbidden(key(path, k), "may not remove or update mirror pod annotation"))
    for k in sorted(na):
        if k in oa:
            continue
        if k.startswith(APPARMOR_PREFIX):
            errs.append(forbidden(key(path, k), "may not add AppArmor annotations"))
        if k == MIRROR_POD_ANNOTATION:
            errs.append(forbidden(key(path, k), "may not add mirror pod annotation"))
    return errs + _pod_annotations(na, _d(new.get("spec")), path)


# ---- pods ----------------------------------------------------------------------------------------

def _pod_metadata_and_spec(pod: V) -> list[FieldError]:
    md = meta_of(pod)
    spec = _d(pod.get("spec"))
    errs = validate_object_meta(pod, True, name_is_dns_subdomain)
    errs += _pod_annotations(md.get("annotations"), spec, "metadata.annotations")
    errs += validate_pod_spec(spec, "spec", md.get("name") or "", resource_is_pod=True)
    if not spec.get("serviceAccountName"):
        for vi, vol in enumerate(_l(spec.get("volumes"))):
            proj = _d(vol).get("projected")
            if proj is None:
                continue
            for si, src in enumerate(_l(_d(proj).get("sources"))):
                if _d(src).get("serviceAccountToken") is not None:
                    errs.append(forbidden(f"spec.volumes[{vi}].projected.sources[{si}].serviceAccountToken",
                                          "must not be specified when serviceAccountName is not set"))
    for kind in ("containers", "initContainers"):
        for i, c in enumerate(_l(spec.get(kind))):
            errs += image_whitespace_errors(_d(c), f"spec.{kind}[{i}]")
    return errs


def _seccomp_fields_match(pod: V) -> list[FieldError]:
    """With both a seccomp annotation and field set, they must agree."""
    ann = _d(meta_of(pod).get("annotations"))
    if not any(k == SECCOMP_POD_ANNOTATION or k.startswith(SECCOMP_CONTAINER_PREFIX) for k in ann):
        return []  # nothing to compare (almost every pod)
    spec = _d(pod.get("spec"))
    errs: list[FieldError] = []

    def check(annotation: str, sp: V, path: str) -> None:
        annotation = _s(annotation)
        t = sp.get("type")
        if t == "Unconfined" and annotation != "unconfined":
            errs.append(forbidden(child(path, "type"), "seccomp type in annotation and field must match"))
        elif t == "RuntimeDefault" and annotation not in ("runtime/default", "docker/default"):
            errs.append(forbidden(child(path, "type"), "seccomp type in annotation and field must match"))
        elif t == "Localhost":
            if not annotation.startswith("localhost/"):
                errs.append(forbidden(child(path, "type"), "seccomp type in annotation and field must match"))
            elif annotation[len("localhost/"):] != sp.get("localhostProfile"):
                errs.append(forbidden(child(path, "localhostProfile"), "seccomp profile in annotation and field must match"))

    psp = _d(spec.get("securityContext")).get("seccompProfile")
    if psp is not None and SECCOMP_POD_ANNOTATION in ann:
        check(ann[SECCOMP_POD_ANNOTATION], _d(psp), "spec.securityContext.seccompProfile")
    for c, cp in _all_containers(spec, "spec"):
        csp = _d(c.get("securityContext")).get("seccompProfile")
        k = SECCOMP_CONTAINER_PREFIX + _s(c.get("name"))
        if csp is not None and k in ann:
            check(ann[k], _d(csp), child(cp, "securityContext", "seccompProfile"))
    return errs


def validate_pod(pod: V) -> list[FieldError]:
    """ValidatePodCreate."""
    errs = _pod_metadata_and_spec(pod)
    spec = _d(pod.get("spec"))
    if _l(spec.get("ephemeralContainers")):
        errs.append(forbidden("spec.ephemeralContainers", "cannot be set on create"))
    if spec.get("nodeName") and _l(spec.get("schedulingGates")):
        errs.append(forbidden("spec.nodeName", "cannot be set until all schedulingGates have been cleared"))
    return errs + _seccomp_fields_match(pod)


def _container_updates(new: list[Any], old: list[Any], path: str) -> tuple[list[FieldError], bool]:
    if len(new) != len(old):
        return [forbidden(path, "pod updates may not add or remove containers")], True
    errs: list[FieldError] = []
    for i, c in enumerate(new):
        img = _d(c).get("image") or ""
        if not img:
            errs.append(required(child(index(path, i), "image")))
        if isinstance(img, str) and img.strip() != img:
            errs.append(invalid(child(index(path, i), "image"), img, "must not have leading or trailing whitespace"))
    return errs, False


def _toleration_key(t: Any) -> tuple[Any, ...]:
    t = _d(t)
    return (t.get("key") or "", t.get("operator") or "", t.get("value") or "", t.get("effect") or "")


def validate_pod_update(new: V, old: V) -> list[FieldError]:
    """ValidatePodUpdate: only images, activeDeadlineSeconds, added tolerations and a few gated fields change."""
    errs = validate_object_meta_update(new, old)
    errs += _pod_metadata_and_spec(new)
    errs += _pod_annotation_updates(new, old, "metadata.annotations")
    ns, os_ = _d(new.get("spec")), _d(old.get("spec"))
    for kind in ("containers", "initContainers"):
        cerrs, stop = _container_updates(_l(ns.get(kind)), _l(os_.get(kind)), f"spec.{kind}")
        errs += cerrs
        if stop:
            return errs
    nads, oads = ns.get("activeDeadlineSeconds"), os_.get("activeDeadlineSeconds")
    if nads is not None:
        if nads < 0 or nads > MAX_INT32:
            return errs + [invalid("spec.activeDeadlineSeconds", nads, inclusive_range_error(0, MAX_INT32))]
        if oads is not None and oads < nads:
            return errs + [invalid("spec.activeDeadlineSeconds", nads, "must be less than or equal to previous value")]
    elif oads is not None:
        errs.append(invalid("spec.activeDeadlineSeconds", "null", "must not update from a positive integer to nil value"))
    # only additions to tolerations (tolerationSeconds of existing ones may change)
    new_keys = [_toleration_key(t) for t in _l(ns.get("tolerations"))]
    for t in _l(os_.get("tolerations")):
        if _toleration_key(t) not in new_keys:
            errs.append(forbidden("spec.tolerations", "existing toleration can not be modified except its tolerationSeconds"))
            break
    else:
        errs += validate_tolerations(ns.get("tolerations"), "spec.tolerations")
    old_gates = {_d(g).get("name") for g in _l(os_.get("schedulingGates"))}
    for i, g in enumerate(_l(ns.get("schedulingGates"))):
        gn = _d(g).get("name")
        if gn not in old_gates:
            errs.append(forbidden(f"spec.schedulingGates[{i}].name",
                                  f"only deletion is allowed, but found new scheduling gate '{gn}'"))
    if _semantic(ns) == _semantic(os_):
        return errs
    munged = copy.deepcopy(ns)
    for kind in ("containers", "initContainers"):
        for i, c in enumerate(_l(munged.get(kind))):
            if isinstance(c, dict):
                c["image"] = _d(_l(os_.get(kind))[i]).get("image")
    for f in ("activeDeadlineSeconds", "schedulingGates", "tolerations"):
        munged.pop(f, None)
        if f in os_:
            munged[f] = copy.deepcopy(os_[f])
    otg = os_.get("terminationGracePeriodSeconds")
    if otg is not None and otg < 0 and munged.get("terminationGracePeriodSeconds") == 1:
        munged["terminationGracePeriodSeconds"] = otg
    if _l(os_.get("schedulingGates")):
        errs += _gated_pod_mutations(munged, os_)
    if _semantic(munged) != _semantic(os_):
        diff = readable_diff(os_, munged, "core.PodSpec")
        errs.append(forbidden("spec", "pod updates may not change fields other than "
                              + ",".join(UPDATABLE_POD_SPEC_FIELDS) + "\n" + diff))
    return errs


def _gated_pod_mutations(munged: V, old: V) -> list[FieldError]:
    """Gated pods may add to nodeSelector and to required node affinity terms."""
    errs: list[FieldError] = []
    nsel, osel = _d(munged.get("nodeSelector")), _d(old.get("nodeSelector"))
    if nsel != osel:
        if any(k not in nsel or nsel[k] != v for k, v in osel.items()):
            errs.append(invalid("spec.nodeSelector", go_string_map(nsel),
                                "only additions to spec.nodeSelector are allowed (no mutations or deletions)"))
        if "nodeSelector" in old:
            munged["nodeSelector"] = copy.deepcopy(old["nodeSelector"])
        else:
            munged.pop("nodeSelector", None)
    nna = _d(munged.get("affinity")).get("nodeAffinity")
    ona = _d(old.get("affinity")).get("nodeAffinity")
    if _semantic(nna) != _semantic(ona):
        ap = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"
        oterms = _l(_d(_d(ona).get("requiredDuringSchedulingIgnoredDuringExecution")).get("nodeSelectorTerms"))
        nterms = _l(_d(_d(nna).get("requiredDuringSchedulingIgnoredDuringExecution")).get("nodeSelectorTerms"))
        if oterms and len(oterms) != len(nterms):
            errs.append(invalid(ap, GoValue("[]core.NodeSelectorTerm{...}"),
                                "no additions/deletions to non-empty NodeSelectorTerms list are allowed"))
        else:
            for i, ot in enumerate(oterms):
                nt = _d(nterms[i])
                ok = True
                for f in ("matchExpressions", "matchFields"):
                    o_l, n_l = _l(_d(ot).get(f)), _l(nt.get(f))
                    if len(n_l) < len(o_l) or n_l[:len(o_l)] != o_l:
                        ok = False
                if not _l(_d(ot).get("matchExpressions")) and not _l(_d(ot).get("matchFields")) and \
                        (_l(nt.get("matchExpressions")) or _l(nt.get("matchFields"))):
                    ok = False
                if not ok:
                    errs.append(invalid(index(ap, i), GoValue("core.NodeSelectorTerm{...}"),
                                        "only additions are allowed (no mutations or deletions)"))
        aff = munged.setdefault("affinity", {})
        if ona is None:
            aff.pop("nodeAffinity", None)
            if not aff:
                munged.pop("affinity", None)
        else:
            aff["nodeAffinity"] = copy.deepcopy(ona)
    return errs


def validate_pod_status_update(new: V, old: V) -> list[FieldError]:
    """ValidatePodStatusUpdate (the status subresource)."""
    errs = validate_object_meta_update(new, old)
    errs += _pod_annotation_updates(new, old, "metadata.annotations")
    st, ost = _d(new.get("status")), _d(old.get("status"))
    for i, c in enumerate(_l(st.get("conditions"))):
        ct = _d(c).get("type") or ""
        if ct not in ("PodScheduled", "Ready", "Initialized"):
            errs += [invalid(f"metadata.conditions[{i}].Type", ct, m) for m in is_qualified_name(ct)]
    if _d(new.get("spec")).get("nodeName") != _d(old.get("spec")).get("nodeName"):
        errs.append(forbidden("status.nodeName", "may not be changed directly"))
    nnn = st.get("nominatedNodeName") or ""
    if nnn and nnn != (ost.get("nominatedNodeName") or ""):
        errs += [invalid("status.nominatedNodeName", nnn, m) for m in name_is_dns_subdomain(nnn, False)]
    errs += validate_immutable(st.get("qosClass") or "", ost.get("qosClass") or "", "status.qosClass")
    errs += _state_transitions(st.get("containerStatuses"), ost.get("containerStatuses"), "status.containerStatuses",
                               _d(old.get("spec")).get("restartPolicy") or "")
    for f in ("podIPs", "hostIPs"):
        for i, ip in enumerate(_l(st.get(f))):
            v = _d(ip).get("ip") or ""
            errs += [invalid(f"status.{f}[{i}]", v, m) for m in is_valid_ip(v)]
    hips = _l(st.get("hostIPs"))
    if hips and st.get("hostIP") != _d(hips[0]).get("ip"):
        errs.append(invalid("status.hostIPs[0].ip", _d(hips[0]).get("ip") or "", "must be equal to `hostIP`"))
    errs += _resource_claim_statuses(st.get("resourceClaimStatuses"), _d(new.get("spec")).get("resourceClaims"))
    return errs


def _resource_claim_statuses(statuses: Any, claims: Any) -> list[FieldError]:
    """validatePodResourceClaimStatuses: each names an entry of spec.resourceClaims, once."""
    errs: list[FieldError] = []
    names = {_d(c).get("name") for c in _l(claims)}
    seen: set[str] = set()
    for i, s in enumerate(_l(statuses)):
        p = index("status.resourceClaimStatuses", i)
        name = _s(_d(s).get("name"))
        if name not in names:
            errs.append(invalid(child(p, "name"), name, "must match the name of an entry in `spec.resourceClaims`"))
        if name in seen:
            errs.append(duplicate(child(p, "name"), name))
        seen.add(name)
        rcn = _d(s).get("resourceClaimName")
        if rcn is not None:
            errs += [invalid(child(p, "name"), rcn, m) for m in name_is_dns_subdomain(_s(rcn), False)]
    return errs


def _state_transitions(new: Any, old: Any, path: str, restart: str) -> list[FieldError]:
    if restart == "Always":
        return []
    errs: list[FieldError] = []
    for i, os_ in enumerate(_l(old)):
        term = _d(_d(os_).get("state")).get("terminated")
        if term is None:
            continue
        if (_d(term).get("exitCode") or 0) != 0 and restart == "OnFailure":
            continue
        for ns in _l(new):
            if _d(ns).get("name") == _d(os_).get("name") and _d(_d(ns).get("state")).get("terminated") is None:
                errs.append(forbidden(child(index(path, i), "state"), "may not be transitioned to non-terminated state"))
    return errs


# ---- templates and bindings ----------------------------------------------------------------------

def validate_pod_template_spec(tpl: Any, path: str) -> list[FieldError]:
    """ValidatePodTemplateSpec: template labels/annotations (reported at `<path>.labels`) and the PodSpec."""
    tpl = _d(tpl)
    md = _d(tpl.get("metadata"))
    spec = _d(tpl.get("spec"))
    errs = validate_labels(md.get("labels"), child(path, "labels"))
    errs += validate_annotations(md.get("annotations"), child(path, "annotations"))
    errs += _pod_annotations(md.get("annotations"), spec, child(path, "annotations"))
    errs += validate_pod_spec(spec, child(path, "spec"))
    errs += [_reroot(e, "spec", child(path, "spec")) for e in _seccomp_fields_match({"metadata": md, "spec": spec})]
    if _l(spec.get("ephemeralContainers")):
        errs.append(forbidden(child(path, "spec", "ephemeralContainers"), "ephemeral containers not allowed in pod template"))
    return errs


def _reroot(e: FieldError, old: str, new: str) -> FieldError:
    if e.path == old or e.path.startswith(old + ".") or e.path.startswith(old + "["):
        e.path = new + e.path[len(old):]
    return e


def validate_pod_template(obj: V) -> list[FieldError]:
    errs = validate_object_meta(obj, True, name_is_dns_subdomain)
    return errs + validate_pod_template_spec(obj.get("template"), "template")


def validate_pod_template_update(new: V, old: V) -> list[FieldError]:
    errs = validate_object_meta_update(new, old)
    return errs + validate_pod_template_spec(new.get("template"), "template")


def validate_binding(obj: V) -> list[FieldError]:
    """ValidatePodBinding."""
    target = _d(obj.get("target"))
    errs: list[FieldError] = []
    kind = target.get("kind") or ""
    if kind and kind != "Node":
        errs.append(not_supported("target.kind", kind, ["Node", "<empty>"]))
    if not target.get("name"):
        errs.append(required("target.name"))
    return errs


MIRROR_POD_ANNOTATION = "kubernetes.io/config.mirror"


def _changed_fields(old: V, new: V) -> str:
    keys = sorted(set(old) | set(new))
    return "\n".join(f"  {k}: {json.dumps(old.get(k))} -> {json.dumps(new.get(k))}"
                     for k in keys if old.get(k) != new.get(k))


def validate_pod_ephemeral_containers_update(new: V, old: V) -> list[FieldError]:
    """ValidatePodEphemeralContainersUpdate: the new pod is valid, and ephemeral containers are only added."""
    errs = validate_object_meta_update(new, old)
    errs += _pod_metadata_and_spec(new)
    errs += _pod_annotation_updates(new, old, "metadata.annotations")
    if MIRROR_POD_ANNOTATION in (_d(_d(old.get("metadata")).get("annotations"))):
        return [forbidden("", "static pods do not support ephemeral containers")]
    path = "spec.ephemeralContainers"
    by_name = {_s(_d(c).get("name")): _d(c) for c in _l(_d(new.get("spec")).get("ephemeralContainers"))}
    for oc in _l(_d(old.get("spec")).get("ephemeralContainers")):
        oc = _d(oc)
        name = _s(oc.get("name"))
        nc = by_name.get(name)
        if nc is None:
            errs.append(forbidden(path, f"existing ephemeral containers {json.dumps(name)} may not be removed\n"))
        elif nc != oc:
            errs.append(forbidden(path, f"existing ephemeral containers {json.dumps(name)} may not be changed\n"
                                        + _changed_fields(oc, nc)))
    return errs

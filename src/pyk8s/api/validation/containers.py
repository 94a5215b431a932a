"""Container validation shared by pods and pod templates, as upstream's core validation
(validateContainers, validateInitContainers, validateEphemeralContainers, probes, env,
volume mounts and security contexts).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from ..errors import FieldError
from ._json import as_dict as _d
from ._json import as_int as _n
from ._json import as_list as _l
from ._json import as_str as _s
from ._json import is_int as _is_int
from .field import GoValue, child, duplicate, forbidden, index, invalid, not_found, not_supported, required
from .meta import validate_nonnegative
from .names import (
    inclusive_range_error,
    is_config_map_key,
    is_dns1123_label,
    is_http_header_name,
    is_relaxed_env_var_name,
    is_valid_group_id,
    is_valid_port_name,
    is_valid_port_num,
    is_valid_user_id,
    name_is_dns_subdomain,
)
from .resources import validate_resource_requirements
from .volumes import (
    validate_local_descending_path,
    validate_object_field_selector,
    validate_resource_field_selector,
)

__all__ = [
    "validate_port_num_or_name", "validate_containers", "validate_init_containers", "validate_ephemeral_containers",
    "validate_pod_security_context", "image_whitespace_errors", "seccomp_profile_errors",
]

_ENV_FIELD_PATHS = ["metadata.name", "metadata.namespace", "metadata.uid", "spec.nodeName",
                    "spec.serviceAccountName", "status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs"]
_PROTOCOLS = ["SCTP", "TCP", "UDP"]
_SYSCTL_RE_TEXT = "^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?$"
_IPC_SYSCTLS = {"kernel.sem", "kernel.shmall", "kernel.shmmax", "kernel.shmmni", "kernel.msgmax", "kernel.msgmnb",
                "kernel.msgmni", "kernel.shm_rmid_forced"}

V = dict[str, Any]


# ---- ports, env, mounts --------------------------------------------------------------------------

def validate_port_num_or_name(port: Any, path: str) -> list[FieldError]:
    """ValidatePortNumOrName for an IntOrString: ints by range, strings as IANA port names."""
    if isinstance(port, str):
        return [invalid(path, port, m) for m in is_valid_port_name(port)]
    if _is_int(port) or port is None:
        port = port or 0
        return [invalid(path, port, m) for m in is_valid_port_num(port)]
    return [invalid(path, str(port), inclusive_range_error(1, 65535))]


def _container_ports(ports: Any, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    names: set[str] = set()
    for i, port in enumerate(_l(ports)):
        port = _d(port)
        p = index(path, i)
        name = port.get("name") or ""
        if name:
            msgs = is_valid_port_name(name)
            if msgs:
                errs += [invalid(child(p, "name"), name, m) for m in msgs]
            elif name in names:
                errs.append(duplicate(child(p, "name"), name))
            else:
                names.add(name)
        cp = port.get("containerPort") or 0
        if cp == 0:
            errs.append(required(child(p, "containerPort")))
        else:
            errs += [invalid(child(p, "containerPort"), cp, m) for m in is_valid_port_num(cp)]
        hp = port.get("hostPort") or 0
        if hp != 0:
            errs += [invalid(child(p, "hostPort"), hp, m) for m in is_valid_port_num(hp)]
        proto = port.get("protocol") or ""
        if not proto:
            errs.append(required(child(p, "protocol")))
        elif proto not in _PROTOCOLS:
            errs.append(not_supported(child(p, "protocol"), proto, _PROTOCOLS))
    return errs


def _key_selector(sel: V, path: str) -> list[FieldError]:
    errs = [invalid(child(path, "name"), sel.get("name") or "", m)
            for m in name_is_dns_subdomain(sel.get("name") or "", False)]
    k = sel.get("key") or ""
    if not k:
        errs.append(required(child(path, "key")))
    else:
        errs += [invalid(child(path, "key"), k, m) for m in is_config_map_key(k)]
    return errs


def _env(env: Any, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    for i, ev in enumerate(_l(env)):
        ev = _d(ev)
        # paths are spelled out (`<path>[i].name`) and built only where an error needs one
        name = ev.get("name") or ""
        if not name:
            errs.append(required(f"{path}[{i}].name"))
        else:
            msgs = is_relaxed_env_var_name(name)
            if msgs:
                errs += [invalid(f"{path}[{i}].name", name, m) for m in msgs]
        vf = ev.get("valueFrom")
        if vf is None:
            continue
        vf = _d(vf)
        vp = f"{path}[{i}].valueFrom"
        n = 0
        if vf.get("fieldRef") is not None:
            n += 1
            errs += validate_object_field_selector(_d(vf["fieldRef"]), _ENV_FIELD_PATHS, child(vp, "fieldRef"))
        if vf.get("resourceFieldRef") is not None:
            n += 1
            errs += validate_resource_field_selector(_d(vf["resourceFieldRef"]), child(vp, "resourceFieldRef"), False)
        if vf.get("configMapKeyRef") is not None:
            n += 1
            errs += _key_selector(_d(vf["configMapKeyRef"]), child(vp, "configMapKeyRef"))
        if vf.get("secretKeyRef") is not None:
            n += 1
            errs += _key_selector(_d(vf["secretKeyRef"]), child(vp, "secretKeyRef"))
        if n == 0:
            errs.append(invalid(vp, "", "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or "
                                "`secretKeyRef`"))
        elif ev.get("value"):
            errs.append(invalid(vp, "", "may not be specified when `value` is not empty"))
        elif n > 1:
            errs.append(invalid(vp, "", "may not have more than one field specified at a time"))
    return errs


def _env_from(items: Any, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    for i, ev in enumerate(_l(items)):
        ev = _d(ev)
        p = index(path, i)
        prefix = ev.get("prefix") or ""
        if prefix:
            errs += [invalid(child(p, "prefix"), prefix, m) for m in is_relaxed_env_var_name(prefix)]
        n = 0
        for kind in ("configMapRef", "secretRef"):
            if ev.get(kind) is None:
                continue
            n += 1
            name = _d(ev[kind]).get("name") or ""
            if not name:
                errs.append(required(child(p, kind, "name")))
            else:
                errs += [invalid(child(p, kind, "name"), name, m) for m in name_is_dns_subdomain(name, True)]
        if n == 0:
            errs.append(invalid(path, "", "must specify one of: `configMapRef` or `secretRef`"))
        elif n > 1:
            errs.append(invalid(path, "", "may not have more than one field specified at a time"))
    return errs


def _volume_mounts(ctr: V, devices: dict[str, str], volumes: dict[str, V], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    mount_points: set[str] = set()
    privileged = _d(ctr.get("securityContext")).get("privileged") is True
    for i, m in enumerate(_l(ctr.get("volumeMounts"))):
        m = _d(m)
        p = f"{path}[{i}]"
        name, mp = _s(m.get("name")), _s(m.get("mountPath"))
        if not name:
            errs.append(required(f"{p}.name"))
        if name not in volumes:
            errs.append(not_found(f"{p}.name", name))
        if not mp:
            errs.append(required(f"{p}.mountPath"))
        if mp in mount_points:
            errs.append(invalid(f"{p}.mountPath", mp, "must be unique"))
        mount_points.add(mp)
        if devices:  # (volumeDevices are rare)
            if name in devices:
                errs.append(invalid(f"{p}.name", name, "must not already exist in volumeDevices"))
            if mp in devices.values():
                errs.append(invalid(f"{p}.mountPath", mp, "must not already exist as a path in volumeDevices"))
        if name in volumes and volumes[name].get("image") is not None:
            if m.get("subPath"):
                errs.append(invalid(child(p, "subPath"), m["subPath"], "not allowed in image volume sources"))
            if m.get("subPathExpr"):
                errs.append(invalid(child(p, "subPathExpr"), m["subPathExpr"], "not allowed in image volume sources"))
        # upstream reports subPath problems under the list path (volumeMounts.subPath)
        if m.get("subPath"):
            errs += validate_local_descending_path(m["subPath"], child(path, "subPath"))
        if m.get("subPathExpr"):
            if m.get("subPath"):
                errs.append(invalid(child(p, "subPathExpr"), m["subPathExpr"], "subPathExpr and subPath are mutually exclusive"))
            errs += validate_local_descending_path(m["subPathExpr"], child(path, "subPathExpr"))
        prop = m.get("mountPropagation")
        if prop is not None:
            pp = child(path, "mountPropagation")
            if prop not in ("Bidirectional", "HostToContainer", "None"):
                errs.append(not_supported(pp, prop, ["Bidirectional", "HostToContainer", "None"]))
            if prop == "Bidirectional" and not privileged:
                errs.append(forbidden(pp, "Bidirectional mount propagation is available only to privileged containers"))
        rro = m.get("recursiveReadOnly")
        if rro is not None:
            rp = child(path, "recursiveReadOnly")
            if rro in ("Enabled", "IfPossible"):
                if not m.get("readOnly"):
                    errs.append(forbidden(rp, "may only be specified when readOnly is true"))
                if prop not in (None, "None"):
                    errs.append(forbidden(rp, "may only be specified when mountPropagation is None or not specified"))
            elif rro != "Disabled":
                errs.append(not_supported(rp, rro, ["Disabled", "Enabled", "IfPossible"]))
    return errs


def _volume_devices(ctr: V, mounts: dict[str, str], volumes: dict[str, V], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    paths: set[str] = set()
    names: set[str] = set()
    for i, dev in enumerate(_l(ctr.get("volumeDevices"))):
        dev = _d(dev)
        p = index(path, i)
        name, dp = _s(dev.get("name")), _s(dev.get("devicePath"))
        vol = volumes.get(name)
        if not name:
            errs.append(required(child(p, "name")))
        if name in names:
            errs.append(invalid(child(p, "name"), name, "must be unique"))
        if vol is not None and vol.get("persistentVolumeClaim") is None and vol.get("ephemeral") is None:
            errs.append(invalid(child(p, "name"), name,
                                "can only use volume source type of PersistentVolumeClaim or Ephemeral for block mode"))
        if vol is None:
            errs.append(not_found(child(p, "name"), name))
        if not dp:
            errs.append(required(child(p, "devicePath")))
        if dp in paths:
            errs.append(invalid(child(p, "devicePath"), dp, "must be unique"))
        if dp and ".." in dp.split("/"):
            errs.append(invalid(child(p, "devicePath"), dp, "can not contain backsteps ('..')"))
        else:
            paths.add(dp)
        if name in mounts:
            errs.append(invalid(child(p, "name"), name, "must not already exist in volumeMounts"))
        if dp in mounts.values():
            errs.append(invalid(child(p, "devicePath"), dp, "must not already exist as a path in volumeMounts"))
        if name:
            names.add(name)
    return errs


# ---- probes and lifecycle ------------------------------------------------------------------------

def _handler(h: V, grace: Any, path: str, kinds: tuple[str, ...]) -> list[FieldError]:
    errs: list[FieldError] = []
    n = 0
    for kind in kinds:
        if h.get(kind) is None:
            continue
        kp = child(path, kind)
        if n > 0:
            errs.append(forbidden(kp, "may not specify more than 1 handler type"))
            continue
        n += 1
        a = _d(h[kind])
        if kind == "exec":
            if not _l(a.get("command")):
                errs.append(required(child(kp, "command")))
        elif kind == "httpGet":
            if not a.get("path"):
                errs.append(required(child(kp, "path")))
            errs += validate_port_num_or_name(a.get("port"), child(kp, "port"))
            scheme = a.get("scheme") or ""
            if scheme not in ("HTTP", "HTTPS"):
                errs.append(not_supported(child(kp, "scheme"), scheme, ["HTTP", "HTTPS"]))
            for hdr in _l(a.get("httpHeaders")):
                hn = _d(hdr).get("name") or ""
                errs += [invalid(child(kp, "httpHeaders"), hn, m) for m in is_http_header_name(hn)]
        elif kind == "tcpSocket":
            errs += validate_port_num_or_name(a.get("port"), child(kp, "port"))
        elif kind == "grpc":
            errs += validate_port_num_or_name(a.get("port") or 0, child(kp, "port"))
        elif kind == "sleep":
            secs = _n(a.get("seconds"))
            if _is_int(grace) and (secs < 0 or secs > grace):
                errs.append(invalid(kp, secs, f"must be non-negative and less than terminationGracePeriodSeconds ({grace})"))
    if n == 0:
        errs.append(required(path, "must specify a handler type"))
    return errs


_PROBE_HANDLERS = ("exec", "httpGet", "tcpSocket", "grpc")
_LIFECYCLE_HANDLERS = ("exec", "httpGet", "tcpSocket", "sleep")


def _probe(probe: Any, grace: Any, path: str, kind: str) -> list[FieldError]:
    if probe is None:
        return []
    probe = _d(probe)
    errs = _handler(probe, grace, path, _PROBE_HANDLERS)
    for f in ("initialDelaySeconds", "timeoutSeconds", "periodSeconds", "successThreshold", "failureThreshold"):
        v = probe.get(f, 0)
        if type(v) is not int or v < 0:  # the usual non-negative int needs no path built
            errs += validate_nonnegative(v, child(path, f))
    tgp = probe.get("terminationGracePeriodSeconds")
    if tgp is not None and tgp <= 0:
        errs.append(invalid(child(path, "terminationGracePeriodSeconds"), tgp, "must be greater than 0"))
    if kind in ("liveness", "startup") and probe.get("successThreshold", 0) != 1:
        errs.append(invalid(child(path, "successThreshold"), probe.get("successThreshold", 0), "must be 1"))
    if kind == "readiness" and tgp is not None:
        errs.append(invalid(child(path, "terminationGracePeriodSeconds"), tgp, "must not be set for readinessProbes"))
    return errs


_PROBES = (("livenessProbe", "liveness"), ("readinessProbe", "readiness"), ("startupProbe", "startup"))


def _probes(ctr: V, grace: Any, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    for f, kind in _PROBES:
        probe = ctr.get(f)
        if probe is not None:
            errs += _probe(probe, grace, child(path, f), kind)
    return errs


def _lifecycle(lc: V, grace: Any, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    for hook in ("postStart", "preStop"):
        if lc.get(hook) is not None:
            errs += _handler(_d(lc[hook]), grace, child(path, hook), _LIFECYCLE_HANDLERS)
    return errs


# ---- security contexts ---------------------------------------------------------------------------

def seccomp_profile_errors(sp: Any, path: str) -> list[FieldError]:
    if sp is None:
        return []
    sp = _d(sp)
    errs: list[FieldError] = []
    t = sp.get("type") or ""
    types = ["Localhost", "RuntimeDefault", "Unconfined"]
    if not t:
        errs.append(required(child(path, "type"), "type is required when seccompProfile is set"))
    elif t not in types:
        errs.append(not_supported(child(path, "type"), t, types))
    if t == "Localhost":
        if sp.get("localhostProfile") is None:
            errs.append(required(child(path, "localhostProfile"), "must be set when seccomp type is Localhost"))
        else:
            errs += validate_local_descending_path(sp["localhostProfile"], child(path, "localhostProfile"))
    elif sp.get("localhostProfile") is not None:
        errs.append(invalid(child(path, "localhostProfile"), GoValue(f"&core.SeccompProfile{{Type:{json.dumps(t)}, "
                                                                        f"LocalhostProfile:&{json.dumps(sp['localhostProfile'])}}}"),
                            "can only be set when seccomp type is Localhost"))
    return errs


def _apparmor(ap: Any, path: str) -> list[FieldError]:
    if ap is None:
        return []
    ap = _d(ap)
    t = ap.get("type") or ""
    lp = ap.get("localhostProfile")
    if t == "Localhost":
        if lp is None:
            return [required(child(path, "localhostProfile"), "must be set when AppArmor type is Localhost")]
        errs = []
        if lp.strip() != lp:
            errs.append(invalid(child(path, "localhostProfile"), lp, "must not be padded with whitespace"))
        elif not lp:
            errs.append(required(child(path, "localhostProfile"), "must be set when AppArmor type is Localhost"))
        return errs
    if t in ("RuntimeDefault", "Unconfined"):
        if lp is not None:
            return [invalid(child(path, "localhostProfile"), lp, "can only be set when AppArmor type is Localhost")]
        return []
    if not t:
        return [required(child(path, "type"), "type is required when appArmorProfile is set")]
    return [not_supported(child(path, "type"), t, ["Localhost", "RuntimeDefault", "Unconfined"])]


def _container_security_context(sc: Any, path: str, host_users: bool) -> list[FieldError]:
    if sc is None:
        return []
    sc = _d(sc)
    errs: list[FieldError] = []
    if sc.get("runAsUser") is not None:
        errs += [invalid(child(path, "runAsUser"), sc["runAsUser"], m) for m in is_valid_user_id(sc["runAsUser"])]
    if sc.get("runAsGroup") is not None:
        errs += [invalid(child(path, "runAsGroup"), sc["runAsGroup"], m) for m in is_valid_group_id(sc["runAsGroup"])]
    pm = sc.get("procMount")
    if pm is not None:
        if pm not in ("Default", "Unmasked"):
            errs.append(not_supported(child(path, "procMount"), pm, ["Default", "Unmasked"]))
        if host_users and pm == "Unmasked":
            errs.append(invalid(child(path, "procMount"), pm, "`hostUsers` must be false to use `Unmasked`"))
    errs += seccomp_profile_errors(sc.get("seccompProfile"), child(path, "seccompProfile"))
    if sc.get("allowPrivilegeEscalation") is False:
        shown = GoValue("&core.SecurityContext{...}")
        if sc.get("privileged") is True:
            errs.append(invalid(path, shown, "cannot set `allowPrivilegeEscalation` to false and `privileged` to true"))
        for cap in _l(_d(sc.get("capabilities")).get("add")):
            if cap == "CAP_SYS_ADMIN":
                errs.append(invalid(path, shown, "cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` "
                                    "CAP_SYS_ADMIN"))
    errs += _apparmor(sc.get("appArmorProfile"), child(path, "appArmorProfile"))
    return errs


def _sysctl_namespace(name: str) -> str:
    if name.startswith("net."):
        return "net"
    if name in _IPC_SYSCTLS or name.startswith("fs.mqueue."):
        return "ipc"
    return ""


def validate_pod_security_context(spec: V, path: str) -> list[FieldError]:
    sc = spec.get("securityContext")
    if sc is None:
        return []
    sc = _d(sc)
    errs: list[FieldError] = []
    for f, fn in (("fsGroup", is_valid_group_id), ("runAsUser", is_valid_user_id), ("runAsGroup", is_valid_group_id)):
        if _is_int(sc.get(f)):
            errs += [invalid(child(path, f), sc[f], m) for m in fn(sc[f])]
    for g, gid in enumerate(_l(sc.get("supplementalGroups"))):
        if _is_int(gid):
            errs += [invalid(index(child(path, "supplementalGroups"), g), gid, m) for m in is_valid_group_id(gid)]
    if sc.get("shareProcessNamespace") is True and spec.get("hostPID"):
        errs.append(invalid(child(path, "shareProcessNamespace"), True,
                            "ShareProcessNamespace and HostPID cannot both be enabled"))
    import re

    seen: set[str] = set()
    for i, s in enumerate(_l(sc.get("sysctls"))):
        name = _s(_d(s).get("name"))
        np = child(index(child(path, "sysctls"), i), "name")
        if not name:
            errs.append(required(np))
        elif len(name) > 253 or not re.fullmatch(_SYSCTL_RE_TEXT[1:-1], name):
            errs.append(invalid(np, name, f"must have at most 253 characters and match regex {_SYSCTL_RE_TEXT}"))
        elif name in seen:
            errs.append(duplicate(np, name))
        ns = _sysctl_namespace(name)
        if spec.get("hostNetwork") and ns == "net":
            errs.append(invalid(np, name, "may not be specified when 'hostNetwork' is true"))
        elif spec.get("hostIPC") and ns == "ipc":
            errs.append(invalid(np, name, "may not be specified when 'hostIPC' is true"))
        seen.add(name)
    fgp = sc.get("fsGroupChangePolicy")
    if fgp is not None and fgp not in ("Always", "OnRootMismatch"):
        errs.append(not_supported(child(path, "fsGroupChangePolicy"), fgp, ["Always", "OnRootMismatch"]))
    errs += seccomp_profile_errors(sc.get("seccompProfile"), child(path, "seccompProfile"))
    errs += _apparmor(sc.get("appArmorProfile"), child(path, "appArmorProfile"))
    sgp = sc.get("supplementalGroupsPolicy")
    if sgp is not None and sgp not in ("Merge", "Strict"):
        errs.append(not_supported(child(path, "supplementalGroupsPolicy"), sgp, ["Merge", "Strict"]))
    slp = sc.get("seLinuxChangePolicy")
    if slp is not None and slp not in ("MountOption", "Recursive"):
        errs.append(not_supported(child(path, "seLinuxChangePolicy"), slp, ["MountOption", "Recursive"]))
    return errs


# ---- containers ----------------------------------------------------------------------------------

def _container_common(ctr: V, volumes: dict[str, V], claims: set[str], path: str, restart_policy: str,
                      host_users: bool) -> list[FieldError]:
    errs: list[FieldError] = []
    name = ctr.get("name") or ""
    if not name:
        errs.append(required(child(path, "name")))
    else:
        errs += [invalid(child(path, "name"), name, m) for m in is_dns1123_label(name)]
    if not ctr.get("image"):
        errs.append(required(child(path, "image")))
    tmp = ctr.get("terminationMessagePolicy") or ""
    if not tmp:
        errs.append(required(child(path, "terminationMessagePolicy")))
    elif tmp not in ("File", "FallbackToLogsOnError"):
        errs.append(not_supported(child(path, "terminationMessagePolicy"), tmp, ["File", "FallbackToLogsOnError"]))
    # the list checks find nothing in an absent or empty list: skip those (the common case)
    vds = ctr.get("volumeDevices")
    devices = {_s(_d(m).get("name")): _s(_d(m).get("devicePath")) for m in _l(vds)}
    for f, fn in _CONTAINER_LISTS:
        v = ctr.get(f)
        if v:
            errs += fn(v, child(path, f))
    if ctr.get("volumeMounts"):
        errs += _volume_mounts(ctr, devices, volumes, child(path, "volumeMounts"))
    if vds:
        mounts = {_s(_d(m).get("name")): _s(_d(m).get("mountPath")) for m in _l(ctr.get("volumeMounts"))}
        errs += _volume_devices(ctr, mounts, volumes, child(path, "volumeDevices"))
    ipp = ctr.get("imagePullPolicy") or ""
    if not ipp:
        errs.append(required(child(path, "imagePullPolicy")))
    elif ipp not in ("Always", "IfNotPresent", "Never"):
        errs.append(not_supported(child(path, "imagePullPolicy"), ipp, ["Always", "IfNotPresent", "Never"]))
    res = ctr.get("resources")
    if res:
        errs += validate_resource_requirements(res, child(path, "resources"), claims)
    if ctr.get("resizePolicy"):
        errs += _resize_policy(ctr["resizePolicy"], child(path, "resizePolicy"), restart_policy)
    if ctr.get("securityContext"):  # an empty one has nothing to check
        errs += _container_security_context(ctr["securityContext"], child(path, "securityContext"), host_users)
    return errs


_CONTAINER_LISTS: tuple[tuple[str, Callable[[Any, str], list[FieldError]]], ...] = (
    ("ports", _container_ports), ("env", _env), ("envFrom", _env_from),
)


def _resize_policy(policies: Any, path: str, restart_policy: str) -> list[FieldError]:
    errs: list[FieldError] = []
    seen: set[str] = set()
    for i, p in enumerate(_l(policies)):
        p = _d(p)
        rn, rp = p.get("resourceName") or "", p.get("restartPolicy") or ""
        if rn in seen:
            errs.append(duplicate(index(path, i), rn))
        seen.add(rn)
        if not rn:
            errs.append(required(path))
        elif rn not in ("cpu", "memory"):
            errs.append(not_supported(path, rn, ["cpu", "memory"]))
        if not rp:
            errs.append(required(path))
        elif rp not in ("NotRequired", "RestartContainer"):
            errs.append(not_supported(path, rp, ["NotRequired", "RestartContainer"]))
        if restart_policy == "Never" and rp != "NotRequired":
            errs.append(invalid(path, rp, "must be 'NotRequired' when `restartPolicy` is 'Never'"))
    return errs


def _host_port_conflicts(containers: list[Any], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    seen: set[str] = set()
    for ci, ctr in enumerate(containers):
        for pi, port in enumerate(_l(_d(ctr).get("ports"))):
            port = _d(port)
            hp = port.get("hostPort") or 0
            if not hp:
                continue
            k = f"{port.get('protocol') or ''}/{port.get('hostIP') or ''}/{hp}"
            if k in seen:
                errs.append(duplicate(child(index(child(index(path, ci), "ports"), pi), "hostPort"), k))
            seen.add(k)
    return errs


def validate_containers(containers: Any, volumes: dict[str, V], claims: set[str], grace: Any, path: str,
                        restart_policy: str, host_users: bool = True) -> list[FieldError]:
    containers = _l(containers)
    if not containers:
        return [required(path)]
    errs: list[FieldError] = []
    names: set[str] = set()
    for i, ctr in enumerate(containers):
        ctr = _d(ctr)
        p = index(path, i)
        errs += _container_common(ctr, volumes, claims, p, restart_policy, host_users)
        name = _s(ctr.get("name"))
        if name in names:
            errs.append(duplicate(child(p, "name"), name))
        names.add(name)
        if ctr.get("lifecycle") is not None:
            errs += _lifecycle(_d(ctr["lifecycle"]), grace, child(p, "lifecycle"))
        errs += _probes(ctr, grace, p)
        if ctr.get("restartPolicy") is not None:
            errs.append(forbidden(child(p, "restartPolicy"), "may not be set for non-init containers"))
    return errs + _host_port_conflicts(containers, path)


def validate_init_containers(inits: Any, regular: Any, volumes: dict[str, V], claims: set[str], grace: Any, path: str,
                     restart_policy: str, host_users: bool) -> list[FieldError]:
    errs: list[FieldError] = []
    names = {_s(_d(c).get("name")) for c in _l(regular)}
    for i, ctr in enumerate(_l(inits)):
        ctr = _d(ctr)
        p = index(path, i)
        errs += _container_common(ctr, volumes, claims, p, restart_policy, host_users)
        always = False
        rp = ctr.get("restartPolicy")
        if rp is not None:
            if rp != "Always":
                errs.append(not_supported(child(p, "restartPolicy"), rp, ["Always"]))
            always = rp == "Always"
        name = _s(ctr.get("name"))
        if name in names:
            errs.append(duplicate(child(p, "name"), name))
        elif name:
            names.add(name)
        # init containers run one by one, so only conflicts within each one count (upstream indexes them as [0])
        errs += _host_port_conflicts([ctr], path)
        if always:
            if ctr.get("lifecycle") is not None:
                errs += _lifecycle(_d(ctr["lifecycle"]), grace, child(p, "lifecycle"))
            errs += _probes(ctr, grace, p)
        else:
            for f in ("lifecycle", "livenessProbe", "readinessProbe", "startupProbe"):
                if ctr.get(f) is not None:
                    errs.append(forbidden(child(p, f), "may not be set for init containers without restartPolicy=Always"))
        if not always and _l(ctr.get("resizePolicy")):
            errs.append(invalid(child(p, "resizePolicy"), GoValue("[]core.ContainerResizePolicy{...}"),
                                "must not be set for init containers"))
    return errs


_EPHEMERAL_FORBIDDEN = ("ports", "resources", "livenessProbe", "readinessProbe", "startupProbe", "lifecycle",
                        "resizePolicy", "restartPolicy")


def validate_ephemeral_containers(ecs: Any, spec: V, volumes: dict[str, V], claims: set[str], path: str,
                          restart_policy: str, host_users: bool) -> list[FieldError]:
    errs: list[FieldError] = []
    if not _l(ecs):
        return errs
    others = {_s(_d(c).get("name")) for c in _l(spec.get("containers")) + _l(spec.get("initContainers"))}
    names = set(others)
    for i, ec in enumerate(_l(ecs)):
        ec = _d(ec)
        p = index(path, i)
        errs += _container_common(ec, volumes, claims, p, restart_policy, host_users)
        errs += image_whitespace_errors(ec, p)
        name = _s(ec.get("name"))
        if name in names:
            errs.append(duplicate(child(p, "name"), name))
        else:
            names.add(name)
        target = ec.get("targetContainerName") or ""
        if target and target not in others:
            errs.append(not_found(child(p, "targetContainerName"), target))
        for f in _EPHEMERAL_FORBIDDEN:
            if ec.get(f) not in (None, [], {}):
                errs.append(forbidden(child(p, f), "cannot be set for an Ephemeral Container"))
        for j, vm in enumerate(_l(ec.get("volumeMounts"))):
            for f in ("subPath", "subPathExpr"):
                if _d(vm).get(f):
                    errs.append(forbidden(child(index(child(p, "volumeMounts"), j), f),
                                          "cannot be set for an Ephemeral Container"))
    return errs


def image_whitespace_errors(ctr: V, path: str) -> list[FieldError]:
    img = ctr.get("image") or ""
    if isinstance(img, str) and len(img) != len(img.strip()):
        return [invalid(child(path, "image"), img, "must not have leading or trailing whitespace")]
    return []

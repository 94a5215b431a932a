"""The Pod Security Standards' checks (upstream's k8s.io/pod-security-admission/policy), each a
pure function of the pod's metadata and spec (plain dicts) that returns (reason, detail) when the
pod violates it, with upstream's reason and detail strings. A check has versions (the policy
version it applies from) and the level it belongs to; some restricted checks replace a baseline
one (restricted volume types replace hostPath volumes, ...), as upstream's OverrideCheckIDs.

Every container is visited: containers, init containers and ephemeral containers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

__all__ = ["Check", "CHECKS", "checks_for", "evaluate"]

Meta = dict[str, Any]
Spec = dict[str, Any]
Result = tuple[str, str] | None
Containers = list[dict[str, Any]]
CheckFn = Callable[[Meta, Spec, int, Containers], Result]


def _d(v: Any) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def _containers(spec: Spec) -> Iterator[dict[str, Any]]:
    for key in ("initContainers", "containers", "ephemeralContainers"):
        for c in spec.get(key) or []:
            if isinstance(c, dict):
                yield c


def _sc(c: dict[str, Any]) -> dict[str, Any] | None:
    sc = c.get("securityContext")
    return sc if isinstance(sc, dict) else None


def _psc(spec: Spec) -> dict[str, Any]:
    return _d(spec.get("securityContext"))


def _plural(one: str, many: str, n: int) -> str:
    return one if n == 1 else many


def _quote(s: str) -> str:
    """Go's %q for the plain strings these checks print."""
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _join_quote(items: list[str]) -> str:
    """upstream's joinQuote: each item in plain double quotes (nothing escaped)."""
    return ", ".join(f'"{i}"' for i in items)


def _containers_phrase(names: list[str]) -> str:
    return f"{_plural('container', 'containers', len(names))} {_join_quote(names)}"


def _windows(spec: Spec) -> bool:
    return _d(spec.get("os")).get("name") == "windows"


# ---- baseline -----------------------------------------------------------------------------------

_APPARMOR_PREFIX = "container.apparmor.security.beta.kubernetes.io/"


def _apparmor_ok(t: Any) -> bool:
    return t in ("RuntimeDefault", "Localhost")


def check_apparmor(meta: Meta, spec: Spec, v: int, ctrs: Containers) -> Result:
    setters: list[str] = []
    values: set[str] = set()
    ptype = _d(_psc(spec).get("appArmorProfile")).get("type")
    if ptype is not None and not _apparmor_ok(ptype):
        setters.append("pod")
        values.add(str(ptype))
    bad: list[str] = []
    for c in ctrs:
        ctype = _d(_d(_sc(c)).get("appArmorProfile")).get("type")
        if ctype is not None and not _apparmor_ok(ctype):
            bad.append(c.get("name", ""))
            values.add(str(ctype))
    if bad:
        setters.append(_containers_phrase(bad))
    annotated = False
    for k, val in _d(meta.get("annotations")).items():
        val = str(val)
        # (an empty value is the runtime's default, as upstream reads it)
        if k.startswith(_APPARMOR_PREFIX) and val not in ("", "runtime/default") and not val.startswith("localhost/"):
            annotated = True
            values.add(f"{k}={_quote(val)}")
    if annotated:
        setters.append("annotations")
    if setters:
        return (_plural("forbidden AppArmor profile", "forbidden AppArmor profiles", len(values)),
                f"{' and '.join(setters)} must not set AppArmor profile type to {_join_quote(sorted(values))}")
    return None


_BASELINE_CAPS = frozenset(("AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD",
                            "NET_BIND_SERVICE", "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT"))


def _caps(c: dict[str, Any], which: str) -> list[str]:
    return [str(x) for x in _d(_d(_sc(c)).get("capabilities")).get(which) or []]


def check_capabilities_baseline(meta: Meta, spec: Spec, v: int, ctrs: Containers) -> Result:
    bad: list[str] = []
    caps: set[str] = set()
    for c in ctrs:
        extra = [x for x in _caps(c, "add") if x not in _BASELINE_CAPS]
        if extra:
            bad.append(c.get("name", ""))
            caps.update(extra)
    if bad:
        return ("non-default capabilities",
                f"{_containers_phrase(bad)} must not include {_join_quote(sorted(caps))} in "
                "securityContext.capabilities.add")
    return None


def check_host_namespaces(meta: Meta, spec: Spec, v: int, ctrs: Containers) -> Result:
    used = [f"{k}=true" for k in ("hostNetwork", "hostPID", "hostIPC") if spec.get(k) is True]
    return ("host namespaces", ", ".join(used)) if used else None


def check_host_path_volumes(meta: Meta, spec: Spec, v: int, ctrs: Containers) -> Result:
    names = [vol.get("name", "") for vol in spec.get("volumes") or [] if isinstance(vol, dict) and "hostPath" in vol
             and vol["hostPath"] is not None]
    if names:
        return "hostPath volumes", f"{_plural('volume', 'volumes', len(names))} {_join_quote(names)}"
    return None


def check_host_ports(meta: Meta, spec: Spec, v: int, ctrs: Containers) -> Result:
    bad: list[str] = []
    ports: set[str] = set()
    for c in ctrs:
        used = [str(p.get("hostPort")) for p in c.get("ports") or [] if isinstance(p, dict) and p.get("hostPort")]
        if used:
            bad.append(c.get("name", ""))
            ports.update(used)
    if bad:
        return ("hostPort", f"{_containers_phrase(bad)} {_plural('uses', 'use', len(bad))} "
                            f"{_plural('hostPort', 'hostPorts', len(ports))} {', '.join(sorted(ports))}")
    return None


def check_privileged(meta: Meta, spec: Spec, v: int, ctrs: Containers) -> Result:
    bad = [c.get("name", "") for c in ctrs if _d(_sc(c)).get("privileged") is True]
    if bad:
        return "privileged", f"{_containers_phrase(bad)} must not set securityContext.privileged=true"
    return None


def check_proc_mount(meta: Meta, spec: Spec, v: int, ctrs: Containers) -> Result:
    # (upstream relaxes this for hostUsers=false pods only behind the alpha UserNamespacesPodSecurityStandards
    # gate, off by default: not here)
    bad: list[str] = []
    kinds: set[str] = set()
    for c in ctrs:
        pm = _d(_sc(c)).get("procMount")
        if pm is not None and pm != "Default":
            bad.append(c.get("name", ""))
            kinds.add(str(pm))
    if bad:
        return "procMount", f"{_containers_phrase(bad)} must not set securityContext.procMount to {_join_quote(sorted(kinds))}"
    return None


_SELINUX_TYPES = frozenset(("", "container_t", "container_init_t", "container_kvm_t"))


def check_selinux(meta: Meta, spec: Spec, v: int, ctrs: Containers) -> Result:
    allowed = _SELINUX_TYPES | ({"container_engine_t"} if v >= 31 else set())
    bad_types: set[str] = set()
    flags = {"user": False, "role": False}

    def valid(opts: dict[str, Any]) -> bool:
        ok = True
        if str(opts.get("type") or "") not in allowed:
            ok = False
            bad_types.add(str(opts.get("type")))
        for f in ("user", "role"):
            if opts.get(f):
                ok = False
                flags[f] = True
        return ok

    setters: list[str] = []
    psel = _psc(spec).get("seLinuxOptions")
    if isinstance(psel, dict) and not valid(psel):
        setters.append("pod")
    bad = [c.get("name", "") for c in ctrs
           if isinstance(_d(_sc(c)).get("seLinuxOptions"), dict) and not valid(_d(_sc(c))["seLinuxOptions"])]
    if bad:
        setters.append(_containers_phrase(bad))
    if not setters:
        return None
    data: list[str] = []
    if bad_types:
        data.append(f"{_plural('type', 'types', len(bad_types))} {_join_quote(sorted(bad_types))}")
    if flags["user"]:
        data.append("user may not be set")
    if flags["role"]:
        data.append("role may not be set")
    return "seLinuxOptions", f"{' and '.join(setters)} set forbidden securityContext.seLinuxOptions: {'; '.join(data)}"


def _seccomp_type(sc: dict[str, Any] | None) -> str | None:
    prof = _d(sc).get("seccompProfile")
    return str(_d(prof).get("type", "")) if isinstance(prof, dict) else None


def check_seccomp_baseline(meta: Meta, spec: Spec, v: int, ctrs: Containers) -> Result:
    setters: list[str] = []
    values: set[str] = set()
    if _seccomp_type(_psc(spec)) == "Unconfined":
        setters.append("pod")
        values.add("Unconfined")
    bad = [c.get("name", "") for c in ctrs if _seccomp_type(_sc(c)) == "Unconfined"]
    if bad:
        setters.append(_containers_phrase(bad))
        values.add("Unconfined")
    if setters:
        return ("seccompProfile",
                f"{' and '.join(setters)} must not set securityContext.seccompProfile.type to {_join_quote(sorted(values))}")
    return None


_SYSCTLS = {0: ("kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.ip_unprivileged_port_start",
                "net.ipv4.tcp_syncookies", "net.ipv4.ping_group_range"),
            27: ("net.ipv4.ip_local_reserved_ports",),
            29: ("net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout", "net.ipv4.tcp_keepalive_intvl",
                 "net.ipv4.tcp_keepalive_probes")}


def check_sysctls(meta: Meta, spec: Spec, v: int, ctrs: Containers) -> Result:
    allowed = {s for since, names in _SYSCTLS.items() if v >= since for s in names}
    bad = [str(s.get("name", "")) for s in _psc(spec).get("sysctls") or []
           if isinstance(s, dict) and s.get("name") not in allowed]
    return ("forbidden sysctls", ", ".join(bad)) if bad else None


def check_host_process(meta: Meta, spec: Spec, v: int, ctrs: Containers) -> Result:
    setters: list[str] = []
    if _d(_psc(spec).get("windowsOptions")).get("hostProcess") is True:
        setters.append("pod")
    bad = [c.get("name", "") for c in ctrs if _d(_d(_sc(c)).get("windowsOptions")).get("hostProcess") is True]
    if bad:
        setters.append(_containers_phrase(bad))
    if setters:
        return "hostProcess", f"{' and '.join(setters)} must not set securityContext.windowsOptions.hostProcess=true"
    return None


# ---- restricted ---------------------------------------------------------------------------------

def check_allow_privilege_escalation(meta: Meta, spec: Spec, v: int, ctrs: Containers) -> Result:
    if v >= 25 and _windows(spec):
        return None
    bad = [c.get("name", "") for c in ctrs if _d(_sc(c)).get("allowPrivilegeEscalation") is not False]
    if bad:
        return ("allowPrivilegeEscalation != false",
                f"{_containers_phrase(bad)} must set securityContext.allowPrivilegeEscalation=false")
    return None


def check_capabilities_restricted(meta: Meta, spec: Spec, v: int, ctrs: Containers) -> Result:
    if v >= 25 and _windows(spec):
        return None
    missing_drop: list[str] = []
    adding: list[str] = []
    caps: set[str] = set()
    for c in ctrs:
        if "ALL" not in _caps(c, "drop"):
            missing_drop.append(c.get("name", ""))
        extra = [x for x in _caps(c, "add") if x != "NET_BIND_SERVICE"]
        if extra:
            adding.append(c.get("name", ""))
            caps.update(extra)
    details: list[str] = []
    if missing_drop:
        details.append(f'{_containers_phrase(missing_drop)} must set securityContext.capabilities.drop=["ALL"]')
    if adding:
        details.append(f"{_containers_phrase(adding)} must not include {_join_quote(sorted(caps))} in "
                       "securityContext.capabilities.add")
    return ("unrestricted capabilities", "; ".join(details)) if details else None


_ALLOWED_VOLUMES = ("configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim",
                    "projected", "secret")
# every other volume source of core/v1, named as upstream reports it
_RESTRICTED_VOLUMES = ("gcePersistentDisk", "awsElasticBlockStore", "gitRepo", "nfs", "iscsi", "glusterfs",
                       "rbd", "flexVolume", "cinder", "cephfs", "flocker", "fc", "azureFile", "vsphereVolume",
                       "quobyte", "azureDisk", "portworxVolume", "photonPersistentDisk", "scaleIO", "storageos",
                       "image")


def check_restricted_volumes(meta: Meta, spec: Spec, v: int, ctrs: Containers) -> Result:
    bad: list[str] = []
    kinds: set[str] = set()
    for vol in spec.get("volumes") or []:
        if not isinstance(vol, dict):
            continue
        sources = {k for k, val in vol.items() if k != "name" and val is not None}
        # every source is judged, not just the first allowed one: a second source beside an allowed one is no cover
        if sources and sources <= set(_ALLOWED_VOLUMES):
            continue
        bad.append(vol.get("name", ""))
        if "hostPath" in sources:
            kinds.add("hostPath")
        else:
            named = [s for s in _RESTRICTED_VOLUMES if s in sources]
            kinds.add(named[0] if named else "unknown")
    if bad:
        return ("restricted volume types",
                f"{_plural('volume', 'volumes', len(bad))} {_join_quote(bad)} {_plural('uses', 'use', len(bad))} "
                f"{_plural('restricted volume type', 'restricted volume types', len(kinds))} {_join_quote(sorted(kinds))}")
    return None


def check_run_as_non_root(meta: Meta, spec: Spec, v: int, ctrs: Containers) -> Result:
    setters: list[str] = []
    pod_ok = False
    pv = _psc(spec).get("runAsNonRoot")
    if pv is not None:
        if pv is not True:
            setters.append("pod")
        else:
            pod_ok = True
    explicit: list[str] = []
    implicit: list[str] = []
    for c in ctrs:
        cv = _d(_sc(c)).get("runAsNonRoot")
        if cv is not None:
            if cv is not True:
                explicit.append(c.get("name", ""))
        elif not pod_ok:
            implicit.append(c.get("name", ""))
    if explicit:
        setters.append(_containers_phrase(explicit))
    if setters:
        return "runAsNonRoot != true", f"{' and '.join(setters)} must not set securityContext.runAsNonRoot=false"
    if implicit:
        return "runAsNonRoot != true", f"pod or {_containers_phrase(implicit)} must set securityContext.runAsNonRoot=true"
    return None


def check_run_as_user(meta: Meta, spec: Spec, v: int, ctrs: Containers) -> Result:
    setters: list[str] = []
    if _psc(spec).get("runAsUser") == 0 and _psc(spec).get("runAsUser") is not False:
        setters.append("pod")
    bad = [c.get("name", "") for c in ctrs
           if _d(_sc(c)).get("runAsUser") == 0 and _d(_sc(c)).get("runAsUser") is not False]
    if bad:
        setters.append(_containers_phrase(bad))
    if setters:
        return "runAsUser=0", f"{' and '.join(setters)} must not set runAsUser=0"
    return None


def check_seccomp_restricted(meta: Meta, spec: Spec, v: int, ctrs: Containers) -> Result:
    if v >= 25 and _windows(spec):
        return None
    setters: list[str] = []
    values: set[str] = set()
    pod_set = False
    pt = _seccomp_type(_psc(spec))
    if pt is not None:
        if pt not in ("RuntimeDefault", "Localhost"):
            setters.append("pod")
            values.add(pt)
        else:
            pod_set = True
    explicit: list[str] = []
    implicit: list[str] = []
    for c in ctrs:
        ct = _seccomp_type(_sc(c))
        if ct is not None:
            if ct not in ("RuntimeDefault", "Localhost"):
                explicit.append(c.get("name", ""))
                values.add(ct)
        elif not pod_set:
            implicit.append(c.get("name", ""))
    if explicit:
        setters.append(_containers_phrase(explicit))
    # what is set wrong is reported first; what is left unset only once nothing is set wrong
    if setters:
        return ("seccompProfile", f"{' and '.join(setters)} must not set securityContext.seccompProfile.type to "
                                  f"{_join_quote(sorted(values))}")
    if implicit:
        return ("seccompProfile", f"pod or {_containers_phrase(implicit)} must set securityContext.seccompProfile.type "
                                  'to "RuntimeDefault" or "Localhost"')
    return None


# ---- the registry -------------------------------------------------------------------------------

@dataclass(frozen=True)
class Check:
    id: str
    level: str  # baseline or restricted
    since: int  # the policy version (minor) it applies from
    fn: CheckFn
    overrides: tuple[str, ...] = ()


CHECKS = (
    Check("appArmorProfile", "baseline", 0, check_apparmor),
    Check("capabilities_baseline", "baseline", 0, check_capabilities_baseline),
    Check("hostNamespaces", "baseline", 0, check_host_namespaces),
    Check("hostPathVolumes", "baseline", 0, check_host_path_volumes),
    Check("hostPorts", "baseline", 0, check_host_ports),
    Check("privileged", "baseline", 0, check_privileged),
    Check("procMount", "baseline", 0, check_proc_mount),
    Check("seLinuxOptions", "baseline", 0, check_selinux),
    Check("seccompProfile_baseline", "baseline", 19, check_seccomp_baseline),
    Check("sysctls", "baseline", 0, check_sysctls),
    Check("windowsHostProcess", "baseline", 0, check_host_process),
    Check("allowPrivilegeEscalation", "restricted", 8, check_allow_privilege_escalation),
    Check("capabilities_restricted", "restricted", 22, check_capabilities_restricted, ("capabilities_baseline",)),
    Check("restrictedVolumes", "restricted", 0, check_restricted_volumes, ("hostPathVolumes",)),
    Check("runAsNonRoot", "restricted", 0, check_run_as_non_root),
    Check("runAsUser", "restricted", 23, check_run_as_user),
    Check("seccompProfile_restricted", "restricted", 19, check_seccomp_restricted, ("seccompProfile_baseline",)),
)


def checks_for(level: str, minor: int) -> list[Check]:
    """The checks of a level at a version: baseline's, then (for restricted) restricted's, each by id,
    less the baseline checks a restricted one replaces at that version."""
    if level == "privileged":
        return []
    levels = ("baseline",) if level == "baseline" else ("baseline", "restricted")
    chosen = [c for c in CHECKS if c.level in levels and c.since <= minor]
    replaced = {o for c in chosen for o in c.overrides}
    return [c for c in chosen if c.id not in replaced]


_CACHE: dict[tuple[str, int], list[Check]] = {}


def evaluate(level: str, minor: int, meta: Meta, spec: Spec) -> list[tuple[str, str]]:
    """Every violated check's (reason, detail), in upstream's order."""
    checks = _CACHE.get((level, minor))
    if checks is None:
        checks = _CACHE[(level, minor)] = checks_for(level, minor)
    out: list[tuple[str, str]] = []
    ctrs = list(_containers(spec))  # (every check visits them: listed once)
    for c in checks:
        r = c.fn(meta, spec, minor, ctrs)
        if r is not None:
            out.append(r)
    return out

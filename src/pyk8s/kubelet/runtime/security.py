"""Process security for containers: capabilities, the RuntimeDefault seccomp profile, users and groups.

The default capability set is the one containerd's CRI plugin gives (docker's), the
seccomp profile is a denylist written for pyk8s: allow by default, refuse (EPERM) the
syscalls that reach outside a container (kernel modules, kexec, clocks, keyrings, bpf,
new namespaces and mounts without CAP_SYS_ADMIN, ...).
"""

from __future__ import annotations

import os
import platform
import stat
from typing import Any

# Linux capability numbers 0..40, in order.
CAP_NAMES = [
    "CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_DAC_READ_SEARCH", "CAP_FOWNER", "CAP_FSETID", "CAP_KILL",
    "CAP_SETGID", "CAP_SETUID", "CAP_SETPCAP", "CAP_LINUX_IMMUTABLE", "CAP_NET_BIND_SERVICE",
    "CAP_NET_BROADCAST", "CAP_NET_ADMIN", "CAP_NET_RAW", "CAP_IPC_LOCK", "CAP_IPC_OWNER", "CAP_SYS_MODULE",
    "CAP_SYS_RAWIO", "CAP_SYS_CHROOT", "CAP_SYS_PTRACE", "CAP_SYS_PACCT", "CAP_SYS_ADMIN", "CAP_SYS_BOOT",
    "CAP_SYS_NICE", "CAP_SYS_RESOURCE", "CAP_SYS_TIME", "CAP_SYS_TTY_CONFIG", "CAP_MKNOD", "CAP_LEASE",
    "CAP_AUDIT_WRITE", "CAP_AUDIT_CONTROL", "CAP_SETFCAP", "CAP_MAC_OVERRIDE", "CAP_MAC_ADMIN", "CAP_SYSLOG",
    "CAP_WAKE_ALARM", "CAP_BLOCK_SUSPEND", "CAP_AUDIT_READ", "CAP_PERFMON", "CAP_BPF", "CAP_CHECKPOINT_RESTORE",
]

DEFAULT_CAPS = [
    "CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FSETID", "CAP_FOWNER", "CAP_MKNOD", "CAP_NET_RAW", "CAP_SETGID",
    "CAP_SETUID", "CAP_SETFCAP", "CAP_SETPCAP", "CAP_NET_BIND_SERVICE", "CAP_SYS_CHROOT", "CAP_KILL",
    "CAP_AUDIT_WRITE",
]


def bounding_caps() -> list[str]:
    """The capabilities this process may hand out (CapBnd): asking runc for more makes it fail."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("CapBnd:"):
                    mask = int(line.split()[1], 16)
                    return [n for i, n in enumerate(CAP_NAMES) if mask & (1 << i)]
    except OSError:
        pass
    return list(CAP_NAMES)


def _norm_cap(c: str) -> str:
    c = c.strip().upper()
    return c if c.startswith("CAP_") or c == "ALL" else "CAP_" + c


def effective_caps(add: list[str], drop: list[str], privileged: bool, allowed: list[str]) -> list[str]:
    """The container's capability set from securityContext.capabilities, as containerd computes it."""
    if privileged:
        return list(allowed)
    add_n = [_norm_cap(c) for c in add]
    drop_n = [_norm_cap(c) for c in drop]
    caps = [] if "ALL" in drop_n else list(DEFAULT_CAPS)
    if "ALL" in add_n:
        caps = list(CAP_NAMES)
    caps += [c for c in add_n if c != "ALL" and c not in caps]
    caps = [c for c in caps if c not in drop_n]
    unknown = [c for c in caps if c not in CAP_NAMES]
    if unknown:
        raise ValueError(f"unknown capabilities: {', '.join(unknown)}")
    return [c for c in caps if c in allowed]


_SECCOMP_ARCHES = {
    "x86_64": ["SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32"],
    "aarch64": ["SCMP_ARCH_AARCH64", "SCMP_ARCH_ARM"],
    "ppc64le": ["SCMP_ARCH_PPC64LE"],
    "s390x": ["SCMP_ARCH_S390X", "SCMP_ARCH_S390"],
    "riscv64": ["SCMP_ARCH_RISCV64"],
}

# Refused for everyone.
_DENY_ALWAYS = [
    "acct", "add_key", "bpf", "clock_adjtime", "clock_settime", "create_module", "delete_module",
    "finit_module", "get_kernel_syms", "get_mempolicy", "init_module", "ioperm", "iopl", "kcmp",
    "kexec_file_load", "kexec_load", "keyctl", "lookup_dcookie", "mbind", "move_pages", "nfsservctl",
    "open_by_handle_at", "perf_event_open", "query_module", "quotactl", "reboot", "request_key",
    "set_mempolicy", "settimeofday", "stime", "swapoff", "swapon", "_sysctl", "sysfs", "uselib",
    "userfaultfd", "ustat", "vm86", "vm86old", "fanotify_init", "name_to_handle_at",
]
# Refused unless the container has CAP_SYS_ADMIN (docker's profile makes the same exception).
_DENY_WITHOUT_SYS_ADMIN = [
    "mount", "mount_setattr", "umount", "umount2", "pivot_root", "setns", "unshare", "fsconfig", "fsmount",
    "fsopen", "fspick", "move_mount", "open_tree", "setdomainname", "sethostname", "lookup_dcookie",
]
_CLONE_NS_FLAGS = [0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000, 0x40000000]
_EPERM = 1
_ENOSYS = 38


def runtime_default_seccomp(caps: list[str]) -> dict[str, Any]:
    """The RuntimeDefault profile as an OCI `linux.seccomp` object."""
    deny = list(_DENY_ALWAYS)
    rules: list[dict[str, Any]] = []
    if "CAP_SYS_ADMIN" not in caps:
        deny += [s for s in _DENY_WITHOUT_SYS_ADMIN if s not in deny]
        # clone(2) with any CLONE_NEW* flag; clone3 hides its flags in memory, so make libc fall back to clone
        for flag in _CLONE_NS_FLAGS:
            rules.append({"names": ["clone"], "action": "SCMP_ACT_ERRNO", "errnoRet": _EPERM,
                          "args": [{"index": 0, "value": flag, "valueTwo": flag, "op": "SCMP_CMP_MASKED_EQ"}]})
        rules.append({"names": ["clone3"], "action": "SCMP_ACT_ERRNO", "errnoRet": _ENOSYS})
    if "CAP_SYS_PTRACE" not in caps:
        deny += ["process_vm_readv", "process_vm_writev", "ptrace"]
    if "CAP_SYS_TIME" in caps:
        deny = [s for s in deny if s not in ("settimeofday", "stime", "clock_settime", "clock_adjtime")]
    profile: dict[str, Any] = {
        "defaultAction": "SCMP_ACT_ALLOW",
        "syscalls": [{"names": sorted(set(deny)), "action": "SCMP_ACT_ERRNO", "errnoRet": _EPERM}] + rules,
    }
    arches = _SECCOMP_ARCHES.get(platform.machine())
    if arches:
        profile["architectures"] = arches
    return profile


def localhost_seccomp(path: str) -> dict[str, Any]:
    """A Localhost profile file (docker's JSON format, which is also OCI's, bar the `names`/`name` spelling)."""
    import json

    with open(path) as f:
        prof = json.load(f)
    out: dict[str, Any] = {"defaultAction": prof.get("defaultAction", "SCMP_ACT_ALLOW")}
    if prof.get("architectures"):
        out["architectures"] = prof["architectures"]
    calls = []
    for s in prof.get("syscalls") or []:
        names = s.get("names") or ([s["name"]] if s.get("name") else [])
        c = {"names": names, "action": s["action"]}
        for k in ("args", "errnoRet"):
            if k in s:
                c[k] = s[k]
        calls.append(c)
    out["syscalls"] = calls
    return out


# ---- users


def _read_db(rootfs: str, name: str) -> list[list[str]]:
    """Lines of the image's /etc/passwd or /etc/group; refuses a symlinked file (it could point at the host)."""
    path = os.path.join(rootfs, "etc", name)
    try:
        if stat.S_ISLNK(os.lstat(path).st_mode):
            return []
        with open(path, errors="replace") as f:
            return [ln.rstrip("\n").split(":") for ln in f if ln.strip() and not ln.startswith("#")]
    except OSError:
        return []


class UserError(ValueError):
    pass


def resolve_user(rootfs: str, image_user: str, run_as_user: int | None, run_as_group: int | None,
                 supplemental: list[int]) -> tuple[int, int, list[int], str]:
    """(uid, gid, additional gids, user name) as containerd resolves them against the image's files."""
    passwd = _read_db(rootfs, "passwd")
    groups = _read_db(rootfs, "group")

    def by_uid(uid: int) -> list[str] | None:
        return next((p for p in passwd if len(p) >= 4 and p[2] == str(uid)), None)

    username = ""
    if run_as_user is not None:
        uid = run_as_user
        ent = by_uid(uid)
        gid = int(ent[3]) if ent and ent[3].isdigit() else 0
        username = ent[0] if ent else ""
    else:
        user, _, group = (image_user or "").partition(":")
        if not user:
            uid, gid = 0, 0
            ent = by_uid(0)
            username = ent[0] if ent else ""
        elif user.isdigit():
            uid = int(user)
            ent = by_uid(uid)
            gid = int(ent[3]) if ent and ent[3].isdigit() else 0
            username = ent[0] if ent else ""
        else:
            ent = next((p for p in passwd if len(p) >= 4 and p[0] == user), None)
            if ent is None:
                raise UserError(f"unable to find user {user}: no matching entries in passwd file")
            uid, gid, username = int(ent[2]), int(ent[3]), user
        if group:
            if group.isdigit():
                gid = int(group)
            else:
                g = next((g for g in groups if len(g) >= 3 and g[0] == group), None)
                if g is None:
                    raise UserError(f"unable to find group {group}: no matching entries in group file")
                gid = int(g[2])
    if run_as_group is not None:
        gid = run_as_group
    extra: list[int] = []
    if username:
        for g in groups:
            if len(g) >= 4 and username in g[3].split(",") and g[2].isdigit():
                extra.append(int(g[2]))
    for s in supplemental:
        if s not in extra:
            extra.append(s)
    return uid, gid, [gid] + [g for g in extra if g != gid], username  # containerd lists the primary gid too

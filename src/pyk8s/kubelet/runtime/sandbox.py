"""Pod sandbox plumbing: persistent network/IPC/UTS namespaces, /dev/shm, and the pod's /etc files.

Namespaces outlive their processes by being bind-mounted onto files, as `ip netns add`
does: the network namespace at /run/netns/<name> (so `ip netns` and CNI plugins see
it), IPC and UTS next to it under /run/pyk8s/ns/<sandbox id>/. One `unshare` call
creates all three and sets the hostname inside the new UTS namespace; containers join
them by path through their OCI config.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import os
import shutil

from .interface import DNSConfig, HostAlias

NETNS_DIR = "/run/netns"
NS_DIR = "/run/pyk8s/ns"
MNT_DETACH = 2
MS_BIND, MS_REC, MS_SHARED = 0x1000, 0x4000, 1 << 20

_libc = ctypes.CDLL(None, use_errno=True)


def _mount(src: str, target: str, fstype: str, flags: int, data: str = "") -> None:
    if _libc.mount(src.encode(), target.encode(), fstype.encode() if fstype else None, flags,
                   data.encode() if data else None) != 0:
        e = ctypes.get_errno()
        raise OSError(e, f"mount {src} on {target}: {os.strerror(e)}")


def umount(target: str) -> None:
    """Lazily unmount `target` if mounted (EINVAL/ENOENT: nothing there)."""
    if _libc.umount2(target.encode(), MNT_DETACH) != 0:
        e = ctypes.get_errno()
        if e not in (22, 2):  # EINVAL: not a mount point; ENOENT: gone
            raise OSError(e, f"umount {target}: {os.strerror(e)}")


def is_mountpoint(path: str) -> bool:
    try:
        with open("/proc/self/mountinfo") as f:
            return any(line.split()[4] == path for line in f)
    except OSError:
        return False


def _ensure_shared_netns_dir() -> None:
    """/run/netns as a shared mount of itself, as iproute2 makes it, so netns mounts propagate and unmount cleanly."""
    os.makedirs(NETNS_DIR, exist_ok=True)
    with open("/proc/self/mountinfo") as f:
        for line in f:
            parts = line.split()
            if parts[4] == NETNS_DIR:
                if any(p.startswith("shared:") for p in parts[6 : parts.index("-")]):
                    return
                break
        else:
            _mount(NETNS_DIR, NETNS_DIR, "", MS_BIND | MS_REC)
    _mount("none", NETNS_DIR, "", MS_SHARED | MS_REC)


def _touch(path: str) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_CREAT | os.O_EXCL, 0o444)
    os.close(fd)


async def create_namespaces(sandbox_id: str, netns_name: str | None, ipc: bool, uts: bool,
                            hostname: str) -> dict[str, str]:
    """Create the requested persistent namespaces; returns {"net"|"ipc"|"uts": path}."""
    paths: dict[str, str] = {}
    args: list[str] = []
    if netns_name:
        _ensure_shared_netns_dir()
        paths["net"] = os.path.join(NETNS_DIR, netns_name)
    if ipc or uts:
        os.makedirs(os.path.join(NS_DIR, sandbox_id), exist_ok=True)
    if ipc:
        paths["ipc"] = os.path.join(NS_DIR, sandbox_id, "ipc")
    if uts:
        paths["uts"] = os.path.join(NS_DIR, sandbox_id, "uts")
    if not paths:
        return paths
    for kind, p in paths.items():
        _touch(p)
        args.append(f"--{kind}={p}")
    cmd = ["unshare", *args, "--"]
    if uts and hostname:
        cmd += [shutil.which("hostname") or "/bin/busybox", *([] if shutil.which("hostname") else ["hostname"]),
                hostname]
    else:
        cmd += ["true"]
    proc = await asyncio.create_subprocess_exec(*cmd, stdout=asyncio.subprocess.DEVNULL,
                                                stderr=asyncio.subprocess.PIPE)
    _, err = await proc.communicate()
    if proc.returncode != 0:
        delete_namespaces(sandbox_id, paths)
        raise OSError(f"creating pod namespaces failed: {err.decode(errors='replace').strip()}")
    return paths


def delete_namespaces(sandbox_id: str, paths: dict[str, str]) -> None:
    for p in paths.values():
        with contextlib.suppress(OSError):
            umount(p)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(p)
    with contextlib.suppress(OSError):
        os.rmdir(os.path.join(NS_DIR, sandbox_id))


def mount_shm(path: str, size: int) -> None:
    os.makedirs(path, exist_ok=True)
    if not is_mountpoint(path):
        _mount("shm", path, "tmpfs", 0x2 | 0x4 | 0x8, f"mode=1777,size={size}")  # nosuid,nodev,noexec


# ---- /etc files


def hosts_file(pod_ip: str, hostname: str, subdomain: str, namespace: str, cluster_domain: str,
               aliases: list[HostAlias], host_network: bool) -> str:
    """/etc/hosts as upstream's kubelet writes it (managedHostsFileContent)."""
    if host_network:
        try:
            with open("/etc/hosts") as f:
                base = f.read()
        except OSError:
            base = ""
        out = "# Kubernetes-managed hosts file (host network).\n" + base
    else:
        out = ("# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n"
               "::1\tlocalhost ip6-localhost ip6-loopback\nfe00::0\tip6-localnet\nfe00::0\tip6-mcastprefix\n"
               "fe00::1\tip6-allnodes\nfe00::2\tip6-allrouters\n")
        if pod_ip:
            if subdomain:
                out += f"{pod_ip}\t{hostname}.{subdomain}.{namespace}.svc.{cluster_domain}\t{hostname}\n"
            else:
                out += f"{pod_ip}\t{hostname}\n"
    if aliases:
        out += "\n# Entries added by HostAliases.\n"
        for a in aliases:
            out += a.ip + "\t" + "\t".join(a.hostnames) + "\n"
    return out


def resolv_conf(dns: DNSConfig | None) -> str:
    if dns is None:
        try:
            with open("/etc/resolv.conf") as f:
                return f.read()
        except OSError:
            return ""
    lines = []
    if dns.searches:
        lines.append("search " + " ".join(dns.searches))
    lines += [f"nameserver {s}" for s in dns.servers]
    if dns.options:
        lines.append("options " + " ".join(dns.options))
    return "\n".join(lines) + "\n"


def write_file(path: str, content: str) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(content)
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)

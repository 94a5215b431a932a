"""Clearing UDP conntrack entries, as upstream's proxy does after endpoint changes.

UDP has no connection end: a flow NATed to an endpoint that went away would keep going there
until its conntrack entry times out, and a flow that started while the Service had no endpoints
stays un-NATed. Both are deleted with the `conntrack` tool (conntrack-tools)."""

from __future__ import annotations

import asyncio
import logging
import shutil

log = logging.getLogger("pyk8s.proxy")

__all__ = ["clear_udp_endpoint", "clear_udp_service", "available"]


def available() -> bool:
    return shutil.which("conntrack") is not None


async def _conntrack(*args: str) -> None:
    proc = await asyncio.create_subprocess_exec("conntrack", *args, stdout=asyncio.subprocess.DEVNULL,
                                                stderr=asyncio.subprocess.PIPE)
    _, err = await proc.communicate()
    # exit 1 with "0 flow entries have been deleted" is the common case, not an error
    if proc.returncode not in (0, 1):
        log.warning("conntrack %s: %s", " ".join(args), err.decode(errors="replace").strip())


def _family(ip: str) -> list[str]:
    return ["-f", "ipv6"] if ":" in ip else []


async def clear_udp_endpoint(service_ip: str, port: int, endpoint_ip: str) -> None:
    """Flows to service_ip:port (a ClusterIP, external IP; port 0 with service_ip "" for a NodePort
    given as `port`) that were sent to endpoint_ip."""
    args = ["-D", "-p", "udp", *_family(endpoint_ip)]
    if service_ip:
        args += ["--orig-dst", service_ip]
    await _conntrack(*args, "--orig-port-dst", str(port), "--reply-src", endpoint_ip)


async def clear_udp_service(service_ip: str, port: int) -> None:
    """Every flow to service_ip:port (those that began while it had no endpoints were not NATed)."""
    await _conntrack("-D", "-p", "udp", *_family(service_ip), "--orig-dst", service_ip,
                     "--orig-port-dst", str(port))

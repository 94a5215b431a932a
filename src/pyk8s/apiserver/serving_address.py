"""Where the API server listens and which address it advertises, as upstream's secure serving options.

kube-apiserver listens on 0.0.0.0:6443 by default (`--bind-address`), so that pods, which reach
it through the `kubernetes` Service's endpoints, find it on the node's address; every request is
authenticated and authorized there (anonymous gets only /healthz, /livez, /readyz and /version).
The address in those endpoints is `--advertise-address`, which defaults as upstream's
DefaultExternalAddress: the bind address when it names one interface's address, otherwise the
address of the interface holding the default route (utilnet.ChooseHostInterface).
"""

from __future__ import annotations

import ipaddress
import socket

__all__ = ["DEFAULT_BIND_ADDRESS", "parse_ip", "is_specific", "default_advertise_address", "check_family"]

DEFAULT_BIND_ADDRESS = "0.0.0.0"  # upstream's default: every IPv4 address of the host


def parse_ip(value: str) -> str:
    """The canonical form of an IP address flag value; ValueError with upstream's wording otherwise."""
    try:
        return str(ipaddress.ip_address(value.strip()))
    except ValueError:
        raise ValueError(f'failed to parse IP: "{value}"') from None


def is_specific(address: str) -> bool:
    """True when `address` names one address (not 0.0.0.0 / ::, nor a loopback one)."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    return not (ip.is_unspecified or ip.is_loopback)


def _default_route_address(family: socket.AddressFamily, probe: str) -> str | None:
    try:
        with socket.socket(family, socket.SOCK_DGRAM) as s:
            s.connect((probe, 1))  # no packet is sent: this only picks the outgoing interface
            return str(s.getsockname()[0])
    except OSError:
        return None


def default_advertise_address(bind_address: str, advertise_address: str | None = None) -> str:
    """`advertise_address` unless unset or unspecified (0.0.0.0 / ::); then upstream's
    ResolveBindAddress: a specific bind address, else the default route's source address.

    With no default route at all (a machine without network), 127.0.0.1: the server still works
    for local clients, though the lease endpoint reconciler cannot publish a loopback address.
    """
    if advertise_address and advertise_address not in ("0.0.0.0", "::"):
        return advertise_address
    if is_specific(bind_address):
        return bind_address
    # IPv4 first, as upstream's ChooseHostInterface (and the kubernetes Service's family here)
    return (_default_route_address(socket.AF_INET, "10.255.255.255")
            or _default_route_address(socket.AF_INET6, "fd00::1") or "127.0.0.1")


def check_family(advertise_address: str, service_cidr: str, endpoint_reconciler_type: str) -> None:
    """ValueError unless the advertised address has the family of the primary service range, as upstream:
    the single-stack `kubernetes` Service and the endpoints the reconciler writes must agree."""
    if endpoint_reconciler_type == "none":
        return
    primary = service_cidr.split(",")[0].strip()
    try:
        same = ipaddress.ip_network(primary, strict=False).version == ipaddress.ip_address(advertise_address).version
    except ValueError:
        return  # not addresses: reported where they are parsed
    if not same:
        raise ValueError(f'service IP family "{primary}" must match public address family "{advertise_address}"')

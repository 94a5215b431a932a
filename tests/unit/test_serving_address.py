"""The advertise address's default, as upstream's DefaultExternalAddress / utilnet.ResolveBindAddress."""

from __future__ import annotations

import ipaddress

import pytest

from pyk8s.apiserver.serving_address import check_family, default_advertise_address, is_specific, parse_ip
from pyk8s.pki import local_addresses


def test_a_specific_bind_address_is_advertised() -> None:
    assert default_advertise_address("203.0.113.5") == "203.0.113.5"
    assert default_advertise_address("2001:db8::5") == "2001:db8::5"


@pytest.mark.parametrize("bind", ["0.0.0.0", "127.0.0.1", "127.0.0.9"])
def test_unspecified_or_loopback_bind_advertises_the_default_route_address(bind: str) -> None:
    addr = default_advertise_address(bind)
    v4 = [a for a in local_addresses() if ":" not in a]
    if v4:  # IPv4 first, as upstream's ChooseHostInterface
        assert addr in v4 and not ipaddress.ip_address(addr).is_loopback
    else:  # an IPv6-only machine, or no network at all (local clients only)
        assert addr in local_addresses() or addr == "127.0.0.1"


def test_an_explicit_advertise_address_wins_unless_unspecified() -> None:
    assert default_advertise_address("0.0.0.0", "198.51.100.7") == "198.51.100.7"
    assert default_advertise_address("203.0.113.5", "0.0.0.0") == "203.0.113.5"
    assert default_advertise_address("203.0.113.5", "::") == "203.0.113.5"


def test_parse_ip_and_is_specific() -> None:
    assert parse_ip(" 10.0.0.1") == "10.0.0.1" and parse_ip("2001:DB8::1") == "2001:db8::1"
    for bad in ("localhost", "10.0.0", "", "10.0.0.1/24"):
        with pytest.raises(ValueError, match="failed to parse IP"):
            parse_ip(bad)
    assert is_specific("192.0.2.2") and not is_specific("0.0.0.0") and not is_specific("::")
    assert not is_specific("127.0.0.1") and not is_specific("::1") and not is_specific("not-an-ip")


def test_check_family() -> None:
    check_family("192.0.2.2", "10.96.0.0/12", "lease")
    check_family("2001:db8::1", "fd00:10:96::/112,10.96.0.0/12", "lease")  # the primary range decides
    check_family("2001:db8::1", "10.96.0.0/12", "none")  # no endpoints written: nothing to agree with
    with pytest.raises(ValueError, match='service IP family "10.96.0.0/12" must match public address family "2001:db8::1"'):
        check_family("2001:db8::1", "10.96.0.0/12", "lease")


def test_the_url_local_clients_use() -> None:
    """The admin kubeconfig's server: loopback of the bound family for a wildcard, IPv6 in brackets."""
    from pyk8s.apiserver.server import APIServer, ServerConfig

    for bind, url in (("::", "https://[::1]:6443"), ("2001:db8::5", "https://[2001:db8::5]:6443"),
                      ("0.0.0.0", "https://127.0.0.1:6443"), ("192.0.2.7", "https://192.0.2.7:6443")):
        assert APIServer(ServerConfig(bind_address=bind, advertise_address="192.0.2.7")).url == url, bind

"""Where pods are told the cluster DNS is: the tenth address of the service range unless
--cluster-dns says otherwise (kubeadm's convention), for the server's addon and its kubelet alike."""

from __future__ import annotations

import argparse

from pyk8s.dns.addon import cluster_dns_ips, dns_service_ip
from pyk8s.kubelet.agent import _server_cluster_dns


def server_args(*argv: str) -> argparse.Namespace:
    from pyk8s.cli import main as cli

    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command")
    cli._server_parser(sub)
    return parser.parse_args(["server", *argv])


def test_tenth_address_of_the_service_range() -> None:
    assert dns_service_ip("10.96.0.0/12") == "10.96.0.10"
    assert dns_service_ip("10.43.0.0/16") == "10.43.0.10"
    assert dns_service_ip("fd00:10:96::/112") == "fd00:10:96::a"
    assert cluster_dns_ips(None, "10.100.0.0/16") == ["10.100.0.10"]
    assert cluster_dns_ips(" 10.0.0.53, 10.0.0.54 ", "10.100.0.0/16") == ["10.0.0.53", "10.0.0.54"]


def test_in_process_kubelet_follows_the_server_flags() -> None:
    assert _server_cluster_dns(server_args()) == ["10.96.0.10"]
    assert _server_cluster_dns(server_args("--service-cluster-ip-range", "10.100.0.0/16")) == ["10.100.0.10"]
    assert _server_cluster_dns(server_args("--cluster-dns", "10.100.0.53")) == ["10.100.0.53"]
    args = server_args("--cluster-domain", "corp.test", "--dns-port", "5353", "--disable", "dns")
    assert (args.cluster_domain, args.dns_port, args.disable) == ("corp.test", 5353, ["dns"])

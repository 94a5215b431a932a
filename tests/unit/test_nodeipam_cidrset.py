"""The node-ipam-controller's CIDR set (upstream's cidrset under the range allocator): pure arithmetic."""

from __future__ import annotations

import pytest

from pyk8s.cli.controller_manager_cmd import add_parser, validate
from pyk8s.controllers.nodeipam import CIDRSet, default_mask_size


def test_allocation_resumes_after_the_last_one_and_wraps_to_released_subnets() -> None:
    s = CIDRSet("10.0.0.0/22", 24)
    assert [s.allocate_next() for _ in range(4)] == ["10.0.0.0/24", "10.0.1.0/24", "10.0.2.0/24", "10.0.3.0/24"]
    assert s.allocate_next() is None
    s.release("10.0.1.0/24")
    assert s.allocate_next() == "10.0.1.0/24" and s.allocate_next() is None


def test_occupy_takes_every_subnet_a_cidr_covers_and_refuses_foreign_ones() -> None:
    s = CIDRSet("10.0.0.0/22", 24)
    s.occupy("10.0.0.0/23")  # a node's own, larger podCIDR
    s.occupy("10.0.3.128/25")  # a smaller one takes its enclosing /24
    assert s.allocate_next() == "10.0.2.0/24" and s.allocate_next() is None
    for foreign in ("10.1.0.0/24", "10.0.0.0/16", "fd00::/64"):
        with pytest.raises(ValueError):
            s.occupy(foreign)


def test_mask_sizes_as_upstream() -> None:
    assert default_mask_size("10.244.0.0/16") == 24 and default_mask_size("fd00:10:244::/56") == 64
    assert CIDRSet("fd00:10:244::/56", 64).allocate_next() == "fd00:10:244::/64"
    for bad in (("10.0.0.0/24", 16), ("10.0.0.0/16", 33)):
        with pytest.raises(ValueError):
            CIDRSet(*bad)


def _args(*argv: str) -> object:
    import argparse

    p = argparse.ArgumentParser()
    add_parser(p.add_subparsers(dest="command"))
    return p.parse_args(["controller-manager", "--kubeconfig", "k", *argv])


def test_controller_manager_flags_are_checked() -> None:
    assert validate(_args("--allocate-node-cidrs", "--cluster-cidr", "10.244.0.0/16")) is None
    assert validate(_args("--allocate-node-cidrs")) == "--cluster-cidr is required when --allocate-node-cidrs is true"
    assert "between" in (validate(_args("--allocate-node-cidrs", "--cluster-cidr", "10.0.0.0/24",
                                        "--node-cidr-mask-size", "20")) or "")
    assert "does not appear to be" in (validate(_args("--allocate-node-cidrs", "--cluster-cidr", "nonsense")) or "")

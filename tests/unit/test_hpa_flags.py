"""The HPA controller's flags and names as kube-controller-manager's: --controllers names it
horizontal-pod-autoscaler-controller (alias horizontalpodautoscaling), the
--horizontal-pod-autoscaler-* flags parse as upstream's and reach the controller, and
`pyk8s server --disable hpa` leaves it out (in process or in its own controller-manager process)."""

from __future__ import annotations

import argparse

import pytest

from pyk8s.cluster import server_controllers
from pyk8s.controllers.manager import select_controllers
from pyk8s.controllers.podautoscaler import options
from pyk8s.controllers.podautoscaler.horizontal import hpa_options


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(exit_on_error=False)
    options.add_flags(p)
    return p


def test_controller_names_as_upstream() -> None:
    assert select_controllers(["horizontal-pod-autoscaler-controller"]) == ["horizontalpodautoscaling"]
    assert select_controllers(["horizontalpodautoscaling"]) == ["horizontalpodautoscaling"]
    assert "horizontalpodautoscaling" in select_controllers(["*"])
    assert "horizontalpodautoscaling" not in select_controllers(["*", "-horizontal-pod-autoscaler-controller"])


def test_disable_hpa_leaves_the_controller_out_of_pyk8s_server() -> None:
    assert "horizontalpodautoscaling" in server_controllers(set())
    assert "horizontalpodautoscaling" not in server_controllers({"hpa"})


def test_defaults_are_upstream_s() -> None:
    got = hpa_options(options.from_args(parser().parse_args([])))
    assert got == {"sync_period": 15.0, "tolerance": 0.1, "cpu_initialization_period": 300.0,
                   "initial_readiness_delay": 30.0, "downscale_stabilization": 300.0}
    assert hpa_options({}) == got


def test_flags_reach_the_controller_options_and_a_child_process() -> None:
    args = parser().parse_args(["--horizontal-pod-autoscaler-sync-period", "1s",
                                "--horizontal-pod-autoscaler-tolerance", "0.2",
                                "--horizontal-pod-autoscaler-downscale-stabilization", "1m30s"])
    got = hpa_options(options.from_args(args))
    assert (got["sync_period"], got["tolerance"], got["downscale_stabilization"]) == (1.0, 0.2, 90.0)
    argv = options.argv_from_args(args)
    again = hpa_options(options.from_args(parser().parse_args(list(argv))))
    assert again == got


@pytest.mark.parametrize("flag,value", [
    ("--horizontal-pod-autoscaler-sync-period", "0s"),  # a sync loop without a pause
    ("--horizontal-pod-autoscaler-sync-period", "15"),  # not a duration
    ("--horizontal-pod-autoscaler-tolerance", "-0.1"),
    ("--horizontal-pod-autoscaler-tolerance", "1.5"),
    ("--horizontal-pod-autoscaler-tolerance", "nan"),
    ("--horizontal-pod-autoscaler-cpu-initialization-period", "-1m"),
])
def test_bad_values_are_refused(flag: str, value: str) -> None:
    with pytest.raises((argparse.ArgumentError, SystemExit)):
        parser().parse_args([flag, value])


def test_metric_names_print_selectors_as_go_does() -> None:
    """Upstream names External metrics "external metric NAME(%+v of the selector)" in its rescale reasons."""
    from pyk8s.controllers.podautoscaler.horizontal import _go_selector

    assert _go_selector(None) == "<nil>"
    assert _go_selector({"matchLabels": {"b": "2", "a": "1"}, "matchExpressions": [
        {"key": "k", "operator": "In", "values": ["x", "y"]}]}) == (
        "&LabelSelector{MatchLabels:map[string]string{a: 1,b: 2,},MatchExpressions:[]LabelSelectorRequirement{"
        "LabelSelectorRequirement{Key:k,Operator:In,Values:[x y],},},}")

"""bench/sidebyside.py's pure parts: which options go with which target, and the table's ratios."""

from __future__ import annotations

from typing import Any

import pytest
from bench.sidebyside import SELF, Target, parse_args, table, targets_from
from bench.sidebyside_phases import Sizes


def test_options_pair_with_the_foreign_kubeconfigs_in_order(tmp_path: Any) -> None:
    a, b = tmp_path / "a.yaml", tmp_path / "b.yaml"
    a.write_text("{}")
    b.write_text("{}")
    args = parse_args(["--kubeconfig", str(a), "--label", "kind", "--kubeconfig", SELF, "--label", "ours",
                       "--kubeconfig", str(b), "--pids-of", "apiserver=10,etcd=11", "--process-match", "kube-|etcd"])
    kind, ours, other = targets_from(args)
    assert (kind.label, kind.pids_of, kind.process_match) == ("kind", {"apiserver": 10, "etcd": 11}, "kube-|etcd")
    assert ours.started and ours.label == "ours" and ours.pids_of is None
    assert other.label == "b.yaml" and other.pids_of is None and other.process_match is None


def test_defaults_to_a_server_of_its_own() -> None:
    (t,) = targets_from(parse_args([]))
    assert t.started and t.label == "pyk8s"


@pytest.mark.parametrize("argv, error", [
    (["--pids-of", "apiserver=10"], "--pids-of: more than the 0 foreign"),
    (["--kubeconfig", "/nonexistent/kc"], "no such file"),
    (["--label", "a", "--label", "b"], "more --label than --kubeconfig"),
])
def test_bad_pairings_are_refused(argv: list[str], error: str) -> None:
    with pytest.raises(SystemExit, match=error):
        targets_from(parse_args(argv))


@pytest.mark.parametrize("argv", [["--run-id", "Bad_Id"], ["--run-id", "x" * 40], ["--phases", "create,nope"],
                                  ["--scale", "0"], ["--pids-of", "apiserver=x"]])
def test_bad_arguments_exit(argv: list[str], tmp_path: Any) -> None:
    kc = tmp_path / "kc"
    kc.write_text("{}")
    with pytest.raises(SystemExit):
        targets_from(parse_args(["--kubeconfig", str(kc), *argv]))


def test_table_gives_ratios_to_the_first_target_and_to_the_upstream_range() -> None:
    upstream = Target("upstream", "/kc")
    upstream.rounds = [{"create1_rate": 100.0, "bind": 18.0, "start_readyz": "not measured: not started by the bench"},
                       {"create1_rate": 120.0, "bind": 18.4, "start_readyz": "not measured: not started by the bench"}]
    ours = Target("pyk8s", SELF)
    ours.rounds = [{"create1_rate": 440.0, "bind": 3.0, "start_readyz": 2.4},
                   {"create1_rate": 500.0, "bind": 4.0, "start_readyz": 2.4, "error": "TimeoutError: x"}]
    out = table([upstream, ours], Sizes(), 1.0)
    rows = {line.split("|")[0].strip(): [c.strip() for c in line.split("|")[1:]] for line in out.splitlines()
            if "|" in line}
    # median 110 vs 470 pods/s: x4.27; upstream §7's 71-122 pods/s gives 470/122 .. 470/71
    assert rows["POST 1,000 pods, 1 keep-alive client"] == [
        "110 pods/s (100-120)", "470 pods/s (440-500) x4.27", "71.0-122 pods/s", "3.85-6.62"]
    assert rows["1,000 pods bound on 100 nodes"][1] == "3.50 s (3.00-4.00) x0.19"
    assert rows["start -> /readyz"][:2] == ["not measured", "2.40 s"]
    assert "failed: pyk8s, round 2: TimeoutError: x" in out
    assert "delete a namespace" not in out  # no round measured it: no row


def test_no_upstream_column_below_full_scale() -> None:
    ours = Target("pyk8s", SELF)
    ours.rounds = [{"bind": 0.5}]
    out = table([ours], Sizes.scaled(0.05), 0.05)
    assert "upstream §7" not in out and "50 pods bound on 5 nodes" in out and "--scale 0.05" in out

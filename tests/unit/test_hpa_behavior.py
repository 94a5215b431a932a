"""The HPA's normalization of a proposal (upstream's horizontal.go and the behavior cases of its
horizontal_test.go): the scale-up limit without behavior, stabilization windows, Pods/Percent policies
over their periods, selectPolicy Max/Min/Disabled, and the ScalingLimited/AbleToScale conditions."""

from __future__ import annotations

from typing import Any

import pytest

from pyk8s.controllers.podautoscaler.normalize import (
    History,
    Recommendation,
    ScaleEvent,
    calculate_scale_down_limit,
    calculate_scale_up_limit_with_rules,
    convert_desired_replicas_with_rules,
    normalize,
    normalize_with_behaviors,
)

NOW = 1_000_000.0


def rules(policies: list[tuple[str, int, int]], select: str = "Max", window: int | None = None) -> dict[str, Any]:
    r: dict[str, Any] = {"selectPolicy": select,
                         "policies": [{"type": t, "value": v, "periodSeconds": p} for t, v, p in policies]}
    if window is not None:
        r["stabilizationWindowSeconds"] = window
    return r


# upstream's defaults (SetDefaults_HorizontalPodAutoscalerBehavior)
DEFAULT_UP = rules([("Pods", 4, 15), ("Percent", 100, 15)], window=0)
DEFAULT_DOWN = rules([("Percent", 100, 15)])


@pytest.mark.parametrize("current,desired,lo,hi,expected,reason", [
    (3, 100, 1, 100, 6, "ScaleUpLimit"),  # at most double ...
    (1, 100, 1, 100, 4, "ScaleUpLimit"),  # ... or 4
    (10, 100, 1, 15, 15, "TooManyReplicas"),
    (5, 1, 3, 10, 3, "TooFewReplicas"),
    (5, 7, 1, 10, 7, "DesiredWithinRange"),
])
def test_limits_without_behavior(current: int, desired: int, lo: int, hi: int, expected: int, reason: str) -> None:
    got, why, _ = convert_desired_replicas_with_rules(current, desired, lo, hi)
    assert (got, why) == (expected, reason)


def test_downscale_stabilization_without_behavior() -> None:
    """The highest recommendation of the last 5 minutes wins; older ones are replaced, not kept."""
    h = History([Recommendation(8, NOW - 60), Recommendation(9, NOW - 400)])
    got, conds = normalize(h, 10, 4, 1, 20, 300, NOW)
    assert got == 8
    assert conds[0] == ("AbleToScale", "True", "ScaleDownStabilized",
                        "recent recommendations were higher than current one, applying the highest recent "
                        "recommendation")
    assert conds[1][:3] == ("ScalingLimited", "False", "DesiredWithinRange")
    assert [r.replicas for r in h.recommendations] == [8, 4]  # the 400 s old one's slot was reused
    got, conds = normalize(History(), 10, 4, 5, 20, 300, NOW)
    assert got == 5
    assert conds == [("AbleToScale", "True", "ReadyForNewScale", "recommended size matches current size"),
                     ("ScalingLimited", "True", "TooFewReplicas",
                      "the desired replica count is less than the minimum replica count")]


# (name, up rules, down rules, up events, down events, min, max, current, desired, expected, reason)
RATE_CASES = [
    ("scaleUp with default behavior", DEFAULT_UP, DEFAULT_DOWN, [], [], 5, 1000, 10, 50, 20, "ScaleUpLimit"),
    ("scaleUp with pods policy larger than percent policy", rules([("Pods", 100, 60), ("Percent", 100, 60)]),
     DEFAULT_DOWN, [], [], 5, 1000, 10, 500, 110, "ScaleUpLimit"),
    ("scaleUp with percent policy larger than pods policy", rules([("Pods", 2, 60), ("Percent", 100, 60)]),
     DEFAULT_DOWN, [], [], 5, 1000, 10, 500, 20, "ScaleUpLimit"),
    ("scaleUp with spec MaxReplicas limitation with large pod policy", rules([("Pods", 100, 60)]),
     DEFAULT_DOWN, [], [], 5, 50, 10, 500, 50, "TooManyReplicas"),
    ("scaleUp with selectPolicy Min", rules([("Pods", 4, 60), ("Percent", 100, 60)], "Min"),
     DEFAULT_DOWN, [], [], 5, 1000, 10, 500, 14, "ScaleUpLimit"),
    ("scaleUp Disabled", rules([("Pods", 4, 60)], "Disabled"),
     DEFAULT_DOWN, [], [], 5, 1000, 10, 500, 10, "ScaleUpLimit"),
    ("scaleUp with percent rounding up", rules([("Percent", 10, 60)]),
     DEFAULT_DOWN, [], [], 1, 1000, 3, 500, 4, "ScaleUpLimit"),
    ("scaleUp with previous scale up events in the period", rules([("Pods", 10, 60)]),
     DEFAULT_DOWN, [ScaleEvent(5, NOW - 30)], [], 1, 1000, 10, 500, 15, "ScaleUpLimit"),
    ("scaleUp with previous events outside the period", rules([("Pods", 10, 60)]),
     DEFAULT_DOWN, [ScaleEvent(5, NOW - 90)], [], 1, 1000, 10, 500, 20, "ScaleUpLimit"),
    ("scaleUp never below current when events used up the budget", rules([("Pods", 2, 60)]),
     DEFAULT_DOWN, [ScaleEvent(5, NOW - 30)], [], 1, 1000, 10, 500, 10, "ScaleUpLimit"),
    ("scaleDown with default behavior", DEFAULT_UP, DEFAULT_DOWN, [], [], 5, 1000, 10, 1, 5, "TooFewReplicas"),
    ("scaleDown with percent policy larger than pods policy (docs' 80 pods)", DEFAULT_UP,
     rules([("Pods", 4, 60), ("Percent", 10, 60)]), [], [], 1, 1000, 80, 1, 72, "ScaleDownLimit"),
    ("scaleDown within the period of the last step (docs' 80 pods, second step)", DEFAULT_UP,
     rules([("Pods", 4, 60), ("Percent", 10, 60)]), [], [ScaleEvent(8, NOW - 30)], 1, 1000, 72, 1, 72,
     "ScaleDownLimit"),
    ("scaleDown with selectPolicy Min", DEFAULT_UP, rules([("Pods", 4, 60), ("Percent", 10, 60)], "Min"),
     [], [], 1, 1000, 80, 1, 76, "ScaleDownLimit"),
    ("scaleDown percent truncates", DEFAULT_UP, rules([("Percent", 50, 60)]), [], [], 1, 1000, 5, 1, 2,
     "ScaleDownLimit"),
    ("scaleDown Disabled", DEFAULT_UP, rules([("Percent", 100, 60)], "Disabled"), [], [], 1, 1000, 5, 1, 5,
     "ScaleDownLimit"),
    ("within range", DEFAULT_UP, DEFAULT_DOWN, [], [], 1, 1000, 5, 7, 7, "DesiredWithinRange"),
]


@pytest.mark.parametrize("name,up,down,up_events,down_events,lo,hi,current,desired,expected,reason", RATE_CASES,
                         ids=[c[0] for c in RATE_CASES])
def test_behavior_rate_limits(name: str, up: dict[str, Any], down: dict[str, Any], up_events: list[ScaleEvent],
                              down_events: list[ScaleEvent], lo: int, hi: int, current: int, desired: int,
                              expected: int, reason: str) -> None:
    h = History([Recommendation(desired, NOW - 1000)], list(up_events), list(down_events))
    behavior = {"scaleUp": {**up, "stabilizationWindowSeconds": 0},
                "scaleDown": {**down, "stabilizationWindowSeconds": 0}}
    got, conds = normalize_with_behaviors(h, behavior, current, desired, lo, hi, 300, NOW)
    assert got == expected
    assert conds[1][0] == "ScalingLimited" and conds[1][2] == reason
    assert conds[1][1] == ("False" if expected == desired else "True")


def test_scale_limits_use_both_directions_events() -> None:
    """The period's start count adds back what was removed and takes off what was added."""
    up = [ScaleEvent(4, NOW - 10)]
    down = [ScaleEvent(2, NOW - 10)]
    # start = 10 - 4 + 2 = 8; Pods 3 -> 11
    assert calculate_scale_up_limit_with_rules(10, up, down, rules([("Pods", 3, 60)]), NOW) == 11
    # start = 8; Percent 50 -> int(4.0) = 4
    assert calculate_scale_down_limit(10, up, down, rules([("Percent", 50, 60)]), NOW) == 4


# upstream's TestNormalizeDesiredReplicasWithBehavior shapes
STABILIZATION_CASES = [
    ("no recommendations", [], 5, 5, 300, 0, 5, "ReadyForNewScale"),
    ("simple scale down stabilization", [(4, 60), (5, 120), (7, 180)], 100, 3, 300, 0, 7, "ScaleDownStabilized"),
    ("simple scale up stabilization", [(10, 60), (12, 120), (14, 180)], 1, 15, 0, 300, 10, "ScaleUpStabilized"),
    ("no scale down stabilization", [(1, 60), (2, 120), (3, 180)], 100, 10, 0, 0, 10, "ReadyForNewScale"),
    ("scale down stabilization ignores old recommendations", [(90, 400), (8, 60)], 100, 3, 300, 0, 8,
     "ScaleDownStabilized"),
    ("scale up stabilization never goes below current", [(2, 60)], 5, 10, 0, 300, 5, "ScaleUpStabilized"),
]


@pytest.mark.parametrize("name,recs,current,desired,down_window,up_window,expected,reason", STABILIZATION_CASES,
                         ids=[c[0] for c in STABILIZATION_CASES])
def test_stabilization_windows(name: str, recs: list[tuple[int, int]], current: int, desired: int,
                               down_window: int, up_window: int, expected: int, reason: str) -> None:
    h = History([Recommendation(r, NOW - age) for r, age in recs])
    behavior = {"scaleUp": {**rules([("Pods", 1000, 15)]), "stabilizationWindowSeconds": up_window},
                "scaleDown": {**rules([("Percent", 100, 15)]), "stabilizationWindowSeconds": down_window}}
    got, conds = normalize_with_behaviors(h, behavior, current, desired, 1, 1000, 300, NOW)
    assert got == expected
    assert conds[0][2] == reason
    assert any(r.replicas == desired and r.timestamp == NOW for r in h.recommendations)  # recorded unstabilized


def test_scale_down_without_window_uses_the_controller_default() -> None:
    """behavior.scaleDown without stabilizationWindowSeconds: --horizontal-pod-autoscaler-downscale-stabilization."""
    h = History([Recommendation(9, NOW - 200)])
    behavior = {"scaleUp": DEFAULT_UP, "scaleDown": DEFAULT_DOWN}
    assert normalize_with_behaviors(h, behavior, 10, 2, 1, 100, 300, NOW)[0] == 9
    h = History([Recommendation(9, NOW - 200)])
    assert normalize_with_behaviors(h, behavior, 10, 2, 1, 100, 100, NOW)[0] == 2


def test_scale_events_reuse_outdated_slots_and_only_with_behavior() -> None:
    h = History()
    h.store_scale_event(None, 1, 5, NOW)
    assert h.scale_up_events == []
    behavior = {"scaleUp": rules([("Pods", 4, 60)]), "scaleDown": rules([("Pods", 4, 30)])}
    h.store_scale_event(behavior, 1, 5, NOW - 100)
    h.store_scale_event(behavior, 5, 8, NOW)
    assert [(e.change, e.timestamp) for e in h.scale_up_events] == [(3, NOW)]
    h.store_scale_event(behavior, 8, 6, NOW)
    assert [(e.change, e.timestamp) for e in h.scale_down_events] == [(2, NOW)]

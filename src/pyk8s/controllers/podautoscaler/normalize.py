"""From the metrics' proposal to the replica count the HPA sets: stabilization over the recent
recommendations and the scaling limits (min/max, the rate without `behavior`, `behavior`'s policies), as
upstream's normalizeDesiredReplicas / normalizeDesiredReplicasWithBehaviors in horizontal.go.

The history (recommendations, scale events) is the controller's memory per HPA, as upstream keeps it in
the controller: it starts empty when the controller starts. Times are passed in, so the rules are
testable with upstream's own cases.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

__all__ = ["History", "Limited", "calculate_scale_down_limit", "calculate_scale_up_limit",
           "convert_desired_replicas_with_rules", "normalize", "normalize_with_behaviors"]

SCALE_UP_LIMIT_FACTOR = 2.0
SCALE_UP_LIMIT_MINIMUM = 4.0
INT32_MAX = 2**31 - 1
INT32_MIN = -(2**31)

MSG_READY = "recommended size matches current size"
MSG_DOWN_STABILIZED = "recent recommendations were higher than current one, applying the highest recent recommendation"
MSG_UP_STABILIZED = "recent recommendations were lower than current one, applying the lowest recent recommendation"
MSG_WITHIN = "the desired count is within the acceptable range"
MSG_TOO_MANY = "the desired replica count is more than the maximum replica count"
MSG_TOO_FEW = "the desired replica count is less than the minimum replica count"
MSG_UP_LIMIT = "the desired replica count is increasing faster than the maximum scale rate"
MSG_DOWN_LIMIT = "the desired replica count is decreasing faster than the maximum scale rate"


@dataclass
class Recommendation:
    replicas: int
    timestamp: float


@dataclass
class ScaleEvent:
    change: int
    timestamp: float
    outdated: bool = False


@dataclass
class History:
    """One HPA's recent recommendations and scale events."""

    recommendations: list[Recommendation] = field(default_factory=list)
    scale_up_events: list[ScaleEvent] = field(default_factory=list)
    scale_down_events: list[ScaleEvent] = field(default_factory=list)

    def record_initial(self, current_replicas: int, now: float) -> None:
        if not self.recommendations:
            self.recommendations.append(Recommendation(current_replicas, now))

    def store_scale_event(self, behavior: dict[str, Any] | None, prev: int, new: int, now: float) -> None:
        """Kept only with a behavior (the only user); an outdated event's slot is reused."""
        if behavior is None:
            return
        if new > prev:
            events, rules, change = self.scale_up_events, behavior.get("scaleUp") or {}, new - prev
        else:
            events, rules, change = self.scale_down_events, behavior.get("scaleDown") or {}, prev - new
        cutoff = now - _longest_policy_period(rules)
        slot = -1
        for i, e in enumerate(events):
            if e.timestamp < cutoff:
                e.outdated = True
            if e.outdated:
                slot = i
        event = ScaleEvent(change, now)
        if slot >= 0:
            events[slot] = event
        else:
            events.append(event)


@dataclass
class Limited:
    """A condition to set: (status True/False is decided by the caller), reason, message."""

    reason: str
    message: str


def _longest_policy_period(rules: dict[str, Any]) -> int:
    return max((int(p.get("periodSeconds") or 0) for p in rules.get("policies") or []), default=0)


def calculate_scale_up_limit(current_replicas: int) -> int:
    """Without behavior: at most double, or 4, per sync (upstream's guard against bogus usage reports)."""
    return int(max(SCALE_UP_LIMIT_FACTOR * current_replicas, SCALE_UP_LIMIT_MINIMUM))


def convert_desired_replicas_with_rules(current: int, desired: int, min_replicas: int, max_replicas: int
                                        ) -> tuple[int, str, str]:
    scale_up_limit = calculate_scale_up_limit(current)
    if max_replicas > scale_up_limit:
        maximum, reason, message = scale_up_limit, "ScaleUpLimit", MSG_UP_LIMIT
    else:
        maximum, reason, message = max_replicas, "TooManyReplicas", MSG_TOO_MANY
    if desired < min_replicas:
        return min_replicas, "TooFewReplicas", MSG_TOO_FEW
    if desired > maximum:
        return maximum, reason, message
    return desired, "DesiredWithinRange", MSG_WITHIN


def stabilize(history: History, desired: int, window: float, now: float) -> int:
    """Without behavior: the highest recommendation of the downscale stabilization window."""
    best = desired
    cutoff = now - window
    old = -1
    for i, rec in enumerate(history.recommendations):
        if rec.timestamp < cutoff:
            old = i
        elif rec.replicas > best:
            best = rec.replicas
    _record(history, old, desired, now)
    return best


def _record(history: History, old: int, desired: int, now: float) -> None:
    if old >= 0:
        history.recommendations[old] = Recommendation(desired, now)
    else:
        history.recommendations.append(Recommendation(desired, now))


Condition = tuple[str, str, str, str]  # (type, status, reason, message)


def normalize(history: History, current: int, desired: int, min_replicas: int, max_replicas: int,
              downscale_window: float, now: float) -> tuple[int, list[Condition]]:
    """normalizeDesiredReplicas: the count to set and the AbleToScale / ScalingLimited conditions."""
    stabilized = stabilize(history, desired, downscale_window, now)
    conds: list[Condition] = []
    if stabilized != desired:
        conds.append(("AbleToScale", "True", "ScaleDownStabilized", MSG_DOWN_STABILIZED))
    else:
        conds.append(("AbleToScale", "True", "ReadyForNewScale", MSG_READY))
    result, reason, message = convert_desired_replicas_with_rules(current, stabilized, min_replicas, max_replicas)
    conds.append(("ScalingLimited", "False" if result == stabilized else "True", reason, message))
    return result, conds


def stabilize_with_behaviors(history: History, current: int, desired: int, up_window: float, down_window: float,
                             now: float) -> tuple[int, str, str]:
    """The recommendation kept within the lowest of the scale-up window and the highest of the
    scale-down window; the unstabilized one is recorded."""
    up_cutoff, down_cutoff = now - up_window, now - down_window
    up_rec = down_rec = desired
    old = -1
    for i, rec in enumerate(history.recommendations):
        if rec.timestamp > up_cutoff:
            up_rec = min(rec.replicas, up_rec)
        if rec.timestamp > down_cutoff:
            down_rec = max(rec.replicas, down_rec)
        if rec.timestamp < up_cutoff and rec.timestamp < down_cutoff:
            old = i
    recommendation = min(max(current, up_rec), down_rec)
    _record(history, old, desired, now)
    if desired >= current:
        return recommendation, "ScaleUpStabilized", MSG_UP_STABILIZED
    return recommendation, "ScaleDownStabilized", MSG_DOWN_STABILIZED


def _change_in_period(period: int, events: list[ScaleEvent], now: float) -> int:
    cutoff = now - period
    return sum(e.change for e in events if e.timestamp > cutoff)


def calculate_scale_up_limit_with_rules(current: int, up_events: list[ScaleEvent], down_events: list[ScaleEvent],
                                        rules: dict[str, Any], now: float) -> int:
    policy = rules.get("selectPolicy") or "Max"
    if policy == "Disabled":
        return current
    pick, result = (min, INT32_MAX) if policy == "Min" else (max, INT32_MIN)
    for p in rules.get("policies") or []:
        period = int(p.get("periodSeconds") or 0)
        start = current - _change_in_period(period, up_events, now) + _change_in_period(period, down_events, now)
        value = int(p.get("value") or 0)
        if p.get("type") == "Pods":
            proposed = start + value
        elif p.get("type") == "Percent":
            # rounded up, or a small target could never grow
            proposed = math.ceil(start * (1 + value / 100))
        else:
            continue
        result = pick(result, proposed)
    return result



def calculate_scale_down_limit(current: int, up_events: list[ScaleEvent], down_events: list[ScaleEvent],
                               rules: dict[str, Any], now: float) -> int:
    policy = rules.get("selectPolicy") or "Max"
    if policy == "Disabled":
        return current
    # scaling down, the smallest change ('Min') is the highest count
    pick, result = (max, INT32_MIN) if policy == "Min" else (min, INT32_MAX)
    for p in rules.get("policies") or []:
        period = int(p.get("periodSeconds") or 0)
        start = current - _change_in_period(period, up_events, now) + _change_in_period(period, down_events, now)
        value = int(p.get("value") or 0)
        if p.get("type") == "Pods":
            proposed = start - value
        elif p.get("type") == "Percent":
            proposed = int(start * (1 - value / 100))  # Go's int32() truncates
        else:
            continue
        result = pick(result, proposed)
    return result


def convert_desired_replicas_with_behavior_rate(history: History, current: int, desired: int, min_replicas: int,
                                                max_replicas: int, scale_up: dict[str, Any],
                                                scale_down: dict[str, Any], now: float) -> tuple[int, str, str]:
    if desired > current:
        limit = calculate_scale_up_limit_with_rules(current, history.scale_up_events, history.scale_down_events,
                                                    scale_up, now)
        limit = max(limit, current)  # no further up until the scale-up events age out
        if max_replicas > limit:
            maximum, reason, message = limit, "ScaleUpLimit", MSG_UP_LIMIT
        else:
            maximum, reason, message = max_replicas, "TooManyReplicas", MSG_TOO_MANY
        if desired > maximum:
            return maximum, reason, message
    elif desired < current:
        limit = calculate_scale_down_limit(current, history.scale_up_events, history.scale_down_events,
                                           scale_down, now)
        limit = min(limit, current)
        if min_replicas < limit:
            minimum, reason, message = limit, "ScaleDownLimit", MSG_DOWN_LIMIT
        else:
            minimum, reason, message = min_replicas, "TooFewReplicas", MSG_TOO_FEW
        if desired < minimum:
            return minimum, reason, message
    return desired, "DesiredWithinRange", MSG_WITHIN


def normalize_with_behaviors(history: History, behavior: dict[str, Any], current: int, desired: int,
                             min_replicas: int, max_replicas: int, downscale_window: float, now: float
                             ) -> tuple[int, list[Condition]]:
    """normalizeDesiredReplicasWithBehaviors. behavior is the defaulted spec.behavior; a scale-down
    without its own stabilizationWindowSeconds uses the controller's downscale stabilization window."""
    scale_up = behavior.get("scaleUp") or {}
    scale_down = behavior.get("scaleDown") or {}
    up_window = float(scale_up.get("stabilizationWindowSeconds") or 0)
    down_raw = scale_down.get("stabilizationWindowSeconds")
    down_window = float(downscale_window if down_raw is None else down_raw)
    stabilized, reason, message = stabilize_with_behaviors(history, current, desired, up_window, down_window, now)
    conds: list[Condition] = []
    if stabilized != desired:
        conds.append(("AbleToScale", "True", reason, message))
    else:
        conds.append(("AbleToScale", "True", "ReadyForNewScale", MSG_READY))
    result, reason, message = convert_desired_replicas_with_behavior_rate(
        history, current, stabilized, min_replicas, max_replicas, scale_up, scale_down, now)
    conds.append(("ScalingLimited", "False" if result == stabilized else "True", reason, message))
    return result, conds

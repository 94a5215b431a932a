"""kube-scheduler's logic, pure: node cache, scheduling queue, framework and in-tree plugins.

Objects are wire-form dicts. Nothing here talks to the API; see ``Scheduler`` for the loop's
core (informer events in, decisions out) and ``schedule_one`` for a single placement.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .cache import Cache, NodeTable
from .config import build_profiles, default_profile, parse_config
from .framework import Code, CycleState, Diagnosis, Handle, Plugin, Profile, ScheduleResult, Status
from .messages import fit_error_message
from .podinfo import PodInfo, pod_info
from .queue import QueuedPodInfo, SchedulingQueue
from .scheduler import Decision, Scheduler

__all__ = [
    "Cache",
    "Code",
    "CycleState",
    "Decision",
    "Diagnosis",
    "Handle",
    "NodeTable",
    "Plugin",
    "PodInfo",
    "Profile",
    "QueuedPodInfo",
    "ScheduleResult",
    "Scheduler",
    "SchedulingQueue",
    "Status",
    "build_profiles",
    "default_profile",
    "fit_error_message",
    "parse_config",
    "pod_info",
    "schedule_one",
]


def schedule_one(pod: Mapping[str, Any], snapshot: Cache, profile: Profile | None = None) -> ScheduleResult:
    """Place one pod on the nodes of ``snapshot`` with ``profile`` (default: the v1.33 default profile)."""
    prof = profile or default_profile(Handle(cache=snapshot))
    return prof.schedule_one(pod, snapshot)

"""KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1) to profiles, with v1.33's defaults.

Defaulting and merging follow upstream: the default plugins are enabled through
``multiPoint`` (with their score weights); a profile's ``plugins.<point>`` are merged with them
(``disabled`` removes defaults, ``"*"`` removes all, an enabled default is reconfigured in
place, others are appended); then multiPoint is expanded per extension point, specific
settings first. ``pluginConfig`` args are merged over each plugin's default args.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .extender import ExtenderConfig, parse_extenders
from .framework import Handle, Profile, implements

__all__ = [
    "API_VERSION",
    "DEFAULT_SCHEDULER_NAME",
    "EXTENSION_POINTS",
    "DEFAULT_PLUGINS",
    "DEFAULT_PLUGIN_ARGS",
    "ProfileConfig",
    "SchedulerConfig",
    "parse_config",
    "build_profiles",
    "default_profile",
]

API_VERSION = "kubescheduler.config.k8s.io/v1"
DEFAULT_SCHEDULER_NAME = "default-scheduler"

# config name -> plugin method implementing it
EXTENSION_POINTS: dict[str, str] = {
    "preEnqueue": "pre_enqueue",
    "queueSort": "sort_key",
    "preFilter": "pre_filter",
    "filter": "filter",
    "postFilter": "post_filter",
    "preScore": "pre_score",
    "score": "score",
    "reserve": "reserve",
    "permit": "permit",
    "preBind": "pre_bind",
    "bind": "bind",
    "postBind": "post_bind",
}

# v1.33 getDefaultPlugins, with DynamicResources before DefaultPreemption as its applyFeatureGates puts it
# (resource.k8s.io is served here, so the DynamicResourceAllocation gate counts as on), plus GPUShare.
DEFAULT_PLUGINS: tuple[tuple[str, int], ...] = (
    ("SchedulingGates", 0),
    ("PrioritySort", 0),
    ("NodeUnschedulable", 0),
    ("NodeName", 0),
    ("TaintToleration", 3),
    ("NodeAffinity", 2),
    ("NodePorts", 0),
    ("NodeResourcesFit", 1),
    ("VolumeRestrictions", 0),
    ("NodeVolumeLimits", 0),
    ("VolumeBinding", 0),
    ("VolumeZone", 0),
    ("PodTopologySpread", 2),
    ("InterPodAffinity", 2),
    ("DynamicResources", 0),
    ("DefaultPreemption", 0),
    ("NodeResourcesBalancedAllocation", 1),
    ("ImageLocality", 1),
    # Not upstream's: gpushare's extender built in; it skips pods without aliyun.com/gpu-mem.
    ("GPUShare", 5),
    ("DefaultBinder", 0),
)

_CPU_MEM = [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]
DEFAULT_PLUGIN_ARGS: dict[str, dict[str, Any]] = {
    "DefaultPreemption": {"minCandidateNodesPercentage": 10, "minCandidateNodesAbsolute": 100},
    "InterPodAffinity": {"hardPodAffinityWeight": 1, "ignorePreferredTermsOfExistingPods": False},
    "NodeAffinity": {},
    "NodeResourcesBalancedAllocation": {"resources": _CPU_MEM},
    "NodeResourcesFit": {"scoringStrategy": {"type": "LeastAllocated", "resources": _CPU_MEM}},
    "PodTopologySpread": {"defaultingType": "System"},
    "VolumeBinding": {"bindTimeoutSeconds": 600},
}


@dataclass(slots=True)
class ProfileConfig:
    scheduler_name: str = DEFAULT_SCHEDULER_NAME
    # extension point -> list of {"name", "weight"?}; "multiPoint" included; "disabled" kept per point
    enabled: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    disabled: dict[str, list[str]] = field(default_factory=dict)
    plugin_args: dict[str, dict[str, Any]] = field(default_factory=dict)
    percentage_of_nodes_to_score: int | None = None


@dataclass(slots=True)
class SchedulerConfig:
    profiles: list[ProfileConfig]
    percentage_of_nodes_to_score: int = 0
    pod_initial_backoff_seconds: float = 1.0
    pod_max_backoff_seconds: float = 10.0
    extenders: list[ExtenderConfig] = field(default_factory=list)


def _merge_plugin_set(default_enabled: Sequence[Mapping[str, Any]], default_disabled: Sequence[str],
                      custom: Mapping[str, Any] | None) -> tuple[list[dict[str, Any]], list[str]]:
    custom = custom or {}
    disabled = [d["name"] for d in custom.get("disabled") or ()] + list(default_disabled)
    custom_enabled = [dict(p) for p in custom.get("enabled") or ()]
    by_name = {p["name"]: i for i, p in enumerate(custom_enabled)}
    replaced: set[int] = set()
    enabled: list[dict[str, Any]] = []
    if "*" not in disabled:
        for p in default_enabled:
            if p["name"] in disabled:
                continue
            i = by_name.get(p["name"])
            if i is not None:
                # A re-configured default keeps its position.
                enabled.append(custom_enabled[i])
                replaced.add(i)
            else:
                enabled.append(dict(p))
    enabled += [p for i, p in enumerate(custom_enabled) if i not in replaced]
    return enabled, disabled


def _deep_merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in over.items():
        if isinstance(v, Mapping) and isinstance(out.get(k), Mapping):
            out[k] = _deep_merge(out[k], v)
        else:
            out[k] = v
    return out


def _parse_profile(raw: Mapping[str, Any]) -> ProfileConfig:
    plugins = raw.get("plugins") or {}
    pc = ProfileConfig(scheduler_name=raw.get("schedulerName") or DEFAULT_SCHEDULER_NAME,
                       percentage_of_nodes_to_score=raw.get("percentageOfNodesToScore"))
    defaults = [{"name": n, **({"weight": w} if w else {})} for n, w in DEFAULT_PLUGINS]
    pc.enabled["multiPoint"], pc.disabled["multiPoint"] = _merge_plugin_set(defaults, [], plugins.get("multiPoint"))
    for point in EXTENSION_POINTS:
        pc.enabled[point], pc.disabled[point] = _merge_plugin_set([], [], plugins.get(point))
    args = {k: dict(v) for k, v in DEFAULT_PLUGIN_ARGS.items()}
    for entry in raw.get("pluginConfig") or ():
        name = entry["name"]
        user = entry.get("args") or {}
        user = {k: v for k, v in user.items() if k not in ("apiVersion", "kind")}
        args[name] = _deep_merge(args.get(name, {}), user)
    pc.plugin_args = args
    return pc


def parse_config(cfg: Mapping[str, Any] | None = None) -> SchedulerConfig:
    """Parse and default a KubeSchedulerConfiguration dict (None: all defaults)."""
    cfg = cfg or {}
    api = cfg.get("apiVersion")
    if api is not None and api != API_VERSION:
        raise ValueError(f"unsupported apiVersion {api!r}, want {API_VERSION}")
    profiles = [_parse_profile(p) for p in cfg.get("profiles") or [{}]]
    names = [p.scheduler_name for p in profiles]
    if len(set(names)) != len(names):
        raise ValueError("profiles: duplicate schedulerName")
    extenders = parse_extenders(cfg.get("extenders"))
    ignored = [name for e in extenders for name, ign in e.managed.items() if ign]
    if ignored:  # as upstream: an extender's ignoredByScheduler resources are not NodeResourcesFit's to check
        for pc in profiles:
            fit = pc.plugin_args.setdefault("NodeResourcesFit", {})
            fit["ignoredResources"] = [*(fit.get("ignoredResources") or ()), *ignored]
    pct = int(cfg.get("percentageOfNodesToScore") or 0)
    if not 0 <= pct <= 100:
        raise ValueError("percentageOfNodesToScore: must be in the range [0, 100]")
    return SchedulerConfig(
        profiles=profiles,
        percentage_of_nodes_to_score=pct,
        pod_initial_backoff_seconds=float(cfg.get("podInitialBackoffSeconds") or 1),
        pod_max_backoff_seconds=float(cfg.get("podMaxBackoffSeconds") or 10),
        extenders=extenders,
    )


def _expand(pc: ProfileConfig, instances: Mapping[str, Any]) -> tuple[dict[str, list[str]], dict[str, int]]:
    """Upstream expandMultiPointPlugins: per extension point, specific settings then multiPoint."""
    from .plugins import NOT_IMPLEMENTED

    points: dict[str, list[str]] = {}
    weights: dict[str, int] = {}
    multi = [p for p in pc.enabled["multiPoint"] if p["name"] not in NOT_IMPLEMENTED]
    for p in multi:
        if p["name"] in instances and implements(instances[p["name"]], "score"):
            weights[p["name"]] = int(p.get("weight") or 1)
    for point, method in EXTENSION_POINTS.items():
        specific = [p["name"] for p in pc.enabled[point] if p["name"] not in NOT_IMPLEMENTED]
        for name in specific:
            if not implements(instances[name], method):
                raise ValueError(f"plugin {name!r} does not extend {point} plugin")
        disabled = set(pc.disabled[point])
        if "*" in disabled:
            points[point] = specific
            continue
        overrides: list[str] = []
        from_multi: list[str] = []
        for p in multi:
            name = p["name"]
            if not implements(instances[name], method) or name in disabled:
                continue
            if name in specific:
                overrides.append(name)
                continue
            if name in from_multi:
                raise ValueError(f"plugin {name!r} already registered as {point!r}")
            from_multi.append(name)
        first = [n for n in specific if n in overrides]
        rest = [n for n in specific if n not in overrides]
        points[point] = first + from_multi + rest
    for p in pc.enabled["score"]:
        if p["name"] not in NOT_IMPLEMENTED:
            weights[p["name"]] = int(p.get("weight") or 1)
    return points, weights


def build_profiles(cfg: SchedulerConfig | Mapping[str, Any] | None, handle: Handle) -> dict[str, Profile]:
    """Instantiate the plugins of every profile (one instance per plugin per profile)."""
    from .plugins import NOT_IMPLEMENTED, REGISTRY

    sc = cfg if isinstance(cfg, SchedulerConfig) else parse_config(cfg)
    handle.percentage_of_nodes_to_score = sc.percentage_of_nodes_to_score
    out: dict[str, Profile] = {}
    sort_plugins: set[tuple[str, ...]] = set()
    for pc in sc.profiles:
        wanted: list[str] = []
        for point in ["multiPoint", *EXTENSION_POINTS]:
            for p in pc.enabled[point]:
                if p["name"] not in wanted:
                    wanted.append(p["name"])
        instances = {}
        for name in wanted:
            if name in NOT_IMPLEMENTED:
                continue
            cls = REGISTRY.get(name)
            if cls is None:
                raise ValueError(f"plugin {name!r} does not exist")
            instances[name] = cls(pc.plugin_args.get(name, {}), handle)
        points, weights = _expand(pc, instances)
        used = {n for names in points.values() for n in names}
        instances = {n: pl for n, pl in instances.items() if n in used}
        if len(points["queueSort"]) != 1:
            raise ValueError(f"profile {pc.scheduler_name!r}: exactly one queueSort plugin required")
        if not points["bind"]:
            raise ValueError(f"profile {pc.scheduler_name!r}: at least one bind plugin required")
        sort_plugins.add(tuple(points["queueSort"]))
        out[pc.scheduler_name] = Profile(pc.scheduler_name, instances, points, weights, handle,
                                         pc.percentage_of_nodes_to_score, pc)
    if len(sort_plugins) > 1:
        raise ValueError("all profiles must use the same queueSort plugin")
    return out


def default_profile(handle: Handle | None = None) -> Profile:
    """The default-scheduler profile with v1.33's default plugins and args."""
    h = handle or Handle()
    return build_profiles(None, h)[DEFAULT_SCHEDULER_NAME]

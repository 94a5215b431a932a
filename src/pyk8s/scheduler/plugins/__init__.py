"""In-tree scheduler plugins, one module each, named as upstream."""

from __future__ import annotations

from ..framework import Plugin
from .default_binder import DefaultBinder
from .default_preemption import DefaultPreemption
from .dynamic_resources import DynamicResources
from .gpu_share import GPUShare
from .image_locality import ImageLocality
from .inter_pod_affinity import InterPodAffinity
from .node_affinity import NodeAffinity
from .node_name import NodeName
from .node_ports import NodePorts
from .node_resources_balanced_allocation import NodeResourcesBalancedAllocation
from .node_resources_fit import NodeResourcesFit
from .node_unschedulable import NodeUnschedulable
from .pod_topology_spread import PodTopologySpread
from .queue_sort import PrioritySort
from .scheduling_gates import SchedulingGates
from .taint_toleration import TaintToleration
from .volume_binding import VolumeBinding
from .volume_restrictions import VolumeRestrictions
from .volume_zone import VolumeZone

REGISTRY: dict[str, type[Plugin]] = {
    cls.name: cls
    for cls in (
        SchedulingGates,
        PrioritySort,
        NodeUnschedulable,
        NodeName,
        TaintToleration,
        NodeAffinity,
        NodePorts,
        NodeResourcesFit,
        VolumeRestrictions,
        VolumeBinding,
        VolumeZone,
        PodTopologySpread,
        InterPodAffinity,
        DynamicResources,
        DefaultPreemption,
        NodeResourcesBalancedAllocation,
        ImageLocality,
        GPUShare,
        DefaultBinder,
    )
}

# Upstream default plugins this package does not implement yet. They only act on pods with
# volumes of particular kinds, so configurations naming them are accepted and the names are dropped.
NOT_IMPLEMENTED = frozenset({"NodeVolumeLimits"})

__all__ = ["REGISTRY", "NOT_IMPLEMENTED"] + [c.__name__ for c in REGISTRY.values()]

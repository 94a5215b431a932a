"""A whole cluster of several nodes on one machine, each node in its own network namespace (`pyk8s dev cluster`)."""

from .cluster import DevCluster, Options
from .topology import NodeNet, Topology, TopologyError, free_subnet, in_netns

__all__ = ["DevCluster", "NodeNet", "Options", "Topology", "TopologyError", "free_subnet", "in_netns"]

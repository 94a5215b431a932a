"""Routes between nodes' pod networks, as flannel does with its Kubernetes subnet manager.

Each node publishes how to reach its pods in its Node's flannel annotations (public IP,
backend type, VXLAN VTEP MAC) and programs a route to every other annotated node's
podCIDR: host-gw (a plain route via the node's address) when that node shares a link
with this one, VXLAN (`flannel.1`, UDP 8472) when it does not. See docs/networking.md,
"Several nodes".
"""

from .daemon import BACKENDS, Flannel, pod_mtu
from .plan import PeerRoute, plan_routes

__all__ = ["BACKENDS", "Flannel", "PeerRoute", "plan_routes", "pod_mtu"]

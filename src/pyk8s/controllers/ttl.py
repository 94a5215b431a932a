"""TTL controller: annotates every Node with `node.alpha.kubernetes.io/ttl`, the seconds a kubelet may
cache the Secrets and ConfigMaps its pods use, chosen from the cluster's size as upstream does.

The size bands overlap so that a cluster hovering around a boundary does not flip the value back and
forth: the band moves up only when the node count passes its upper size, and down only when the count
falls below its lower size.
"""

from __future__ import annotations

from typing import Any

from ..api.errors import StatusError
from .base import GVRS, Controller

TTL_ANNOTATION = "node.alpha.kubernetes.io/ttl"

# (lowest node count of the band, highest node count of the band, ttl seconds); upstream's table
BANDS: tuple[tuple[int, int, int], ...] = (
    (0, 100, 0),
    (90, 500, 15),
    (450, 1000, 30),
    (900, 2000, 60),
    (1800, 10000, 300),
    (9000, 2**31 - 1, 600),
)


def next_band(band: int, node_count: int) -> int:
    """The band after the node count changed, moving one step at a time as nodes come and go."""
    while band + 1 < len(BANDS) and node_count > BANDS[band][1]:
        band += 1
    while band > 0 and node_count < BANDS[band][0]:
        band -= 1
    return band


class TTLController(Controller):
    name = "ttl"

    def setup(self) -> None:
        self.band = 0
        self.node_count = 0
        self.nodes = self.ctx.informer("nodes")
        self.nodes.add_handlers(on_add=self._added, on_update=lambda o, n: self._changed(n),
                                on_delete=self._deleted)

    @property
    def desired_ttl(self) -> int:
        return BANDS[self.band][2]

    def _added(self, node: dict[str, Any]) -> None:
        self.node_count += 1
        band = next_band(self.band, self.node_count)
        if band != self.band:
            self.band = band
            self._enqueue_all()  # every node's annotation changes with the band
        self.queue.add(node["metadata"]["name"])

    def _changed(self, node: dict[str, Any]) -> None:
        if _ttl_of(node) != self.desired_ttl:
            self.queue.add(node["metadata"]["name"])

    def _deleted(self, node: dict[str, Any]) -> None:
        self.node_count -= 1
        band = next_band(self.band, self.node_count)
        if band != self.band:
            self.band = band
            self._enqueue_all()

    def _enqueue_all(self) -> None:
        for n in self.nodes.list():
            self.queue.add(n["metadata"]["name"])

    async def sync(self, name: str) -> None:
        node = self.nodes.get(name)
        if node is None or _ttl_of(node) == self.desired_ttl:
            return
        patch = {"metadata": {"annotations": {TTL_ANNOTATION: str(self.desired_ttl)}}}
        try:
            await self.client.patch(GVRS["nodes"], name, patch, patch_type="strategic")
        except StatusError as e:
            if e.code != 404:
                raise


def _ttl_of(node: dict[str, Any]) -> int | None:
    raw = (node["metadata"].get("annotations") or {}).get(TTL_ANNOTATION)
    try:
        return int(raw) if raw is not None else None
    except ValueError:
        return None

"""Wires APIService aggregation into an API server process (docs/aggregation.md)."""

from __future__ import annotations

from typing import Any

from .aggregated_discovery import RemoteDiscovery
from .aggregator import Aggregator
from .apiservice_availability import AvailabilityController

__all__ = ["install"]


def install(server: Any) -> None:
    """The proxy and discovery merge in every API process; APIService status written by the main one."""
    server.aggregator = Aggregator(server)
    availability = AvailabilityController(server, write_status=not server.config.api_worker)
    server.discovery.remote = RemoteDiscovery(server.aggregator, availability)
    availability.start()
    server._tasks.append(availability.task)

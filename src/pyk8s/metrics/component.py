"""The registry of one component instance: what client-go gives every component (rest_client_*,
workqueue_*) plus process_* and python_gc_*, and the component's own families on top.

Components that run inside `pyk8s server` share the server's registry (one /metrics for the
all-in-one process, as k3s serves its embedded components' metrics); a component with a
process of its own serves its registry on its own port (metrics/serve.py)."""

from __future__ import annotations

from typing import Any

from prometheus_client import CollectorRegistry

from .core import component_registry
from .rest_client import RestClientMetrics
from .workqueue import WorkqueueMetrics

__all__ = ["ComponentMetrics", "in_process"]


class ComponentMetrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else component_registry()
        self.workqueue = WorkqueueMetrics()
        self.rest_client = RestClientMetrics()
        self.registry.register(self.workqueue)  # type: ignore[arg-type]
        self.registry.register(self.rest_client)  # type: ignore[arg-type]
        self._own: set[str] = set()

    def add(self, name: str, collector: Any) -> None:
        """A component's own families (once per name: in-process components share the registry)."""
        if name not in self._own:
            self._own.add(name)
            self.registry.register(collector)


def in_process(server: Any) -> ComponentMetrics | None:
    """The metrics the components inside `pyk8s server` share, on the server's /metrics; None
    with --disable metrics."""
    m = getattr(server, "metrics", None)
    if m is None:
        return None
    cm = getattr(m, "components", None)
    if cm is None:
        cm = m.components = ComponentMetrics(m.registry)
    return cm

"""Prometheus metrics for every component (docs/metrics.md).

Each component instance keeps its own CollectorRegistry (tests run several in one process).
Hot paths count into plain dicts and Hist objects that a collector renders on scrape, so a
request pays a dict update and a bisect, never a label lookup in the client library."""

from .core import Hist, component_registry, exposition, histogram_family

__all__ = ["Hist", "component_registry", "exposition", "histogram_family"]

"""The client library every pyk8s component uses to talk to the API (a client-go in Python)."""

from .events import EventRecorder, object_reference
from .informer import Informer, InformerFactory, strip_managed_fields
from .leaderelection import LeaderElector
from .rest import GVR, Client, obj_key, resource_path
from .workqueue import RateLimitingQueue, run_workers

__all__ = [
    "Client",
    "GVR",
    "EventRecorder",
    "Informer",
    "InformerFactory",
    "LeaderElector",
    "RateLimitingQueue",
    "obj_key",
    "object_reference",
    "resource_path",
    "run_workers",
    "strip_managed_fields",
]

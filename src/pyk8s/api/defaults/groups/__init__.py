"""Defaulting and create-time status for the built-in kinds outside the core group, as
upstream's pkg/apis/<group>/v1/defaults.go and the strategies' PrepareForCreate.

`register()` runs at import and fills pyk8s.api.defaults' DEFAULTERS and
STATUS_ON_CREATE; that package imports this one after defining them. The API server runs
DEFAULTERS, then STATUS_ON_CREATE (after metadata.uid is set), then validation, so the
Job selector generation (`prepare_job_for_create`) lives in STATUS_ON_CREATE.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import apps, batch, others, resource
from .apps import prepare_daemon_set_for_update
from .batch import prepare_job_for_create

__all__ = ["register", "prepare_job_for_create", "prepare_daemon_set_for_update", "GROUP_DEFAULTERS",
           "GROUP_STATUS_ON_CREATE"]

GROUP_DEFAULTERS: dict[tuple[str, str], Callable[[dict[str, Any]], None]] = {
    **apps.DEFAULTERS, **batch.DEFAULTERS, **others.DEFAULTERS, **resource.DEFAULTERS,
}
GROUP_STATUS_ON_CREATE: dict[tuple[str, str], Callable[[dict[str, Any]], None]] = {
    **apps.STATUS_ON_CREATE, **batch.STATUS_ON_CREATE, **others.STATUS_ON_CREATE,
}


def register() -> None:
    """Install into pyk8s.api.defaults' tables (idempotent)."""
    from pyk8s.api import defaults as _d

    _d.DEFAULTERS.update(GROUP_DEFAULTERS)
    _d.STATUS_ON_CREATE.update(GROUP_STATUS_ON_CREATE)


register()

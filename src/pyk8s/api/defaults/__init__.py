"""Defaulting tables keyed by (group, kind), as upstream's SetObjectDefaults_* functions.

DEFAULTERS[gk](obj) mutates a decoded wire-form object on every create and update (upstream
defaults at decode time). STATUS_ON_CREATE[gk](obj) sets the status a create starts with (what
upstream's strategies' PrepareForCreate do: Pod phase Pending and qosClass, Namespace Active, ...).
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["DEFAULTERS", "STATUS_ON_CREATE"]

GroupKind = tuple[str, str]

DEFAULTERS: dict[GroupKind, Callable[[dict], None]] = {}
STATUS_ON_CREATE: dict[GroupKind, Callable[[dict], None]] = {}

from . import core  # noqa: E402,F401  (registers the core/v1 kinds)

try:
    from . import groups  # noqa: E402,F401  (registers the other API groups; optional)
except ImportError as _e:  # pragma: no cover - absent, or broken: keep the core kinds working
    import importlib.util as _ilu
    import logging as _logging

    if _ilu.find_spec(f"{__name__}.groups") is not None:
        _logging.getLogger(__name__).error("could not import %s.groups: %s", __name__, _e)

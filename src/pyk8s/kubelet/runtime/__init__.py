"""The kubelet's container runtime: an async interface and its runc implementation.

Kept import-light on purpose: the per-container shim (`python -m
pyk8s.kubelet.runtime.shim`) imports this package on every container start.
Use `pyk8s.kubelet.runtime.interface` for the types and `new_runtime` to get the
runc runtime (or the loudly-labelled process fallback where runc cannot run).
"""

from __future__ import annotations

from typing import Any


def new_runtime(data_dir: str, **kw: Any) -> Any:
    """The default runtime for this machine: runc, or the process fallback when runc is unusable."""
    from .choose import select_runtime

    return select_runtime(data_dir, **kw)

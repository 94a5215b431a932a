"""Choosing the runtime: runc where it can run, the process fallback (loudly) where it cannot."""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
from typing import Any

from .interface import ContainerRuntime

log = logging.getLogger(__name__)


def runc_unusable_reason(runc: str = "runc") -> str | None:
    """Why runc cannot run containers here, or None when it can."""
    if os.geteuid() != 0:
        return "not running as root"
    path = shutil.which(runc)
    if not path:
        return f"{runc} not found in PATH"
    try:
        subprocess.run([path, "--version"], capture_output=True, check=True, timeout=10)
    except (OSError, subprocess.SubprocessError) as e:
        return f"{path} does not run: {e}"
    if not os.path.isdir("/sys/fs/cgroup") or not os.access("/sys/fs/cgroup", os.W_OK):
        return "/sys/fs/cgroup is not writable"
    return None


def select_runtime(data_dir: str, *, force: str = "", **kw: Any) -> ContainerRuntime:
    """`force` = "runc" or "process" skips detection."""
    reason = None if force == "runc" else runc_unusable_reason(kw.get("runc", "runc"))
    if force != "process" and reason is None:
        from .runc import RuncRuntime

        return RuncRuntime(data_dir, **kw)
    from .process import ProcessRuntime

    log.warning("!" * 78)
    log.warning("pyk8s: runc is unusable here (%s).", reason or "forced")
    log.warning("Falling back to the PROCESS runtime: plain chrooted processes in user+mount namespaces,")
    log.warning("WITHOUT cgroup limits, pod networking, seccomp or capabilities. Not for real workloads.")
    log.warning("!" * 78)
    return ProcessRuntime(data_dir, **{k: v for k, v in kw.items() if k in ("image_store", "log_max_size")})

"""The NVIDIA driver's files a GPU container needs, found on the host as the NVIDIA container
toolkit finds them: device nodes under /dev, user-space libraries through `ldconfig -p` (and the
usual library directories when ldconfig knows none), and the utilities on the host's PATH.

Each is given at the same path inside the container, read-only, where the toolkit mounts it;
a library is mounted by its soname path (e.g. /usr/lib/x86_64-linux-gnu/libcuda.so.1) from the
file it resolves to, so the container's loader finds it under the name programs link against.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess

__all__ = ["DRIVER_LIBRARIES", "DRIVER_BINARIES", "control_devices", "gpu_device", "driver_mounts"]

# The toolkit's "utility" and "compute" capabilities (what nvidia-smi and CUDA programs load).
DRIVER_LIBRARIES = (
    "libnvidia-ml.so.1", "libcuda.so.1", "libcudadebugger.so.1", "libnvidia-ptxjitcompiler.so.1",
    "libnvidia-nvvm.so.4", "libnvidia-cfg.so.1", "libnvidia-opencl.so.1", "libnvidia-gpucomp.so",
    "libnvidia-allocator.so.1", "libnvidia-pkcs11.so",
)
DRIVER_BINARIES = ("nvidia-smi", "nvidia-debugdump", "nvidia-persistenced", "nvidia-cuda-mps-control",
                   "nvidia-cuda-mps-server")
_LIB_DIRS = ("/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib", "/usr/local/nvidia/lib64",
             "/usr/lib/aarch64-linux-gnu")
_CONTROL = ("/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidia-modeset")


def _is_char_device(path: str) -> bool:
    try:
        return stat.S_ISCHR(os.stat(path).st_mode)
    except OSError:
        return False


def control_devices(dev: str = "/dev") -> list[str]:
    """The driver's shared device nodes present on this host."""
    return [p for p in (os.path.join(dev, os.path.basename(c)) for c in _CONTROL) if _is_char_device(p)]


def gpu_device(minor: int, dev: str = "/dev") -> str | None:
    """/dev/nvidia<minor> when it is a character device here (a simulated GPU has none)."""
    p = os.path.join(dev, f"nvidia{minor}")
    return p if _is_char_device(p) else None


def _ldconfig_paths() -> dict[str, str]:
    """soname -> path from the loader cache (64-bit entries first, as the toolkit prefers)."""
    ldconfig = shutil.which("ldconfig") or ("/sbin/ldconfig" if os.path.exists("/sbin/ldconfig") else None)
    if ldconfig is None:
        return {}
    try:
        out = subprocess.run([ldconfig, "-p"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return {}
    found: dict[str, str] = {}
    other: dict[str, str] = {}  # 32-bit entries, used only where no 64-bit one exists
    for line in out.splitlines():
        name, sep, path = line.strip().partition(" => ")
        if not sep:
            continue
        soname, _, flags = name.partition(" (")
        if soname in DRIVER_LIBRARIES:
            (found if "64" in flags else other).setdefault(soname, path.strip())
    return {**other, **found}


def driver_mounts() -> list[tuple[str, str]]:
    """(container path, host path) of the driver's libraries and utilities on this host; [] without a driver."""
    libs = _ldconfig_paths()
    for soname in DRIVER_LIBRARIES:
        if soname in libs:
            continue
        for d in _LIB_DIRS:
            p = os.path.join(d, soname)
            if os.path.exists(p):
                libs[soname] = p
                break
    out = [(path, os.path.realpath(path)) for _, path in sorted(libs.items())]
    for b in DRIVER_BINARIES:
        exe = shutil.which(b)
        if exe:
            out.append((os.path.join("/usr/bin", b), os.path.realpath(exe)))
    return out

"""GPU discovery: real NVIDIA GPUs through NVML, or declared simulated ones.

Real GPUs come from NVML (the `nvidia-ml-py` package, imported lazily so a machine
without it, or without a driver, simply has no real GPUs). Simulated GPUs are declared
as `COUNTxMEMORY` (`--fake-gpus 2x16Gi`) and get deterministic UUIDs
`GPU-fake-<node>-<i>`, so a node's devices keep their IDs across restarts as real
UUIDs do (the kubelet's checkpoint and gpushare's annotations name them).

A declared fake spec wins over NVML: whoever declares simulated GPUs asked for exactly
those (a test or a simulated node), even on a machine that has real ones.
"""

from __future__ import annotations

import logging
import os
import re
import socket
from dataclasses import dataclass
from typing import Any

from ..api.quantity import QuantityError, parse_quantity

__all__ = ["GPU", "discover", "discover_nvml", "fake_gpus", "parse_fake_spec"]

log = logging.getLogger(__name__)

# A node has at most this many simulated GPUs (real nodes have 8 or 16); a bound keeps
# a typo such as "20000x16Gi" from making millions of devices.
MAX_FAKE_GPUS = 256
_SPEC = re.compile(r"^\s*(\d+)\s*[xX]\s*(\S+)\s*$")


@dataclass(frozen=True)
class GPU:
    """One GPU: its NVML index, UUID, product name, memory, and /dev/nvidia<minor>."""

    index: int
    uuid: str
    name: str
    memory_bytes: int
    minor: int
    healthy: bool = True


def parse_fake_spec(spec: str) -> tuple[int, int]:
    """`2x16Gi` -> (2, 16 GiB in bytes); ValueError says what is wrong."""
    m = _SPEC.match(spec)
    if not m:
        raise ValueError(f'invalid fake GPU spec "{spec}": want COUNTxMEMORY, e.g. 2x16Gi')
    count = int(m.group(1))
    if not 1 <= count <= MAX_FAKE_GPUS:
        raise ValueError(f'invalid fake GPU spec "{spec}": count must be between 1 and {MAX_FAKE_GPUS}')
    try:
        q = parse_quantity(m.group(2))
    except QuantityError as e:
        raise ValueError(f'invalid fake GPU spec "{spec}": memory: {e}') from None
    memory = q.to_int()
    if memory <= 0 or q.to_milli() % 1000:
        raise ValueError(f'invalid fake GPU spec "{spec}": memory must be a positive whole number of bytes')
    return count, memory


def fake_gpus(spec: str, node: str) -> list[GPU]:
    """The simulated GPUs `spec` declares for `node`."""
    count, memory = parse_fake_spec(spec)
    return [
        GPU(index=i, uuid=f"GPU-fake-{node}-{i}", name="Simulated GPU", memory_bytes=memory, minor=i)
        for i in range(count)
    ]


def _text(v: Any) -> str:
    # nvidia-ml-py returns str since 11.x; older bindings returned bytes.
    return v.decode() if isinstance(v, bytes) else str(v)


def discover_nvml() -> list[GPU]:
    """The GPUs NVML reports; [] when the library, the driver or the package is missing."""
    try:
        import pynvml
    except ImportError:
        return []
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as e:  # LibraryNotFound, DriverNotLoaded, NoPermission, ...
        log.info("NVML unavailable, no real GPUs: %s", e)
        return []
    try:
        try:
            count = int(pynvml.nvmlDeviceGetCount())
        except pynvml.NVMLError as e:
            log.warning("NVML cannot count GPUs: %s", e)
            return []
        gpus: list[GPU] = []
        for i in range(count):
            try:
                handle = pynvml.nvmlDeviceGetHandleByIndex(i)
                uuid = _text(pynvml.nvmlDeviceGetUUID(handle))
            except pynvml.NVMLError as e:
                # Without its UUID a GPU cannot be named to a container: leave it out.
                log.warning("GPU %d unusable: %s", i, e)
                continue
            try:
                name = _text(pynvml.nvmlDeviceGetName(handle))
                memory = int(pynvml.nvmlDeviceGetMemoryInfo(handle).total)
                minor = int(pynvml.nvmlDeviceGetMinorNumber(handle))
            except pynvml.NVMLError as e:
                # A GPU that answers its UUID but not its properties (fallen off the
                # bus, Xid errors) is listed unhealthy, as the NVIDIA plugin marks it.
                log.warning("GPU %d (%s) unhealthy: %s", i, uuid, e)
                gpus.append(GPU(index=i, uuid=uuid, name="", memory_bytes=0, minor=i, healthy=False))
                continue
            gpus.append(GPU(index=i, uuid=uuid, name=name, memory_bytes=memory, minor=minor))
        return gpus
    finally:
        try:
            pynvml.nvmlShutdown()
        except pynvml.NVMLError:
            pass


def default_node_name() -> str:
    """The node name a plugin runs for: $NODE_NAME (the downward API), else the host name."""
    return os.environ.get("NODE_NAME") or socket.gethostname().lower()


def discover(fake: str | None = None, *, node: str | None = None) -> list[GPU]:
    """The node's GPUs: the declared simulated ones when `fake` is given, else NVML's."""
    if fake:
        return fake_gpus(fake, node or default_node_name())
    return discover_nvml()

"""The device manager's checkpoint: `<root-dir>/device-plugins/kubelet_internal_checkpoint`.

Upstream's shape (checkpoint v2), so the file reads the same to a person who knows upstream's:

    {"Data": {"PodDeviceEntries": [{"PodUID", "ContainerName", "ResourceName",
                                    "DeviceIDs": {"<NUMA node or -1>": [ids]}, "AllocResp": base64}],
              "RegisteredDevices": {"<resource>": [ids]}},
     "Checksum": <uint32>}

The checksum is ours (FNV-1a over the canonical JSON of Data), not upstream's hash of Go's
printed structs: a file written by a real kubelet reads as corrupted here and is ignored, as
upstream ignores a corrupted one (the kubelet goes on with no assignments). Written 0600
through a temp file and rename, so a crash never leaves half a checkpoint.
"""

from __future__ import annotations

import base64
import json
import logging
from dataclasses import dataclass, field

from ..datadir import write_atomic

log = logging.getLogger(__name__)

CHECKPOINT_NAME = "kubelet_internal_checkpoint"
NO_NUMA = "-1"  # upstream's key for devices without topology


class CorruptCheckpoint(ValueError):
    """The checksum does not match the data (upstream's ErrCorruptCheckpoint)."""


@dataclass
class PodDeviceEntry:
    pod_uid: str
    container_name: str
    resource_name: str
    device_ids: list[str]
    alloc_resp: bytes  # a serialized v1beta1.ContainerAllocateResponse


@dataclass
class Checkpoint:
    entries: list[PodDeviceEntry] = field(default_factory=list)
    registered: dict[str, list[str]] = field(default_factory=dict)


def fnv1a32(data: bytes) -> int:
    h = 0x811C9DC5
    for b in data:
        h = ((h ^ b) * 0x01000193) & 0xFFFFFFFF
    return h


def _data(cp: Checkpoint) -> dict[str, object]:
    return {
        "PodDeviceEntries": [{"PodUID": e.pod_uid, "ContainerName": e.container_name, "ResourceName": e.resource_name,
                              "DeviceIDs": {NO_NUMA: list(e.device_ids)},
                              "AllocResp": base64.b64encode(e.alloc_resp).decode()} for e in cp.entries],
        "RegisteredDevices": {k: sorted(v) for k, v in sorted(cp.registered.items())},
    }


def _checksum(data: object) -> int:
    return fnv1a32(json.dumps(data, sort_keys=True, separators=(",", ":")).encode())


def encode(cp: Checkpoint) -> bytes:
    data = _data(cp)
    return json.dumps({"Data": data, "Checksum": _checksum(data)}, indent=1).encode()


def decode(raw: bytes) -> Checkpoint:
    try:
        doc = json.loads(raw)
        data = doc["Data"]
        if _checksum(data) != doc["Checksum"]:
            raise CorruptCheckpoint("checkpoint is corrupted")
        entries = []
        for e in data.get("PodDeviceEntries") or []:
            ids = [i for per_node in (e.get("DeviceIDs") or {}).values() for i in per_node]
            entries.append(PodDeviceEntry(str(e["PodUID"]), str(e["ContainerName"]), str(e["ResourceName"]), ids,
                                          base64.b64decode(e.get("AllocResp") or "")))
        registered = {str(k): [str(i) for i in v] for k, v in (data.get("RegisteredDevices") or {}).items()}
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        if isinstance(e, CorruptCheckpoint):
            raise
        raise CorruptCheckpoint(f"checkpoint is corrupted: {e}") from e
    return Checkpoint(entries, registered)


def write(path: str, cp: Checkpoint) -> None:
    write_atomic(path, encode(cp))


def read(path: str) -> Checkpoint:
    """The checkpoint at path; an empty one when it is missing or corrupted (logged, as upstream goes on)."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        return Checkpoint()
    try:
        return decode(raw)
    except CorruptCheckpoint as e:
        log.error("Continue after failing to read checkpoint file. Device allocation info may NOT be up-to-date: %s", e)
        return Checkpoint()

"""Pure logic of the device manager: the checkpoint's upstream shape and its checksum (a tampered or
truncated file is refused, not half-read), and upstream's refusals of a RegisterRequest."""

from __future__ import annotations

import json
import os
import stat

import pytest

from pyk8s.deviceplugin import checkpoint as cpmod
from pyk8s.deviceplugin.api import deviceplugin_v1beta1_pb2 as pb
from pyk8s.deviceplugin.manager import container_device_requests, registration_error


def _cp() -> cpmod.Checkpoint:
    resp = pb.ContainerAllocateResponse(envs={"A": "1"}).SerializeToString()
    return cpmod.Checkpoint([cpmod.PodDeviceEntry("uid-1", "c", "example.com/dev", ["d1", "d0"], resp)],
                            {"example.com/dev": ["d0", "d1", "d2"]})


def test_checkpoint_round_trip_in_upstream_shape(tmp_path) -> None:
    path = str(tmp_path / cpmod.CHECKPOINT_NAME)
    cpmod.write(path, _cp())
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    doc = json.loads(open(path).read())
    entry = doc["Data"]["PodDeviceEntries"][0]
    assert set(doc) == {"Data", "Checksum"} and isinstance(doc["Checksum"], int)
    assert (entry["PodUID"], entry["ContainerName"], entry["ResourceName"], entry["DeviceIDs"]) == \
        ("uid-1", "c", "example.com/dev", {"-1": ["d1", "d0"]})
    assert doc["Data"]["RegisteredDevices"] == {"example.com/dev": ["d0", "d1", "d2"]}
    back = cpmod.read(path)
    assert back == _cp()
    assert pb.ContainerAllocateResponse.FromString(back.entries[0].alloc_resp).envs["A"] == "1"


@pytest.mark.parametrize("tamper", ["device", "checksum", "truncate", "not-json", "no-data"])
def test_tampered_checkpoint_is_refused_whole(tmp_path, tamper: str) -> None:
    path = str(tmp_path / cpmod.CHECKPOINT_NAME)
    cpmod.write(path, _cp())
    raw = open(path).read()
    doc = json.loads(raw)
    if tamper == "device":  # another pod's devices slipped in by hand
        doc["Data"]["PodDeviceEntries"][0]["DeviceIDs"]["-1"].append("d2")
        raw = json.dumps(doc)
    elif tamper == "checksum":
        doc["Checksum"] += 1
        raw = json.dumps(doc)
    elif tamper == "truncate":
        raw = raw[: len(raw) // 2]
    elif tamper == "not-json":
        raw = "\x00\x01"
    else:
        raw = json.dumps({"Checksum": 1})
    with pytest.raises(cpmod.CorruptCheckpoint):
        cpmod.decode(raw.encode())
    open(path, "w").write(raw)
    assert cpmod.read(path) == cpmod.Checkpoint()  # as upstream: go on with nothing rather than fail


def test_registration_refusals_in_upstream_words() -> None:
    def err(**kw: str) -> str | None:
        base = {"version": "v1beta1", "endpoint": "p.sock", "resource_name": "example.com/dev"}
        return registration_error(pb.RegisterRequest(**{**base, **kw}))

    assert err() is None
    assert err(version="v1alpha1") == ('requested API version "v1alpha1" is not supported by kubelet. '
                                       'Supported versions are ["v1beta1"]')
    for bad in ("cpu", "nvidia.com", "kubernetes.io/x", "example.com/", "requests.example.com/x", "a b/c", ""):
        assert err(resource_name=bad) == f"the ResourceName {json.dumps(bad)} is invalid"
    for bad in ("", "../x.sock", "/tmp/x.sock", "kubelet.sock", "..", "a/b.sock"):
        assert "is invalid" in (err(endpoint=bad) or "")


def test_container_device_requests_reads_extended_limits() -> None:
    c = {"resources": {"requests": {"cpu": "1", "example.com/dev": "2"},
                       "limits": {"memory": "1Gi", "example.com/dev": "2", "other.io/x": "1"}}}
    assert container_device_requests(c) == {"example.com/dev": 2, "other.io/x": 1}
    assert container_device_requests({}) == {}

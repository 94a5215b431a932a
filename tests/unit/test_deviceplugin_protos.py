"""The generated device-plugin and pod-resources modules carry upstream's wire contract:
the gRPC method paths (`/v1beta1.Registration/Register`, ...) and each field's number and type,
as documented for k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1 and podresources/v1. A renamed
package or a renumbered field would silently break every Go plugin, so they are pinned here."""

from __future__ import annotations

from google.protobuf.descriptor import FieldDescriptor as F

from pyk8s.deviceplugin.api import deviceplugin_v1beta1_pb2 as dp
from pyk8s.deviceplugin.api import podresources_v1_pb2 as pr

STR, BOOL, INT64, INT32, UINT64, MSG = F.TYPE_STRING, F.TYPE_BOOL, F.TYPE_INT64, F.TYPE_INT32, F.TYPE_UINT64, F.TYPE_MESSAGE


def _fields(mod, name: str) -> dict[str, tuple[int, int, bool]]:
    d = mod.DESCRIPTOR.message_types_by_name[name]
    return {f.name: (f.number, f.type, f.is_repeated) for f in d.fields}


def _methods(mod, service: str) -> dict[str, tuple[str, str, bool]]:
    s = mod.DESCRIPTOR.services_by_name[service]
    return {m.name: (m.input_type.full_name, m.output_type.full_name, m.server_streaming) for m in s.methods}


def test_device_plugin_services_match_upstream_paths() -> None:
    assert mod_service(dp, "Registration") == "v1beta1.Registration"
    assert _methods(dp, "Registration") == {"Register": ("v1beta1.RegisterRequest", "v1beta1.Empty", False)}
    assert _methods(dp, "DevicePlugin") == {
        "GetDevicePluginOptions": ("v1beta1.Empty", "v1beta1.DevicePluginOptions", False),
        "ListAndWatch": ("v1beta1.Empty", "v1beta1.ListAndWatchResponse", True),
        "GetPreferredAllocation": ("v1beta1.PreferredAllocationRequest", "v1beta1.PreferredAllocationResponse", False),
        "Allocate": ("v1beta1.AllocateRequest", "v1beta1.AllocateResponse", False),
        "PreStartContainer": ("v1beta1.PreStartContainerRequest", "v1beta1.PreStartContainerResponse", False),
    }


def mod_service(mod, name: str) -> str:
    return str(mod.DESCRIPTOR.services_by_name[name].full_name)


def test_device_plugin_fields_match_upstream_numbers() -> None:
    assert _fields(dp, "RegisterRequest") == {"version": (1, STR, False), "endpoint": (2, STR, False),
                                              "resource_name": (3, STR, False), "options": (4, MSG, False)}
    assert _fields(dp, "DevicePluginOptions") == {"pre_start_required": (1, BOOL, False),
                                                  "get_preferred_allocation_available": (2, BOOL, False)}
    assert _fields(dp, "Device") == {"ID": (1, STR, False), "health": (2, STR, False), "topology": (3, MSG, False)}
    assert _fields(dp, "NUMANode") == {"ID": (1, INT64, False)}
    assert _fields(dp, "ContainerPreferredAllocationRequest") == {
        "available_deviceIDs": (1, STR, True), "must_include_deviceIDs": (2, STR, True), "allocation_size": (3, INT32, False)}
    assert _fields(dp, "ContainerPreferredAllocationResponse") == {"deviceIDs": (1, STR, True)}
    assert _fields(dp, "ContainerAllocateRequest") == {"devices_ids": (1, STR, True)}
    assert _fields(dp, "PreStartContainerRequest") == {"devices_ids": (1, STR, True)}
    car = _fields(dp, "ContainerAllocateResponse")
    assert {k: v[0] for k, v in car.items()} == {"envs": 1, "mounts": 2, "devices": 3, "annotations": 4, "cdi_devices": 5}
    assert _fields(dp, "Mount") == {"container_path": (1, STR, False), "host_path": (2, STR, False),
                                    "read_only": (3, BOOL, False)}
    assert _fields(dp, "DeviceSpec") == {"container_path": (1, STR, False), "host_path": (2, STR, False),
                                         "permissions": (3, STR, False)}


def test_pod_resources_service_and_fields_match_upstream() -> None:
    assert mod_service(pr, "PodResourcesLister") == "v1.PodResourcesLister"
    assert _methods(pr, "PodResourcesLister") == {
        "List": ("v1.ListPodResourcesRequest", "v1.ListPodResourcesResponse", False),
        "GetAllocatableResources": ("v1.AllocatableResourcesRequest", "v1.AllocatableResourcesResponse", False),
        "Get": ("v1.GetPodResourcesRequest", "v1.GetPodResourcesResponse", False),
    }
    assert _fields(pr, "PodResources") == {"name": (1, STR, False), "namespace": (2, STR, False),
                                           "containers": (3, MSG, True)}
    assert _fields(pr, "ContainerResources") == {"name": (1, STR, False), "devices": (2, MSG, True),
                                                 "cpu_ids": (3, INT64, True), "memory": (4, MSG, True),
                                                 "dynamic_resources": (5, MSG, True)}
    assert _fields(pr, "ContainerDevices") == {"resource_name": (1, STR, False), "device_ids": (2, STR, True),
                                               "topology": (3, MSG, False)}
    assert _fields(pr, "ContainerMemory") == {"memory_type": (1, STR, False), "size": (2, UINT64, False),
                                              "topology": (3, MSG, False)}
    assert _fields(pr, "GetPodResourcesRequest") == {"pod_name": (1, STR, False), "pod_namespace": (2, STR, False)}
    assert {k: v[0] for k, v in _fields(pr, "DynamicResource").items()} == {
        "claim_name": 2, "claim_namespace": 3, "claim_resources": 4}
    assert {k: v[0] for k, v in _fields(pr, "ClaimResource").items()} == {
        "cdi_devices": 1, "driver_name": 2, "pool_name": 3, "device_name": 4}

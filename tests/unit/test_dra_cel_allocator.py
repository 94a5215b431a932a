"""CEL device selectors and the structured allocator (pyk8s.dra), pure logic.

Upstream references: staging/src/k8s.io/dynamic-resource-allocation/cel (the `device` variable,
domain-qualified attributes, the quantity library) and .../structured (allocator).
"""

from __future__ import annotations

from typing import Any

import pytest

from pyk8s.dra.allocator import AllocationError, Allocator, allocated_devices, node_slices
from pyk8s.dra.cel import MAX_COST, CELError, compile_selector, device_activation, device_matches

DRIVER = "gpu.pyk8s.io"


def _device(name: str, model: str = "A100", memory: str = "16Gi", **attrs: Any) -> dict[str, Any]:
    a = {"model": {"string": model}, "index": {"int": int(name.rsplit("-", 1)[-1])}, **attrs}
    return {"name": name, "basic": {"attributes": a, "capacity": {"memory": {"value": memory}}}}


def _matches(expr: str, dev: dict[str, Any], driver: str = DRIVER) -> bool:
    return device_matches(compile_selector(expr), device_activation(driver, dev["basic"]))


def test_attributes_by_domain_and_capacity_quantities():
    dev = _device("gpu-0", **{"example.com/family": {"string": "ampere"}, "healthy": {"bool": True}})
    assert _matches(f'device.driver == "{DRIVER}"', dev)
    assert _matches(f'device.attributes["{DRIVER}"].model == "A100"', dev)
    assert _matches(f'device.attributes["{DRIVER}"].index == 0 && device.attributes["{DRIVER}"].healthy', dev)
    assert _matches('device.attributes["example.com"].family == "ampere"', dev)
    assert _matches(f'device.capacity["{DRIVER}"].memory.compareTo(quantity("8Gi")) >= 0', dev)
    assert _matches(f'device.capacity["{DRIVER}"].memory.compareTo(quantity("16384Mi")) == 0', dev)
    assert not _matches(f'device.capacity["{DRIVER}"].memory.isGreaterThan(quantity("16Gi"))', dev)
    assert _matches(f'device.capacity["{DRIVER}"].memory.isLessThan(quantity("17Gi"))', dev)
    assert _matches(f'device.capacity["{DRIVER}"].memory.asInteger() == 17179869184', dev)
    assert _matches(f'device.capacity["{DRIVER}"].memory.add(quantity("1Gi")).compareTo(quantity("17Gi")) == 0', dev)
    assert _matches('isQuantity("8Gi") && !isQuantity("8 Gi")', dev)
    assert not _matches(f'device.attributes["{DRIVER}"].model == "H100"', dev)


def test_runtime_errors_as_upstream():
    dev = _device("gpu-0")
    with pytest.raises(CELError, match="^CEL runtime error: no such key: modle$"):
        _matches(f'device.attributes["{DRIVER}"].modle == "A100"', dev)
    with pytest.raises(CELError, match="^CEL runtime error: no such key: nvidia.com$"):
        _matches('device.attributes["nvidia.com"].model == "A100"', dev)
    with pytest.raises(CELError, match="must evaluate to bool"):
        _matches("device.driver", dev)


def test_compile_errors_and_cost_bound():
    with pytest.raises(CELError, match="^compilation failed: ERROR: <input>:1:"):
        compile_selector('device.driver == "x" &&')
    assert compile_selector(f'device.attributes["{DRIVER}"].model == "A100"').cost < 100
    big = "[" + ",".join(["1"] * 1000) + "]"
    assert compile_selector(f"{big}.all(x, {big}.all(y, x == y))").cost > MAX_COST
    # one level over a literal of that size is cheap enough
    assert compile_selector(f"{big}.all(x, x == 1)").cost < MAX_COST
    # the same text is parsed once
    assert compile_selector("device.driver == 'a'") is compile_selector("device.driver == 'a'")


def _slice(name: str, node: str | None, devices: list[dict[str, Any]], generation: int = 1, pool: str = "",
           **spec: Any) -> dict[str, Any]:
    s: dict[str, Any] = {"driver": DRIVER, "pool": {"name": pool or node or name, "generation": generation,
                                                     "resourceSliceCount": 1}, "devices": devices, **spec}
    if node:
        s["nodeName"] = node
    return {"metadata": {"name": name}, "spec": s}


CLASSES = {"gpu": {"metadata": {"name": "gpu"}, "spec": {
    "selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}],
    "config": [{"opaque": {"driver": DRIVER, "parameters": {"sharing": "none"}}}]}}}


def _claim(name: str, *requests: dict[str, Any], constraints: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    devices: dict[str, Any] = {"requests": list(requests)}
    if constraints:
        devices["constraints"] = constraints
    return {"metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}"}, "spec": {"devices": devices}}


def _req(name: str = "gpu", count: int = 1, mode: str = "ExactCount", selector: str = "") -> dict[str, Any]:
    r: dict[str, Any] = {"name": name, "deviceClassName": "gpu", "allocationMode": mode, "count": count}
    if selector:
        r["selectors"] = [{"cel": {"expression": selector}}]
    return r


def _never(sel: Any, node: str, labels: Any) -> bool:
    return False


def _allocate(claims: list[dict[str, Any]], slices: list[dict[str, Any]], node: str = "n1",
              in_use: set[Any] | None = None, labels: dict[str, str] | None = None) -> Any:
    def by_label(sel: Any, name: str, lbls: Any) -> bool:
        return all(lbls.get(e["key"]) in e["values"] for t in sel["nodeSelectorTerms"]
                   for e in t.get("matchExpressions") or ())

    cands = node_slices(slices, node, labels or {}, by_label)
    return Allocator(CLASSES.get).allocate(claims, node, cands, in_use or set())


def test_exact_count_takes_free_devices_of_the_node_with_class_config():
    slices = [_slice("s1", "n1", [_device("gpu-0"), _device("gpu-1")]), _slice("s2", "n2", [_device("gpu-0")])]
    [res] = _allocate([_claim("c", _req(count=2))], slices)
    assert res["devices"]["results"] == [
        {"request": "gpu", "driver": DRIVER, "pool": "n1", "device": "gpu-0"},
        {"request": "gpu", "driver": DRIVER, "pool": "n1", "device": "gpu-1"}]
    assert res["devices"]["config"] == [{"source": "FromClass", "requests": ["gpu"],
                                         "opaque": {"driver": DRIVER, "parameters": {"sharing": "none"}}}]
    assert res["nodeSelector"] == {"nodeSelectorTerms": [{"matchFields": [
        {"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]}
    # a device another claim holds is not available; three are asked, two exist
    assert _allocate([_claim("c", _req(count=1))], slices, in_use={(DRIVER, "n1", "gpu-0"), (DRIVER, "n1", "gpu-1")}) \
        is None
    assert _allocate([_claim("c", _req(count=3))], slices) is None
    # two claims of one pod never share a device
    a, b = _allocate([_claim("a", _req()), _claim("b", _req())], slices)
    assert a["devices"]["results"][0]["device"] != b["devices"]["results"][0]["device"]


def test_all_mode_selectors_and_stale_generations():
    slices = [_slice("old", "n1", [_device("gpu-0"), _device("gpu-1"), _device("gpu-2")], generation=1, pool="p"),
              _slice("new", "n1", [_device("gpu-0"), _device("gpu-1", model="H100")], generation=2, pool="p")]
    [res] = _allocate([_claim("c", _req(mode="All", count=0))], slices)
    assert [r["device"] for r in res["devices"]["results"]] == ["gpu-0", "gpu-1"]  # gpu-2 was in generation 1 only
    # All fails when one of the matching devices is taken
    assert _allocate([_claim("c", _req(mode="All", count=0))], slices, in_use={(DRIVER, "p", "gpu-1")}) is None
    [res] = _allocate([_claim("c", _req(selector=f'device.attributes["{DRIVER}"].model == "H100"'))], slices)
    assert res["devices"]["results"][0]["device"] == "gpu-1"


def test_match_attribute_constraint_backtracks():
    devs = [_device("gpu-0", model="A100"), _device("gpu-1", model="H100"), _device("gpu-2", model="H100")]
    slices = [_slice("s", "n1", devs)]
    c = _claim("c", _req(count=2), constraints=[{"matchAttribute": f"{DRIVER}/model"}])
    [res] = _allocate([c], slices)
    assert [r["device"] for r in res["devices"]["results"]] == ["gpu-1", "gpu-2"]
    c2 = _claim("c", _req(count=3), constraints=[{"matchAttribute": f"{DRIVER}/model"}])
    assert _allocate([c2], slices) is None


def test_all_nodes_and_node_selector_slices():
    shared = _slice("net", None, [_device("nic-0")], pool="fabric", allNodes=True)
    [res] = _allocate([_claim("c", _req())], [shared], node="anywhere")
    assert "nodeSelector" not in res  # usable on every node
    sel = {"nodeSelectorTerms": [{"matchExpressions": [{"key": "rack", "operator": "In", "values": ["r1"]}]}]}
    racked = _slice("rack", None, [_device("gpu-0")], pool="rack-r1", nodeSelector=sel)
    [res] = _allocate([_claim("c", _req())], [racked], labels={"rack": "r1"})
    assert res["nodeSelector"] == sel
    assert _allocate([_claim("c", _req())], [racked], labels={"rack": "r2"}) is None


def test_missing_class_and_cel_errors_are_allocation_errors():
    slices = [_slice("s", "n1", [_device("gpu-0")])]
    bad_class = _claim("c", {**_req(), "deviceClassName": "nope"})
    with pytest.raises(AllocationError, match="request gpu: device class nope does not exist"):
        _allocate([bad_class], slices)
    typo = _claim("c", _req(selector=f'device.attributes["{DRIVER}"].modle == "x"'))
    with pytest.raises(AllocationError, match=r"claim ns/c: selector #0: CEL runtime error: no such key: modle"):
        _allocate([typo], slices)


def test_allocated_devices_view():
    claims = [{"metadata": {"uid": "a"}, "status": {"allocation": {"devices": {"results": [
        {"request": "r", "driver": DRIVER, "pool": "p", "device": "d0"}]}}}},
              {"metadata": {"uid": "b"}, "status": {}}]
    assert allocated_devices(claims) == {(DRIVER, "p", "d0")}
    assert allocated_devices(claims, skip_uid="a") == set()
    assert node_slices([], "n", {}, _never) == []


def test_gpu_driver_slice_shares_and_whole_gpus_exclude_each_other():
    from pyk8s.api.validation.groups.resource import validate_resource_slice
    from pyk8s.dra.gpu_slices import device_classes, slice_for_node
    from pyk8s.gpu.discovery import fake_gpus

    s = slice_for_node("n1", fake_gpus("2x16Gi", "n1"))
    assert validate_resource_slice(s) == []
    classes = {c["metadata"]["name"]: c for c in device_classes()}
    counters: dict[Any, int] = {}
    cands = node_slices([s], "n1", {}, _never, counters)
    alloc = Allocator(classes.get)
    whole = _claim("w", {**_req(), "deviceClassName": "gpu.pyk8s.io"})
    share = _claim("s", {**_req(count=3), "deviceClassName": "gpu-share.pyk8s.io"},
                   constraints=[{"matchAttribute": f"{DRIVER}/parent"}])
    [w] = alloc.allocate([whole], "n1", cands, set(), counters)
    taken = {(DRIVER, "n1", w["devices"]["results"][0]["device"])}
    assert taken == {(DRIVER, "n1", "gpu-0")}
    # 12Gi of shares while gpu-0 is taken whole: all from gpu-1
    [sh] = alloc.allocate([share], "n1", cands, taken, counters)
    assert [r["device"] for r in sh["devices"]["results"]] == ["gpu-1-share-0", "gpu-1-share-1", "gpu-1-share-2"]
    taken |= {(DRIVER, "n1", r["device"]) for r in sh["devices"]["results"]}
    # neither GPU is whole any more, and only one 4Gi share is left
    assert alloc.allocate([whole], "n1", cands, taken, counters) is None
    assert alloc.allocate([share], "n1", cands, taken, counters) is None
    [one] = alloc.allocate([_claim("o", {**_req(), "deviceClassName": "gpu-share.pyk8s.io"})], "n1", cands, taken,
                           counters)
    assert one["devices"]["results"][0]["device"] == "gpu-1-share-3"
    bad = {**s, "spec": {**s["spec"], "sharedCounters": []}}
    assert any("must reference a counterSet defined in the ResourceSlice sharedCounters" in e.detail
               for e in validate_resource_slice(bad))

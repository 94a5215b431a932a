"""The dashboard's GPU sharing page and scale view in a real headless Chromium, against a real server
with 50 nodes of `pyk8s sim --gpus 2 --gpu-memory 16Gi` (no kubelet on the host: simulated pods).

GPU sharing: a gpu-mem pod appears in the bar of the GPU the scheduler chose, with its GiB, as a
focusable segment; totals agree with `pyk8s gpu inspect`; a whole-GPU pod shows its device; a share
too big for any GPU is listed Pending with the scheduler's message; all live, without reloading.
Scale: the canvas draws every node once the list arrives, and a node's cell changes colour when
a pod is scheduled there.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from tests.cluster import REPO, Cluster
from tests.dashboard.browser import Browser, Dashboard, wait
from tests.dashboard.test_dashboard_pages import LOW_CONTRAST, UNLABELLED

pytestmark = [pytest.mark.xdist_group("dashboard-gpu"), pytest.mark.timeout(240)]

NODES = 50
PREFIX = "dg-node-"
NS = "gpu-dash"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    c = Cluster(str(tmp_path_factory.mktemp("dash-gpu"))).start()
    sim = subprocess.Popen([sys.executable, "-m", "pyk8s.cli", "sim", "--kubeconfig", c.kubeconfig,
                            "--nodes", str(NODES), "--name-prefix", PREFIX, "--creating-seconds", "0",
                            "--delete-delay", "0", "--gpus", "2", "--gpu-memory", "16Gi"],
                           cwd=str(REPO), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait(lambda: len(c.kubectl("get", "nodes", "-l", "gpushare=true", "-o", "name").stdout.split()) == NODES,
             90, f"{NODES} simulated GPU nodes", interval=0.5)
        c.kubectl("create", "ns", NS)
        yield c
    finally:
        sim.terminate()
        try:
            sim.wait(10)
        except subprocess.TimeoutExpired:
            sim.kill()
        c.stop()


def _pod(name: str, limits: dict[str, str], requests: dict[str, str] | None = None,
         node_selector: dict[str, str] | None = None) -> str:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "busybox:1.36",
                                            "resources": {"limits": limits, "requests": requests or limits}}]}
    if node_selector:
        spec["nodeSelector"] = node_selector
    return json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NS}, "spec": spec})


def _get(c: Cluster, *args: str) -> Any:
    return json.loads(c.kubectl("get", "-o", "json", *args).stdout)


def _bound(c: Cluster, name: str) -> dict[str, Any]:
    return wait(lambda: (lambda p: p if p["spec"].get("nodeName") and p["metadata"].get("annotations", {})
                         .get("gpu.pyk8s.io/allocated-env") else None)(_get(c, "-n", NS, "pod", name)),
                30, f"{name} bound and allocated")


def _inspect(c: Cluster, *args: str) -> str:
    return subprocess.run([sys.executable, "-m", "pyk8s.cli", "gpu", "inspect", "--kubeconfig", c.kubeconfig, *args],
                          cwd=str(REPO), capture_output=True, text=True, check=True).stdout


def test_gpu_page_shows_shares_whole_gpus_and_pending(cluster: Cluster, dashboard: Dashboard, browser: Browser):
    c = cluster
    browser.get(dashboard.base + "/#/gpus")
    browser.find('[data-cluster-total]', text=f"0/{NODES * 32} (0%)")

    c.kubectl("create", "-f", "-", input=_pod("share-3", {"aliyun.com/gpu-mem": "3"}))
    p3 = _bound(c, "share-3")
    node, idx = p3["spec"]["nodeName"], int(p3["metadata"]["annotations"]["ALIYUN_COM_GPU_MEM_IDX"])
    # bin-packing puts the next share on the fullest GPU that fits: the same one
    c.kubectl("create", "-f", "-", input=_pod("share-12", {"aliyun.com/gpu-mem": "12"}))
    p12 = _bound(c, "share-12")
    assert (p12["spec"]["nodeName"], p12["metadata"]["annotations"]["ALIYUN_COM_GPU_MEM_IDX"]) == (node, str(idx))

    card = f'.gpu-node[data-node="{node}"]'
    bar = f'{card} .gpu-map[data-gpu="{idx}"]'
    seg3 = browser.find(f'{bar} .gpu-share[data-pod="{NS}/share-3"]')
    seg12 = browser.find(f'{bar} .gpu-share[data-pod="{NS}/share-12"]')
    assert seg3.get_attribute("data-gib") == "3"
    assert seg3.get_attribute("aria-label") == f"{NS}/share-3: 3 GiB on GPU{idx} of {node}"
    assert "share-3 3 GiB" in seg3.text
    # not in the node's other GPU, nor on another node
    other = 1 - idx
    assert browser.absent(f'{card} .gpu-map[data-gpu="{other}"] .gpu-share')
    assert len(browser.all(f'.gpu-share[data-pod="{NS}/share-3"]')) == 1
    # widths follow the GiB (3 : 12 of a 16 GiB GPU, 1 GiB free)
    w3, w12 = seg3.size["width"], seg12.size["width"]
    assert abs(w12 / w3 - 4) < 0.5, (w3, w12)
    assert browser.find(f'{bar}').get_attribute("aria-label").endswith("15/16 GiB allocated")
    assert "1 GiB free" in browser.find(bar).text
    # each share is reachable from the keyboard and leads to its pod
    assert browser.driver.execute_script("arguments[0].focus(); return document.activeElement === arguments[0]", seg3)
    assert seg3.get_attribute("href").endswith(f"#/pods/{NS}/share-3")

    # the totals are `pyk8s gpu inspect`'s
    summary = _inspect(c)
    cluster_total = summary.strip().splitlines()[-1]
    assert cluster_total == f"15/{NODES * 32} (0%)"
    browser.find('[data-cluster-total]', text=cluster_total)
    node_total = next(ln for ln in _inspect(c, "-d").splitlines() if ln.startswith("Allocated/Total GPU Memory: 15/"))
    assert browser.find(f"{card} [data-node-total]").text == node_total
    assert browser.find(f'{card} [data-gpu-total="{idx}"]').text == "15/16 GiB"

    # a whole GPU: its pod and the device the node handed it
    c.kubectl("create", "-f", "-", input=_pod("whole-1", {"nvidia.com/gpu": "1"}))
    pw = _bound(c, "whole-1")
    env = json.loads(pw["metadata"]["annotations"]["gpu.pyk8s.io/allocated-env"])
    uuid = env["c"]["NVIDIA_VISIBLE_DEVICES"]
    wcard = f'.gpu-node[data-node="{pw["spec"]["nodeName"]}"]'
    row = browser.find(f'{wcard} table[aria-label^="Whole GPUs on"] tr[data-key="{NS}/whole-1"]')
    assert uuid in row.text
    assert "1/2 allocated" in browser.find(f"{wcard} [data-whole-total]").text

    # a share no single GPU can hold (every node has 32 GiB, each GPU 16): Pending, with the reason
    c.kubectl("create", "-f", "-", input=_pod("too-big", {"aliyun.com/gpu-mem": "20"}))
    pending = browser.find(f'table[aria-label="Pending GPU pods"] tr[data-key="{NS}/too-big"]', timeout=30)
    wait(lambda: "no single GPU with 20 GiB of free memory" in pending.text, 30, "the scheduler's reason")
    assert "20 GiB GPU memory" in pending.text
    browser.driver.execute_script("window.scrollTo(0, 0)")
    browser.shot("gpu-sharing")
    browser.driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", browser.find(card))
    browser.shot("gpu-sharing-node")
    assert browser.driver.execute_script(UNLABELLED) == []
    assert browser.driver.execute_script(LOW_CONTRAST) == []

    # live: the share goes when its pod does
    c.kubectl("delete", "pod", "-n", NS, "share-3", "--wait=false")
    wait(lambda: browser.absent(f'.gpu-share[data-pod="{NS}/share-3"]'), 30, "share-3 gone from the bar")
    browser.find(f'{card} [data-gpu-total="{idx}"]', text="12/16 GiB")
    assert not browser.console_errors()


def test_gpu_page_ignores_forged_records(cluster: Cluster, dashboard: Dashboard, browser: Browser):
    """What a pod's author can write counts no more on the page than in `pyk8s gpu inspect`: a pod
    bound with spec.nodeName naming a GPU the node does not have holds no share anywhere, and a
    forged device record with markup shows as text and runs nothing."""
    c = cluster
    node = f"{PREFIX}7"
    forged = json.loads(_pod("forged-idx", {"aliyun.com/gpu-mem": "4"}))
    forged["metadata"]["annotations"] = {"ALIYUN_COM_GPU_MEM_IDX": "7", "ALIYUN_COM_GPU_MEM_ASSIGNED": "true"}
    forged["spec"]["nodeName"] = node
    c.kubectl("create", "-f", "-", input=json.dumps(forged))
    markup = "<img src=x onerror=window.pwned=1>"
    env = json.loads(_pod("forged-env", {"nvidia.com/gpu": "1"}))
    env["metadata"]["annotations"] = {"gpu.pyk8s.io/allocated-env": json.dumps({"c": {"NVIDIA_VISIBLE_DEVICES": markup}})}
    env["spec"]["nodeName"] = node
    c.kubectl("create", "-f", "-", input=json.dumps(env))
    # a real share after them: once the page shows it, it has seen the forged pods too (one ordered watch)
    c.kubectl("create", "-f", "-", input=_pod("sentinel-2", {"aliyun.com/gpu-mem": "2"}))
    _bound(c, "sentinel-2")
    browser.get(dashboard.base + "/#/gpus")
    browser.find(f'.gpu-share[data-pod="{NS}/sentinel-2"]', timeout=30)
    assert browser.absent(f'.gpu-share[data-pod="{NS}/forged-idx"]')
    card = f'.gpu-node[data-node="{node}"]'
    node_total = next(ln for ln in _inspect(c, "-d", node).splitlines() if ln.startswith("Allocated/Total GPU Memory:"))
    assert browser.find(f"{card} [data-node-total]").text == node_total
    browser.find("[data-cluster-total]", text=_inspect(c).strip().splitlines()[-1])
    row = browser.find(f'{card} table[aria-label^="Whole GPUs on"] tr[data-key="{NS}/forged-env"]')
    assert markup in row.text
    assert browser.driver.execute_script("return window.pwned === undefined")
    assert browser.absent(f"{card} img")


def test_gpu_page_lists_dra_claims_on_gpu_devices(cluster: Cluster, dashboard: Dashboard, browser: Browser):
    """A ResourceClaim for a whole GPU of our DRA driver, allocated by the scheduler for a pod: the
    node's card lists the claim, the device it holds and the pod it is reserved for."""
    c = cluster
    claim = {"apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceClaim", "metadata": {"name": "one-gpu", "namespace": NS},
             "spec": {"devices": {"requests": [{"name": "gpu", "deviceClassName": "gpu.pyk8s.io"}]}}}
    c.kubectl("create", "-f", "-", input=json.dumps(claim))
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "dra-user", "namespace": NS}, "spec": {
        "resourceClaims": [{"name": "gpu", "resourceClaimName": "one-gpu"}],
        "containers": [{"name": "c", "image": "busybox:1.36", "resources": {"claims": [{"name": "gpu"}]}}]}}
    c.kubectl("create", "-f", "-", input=json.dumps(pod))
    allocated = wait(lambda: (lambda o: o if (o.get("status") or {}).get("allocation") else None)(
        _get(c, "-n", NS, "resourceclaim", "one-gpu")), 30, "one-gpu allocated")
    result = allocated["status"]["allocation"]["devices"]["results"][0]
    browser.get(dashboard.base + "/#/gpus")
    row = browser.find(f'.gpu-node[data-node="{result["pool"]}"] table[aria-label^="DRA claims on"] '
                       f'tr[data-key="{NS}/one-gpu"]', timeout=30)
    wait(lambda: "dra-user" in row.text, 15, "the pod the claim is reserved for")
    assert result["device"] in row.text and result["driver"] == "gpu.pyk8s.io"
    assert len(browser.all(f'tr[data-key="{NS}/one-gpu"]')) == 1


def _pixel(browser: Browser, slot: int) -> list[int]:
    """The colour at the centre of a node's cell (slot: its place in the node list), read back from the canvas."""
    return list(browser.driver.execute_script("""
        const c = document.querySelector('canvas.scale-map'), t = window.pyk8sScale, i = arguments[0];
        const dpr = window.devicePixelRatio || 1;
        const x = Math.floor(((i % t.cols) * t.cell + t.cell / 2) * dpr);
        const y = Math.floor((Math.floor(i / t.cols) * t.cell + t.cell / 2) * dpr);
        return Array.from(c.getContext('2d').getImageData(x, y, 1, 1).data.slice(0, 3));
    """, slot))


def test_scale_view_draws_every_node_and_recolours_a_scheduled_node(cluster: Cluster, dashboard: Dashboard,
                                                                      browser: Browser):
    c = cluster
    browser.get(dashboard.base + "/#/scale")
    try:
        timings = wait(lambda: browser.driver.execute_script(
            "const t = window.pyk8sScale; return t && t.firstRender > 0 ? t : null"), 60, "the first full render")
    except AssertionError as e:  # say what the page was waiting for
        raise AssertionError(f"{e}; requests: " + json.dumps(browser.driver.execute_script(
            "return performance.getEntriesByType('resource').map((r) => [r.name, r.startTime, r.responseEnd])"))
            + f"; console: {browser.driver.get_log('browser')}") from e
    assert timings["nodes"] == NODES
    counts = browser.find(".scale-counts", text=f"{NODES} nodes: {NODES} Ready, 0 NotReady")
    assert re.search(r"Pods: \d+ Pending, \d+ Running", counts.text)
    # no DOM element per node: the page stays small whatever the cluster's size
    assert len(browser.all("main *")) < 120

    # the first cell, from the keyboard: its node named in the live region
    canvas = browser.find("canvas.scale-map")
    canvas.send_keys("\ue011")  # Home
    picked = browser.find("#scale-picked", text=PREFIX)
    node = picked.text.split(":", 1)[0]
    assert node.startswith(PREFIX)
    before, neighbour = _pixel(browser, 0), _pixel(browser, 1)
    # a pod asking for most of the node's 32 CPUs, scheduled there by the scheduler
    c.kubectl("create", "-f", "-", input=_pod("busy-cpu", {"cpu": "30"}, node_selector={"kubernetes.io/hostname": node}))
    wait(lambda: _get(c, "-n", NS, "pod", "busy-cpu")["spec"].get("nodeName") == node, 30, "busy-cpu bound")
    wait(lambda: _pixel(browser, 0) != before, 15, "the node's cell recoloured")
    after = _pixel(browser, 0)
    assert after[2] < before[2]  # darker red: fuller
    assert _pixel(browser, 1) == neighbour
    wait(lambda: "CPU 30 / 32" in browser.find("#scale-picked").text, 15, "the picked node's new CPU")
    browser.shot("scale")
    assert browser.driver.execute_script(UNLABELLED) == []
    assert browser.driver.execute_script(LOW_CONTRAST) == []
    # another resource: memory is barely requested, so the cell is light again
    from selenium.webdriver.support.ui import Select

    Select(browser.find("#scale-metric")).select_by_visible_text("Memory requested")
    wait(lambda: _pixel(browser, 0) != after, 15, "the cell recoloured by memory")
    # a node that never reported Ready joins the map and the counts, and leaves them when deleted
    c.kubectl("create", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "Node",
                                                     "metadata": {"name": "dg-silent"}}))
    browser.find(".scale-counts", text=f"{NODES + 1} nodes: {NODES} Ready, 1 NotReady")
    canvas.send_keys("\ue010")  # End: the newest node
    browser.find("#scale-picked", text="dg-silent: NotReady")
    c.kubectl("delete", "node", "dg-silent")
    browser.find(".scale-counts", text=f"{NODES} nodes: {NODES} Ready, 0 NotReady")
    assert not browser.console_errors()


# Holds the page's effects back 3 s (preact runs them on the next animation frame or after 35 ms,
# whichever comes first), as a loaded machine can: the window between a page's first render and
# its hooks' subscriptions.
SLOW_EFFECTS = """(() => {
  const st = window.setTimeout.bind(window);
  window.setTimeout = (f, ms, ...a) => st(f, ms === 35 ? 3000 : ms, ...a);
  window.requestAnimationFrame = (f) => st(() => f(performance.now()), 3000);
})();"""


def test_a_route_changed_before_the_page_listens_is_still_followed(dashboard: Dashboard, browser: Browser):
    """The address changes right after the shell's first render, before its hash listener exists (the
    GPU page's tests did this after sign-in on a loaded CI machine): the page must follow the address
    it shows, not stay on the route it first read."""
    d = browser.driver
    script = d.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": SLOW_EFFECTS})
    try:
        browser.get(dashboard.url)  # a new document: the signed-in shell renders on the Overview route
        browser.find("#current-user")
        d.execute_script("location.hash = '#/scale'")
        assert d.current_url.endswith("#/scale")
        browser.find("h1#scale-title", timeout=15)
        assert browser.absent("h1#overview-title")
    finally:
        d.execute_cdp_cmd("Page.removeScriptToEvaluateOnNewDocument", {"identifier": script["identifier"]})
        browser.get(dashboard.url)

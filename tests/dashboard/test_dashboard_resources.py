"""The Services, PersistentVolumeClaims and HorizontalPodAutoscalers pages in a real headless Chromium.

One cluster for the module: a `pyk8s server` (metrics every 1 s, HPAs synced every 1 s) with a
simulated node (`pyk8s sim --kubelet-port 0`: pods get IPs and readiness from the
`sim.pyk8s.io/ready` annotation, cpu usage from `sim.pyk8s.io/cpu-usage`, served to the metrics
server), one `pyk8s dashboard` in kubeconfig mode, one browser. Every change is made with kubectl
while the page stays open: the page must follow over its watches, never by reloading (a marker
set on `window` must survive). Screenshots go to artifacts/dashboard/.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.cluster import Cluster
from tests.dashboard.browser import Browser, Dashboard, wait
from tests.dashboard.test_dashboard_pages import LOW_CONTRAST, UNLABELLED
from tests.sim_nodes import sim_nodes

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("dash-res"), pytest.mark.timeout(240)]

USAGE = "sim.pyk8s.io/cpu-usage"
READY = "sim.pyk8s.io/ready"
NODE = "dash-res-node-0"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    c = Cluster(str(tmp_path_factory.mktemp("dash-res")),
                extra_args=["--metric-resolution", "1s", "--horizontal-pod-autoscaler-sync-period", "1s"]).start()
    try:
        with sim_nodes(c, 1, "dash-res-node-"):
            wait(lambda: "True" in c.kubectl("get", "node", NODE, "--ignore-not-found", "-o",
                                             "jsonpath={.status.conditions[?(@.type=='Ready')].status}").stdout,
                 30, "the simulated node Ready")
            yield c
    finally:
        c.stop()


def apply(c: Cluster, obj: dict[str, Any]) -> None:
    c.kubectl("apply", "-f", "-", input=json.dumps(obj))


def get(c: Cluster, *args: str) -> Any:
    return json.loads(c.kubectl("get", *args, "-o", "json").stdout)


def open_page(browser: Browser, dashboard: Dashboard, page: str) -> None:
    browser.get(dashboard.base + "/#" + page)
    browser.find("main h1")
    browser.driver.execute_script("window.__sameDocument = true")


def same_document(browser: Browser) -> bool:
    """True while the page was not reloaded since open_page: what it shows came over its watches."""
    return bool(browser.driver.execute_script("return window.__sameDocument === true"))


def check_page_quality(browser: Browser, page: str) -> None:
    """Labels, WCAG AA text contrast, and a laptop's width (1280 px) without a horizontal scrollbar."""
    assert browser.driver.execute_script(UNLABELLED) == [], page
    assert browser.driver.execute_script(LOW_CONTRAST) == [], page
    wide = browser.driver.execute_script("return [document.documentElement.scrollWidth, window.innerWidth]")
    assert wide[0] <= wide[1], (page, wide)
    assert not browser.console_errors(), page


def pod(name: str, labels: dict[str, str], annotations: dict[str, str] | None = None,
        **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "labels": labels, "annotations": annotations or {}},
            "spec": {"containers": [{"name": "c", "image": "busybox", "ports": [{"containerPort": 8080}]}], **spec}}


def endpoint(browser: Browser, svc: str, pod_name: str) -> Any:
    """The endpoint row of `pod_name` under Service `svc`, or None."""
    for li in browser.all(f'table[aria-label="Services"] tr[data-key="default/{svc}"] li[data-address]'):
        if f"pod {pod_name}" in li.text:
            return li
    return None


def test_service_endpoints_follow_pods_live(cluster: Cluster, dashboard: Dashboard, browser: Browser) -> None:
    """A NodePort Service's row shows its ports, selector and cluster IP; its endpoints come from the
    EndpointSlices with the pod and node of each: a not-ready pod appears not ready, turns ready when
    its readiness changes, and a deleted pod's address goes; all without reloading the page."""
    labels = {"app": "web"}
    apply(cluster, pod("web-a", labels))
    apply(cluster, pod("web-b", labels, {READY: "false"}))
    apply(cluster, {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
                    "spec": {"type": "NodePort", "selector": labels, "ports": [
                        {"name": "http", "port": 80, "targetPort": 8080, "nodePort": 30981}]}})
    open_page(browser, dashboard, "/services")
    browser.find('table[aria-label="Services"] tr[data-key="default/web"]')
    ip = cluster.kubectl("get", "service", "web", "-o", "jsonpath={.spec.clusterIP}").stdout
    assert browser.find('tr[data-key="default/web"] td[data-column="clusterIP"]').text == ip
    assert browser.find('tr[data-key="default/web"] td[data-column="ports"]').text == "http 80→8080:30981/TCP"
    assert browser.find('tr[data-key="default/web"] td[data-column="selector"]').text == "app=web"
    assert browser.find('tr[data-key="default/web"] td[data-column="type"]').text == "NodePort"
    assert "kubernetes" in browser.text('table[aria-label="Services"]')  # the default Service too

    a_ip = wait(lambda: cluster.kubectl("get", "pod", "web-a", "-o", "jsonpath={.status.podIP}").stdout, 30,
                "web-a's IP")
    a = wait(lambda: endpoint(browser, "web", "web-a"), 30, "web-a's endpoint")
    assert a.get_attribute("data-address") == a_ip and a.get_attribute("data-ready") == "true"
    assert f"on {NODE}" in a.text and "http 8080/TCP" in a.text
    b = wait(lambda: endpoint(browser, "web", "web-b"), 30, "web-b's endpoint")
    assert b.get_attribute("data-ready") == "false" and "not ready" in b.text
    browser.shot("services")

    cluster.kubectl("annotate", "pod", "web-b", f"{READY}=true", "--overwrite")
    wait(lambda: endpoint(browser, "web", "web-b").get_attribute("data-ready") == "true", 30, "web-b ready")
    cluster.kubectl("delete", "pod", "web-a", "--grace-period=0", "--force")
    wait(lambda: endpoint(browser, "web", "web-a") is None, 30, "web-a's endpoint gone")
    assert endpoint(browser, "web", "web-b") is not None
    assert same_document(browser)
    # the endpoint's pod links to the pod's page
    endpoint(browser, "web", "web-b").find_element("css selector", "a").click()
    browser.find("main h1", text="Pod default/web-b")
    # a Service without a selector has no EndpointSlices of its own
    apply(cluster, {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "manual"},
                    "spec": {"ports": [{"port": 5432}]}})
    open_page(browser, dashboard, "/services")
    cell = browser.find('tr[data-key="default/manual"] td[data-column="endpoints"]')
    assert cell.text == "none (no selector)"
    check_page_quality(browser, "/services")


def test_pvc_bound_with_its_pod_and_why_pending(cluster: Cluster, dashboard: Dashboard, browser: Browser) -> None:
    """A local-path claim waits for its first consumer (the page says so from the claim's event), then a
    pod using it binds it: Bound, its volume, capacity and the pod, live. A claim of a class that does
    not exist says ProvisioningFailed. PersistentVolumes and StorageClasses are listed below. An event
    message with markup stays text."""
    apply(cluster, {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data"},
                    "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}})
    apply(cluster, {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "orphan"},
                    "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "no-such-class",
                             "resources": {"requests": {"storage": "1Gi"}}}})
    open_page(browser, dashboard, "/pvcs")
    row = 'table[aria-label="PersistentVolumeClaims"] tr[data-key="default/data"]'
    status = wait(lambda: (t := browser.find(f'{row} td[data-column="status"]').text) and "WaitForFirstConsumer" in t
                  and t, 30, "data waiting for its first consumer")
    assert status.startswith("Pending"), status
    orphan = wait(lambda: (t := browser.find('tr[data-key="default/orphan"] td[data-column="status"]').text)
                  and "ProvisioningFailed" in t and t, 30, "orphan's ProvisioningFailed")
    assert 'storageclass.storage.k8s.io "no-such-class" not found' in orphan, orphan
    browser.shot("pvcs-pending")

    apply(cluster, pod("db", {"app": "db"}, volumes=[{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}]))
    wait(lambda: browser.find(f'{row} td[data-column="status"]').text == "Bound", 60, "data Bound")
    volume = get(cluster, "pvc", "data")["spec"]["volumeName"]
    assert browser.find(f'{row} td[data-column="volume"]').text == volume
    assert browser.find(f'{row} td[data-column="capacity"]').text == "1Gi"
    assert browser.find(f'{row} td[data-column="modes"]').text == "RWO"
    assert browser.find(f'{row} td[data-column="class"]').text == "local-path"
    assert browser.find(f'{row} td[data-column="pods"]').text == "db"
    pv = browser.find(f'table[aria-label="PersistentVolumes"] tr[data-key="{volume}"]')
    assert "default/data" in pv.text and "Bound" in pv.text
    assert "local-path (default)" in browser.find('table[aria-label="StorageClasses"] tr[data-key="local-path"]').text
    assert same_document(browser)
    browser.shot("pvcs")

    # an attacker who may write events tries markup in a message: it is shown as text
    cluster.kubectl("create", "-f", "-", input=json.dumps({
        "apiVersion": "v1", "kind": "Event", "metadata": {"name": "orphan.evil"},
        "involvedObject": {"kind": "PersistentVolumeClaim", "namespace": "default", "name": "orphan"},
        "reason": "ProvisioningFailed", "type": "Warning", "count": 1,
        "lastTimestamp": "2099-01-01T00:00:00Z", "message": '<img src=x id=injected onerror="window.pwned=1">'}))
    wait(lambda: "<img src=x" in browser.find('tr[data-key="default/orphan"] td[data-column="status"]').text, 30,
         "the event's message as text")
    assert browser.absent("#injected")
    assert not browser.driver.execute_script("return window.pwned")
    check_page_quality(browser, "/pvcs")


def test_hpa_chart_gains_points_as_its_status_changes(cluster: Cluster, dashboard: Dashboard,
                                                       browser: Browser) -> None:
    """An HPA over a Deployment whose pods use 150% of their cpu request against a 50% target: the
    page shows kubectl's TARGETS text, replicas, conditions and the SuccessfulRescale events, and its
    charts gain a sample with each status change; the history survives a reload (session storage)."""
    labels = {"app": "burner"}
    apply(cluster, {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "burner"},
                    "spec": {"replicas": 1, "selector": {"matchLabels": labels},
                             "template": {"metadata": {"labels": labels, "annotations": {USAGE: "300m"}},
                                          "spec": {"containers": [{"name": "main", "image": "busybox", "resources": {
                                              "requests": {"cpu": "200m"}}}]}}}})
    open_page(browser, dashboard, "/hpas")
    apply(cluster, {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "burner"},
                    "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "burner"},
                             "minReplicas": 1, "maxReplicas": 4,
                             "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {
                                 "type": "Utilization", "averageUtilization": 50}}}]}})
    card = 'article.hpa-card[data-key="default/burner"]'
    browser.find(card, timeout=30)
    # kubectl's own TARGETS column is what the page shows, once a reading is there
    wait(lambda: get(cluster, "deployment", "burner")["spec"]["replicas"] == 4, 90, "scaled out to 4")
    kubectl_row = cluster.kubectl("get", "hpa", "burner").stdout.splitlines()[1].split()
    targets = wait(lambda: (t := browser.find('tr[data-key="default/burner"] td[data-column="targets"]').text)
                   == f"{kubectl_row[2]} {kubectl_row[3]}" and t, 30,
                   f"TARGETS {kubectl_row[2]} {kubectl_row[3]}")
    assert targets.startswith("cpu: ") and targets.endswith("%/50%") and "<unknown>" not in targets, targets
    wait(lambda: browser.find(f"{card} .replicas").text.startswith("4 current, 4 desired"), 30, "4 replicas on the page")

    chart = f'{card} svg[aria-label^="cpu of burner"]'
    replicas = f'{card} svg[aria-label^="Replicas of burner"]'
    n = int(browser.find(replicas).get_attribute("data-samples")) // 2  # current and desired per sample
    assert n >= 3, n  # at least: created, first reading, scaled
    assert int(browser.find(chart).get_attribute("data-samples")) >= 1
    assert "target: 50%" in browser.find(chart).get_attribute("aria-label")
    assert "current: 4" in browser.find(replicas).get_attribute("aria-label")
    assert browser.find(f"{card} .history-note").get_attribute("data-samples") == str(n)
    # the admin may read metrics.k8s.io: the pods' usage is charted too
    wait(lambda: int(browser.find(f'{card} svg[aria-label^="Pods\' mean cpu usage of burner"]')
                     .get_attribute("data-samples")) >= 1, 30, "a usage sample")
    conditions = browser.text(f'{card} table[aria-label="Conditions of burner"]')
    assert "ScalingActive=True" in conditions and "ValidMetricFound" in conditions
    assert "AbleToScale=True" in conditions and "ScalingLimited" in conditions
    wait(lambda: "SuccessfulRescale" in browser.text(f'{card} table[aria-label="Events of burner"]'), 30,
         "the SuccessfulRescale event")
    assert "New size: " in browser.text(f'{card} table[aria-label="Events of burner"]')

    # a new status (usage drops; the controller rewrites currentMetrics) adds a sample, live
    before = int(browser.find(f"{card} .history-note").get_attribute("data-samples"))
    cluster.kubectl("annotate", "pods", "-l", "app=burner", f"{USAGE}=20m", "--overwrite")
    wait(lambda: int(browser.find(f"{card} .history-note").get_attribute("data-samples")) > before, 30,
         "a new sample")
    assert same_document(browser)
    browser.shot("hpas")
    check_page_quality(browser, "/hpas")
    kept = int(browser.find(f"{card} .history-note").get_attribute("data-samples"))
    browser.driver.refresh()
    assert int(browser.find(f"{card} .history-note").get_attribute("data-samples")) >= kept


def test_view_user_sees_the_pages_without_edit_actions(cluster: Cluster, browser: Browser) -> None:
    """Token mode, a ServiceAccount bound to `view`: it sees Services, claims and HPAs but no delete
    buttons; PersistentVolumes and StorageClasses (which `view` does not grant) say so instead."""
    cluster.kubectl("create", "serviceaccount", "dr-viewer")
    cluster.kubectl("create", "rolebinding", "dr-viewer-view", "--clusterrole=view",
                    "--serviceaccount=default:dr-viewer")
    token = cluster.kubectl("create", "token", "dr-viewer").stdout.strip()
    # its own objects: the module's tests may run in any order
    apply(cluster, {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "viewed"},
                    "spec": {"selector": {"app": "viewed"}, "ports": [{"port": 80}]}})
    apply(cluster, {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "viewed"},
                    "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}})
    apply(cluster, {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "viewed"},
                    "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "viewed"},
                             "maxReplicas": 2}})
    tdash = Dashboard(cluster.kubeconfig, auth="token").start()
    try:
        browser.get(tdash.base + "/")
        browser.find("#token").send_keys(token)
        browser.find('form button[type="submit"]').click()
        assert browser.find("#current-user").text == "system:serviceaccount:default:dr-viewer"
        checks = {"/services": 'table[aria-label="Services"] tr[data-key="default/viewed"]',
                  "/pvcs": 'table[aria-label="PersistentVolumeClaims"] tr[data-key="default/viewed"]',
                  "/hpas": 'table[aria-label="HorizontalPodAutoscalers"] tr[data-key="default/viewed"]'}
        for page, css in checks.items():
            browser.get(tdash.base + "/#" + page)
            assert "YAML" in browser.find(css).text
            # the admin's page has Delete buttons here; the viewer's has none
            wait(lambda: browser.all("a.button-link"), 10, "the row links")
            assert browser.absent("button[data-action]"), (page, [b.text for b in browser.all("button[data-action]")])
            browser.shot("view-user" + page.replace("/", "-"))
        browser.get(tdash.base + "/#/pvcs")
        assert browser.find("#h-pvs + p").text == "Your user may not list PersistentVolumes."
        assert browser.find("#h-classes + p").text == "Your user may not list StorageClasses."
        assert browser.absent('table[aria-label="PersistentVolumes"]')
    finally:
        tdash.stop()


def test_admin_gets_delete_buttons_that_work(cluster: Cluster, dashboard: Dashboard, browser: Browser) -> None:
    """The counterpart of the viewer: the admin sees Delete on a Service, and it deletes after confirming."""
    apply(cluster, {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "doomed"},
                    "spec": {"ports": [{"port": 81}]}})
    open_page(browser, dashboard, "/services")
    browser.find('tr[data-key="default/doomed"] button[data-action="delete"]').click()
    browser.find("dialog.confirm[open] .actions button.danger").click()
    wait(lambda: cluster.kubectl("get", "service", "doomed", "--ignore-not-found", "-o", "name").stdout == "", 20,
         "the Service deleted")
    wait(lambda: browser.absent('tr[data-key="default/doomed"]'), 20, "its row gone")


def kubectl_targets(cluster: Cluster, name: str) -> str:
    """The TARGETS column of `kubectl get hpa NAME` (cut at the header's column starts: it holds spaces)."""
    header, row = cluster.kubectl("get", "hpa", name).stdout.splitlines()[:2]
    return row[header.index("TARGETS"):header.index("MINPODS")].strip()


def test_every_metric_type_reads_as_kubectl_prints_it(cluster: Cluster, dashboard: Dashboard,
                                                       browser: Browser) -> None:
    """Resource by AverageValue, Pods, Object by Value and External by AverageValue, before any reading:
    the page's Targets match kubectl's TARGETS column for each HPA (two metrics each: kubectl cuts the
    rest to "+ N more...")."""
    ref = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "absent"}
    metrics = {
        "kinds-a": [{"type": "Resource", "resource": {"name": "memory", "target": {
                        "type": "AverageValue", "averageValue": "100Mi"}}},
                    {"type": "Pods", "pods": {"metric": {"name": "packets"}, "target": {
                        "type": "AverageValue", "averageValue": "1k"}}}],
        "kinds-b": [{"type": "Object", "object": {"metric": {"name": "requests"}, "describedObject": {
                        "apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "name": "main"},
                        "target": {"type": "Value", "value": "10k"}}},
                    {"type": "External", "external": {"metric": {"name": "queue"}, "target": {
                        "type": "AverageValue", "averageValue": "30"}}}],
    }
    for name, ms in metrics.items():
        apply(cluster, {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": name},
                        "spec": {"scaleTargetRef": ref, "maxReplicas": 3, "metrics": ms}})
    open_page(browser, dashboard, "/hpas")
    for name in metrics:
        want = kubectl_targets(cluster, name)
        assert want.count("<unknown>") == 2, want
        wait(lambda n=name, w=want: browser.find(f'tr[data-key="default/{n}"] td[data-column="targets"]').text == w,
             15, f"{name}'s targets {want!r}")
    # the target cannot be read: the controller says why, and the page shows it
    card = 'article.hpa-card[data-key="default/kinds-a"]'
    wait(lambda: "FailedGetScale" in browser.text(f'{card} table[aria-label="Conditions of kinds-a"]'), 30,
         "AbleToScale=False/FailedGetScale")
    assert "AbleToScale=False" in browser.text(f'{card} table[aria-label="Conditions of kinds-a"]')
    # from the keyboard: Enter on an HPA's name moves focus to its card
    from selenium.webdriver.common.keys import Keys

    link = browser.find('table[aria-label="HorizontalPodAutoscalers"] tr[data-key="default/kinds-b"] a')
    link.send_keys(Keys.ENTER)
    focused = browser.driver.switch_to.active_element
    assert focused.get_attribute("id") == link.get_attribute("href").rsplit("#", 1)[1]
    assert focused.text.startswith("kinds-b")

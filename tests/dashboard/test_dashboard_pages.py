"""The dashboard's pages driven in a real headless Chromium against a real cluster with a runc node.

One cluster (a `pyk8s server` plus a `pyk8s agent` running real runc pods), one `pyk8s dashboard`
in kubeconfig mode (the admin's kubeconfig, as `kubectl proxy`), one browser for the module.
Screenshots of each page go to artifacts/dashboard/.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.dashboard.browser import Browser, Dashboard, wait
from tests.e2e.kubelet_harness import Env, busybox_pod, container, requirements

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("runc-dashboard-pages"), pytest.mark.timeout(240)]


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory):
    requirements()
    e = Env(str(tmp_path_factory.mktemp("dashboard")))
    try:
        e.start()
        yield e
    finally:
        e.stop()


@pytest.fixture(scope="module")
def dashboard(env: Env):
    d = Dashboard(env.cluster.kubeconfig).start()
    yield d
    d.stop()
    assert not d.errors()


@pytest.fixture(scope="module")
def browser(dashboard: Dashboard):
    b = Browser()
    try:
        b.get(dashboard.url)  # the printed URL: its secret is exchanged for the session cookie
        yield b
    finally:
        b.quit()


def test_overview_shows_nodes_with_allocation_and_namespaces(env: Env, dashboard: Dashboard, browser: Browser):
    """The node's bars count what its pods request against its allocatable, live: a new pod's
    request appears without reloading the page."""
    browser.get(dashboard.base + "/#/overview")
    row = browser.find(f'table[aria-label="Nodes"] tr[data-key="{env.node}"]')
    assert browser.find('table[aria-label="Namespaces"] tr[data-key="kube-system"]')
    cpu = browser.find(f'[aria-label="CPU requested on {env.node}"]')
    before = float(cpu.get_attribute("aria-valuenow"))
    env.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "req-250m"},
                "spec": {"nodeName": env.node, "containers": [{
                    "name": "c", "image": "busybox:e2e", "command": ["sleep", "3600"],
                    "resources": {"requests": {"cpu": "250m", "memory": "64Mi"}}}]}})
    wait(lambda: abs(float(browser.find(f'[aria-label="CPU requested on {env.node}"]')
                           .get_attribute("aria-valuenow")) - before - 0.25) < 1e-6, 20, "the pod's CPU request")
    assert "Ready" in row.text
    # a node with GPUs (an object only: no kubelet) and a pod bound to it holding one GPU and 4 GiB shares
    env.api("POST", "/api/v1/nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "gpu-node"},
                                      "spec": {"taints": [{"key": "gpu", "value": "only", "effect": "NoSchedule"}]}})
    gpus = {"cpu": "8", "memory": "32Gi", "pods": "110", "nvidia.com/gpu": "2", "aliyun.com/gpu-mem": "32"}
    env.api("PATCH", "/api/v1/nodes/gpu-node/status", {"status": {"capacity": gpus, "allocatable": gpus}},
            {"Content-Type": "application/merge-patch+json"})
    want = {"nvidia.com/gpu": "1", "aliyun.com/gpu-mem": "4"}
    env.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "on-gpu"},
                "spec": {"nodeName": "gpu-node", "tolerations": [{"key": "gpu", "operator": "Exists"}],
                         "containers": [{"name": "c", "image": "busybox:e2e",
                                         "resources": {"requests": want, "limits": want}}]}})
    gpu = browser.find('[aria-label="GPUs requested on gpu-node"]', timeout=20)
    wait(lambda: browser.find('[aria-label="GPUs requested on gpu-node"]').get_attribute("aria-valuetext") == "1 / 2",
         20, "1 of 2 GPUs")
    assert browser.find('[aria-label="GPU memory requested on gpu-node"]').get_attribute("aria-valuetext") == "4 / 32"
    gpu_row = browser.find('table[aria-label="Nodes"] tr[data-key="gpu-node"]').text
    assert "gpu=only:NoSchedule" in gpu_row and "Ready=Unknown" in gpu_row
    assert gpu is not None and browser.absent(f'[aria-label="GPUs requested on {env.node}"]')
    browser.shot("overview")
    assert not browser.console_errors()
    env.delete_pod("on-gpu", grace=0)  # no kubelet there to confirm a graceful deletion
    env.api("DELETE", "/api/v1/nodes/gpu-node")


def _deployment(name: str, replicas: int = 1) -> dict[str, Any]:
    labels = {"app": name}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels}, "template": {
                "metadata": {"labels": labels},
                "spec": {"terminationGracePeriodSeconds": 1,
                         "containers": [container("c", "exec sleep 3600")]}}}}


def _dialog_confirm(browser: Browser) -> None:
    browser.find("dialog.confirm[open] .actions button.primary, dialog.confirm[open] .actions button.danger").click()


def test_deployment_scaled_and_restarted_from_the_page(env: Env, dashboard: Dashboard, browser: Browser):
    """Scale from the Workloads page: `kubectl get` sees the new replicas; an invalid count gets the
    API's own message in a toast; restart rolls out a second revision shown in the history."""
    env.api("POST", "/apis/apps/v1/namespaces/default/deployments", _deployment("web"))
    browser.get(dashboard.base + "/#/workloads")
    row = 'table[aria-label="Deployments"] tr[data-key="default/web"]'
    browser.find(row)
    browser.find(f'{row} button[data-action="scale"]').click()
    replicas = browser.find("#scale-replicas")
    replicas.clear()
    replicas.send_keys("3")
    browser.shot("workloads-scale-dialog")
    _dialog_confirm(browser)
    wait(lambda: env.kubectl("get", "deployment", "web", "-o", "jsonpath={.spec.replicas}") == "3", 20,
         "kubectl get deployment web: 3 replicas")
    wait(lambda: "3/3 ready" in browser.find(row).text, 60, "3/3 ready on the page")
    browser.shot("workloads")
    # an invalid count: the API refuses, and the page shows its message
    browser.find(f'{row} button[data-action="scale"]').click()
    replicas = browser.find("#scale-replicas")
    replicas.clear()
    replicas.send_keys("-1")
    _dialog_confirm(browser)
    browser.find(".toast.error", text="spec.replicas: Invalid value: -1: must be greater than or equal to 0")
    assert env.kubectl("get", "deployment", "web", "-o", "jsonpath={.spec.replicas}") == "3"
    # restart: a new revision, as `kubectl rollout restart`
    browser.find(f'{row} button[data-action="restart"]').click()
    _dialog_confirm(browser)
    wait(lambda: env.kubectl("get", "deployment", "web", "-o",
                             "jsonpath={.spec.template.metadata.annotations.kubectl\\.kubernetes\\.io/restartedAt}"),
         20, "the restartedAt annotation")
    browser.get(dashboard.base + "/#/deployments/default/web")
    wait(lambda: len(browser.all('table[aria-label="Revisions"] tbody tr')) == 2, 30, "two revisions")
    first = browser.find('table[aria-label="Revisions"] tbody tr')
    assert first.find_element("css selector", 'td[data-column="revision"]').text == "2"
    assert "current" in first.text
    browser.shot("deployment")


def test_pending_pod_says_why(env: Env, dashboard: Dashboard, browser: Browser):
    """A pod no node can hold: its page shows the scheduler's FailedScheduling message."""
    env.create(busybox_pod("too-big", "sleep 3600", containers=[
        container("c", "sleep 3600", resources={"requests": {"cpu": "500"}})]))
    browser.get(dashboard.base + "/#/pods")
    link = browser.find('table[aria-label="Pods"] tr[data-key="default/too-big"] a')
    browser.shot("pods")
    link.click()
    msg = browser.find(".scheduling-message", timeout=30)
    assert "0/1 nodes are available" in msg.text and "Insufficient cpu" in msg.text, msg.text
    assert browser.find(".scheduling-reasons li").text == "1 of 1 nodes: Insufficient cpu"
    assert "PodScheduled" in browser.text('table[aria-label="Conditions"]')
    browser.shot("pod-pending")
    browser.get(dashboard.base + "/#/overview")
    warning = browser.find('table[aria-label="Warning events"] tbody tr', text="Pod/too-big")
    assert "FailedScheduling" in warning.text
    env.delete_pod("too-big", grace=0)


def test_logs_stream_as_the_pod_writes(env: Env, dashboard: Dashboard, browser: Browser):
    env.create(busybox_pod("logger", "i=0; while true; do echo line-$i; i=$((i+1)); sleep 0.3; done"))
    env.wait_running("logger", 60)
    browser.get(dashboard.base + "/#/logs/default/logger")
    text = wait(lambda: browser.find("#log-text").text if "line-2" in browser.find("#log-text").text else None,
                30, "the first lines")
    last = max(int(line.split("-")[1]) for line in text.split() if line.startswith("line-"))
    # the page was not reloaded: later lines arrive on the open stream
    wait(lambda: f"line-{last + 5}" in browser.find("#log-text").text, 20, f"line-{last + 5}")
    assert browser.find("#log-state").text == "streaming"
    browser.shot("logs")
    # the connections drop (as Chromium drops them when a pod's veth appears): the stream resumes
    # where it stopped, no line lost or shown twice, and the page's watches come back too
    assert browser.bridge.drop(dashboard.port) >= 2  # the log stream and the watch socket
    seen = len(browser.find("#log-text").text.split())
    wait(lambda: len(browser.find("#log-text").text.split()) > seen + 5, 20, "lines after the drop")
    lines = browser.find("#log-text").text.split()
    assert lines == [f"line-{i}" for i in range(len(lines))], lines
    browser.get(dashboard.base + "/#/pods")
    browser.find('table[aria-label="Pods"] tr[data-key="default/logger"]')
    assert browser.bridge.drop(dashboard.port) >= 1  # the watch socket
    env.create(busybox_pod("after-drop", "exec sleep 3600"))
    browser.find('table[aria-label="Pods"] tr[data-key="default/after-drop"]', timeout=30)
    env.delete_pod("after-drop", grace=0)


def test_logs_of_the_previous_instance_and_another_container(env: Env, dashboard: Dashboard, browser: Browser):
    """The container picker and "Previous instance" (the container's last run before its restart)."""
    script = ("n=$(cat /d/n 2>/dev/null || echo 0); n=$((n+1)); echo $n > /d/n; echo attempt-$n; "
              "[ $n -ge 2 ] && exec sleep 3600; exit 1")
    env.create(busybox_pod("crashy", "", volumes=[{"name": "d", "emptyDir": {}}], containers=[
        container("main", script, volumeMounts=[{"name": "d", "mountPath": "/d"}]),
        container("side", "echo from-side; exec sleep 3600")]))
    env.wait_pod("crashy", lambda p: any(c["name"] == "main" and c.get("restartCount", 0) >= 1
                                         and "running" in c.get("state", {})
                                         for c in p.get("status", {}).get("containerStatuses", [])), 60)
    browser.get(dashboard.base + "/#/logs/default/crashy")
    wait(lambda: "attempt-2" in browser.find("#log-text").text, 20, "the current instance's log")
    browser.find("#log-previous").click()
    wait(lambda: browser.find("#log-text").text.strip() == "attempt-1", 20, "the previous instance's log")
    browser.find("#log-previous").click()
    from selenium.webdriver.support.ui import Select

    Select(browser.find("#log-container")).select_by_visible_text("side")
    wait(lambda: browser.find("#log-text").text.strip() == "from-side", 20, "the other container's log")


def test_terminal_runs_echo_hi_in_a_runc_pod(env: Env, dashboard: Dashboard, browser: Browser):
    env.create(busybox_pod("shell", "exec sleep 3600"))
    env.wait_running("shell", 60)
    browser.get(dashboard.base + "/#/exec/default/shell")
    browser.find("form.toolbar button.primary", text="Connect").click()
    state = wait(lambda: t if (t := browser.find("#exec-state").text).startswith(("connected", "closed", "session ended", "the exec stream"))
                 else None, 45, "the exec stream")
    assert state.startswith("connected"), state
    browser.find(".xterm-helper-textarea").send_keys("echo h''i\n")  # the typed line itself is not "hi"

    def rows() -> list[str]:
        return [r.text.strip() for r in browser.all(".xterm-rows > div")]

    wait(lambda: "hi" in rows(), 20, "a line 'hi' in the terminal")
    browser.shot("terminal")
    browser.find(".xterm-helper-textarea").send_keys("exit\n")
    wait(lambda: browser.find("#exec-state").text == "session ended", 20, "the session to end")


def test_pod_deleted_from_its_page_after_confirmation(env: Env, dashboard: Dashboard, browser: Browser):
    env.create(busybox_pod("doomed", "exec sleep 3600"))
    browser.get(dashboard.base + "/#/pods/default/doomed")
    browser.find('button[data-action="delete"]').click()
    dialog = browser.find("dialog.confirm[open]")
    assert "Pod doomed in namespace default will be deleted." in dialog.text
    browser.find("dialog.confirm[open] .actions button", text="Cancel").click()
    assert env.pod("doomed") is not None
    browser.find('button[data-action="delete"]').click()
    _dialog_confirm(browser)
    browser.find("main h1", text="Pods")  # back to the list
    wait(lambda: env.kubectl("get", "pod", "doomed", "--ignore-not-found", "-o", "name") == "" or
         env.pod("doomed")["metadata"].get("deletionTimestamp"), 20, "the pod deleted")


def test_yaml_edit_is_dry_run_then_diffed_then_applied(env: Env, dashboard: Dashboard, browser: Browser):
    env.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"}, "data": {"mode": "old"}})
    browser.get(dashboard.base + "/#/yaml/_/v1/configmaps/default/settings")
    area = browser.find("#yaml-text")
    wait(lambda: "mode: old" in area.get_attribute("value"), 10, "the object's YAML")
    assert "managedFields" not in area.get_attribute("value")
    browser.driver.execute_script(
        "arguments[0].value = arguments[0].value.replace('mode: old', 'mode: new');"
        "arguments[0].dispatchEvent(new Event('input', {bubbles: true}))", area)
    browser.find("#yaml-review").click()
    diff = browser.find("#yaml-diff")
    assert "-  mode: old" in diff.text and "+  mode: new" in diff.text, diff.text
    # the dry run stored nothing
    assert env.kubectl("get", "configmap", "settings", "-o", "jsonpath={.data.mode}") == "old"
    browser.shot("yaml-diff")
    browser.find("#yaml-apply").click()
    wait(lambda: env.kubectl("get", "configmap", "settings", "-o", "jsonpath={.data.mode}") == "new", 10,
         "the applied change")
    # invalid YAML content is the API's to refuse: its message shows
    browser.driver.execute_script(
        "arguments[0].value = arguments[0].value.replace('name: settings', 'name: Not_Valid');"
        "arguments[0].dispatchEvent(new Event('input', {bubbles: true}))", browser.find("#yaml-text"))
    browser.find("#yaml-review").click()
    browser.find(".toast.error", text="the name of the object (Not_Valid) does not match the name on the URL "
                                      "(settings)")


def test_view_user_sees_no_edit_buttons_and_gets_rbacs_message(env: Env, browser: Browser):
    """Token mode: a ServiceAccount bound to `view` signs in with its token; it sees the objects but
    no scale/restart/delete buttons and a read-only YAML view; forcing a delete through the proxy
    gets RBAC's exact refusal."""
    env.kubectl("create", "serviceaccount", "viewer")
    env.kubectl("create", "rolebinding", "viewer-view", "--clusterrole=view", "--serviceaccount=default:viewer")
    token = env.kubectl("create", "token", "viewer").strip()
    tdash = Dashboard(env.cluster.kubeconfig, auth="token").start()
    try:
        browser.get(tdash.base + "/")
        browser.find("#token")
        browser.find("#token").send_keys("not-a-token")
        browser.find('form button[type="submit"]').click()
        assert browser.find("#login-error").text == "Unauthorized"
        browser.find("#token").clear()
        browser.find("#token").send_keys(token)
        browser.shot("login")
        browser.find('form button[type="submit"]').click()
        assert browser.find("#current-user").text == "system:serviceaccount:default:viewer"
        browser.get(tdash.base + "/#/workloads")
        row = browser.find('table[aria-label="Deployments"] tr[data-key="default/web"]')
        assert "YAML" in row.text
        browser.get(tdash.base + "/#/pods")
        browser.find('table[aria-label="Pods"] tr[data-key="default/shell"]')
        browser.shot("view-user-pods")
        assert browser.absent("button[data-action]"), [b.text for b in browser.all("button[data-action]")]
        browser.get(tdash.base + "/#/yaml/_/v1/configmaps/default/settings")
        wait(lambda: "mode:" in browser.find("#yaml-text").get_attribute("value"), 10, "the YAML")
        assert browser.find("#yaml-text").get_attribute("readonly") is not None
        assert browser.absent("#yaml-review")
        browser.get(tdash.base + "/#/exec/default/shell")
        assert "create pods/exec" in browser.find("#exec-denied").text
        assert browser.absent("form.toolbar button.primary")
        answer = browser.driver.execute_async_script(
            "const done = arguments[0];"
            "fetch('/api/v1/namespaces/default/pods/shell', {method: 'DELETE', headers: {'X-Pyk8s-Dashboard': '1'}})"
            ".then(async r => done([r.status, await r.json()]))")
        assert answer[0] == 403
        assert answer[1]["message"] == ('pods "shell" is forbidden: User "system:serviceaccount:default:viewer" '
                                        'cannot delete resource "pods" in API group "" in the namespace "default"')
        assert env.pod("shell") is not None
    finally:
        tdash.stop()
    assert not tdash.errors()


UNLABELLED = """
const named = (el) => (el.textContent || '').trim() || el.getAttribute('aria-label') || el.getAttribute('aria-labelledby');
const bad = [];
for (const el of document.querySelectorAll('input, select, textarea')) {
  if (!(el.labels && el.labels.length) && !el.getAttribute('aria-label') && !el.getAttribute('aria-labelledby'))
    bad.push(el.outerHTML.slice(0, 120));
}
for (const el of document.querySelectorAll('button, a[href]')) if (!named(el)) bad.push(el.outerHTML.slice(0, 120));
for (const el of document.querySelectorAll('table')) if (!el.getAttribute('aria-label')) bad.push('table');
return bad;
"""


# WCAG 2 contrast of every element's own text against the first opaque background behind it
LOW_CONTRAST = """
const rgb = (c) => (c.match(/[\\d.]+/g) || []).map(Number);
const lum = ([r, g, b]) => {
  const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
  return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
};
const bad = [];
for (const el of document.querySelectorAll('body *')) {
  if (el.closest('.xterm, .bar, svg') || !el.getClientRects().length) continue;
  const own = [...el.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim());
  if (!own) continue;
  const st = getComputedStyle(el);
  if (st.visibility === 'hidden' || el.disabled) continue;
  let bg = null;
  for (let p = el; p; p = p.parentElement) {
    const c = rgb(getComputedStyle(p).backgroundColor);
    if (c.length === 3 || (c.length === 4 && c[3] === 1)) { bg = c.slice(0, 3); break; }
  }
  bg = bg || [255, 255, 255];
  const [l1, l2] = [lum(rgb(st.color).slice(0, 3)), lum(bg)].sort((a, b) => b - a);
  const ratio = (l1 + 0.05) / (l2 + 0.05);
  if (ratio < 4.5) bad.push(`${el.tagName}.${el.className} "${el.textContent.trim().slice(0, 30)}" ${ratio.toFixed(2)}`);
}
return bad;
"""


def test_every_page_is_labelled_and_works_from_the_keyboard(env: Env, dashboard: Dashboard, browser: Browser):
    """Every form control has a label, every button and link a name, every table a label, all text
    WCAG AA contrast (4.5:1); the skip link comes first; a table sorts from the keyboard."""
    from selenium.webdriver.common.keys import Keys

    pages = ["/#/overview", "/#/workloads", "/#/pods", "/#/pods/default/shell", "/#/logs/default/shell",
             "/#/exec/default/shell", "/#/yaml/_/v1/configmaps/default/settings", "/#/deployments/default/web"]
    for page in pages:
        browser.get(dashboard.base + page)
        browser.find("main h1")
        wait(lambda: not browser.all("main .muted") or "Loading" not in browser.text("main"), 10, "the page")
        assert browser.driver.execute_script(UNLABELLED) == [], page
        assert browser.driver.execute_script(LOW_CONTRAST) == [], page
    # the checks can fail: a grey-on-white line and an unlabelled input are found
    browser.driver.execute_script("const p = document.createElement('p'); p.id = 'probe'; p.style.color = '#999';"
                                  "p.textContent = 'faint'; p.appendChild(document.createElement('input'));"
                                  "document.querySelector('main').appendChild(p)")
    assert [x for x in browser.driver.execute_script(LOW_CONTRAST) if '"faint"' in x]
    assert [x for x in browser.driver.execute_script(UNLABELLED) if x.startswith("<input")]
    browser.driver.execute_script("document.getElementById('probe').remove()")  # the app keeps the page's DOM
    browser.get(dashboard.base + "/#/pods")
    browser.find('table[aria-label="Pods"] tbody tr')
    browser.driver.find_element("css selector", "body").send_keys(Keys.TAB)
    assert browser.driver.switch_to.active_element.text == "Skip to content"
    header = browser.find('table[aria-label="Pods"] th button[data-column="restarts"]')
    header.send_keys(Keys.ENTER)
    th = browser.find('table[aria-label="Pods"] th[aria-sort="ascending"]')
    assert "Restarts" in th.text
    browser.find('table[aria-label="Pods"] th button[data-column="restarts"]').send_keys(Keys.ENTER)
    assert "Restarts" in browser.find('table[aria-label="Pods"] th[aria-sort="descending"]').text


def test_workload_kinds_in_all_namespaces(env: Env, dashboard: Dashboard, browser: Browser):
    """Jobs, CronJobs, StatefulSets and DaemonSets with their progress; "All namespaces" adds the
    namespace column."""
    pod = {"terminationGracePeriodSeconds": 1, "containers": [container("c", "exec sleep 3600")]}
    labels = {"app": "kinds"}
    env.api("POST", "/apis/batch/v1/namespaces/default/jobs", {
        "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "once"},
        "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [container("c", "echo done")]}}}})
    env.api("POST", "/apis/batch/v1/namespaces/default/cronjobs", {
        "apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "nightly"},
        "spec": {"schedule": "0 3 * * *", "suspend": True, "jobTemplate": {"spec": {"template": {"spec": {
            "restartPolicy": "Never", "containers": [container("c", "true")]}}}}}})
    env.api("POST", "/apis/apps/v1/namespaces/default/statefulsets", {
        "apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db"},
        "spec": {"serviceName": "db", "replicas": 1, "selector": {"matchLabels": {"app": "db"}},
                 "template": {"metadata": {"labels": {"app": "db"}}, "spec": pod}}})
    env.api("POST", "/apis/apps/v1/namespaces/default/daemonsets", {
        "apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "agent"},
        "spec": {"selector": {"matchLabels": labels}, "template": {"metadata": {"labels": labels}, "spec": pod}}})
    browser.get(dashboard.base + "/#/workloads")
    from selenium.webdriver.support.ui import Select

    Select(browser.find("#namespace")).select_by_visible_text("All namespaces")
    browser.find("main h1", text="Workloads")
    assert browser.find("main h1").text == "Workloads"
    rows = {
        "Jobs": ("default/once", "1/1 succeeded"),
        "CronJobs": ("default/nightly", "0 3 * * *"),
        "StatefulSets": ("default/db", "1/1 ready"),
        "DaemonSets": ("default/agent", "1/1 ready"),
    }
    for table, (key, text) in rows.items():
        wait(lambda t=table, k=key, x=text: x in browser.find(f'table[aria-label="{t}"] tr[data-key="{k}"]').text,
             60, f"{key} in {table}: {text}")
    assert browser.find('table[aria-label="Deployments"] th button[data-column="namespace"]')
    browser.shot("workloads-all-namespaces")
    Select(browser.find("#namespace")).select_by_visible_text("default")


def test_statefulset_daemonset_and_cronjob_history(env: Env, dashboard: Dashboard, browser: Browser):
    """A StatefulSet and a DaemonSet restarted from their pages show two ControllerRevisions, the
    newest current and holding the pod; a CronJob's page lists the Job `kubectl create job --from`
    made from it. (The objects are test_workload_kinds_in_all_namespaces's.)"""
    from selenium.webdriver.support.ui import Select

    first = 'table[aria-label="Revisions"] tbody tr'  # the newest revision's row
    browser.get(dashboard.base + "/#/workloads")
    Select(browser.find("#namespace")).select_by_visible_text("default")
    for kind, path, table in (("StatefulSet", "statefulsets/default/db", "StatefulSets"),
                              ("DaemonSet", "daemonsets/default/agent", "DaemonSets")):
        browser.get(dashboard.base + "/#/workloads")
        browser.find(f'table[aria-label="{table}"] tr[data-key="{path.split("/", 1)[1]}"] a').click()
        browser.find("main h1", text=f"{kind} default/")
        wait(lambda: len(browser.all('table[aria-label="Revisions"] tbody tr')) == 1, 30, f"{kind}: one revision")
        browser.find('button[data-action="restart"]').click()
        _dialog_confirm(browser)
        wait(lambda: len(browser.all('table[aria-label="Revisions"] tbody tr')) == 2, 30, f"{kind}: two revisions")
        assert browser.find(f'{first} td[data-column="revision"]').text == "2"
        # the rolled pod lands on the new revision and turns ready there
        wait(lambda: "current" in browser.find(first).text
             and browser.find(f'{first} td[data-column="pods"]').text == "1 (1)", 90,
             f"{kind}: the pod at revision 2, ready")
        browser.shot(f"{kind.lower()}-history")
        assert browser.driver.execute_script(UNLABELLED) == [], kind
        assert browser.driver.execute_script(LOW_CONTRAST) == [], kind
    env.kubectl("create", "job", "by-hand", "--from=cronjob/nightly")
    browser.get(dashboard.base + "/#/workloads")
    browser.find('table[aria-label="CronJobs"] tr[data-key="default/nightly"] a').click()
    browser.find("main h1", text="CronJob default/nightly")
    assert "0 3 * * * — suspended" in browser.text("main dl")
    row = 'table[aria-label="Jobs"] tr[data-key="default/by-hand"]'
    wait(lambda: "Complete" in browser.find(row).text, 60, "the job Complete in the history")
    assert "1/1 succeeded" in browser.find(row).text
    browser.shot("cronjob-history")
    assert browser.driver.execute_script(UNLABELLED) == []
    assert browser.driver.execute_script(LOW_CONTRAST) == []

"""The dashboard's pages driven in a real headless Chromium against a real cluster with a runc node.

One cluster (a `pyk8s server` plus a `pyk8s agent` running real runc pods), one `pyk8s dashboard`
in kubeconfig mode (the admin's kubeconfig, as `kubectl proxy`), one browser for the module.
Screenshots of each page go to artifacts/dashboard/.
"""

from __future__ import annotations

import pytest

from tests.dashboard.browser import Browser, Dashboard, wait
from tests.e2e.kubelet_harness import Env, requirements

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("runc"), pytest.mark.timeout(240)]


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
    browser.shot("overview")
    assert not browser.console_errors()

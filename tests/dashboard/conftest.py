"""Fixtures the page modules share: a dashboard on the module's `cluster` (kubeconfig mode) and one
headless Chromium signed in to it. A module defines `cluster`; one that needs more defines its own."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.cluster import Cluster
from tests.dashboard.browser import Browser, Dashboard


@pytest.fixture(scope="module")
def dashboard(cluster: Cluster) -> Iterator[Dashboard]:
    d = Dashboard(cluster.kubeconfig).start()
    yield d
    d.stop()


@pytest.fixture(scope="module")
def browser(dashboard: Dashboard) -> Iterator[Browser]:
    b = Browser()
    try:
        b.get(dashboard.url)
        yield b
    finally:
        b.quit()

"""The dashboard's test rig: `pyk8s dashboard` against a real server, and a real headless Chromium.

`Dashboard` runs the CLI in a subprocess (port 0: a free one) and reads its URL; `Browser` drives
Debian's chromium through chromedriver with Selenium. `Browser.shot(name)` saves a PNG to
artifacts/dashboard/ for review. Under CI=true a missing chromium or chromedriver fails the test.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.cluster import REPO
from tests.conftest import require

ARTIFACTS = REPO / "artifacts" / "dashboard"
CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"


def wait(pred: Callable[[], Any], timeout: float, what: str, interval: float = 0.1) -> Any:
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = pred()
        except Exception as e:  # noqa: BLE001 (a page mid-render: try again)
            last = e
        else:
            if last:
                return last
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what} (last: {last!r})")


class Dashboard:
    """`pyk8s dashboard` in a subprocess."""

    def __init__(self, kubeconfig: str, auth: str = "kubeconfig", extra: list[str] | None = None) -> None:
        self.kubeconfig = kubeconfig
        self.auth = auth
        self.extra = list(extra or [])
        self.proc: subprocess.Popen[str] | None = None
        self.url = ""  # as printed: with ?secret= in kubeconfig mode
        self.output: list[str] = []

    @property
    def base(self) -> str:
        return self.url.split("?", 1)[0].rstrip("/")

    @property
    def port(self) -> int:
        return int(self.base.rsplit(":", 1)[1])

    @property
    def secret(self) -> str:
        return self.url.split("secret=", 1)[1] if "secret=" in self.url else ""

    def start(self, timeout: float = 30.0) -> Dashboard:
        cmd = [sys.executable, "-m", "pyk8s.cli", "dashboard", "--kubeconfig", self.kubeconfig, "--port", "0",
               "--auth", self.auth, *self.extra]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                     env=dict(os.environ, PYTHONUNBUFFERED="1"), cwd=str(REPO))
        assert self.proc.stdout is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if not line and self.proc.poll() is not None:
                raise RuntimeError("pyk8s dashboard exited:\n" + "".join(self.output))
            self.output.append(line)
            if m := re.search(r"serving at (http://\S+)", line):
                self.url = m.group(1)
                break
        else:
            raise RuntimeError("pyk8s dashboard did not start:\n" + "".join(self.output))
        threading.Thread(target=self._drain, daemon=True).start()
        return self

    def _drain(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        for line in self.proc.stdout:
            self.output.append(line)

    def errors(self) -> str:
        """What the dashboard logged as an error (a traceback is a bug: bad input gets a Status)."""
        text = "".join(self.output)
        return text if "Traceback" in text or "Error handling request" in text else ""

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


class Browser:
    """One headless Chromium (1280 px wide, a laptop's width) for a test module, in a network namespace
    of its own (netns_bridge.py says why): the dashboards it visits are bridged in by port."""

    def __init__(self) -> None:
        require("chromium (Debian package chromium)", os.path.exists(CHROMIUM))
        require("chromedriver (Debian package chromium-driver)", os.path.exists(CHROMEDRIVER))
        require("root (the browser's network namespace)", os.geteuid() == 0)
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service

        from tests.cluster import scratch_dir
        from tests.dashboard.netns_bridge import NetnsBridge
        from tests.e2e.kubelet_harness import free_kubelet_port

        self.bridge = NetnsBridge()
        try:
            self._start(webdriver, Service, scratch_dir("dash-chromedriver-"), free_kubelet_port())
        except BaseException:
            self.bridge.close()
            raise

    def _start(self, webdriver: Any, service: Any, scratch: str, port: int) -> None:
        # chromedriver runs inside the namespace (it starts the browser there); its port is bridged out
        wrapper = os.path.join(scratch, "chromedriver")
        with open(wrapper, "w") as f:
            f.write("#!/bin/sh\nexec " + " ".join(self.bridge.command([CHROMEDRIVER])) + ' "$@"\n')
        os.chmod(wrapper, 0o700)
        self.bridge.expose_out(port)

        opts = webdriver.ChromeOptions()
        opts.binary_location = CHROMIUM
        for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                  "--window-size=1280,900", "--no-first-run", "--disable-extensions", "--lang=en-US"):
            opts.add_argument(a)
        opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        self.driver = webdriver.Chrome(service=service(wrapper, port=port), options=opts)
        self.driver.set_page_load_timeout(30)
        ARTIFACTS.mkdir(parents=True, exist_ok=True)

    def get(self, url: str) -> None:
        from urllib.parse import urlsplit

        if (port := urlsplit(url).port) is not None:
            self.bridge.expose_in(port)
        self.driver.get(url)

    def shot(self, name: str) -> Path:
        path = ARTIFACTS / f"{name}.png"
        self.driver.save_screenshot(str(path))
        return path

    def find(self, css: str, timeout: float = 15.0, text: str | None = None) -> Any:
        """The first element matching `css` (whose text contains `text`), once it is there."""
        from selenium.webdriver.common.by import By

        def look() -> Any:
            for el in self.driver.find_elements(By.CSS_SELECTOR, css):
                if text is None or text in el.text:
                    return el
            return None

        try:
            return wait(look, timeout, f"{css!r}" + (f" with text {text!r}" if text else ""))
        except AssertionError as e:
            raise AssertionError(f"{e}\n{self._state()}") from None

    def _state(self) -> str:
        """What the page showed when a wait gave up: its address, text and console errors."""
        from selenium.webdriver.common.by import By

        try:
            body = self.driver.find_element(By.TAG_NAME, "body").text
            logs = [f"{e.get('level')} {e.get('message')}" for e in self.driver.get_log("browser")]
            return (f"page {self.driver.current_url}:\n{body[:1500]}\nconsole:\n" + "\n".join(logs[-20:]))
        except Exception as e:  # noqa: BLE001 (a browser that is gone says so)
            return f"(no page state: {e})"

    def all(self, css: str) -> list[Any]:
        from selenium.webdriver.common.by import By

        return list(self.driver.find_elements(By.CSS_SELECTOR, css))

    def absent(self, css: str) -> bool:
        return not self.all(css)

    def text(self, css: str = "body") -> str:
        return str(self.find(css).text)

    def console_errors(self) -> list[str]:
        return [e["message"] for e in self.driver.get_log("browser") if e.get("level") == "SEVERE"]

    def quit(self) -> None:
        try:
            self.driver.quit()
        finally:
            self.bridge.close()

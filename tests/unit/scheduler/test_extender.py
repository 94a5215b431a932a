"""Extender configuration (validated as upstream) and a non-ignorable extender's failure."""

from __future__ import annotations

import asyncio
import socket

import pytest

from pyk8s.scheduler.config import parse_config
from pyk8s.scheduler.extender_cycle import interested_extenders, schedule_with_extenders
from pyk8s.scheduler.scheduler import Scheduler

from ._fixtures import node, pod

API = "kubescheduler.config.k8s.io/v1"


@pytest.mark.parametrize("extenders,error", [
    ([{"filterVerb": "f"}], "extenders[0].urlPrefix: Required value"),
    ([{"urlPrefix": "http://x", "prioritizeVerb": "p", "weight": -1}],
     "extenders[0].weight: Invalid value: -1: must have a positive weight applied to it"),
    ([{"urlPrefix": "http://a", "bindVerb": "b"}, {"urlPrefix": "http://b", "bindVerb": "b"}],
     "only one extender can implement bind, found 2"),
    ([{"urlPrefix": "http://x", "managedResources": [{"name": "a/b"}, {"name": "a/b"}]}],
     'extenders[0].managedResources[1].name: Invalid value: "a/b": duplicate extender managed resource name'),
    ([{"urlPrefix": "http://x", "httpTimeout": "soon"}], 'httpTimeout: invalid duration "soon"'),
])
def test_invalid_extender_config(extenders: list, error: str) -> None:
    with pytest.raises(ValueError, match=None) as e:
        parse_config({"apiVersion": API, "extenders": extenders})
    assert error in str(e.value)


def test_ignored_by_scheduler_resources_are_not_checked_by_node_resources_fit() -> None:
    cfg = parse_config({"apiVersion": API, "extenders": [
        {"urlPrefix": "http://x", "managedResources": [{"name": "example.com/w", "ignoredByScheduler": True}]}]})
    assert cfg.extenders[0].http_timeout == 5.0
    assert "example.com/w" in cfg.profiles[0].plugin_args["NodeResourcesFit"]["ignoredResources"]


def _closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def test_a_failing_non_ignorable_extender_fails_the_cycle_with_its_error() -> None:
    url = f"http://127.0.0.1:{_closed_port()}/ext"
    s = Scheduler({"apiVersion": API, "extenders": [
        {"urlPrefix": url, "filterVerb": "filter", "managedResources": [{"name": "example.com/w"}]}]})
    s.on_node_add(node("n1", extra={"example.com/w": "1"}))
    p = pod("w", requests={"example.com/w": "1"})
    p["spec"]["containers"][0]["resources"]["limits"] = {"example.com/w": "1"}
    s.on_pod_add(p)
    s.on_pod_add(pod("plain"))

    async def run() -> list:
        out = []
        for _ in range(2):
            qpi = s.queue.pop()
            exts = interested_extenders(s, qpi)
            out.append((qpi.pod_info.name, len(exts),
                        await schedule_with_extenders(s, qpi, exts) if exts else s.schedule(qpi)))
        for e in s.extenders:
            await e.close()
        return out

    got = {name: (n, d) for name, n, d in asyncio.run(run())}
    assert got["plain"][0] == 0 and got["plain"][1].node == "n1"
    d = got["w"][1]
    assert d.node is None and d.reason == "SchedulerError"
    assert d.message.startswith(f'Post "{url}/filter": '), d.message

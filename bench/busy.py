"""A busy API server's load, from its own process: writers creating ConfigMaps and open watches.

`python -m bench.busy KUBECONFIG OUT [--writers 50] [--watches 200] [--namespace default]`
prints `busy: ready` once every watch has its answer's head and every writer has one write
acknowledged, then keeps writing until the server goes away (a writer stops when it cannot
connect). Every acknowledged write (a 2xx answer) is appended to OUT/acks as `name rv` before
the next one is sent, so whoever stops the server can check afterwards that none was lost.
OUT/summary.json says how each watch ended ("clean": the chunked stream's last chunk arrived,
as a client sees a server close a watch on purpose; "broken": the connection dropped mid-stream)
and how the watchers' next watch went (each watches again after a clean end, as informers do:
"rewatched" on the same server, "refused" with an error answer, "closed" before an answer),
and what the writers got besides acknowledgements (answers by code, requests the connection
dropped).

Plain HTTP/1.1 over asyncio streams, so that what is counted is exactly what reached the wire.
Used by bench/stopping.py and the process tests (tests/integration/test_server_processes.py).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import ssl
import sys
import time
from collections import Counter
from typing import Any
from urllib.parse import urlsplit

READY_LINE = "busy: ready"


class Load:
    def __init__(self, kubeconfig: str, out: str, writers: int, watches: int, namespace: str) -> None:
        from pyk8s.client.kubeconfig import load_kubeconfig

        kc = load_kubeconfig(kubeconfig)
        u = urlsplit(kc.server)
        self.host, self.port = u.hostname or "127.0.0.1", u.port or 443
        self.ctx: ssl.SSLContext | None = kc.ssl_client_context()
        self.out = out
        self.n_writers, self.n_watches, self.ns = writers, watches, namespace
        self.acks = open(os.path.join(out, "acks"), "a")
        self.codes: Counter[str] = Counter()
        self.watch_ends: Counter[str] = Counter()
        self.watch_events = 0
        self.heads = 0
        self.first_acks = 0
        self.latencies: list[float] = []
        self.ready = asyncio.Event()

    async def _connect(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        return await asyncio.open_connection(self.host, self.port, ssl=self.ctx,
                                             server_hostname=self.host if self.ctx else None)

    def _check_ready(self) -> None:
        if self.heads >= self.n_watches and self.first_acks >= self.n_writers:
            self.ready.set()

    async def writer(self, i: int) -> None:
        path = f"/api/v1/namespaces/{self.ns}/configmaps"
        seq = 0
        first = True
        while True:
            try:
                reader, w = await self._connect()
            except OSError:
                return  # the server is gone
            try:
                while True:
                    name = f"busy-{os.getpid()}-{i}-{seq}"
                    seq += 1
                    body = json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name},
                                       "data": {"k": "v" * 100}}).encode()
                    w.write(f"POST {path} HTTP/1.1\r\nHost: {self.host}\r\nContent-Type: application/json\r\n"
                            f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
                    t = time.monotonic()
                    status, headers, data = await _response(reader)
                    self.latencies.append(time.monotonic() - t)
                    if 200 <= status < 300:
                        rv = json.loads(data)["metadata"]["resourceVersion"]
                        self.acks.write(f"{name} {rv}\n")
                        self.acks.flush()
                        if first:
                            first = False
                            self.first_acks += 1
                            self._check_ready()
                    else:
                        self.codes[str(status)] += 1
                    if headers.get("connection", "").lower() == "close":
                        break
            except (OSError, asyncio.IncompleteReadError, ValueError):
                self.codes["dropped"] += 1  # the connection ended with this request unanswered
            finally:
                w.close()

    async def watch(self, i: int) -> None:
        """One watcher as an informer is one: when its watch ends cleanly it watches again, on
        the same connection, until the server refuses or closes it."""
        try:
            reader, w = await self._connect()
        except OSError:
            self.watch_ends["unconnected"] += 1
            self.heads += 1
            return
        first = True
        rewatch = False
        try:
            while True:
                end = "broken"  # cut without the stream's last chunk
                try:
                    w.write(f"GET /api/v1/namespaces/{self.ns}/configmaps?watch=1 HTTP/1.1\r\n"
                            f"Host: {self.host}\r\n\r\n".encode())
                    head = await reader.readuntil(b"\r\n\r\n")
                    if b" 200 " not in head.split(b"\r\n", 1)[0]:
                        end = "refused"  # e.g. 429 from a stopping server: watch elsewhere
                        return
                    if first:
                        first = False
                        self.heads += 1
                        self._check_ready()
                    else:
                        self.watch_ends["rewatched"] += 1
                    while True:
                        size = int((await reader.readline()).strip() or b"x", 16)
                        if size == 0:
                            await reader.readexactly(2)
                            end = "clean"
                            rewatch = True
                            break
                        await reader.readexactly(size + 2)
                        self.watch_events += 1
                except asyncio.IncompleteReadError as e:
                    if rewatch and not e.partial:
                        end = "closed"  # the connection closed before a new watch began: watch elsewhere
                    return
                except (OSError, ValueError):
                    return
                finally:
                    self.watch_ends[end] += 1
        finally:
            w.close()

    async def run(self, timeout: float) -> None:
        tasks = [asyncio.create_task(self.watch(i)) for i in range(self.n_watches)]
        await self.ready_watches(tasks)
        tasks += [asyncio.create_task(self.writer(i)) for i in range(self.n_writers)]
        waiting = asyncio.create_task(self.ready.wait())
        await asyncio.wait([waiting, *tasks], return_when=asyncio.FIRST_COMPLETED)
        if self.ready.is_set():
            print(READY_LINE, flush=True)
        try:
            await asyncio.wait_for(asyncio.gather(*tasks), timeout)
        except TimeoutError:
            pass
        self.summary()

    async def ready_watches(self, tasks: list[asyncio.Task[None]], timeout: float = 60.0) -> None:
        """Until every watch is open: the writers start on a server that already fans out to all."""
        deadline = time.monotonic() + timeout
        while self.heads < self.n_watches and time.monotonic() < deadline and not all(t.done() for t in tasks):
            await asyncio.sleep(0.02)

    def summary(self) -> None:
        lat = sorted(self.latencies)
        out = {"codes": dict(self.codes), "watch_ends": dict(self.watch_ends), "watch_events": self.watch_events,
               "writes": len(lat), "latency_p99": lat[int(len(lat) * 0.99)] if lat else 0.0,
               "latency_max": lat[-1] if lat else 0.0}
        with open(os.path.join(self.out, "summary.json"), "w") as f:
            json.dump(out, f)
        self.acks.close()


async def _response(reader: asyncio.StreamReader) -> tuple[int, dict[str, str], bytes]:
    head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
    status = int(head[0].split(" ", 2)[1])
    headers = {}
    for line in head[1:]:
        k, sep, v = line.partition(":")
        if sep:
            headers[k.strip().lower()] = v.strip()
    n = int(headers.get("content-length", "0"))
    return status, headers, await reader.readexactly(n) if n else b""


def read_acks(out: str) -> dict[str, str]:
    """name -> resourceVersion of every acknowledged write."""
    acks: dict[str, str] = {}
    with open(os.path.join(out, "acks")) as f:
        for line in f:
            if line.endswith("\n"):  # a line cut short was never acknowledged whole
                name, rv = line.split()
                acks[name] = rv
    return acks


def read_summary(out: str) -> dict[str, Any]:
    with open(os.path.join(out, "summary.json")) as f:
        return dict(json.load(f))


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.busy")
    p.add_argument("kubeconfig")
    p.add_argument("out")
    p.add_argument("--writers", type=int, default=50)
    p.add_argument("--watches", type=int, default=200)
    p.add_argument("--namespace", default="default")
    p.add_argument("--timeout", type=float, default=120.0, help="stop after this long even if the server stays")
    a = p.parse_args(argv)
    os.makedirs(a.out, exist_ok=True)
    asyncio.run(Load(a.kubeconfig, a.out, a.writers, a.watches, a.namespace).run(a.timeout))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

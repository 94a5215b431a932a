"""EventRecorder(max_in_flight=N): at most N Event writes at once, all of them written, in call order.

The kubelet records ~3 Events per pod it starts; written all at once they queued ahead of its TokenRequests and status
patches in its connection pool (upstream's broadcaster writes to its sink one at a time, and the kubelet rate-limits
its events).
"""

from __future__ import annotations

import asyncio
import json

from pyk8s.client import Client, EventRecorder


async def _serve(delay: float) -> tuple[asyncio.AbstractServer, int, list[str], list[int]]:
    """Answers every request with its JSON body (201) after `delay`; records the Events' reasons in arrival order and
    the most requests it held at once."""
    reasons: list[str] = []
    state = {"now": 0}
    peak = [0]

    async def handle(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        while True:
            try:
                head = await r.readuntil(b"\r\n\r\n")
            except (asyncio.IncompleteReadError, ConnectionError):
                break
            length = next(int(x.split(b":")[1]) for x in head.split(b"\r\n") if x.lower().startswith(b"content-length:"))
            body = await r.readexactly(length)
            reasons.append(json.loads(body)["reason"])
            state["now"] += 1
            peak[0] = max(peak[0], state["now"])
            await asyncio.sleep(delay)
            state["now"] -= 1
            w.write(b"HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
                    % (len(body), body))
            await w.drain()
        w.close()

    srv = await asyncio.start_server(handle, "127.0.0.1", 0)
    return srv, srv.sockets[0].getsockname()[1], reasons, peak


def _pod(i: int) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p{i}", "namespace": "default", "uid": f"u{i}"}}


async def _record(max_in_flight: int) -> tuple[list[str], int]:
    srv, port, reasons, peak = await _serve(0.02)
    client = Client(f"http://127.0.0.1:{port}", pool_size=0)
    rec = EventRecorder(client, "kubelet", host="node-1", **({"max_in_flight": max_in_flight} if max_in_flight else {}))
    for i in range(12):
        rec.event(_pod(i), "Normal", f"Reason{i:02d}", f"message {i}")
    await asyncio.wait_for(rec.flush(), 10)
    await client.close()
    srv.close()
    return reasons, peak[0]


def test_events_written_at_most_max_in_flight_at_once_in_call_order() -> None:
    reasons, peak = asyncio.run(_record(2))
    assert sorted(reasons) == [f"Reason{i:02d}" for i in range(12)]  # none lost
    assert peak == 2
    reasons, peak = asyncio.run(_record(1))
    assert reasons == [f"Reason{i:02d}" for i in range(12)]  # one at a time: in call order
    assert peak == 1
    reasons, peak = asyncio.run(_record(0))
    assert len(reasons) == 12 and peak > 2  # controllers keep writing their events concurrently

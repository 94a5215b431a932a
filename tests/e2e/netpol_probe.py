"""A pod stand-in for the NetworkPolicy tests: serves TCP and UDP ports and probes others on request.

Run inside a network namespace: `python netpol_probe.py 80,81 81,53` (TCP ports, UDP ports).
It answers every UDP datagram with itself and accepts TCP connections. Each stdin line is a JSON
list of [ip, port, protocol] probes; the answer line is a JSON list of booleans (reached or not),
all probed at once with a short timeout, as upstream's e2e probes each pair with `agnhost connect`.
"""

from __future__ import annotations

import asyncio
import json
import sys

TIMEOUT = 0.6


class _Echo(asyncio.DatagramProtocol):
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport

    def datagram_received(self, data: bytes, addr: tuple[str, int]) -> None:
        self.transport.sendto(data, addr)  # type: ignore[attr-defined]


class _Reply(asyncio.DatagramProtocol):
    def __init__(self, got: asyncio.Future[bool]) -> None:
        self.got = got

    def datagram_received(self, data: bytes, addr: tuple[str, int]) -> None:
        if not self.got.done():
            self.got.set_result(True)


async def _tcp(ip: str, port: int) -> bool:
    try:
        _, w = await asyncio.wait_for(asyncio.open_connection(ip, port), TIMEOUT)
    except (OSError, TimeoutError):
        return False
    w.close()
    return True


async def _udp(ip: str, port: int) -> bool:
    loop = asyncio.get_running_loop()
    got: asyncio.Future[bool] = loop.create_future()
    transport, _ = await loop.create_datagram_endpoint(lambda: _Reply(got), remote_addr=(ip, port))
    try:
        transport.sendto(b"probe")
        return await asyncio.wait_for(got, TIMEOUT)
    except (OSError, TimeoutError):
        return False
    finally:
        transport.close()


async def _serve(tcp: list[int], udp: list[int]) -> None:
    loop = asyncio.get_running_loop()

    async def accept(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        w.close()

    for p in tcp:
        await asyncio.start_server(accept, "0.0.0.0", p)
    for p in udp:
        await loop.create_datagram_endpoint(_Echo, local_addr=("0.0.0.0", p))
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    print("ready", flush=True)
    while line := await reader.readline():
        probes = json.loads(line)
        res = await asyncio.gather(*(_tcp(ip, port) if proto == "TCP" else _udp(ip, port)
                                     for ip, port, proto in probes))
        print(json.dumps(list(res)), flush=True)


if __name__ == "__main__":
    ports = [[int(x) for x in a.split(",") if x] for a in sys.argv[1:3]]
    asyncio.run(_serve(ports[0], ports[1] if len(ports) > 1 else []))

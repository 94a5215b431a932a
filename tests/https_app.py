"""An aiohttp HTTPS app on a thread of its own, on this machine's global address: the third-party
servers tests talk to (aggregated API servers, admission webhooks)."""

from __future__ import annotations

import asyncio
import socket
import ssl
import threading
from collections.abc import Awaitable, Callable

from aiohttp import web

__all__ = ["host_ip", "ThreadedHTTPSApp"]


def host_ip() -> str:
    """The address of the default route's interface (reachable from the API server and pods)."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        s.connect(("192.0.2.1", 9))
        return str(s.getsockname()[0])
    finally:
        s.close()


class ThreadedHTTPSApp:
    """Serves handler for every path and method on ip:<a free port> over TLS with ctx."""

    def __init__(self, ip: str, ctx: ssl.SSLContext, handler: Callable[[web.Request], Awaitable[web.StreamResponse]],
                 client_max_size: int = 1024 ** 2) -> None:
        self.ip, self.ctx, self.handler = ip, ctx, handler
        self.client_max_size = client_max_size
        self.loop = asyncio.new_event_loop()
        self.port = 0
        self.started = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()
        assert self.started.wait(10)

    def _serve(self) -> None:
        asyncio.set_event_loop(self.loop)
        app = web.Application(client_max_size=self.client_max_size)
        app.router.add_route("*", "/{tail:.*}", self.handler)
        self.runner = web.AppRunner(app, shutdown_timeout=0.5)
        self.loop.run_until_complete(self.runner.setup())
        site = web.TCPSite(self.runner, self.ip, 0, ssl_context=self.ctx)
        self.loop.run_until_complete(site.start())
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.started.set()
        self.loop.run_forever()

    async def _cleanup(self) -> None:
        await self.runner.cleanup()
        for t in asyncio.all_tasks():  # handlers still waiting (a slow answer)
            if t is not asyncio.current_task():
                t.cancel()

    def stop(self) -> None:
        asyncio.run_coroutine_threadsafe(self._cleanup(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)

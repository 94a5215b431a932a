"""The dashboard's connection to the API server, and whose credentials a request carries.

kubeconfig mode: the kubeconfig's identity (client certificate and/or token), exactly what
`kubectl proxy` sends. token mode: the cluster's address and CA only; every request carries the
bearer token of the session it serves, so the API server's RBAC decides per user.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass, field

import aiohttp

from ..client.kubeconfig import load_kubeconfig
from .session import Session

__all__ = ["Upstream", "from_kubeconfig", "for_tokens"]


@dataclass
class Upstream:
    server: str  # https://host:port, no trailing slash
    ssl_context: ssl.SSLContext | None
    # the kubeconfig's own credentials (kubeconfig mode); empty in token mode
    identity_headers: dict[str, str] = field(default_factory=dict)
    token_mode: bool = False
    server_hostname: str | None = None  # the kubeconfig's tls-server-name
    client: aiohttp.ClientSession | None = None

    async def start(self) -> None:
        # no total timeout: watches and followed logs stream for as long as the page is open
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=10)
        connector = aiohttp.TCPConnector(ssl=self.ssl_context if self.ssl_context is not None else False,
                                         limit=0)
        self.client = aiohttp.ClientSession(timeout=timeout, connector=connector, auto_decompress=False,
                                            cookie_jar=aiohttp.DummyCookieJar())

    async def close(self) -> None:
        if self.client is not None:
            await self.client.close()

    def credentials(self, session: Session) -> dict[str, str]:
        """The headers that make a request this session's user's."""
        if self.token_mode:
            return {"Authorization": f"Bearer {session.token}"} if session.token else {}
        return dict(self.identity_headers)

    def url(self, path_qs: str) -> str:
        return self.server + path_qs


def from_kubeconfig(path: str, context: str | None = None) -> Upstream:
    kc = load_kubeconfig(path, context)
    return Upstream(kc.server.rstrip("/"), kc.ssl_client_context(), kc.auth_headers(),
                    server_hostname=kc.tls_server_name)


def for_tokens(server: str, ca_file: str | None, insecure: bool = False) -> Upstream:
    """Token mode against `server`, trusting `ca_file` (the system's CAs when None)."""
    ctx: ssl.SSLContext | None = None
    if server.startswith("https://"):
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        if insecure:
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        elif ca_file:
            ctx.load_verify_locations(cafile=ca_file)
        else:
            ctx.load_default_certs(ssl.Purpose.SERVER_AUTH)
    return Upstream(server.rstrip("/"), ctx, {}, token_mode=True)

"""Names outside the cluster zone go to the node's resolvers, as CoreDNS's
`forward . /etc/resolv.conf`.

Every forwarded question has one time budget (default 2 s) shared by the upstreams in turn;
when it runs out, or no upstream answers, the client gets SERVFAIL, never a hang. Nothing is
cached, so a failure is never served later as an answer. At most `max_concurrent` questions
are in flight; more are REFUSED at once, as the forward plugin's max_concurrent.
"""

from __future__ import annotations

import asyncio
import logging

import dns.asyncquery
import dns.exception
import dns.message
import dns.resolver

__all__ = ["Forwarder", "node_resolvers"]

log = logging.getLogger("pyk8s.dns")


def node_resolvers(path: str = "/etc/resolv.conf") -> list[tuple[str, int]]:
    """The nameservers of a resolv.conf (dnspython reads it), on port 53."""
    try:
        r = dns.resolver.Resolver(filename=path, configure=True)
    except (dns.resolver.NoResolverConfiguration, OSError):
        return []
    return [(str(ns), 53) for ns in r.nameservers]


class Overloaded(Exception):
    """More questions in flight than max_concurrent."""


class Forwarder:
    def __init__(self, upstreams: list[tuple[str, int]], timeout: float = 2.0, max_concurrent: int = 1000) -> None:
        self.upstreams = list(upstreams)
        self.timeout = timeout
        self.max_concurrent = max_concurrent
        self.in_flight = 0

    async def query(self, q: dns.message.Message, tcp: bool) -> dns.message.Message | None:
        """The first upstream answer within the budget, or None (the caller answers SERVFAIL)."""
        if self.in_flight >= self.max_concurrent:
            raise Overloaded
        self.in_flight += 1
        try:
            loop = asyncio.get_running_loop()
            deadline = loop.time() + self.timeout
            for i, (host, port) in enumerate(self.upstreams):
                left = deadline - loop.time()
                if left <= 0:
                    break
                # the budget is shared: a silent first upstream leaves time for the others
                per_try = left / (len(self.upstreams) - i)
                try:
                    if tcp:
                        return await dns.asyncquery.tcp(q, host, timeout=per_try, port=port)
                    return await dns.asyncquery.udp(q, host, timeout=per_try, port=port, ignore_unexpected=True)
                except (dns.exception.DNSException, OSError, EOFError, ValueError) as e:
                    log.debug("forward to %s:%d: %s", host, port, e)
            return None
        finally:
            self.in_flight -= 1

"""A request as the API server's handlers read it (headers, query, body), for calling them in-process."""

from __future__ import annotations


class BodyRequest:
    def __init__(self, body: bytes, content_type: str) -> None:
        self.headers = {"Content-Type": content_type}
        self.query: dict[str, str] = {}
        self._body = body

    async def read(self) -> bytes:
        return self._body

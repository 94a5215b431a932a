"""Kubernetes `Status` answers for the dashboard's own refusals, shaped as the API server's."""

from __future__ import annotations

import json

from aiohttp import web

__all__ = ["status_body", "status_response"]


def status_body(code: int, reason: str, message: str) -> dict[str, object]:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message,
            "reason": reason, "code": code}


def status_response(code: int, reason: str, message: str) -> web.Response:
    return web.Response(status=code, text=json.dumps(status_body(code, reason, message)),
                        content_type="application/json", headers={"Cache-Control": "no-store"})

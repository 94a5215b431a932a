"""The built front-end (web/ compiled into static/ by `make dashboard`), served from the package."""

from __future__ import annotations

import mimetypes
from importlib import resources
from pathlib import Path

from aiohttp import web

__all__ = ["STATIC_DIR", "index", "static_file"]

STATIC_DIR = Path(str(resources.files(__package__ or "pyk8s.dashboard").joinpath("static")))
_TYPES = {".js": "text/javascript", ".css": "text/css", ".html": "text/html", ".json": "application/json",
          ".map": "application/json", ".svg": "image/svg+xml", ".woff2": "font/woff2"}


def _file(name: str) -> web.StreamResponse:
    path = (STATIC_DIR / name).resolve()
    if STATIC_DIR.resolve() not in path.parents or not path.is_file():  # no ../ out of static/
        raise web.HTTPNotFound()
    ctype = _TYPES.get(path.suffix) or mimetypes.guess_type(path.name)[0] or "application/octet-stream"
    return web.Response(body=path.read_bytes(), content_type=ctype,
                        headers={"Cache-Control": "no-cache"})


def index() -> web.StreamResponse:
    return _file("index.html")


async def static_file(request: web.Request) -> web.StreamResponse:
    return _file(request.match_info["name"])
